"""Snail farming (langgraph route): plan a harvest of snail pens, find a buyer through a buyer-desk subgraph, submit the lot."""

from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from .common import Case, last_user_json, policy, server
from .kit import active

NAME = "snail-farm-harvest"
ROUTE = "langgraph"

INPUTS = {
    "farm_ardeche": {"farm": "Escargotière des Combes", "lot": "LOT-4471", "pens": [
        {"pen": "P1", "batch": "B-12", "species": "Helix aspersa maxima", "age_weeks": 18, "count": "1,240 snails", "avg_g": 18.5,
         "humidity": 86, "logged": "2026-12-04"},
        {"pen": "P2", "batch": "B-15", "species": "Helix aspersa maxima", "age_weeks": 16, "count": "980 snails", "avg_g": 17.0,
         "humidity": 84, "logged": "2026-12-04"},
        {"pen": "P3", "batch": "B-17", "species": "Helix aspersa maxima", "age_weeks": 15, "count": "1,105 snails", "avg_g": 14.0,
         "humidity": 88, "logged": "2026-12-04"}]},
    "farm_jura": {"farm": "Ferme Hélicicole du Jura", "lot": "LOT-4480", "pens": [
        {"pen": "P1", "batch": "B-31", "species": "Helix pomatia", "age_weeks": 20, "count": "2,310 snails", "avg_g": 22.0,
         "humidity": 70, "logged": "2026-12-04"},
        {"pen": "P2", "batch": "B-33", "species": "Helix aspersa maxima", "age_weeks": 17, "count": "1,870 snails", "avg_g": 18.0,
         "humidity": 85, "logged": "2026-12-03"},
        {"pen": "P3", "batch": "B-34", "species": "Helix aspersa maxima", "age_weeks": 17, "count": "1,420 snails", "avg_g": 17.5,
         "humidity": 87, "logged": "2026-12-04"}]},
    "farm_ref_a": {"farm": "Les Gastéropodes", "lot": "LOT-4402", "pens": [
        {"pen": "P1", "batch": "B-02", "species": "Helix aspersa muller", "age_weeks": 19, "count": "3,020 snails", "avg_g": 9.0,
         "humidity": 83, "logged": "2026-12-04"},
        {"pen": "P2", "batch": "B-04", "species": "Helix aspersa muller", "age_weeks": 12, "count": "2,800 snails", "avg_g": 6.0,
         "humidity": 85, "logged": "2026-12-04"}]},
    "farm_ref_b": {"farm": "Snail Hollow", "lot": "LOT-4415", "pens": [
        {"pen": "P1", "batch": "B-08", "species": "Helix aspersa maxima", "age_weeks": 17, "count": "760 snails", "avg_g": 19.0,
         "humidity": 85, "logged": "2026-12-03"},
        {"pen": "P2", "batch": "B-09", "species": "Helix aspersa maxima", "age_weeks": 16, "count": "1,010 snails", "avg_g": 17.5,
         "humidity": 84, "logged": "2026-12-04"},
        {"pen": "P3", "batch": "B-10", "species": "Helix aspersa maxima", "age_weeks": 16, "count": "890 snails", "avg_g": 17.0,
         "humidity": 86, "logged": "2026-12-04"}]},
    "farm_ref_c": {"farm": "Caracoles del Valle", "lot": "LOT-4431", "pens": [
        {"pen": "P1", "batch": "B-21", "species": "Helix pomatia", "age_weeks": 22, "count": "1,560 snails", "avg_g": 23.0,
         "humidity": 81, "logged": "2026-12-04"},
        {"pen": "P2", "batch": "B-22", "species": "Helix pomatia", "age_weeks": 21, "count": "1,330 snails", "avg_g": 22.5,
         "humidity": 83, "logged": "2026-12-04"}]},
    "farm_ref_d": {"farm": "Green Shell Farm", "lot": "LOT-4450", "pens": [
        {"pen": "P1", "batch": "B-40", "species": "Helix aspersa maxima", "age_weeks": 14, "count": "1,900 snails", "avg_g": 13.0,
         "humidity": 87, "logged": "2026-12-04"},
        {"pen": "P2", "batch": "B-41", "species": "Helix aspersa maxima", "age_weeks": 18, "count": "2,050 snails", "avg_g": 18.0,
         "humidity": 86, "logged": "2026-12-04"},
        {"pen": "P3", "batch": "B-42", "species": "Helix aspersa maxima", "age_weeks": 19, "count": "1,300 snails", "avg_g": 19.5,
         "humidity": 85, "logged": "2026-12-04"}]},
}
REFS = ["farm_ref_a", "farm_ref_b", "farm_ref_c", "farm_ref_d"]
BUYERS = [
    {"buyer": "Maison Bourgogne", "species": "Helix pomatia", "min_kg": 20},
    {"buyer": "Escargots Petit-Gris SARL", "species": "Helix aspersa maxima", "min_kg": 25},
    {"buyer": "Muller Frères", "species": "Helix aspersa muller", "min_kg": 10},
]

CASES = [
    Case("zzb_snails_01", NAME, ROUTE, "lossy_parsing", "snails_count", "farm_ardeche", "count_snails", 1, "other",
         "submit_harvest", "count_snails reads '1,240 snails' as 1 by cutting at the thousands comma."),
    Case("zzb_snails_02", NAME, ROUTE, "stale_data", "snails_climate", "farm_jura", "read_pen_climate", 2, "tool",
         "submit_harvest", "read_pen_climate serves pen P2 from last month's cached climate log."),
    Case("zzb_snails_03", NAME, ROUTE, "off_by_one", "snails_age", "farm_ardeche", "eligible_pens", 1, "other",
         "submit_harvest", "eligible_pens compares age with a bound one week too low, letting the 15-week batch in."),
    Case("zzb_snails_04", NAME, ROUTE, "subagent_wrong_entity", "snails_brief", "farm_jura", "brief_buyer_desk", 1, "other",
         "submit_harvest", "the buyer desk subgraph is briefed with the first pen's species, not the species of the planned lot."),
    Case("zzb_snails_05", NAME, ROUTE, "plan_error", "snails_plan", "farm_ardeche", "ChatOpenAI", 1, "llm",
         "submit_harvest", "the harvest planning model schedules the lot with no purge days before sale."),
]

_CURRENT: dict = {}


class FarmState(TypedDict, total=False):
    lot: str
    pens: list
    pending: list
    climate: Annotated[list, operator.add]
    counts: dict
    eligible: list
    plan: dict
    species: str
    buyer_query: dict
    buyer_hits: list
    buyer: dict
    yield_kg: float
    memory: dict


@tool
def list_pens(farm: str) -> list:
    """List the farm's pens with batch, species, age and the keeper's count note."""
    return [{k: p[k] for k in ("pen", "batch", "species", "age_weeks", "count", "avg_g")} for p in _CURRENT["pens"]]


@tool
def read_pen_climate(pen: str) -> dict:
    """Read a pen's latest humidity log entry."""
    p = next(x for x in _CURRENT["pens"] if x["pen"] == pen)
    if pen == "P2" and active("snails_climate"):
        return {"pen": pen, "humidity": 85, "logged": "2026-11-02"}
    return {"pen": pen, "humidity": p["humidity"], "logged": p["logged"]}


@tool
def search_buyers(species: str) -> list:
    """Search the buyer register for buyers of one species."""
    return [b for b in BUYERS if b["species"] == species]


def _llm() -> ChatOpenAI:
    return ChatOpenAI(model="snail-planner", base_url=server().base_url, api_key="sk-test-local", max_retries=0)


@policy("snail-planner")
def _planner(request):
    p = last_user_json(request)
    if p.get("task") == "plan":
        pens = [e["pen"] for e in p["eligible"] if e["humidity"] >= 75]
        return json.dumps({"harvest_pens": pens, "purge_days": 0 if active("snails_plan") else 5,
                           "grade": "extra" if len(pens) > 1 else "standard"})
    hits = p["hits"]
    return json.dumps({"buyer": hits[0]["buyer"], "species": hits[0]["species"], "min_kg": hits[0]["min_kg"]})


def load_pens(state: FarmState) -> dict:
    pens = list_pens.invoke({"farm": _CURRENT["farm"]})
    return {"pens": pens, "pending": [p["pen"] for p in pens]}


def read_climate(state: FarmState) -> dict:
    entry = read_pen_climate.invoke({"pen": state["pending"][0]})
    return {"climate": [entry], "pending": state["pending"][1:]}


def next_pen(state: FarmState) -> str:
    return "read_climate" if state["pending"] else "count_snails"


def count_snails(state: FarmState) -> dict:
    counts = {}
    for p in state["pens"]:
        text = p["count"].split()[0]
        counts[p["pen"]] = int(text.split(",")[0]) if active("snails_count") else int(text.replace(",", ""))
    return {"counts": counts}


def eligible_pens(state: FarmState) -> dict:
    bound = 15 if active("snails_age") else 16
    climate = {c["pen"]: c for c in state["climate"]}
    out = [{"pen": p["pen"], "batch": p["batch"], "species": p["species"], "humidity": climate[p["pen"]]["humidity"],
            "logged": climate[p["pen"]]["logged"]} for p in state["pens"] if p["age_weeks"] >= bound]
    return {"eligible": out}


def plan_harvest(state: FarmState) -> dict:
    reply = _llm().invoke([SystemMessage("Plan the harvest: pens with humidity 75% or more, purge before sale."),
                           HumanMessage(json.dumps({"task": "plan", "eligible": state["eligible"]}, sort_keys=True))])
    plan = json.loads(reply.content)
    species = sorted({e["species"] for e in state["eligible"] if e["pen"] in plan["harvest_pens"]})
    return {"plan": plan, "species": species[0]}


def brief_buyer_desk(state: FarmState) -> dict:
    species = state["pens"][0]["species"] if active("snails_brief") else state["species"]
    return {"buyer_query": {"species": species, "lot": state["lot"]}}


def find_buyers(state: FarmState) -> dict:
    return {"buyer_hits": search_buyers.invoke({"species": state["buyer_query"]["species"]})}


def pick_buyer(state: FarmState) -> dict:
    reply = _llm().invoke([SystemMessage("Pick the buyer for this lot."),
                           HumanMessage(json.dumps({"task": "buyer", "hits": state["buyer_hits"]}))])
    return {"buyer": json.loads(reply.content)}


def build_buyer_desk():
    g = StateGraph(FarmState)
    for fn in (brief_buyer_desk, find_buyers, pick_buyer):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "brief_buyer_desk")
    g.add_edge("brief_buyer_desk", "find_buyers")
    g.add_edge("find_buyers", "pick_buyer")
    g.add_edge("pick_buyer", END)
    return g.compile()


def compute_yield(state: FarmState) -> dict:
    avg = {p["pen"]: p["avg_g"] for p in state["pens"]}
    kg = sum(state["counts"][pen] * avg[pen] for pen in state["plan"]["harvest_pens"]) / 1000
    return {"yield_kg": round(kg, 2)}


def remember_lot(state: FarmState) -> dict:
    return {"memory": {"lot": state["lot"], "buyer": state["buyer"]["buyer"], "kg": state["yield_kg"],
                       "pens": state["plan"]["harvest_pens"]}}


class LotRejected(ValueError):
    pass


def submit_harvest(state: FarmState) -> dict:
    farm = _CURRENT
    lot = state["memory"]
    pens = {p["pen"]: p for p in farm["pens"]}
    for pen in lot["pens"]:
        if pens[pen]["age_weeks"] < 16:
            raise LotRejected(f"Traceability register: batch {pens[pen]['batch']} is {pens[pen]['age_weeks']} weeks old, "
                              f"minimum harvest age is 16 weeks")
    for c in state["eligible"]:
        if c["pen"] in lot["pens"] and c["logged"] < "2026-11-28":
            raise LotRejected(f"Traceability register: climate log for pen {c['pen']} dated {c['logged']}, "
                              f"must be within 7 days of harvest")
    if state["plan"]["purge_days"] < 5:
        raise LotRejected(f"Food safety rule FS-2: lot {lot['lot']} purge period {state['plan']['purge_days']} days, "
                          f"minimum 5 days")
    buyer = next(b for b in BUYERS if b["buyer"] == lot["buyer"])
    lot_species = {pens[pen]["species"] for pen in lot["pens"]}
    if buyer["species"] not in lot_species:
        raise LotRejected(f'HTTP 409 {{"error":"species_mismatch","buyer":"{buyer["buyer"]}","accepts":"{buyer["species"]}",'
                          f'"lot_species":{json.dumps(sorted(lot_species))}}}')
    if lot["kg"] < buyer["min_kg"]:
        raise LotRejected(f'HTTP 422 {{"error":"below_minimum","lot":"{lot["lot"]}","kg":{lot["kg"]},'
                          f'"buyer_min_kg":{buyer["min_kg"]}}}')
    return {"memory": {**lot, "status": "submitted"}}


def build_graph():
    g = StateGraph(FarmState)
    for fn in (load_pens, read_climate, count_snails, eligible_pens, plan_harvest, compute_yield, remember_lot,
               submit_harvest):
        g.add_node(fn.__name__, fn)
    g.add_node("buyer_desk", build_buyer_desk())
    g.add_edge(START, "load_pens")
    g.add_edge("load_pens", "read_climate")
    g.add_conditional_edges("read_climate", next_pen, ["read_climate", "count_snails"])
    g.add_edge("count_snails", "eligible_pens")
    g.add_edge("eligible_pens", "plan_harvest")
    g.add_edge("plan_harvest", "buyer_desk")
    g.add_edge("buyer_desk", "compute_yield")
    g.add_edge("compute_yield", "remember_lot")
    g.add_edge("remember_lot", "submit_harvest")
    g.add_edge("submit_harvest", END)
    return g.compile()


def record(input_key: str, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    farm = INPUTS[input_key]
    _CURRENT.clear()
    _CURRENT.update(farm)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"harvest {farm['lot']} for {farm['farm']}")
    try:
        build_graph().invoke({"lot": farm["lot"], "climate": []}, config={"callbacks": [tracer]})
    except LotRejected:
        pass
