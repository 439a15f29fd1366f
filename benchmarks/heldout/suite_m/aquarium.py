"""Aquarium life-support round (route langgraph): per tank probes -> parse -> model triage -> dose
(SOP retriever, registry, model + calculator tool, queue) or water change; then the LSS log and chillers."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from suite_m import kit
from trajdebug.testing import Reply, tool_call


AGENT = "aquarium-lss-round"
ROUTE = "langgraph"
DOMAIN = "public aquarium life support"
SHAPE = "loop over 4 tanks: probes tool -> parse -> model triage (router) -> dose branch (SOP retriever, registry, model/ToolNode calculator, queue dose) or water change; then LSS log and chiller setpoints"

# tank -> (exhibit, system, volume_l, ph, alk_dkh, nitrate, temp_c, temp_unit_on_probe, treatment)
TANKS = {
    "T-1": ("Kelp forest", "marine", 310000, 8.05, 7.6, 12.0, 14.2, "C", ""),
    "T-2": ("Coral reef", "marine", 81000, 8.12, 6.4, 4.5, 25.1, "C", ""),
    "T-3": ("Shark lagoon", "marine", 1200000, 8.01, 7.4, 31.0, 24.0, "C", ""),
    "T-4": ("Flooded forest", "freshwater", 45000, 6.8, 3.1, 18.0, 27.2, "F", ""),
    "Q-2": ("Quarantine 2", "marine", 6000, 8.02, 6.2, 9.0, 25.3, "C", "copper day 6 of 14"),
    "T-5": ("Moon jellies", "marine", 2500, 8.08, 7.8, 6.0, 18.6, "C", ""),
    "T-6": ("Otter pool", "freshwater", 90000, 7.4, 5.2, 34.0, 16.8, "F", ""),
    "T-7": ("Seahorse nursery", "marine", 1800, 8.14, 6.6, 3.0, 24.4, "C", ""),
}
TARGET_ALK = 7.5
COMPOUND = {"marine": "sodium bicarbonate", "freshwater": "potassium bicarbonate"}
SOPS = [
    ("SOP-MR-07", "Marine alkalinity correction: dose sodium bicarbonate, at most +1.0 dKH per day, predissolved in system water."),
    ("SOP-FW-12", "Freshwater buffering: dose potassium bicarbonate, at most +1.0 dKH per day, add through the sump."),
    ("SOP-WC-03", "Water change: up to 20% per day with temperature-matched new water; never during a medication course."),
]


def _round(n: int, tanks: list[str], ts: str) -> dict:
    return {"task": f"Morning LSS round R-{n}: {', '.join(tanks)}", "round": f"R-{n}", "tanks": tanks, "ts": ts}


INPUTS = [
    _round(901, ["T-1", "Q-2", "T-3", "T-5"], "2026-12-02T06:00"),
    _round(902, ["T-5", "T-2", "T-1", "T-7"], "2026-12-02T06:00"),
    _round(903, ["T-7", "T-2", "T-3", "T-1"], "2026-12-02T06:00"),
    _round(904, ["T-1", "T-4", "T-5", "T-7"], "2026-12-02T06:00"),
    _round(905, ["T-3", "T-5", "T-6", "T-2"], "2026-12-02T06:00"),
]
REFERENCES = [
    _round(801, ["T-2", "T-4", "T-5", "T-1"], "2026-12-01T06:00"),
    _round(802, ["T-6", "T-7", "Q-2", "T-3"], "2026-12-01T06:00"),
    _round(803, ["T-1", "T-2", "T-3", "T-4"], "2026-11-30T06:00"),
    _round(804, ["T-5", "T-7", "T-4", "Q-2"], "2026-11-30T06:00"),
]

CASES = [
    {"case": "m_aquarium_1", "fid": "aq1", "kind": "wrong_routing", "input": 0, "root": "ChatOpenAI", "marker": "ROUTE water_change | tank Q-2", "failure": "schedule_water_change"},
    {"case": "m_aquarium_2", "fid": "aq2", "kind": "hallucinated_value", "input": 1, "root": "ChatOpenAI", "marker": "18000", "failure": "dosing_calculator"},
    {"case": "m_aquarium_3", "fid": "aq3", "kind": "wrong_retrieval", "input": 2, "root": "sop_search", "marker": "SOP-FW-12", "failure": "queue_dose"},
    {"case": "m_aquarium_4", "fid": "aq4", "kind": "lossy_parsing", "input": 3, "root": "parse_probes", "marker": "81.0", "failure": "set_chiller"},
    {"case": "m_aquarium_5", "fid": "aq5", "kind": "stale_data", "input": 4, "root": "probe_readings", "marker": "2026-12-01T05:40", "failure": "log_water_quality"},
]


def _route(reading: dict) -> str:
    if reading["alk_dkh"] < 7.0:
        return "dose"
    if reading["nitrate_mg_l"] > 25:
        return "water_change"
    return "ok"


def policy(inp: dict):
    def answer(request) -> Any:
        msgs = request.body["messages"]
        system = msgs[0]["content"]
        if system.startswith("Triage"):
            reading = json.loads(msgs[-1]["content"])
            route = _route(reading)
            if reading["tank"] == "Q-2" and kit.active("aq1"):
                route = "water_change"
            return f"ROUTE {route} | tank {reading['tank']} | alk {reading['alk_dkh']} dKH, nitrate {reading['nitrate_mg_l']} mg/L"
        # the dose planner
        start = max(i for i, m in enumerate(msgs) if m["role"] == "user" and '"registry"' in (m["content"] or ""))
        ctx = json.loads(msgs[start]["content"])
        results = [m for m in msgs[start:] if m["role"] == "tool"]
        if not results:
            volume = ctx["registry"]["volume_l"]
            if ctx["tank"] == "T-2" and kit.active("aq2"):
                volume = 18000
            sop = ctx["sop"]
            compound = "sodium bicarbonate" if "sodium bicarbonate" in sop["text"] else "potassium bicarbonate"
            delta = round(min(1.0, TARGET_ALK - ctx["alk_dkh"]), 2)
            return Reply(tool_calls=(tool_call("dosing_calculator", {
                "tank": ctx["tank"], "volume_l": volume, "compound": compound, "delta_dkh": delta}),))
        return "Dose planned per " + ctx["sop"]["id"]

    return answer


@tool
def probe_readings(tank: str, day: str) -> str:
    """Latest multiprobe reading of a tank on a day (YYYY-MM-DD)."""
    _, _, _, ph, alk, no3, temp_c, unit, _ = TANKS[tank]
    ts = f"{day}T05:40"
    if tank == "T-6" and kit.active("aq5"):
        ts, alk, no3 = "2026-12-01T05:40", 6.1, 19.0
    temp = f"{temp_c:.1f} C" if unit == "C" else f"{temp_c * 9 / 5 + 32:.1f} F"
    return f"{tank} | ts {ts} | pH {ph:.2f} | alk {alk:.1f} dKH | NO3 {no3:.1f} mg/L | temp {temp}"


@tool
def tank_registry(tank: str) -> str:
    """Registered volume, system type and treatment status of a tank."""
    exhibit, system, volume, *_, treatment = TANKS[tank]
    return json.dumps({"tank": tank, "exhibit": exhibit, "system": system, "volume_l": volume, "treatment": treatment or None})


@tool
def dosing_calculator(tank: str, volume_l: float, compound: str, delta_dkh: float) -> str:
    """Grams of buffer to raise alkalinity by delta_dkh in volume_l litres (LSS dosing calculator)."""
    registered = TANKS[tank][2]
    if abs(volume_l - registered) > 0.02 * registered:
        raise ValueError(f"LSS dosing calculator: {volume_l:.0f} L given for {tank}, system volume on record is {registered} L")
    grams_per_1000l_dkh = 30.0 if compound == "sodium bicarbonate" else 36.0
    grams = round(volume_l / 1000 * delta_dkh * grams_per_1000l_dkh, 1)
    return json.dumps({"tank": tank, "compound": compound, "grams": grams, "delta_dkh": delta_dkh})


@tool
def queue_dose(tank: str, compound: str, grams: float, delta_dkh: float) -> str:
    """Queue a dose on the tank's dosing pump (LSS)."""
    exhibit, system, volume, *_ = TANKS[tank]
    if compound != COMPOUND[system]:
        raise ValueError(f"LSS dosing: {compound} is not on the approved list for {system} system {tank}")
    expected = volume / 1000 * delta_dkh * (30.0 if system == "marine" else 36.0)
    if abs(grams - expected) > 0.1 * expected:
        raise ValueError(f"LSS dosing: {grams} g into {tank} ({volume} L) gives {grams / volume * 1000 / 30.0:.2f} dKH, work order asks {delta_dkh}")
    return json.dumps({"tank": tank, "pump": f"DP-{tank[-1]}", "grams": grams, "queued": True})


@tool
def schedule_water_change(tank: str, percent: int) -> str:
    """Schedule a partial water change."""
    treatment = TANKS[tank][8]
    if treatment:
        raise ValueError(f"LSS: water change on {tank} blocked, medication course active ({treatment})")
    return json.dumps({"tank": tank, "percent": percent, "slot": "14:00"})


@tool
def log_water_quality(round_id: str, round_ts: str, readings: str) -> str:
    """Write the round's readings to the LSS water-quality log."""
    rows = json.loads(readings)
    for r in rows:
        if r["ts"][:10] != round_ts[:10]:
            raise ValueError(f"LSS log rejected: {r['tank']} reading taken {r['ts']}, more than 12 h before round {round_id}")
    return json.dumps({"round": round_id, "rows": len(rows)})


@tool
def set_chiller(tank: str, setpoint_c: float) -> str:
    """Set a tank's chiller/heater setpoint."""
    current = TANKS[tank][6]
    if abs(setpoint_c - current) > 2.0:
        raise ValueError(f"chiller controller {tank}: setpoint {setpoint_c} C is more than 2 C from the loop temperature")
    return json.dumps({"tank": tank, "setpoint_c": setpoint_c})


class SOPSearch(BaseRetriever):
    name: str = "sop_search"

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        want = "SOP-FW-12" if "freshwater" in query else "SOP-MR-07"
        if "T-2" in query and kit.active("aq3"):
            want = "SOP-FW-12"
        return [Document(page_content=text, metadata={"id": sid}) for sid, text in SOPS if sid == want]


class RoundState(TypedDict, total=False):
    request: dict
    idx: int
    raw: str
    reading: dict
    readings: list
    route: str
    dose_ctx: dict
    messages: Annotated[list, add_messages]
    actions: list


_GRAPH: dict[str, Any] = {}


def build(llm):
    planner = llm.bind_tools([dosing_calculator])
    sop = SOPSearch()

    def start_round(state: RoundState) -> dict:
        return {"idx": 0, "readings": [], "actions": []}

    def read_probes(state: RoundState) -> dict:
        tank = state["request"]["tanks"][state["idx"]]
        return {"raw": probe_readings.invoke({"tank": tank, "day": state["request"]["ts"][:10]})}

    def parse_probes(state: RoundState) -> dict:
        parts = dict(p.strip().split(" ", 1) for p in state["raw"].split("|")[1:])
        tank = state["raw"].split("|")[0].strip()
        value, unit = parts["temp"].split(" ")
        temp = float(value)
        if unit == "F" and not kit.active("aq4"):
            temp = round((temp - 32) * 5 / 9, 1)
        reading = {"tank": tank, "ts": parts["ts"], "ph": float(parts["pH"]),
                   "alk_dkh": float(parts["alk"].split()[0]), "nitrate_mg_l": float(parts["NO3"].split()[0]), "temp_c": temp}
        return {"reading": reading, "readings": [*state["readings"], reading]}

    def triage(state: RoundState) -> dict:
        msg = llm.invoke([SystemMessage("Triage the reading: ROUTE dose, water_change or ok."), HumanMessage(json.dumps(state["reading"]))])
        return {"route": re.match(r"ROUTE (\w+)", msg.content).group(1)}

    def prepare_dose(state: RoundState) -> dict:
        r = state["reading"]
        reg = json.loads(tank_registry.invoke({"tank": r["tank"]}))
        docs = sop.invoke(f"{reg['system']} alkalinity correction for {r['tank']}")
        ctx = {"tank": r["tank"], "alk_dkh": r["alk_dkh"], "registry": reg,
               "sop": {"id": docs[0].metadata["id"], "text": docs[0].page_content}}
        return {"dose_ctx": ctx, "messages": [HumanMessage(json.dumps(ctx))]}

    def dose_planner(state: RoundState) -> dict:
        msgs = [SystemMessage("You plan buffer doses with the calculator, following the SOP."), *state["messages"]]
        return {"messages": [planner.invoke(msgs)]}

    def after_planner(state: RoundState) -> str:
        last = state["messages"][-1]
        return "calculator" if isinstance(last, AIMessage) and last.tool_calls else "queue"

    def queue(state: RoundState) -> dict:
        calc = json.loads(next(m.content for m in reversed(state["messages"]) if isinstance(m, ToolMessage)))
        out = queue_dose.invoke({"tank": calc["tank"], "compound": calc["compound"], "grams": calc["grams"], "delta_dkh": calc["delta_dkh"]})
        return {"actions": [*state["actions"], json.loads(out)], "messages": [HumanMessage("dose queued")]}

    def water_change(state: RoundState) -> dict:
        out = schedule_water_change.invoke({"tank": state["reading"]["tank"], "percent": 15})
        return {"actions": [*state["actions"], json.loads(out)]}

    def next_tank(state: RoundState) -> dict:
        return {"idx": state["idx"] + 1}

    def more(state: RoundState) -> str:
        return "read_probes" if state["idx"] < len(state["request"]["tanks"]) else "commit"

    def commit(state: RoundState) -> dict:
        log_water_quality.invoke({"round_id": state["request"]["round"], "round_ts": state["request"]["ts"], "readings": json.dumps(state["readings"])})
        return {}

    def chillers(state: RoundState) -> dict:
        done = []
        for r in state["readings"]:
            done.append(json.loads(set_chiller.invoke({"tank": r["tank"], "setpoint_c": r["temp_c"]})))
        return {"actions": [*state["actions"], *done]}

    g = StateGraph(RoundState)
    for name, fn in [("start_round", start_round), ("read_probes", read_probes), ("parse_probes", parse_probes),
                     ("triage", triage), ("prepare_dose", prepare_dose), ("dose_planner", dose_planner),
                     ("calculator", ToolNode([dosing_calculator], handle_tool_errors=False)), ("queue", queue),
                     ("water_change", water_change), ("next_tank", next_tank), ("commit", commit), ("chillers", chillers)]:
        g.add_node(name, fn)
    g.add_edge(START, "start_round")
    g.add_edge("start_round", "read_probes")
    g.add_edge("read_probes", "parse_probes")
    g.add_edge("parse_probes", "triage")
    g.add_conditional_edges("triage", lambda s: s["route"], {"dose": "prepare_dose", "water_change": "water_change", "ok": "next_tank"})
    g.add_edge("prepare_dose", "dose_planner")
    g.add_conditional_edges("dose_planner", after_planner, {"calculator": "calculator", "queue": "queue"})
    g.add_edge("calculator", "dose_planner")
    g.add_edge("queue", "next_tank")
    g.add_edge("water_change", "next_tank")
    g.add_conditional_edges("next_tank", more, {"read_probes": "read_probes", "commit": "commit"})
    g.add_edge("commit", "chillers")
    g.add_edge("chillers", END)
    return g.compile()


def execute(inp: dict, env, config: dict) -> None:
    if "g" not in _GRAPH:
        _GRAPH["g"] = build(env.chat_model())
    _GRAPH["g"].invoke({"request": dict(inp), "messages": []}, config=config)
