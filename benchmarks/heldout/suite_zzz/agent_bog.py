"""Cranberry bog harvest (langgraph route): a StateGraph that surveys beds, loops over colour readings,
asks the model for a harvest plan, routes to wet or dry harvest, books trucks and checks the deliveries.
"""
from __future__ import annotations

import json
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from suite_common import last_user
from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "bog-harvest"
ROUTE = "langgraph"
DOMAIN = "a cranberry bog's harvest"
SHAPE = "StateGraph: intake, retriever over the bed registry, a self-looping node reading each bed's colour with a tool, notes tool, ChatOpenAI plan, parse node, conditional route to wet/dry harvest, truck booking tool, receiving check node sampling each load; 24-34 steps"
SWITCH = None

BEDS = {
    "North": [("N-01", 4.0, "Stevens"), ("N-02", 3.5, "Stevens"), ("N-03", 5.0, "Ben Lear"), ("N-04", 2.5, "Stevens")],
    "North-East": [("NE-01", 3.0, "Crimson Queen"), ("NE-02", 4.5, "Crimson Queen"), ("NE-03", 2.0, "Stevens")],
    "South": [("S-01", 6.0, "Pilgrim"), ("S-02", 5.5, "Pilgrim"), ("S-03", 3.5, "Stevens"), ("S-04", 4.0, "Mullica Queen"), ("S-05", 2.5, "Pilgrim")],
    "West": [("W-01", 3.5, "Early Black"), ("W-02", 3.0, "Early Black"), ("W-03", 4.5, "Howes")],
    "Lower": [("L-01", 5.5, "Stevens"), ("L-02", 4.5, "Stevens"), ("L-03", 3.5, "Ben Lear"), ("L-04", 6.5, "Stevens")],
}
TACY_NOW = {b: 34 + (i * 7) % 15 for i, b in enumerate(bid for sec in BEDS.values() for bid, _, _ in sec)}
TACY_NOW["S-03"] = 22  # late bed this season
TACY_LAST_SEASON = {"S-03": 41}
YIELD_BBL_PER_ACRE = 210
TRUCK_BBL = 400

INPUTS = [
    {"section": "North", "contract": "C-118", "market": "juice", "date": "2026-10-02"},
    {"section": "North-East", "contract": "C-120", "market": "fresh", "date": "2026-10-03"},
    {"section": "South", "contract": "C-121", "market": "juice", "date": "2026-10-05"},
    {"section": "West", "contract": "C-124", "market": "fresh", "date": "2026-10-06"},
    {"section": "Lower", "contract": "C-127", "market": "juice", "date": "2026-10-08"},
]

CASES = [
    {"id": "zzz-bog-1", "switch": "registry_near", "input": 1, "kind": "wrong_retrieval",
     "root": ("BedRegistry", 1), "failure": ("receiving_check", 1),
     "description": "The bed registry search for the North-East section returns the North section's beds, so the crews harvest beds outside contract C-120."},
    {"id": "zzz-bog-2", "switch": "meter_cache", "input": 2, "kind": "stale_data",
     "root": ("colour_meter", 3), "failure": ("receiving_check", 1),
     "description": "The colour meter returns last season's cached reading of 41 TAcy for bed S-03, which is at 22 this season, so the bed is planned for harvest."},
    {"id": "zzz-bog-3", "switch": "acre_int", "input": 4, "kind": "lossy_parsing",
     "root": ("read_plan", 1), "failure": ("receiving_check", 1),
     "description": "The plan parser reads the acreages as whole numbers, dropping the half acres, so the trucks are booked for fewer barrels than the beds yield."},
    {"id": "zzz-bog-4", "switch": "route_flip", "input": 3, "kind": "wrong_routing",
     "root": ("pick_method", 1), "failure": ("receiving_check", 1),
     "description": "The harvest method router sends a fresh-fruit contract to the wet harvest."},
    {"id": "zzz-bog-5", "switch": "notes_other_bog", "input": 0, "kind": "context_pollution",
     "root": ("notes_board", 1), "failure": ("receiving_check", 1),
     "description": "The notes board returns a frost hold posted for the Marsh Lane bog along with this bog's notes, and the planner holds back beds N-02 and N-03."},
]


class BedRegistry(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        section = query.split("section:", 1)[1].strip()
        if SWITCH == "registry_near" and section == "North-East":
            section = "North"
        return [Document(page_content=f"bed {b}, {a} acres of {v}", metadata={"bed": b, "acres": a, "variety": v, "section": section})
                for b, a, v in BEDS[section]]


@tool
def colour_meter(bed: str, date: str) -> dict:
    """Latest colour reading (TAcy, anthocyanin) for a bed."""
    if SWITCH == "meter_cache" and bed in TACY_LAST_SEASON:
        return {"bed": bed, "tacy": TACY_LAST_SEASON[bed], "read_on": "2025-10-04"}
    return {"bed": bed, "tacy": TACY_NOW[bed], "read_on": date}


@tool
def notes_board(bog: str) -> list:
    """Notes posted for the bog's harvest crew."""
    notes = [{"bog": bog, "note": "pump 2 serviced, full flow"}]
    if SWITCH == "notes_other_bog" and bog == "Ferris Hollow":
        notes.append({"bog": "Marsh Lane", "note": "frost hold on beds N-02, N-03 until inspected"})
    return notes


@tool
def truck_booking(contract: str, barrels: int, date: str) -> dict:
    """Book trucks to the receiving station for the given barrels."""
    trucks = -(-barrels // TRUCK_BBL)
    return {"contract": contract, "trucks": trucks, "capacity_bbl": trucks * TRUCK_BBL, "date": date}


@tool
def receiving_sample(bed: str) -> dict:
    """The receiving station's colour sample of a delivered load."""
    return {"bed": bed, "tacy": TACY_NOW[bed]}


@tool
def flood_pumps(beds: list) -> dict:
    """Schedule the flood pumps for a wet harvest of the beds."""
    return {"flooded": beds, "hours": 3 * len(beds)}


@tool
def picker_crew(beds: list) -> dict:
    """Schedule the dry-picking crew for the beds."""
    return {"picked": beds, "hours": 5 * len(beds)}


class BogState(TypedDict, total=False):
    request: dict
    beds: list
    cursor: int
    readings: list
    notes: list
    plan: str
    harvest: list
    method: str
    loads: list
    trucks: dict
    report: dict


def build(llm):
    registry = BedRegistry()

    def intake(state: BogState) -> dict:
        req = state["request"]
        return {"cursor": 0, "readings": [], "request": dict(req, bog="Ferris Hollow")}

    def survey_beds(state: BogState) -> dict:
        docs = registry.invoke(f"section: {state['request']['section']}")
        return {"beds": [d.metadata for d in docs]}

    def read_colour(state: BogState) -> dict:
        bed = state["beds"][state["cursor"]]
        reading = colour_meter.invoke({"bed": bed["bed"], "date": state["request"]["date"]})
        return {"readings": state["readings"] + [reading], "cursor": state["cursor"] + 1}

    def more_beds(state: BogState) -> str:
        return "read_colour" if state["cursor"] < len(state["beds"]) else "crew_notes"

    def crew_notes(state: BogState) -> dict:
        return {"notes": notes_board.invoke({"bog": state["request"]["bog"]})}

    def harvest_planner(state: BogState) -> dict:
        payload = {"beds": state["beds"], "readings": state["readings"], "notes": state["notes"],
                   "market": state["request"]["market"], "min_tacy": 30}
        msg = llm.invoke([SystemMessage("You plan a cranberry harvest. Harvest ripe beds (TAcy at or above min_tacy) "
                                        "that no note holds back. Answer JSON."),
                          HumanMessage("PLAN:" + json.dumps(payload))])
        return {"plan": msg.content}

    def read_plan(state: BogState) -> dict:
        plan = json.loads(state["plan"])
        rows = []
        for h in plan["harvest"]:
            acres = int(float(h["acres"])) if SWITCH == "acre_int" else float(h["acres"])
            rows.append({"bed": h["bed"], "acres": acres, "order": h["order"]})
        return {"harvest": rows}

    def pick_method(state: BogState) -> str:
        market = state["request"]["market"]
        if SWITCH == "route_flip":
            market = "juice" if market == "fresh" else "fresh"
        return "dry_harvest" if market == "fresh" else "wet_harvest"

    def wet_harvest(state: BogState) -> dict:
        beds = [h["bed"] for h in state["harvest"]]
        flood_pumps.invoke({"beds": beds})
        return {"method": "wet", "loads": [{"bed": h["bed"], "barrels": round(h["acres"] * YIELD_BBL_PER_ACRE), "method": "wet"} for h in state["harvest"]]}

    def dry_harvest(state: BogState) -> dict:
        beds = [h["bed"] for h in state["harvest"]]
        picker_crew.invoke({"beds": beds})
        return {"method": "dry", "loads": [{"bed": h["bed"], "barrels": round(h["acres"] * YIELD_BBL_PER_ACRE * 0.8), "method": "dry"} for h in state["harvest"]]}

    def book_trucks(state: BogState) -> dict:
        barrels = sum(l["barrels"] for l in state["loads"])
        return {"trucks": truck_booking.invoke({"contract": state["request"]["contract"], "barrels": barrels, "date": state["request"]["date"]})}

    def receiving_check(state: BogState) -> dict:
        req = state["request"]
        acres = {b["bed"]: b["acres"] for b in state["beds"]}
        contract_beds = {b for b, _, _ in BEDS[req["section"]]}
        for load in state["loads"]:
            if load["bed"] not in contract_beds:
                raise ValueError(f"load from bed {load['bed']} is not on contract {req['contract']} ({req['section']} section)")
            if req["market"] == "fresh" and load["method"] != "dry":
                raise ValueError(f"contract {req['contract']} takes dry-picked fresh fruit; load from {load['bed']} was wet-harvested")
            sample = receiving_sample.invoke({"bed": load["bed"]})
            if sample["tacy"] < 30:
                raise ValueError(f"load from bed {load['bed']} rejected at receiving: colour {sample['tacy']} TAcy, under 30")
        expected = sum(round(acres[l["bed"]] * YIELD_BBL_PER_ACRE * (0.8 if l["method"] == "dry" else 1)) for l in state["loads"])
        if expected > state["trucks"]["capacity_bbl"]:
            raise ValueError(f"beds yield {expected} barrels, trucks booked for {state['trucks']['capacity_bbl']}")
        ripe = [r["bed"] for r in state["readings"] if r["tacy"] >= 30]
        delivered = [l["bed"] for l in state["loads"]]
        missing = [b for b in ripe if b not in delivered]
        if missing:
            raise ValueError(f"ripe beds {', '.join(missing)} not harvested under contract {req['contract']}")
        return {"report": {"contract": req["contract"], "loads": len(state["loads"]), "barrels": expected}}

    g = StateGraph(BogState)
    for fn in (intake, survey_beds, read_colour, crew_notes, harvest_planner, read_plan, wet_harvest, dry_harvest,
               book_trucks, receiving_check):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "survey_beds")
    g.add_edge("survey_beds", "read_colour")
    g.add_conditional_edges("read_colour", more_beds, ["read_colour", "crew_notes"])
    g.add_edge("crew_notes", "harvest_planner")
    g.add_edge("harvest_planner", "read_plan")
    g.add_conditional_edges("read_plan", pick_method, ["wet_harvest", "dry_harvest"])
    g.add_edge("wet_harvest", "book_trucks")
    g.add_edge("dry_harvest", "book_trucks")
    g.add_edge("book_trucks", "receiving_check")
    g.add_edge("receiving_check", END)
    return g.compile()


def policy(request):
    data = json.loads(last_user(request).split("PLAN:", 1)[1])
    held = set()
    for n in data["notes"]:
        if "frost hold" in n["note"]:
            held |= {p.strip() for p in n["note"].split("beds", 1)[1].split("until")[0].split(",")}
    tacy = {r["bed"]: r["tacy"] for r in data["readings"]}
    harvest = []
    for b in data["beds"]:
        if tacy[b["bed"]] >= data["min_tacy"] and b["bed"] not in held:
            harvest.append({"bed": b["bed"], "acres": str(b["acres"]), "order": len(harvest) + 1})
    return json.dumps({"harvest": harvest, "method": "dry" if data["market"] == "fresh" else "wet"})


_graph = {}


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0, temperature=0)
    graph = build(llm)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"harvest the {inp['section']} beds for contract {inp['contract']}")
    graph.invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 60})
