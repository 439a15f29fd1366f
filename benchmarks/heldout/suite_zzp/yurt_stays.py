"""Yurt campsite: plans and quotes a guest's stay (langgraph route: StateGraph + ChatOpenAI, LangChain tracer, JSONL)."""

from __future__ import annotations

import json
import re
from datetime import date, timedelta
from typing import TypedDict

import kit
from common import chat_brain
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE, DOMAIN = "yurt-stays", "langgraph", "a yurt campsite's stays"
SHAPE = "enquiry chain (prompt, llm, JSON parser), guest history + desk messages tools, notes node, planner llm, per-night calendar loop, forecast + firewood tools, extras sub-graph (extras tool loop, total), rate card tool, welcome llm, validator node"

YURTS = {"Heron": {"beds": 2}, "Otter": {"beds": 4}, "Badger": {"beds": 4}, "Fox": {"beds": 6}}
RATE_CARDS = {2025: {"Heron": 72.0, "Otter": 88.0, "Badger": 92.0, "Fox": 110.0},
              2026: {"Heron": 80.0, "Otter": 95.0, "Badger": 100.0, "Fox": 120.0}}
EXTRAS = {"hot tub": 45.0, "breakfast hamper": 18.0, "firewood bundle": 7.5}
BOOKED = {("Otter", "2026-07-25"), ("Heron", "2026-05-02"), ("Fox", "2026-10-03")}
LOWS = {"04": 2, "06": 11, "07": 14, "08": 13, "10": 4}  # typical night lows, C
ENQUIRIES = {
    "YS-401": {"guest": "Evans", "party": 2, "yurt": "Heron", "arrive": "2026-04-10", "nights": 2,
               "extras": [{"item": "hot tub", "night": 1}]},
    "YS-402": {"guest": "Patel", "party": 4, "yurt": "Otter", "arrive": "2026-06-19", "nights": 3,
               "extras": [{"item": "breakfast hamper", "night": n} for n in (1, 2, 3)]},
    "YS-403": {"guest": "Okafor", "party": 4, "yurt": "Badger", "arrive": "2026-07-24", "nights": 3,
               "extras": [{"item": "hot tub", "night": 2}]},
    "YS-404": {"guest": "Lindqvist", "party": 3, "yurt": "Otter", "arrive": "2026-10-02", "nights": 2,
               "extras": [{"item": "hot tub", "night": 2}, {"item": "breakfast hamper", "night": 1}]},
    "YS-405": {"guest": "Moreau", "party": 2, "yurt": "Heron", "arrive": "2026-08-07", "nights": 4,
               "extras": [{"item": "breakfast hamper", "night": 2}]},
}
DESK = [
    {"ref": "YS-398", "text": "Guest Hughes: can we move to the Fox yurt, friends are joining us."},
    {"ref": "YS-402", "text": "Guest Patel: we will arrive after 6pm."},
    {"ref": "YS-404", "text": "Guest Lindqvist: bringing a small dog, is that fine?"},
    {"ref": "YS-405", "text": "Guest Moreau: anniversary trip, any chance of flowers?"},
]
INPUTS = [
    "Enquiry YS-401 from Sian Evans: Heron yurt for two, 10 April 2026, 2 nights, hot tub on the first night.",
    "Enquiry YS-402 from the Patel family (4): Otter yurt, 19 June 2026 for 3 nights, breakfast hampers every day.",
    "Enquiry YS-403 from Ade Okafor: Badger yurt for four, 24 July 2026, 3 nights, hot tub on night two.",
    "Enquiry YS-404 from Lars Lindqvist: Otter for three, 2 October 2026, 2 nights, hamper day one, hot tub night two.",
    "Enquiry YS-405 from Claire Moreau: Heron yurt for two, 7 August 2026, 4 nights, a hamper on day two.",
]
CASES = [
    {"case": "zzp_yurt_1", "input": 0, "kind": "unit_error", "root": ("firewood_calc", 1),
     "failure": ("validate_stay", 1),
     "description": "The firewood tool answers kilograms of wood where the planner expects bundles, ordering 32 bundles for two nights."},
    {"case": "zzp_yurt_2", "input": 1, "kind": "context_pollution", "root": ("gather_notes", 1),
     "failure": ("validate_stay", 1),
     "description": "The notes node passes every desk message to the planner, and another guest's request to move to the Fox yurt steers the plan."},
    {"case": "zzp_yurt_3", "input": 2, "kind": "tool_ignores_argument", "root": ("yurt_calendar", 2),
     "failure": ("validate_stay", 1),
     "description": "The calendar tool ignores its yurt argument and answers for the first yurt of that size (Otter, taken on night two), so the stay is moved off the free Badger yurt."},
    {"case": "zzp_yurt_4", "input": 3, "kind": "plan_error", "root": ("ChatOpenAI", 2),
     "failure": ("validate_stay", 1),
     "description": "The stay planner schedules the hot tub on night 3 of a 2-night stay."},
    {"case": "zzp_yurt_5", "input": 4, "kind": "stale_data", "root": ("fetch_rate_card", 1),
     "failure": ("validate_stay", 1),
     "description": "The rate card tool serves the cached 2025 card for a 2026 stay."},
]


def _nights(arrive: str, n: int) -> list[str]:
    d0 = date.fromisoformat(arrive)
    return [(d0 + timedelta(days=i)).isoformat() for i in range(n)]


# -- the scripted model ---------------------------------------------------------------------------------

def _extract(text: str) -> str:
    ref = re.search(r"YS-\d+", text).group(0)
    e = ENQUIRIES[ref]
    return json.dumps({"ref": ref, **{k: v for k, v in e.items() if k != "extras"}, "extras": e["extras"]})


def _plan(text: str) -> str:
    ask = json.loads(text)
    yurt = ask["requested_yurt"]
    for note in ask["notes"]:
        m = re.search(r"move to the (\w+) yurt", note)
        if m:
            yurt = m.group(1)
    extras = [dict(x) for x in ask["extras"]]
    if kit.on("zzp_yurt_4"):
        for x in extras:
            if x["item"] == "hot tub":
                x["night"] += 1
    return json.dumps({"yurt": yurt, "extras": extras})


def _welcome(text: str) -> str:
    f = json.loads(text)
    return f"Welcome {f['guest']}! The {f['yurt']} yurt is ready for you from {f['arrive']}. Your total is GBP {f['total']:.2f}."


BRAIN = chat_brain({"Extract": _extract, "Plan": _plan, "Welcome": _welcome})


# -- tools ----------------------------------------------------------------------------------------------

@tool
def guest_history(guest: str) -> list:
    """Earlier stays of a guest."""
    return [{"guest": guest, "stayed": "2025-08-14", "yurt": "Otter", "notes": "left the site tidy"}]


@tool
def desk_messages(day: str) -> list:
    """Messages left at the front desk, newest last."""
    return DESK


@tool
def yurt_calendar(yurt: str, night: str) -> dict:
    """Whether a yurt is free on a night."""
    which = yurt
    if kit.on("zzp_yurt_3"):  # the booking system answers for the yurt's size class
        which = next(y for y in YURTS if YURTS[y]["beds"] == YURTS[yurt]["beds"])
    return {"yurt": yurt, "night": night, "free": (which, night) not in BOOKED}


@tool
def night_forecast(nights: list) -> list:
    """Forecast night lows in Celsius."""
    return [{"night": n, "low_c": LOWS[n[5:7]]} for n in nights]


@tool
def firewood_calc(cold_nights: int) -> dict:
    """Firewood bundles for the stove (two a cold night)."""
    bundles = 2 * cold_nights
    if kit.on("zzp_yurt_1"):
        return {"bundles": bundles * 8}  # the wood merchant's API answers kilograms
    return {"bundles": bundles}


@tool
def extras_desk(item: str, night: int, yurt: str) -> dict:
    """Book an extra for a night of the stay."""
    return {"item": item, "night": night, "yurt": yurt, "price": EXTRAS[item]}


@tool
def fetch_rate_card(year: int) -> dict:
    """The nightly rate card for a season."""
    season = 2025 if kit.on("zzp_yurt_5") else year
    return {"season": season, "rates": RATE_CARDS[season]}


# -- the graph ------------------------------------------------------------------------------------------

class Stay(TypedDict, total=False):
    request: str
    enquiry: dict
    history: list
    desk: list
    notes: list
    plan: dict
    availability: list
    yurt: str
    forecast: list
    firewood: dict
    extras_booked: list
    extras_total: float
    quote: dict
    letter: str


def build(llm: ChatOpenAI):
    chain = ChatPromptTemplate.from_messages(
        [("system", "Extract: the stay enquiry as JSON."), ("user", "{request}")]) | llm | JsonOutputParser()

    def read_enquiry(s: Stay) -> dict:
        return {"enquiry": chain.invoke({"request": s["request"]})}

    def load_context(s: Stay) -> dict:
        e = s["enquiry"]
        return {"history": guest_history.invoke({"guest": e["guest"]}),
                "desk": desk_messages.invoke({"day": e["arrive"]})}

    def gather_notes(s: Stay) -> dict:
        e = s["enquiry"]
        msgs = s["desk"] if kit.on("zzp_yurt_2") else [m for m in s["desk"] if m["ref"] == e["ref"]]
        notes = [f"stayed {h['stayed']} in {h['yurt']}: {h['notes']}" for h in s["history"]]
        return {"notes": notes + [m["text"] for m in msgs]}

    def plan_stay(s: Stay) -> dict:
        e = s["enquiry"]
        ask = json.dumps({"requested_yurt": e["yurt"], "party": e["party"], "nights": e["nights"],
                          "extras": e["extras"], "notes": s["notes"]})
        return {"plan": json.loads(llm.invoke([("system", "Plan: choose the yurt and schedule the extras."),
                                               ("user", ask)]).content)}

    def check_availability(s: Stay) -> dict:
        e = s["enquiry"]
        nights = _nights(e["arrive"], e["nights"])
        candidates = [s["plan"]["yurt"]] + [y for y in YURTS if y != s["plan"]["yurt"] and YURTS[y]["beds"] >= e["party"]]
        checked = []
        for yurt in candidates:
            answers = [yurt_calendar.invoke({"yurt": yurt, "night": n}) for n in nights]
            checked += answers
            if all(a["free"] for a in answers):
                return {"yurt": yurt, "availability": checked}
        raise RuntimeError("no yurt free for the whole stay")

    def weather(s: Stay) -> dict:
        e = s["enquiry"]
        forecast = night_forecast.invoke({"nights": _nights(e["arrive"], e["nights"])})
        cold = sum(1 for f in forecast if f["low_c"] < 5)
        return {"forecast": forecast, "firewood": firewood_calc.invoke({"cold_nights": cold})}

    def book_each(s: Stay) -> dict:
        booked = [extras_desk.invoke({"item": x["item"], "night": x["night"], "yurt": s["yurt"]})
                  for x in s["plan"]["extras"]]
        return {"extras_booked": booked}

    def extras_sum(s: Stay) -> dict:
        wood = s["firewood"]["bundles"] * EXTRAS["firewood bundle"]
        return {"extras_total": round(sum(x["price"] for x in s["extras_booked"]) + wood, 2)}

    sub = StateGraph(Stay)
    sub.add_node("book_each", book_each)
    sub.add_node("extras_sum", extras_sum)
    sub.add_edge(START, "book_each")
    sub.add_edge("book_each", "extras_sum")
    sub.add_edge("extras_sum", END)
    extras = sub.compile()

    def quote(s: Stay) -> dict:
        e = s["enquiry"]
        card = fetch_rate_card.invoke({"year": int(e["arrive"][:4])})
        nightly = card["rates"][s["yurt"]]
        return {"quote": {"season": card["season"], "nightly": nightly, "nights": e["nights"],
                          "extras": s["extras_total"], "total": round(nightly * e["nights"] + s["extras_total"], 2)}}

    def welcome(s: Stay) -> dict:
        e = s["enquiry"]
        facts = json.dumps({"guest": e["guest"], "yurt": s["yurt"], "arrive": e["arrive"], "total": s["quote"]["total"]})
        return {"letter": llm.invoke([("system", "Welcome: write the welcome note."), ("user", facts)]).content}

    def validate_stay(s: Stay) -> dict:
        e, q = s["enquiry"], s["quote"]
        nights = _nights(e["arrive"], e["nights"])
        if YURTS[s["yurt"]]["beds"] < e["party"]:
            raise ValueError(f"{s['yurt']} sleeps {YURTS[s['yurt']]['beds']}, party of {e['party']}")
        if s["yurt"] != e["yurt"] and all((e["yurt"], n) not in BOOKED for n in nights):
            raise ValueError(f"{e['yurt']} was requested and free for {e['arrive']} x{e['nights']}, stay booked in {s['yurt']}")
        for x in s["plan"]["extras"]:
            if not 1 <= x["night"] <= e["nights"]:
                raise ValueError(f"{x['item']} scheduled for night {x['night']} of a {e['nights']}-night stay")
        if s["firewood"]["bundles"] > 3 * e["nights"]:
            raise ValueError(f"{s['firewood']['bundles']} firewood bundles for {e['nights']} nights (allowance 3 a night)")
        if q["season"] != int(e["arrive"][:4]):
            raise ValueError(f"quote uses the {q['season']} rate card for a stay in {e['arrive'][:4]}")
        if abs(q["total"] - (q["nightly"] * e["nights"] + q["extras"])) > 0.01:
            raise ValueError(f"quote total GBP {q['total']:.2f} does not add up")
        return {}

    g = StateGraph(Stay)
    order = [("read_enquiry", read_enquiry), ("load_context", load_context), ("gather_notes", gather_notes),
             ("plan_stay", plan_stay), ("check_availability", check_availability), ("weather", weather),
             ("book_extras", extras), ("quote", quote), ("welcome", welcome), ("validate_stay", validate_stay)]
    for name, fn in order:
        g.add_node(name, fn)
    g.add_edge(START, order[0][0])
    for (a, _), (b, _) in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1][0], END)
    return g.compile()


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp[:60])
    try:
        build(llm).invoke({"request": inp}, config={"callbacks": [tracer]})
    except ValueError:
        pass
