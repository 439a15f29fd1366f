"""Show cave tour bookings (langgraph): booking -> gauge -> route model -> slot -> waiver loop -> guide sub-graph -> manifest -> kit -> confirm."""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import last_user
from .kit import active

NAME = "show-cave-tour-desk"
ROUTE = "langgraph"
INPUTS = {
    "gaping": "Booking BK-1152: Gaping Hollow on 2026-12-20 at 09:30, parties Ames/Bell/Cole/Dunn, 14 guests incl 2 wheelchair users, route Crystal Gallery, 2.5 h",
    "white": "Booking BK-1167: White Scar Hollow on 2026-12-21 at 13:00, parties Ford/Gray/Hale, 11 guests incl 1 wheelchair users, route Long Streamway, 1.5 h",
    "ref1": "Booking BK-1120: Gaping Hollow on 2026-12-19 at 10:00, parties Iles/Jury/Kemp, 9 guests incl 0 wheelchair users, route Crystal Gallery, 2.5 h",
    "ref2": "Booking BK-1131: White Scar Hollow on 2026-12-19 at 14:00, parties Lowe/Mace, 6 guests incl 1 wheelchair users, route Long Streamway, 1.5 h",
    "ref3": "Booking BK-1139: Gaping Hollow on 2026-12-20 at 13:30, parties Nash/Orme/Pike/Quin, 16 guests incl 0 wheelchair users, route Crystal Gallery, 2 h",
    "ref4": "Booking BK-1144: White Scar Hollow on 2026-12-20 at 11:00, parties Rudd/Sole, 8 guests incl 2 wheelchair users, route Long Streamway, 1.5 h",
}
ACCESSIBLE = {"Gaping Hollow": "Upper Gallery", "White Scar Hollow": "Show Chamber Walk"}


def policy(request: Any) -> str:
    text = last_user(request)
    if text.startswith("ROUTE"):
        d = json.loads(text[5:])
        if d["wheelchair"] > 0:
            return json.dumps({"route": ACCESSIBLE[d["cave"]], "reason": "level access for wheelchair users"})
        if d["water_m"] > 1.2:
            return json.dumps({"route": ACCESSIBLE[d["cave"]], "reason": "high water"})
        return json.dumps({"route": d["requested"], "reason": "as requested"})
    return "{}"


@tool
def read_water_gauge(cave: str, date: str) -> dict:
    """Read the cave's river gauge."""
    if active("sc_stale"):
        return {"cave": cave, "level_m": 0.7, "read_at": "2026-12-14T06:00"}
    return {"cave": cave, "level_m": 0.8, "read_at": f"{date}T06:00"}


@tool
def waiver_status(party: str, booking: str) -> dict:
    """Check a party's signed safety waiver."""
    return {"party": party, "booking": booking, "signed": True}


@tool
def guide_roster(date: str) -> dict:
    """Guides on duty and their bookings for a date."""
    return {"date": date, "guides": [{"guide": "G-07 Rhiannon", "last_booking": "BK-1139"}, {"guide": "G-11 Tomas", "last_booking": "BK-1144"}]}


@tool
def fetch_manifest(booking: str, guests: int, wheelchair: int) -> dict:
    """The signed-in guest manifest for a booking."""
    return {"booking": booking, "guests": guests, "mobility": {"wheelchair": wheelchair}}


class S(TypedDict, total=False):
    request: str
    booking: dict
    gauge: dict
    route: dict
    slot: dict
    parties: list
    waivers: list
    guide: dict
    manifest: dict
    kit: list


class G(TypedDict, total=False):
    booking: dict
    roster: dict
    guide: dict


def make_graph(llm: ChatOpenAI, truth: dict):
    def parse_booking(state: S) -> dict:
        t = state["request"]
        m = re.search(r"Booking (\S+): (.+?) on (\S+) at (\S+), parties (\S+), (\d+) guests", t)
        wc_pat = r"incl (\d+) wheelchair" if not active("sc_lossy") else r"incl (\d+) wheelchair-users"
        wc = re.search(wc_pat, t)
        rm = re.search(r"route (.+?), ([\d.]+) h", t)
        b = {"id": m.group(1), "cave": m.group(2), "date": m.group(3), "start": m.group(4), "guests": int(m.group(6)),
             "wheelchair": int(wc.group(1)) if wc else 0, "requested": rm.group(1), "duration_h": float(rm.group(2))}
        return {"booking": b, "parties": m.group(5).split("/"), "waivers": []}

    def check_gauge(state: S) -> dict:
        b = state["booking"]
        return {"gauge": read_water_gauge.invoke({"cave": b["cave"], "date": b["date"]})}

    def choose_route(state: S) -> dict:
        b = state["booking"]
        msg = llm.invoke([SystemMessage("You choose show cave routes for booked groups."),
                          HumanMessage("ROUTE" + json.dumps({"cave": b["cave"], "requested": b["requested"], "wheelchair": b["wheelchair"], "water_m": state["gauge"]["level_m"]}))])
        return {"route": json.loads(msg.content)}

    def compute_slot(state: S) -> dict:
        b = state["booking"]
        start = dt.datetime.fromisoformat(f"{b['date']}T{b['start']}")
        minutes = b["duration_h"] if active("sc_unit") else b["duration_h"] * 60
        end = start + dt.timedelta(minutes=minutes)
        return {"slot": {"start": start.strftime("%H:%M"), "end": end.strftime("%H:%M"), "minutes": minutes}}

    def check_waiver(state: S) -> dict:
        party = state["parties"][len(state["waivers"])]
        w = waiver_status.invoke({"party": party, "booking": state["booking"]["id"]})
        return {"waivers": state["waivers"] + [w]}

    def find_guides(gs: G) -> dict:
        return {"roster": guide_roster.invoke({"date": gs["booking"]["date"]})}

    def assign_guide(gs: G) -> dict:
        g = gs["roster"]["guides"][0]
        booking = g["last_booking"] if active("sc_entity") else gs["booking"]["id"]
        return {"guide": {"guide": g["guide"], "booking": booking, "date": gs["booking"]["date"]}}

    sub = StateGraph(G)
    sub.add_node("find_guides", find_guides)
    sub.add_node("assign_guide", assign_guide)
    sub.add_edge(START, "find_guides")
    sub.add_edge("find_guides", "assign_guide")
    sub.add_edge("assign_guide", END)
    guide_graph = sub.compile()

    def guide_agent(state: S) -> dict:
        return {"guide": guide_graph.invoke({"booking": state["booking"]})["guide"]}

    def load_manifest(state: S) -> dict:
        b = state["booking"]
        return {"manifest": fetch_manifest.invoke({"booking": b["id"], "guests": truth["guests"], "wheelchair": truth["wheelchair"]})}

    def issue_kit(state: S) -> dict:
        n = state["booking"]["guests"]
        first = 2 if active("sc_obo") else 1
        return {"kit": [f"LAMP-{i:02d}" for i in range(first, n + 1)]}

    def confirm_booking(state: S) -> dict:
        b, errs = state["booking"], []
        if state["gauge"]["read_at"][:10] != b["date"]:
            errs.append(f"water gauge reading from {state['gauge']['read_at']} is not from the tour day {b['date']}")
        if state["manifest"]["mobility"]["wheelchair"] and state["route"]["route"] != ACCESSIBLE[b["cave"]]:
            errs.append(f"route {state['route']['route']} has stairs; manifest lists {state['manifest']['mobility']['wheelchair']} wheelchair user(s)")
        if state["slot"]["minutes"] < 60:
            errs.append(f"slot {state['slot']['start']}-{state['slot']['end']} is shorter than the 60 minute minimum")
        if state["guide"]["booking"] != b["id"]:
            errs.append(f"guide assignment for {state['guide']['guide']} references {state['guide']['booking']}, not {b['id']}")
        if len(state["kit"]) != state["manifest"]["guests"]:
            errs.append(f"{len(state['kit'])} lamp sets issued for {state['manifest']['guests']} guests")
        if errs:
            raise ValueError("booking not confirmed: " + "; ".join(errs))
        return {}

    g = StateGraph(S)
    for name, fn in [("parse_booking", parse_booking), ("check_gauge", check_gauge), ("choose_route", choose_route),
                     ("compute_slot", compute_slot), ("check_waiver", check_waiver), ("guide_agent", guide_agent),
                     ("load_manifest", load_manifest), ("issue_kit", issue_kit), ("confirm_booking", confirm_booking)]:
        g.add_node(name, fn)
    g.add_edge(START, "parse_booking")
    g.add_edge("parse_booking", "check_gauge")
    g.add_edge("check_gauge", "choose_route")
    g.add_edge("choose_route", "compute_slot")
    g.add_edge("compute_slot", "check_waiver")
    g.add_conditional_edges("check_waiver", lambda s: "check_waiver" if len(s["waivers"]) < len(s["parties"]) else "guide_agent",
                            ["check_waiver", "guide_agent"])
    g.add_edge("guide_agent", "load_manifest")
    g.add_edge("load_manifest", "issue_kit")
    g.add_edge("issue_kit", "confirm_booking")
    g.add_edge("confirm_booking", END)
    return g.compile()


def run_case(ctx: dict, inp: str, path: str) -> None:
    text = INPUTS[inp]
    truth = {"guests": int(re.search(r"(\d+) guests", text).group(1)), "wheelchair": int(re.search(r"incl (\d+)", text).group(1))}
    llm = ChatOpenAI(model="fake-model", base_url=ctx["base_url"], api_key="test", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=text)
    try:
        make_graph(llm, truth).invoke({"request": text}, config={"callbacks": [tracer], "recursion_limit": 60})
    except ValueError:
        pass


CASES = [
    ("sc_entity", "subagent_wrong_entity", "gaping", "assign_guide", 1, "other", "confirm_booking", 1,
     "The guide sub-graph files the guide against the guide's previous booking id instead of this booking."),
    ("sc_obo", "off_by_one", "white", "issue_kit", 1, "other", "confirm_booking", 1,
     "The lamp numbering starts at 2, so one guest gets no lamp set."),
    ("sc_unit", "unit_error", "gaping", "compute_slot", 1, "other", "confirm_booking", 1,
     "The tour duration in hours is added as minutes, giving a 2-minute slot."),
    ("sc_lossy", "lossy_parsing", "white", "parse_booking", 1, "other", "confirm_booking", 1,
     "The booking parser misses the wheelchair count and records 0, so the route model keeps the stepped route."),
    ("sc_stale", "stale_data", "gaping", "read_water_gauge", 1, "tool", "confirm_booking", 1,
     "The river gauge answers with a cached reading six days old instead of the tour day's reading."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
