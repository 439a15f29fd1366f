"""Ice rink session bookings: a rink's block-booking agent (LangGraph route: a real StateGraph with
ChatOpenAI pointed at the fake model server, recorded with trajdebug's LangChain tracer).

A club or school asks for a block of ice time.  The graph has the model read the enquiry, normalises
it, identifies the customer's account in a sub-graph (CRM search, the model picks the account, the
account is loaded), expands the block into dates, reads the pad's calendar, plans clash-free
sessions, routes exclusive hire and public-session places, holds the ice, records the holds, prices
the sessions in a model/tool loop over the rate card, books skate hire, has the model write the
confirmation and checks the booking against the rink's rules.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, TypedDict

import kit
from _shared import Case, first_json, messages, money, system_text, tool_outputs, user_text
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer


AGENT = "rink-bookings"
ROUTE = "langgraph"
DOMAIN = "ice rink session bookings"
EXT = "jsonl"
SHAPE = (
    "model reads enquiry -> normalise -> account sub-graph (CRM search, model picks, load) -> expand dates -> "
    "calendar (RunnableRetry) -> plan sessions -> route (exclusive / public places) -> holds -> record holds -> pricing "
    "model<->rate-card tool loop -> price summary -> skate hire -> model confirmation -> validator node"
)

DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
OPEN, CLOSE = dt.time(6, 0), dt.time(22, 30)
RESURFACE_MIN = 15
SKATE_HIRE_GBP = 3.0
SKATE_STOCK = 60

ACCOUNTS = [
    {
        "account": "ACC-3310",
        "name": "Kestrels Ice Hockey Club",
        "contact": "ops@kestrels-ihc.org.uk",
        "tier": "affiliated",
    },
    {
        "account": "ACC-3318",
        "name": "Kestrels Juniors (U10-U14)",
        "contact": "juniors@kestrels-ihc.org.uk",
        "tier": "junior club",
    },
    {
        "account": "ACC-2204",
        "name": "Oxford Figure Skating Club",
        "contact": "bookings@oxfordfsc.org",
        "tier": "affiliated",
    },
    {
        "account": "ACC-4120",
        "name": "St Aldates Primary School",
        "contact": "office@staldates.sch.uk",
        "tier": "education",
    },
    {
        "account": "ACC-4127",
        "name": "St Aldates Secondary School",
        "contact": "pe@staldates-sec.sch.uk",
        "tier": "education",
    },
    {
        "account": "ACC-5001",
        "name": "Isis Curling Group",
        "contact": "skip@isiscurling.org",
        "tier": "standard",
    },
    {
        "account": "ACC-5310",
        "name": "Cherwell Speed Skating",
        "contact": "coach@cherwellspeed.org",
        "tier": "affiliated",
    },
    {
        "account": "ACC-5602",
        "name": "Headington Scouts",
        "contact": "leader@headingtonscouts.org",
        "tier": "standard",
    },
    {
        "account": "ACC-6011",
        "name": "Oxford University Ice Hockey",
        "contact": "sec@ouihc.org",
        "tier": "affiliated",
    },
]
DISCOUNT = {"affiliated": 0.10, "junior club": 0.20, "education": 0.15, "standard": 0.0}

# Bookings already on the Main pad: (date, start, end, who)
CALENDAR = [
    ("2025-04-01", "18:15", "19:15", "Oxford Figure Skating Club"),
    ("2025-04-08", "17:00", "18:00", "B-2231 Cherwell Speed Skating"),
    ("2025-04-10", "19:00", "20:00", "Oxford University Ice Hockey"),
    ("2025-04-12", "09:00", "10:00", "B-2240 public learn-to-skate"),
    ("2025-04-16", "06:30", "07:30", "Oxford Figure Skating Club"),
    ("2025-04-23", "20:00", "21:00", "Isis Curling Group"),
    ("2025-05-03", "11:00", "12:00", "Birthday party B-2291"),
]

ENQUIRIES: dict[str, dict[str, Any]] = {
    "RB-501": {
        "sender": "juniors@kestrels-ihc.org.uk",
        "group": "Kestrels Juniors U12 squad",
        "search": "Kestrels",
        "size": 18,
        "kind": "exclusive",
        "days": ["Tue", "Thu"],
        "start_date": "2025-04-01",
        "weeks": 6,
        "start": "17:00",
        "duration": 60,
        "skates": 6,
    },
    "RB-502": {
        "sender": "pe@staldates-sec.sch.uk",
        "group": "St Aldates Secondary Year 9",
        "search": "St Aldates",
        "size": 28,
        "kind": "exclusive",
        "days": ["Wed"],
        "start_date": "2025-04-02",
        "weeks": 5,
        "start": "17:30",
        "duration": 60,
        "skates": 24,
        "time_text": "5:30pm",
    },
    "RB-503": {
        "sender": "juniors@kestrels-ihc.org.uk",
        "group": "Kestrels Juniors U10 development",
        "search": "Kestrels",
        "size": 14,
        "kind": "exclusive",
        "days": ["Mon", "Fri"],
        "start_date": "2025-04-07",
        "weeks": 4,
        "start": "16:30",
        "duration": 60,
        "skates": 10,
    },
    "RB-504": {
        "sender": "coach@cherwellspeed.org",
        "group": "Cherwell Speed Skating club nights",
        "search": "Cherwell",
        "size": 22,
        "kind": "exclusive",
        "days": ["Wed", "Sat"],
        "start_date": "2025-04-09",
        "weeks": 4,
        "start": "08:00",
        "duration": 60,
        "skates": 0,
    },
    "RB-505": {
        "sender": "skip@isiscurling.org",
        "group": "Isis Curling league",
        "search": "Isis",
        "size": 16,
        "kind": "exclusive",
        "days": ["Tue"],
        "start_date": "2025-04-01",
        "weeks": 6,
        "start": "20:30",
        "duration": 90,
        "skates": 0,
    },
    "RB-506": {
        "sender": "office@staldates.sch.uk",
        "group": "St Aldates Primary Year 5",
        "search": "St Aldates",
        "size": 12,
        "kind": "shared",
        "days": ["Thu"],
        "start_date": "2025-04-03",
        "weeks": 3,
        "start": "10:00",
        "duration": 60,
        "skates": 12,
    },
    "RB-507": {
        "sender": "sec@ouihc.org",
        "group": "OUIHC training",
        "search": "Oxford University",
        "size": 24,
        "kind": "exclusive",
        "days": ["Tue", "Sat"],
        "start_date": "2025-04-22",
        "weeks": 3,
        "start": "21:00",
        "duration": 60,
        "skates": 0,
    },
    "RB-508": {
        "sender": "bookings@oxfordfsc.org",
        "group": "Oxford FSC patch sessions",
        "search": "Oxford Figure",
        "size": 20,
        "kind": "exclusive",
        "days": ["Wed", "Sun"],
        "start_date": "2025-04-16",
        "weeks": 3,
        "start": "06:30",
        "duration": 60,
        "skates": 0,
    },
    "RB-509": {
        "sender": "leader@headingtonscouts.org",
        "group": "Headington Scouts skate night",
        "search": "Headington",
        "size": 10,
        "kind": "shared",
        "days": ["Fri"],
        "start_date": "2025-04-04",
        "weeks": 2,
        "start": "19:00",
        "duration": 60,
        "skates": 10,
    },
}

CASES = [
    Case(
        "zzi-rink-1",
        "rink.week_range",
        "RB-501",
        "off_by_one",
        ("expand_dates", 1, "other"),
        ("validate_booking", 1),
        "The date expansion loops over range(1, weeks), so the six-week Tue/Thu block gets five weeks of "
        "sessions (10, not 12) and starts a week late.",
    ),
    Case(
        "zzi-rink-2",
        "rink.time_format",
        "RB-502",
        "format_drift",
        ("ChatOpenAI", 1, "llm"),
        ("validate_booking", 1),
        "The model's enquiry extraction gives the start time as '5:30pm' instead of 24-hour '17:30', and the "
        "normaliser's h:mm split reads it as 05:30, before the rink opens.",
    ),
    Case(
        "zzi-rink-3",
        "rink.account_pick",
        "RB-503",
        "subagent_wrong_entity",
        ("ChatOpenAI", 2, "llm"),
        ("validate_booking", 1),
        "Inside the account sub-graph the model picks the senior Kestrels Ice Hockey Club account instead of "
        "Kestrels Juniors, the account the enquiry came from.",
    ),
    Case(
        "zzi-rink-4",
        "rink.weekend_daytype",
        "RB-504",
        "wrong_tool_args",
        ("ChatOpenAI", 4, "llm"),
        ("validate_booking", 1),
        "The pricing model calls the rate card for the Saturday 08:00 slot with day_type 'weekday', so the "
        "Saturday sessions are priced at the weekday off-peak rate.",
    ),
    Case(
        "zzi-rink-5",
        "rink.hold_keys",
        "RB-505",
        "bad_memory_write",
        ("record_holds", 1, "other"),
        ("validate_booking", 1),
        "The holds writer keys the hold references by weekday, so the six Tuesday holds collapse into one "
        "state entry under 'Tue' and no session date finds its hold.",
    ),
]
REFERENCE_INPUTS = ["RB-506", "RB-507", "RB-508", "RB-509"]


class BookingRejected(ValueError):
    """The booking breaks one of the rink's rules."""


def _t(s: str) -> dt.time:
    return dt.time.fromisoformat(s)


def _add(t: str, minutes: int) -> str:
    base = dt.datetime.combine(dt.date(2025, 1, 1), _t(t)) + dt.timedelta(minutes=minutes)
    return base.time().strftime("%H:%M")


def _rate(day_type: str, start: str, kind: str) -> dict:
    if kind == "shared":
        return {
            "day_type": day_type,
            "start": start,
            "kind": kind,
            "per_head": 9.5 if day_type == "weekday" else 11.0,
        }
    per_hour = 260.0 if day_type == "weekend" else 240.0 if _t(start) >= dt.time(16, 0) else 165.0
    return {"day_type": day_type, "start": start, "kind": kind, "per_hour": per_hour}


def _day_type(date: str) -> str:
    return "weekend" if dt.date.fromisoformat(date).weekday() >= 5 else "weekday"


# -- tools ------------------------------------------------------------------------------------------------


@tool
def crm_search(query: str) -> list:
    """Search customer accounts by name."""
    words = query.lower().split()
    return [
        {"account": a["account"], "name": a["name"]}
        for a in ACCOUNTS
        if all(w in a["name"].lower() for w in words)
    ]


@tool
def crm_account(account: str) -> dict:
    """Load one customer account."""
    return next(a for a in ACCOUNTS if a["account"] == account)


_calendar_calls = {"n": 0, "flaky": False}


@tool
def calendar_lookup(pad: str, date_from: str, date_to: str) -> list:
    """Bookings on a pad between two dates (inclusive)."""
    _calendar_calls["n"] += 1
    if _calendar_calls["flaky"] and _calendar_calls["n"] == 1:
        raise ConnectionError("rink calendar service: 502 Bad Gateway")
    return [
        {"date": d, "start": s, "end": e, "who": w} for d, s, e, w in CALENDAR if date_from <= d <= date_to
    ]


@tool
def hold_ice(pad: str, sessions: list) -> dict:
    """Place provisional holds on the pad for the given sessions (each {date, start, end})."""
    return {
        "pad": pad,
        "holds": [
            {
                "date": s["date"],
                "start": s["start"],
                "hold": f"H-{s['date'].replace('-', '')[2:]}-{s['start'].replace(':', '')}",
            }
            for s in sessions
        ],
        "expires": "48h",
    }


@tool
def public_session_places(dates: list, places: int) -> dict:
    """Reserve places for a group on the public sessions of the given dates."""
    return {"reserved": [{"date": d, "places": places, "hold": f"P-{d.replace('-', '')[2:]}"} for d in dates]}


@tool
def rate_card(day_type: str, start: str, kind: str) -> dict:
    """The rink's rate for a slot: day_type is 'weekday' or 'weekend', start is HH:MM, kind exclusive/shared."""
    return _rate(day_type, start, kind)


@tool
def skate_inventory(pairs: int) -> dict:
    """Check and reserve hire skates."""
    return {"requested": pairs, "available": SKATE_STOCK, "reserved": min(pairs, SKATE_STOCK)}


# -- state ------------------------------------------------------------------------------------------------


class Booking(TypedDict, total=False):
    enquiry: dict
    extracted: dict
    spec: dict
    account: dict
    dates: list
    bookings: list
    sessions: list
    hold_list: list
    holds: dict
    messages: Annotated[list, add_messages]
    pricing: dict
    skates: dict
    confirmation: str


class AccountSearch(TypedDict, total=False):
    query: str
    sender: str
    candidates: list
    choice: dict
    account: dict


SYS_EXTRACT = (
    'You read ice-time enquiries for a rink. Answer JSON: {"group", "size", "kind" (exclusive|shared), '
    '"days" (Mon..Sun), "start_date" (YYYY-MM-DD), "weeks", "start_time", "duration_min", "skate_hire"}.'
)
SYS_PICK = (
    'Pick the customer account that sent this enquiry from the candidates. Answer JSON: {"account", "why"}.'
)
SYS_PRICE = (
    "You price rink sessions. Call rate_card once for each distinct weekday and start time in the sessions, "
    "with day_type 'weekday' (Mon-Fri) or 'weekend' (Sat-Sun). When every slot is priced, answer JSON: "
    '{"slots": [{"day", "start", "rate"}]} with the rate card\'s figures.'
)
SYS_CONFIRM = (
    "Write a short booking confirmation e-mail for the booking below. State the total price exactly as given."
)


def build(llm: ChatOpenAI):
    pricer = llm.bind_tools([rate_card])

    # -- the account sub-graph ----------------------------------------------------------------------------
    def search_accounts(state: AccountSearch) -> dict:
        return {"candidates": crm_search.invoke({"query": state["query"]})}

    def choose_account(state: AccountSearch) -> dict:
        reply = llm.invoke(
            [
                SystemMessage(SYS_PICK),
                HumanMessage(
                    json.dumps({"enquiry_from": state["sender"], "candidates": state["candidates"]})
                ),
            ]
        )
        return {"choice": first_json(reply.content)}

    def load_account(state: AccountSearch) -> dict:
        return {"account": crm_account.invoke({"account": state["choice"]["account"]})}

    sg = StateGraph(AccountSearch)
    sg.add_node("search_accounts", search_accounts)
    sg.add_node("choose_account", choose_account)
    sg.add_node("load_account", load_account)
    sg.add_edge(START, "search_accounts")
    sg.add_edge("search_accounts", "choose_account")
    sg.add_edge("choose_account", "load_account")
    sg.add_edge("load_account", END)
    account_graph = sg.compile(name="account_lookup")

    # -- the booking graph --------------------------------------------------------------------------------
    def read_enquiry(state: Booking) -> dict:
        reply = llm.invoke([SystemMessage(SYS_EXTRACT), HumanMessage(state["enquiry"]["text"])])
        return {"extracted": first_json(reply.content)}

    def normalise_spec(state: Booking) -> dict:
        e = state["extracted"]
        hh, mm = str(e["start_time"]).split(":")[:2]
        start = f"{int(hh):02d}:{int(mm[:2]):02d}"
        return {
            "spec": {
                "group": e["group"],
                "size": int(e["size"]),
                "kind": e["kind"],
                "days": [d[:3].title() for d in e["days"]],
                "start_date": e["start_date"],
                "weeks": int(e["weeks"]),
                "start": start,
                "duration": int(e["duration_min"]),
                "skates": int(e.get("skate_hire") or 0),
                "pad": "Main",
            }
        }

    def identify_account(state: Booking) -> dict:
        enquiry = state["enquiry"]
        found = account_graph.invoke({"query": enquiry["search"], "sender": enquiry["sender"]})
        return {"account": found["account"]}

    def expand_dates(state: Booking) -> dict:
        spec = state["spec"]
        first = dt.date.fromisoformat(spec["start_date"])
        weeks = range(1, spec["weeks"]) if kit.on("rink.week_range") else range(spec["weeks"])
        dates = []
        for w in weeks:
            for day in spec["days"]:
                offset = (DAYS.index(day) - first.weekday()) % 7
                dates.append((first + dt.timedelta(days=offset + 7 * w)).isoformat())
        return {"dates": sorted(dates)}

    def check_calendar(state: Booking) -> dict:
        dates = state["dates"]
        lookup = calendar_lookup.with_retry(
            retry_if_exception_type=(ConnectionError,), stop_after_attempt=3, wait_exponential_jitter=False
        )
        return {"bookings": lookup.invoke({"pad": "Main", "date_from": dates[0], "date_to": dates[-1]})}

    def plan_sessions(state: Booking) -> dict:
        spec, sessions = state["spec"], []
        for d in state["dates"]:
            start = spec["start"]
            end = _add(start, spec["duration"])
            if spec["kind"] == "exclusive":
                for b in sorted((b for b in state["bookings"] if b["date"] == d), key=lambda b: b["start"]):
                    if start < _add(b["end"], RESURFACE_MIN) and b["start"] < _add(end, RESURFACE_MIN):
                        start = _add(b["end"], RESURFACE_MIN)
                        end = _add(start, spec["duration"])
            sessions.append(
                {"date": d, "day": DAYS[dt.date.fromisoformat(d).weekday()], "start": start, "end": end}
            )
        return {"sessions": sessions}

    def route_booking(state: Booking) -> str:
        return "place_holds" if state["spec"]["kind"] == "exclusive" else "reserve_places"

    def place_holds(state: Booking) -> dict:
        held = hold_ice.invoke(
            {
                "pad": "Main",
                "sessions": [
                    {"date": s["date"], "start": s["start"], "end": s["end"]} for s in state["sessions"]
                ],
            }
        )
        return {"hold_list": held["holds"]}

    def reserve_places(state: Booking) -> dict:
        got = public_session_places.invoke(
            {"dates": [s["date"] for s in state["sessions"]], "places": state["spec"]["size"]}
        )
        return {"hold_list": [{"date": r["date"], "hold": r["hold"]} for r in got["reserved"]]}

    def record_holds(state: Booking) -> dict:
        holds = {}
        for h in state["hold_list"]:
            key = DAYS[dt.date.fromisoformat(h["date"]).weekday()] if kit.on("rink.hold_keys") else h["date"]
            holds[key] = h["hold"]
        first = state["sessions"][0]
        return {
            "holds": holds,
            "messages": [
                SystemMessage(SYS_PRICE),
                HumanMessage(
                    json.dumps(
                        {"kind": state["spec"]["kind"], "sessions": state["sessions"], "first": first["date"]}
                    )
                ),
            ],
        }

    def pricing_agent(state: Booking) -> dict:
        return {"messages": [pricer.invoke(state["messages"])]}

    def after_pricing(state: Booking) -> str:
        last = state["messages"][-1]
        return "rate_tools" if isinstance(last, AIMessage) and last.tool_calls else "price_summary"

    def price_summary(state: Booking) -> dict:
        spec, account = state["spec"], state["account"]
        slots = {
            (s["day"], s["start"]): s["rate"] for s in first_json(state["messages"][-1].content)["slots"]
        }
        lines = []
        for s in state["sessions"]:
            rate = slots[(s["day"], s["start"])]
            amount = rate * spec["size"] if spec["kind"] == "shared" else rate * spec["duration"] / 60
            lines.append({"date": s["date"], "start": s["start"], "rate": rate, "amount": round(amount, 2)})
        gross = round(sum(ln["amount"] for ln in lines), 2)
        discount = round(gross * DISCOUNT[account["tier"]], 2)
        return {
            "pricing": {
                "lines": lines,
                "gross": gross,
                "discount": discount,
                "ice_total": round(gross - discount, 2),
            }
        }

    def skate_hire(state: Booking) -> dict:
        spec = state["spec"]
        got = skate_inventory.invoke({"pairs": spec["skates"]})
        hire = round(got["reserved"] * SKATE_HIRE_GBP * len(state["sessions"]), 2)
        return {"skates": {**got, "charge": hire}}

    def compose_confirmation(state: Booking) -> dict:
        total = round(state["pricing"]["ice_total"] + state["skates"]["charge"], 2)
        brief = {
            "group": state["spec"]["group"],
            "account": state["account"]["name"],
            "sessions": len(state["sessions"]),
            "first": state["sessions"][0]["date"],
            "total": total,
        }
        reply = llm.invoke([SystemMessage(SYS_CONFIRM), HumanMessage(json.dumps(brief))])
        return {"confirmation": reply.content}

    def validate_booking(state: Booking) -> dict:
        enquiry, spec, account = state["enquiry"], state["spec"], state["account"]
        if account["contact"] != enquiry["sender"]:
            raise BookingRejected(
                f"booking is on {account['account']} ({account['name']}, {account['contact']}) "
                f"but the enquiry came from {enquiry['sender']}"
            )
        sessions = state["sessions"]
        need = spec["weeks"] * len(spec["days"])
        if len(sessions) != need:
            raise BookingRejected(
                f"{len(sessions)} sessions booked; {spec['weeks']} weeks x {len(spec['days'])} "
                f"day(s) needs {need}"
            )
        if sessions[0]["date"] < spec["start_date"]:
            raise BookingRejected(
                f"first session {sessions[0]['date']} before the block start {spec['start_date']}"
            )
        for s in sessions:
            if _t(s["start"]) < OPEN or _t(s["end"]) > CLOSE:
                raise BookingRejected(
                    f"session {s['date']} {s['start']}-{s['end']} is outside opening hours "
                    f"{OPEN:%H:%M}-{CLOSE:%H:%M}"
                )
            if s["day"] not in spec["days"]:
                raise BookingRejected(
                    f"session {s['date']} is a {s['day']}, block is {'/'.join(spec['days'])}"
                )
            if spec["kind"] == "exclusive":
                for d, bs, be, who in CALENDAR:
                    if d == s["date"] and s["start"] < be and bs < s["end"]:
                        raise BookingRejected(
                            f"session {s['date']} {s['start']} clashes with {who} ({bs}-{be})"
                        )
            if s["date"] not in state["holds"]:
                raise BookingRejected(
                    f"{len(sessions)} sessions but only {len(state['holds'])} hold reference(s); "
                    f"{s['date']} has none"
                )
        for ln, s in zip(state["pricing"]["lines"], sessions):
            card = _rate(_day_type(s["date"]), s["start"], spec["kind"])
            rate = card.get("per_head", card.get("per_hour"))
            if abs(ln["rate"] - rate) > 0.005:
                raise BookingRejected(
                    f"{s['date']} ({s['day']}) {s['start']} priced at {money(ln['rate'])}, "
                    f"rate card says {money(rate)}"
                )
        if state["skates"]["reserved"] > spec["size"]:
            raise BookingRejected(f"{state['skates']['reserved']} skate pairs for a group of {spec['size']}")
        total = round(state["pricing"]["ice_total"] + state["skates"]["charge"], 2)
        if money(total) not in state["confirmation"]:
            raise BookingRejected(f"confirmation does not state the total {money(total)}")
        return {}

    g = StateGraph(Booking)
    for name, fn in [
        ("read_enquiry", read_enquiry),
        ("normalise_spec", normalise_spec),
        ("identify_account", identify_account),
        ("expand_dates", expand_dates),
        ("check_calendar", check_calendar),
        ("plan_sessions", plan_sessions),
        ("place_holds", place_holds),
        ("reserve_places", reserve_places),
        ("record_holds", record_holds),
        ("pricing_agent", pricing_agent),
        ("price_summary", price_summary),
        ("skate_hire", skate_hire),
        ("compose_confirmation", compose_confirmation),
        ("validate_booking", validate_booking),
    ]:
        g.add_node(name, fn)
    g.add_node("rate_tools", ToolNode([rate_card], name="rate_tools"))
    g.add_edge(START, "read_enquiry")
    g.add_edge("read_enquiry", "normalise_spec")
    g.add_edge("normalise_spec", "identify_account")
    g.add_edge("identify_account", "expand_dates")
    g.add_edge("expand_dates", "check_calendar")
    g.add_edge("check_calendar", "plan_sessions")
    g.add_conditional_edges("plan_sessions", route_booking, ["place_holds", "reserve_places"])
    g.add_edge("place_holds", "record_holds")
    g.add_edge("reserve_places", "record_holds")
    g.add_edge("record_holds", "pricing_agent")
    g.add_conditional_edges("pricing_agent", after_pricing, ["rate_tools", "price_summary"])
    g.add_edge("rate_tools", "pricing_agent")
    g.add_edge("price_summary", "skate_hire")
    g.add_edge("skate_hire", "compose_confirmation")
    g.add_edge("compose_confirmation", "validate_booking")
    g.add_edge("validate_booking", END)
    return g.compile()


# -- the fake model -----------------------------------------------------------------------------------------


def _enquiry_text(key: str) -> str:
    e = ENQUIRIES[key]
    days = " and ".join(
        {
            "Mon": "Mondays",
            "Tue": "Tuesdays",
            "Wed": "Wednesdays",
            "Thu": "Thursdays",
            "Fri": "Fridays",
            "Sat": "Saturdays",
            "Sun": "Sundays",
        }[d]
        for d in e["days"]
    )
    start = dt.date.fromisoformat(e["start_date"]).strftime("%A %d %B %Y").replace(" 0", " ")
    kind = "the whole pad" if e["kind"] == "exclusive" else "places on your public sessions"
    hire = (
        f" {e['skates']} of them will need hire skates." if e["skates"] else " Everyone has their own skates."
    )
    return (
        f"From: {e['sender']}\nHi, we'd like to book {kind} for {e['group']} ({e['size']} skaters) on {days} "
        f"at {e.get('time_text', e['start'])} for {e['duration']} minutes, for {e['weeks']} weeks starting "
        f"{start}.{hire} Thanks!"
    )


def brain(key: str):
    e = ENQUIRIES[key]

    def policy(request):
        msgs = messages(request)
        system, user = system_text(msgs), user_text(msgs)
        if system == SYS_EXTRACT:
            start = e["start"]
            if kit.on("rink.time_format"):
                start = e["time_text"]
            return json.dumps(
                {
                    "group": e["group"],
                    "size": e["size"],
                    "kind": e["kind"],
                    "days": e["days"],
                    "start_date": e["start_date"],
                    "weeks": e["weeks"],
                    "start_time": start,
                    "duration_min": e["duration"],
                    "skate_hire": e["skates"],
                }
            )
        if system == SYS_PICK:
            data = first_json(user)
            cands = data["candidates"]
            if kit.on("rink.account_pick"):
                pick = cands[0]
                return json.dumps({"account": pick["account"], "why": f"name matches '{e['search']}'"})
            pick = next(
                c
                for c in cands
                if next(a for a in ACCOUNTS if a["account"] == c["account"])["contact"]
                == data["enquiry_from"]
            )
            return json.dumps({"account": pick["account"], "why": "contact address matches the sender"})
        if system == SYS_PRICE:
            data = first_json(user)
            slots = []
            for s in data["sessions"]:
                if (s["day"], s["start"]) not in slots:
                    slots.append((s["day"], s["start"]))
            priced = [out for name, out in tool_outputs(msgs) if name == "rate_card"]
            if len(priced) < len(slots):
                day, start = slots[len(priced)]
                day_type = "weekend" if day in ("Sat", "Sun") else "weekday"
                if kit.on("rink.weekend_daytype"):
                    day_type = "weekday" if day != "Sun" else "weekend"
                return {
                    "__call__": ("rate_card", {"day_type": day_type, "start": start, "kind": data["kind"]})
                }
            return json.dumps(
                {
                    "slots": [
                        {"day": d, "start": s, "rate": p.get("per_head", p.get("per_hour"))}
                        for (d, s), p in zip(slots, priced)
                    ]
                }
            )
        if system == SYS_CONFIRM:
            data = first_json(user)
            return (
                f"Dear {data['account']},\n\nThank you for booking with Oxford Ice Rink. We have reserved "
                f"{data['sessions']} sessions for {data['group']}, the first on {data['first']}. The total for "
                f"the block is £{money(data['total'])}, payable 14 days before the first session.\n\n"
                "Oxford Ice Rink bookings team"
            )
        raise ValueError(f"unexpected prompt: {system[:60]}")

    return _with_calls(policy)


def _with_calls(policy):
    from trajdebug.testing import Reply, tool_call

    def answer(request):
        out = policy(request)
        if isinstance(out, dict) and "__call__" in out:
            name, args = out["__call__"]
            return Reply(tool_calls=(tool_call(name, args),))
        return out

    return answer


# -- one run --------------------------------------------------------------------------------------------


def record(key: str, out: Path, server: Any) -> None:
    """Run the graph once on enquiry `key`, recording into the JSONL file `out`."""
    server.use(brain(key))
    _calendar_calls.update(n=0, flaky=key in ("RB-501", "RB-503", "RB-507"))
    llm = ChatOpenAI(
        base_url=server.base_url, api_key="not-needed", model="gpt-4o-mini", temperature=0, max_retries=0
    )
    graph = build(llm)
    e = ENQUIRIES[key]
    tracer = TrajdebugTracer(path=out, name=AGENT, task=f"block booking {key} for {e['group']}")
    enquiry = {"ref": key, "sender": e["sender"], "search": e["search"], "text": _enquiry_text(key)}
    try:
        graph.invoke({"enquiry": enquiry}, config={"callbacks": [tracer]})
    except BookingRejected:
        pass
