"""LangGraph route: a whale-watching tour desk that checks the sea, reads sightings, plans and books a boat."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, register, reply_json, server
from .kit import active

NAME = "whale-tour-desk"
ROUTE = "langgraph"
DOMAIN = "whale watching tours"
SHAPE = "StateGraph: forecast tool, sightings retriever, LLM planner, parse, seat-hold loop with router, priced booking"
SYSTEM = "[whale] You plan whale watching trips. Answer JSON."

INPUTS = {
    "orca": {"ref": "WW-5101", "port": "Tadoussac", "date": "2027-07-14", "party": 6, "children": 2},
    "minke": {"ref": "WW-5102", "port": "Husavik", "date": "2027-07-21", "party": 9, "children": 0},
    "humpback": {"ref": "WW-5103", "port": "Tadoussac", "date": "2027-08-02", "party": 4, "children": 1},
    "fin": {"ref": "WW-5104", "port": "Husavik", "date": "2027-08-09", "party": 3, "children": 0},
    "beluga": {"ref": "WW-5105", "port": "Tadoussac", "date": "2027-08-16", "party": 8, "children": 3},
    "sperm": {"ref": "WW-5106", "port": "Husavik", "date": "2027-08-23", "party": 5, "children": 2},
}
REF_INPUTS = ["humpback", "fin", "beluga", "sperm"]
VESSELS = {"Tadoussac": [("Grand Fleuve", 12), ("Zodiac Saguenay", 8), ("Marsouin", 20)],
           "Husavik": [("Gardar", 10), ("Faldur", 14), ("Bjossi", 6)]}
TIMETABLE = {"Tadoussac": ["09:00", "13:30", "16:00"], "Husavik": ["08:30", "10:00", "14:00", "17:00"]}
HELD: dict[str, int] = {}


class TourState(TypedDict, total=False):
    request: dict
    forecast: dict
    sightings: list
    plan_text: str
    plan: dict
    holds: list
    attempt: int
    quote: dict
    booking: dict


def _policy(msgs: list[dict[str, Any]]) -> str:
    p = json.loads(msgs[-1]["content"])
    if p["task"] == "plan":
        zones = {}
        for s in p["sightings"]:
            zones[s["zone"]] = zones.get(s["zone"], 0) + s["count"]
        zone = max(sorted(zones), key=lambda z: zones[z])
        window = p["forecast"]["calm_windows"]
        dep = window[-1] if zone.endswith("outer") else window[0]
        if active("whale_plan_error"):
            dep = p["timetable"][-1]
        fmt = dep
        if active("whale_format_drift"):
            h, m = map(int, dep.split(":"))
            fmt = f"{(h - 1) % 12 + 1}:{m:02d} {'PM' if h >= 12 else 'AM'}"
        return reply_json({"zone": zone, "departure": fmt, "vessels_in_order": [v for v, _ in p["vessels"]], "note": "calm window"})
    raise ValueError(p["task"])


register("[whale]", _policy)


@tool
def waiver_status(ref: str, children: int) -> dict:
    """Whether the party's safety waiver and child life-jacket sizes are on file."""
    return {"ref": ref, "waiver_signed": True, "child_jackets": children}


@tool
def marine_forecast(port: str, date: str) -> dict:
    """Marine forecast for a port and date: wind, swell and calm departure windows."""
    windows = ["09:00", "13:30"] if port == "Tadoussac" else ["10:00", "14:00"]
    return {"port": port, "date": date, "wind_kt": 11, "swell_m": 0.8, "calm_windows": windows}


@tool
def sightings_search(port: str, days: int) -> list:
    """Recent whale sighting reports near a port."""
    rows = [{"zone": "inner bay", "species": "beluga", "count": 4},
            {"zone": "inner bay", "species": "minke", "count": 2},
            {"zone": "outer", "species": "humpback", "count": 3},
            {"zone": "outer", "species": "fin", "count": 2},
            {"zone": "outer", "species": "blue", "count": 1}]
    if port == "Husavik":
        rows = [{"zone": "Skjalfandi outer", "species": "humpback", "count": 5}, {"zone": "harbour mouth", "species": "minke", "count": 3},
                {"zone": "harbour mouth", "species": "white-beaked dolphin", "count": 2}, {"zone": "Skjalfandi outer", "species": "blue", "count": 1}]
    if active("whale_truncated"):
        rows = rows[:2]
    return rows


@tool
def hold_seats(vessel: str, date: str, departure: str, seats: int) -> dict:
    """Hold seats on a vessel's departure."""
    cap = dict(sum(VESSELS.values(), []))[vessel]
    key = f"{vessel}|{date}|{departure}"
    if active("whale_ignores_arg"):
        key = f"{vessel}|{date}|{TIMETABLE['Tadoussac'][0]}"
    taken = HELD.get(key, cap // 3)
    if taken + seats > cap:
        return {"vessel": vessel, "held": 0, "free": cap - taken}
    HELD[key] = taken + seats
    return {"vessel": vessel, "held": seats, "departure": key.split("|")[2], "free": cap - taken - seats}


def make_graph(llm: ChatOpenAI) -> Any:
    def intake(state: TourState) -> dict:
        r = dict(state["request"])
        r["port"] = r["port"].strip().title()
        return {"request": r, "attempt": 0, "holds": []}

    def customer_check(state: TourState) -> dict:
        r = state["request"]
        return {"request": dict(r, waiver=waiver_status.invoke({"ref": r["ref"], "children": r["children"]}))}

    def forecast(state: TourState) -> dict:
        r = state["request"]
        return {"forecast": marine_forecast.invoke({"port": r["port"], "date": r["date"]})}

    def sightings(state: TourState) -> dict:
        return {"sightings": sightings_search.invoke({"port": state["request"]["port"], "days": 3})}

    def planner(state: TourState) -> dict:
        r = state["request"]
        payload = {"task": "plan", "forecast": state["forecast"], "sightings": state["sightings"],
                   "vessels": VESSELS[r["port"]], "timetable": TIMETABLE[r["port"]], "party": r["party"]}
        msg = llm.invoke([SystemMessage(SYSTEM), HumanMessage(json.dumps(payload, sort_keys=True))])
        return {"plan_text": msg.content}

    def parse_plan(state: TourState) -> dict:
        d = json.loads(state["plan_text"])
        return {"plan": {"zone": d["zone"], "departure": d["departure"].strip(), "vessels": d["vessels_in_order"]}}

    def hold(state: TourState) -> dict:
        r, plan = state["request"], state["plan"]
        vessel = plan["vessels"][state["attempt"] % len(plan["vessels"])]
        res = hold_seats.invoke({"vessel": vessel, "date": r["date"], "departure": plan["departure"], "seats": r["party"]})
        return {"holds": state["holds"] + [res], "attempt": state["attempt"] + 1}

    def after_hold(state: TourState) -> str:
        if active("whale_routing"):
            return "confirm"
        return "confirm" if state["holds"][-1]["held"] else ("hold" if state["attempt"] < 3 else "confirm")

    def price(state: TourState) -> dict:
        r = state["request"]
        adults = r["party"] - r["children"]
        rate = 89.0 if state["plan"]["zone"] in ("inner bay", "harbour mouth") else 119.0
        return {"quote": {"adults": adults, "children": r["children"], "total": round(adults * rate + r["children"] * rate * 0.6, 2), "zone": state["plan"]["zone"]}}

    def confirm(state: TourState) -> dict:
        state = {**state, **price(state)}
        r, plan, fc = state["request"], state["plan"], state["forecast"]
        held = [h for h in state["holds"] if h["held"]]
        if plan["departure"] not in TIMETABLE[r["port"]]:
            raise ValueError(f"booking rejected: departure {plan['departure']!r} is not on the {r['port']} timetable")
        if not held:
            raise ValueError(f"booking rejected: no vessel held {r['party']} seats for {r['date']} {plan['departure']}")
        if held[-1]["departure"] != plan["departure"]:
            raise ValueError(f"booking rejected: hold on {held[-1]['vessel']} is for {held[-1]['departure']}, ticket says {plan['departure']}")
        if plan["departure"] not in fc["calm_windows"]:
            raise ValueError(f"harbour master: departure {plan['departure']} outside the calm windows {fc['calm_windows']}")
        species = {s["species"] for s in state["sightings"]}
        if state["quote"]["zone"].endswith("outer") is False and len(species) < 3:
            raise ValueError(f"tour brief incomplete: {len(species)} species listed for {plan['zone']}, operator requires 3")
        return {"booking": {"ref": r["ref"], "vessel": held[-1]["vessel"], "departure": plan["departure"], "total": state["quote"]["total"]}}

    g = StateGraph(TourState)
    for name, fn in [("intake", intake), ("customer_check", customer_check), ("forecast", forecast), ("sightings", sightings), ("planner", planner),
                     ("parse_plan", parse_plan), ("hold", hold), ("confirm", confirm)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "customer_check")
    g.add_edge("customer_check", "forecast")
    g.add_edge("forecast", "sightings")
    g.add_edge("sightings", "planner")
    g.add_edge("planner", "parse_plan")
    g.add_edge("parse_plan", "hold")
    g.add_conditional_edges("hold", after_hold, {"hold": "hold", "confirm": "confirm"})
    g.add_edge("confirm", END)
    return g.compile()


def record(inp: dict, path: Path) -> None:
    HELD.clear()
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=server().base_url, api_key="sk-test-local", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"book whale watching {inp['ref']}")
    try:
        make_graph(llm).invoke({"request": inp}, config={"callbacks": [tracer], "run_name": NAME})
    except ValueError:
        pass


CASES = [
    Case("whale_01", "whale_format_drift", "format_drift", "orca", "ChatOpenAI", 1, "llm",
         "confirm", "The planning model writes the departure in 12-hour form (1:30 PM) instead of the timetable's 24-hour form."),
    Case("whale_02", "whale_plan_error", "plan_error", "minke", "ChatOpenAI", 1, "llm",
         "confirm", "The planning model picks the last timetabled departure, outside the forecast's calm windows."),
    Case("whale_03", "whale_truncated", "truncated_result", "orca", "sightings_search", 1, "tool",
         "confirm", "The sightings search answers only its first two rows, dropping the outer-zone reports."),
    Case("whale_04", "whale_ignores_arg", "tool_ignores_argument", "minke", "hold_seats", 0, "tool",
         "confirm", "The seat-hold tool ignores the departure argument and holds the morning sailing."),
    Case("whale_05", "whale_routing", "wrong_routing", "minke", "after_hold", 1, "other",
         "confirm", "The router after the first seat hold goes on to confirmation although the hold came back with no seats."),
]
