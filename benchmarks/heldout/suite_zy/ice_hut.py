"""Ice fishing hut rental (LangGraph): intake model, ice report, hut search with details, selection model,
a gear sub-graph, pricing and the reservation."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user
from .kit import active

AGENT, ROUTE, DOMAIN = "ice-hut-rentals", "langgraph", "ice fishing hut rental"
SHAPE = "intake LLM -> parse node -> ice tool + assess node -> hut search (paged) + details loop -> select LLM -> gear sub-graph (LLM + tool) -> price node -> reserve node"

HUTS = {
    "Lake Nipissing": [
        {"hut": "H-03", "sleeps": 2, "class": "walk-on", "nightly": 95.0},
        {"hut": "H-07", "sleeps": 2, "class": "walk-on", "nightly": 110.0},
        {"hut": "H-09", "sleeps": 3, "class": "walk-on", "nightly": 140.0},
        {"hut": "H-12", "sleeps": 4, "class": "drive-on", "nightly": 185.0},
        {"hut": "H-15", "sleeps": 6, "class": "drive-on", "nightly": 260.0},
    ],
    "Lake Simcoe": [
        {"hut": "S-02", "sleeps": 2, "class": "walk-on", "nightly": 120.0},
        {"hut": "S-05", "sleeps": 2, "class": "walk-on", "nightly": 125.0},
        {"hut": "S-08", "sleeps": 2, "class": "walk-on", "nightly": 130.0},
        {"hut": "S-11", "sleeps": 5, "class": "drive-on", "nightly": 240.0},
    ],
}
ICE_IN = {"Lake Nipissing": 18.0, "Lake Simcoe": 17.0}
MIN_CM = {"walk-on": 10, "drive-on": 40}

INPUTS = {
    "nipissing4": {"ref": "IH-2201", "text": "4 anglers, Lake Nipissing, from 2027-01-14 to 2027-01-17, want auger and heater"},
    "simcoe3": {"ref": "IH-2208", "text": "3 anglers, Lake Simcoe, from 2027-02-05 to 2027-02-07, want heater"},
    "r1": {"ref": "IH-2210", "text": "2 anglers, Lake Nipissing, from 2027-01-20 to 2027-01-22, want auger"},
    "r2": {"ref": "IH-2213", "text": "5 anglers, Lake Nipissing, from 2027-02-11 to 2027-02-14, want heater"},
    "r3": {"ref": "IH-2216", "text": "2 anglers, Lake Simcoe, from 2027-01-28 to 2027-01-31, want auger and heater"},
    "r4": {"ref": "IH-2219", "text": "1 anglers, Lake Simcoe, from 2027-02-19 to 2027-02-20, want sonar"},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("icehut-1", "format_drift", "ChatOpenAI", 1, "reserve", 1, "nipissing4",
         "The intake model switches to day/month/year dates, which the parse node passes through untouched."),
    Case("icehut-2", "stale_data", "ice_thickness", 1, "reserve", 1, "simcoe3",
         "The ice thickness tool returns last season's cached measurement instead of this week's."),
    Case("icehut-3", "subagent_wrong_entity", "ChatOpenAI", 3, "reserve", 1, "nipissing4",
         "The gear sub-graph's model plans gear for the first hut it saw in the search, not the selected one."),
    Case("icehut-4", "truncated_result", "search_huts", 1, "reserve", 1, "simcoe3",
         "The hut search returns only its first page, which holds no hut big enough for the party."),
    Case("icehut-5", "off_by_one", "price", 1, "reserve", 1, "nipissing4",
         "The price node counts nights inclusively, charging one night more than the stay."),
]


class HutState(TypedDict, total=False):
    ref: str
    request: str
    intake: str
    trip: dict
    ice: dict
    huts: list
    details: list
    choice: dict
    gear: dict
    quote: dict
    confirmation: dict


def policy(request):
    p = last_user(request)
    if p.startswith("INTAKE"):
        m = re.search(r"(\d+) anglers, (.+?), from (\S+) to (\S+), want (.+)", p)
        n, lake, a, b, gear = m.groups()
        if active("icehut-1"):
            a = "/".join(reversed(a.split("-")))
            b = "/".join(reversed(b.split("-")))
        return json.dumps({"party": int(n), "lake": lake, "start": a, "end": b, "gear": [g.strip() for g in gear.split(" and ")]})
    if p.startswith("SELECT"):
        d = json.loads(p.split("\n", 1)[1])
        ok = [h for h in d["details"] if h["sleeps"] >= d["party"]] or d["details"][-1:]
        best = min(ok, key=lambda h: h["nightly"])
        return json.dumps({"hut": best["hut"], "nightly": best["nightly"], "class": best["class"]})
    if p.startswith("GEAR"):
        d = json.loads(p.split("\n", 1)[1])
        hut = d["seen"][0] if active("icehut-3") else d["hut"]
        return json.dumps({"hut": hut, "items": d["gear"]})
    return "{}"


@tool
def ice_thickness(lake: str, date: str) -> str:
    """Latest ice thickness measurement for a lake, in inches."""
    measured = "2026-03-02" if active("icehut-2") else date
    return json.dumps({"lake": lake, "inches": ICE_IN[lake], "measured": measured})


@tool
def search_huts(lake: str, party: int) -> str:
    """Search available huts on a lake (paged)."""
    huts = [h["hut"] for h in HUTS[lake]]
    if active("icehut-4"):
        huts = huts[:3]
    return json.dumps({"lake": lake, "huts": huts})


@tool
def hut_details(hut: str) -> str:
    """Details of one hut."""
    for hs in HUTS.values():
        for h in hs:
            if h["hut"] == hut:
                return json.dumps(h)
    return "{}"


@tool
def reserve_gear(hut: str, items: list[str]) -> str:
    """Reserve rental gear delivered to a hut."""
    return json.dumps({"gear_booking": "GB-" + hut, "hut": hut, "items": items})


class ReservationRejected(Exception):
    pass


def build(llm) -> Any:
    def intake(state: HutState) -> dict:
        msg = llm.invoke([("system", "You extract ice hut bookings as JSON."), ("user", f"INTAKE\n{state['request']}")])
        return {"intake": msg.content}

    def parse_trip(state: HutState) -> dict:
        return {"trip": json.loads(state["intake"])}

    def ice_report(state: HutState) -> dict:
        raw = ice_thickness.invoke({"lake": state["trip"]["lake"], "date": state["trip"]["start"]})
        return {"ice": json.loads(raw)}

    def assess_ice(state: HutState) -> dict:
        ice = state["ice"]
        return {"ice": {**ice, "cm": round(ice["inches"] * 2.54, 1)}}

    def find_huts(state: HutState) -> dict:
        found = json.loads(search_huts.invoke({"lake": state["trip"]["lake"], "party": state["trip"]["party"]}))
        details = [json.loads(hut_details.invoke({"hut": h})) for h in found["huts"]]
        return {"huts": found["huts"], "details": details}

    def select_hut(state: HutState) -> dict:
        payload = json.dumps({"party": state["trip"]["party"], "details": state["details"]})
        msg = llm.invoke([("system", "You pick the cheapest hut that sleeps the party."), ("user", "SELECT\n" + payload)])
        return {"choice": json.loads(msg.content)}

    def gear_plan(state: HutState) -> dict:
        payload = json.dumps({"hut": state["choice"]["hut"], "seen": state["huts"], "gear": state["trip"]["gear"]})
        msg = llm.invoke([("system", "You plan gear delivery."), ("user", f"GEAR\n{payload}")])
        return {"gear": json.loads(msg.content)}

    def gear_reserve(state: HutState) -> dict:
        g = state["gear"]
        return {"gear": json.loads(reserve_gear.invoke({"hut": g["hut"], "items": g["items"]}))}

    sub = StateGraph(HutState)
    sub.add_node("gear_plan", gear_plan)
    sub.add_node("gear_reserve", gear_reserve)
    sub.add_edge(START, "gear_plan")
    sub.add_edge("gear_plan", "gear_reserve")
    sub.add_edge("gear_reserve", END)
    gear_agent = sub.compile()

    def price(state: HutState) -> dict:
        from datetime import date

        t = state["trip"]
        try:
            nights = (date.fromisoformat(t["end"]) - date.fromisoformat(t["start"])).days
        except ValueError:
            nights = 0
        if active("icehut-5"):
            nights += 1
        total = round(nights * state["choice"]["nightly"], 2)
        return {"quote": {"nights": nights, "nightly": state["choice"]["nightly"], "total": total}}

    def reserve(state: HutState) -> dict:
        from datetime import date

        t, c, q = state["trip"], state["choice"], state["quote"]
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", t["start"]):
            raise ReservationRejected(f"reservations API 422: start_date '{t['start']}' does not match YYYY-MM-DD")
        hut = next(h for hs in HUTS.values() for h in hs if h["hut"] == c["hut"])
        if hut["sleeps"] < t["party"]:
            raise ReservationRejected(f"reservations API 422: hut {c['hut']} sleeps {hut['sleeps']}, party of {t['party']}")
        if state["ice"]["measured"] != t["start"]:
            raise ReservationRejected(f"reservations API 412: ice report for {t['lake']} measured {state['ice']['measured']}, arrival {t['start']}")
        if state["ice"]["cm"] < MIN_CM[hut["class"]]:
            raise ReservationRejected(f"reservations API 412: {state['ice']['cm']} cm ice below {MIN_CM[hut['class']]} cm for {hut['class']}")
        if state["gear"]["hut"] != c["hut"]:
            raise ReservationRejected(f"reservations API 409: gear booking {state['gear']['gear_booking']} is for hut {state['gear']['hut']}, reservation is for {c['hut']}")
        nights = (date.fromisoformat(t["end"]) - date.fromisoformat(t["start"])).days
        if q["nights"] != nights or abs(q["total"] - nights * hut["nightly"]) > 0.01:
            raise ReservationRejected(f"reservations API 422: quoted {q['nights']} nights / {q['total']:.2f} CAD, stay {t['start']}..{t['end']} is {nights} nights at {hut['nightly']:.2f}")
        return {"confirmation": {"ref": state["ref"], "hut": c["hut"], "status": "held"}}

    g = StateGraph(HutState)
    for name, fn in [("intake", intake), ("parse_trip", parse_trip), ("ice_report", ice_report), ("assess_ice", assess_ice),
                     ("find_huts", find_huts), ("select_hut", select_hut), ("gear_agent", gear_agent), ("price", price),
                     ("reserve", reserve)]:
        g.add_node(name, fn)
    order = ["intake", "parse_trip", "ice_report", "assess_ice", "find_huts", "select_hut", "gear_agent", "price", "reserve"]
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


def record(inp: dict, path: Path, base_url: str) -> None:
    llm = ChatOpenAI(base_url=base_url, api_key="not-needed", model="ops-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=inp["text"])
    try:
        build(llm).invoke({"ref": inp["ref"], "request": inp["text"]}, config={"callbacks": [tracer]})
    except ReservationRejected:
        pass
