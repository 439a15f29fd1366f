"""Tofu production plant (langgraph route): plan a production batch, dose, press, QA and release it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.output_parsers import BaseOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from . import kit
from .common import Agent, Case, last_user_json

LOTS = {
    "SB-2291": {"origin": "Ontario", "kg": 900, "protein": {"wet": 35.5, "dry": 40.3}},
    "SB-2304": {"origin": "Hokkaido", "kg": 150, "protein": {"wet": 36.8, "dry": 41.5}},
    "SB-2277": {"origin": "Iowa", "kg": 2000, "protein": {"wet": 34.1, "dry": 38.8}},
}
SPECS = {
    "rev7": {"spec": "QS-14 rev 7", "nigari_g_per_kg": {"silken": [1.6, 2.0], "firm": [2.4, 3.0]}},
    "rev6": {"spec": "QS-14 rev 6", "nigari_g_per_kg": {"silken": [2.0, 2.6], "firm": [2.6, 3.2]}},
}
YIELD = {"silken": 3.0, "firm": 2.2}
SANITATION0 = {"P1": "2026-06-30", "P2": "2026-06-12", "P3": "2026-05-02"}
TAKEN0 = {("P1", "2026-05-04", "06:00"): "TB-1188", ("P3", "2026-05-06", "06:00"): "TB-1190"}
COOKER = {"TB-1201": "98.5,99.1,97.8,96.0,95.2", "TB-1215": "98.2,97.9,*88.4,96.5,97.0",
          "TB-1222": "97.5,97.7,96.9,96.1,95.8", "TB-1230": "99.0,98.4,*93.1,97.2,96.8",
          "TB-1238": "98.0,97.6,97.1,96.6,96.0", "TB-1244": "98.8,98.1,97.4,96.9,95.9"}
SANITATION: dict[str, str] = {}
TAKEN: dict[tuple[str, str, str], str] = {}
REBOILS: set[str] = set()


class ReleaseBlocked(Exception):
    """The QA release gate's error answer."""


class SlotTaken(Exception):
    """The press scheduler's conflict answer."""


@tool
def list_soy_lots(min_kg: float) -> list:
    """Soybean lots in the silo with at least min_kg available."""
    return [{"lot_id": k, "origin": v["origin"], "kg": v["kg"]} for k, v in LOTS.items() if v["kg"] >= min_kg]


@tool
def fetch_lot_assay(lot_id: str, basis: str) -> dict:
    """Protein assay of a soybean lot, on a wet or dry basis."""
    return {"lot_id": lot_id, "basis": basis, "protein_pct": LOTS[lot_id]["protein"][basis]}


@tool
def fetch_coagulant_spec(product: str) -> dict:
    """The current coagulant specification for a product."""
    s = SPECS["rev6" if kit.active("tofu.stale_data") else "rev7"]
    return {"spec": s["spec"], "product": product, "nigari_g_per_kg": s["nigari_g_per_kg"][product]}


@tool
def book_press_slot(line: str, day: str, slot: str, batch: str) -> dict:
    """Book a press line slot for a batch."""
    try:
        if (line, day, slot) in TAKEN:
            raise SlotTaken(f"HTTP 409 Conflict: slot {slot} on {line} is held by {TAKEN[(line, day, slot)]}")
    except SlotTaken:
        if kit.active("tofu.swallowed_error"):
            return {"line": line, "day": day, "slot": slot, "booked": True}
        raise
    TAKEN[(line, day, slot)] = batch
    return {"line": line, "day": day, "slot": slot, "booked": True}


@tool
def check_sanitation(line: str) -> dict:
    """The sanitation record of a press line."""
    return {"line": line, "record": f"SAN-{line}-0412", "valid_until": SANITATION[line]}


@tool
def schedule_sanitation(line: str, day: str) -> dict:
    """Run a sanitation cycle on a press line before the batch."""
    SANITATION[line] = "2026-07-31"
    return {"line": line, "done": day, "valid_until": SANITATION[line]}


@tool
def read_cooker_log(batch: str) -> str:
    """Hold temperatures (deg C) of the soy milk cooker, comma separated; * marks an alarm reading."""
    return COOKER[batch]


@tool
def schedule_reboil(batch: str) -> dict:
    """Send the soy milk back through the cooker."""
    REBOILS.add(batch)
    return {"batch": batch, "reboil": "queued"}


@tool
def release_batch(payload: dict) -> dict:
    """Release the batch to packing (the QA gate validates it)."""
    o = payload["order"]
    errors = []
    protein = LOTS[payload["lot_id"]]["protein"]["wet"]
    need = o["blocks"] * o["block_kg"] / (YIELD[o["product"]] * protein / 36)
    if payload["soy_kg"] < need - 0.01:
        errors.append(f"soybean issue {payload['soy_kg']:.1f} kg below the {need:.1f} kg required for "
                      f"{o['blocks']} x {o['block_kg']} kg blocks at {protein}% protein (wet basis)")
    lo, hi = SPECS["rev7"]["nigari_g_per_kg"][o["product"]]
    if not lo <= payload["nigari_g_per_kg"] <= hi:
        errors.append(f"coagulant dose {payload['nigari_g_per_kg']} g/kg soy milk outside the {lo}-{hi} g/kg "
                      f"range of spec QS-14 rev 7")
    slot = payload["press"]
    if TAKEN.get((o["line"], o["date"], slot["slot"])) != o["batch"]:
        errors.append(f"press line {o['line']} has no booking for {o['batch']} at {slot['slot']} on {o['date']}")
    if SANITATION[o["line"]] < o["date"]:
        errors.append(f"press line {o['line']} sanitation record SAN-{o['line']}-0412 expired {SANITATION[o['line']]}")
    temps = [float(t.strip("*")) for t in COOKER[o["batch"]].split(",")]
    if min(temps) < 95 and o["batch"] not in REBOILS:
        errors.append(f"cooker hold temperature dipped to {min(temps)} C (minimum 95 C); batch needs a reboil")
    if errors:
        raise ReleaseBlocked("HTTP 423 Locked: " + json.dumps({"batch": o["batch"], "errors": errors}))
    return {"batch": o["batch"], "status": "released"}


class CookerLogParser(BaseOutputParser[list]):
    """Reads the cooker log into readings."""

    def parse(self, text: str) -> list:
        out = []
        for item in text.split(","):
            item = item.strip()
            if item.startswith("*"):
                if kit.active("tofu.lossy_parsing"):
                    continue
                out.append({"c": float(item[1:]), "alarm": True})
            else:
                out.append({"c": float(item), "alarm": False})
        return out


class State(TypedDict, total=False):
    order: dict
    lot: dict
    assay: dict
    plan: dict
    dose: dict
    press: dict
    qa: dict
    release: dict


def build(base_url: str) -> Any:
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="test", max_retries=0, temperature=0)
    parser = CookerLogParser()

    def receive_order(state: State) -> State:
        o = dict(state["order"])
        o["product"] = o["product"].lower()
        return {"order": o}

    def select_lot(state: State) -> State:
        o = state["order"]
        lots = list_soy_lots.invoke({"min_kg": 100})
        msg = llm.invoke([("system", "Choose the soybean lot and the assay call. Answer JSON tool arguments."),
                          ("user", json.dumps({"task": "pick_lot", "order": o, "lots": lots}))])
        args = json.loads(msg.content)
        assay = fetch_lot_assay.invoke(args)
        return {"lot": {"lot_id": args["lot_id"]}, "assay": assay}

    def plan_batch(state: State) -> State:
        o, a = state["order"], state["assay"]
        soy = o["blocks"] * o["block_kg"] / (YIELD[o["product"]] * a["protein_pct"] / 36)
        soy = math.ceil(soy * 2) / 2
        return {"plan": {"soy_kg": soy, "water_l": round(soy * 6, 1), "soy_milk_kg": round(soy * 6.2, 1)}}

    def dose_coagulant(state: State) -> State:
        spec = fetch_coagulant_spec.invoke({"product": state["order"]["product"]})
        lo, hi = spec["nigari_g_per_kg"]
        per = round((lo + hi) / 2, 2)
        return {"dose": {"spec": spec["spec"], "g_per_kg": per,
                         "nigari_g": round(per * state["plan"]["soy_milk_kg"], 1)}}

    def book_press(o: dict) -> dict:
        for slot in ("06:00", "08:00", "10:00"):
            try:
                return book_press_slot.invoke({"line": o["line"], "day": o["date"], "slot": slot, "batch": o["batch"]})
            except SlotTaken:
                continue
        return {"slot": None}

    def pick_line(state: State) -> State:
        msg = llm.invoke([("system", "Which press line must QA inspect for this batch? Answer JSON."),
                          ("user", json.dumps({"task": "qa_line", "order": state["order"],
                                               "recent": state["order"].get("recent", [])}))])
        return {"qa": json.loads(msg.content)}

    def inspect_line(state: State) -> State:
        rec = check_sanitation.invoke({"line": state["qa"]["line"]})
        return {"qa": {**state["qa"], **rec}}

    def route_sanitation(state: State) -> str:
        return "sanitize" if state["qa"]["valid_until"] < state["order"]["date"] else "done"

    def sanitize(state: State) -> State:
        res = schedule_sanitation.invoke({"line": state["qa"]["line"], "day": state["order"]["date"]})
        return {"qa": {**state["qa"], **res}}

    qa = StateGraph(State)
    qa.add_node("pick_line", pick_line)
    qa.add_node("inspect_line", inspect_line)
    qa.add_node("sanitize", sanitize)
    qa.add_edge(START, "pick_line")
    qa.add_edge("pick_line", "inspect_line")
    qa.add_conditional_edges("inspect_line", route_sanitation, {"sanitize": "sanitize", "done": END})
    qa.add_edge("sanitize", END)

    def release(state: State) -> State:
        o = state["order"]
        text = read_cooker_log.invoke({"batch": o["batch"]})
        readings = parser.invoke(text)
        if any(r["c"] < 95 for r in readings):
            schedule_reboil.invoke({"batch": o["batch"]})
        press = book_press(o)
        res = release_batch.invoke({"payload": {"order": o, "lot_id": state["lot"]["lot_id"],
                                                "soy_kg": state["plan"]["soy_kg"],
                                                "nigari_g_per_kg": state["dose"]["g_per_kg"],
                                                "press": press}})
        return {"release": res}

    g = StateGraph(State)
    for name, fn in (("receive_order", receive_order), ("select_lot", select_lot), ("plan_batch", plan_batch),
                     ("dose_coagulant", dose_coagulant),
                     ("qa_check", qa.compile()), ("release", release)):
        g.add_node(name, fn)
    g.add_edge(START, "receive_order")
    g.add_edge("receive_order", "select_lot")
    g.add_edge("select_lot", "plan_batch")
    g.add_edge("plan_batch", "dose_coagulant")
    g.add_edge("dose_coagulant", "qa_check")
    g.add_edge("qa_check", "release")
    g.add_edge("release", END)
    return g.compile()


def policy(request: Any) -> str:
    p = last_user_json(request.body)
    if p.get("task") == "pick_lot":
        need = p["order"]["blocks"] * p["order"]["block_kg"] / 2
        pool = [lot for lot in p["lots"] if lot["kg"] >= need]
        pool.sort(key=lambda lot: -LOTS[lot["lot_id"]]["protein"]["wet"])
        basis = "dry" if kit.active("tofu.wrong_tool_args") else "wet"
        return json.dumps({"lot_id": pool[0]["lot_id"], "basis": basis})
    if p.get("task") == "qa_line":
        if kit.active("tofu.subagent_wrong_entity") and p["recent"]:
            return json.dumps({"line": p["recent"][0]["line"], "reason": "line of the latest batch"})
        return json.dumps({"line": p["order"]["line"], "reason": "line booked for this batch"})
    return "{}"


_GRAPHS: dict[str, Any] = {}


def record(order: dict, out: Path, base_url: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    out.unlink(missing_ok=True)
    SANITATION.clear()
    SANITATION.update(SANITATION0)
    TAKEN.clear()
    TAKEN.update(TAKEN0)
    REBOILS.clear()
    graph = _GRAPHS.get(base_url) or _GRAPHS.setdefault(base_url, build(base_url))
    tracer = TrajdebugTracer(path=str(out), name="tofu-plant", task=f"batch {order['batch']}")
    try:
        graph.invoke({"order": order}, config={"callbacks": [tracer]})
    except ReleaseBlocked:
        pass


def _o(batch: str, product: str, blocks: int, kg: float, line: str, day: str, recent: str) -> dict:
    return {"batch": batch, "product": product, "blocks": blocks, "block_kg": kg, "line": line, "date": day,
            "recent": [{"batch": "TB-1188", "line": recent}]}


INPUTS = {
    "A": _o("TB-1201", "Silken", 400, 0.3, "P1", "2026-05-04", "P2"),
    "B": _o("TB-1215", "Firm", 600, 0.4, "P3", "2026-05-05", "P2"),
    "C": _o("TB-1222", "Firm", 300, 0.4, "P2", "2026-05-06", "P1"),
    "D": _o("TB-1230", "Silken", 250, 0.3, "P1", "2026-05-07", "P3"),
    "E": _o("TB-1238", "Firm", 500, 0.35, "P3", "2026-05-06", "P1"),
    "F": _o("TB-1244", "Silken", 350, 0.3, "P2", "2026-05-08", "P2"),
}

AGENT = Agent(
    name="tofu_plant", module="tofu_plant.py", route="langgraph", domain="tofu production plant",
    shape="StateGraph: order -> lot choice (tool + ChatOpenAI tool arguments + assay tool) -> batch plan -> "
          "coagulant spec -> QA sub-graph (LLM line pick, sanitation, conditional cycle) -> release node: cooker log "
          "parse, reboil, press slot booking with conflict retries, release gate",
    inputs=INPUTS, refs=("C", "D", "E", "F"), policy=policy, record=record,
    cases=(
        Case("zze_tofu_01", "tofu.wrong_tool_args", "wrong_tool_args", "A", ("ChatOpenAI", 1, "llm"),
             ("release_batch", 1), "The model asks the assay tool for the dry-basis protein figure."),
        Case("zze_tofu_02", "tofu.stale_data", "stale_data", "A", ("fetch_coagulant_spec", 1, "tool"),
             ("release_batch", 1), "The coagulant spec tool serves the superseded revision 6 ranges."),
        Case("zze_tofu_03", "tofu.swallowed_error", "swallowed_error", "A", ("book_press_slot", 1, "tool"),
             ("release_batch", 1), "The press booking tool hides a 409 slot conflict and reports the slot booked."),
        Case("zze_tofu_04", "tofu.subagent_wrong_entity", "subagent_wrong_entity", "B", ("ChatOpenAI", 2, "llm"),
             ("release_batch", 1), "The QA sub-graph inspects the press line of the latest batch, not this batch's line."),
        Case("zze_tofu_05", "tofu.lossy_parsing", "lossy_parsing", "B", ("CookerLogParser", 1, "parse"),
             ("release_batch", 1), "The cooker log parser drops the alarm-marked readings."),
    ),
)
