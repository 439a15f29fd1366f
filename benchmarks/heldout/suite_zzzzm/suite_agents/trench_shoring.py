"""Trench protection planner for a utility crew (a LangGraph graph, recorded by TrajdebugTracer).

A pipe run's segments (manhole to manhole, depth, width) are parsed, the geotech boring logs are
retrieved, and a model classifies the soil and groundwater per segment (read by a custom parser).
The graph then loops over the segments: a routing function sends each to a designer node (trench box,
sloping, or hydraulic shoring with dewatering), each designer reads the segment's survey profile and
the manufacturer's tabulated data, a reservation node books the equipment in the yard, and a memory
node records the selection.  The competent person's check closes the plan.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from suite_agents._common import last_user, system_of


NAME = "trench-protection-planner"
ROUTE = "langgraph"
DOMAIN = "excavation protective systems for utility trench runs (trench boxes, sloping, hydraulic shoring)"
SHAPE = "intake -> boring-log retriever -> model soil classification + custom parser -> loop over segments (routing function -> designer sub-agent node with tools -> yard reservation node -> memory node) -> competent-person check"

SWITCH: str | None = None


def switched(name: str) -> bool:
    """Whether the case ``name`` is on (the only place SWITCH is read)."""
    return SWITCH == name


DATE = "2026-03-11"
YARD = "Westside"

BORINGS = {
    "B-11": "B-11 (MH1): 0-0.8 m fill; 0.8-4.0 m firm brown clay, qu 95 kPa; no groundwater encountered",
    "B-12": "B-12 (MH2): 0-1.0 m fill; 1.0-4.5 m loose silty sand; groundwater 2.1 m bgs",
    "B-13": "B-13 (MH3): 0-0.6 m topsoil; 0.6-3.0 m firm clay, qu 80 kPa; no groundwater encountered",
    "B-21": "B-21 (MH1): 0-0.9 m fill; 0.9-5.0 m firm clay, qu 110 kPa; no groundwater encountered",
    "B-22": "B-22 (MH2): 0-0.7 m fill; 0.7-5.0 m firm clay, qu 120 kPa; no groundwater encountered",
    "B-31": "B-31 (MH1): 0-0.8 m fill; 0.8-3.5 m firm sandy clay, qu 70 kPa; no groundwater encountered",
    "B-32": "B-32 (MH2): 0-1.1 m fill; 1.1-4.2 m medium dense sand and gravel; groundwater 2.3 m bgs",
    "B-41": "B-41 (V1): 0-0.5 m topsoil; 0.5-3.0 m stiff clay, qu 165 kPa; no groundwater encountered",
    "B-42": "B-42 (V2): 0-0.6 m fill; 0.6-3.5 m firm clay, qu 100 kPa; no groundwater encountered",
    "B-51": "B-51 (MH3): 0-0.7 m fill; 0.7-4.0 m firm clay, qu 105 kPa; no groundwater encountered",
    "B-52": "B-52 (MH4): 0-0.9 m fill; 0.9-4.5 m firm clay, qu 90 kPa; no groundwater encountered",
}
PROFILES = {  # survey profiles: segment -> invert depth and trench width
    "ELM": {"MH1-MH2": (2.2, 1.2), "MH2-MH3": (2.8, 1.2), "MH3-MH4": (1.4, 1.0)},
    "ASH": {"MH1-MH2": (3.0, 1.4), "MH2-MH3": (3.4, 1.4)},
    "OAK": {"MH1-MH2": (2.5, 1.2), "MH2-MH3": (2.9, 1.2)},
    "BIRCH": {"V1-V2": (1.8, 1.0), "V2-V3": (2.6, 1.1)},
    "PINE": {"MH3-MH4": (2.4, 1.2), "MH4-MH5": (3.4, 1.4), "MH4-MH4A": (2.0, 1.0)},
}
BOXES = {  # model -> rated depth (m) by soil class
    "TB-4x2.4 alu": {"A": 4.0, "B": 3.2, "C": 2.0},
    "TB-6x2.4 steel": {"A": 6.0, "B": 4.8, "C": 3.0},
}
SHORES = {"HS-3 hydraulic": {"C": 3.6}, "HS-5 hydraulic": {"C": 5.0}}
UNITS = {  # the yard's boxes: unit -> (model, last inspection)
    "TB4-07": ("TB-4x2.4 alu", "2026-03-10"), "TB4-09": ("TB-4x2.4 alu", "2026-03-02"), "TB4-12": ("TB-4x2.4 alu", "2026-03-09"),
    "TB6-02": ("TB-6x2.4 steel", "2026-03-04"), "TB6-05": ("TB-6x2.4 steel", "2026-03-06"),
}
OUT_TODAY = {"TB4-07": "job 4471 since 07:10 today"}
YARD_LAST_NIGHT = ("TB4-07", "TB4-09", "TB4-12", "TB6-02", "TB6-05")  # the 18:00 snapshot

INPUTS = [
    {"key": "elm", "task": "trench protection: Elm St storm sewer MH1-MH4, 2026-03-11", "job": "ELM",
     "text": "Job: Elm St storm sewer\nSegment MH1-MH2, boring B-11\nSegment MH2-MH3, boring B-12\nSegment MH3-MH4, boring B-13"},
    {"key": "ash", "task": "trench protection: Ash Ave sanitary sewer MH1-MH3, 2026-03-11", "job": "ASH",
     "text": "Job: Ash Ave sanitary sewer\nSegment MH1-MH2, boring B-21\nSegment MH2-MH3, boring B-22"},
    {"key": "oak", "task": "trench protection: Oak Rd storm sewer MH1-MH3, 2026-03-11", "job": "OAK",
     "text": "Job: Oak Rd storm sewer\nSegment MH1-MH2, boring B-31\nSegment MH2-MH3, boring B-32"},
    {"key": "birch", "task": "trench protection: Birch Ln water main V1-V3, 2026-03-11", "job": "BIRCH",
     "text": "Job: Birch Ln water main\nSegment V1-V2, boring B-41\nSegment V2-V3, boring B-42"},
    {"key": "pine", "task": "trench protection: Pine St sewer MH3-MH5 and lateral MH4A, 2026-03-11", "job": "PINE",
     "text": "Job: Pine St sewer and lateral\nSegment MH3-MH4, boring B-51\nSegment MH4-MH5, boring B-52\nSegment MH4-MH4A, boring B-52"},
]

CASES = [
    {
        "case": "zzzzm_trench_clay_first", "input": "elm", "switch": "soil_rule_first", "fault_kind": "wrong_routing",
        "root": {"name": "route_segment", "occurrence": 2, "kind": "other"},
        "failure": {"name": "competent_person_check", "occurrence": 1},
        "description": "The router tests the soil class before the groundwater and sends MH2-MH3 (invert 2.8 m, groundwater 2.1 m) to the trench-box designer instead of hydraulic shoring with dewatering, which the competent person's check refuses.",
    },
    {
        "case": "zzzzm_trench_yard_snapshot", "input": "ash", "switch": "yard_snapshot", "fault_kind": "stale_data",
        "root": {"name": "box_inventory", "occurrence": 1, "kind": "tool"},
        "failure": {"name": "reserve_box", "occurrence": 1},
        "description": "The yard inventory is answered from last night's snapshot, which still lists TB4-07 as free, and the reservation fails because the box went out on job 4471 this morning.",
    },
    {
        "case": "zzzzm_trench_water_depth", "input": "oak", "switch": "bare_number_water", "fault_kind": "lossy_parsing",
        "root": {"name": "SoilClassParser", "occurrence": 1, "kind": "parse"},
        "failure": {"name": "competent_person_check", "occurrence": 1},
        "description": "The soil parser only reads groundwater given as a bare number and drops '2.3 m bgs' for MH2-MH3 to null, so the segment is boxed without dewatering and the competent person's check finds groundwater above the invert.",
    },
    {
        "case": "zzzzm_trench_first_candidate", "input": "birch", "switch": "candidate_box", "fault_kind": "bad_memory_write",
        "root": {"name": "record_selection", "occurrence": 1, "kind": "other"},
        "failure": {"name": "competent_person_check", "occurrence": 1},
        "description": "The memory node records V1-V2's box as the designer's first candidate TB4-09 instead of TB4-12, the unit actually reserved, and the competent person's check finds the plan and the reservation disagree.",
    },
    {
        "case": "zzzzm_trench_lateral_profile", "input": "pine", "switch": "profile_by_manhole", "fault_kind": "subagent_wrong_entity",
        "root": {"name": "box_designer", "occurrence": 3, "kind": "agent"},
        "failure": {"name": "competent_person_check", "occurrence": 1},
        "description": "The box designer for the lateral MH4-MH4A asks the survey for its upstream manhole MH4 and designs for MH4-MH5 (3.4 m deep) instead, so the plan's design for the lateral does not match its 2.0 m profile.",
    },
]


class PlanRefused(Exception):
    pass


# -- tools, retriever, parser ----------------------------------------------------------------------

@tool
def trench_profile(job: str, ref: str) -> str:
    """Invert depth and trench width of a segment from the survey (ref: a segment, or a manhole id)."""
    profiles = PROFILES[job]
    seg = ref if ref in profiles else next(s for s in profiles if s.split("-")[0] == ref)
    depth, width = profiles[seg]
    return json.dumps({"job": job, "segment": seg, "depth_m": depth, "width_m": width})


@tool
def tabulated_data(system: str, soil_class: str, depth_m: float) -> str:
    """Manufacturer's tabulated data: the models of a protective system rated for a soil class and depth."""
    table = BOXES if system == "trench box" else SHORES
    rated = [{"model": m, "rated_depth_m": r[soil_class]} for m, r in table.items() if r.get(soil_class, 0) >= depth_m]
    return json.dumps({"system": system, "soil_class": soil_class, "depth_m": depth_m, "rated": rated})


def _live() -> list[str]:
    return [u for u in UNITS if u not in OUT_TODAY and u not in _reserved]


@tool
def box_inventory(yard: str, model: str) -> str:
    """Trench boxes of a model free in the yard now, with their last inspection."""
    units = [u for u in YARD_LAST_NIGHT if u not in _reserved] if switched("yard_snapshot") else _live()
    free = [{"unit": u, "inspected": UNITS[u][1]} for u in units if UNITS[u][0] == model]
    return json.dumps({"yard": yard, "model": model, "free": free})


@tool
def reserve_box(yard: str, unit: str, segment: str, date: str) -> str:
    """Reserve one trench box unit for a segment."""
    if unit in OUT_TODAY:
        raise RuntimeError(f"{unit} cannot be reserved in {yard} yard for {date}: out on {OUT_TODAY[unit]}")
    if unit in _reserved:
        raise RuntimeError(f"{unit} is already reserved for {date}")
    _reserved.add(unit)
    reservation = f"R-{segment}-{date[5:].replace('-', '')}"
    _allocated[reservation] = unit
    return json.dumps({"reservation": reservation, "box": unit, "model": UNITS[unit][0], "segment": segment})


@tool
def slope_table(soil_class: str) -> str:
    """Maximum allowable slope (H:V) for a soil class."""
    return json.dumps({"soil_class": soil_class, "slope_hv": {"A": 0.75, "B": 1.0, "C": 1.5}[soil_class]})


@tool
def dewatering_plan(segment: str, water_m: float, depth_m: float) -> str:
    """Wellpoint dewatering for a segment whose invert is below groundwater."""
    return json.dumps({"segment": segment, "wellpoints": int(10 * (depth_m - water_m) + 4), "drawdown_m": round(depth_m - water_m + 0.5, 1)})


@tool
def reserve_shores(yard: str, model: str, segment: str, date: str) -> str:
    """Reserve hydraulic shores for a segment."""
    return json.dumps({"reservation": f"RS-{segment}-{date[5:].replace('-', '')}", "model": model, "segment": segment, "shores": 6})


_reserved: set[str] = set()


class BoringLogRetriever(BaseRetriever):
    """The geotechnical report's boring logs."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        ids = re.findall(r"B-\d+", query)
        return [Document(page_content=BORINGS[b], metadata={"boring": b, "report": "GR-2291 rev C"}) for b in dict.fromkeys(ids)]


class SoilClassParser(BaseOutputParser[list]):
    """Reads the model's soil classification: one record per segment, groundwater depth in metres or null."""

    def parse(self, text: str) -> list:
        rows = json.loads(text)
        out = []
        for r in rows:
            water = r.get("groundwater")
            if water is None or str(water).lower().startswith("none"):
                depth = None
            elif switched("bare_number_water"):
                try:
                    depth = float(water)
                except ValueError:
                    depth = None
            else:
                depth = float(re.match(r"\s*([\d.]+)", str(water)).group(1))
            out.append({"segment": r["segment"], "soil_class": r["soil_class"], "water_m": depth, "boring": r["boring"]})
        return out


# -- the graph ------------------------------------------------------------------------------------

class TrenchState(TypedDict, total=False):
    request: str
    job: str
    segments: list
    borings: list
    soils: dict
    cursor: int
    current: dict
    design: dict
    reservation: dict
    selections: dict


CLASSIFY_SYSTEM = ("You classify soil for excavation work (Type A cohesive qu >= 144 kPa, Type B cohesive 48-144 kPa, "
                   "Type C granular, submerged or below groundwater). For each segment answer JSON records "
                   "{segment, boring, soil_class, groundwater}: groundwater as the log states it, or null.")


def intake(state: TrenchState) -> dict:
    segs = [{"segment": s, "boring": b, "from_mh": s.split("-")[0]}
            for s, b in re.findall(r"^Segment (\S+), boring (B-\d+)$", state["request"], re.M)]
    return {"segments": segs, "cursor": 0, "selections": {}, "job": state["job"]}


def next_segment(state: TrenchState) -> dict:
    seg = state["segments"][state["cursor"]]
    return {"current": {**seg, **state["soils"][seg["segment"]]}, "cursor": state["cursor"] + 1}


def route_segment(state: TrenchState) -> str:
    seg = state["current"]
    profile = PROFILES[state["job"]][seg["segment"]]
    depth = profile[0]
    if switched("soil_rule_first") and seg["soil_class"] == "C":
        return "box_designer"
    if seg["water_m"] is not None and seg["water_m"] < depth:
        return "shoring_designer"
    if depth <= 1.5:
        return "slope_designer"
    return "box_designer"


def _profile(state: TrenchState, ref: str | None = None) -> dict:
    return json.loads(trench_profile.invoke({"job": state["job"], "ref": ref or state["current"]["segment"]}))


def box_designer(state: TrenchState) -> dict:
    seg = state["current"]
    ref = seg["from_mh"] if switched("profile_by_manhole") else seg["segment"]
    prof = _profile(state, ref)
    rated = json.loads(tabulated_data.invoke({"system": "trench box", "soil_class": seg["soil_class"], "depth_m": prof["depth_m"]}))["rated"]
    model = rated[0]["model"]
    free = json.loads(box_inventory.invoke({"yard": YARD, "model": model}))["free"]
    return {"design": {"segment": prof["segment"], "system": "trench box", "model": model, "depth_m": prof["depth_m"],
                       "rated_depth_m": rated[0]["rated_depth_m"], "candidates": free}}


def slope_designer(state: TrenchState) -> dict:
    seg = state["current"]
    prof = _profile(state)
    ratio = json.loads(slope_table.invoke({"soil_class": seg["soil_class"]}))["slope_hv"]
    return {"design": {"segment": prof["segment"], "system": f"sloping {ratio}:1", "depth_m": prof["depth_m"],
                       "top_width_m": round(prof["width_m"] + 2 * ratio * prof["depth_m"], 1)}}


def shoring_designer(state: TrenchState) -> dict:
    seg = state["current"]
    prof = _profile(state)
    rated = json.loads(tabulated_data.invoke({"system": "hydraulic shoring", "soil_class": "C", "depth_m": prof["depth_m"]}))["rated"]
    dw = json.loads(dewatering_plan.invoke({"segment": prof["segment"], "water_m": seg["water_m"], "depth_m": prof["depth_m"]}))
    return {"design": {"segment": prof["segment"], "system": "hydraulic shoring", "model": rated[0]["model"],
                       "depth_m": prof["depth_m"], "rated_depth_m": rated[0]["rated_depth_m"], "dewatering": dw}}


def reserve(state: TrenchState) -> dict:
    d = state["design"]
    seg = state["current"]["segment"]
    if d["system"] == "trench box":
        unit = max(d["candidates"], key=lambda c: c["inspected"])["unit"]  # the most recently inspected unit
        r = reserve_box.invoke({"yard": YARD, "unit": unit, "segment": seg, "date": DATE})
    elif d["system"] == "hydraulic shoring":
        r = reserve_shores.invoke({"yard": YARD, "model": d["model"], "segment": seg, "date": DATE})
    else:
        return {"reservation": {"segment": seg, "reservation": None}}
    return {"reservation": json.loads(r)}


def record_selection(state: TrenchState) -> dict:
    d, r = state["design"], state["reservation"]
    entry = {"design": d, "reservation": r.get("reservation")}
    if d["system"] == "trench box":
        entry["box"] = d["candidates"][0]["unit"] if switched("candidate_box") else r["box"]
    return {"selections": {**state["selections"], state["current"]["segment"]: entry}}


def more_segments(state: TrenchState) -> str:
    return "next_segment" if state["cursor"] < len(state["segments"]) else "competent_person_check"


def competent_person_check(state: TrenchState) -> dict:
    water_at = {}
    for doc in state["borings"]:
        m = re.search(r"groundwater ([\d.]+) m", doc["text"])
        water_at[doc["boring"]] = float(m.group(1)) if m else None
    for seg in state["segments"]:
        name = seg["segment"]
        entry = state["selections"].get(name)
        if entry is None:
            raise PlanRefused(f"no protective system recorded for {name}")
        depth = PROFILES[state["job"]][name][0]
        d = entry["design"]
        if d["segment"] != name or d["depth_m"] != depth:
            raise PlanRefused(f"{name}: the design is for {d['segment']} at {d['depth_m']} m; the survey gives {name} {depth} m deep")
        water = water_at.get(seg["boring"])
        if water is not None and water < depth and d["system"] != "hydraulic shoring":
            raise PlanRefused(f"{name}: invert at {depth} m is below groundwater at {water} m ({seg['boring']}); "
                              f"{d['system']} without dewatering is not accepted")
        if "box" in entry and entry["box"] != _allocated.get(entry["reservation"]):
            raise PlanRefused(f"{name}: the plan lists box {entry['box']} but reservation {entry['reservation']} is for "
                              f"{_allocated.get(entry['reservation'])}")
    return {"selections": state["selections"]}


_allocated: dict[str, str] = {}  # what the yard allocated, as its reservation system keeps it


def _graph(llm: ChatOpenAI):
    retriever = BoringLogRetriever()
    parser = SoilClassParser()

    def soil_lookup(state: TrenchState) -> dict:
        docs = retriever.invoke(" ".join(s["boring"] for s in state["segments"]))
        return {"borings": [{"boring": d.metadata["boring"], "text": d.page_content} for d in docs]}

    def classify(state: TrenchState) -> dict:
        msg = llm.invoke([("system", CLASSIFY_SYSTEM),
                          ("user", json.dumps({"segments": state["segments"], "logs": state["borings"]}))])
        rows = parser.invoke(msg)
        return {"soils": {r["segment"]: {"soil_class": r["soil_class"], "water_m": r["water_m"]} for r in rows}}

    g = StateGraph(TrenchState)
    for fn in (intake, soil_lookup, classify, next_segment, box_designer, slope_designer, shoring_designer, reserve,
               record_selection, competent_person_check):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "soil_lookup")
    g.add_edge("soil_lookup", "classify")
    g.add_edge("classify", "next_segment")
    g.add_conditional_edges("next_segment", route_segment, ["box_designer", "slope_designer", "shoring_designer"])
    for d in ("box_designer", "slope_designer", "shoring_designer"):
        g.add_edge(d, "reserve")
    g.add_edge("reserve", "record_selection")
    g.add_conditional_edges("record_selection", more_segments, ["next_segment", "competent_person_check"])
    g.add_edge("competent_person_check", END)
    return g.compile(name=NAME)


_app = None


def setup(env: dict) -> None:
    global _app
    llm = ChatOpenAI(model=env["server"].model, base_url=env["server"].base_url, api_key="not-needed", max_retries=0)
    _app = _graph(llm)


def record(inp: dict, dest: Path, env: dict) -> None:
    _reserved.clear()
    _allocated.clear()
    tracer = TrajdebugTracer(path=str(dest), name=NAME)
    try:
        _app.invoke({"request": inp["text"], "job": inp["job"]},
                    config={"callbacks": [tracer], "metadata": {"task": inp["task"]}, "recursion_limit": 80})
    except (PlanRefused, RuntimeError):
        pass


# -- the model ------------------------------------------------------------------------------------

def brain(request) -> Any:
    messages = request.body["messages"]
    if system_of(messages) != CLASSIFY_SYSTEM:
        return "I only classify soils."
    data = json.loads(last_user(messages))
    logs = {d["boring"]: d["text"] for d in data["logs"]}
    rows = []
    for seg in data["segments"]:
        text = logs[seg["boring"]]
        water = re.search(r"groundwater ([\d.]+ m bgs)", text)
        qu = re.search(r"qu (\d+) kPa", text)
        if water or "sand" in text:
            soil = "C"
        elif qu and int(qu.group(1)) >= 144:
            soil = "A"
        else:
            soil = "B"
        rows.append({"segment": seg["segment"], "boring": seg["boring"], "soil_class": soil,
                     "groundwater": water.group(1) if water else None})
    return json.dumps(rows)
