"""Hydroelectric dam inspection: piezometer sweep, seepage assessment, gate sub-agent, report filing (sdk)."""

from __future__ import annotations

import json
from pathlib import Path

from openai import OpenAI

import trajdebug

from .common import Case, brain, last_user
from .kit import active

NAME = "dam-inspection"
ROUTE = "sdk"
DOMAIN = "hydroelectric dam inspections"
SHAPE = "manual retrieval, piezometer loop with retry, state, seepage LLM, spillway gate sub-agent, report filing"

INPUTS = {
    "kar": {"dam": "KAR-2", "class": "A", "sensors": ["PZ-1", "PZ-2", "PZ-3", "PZ-4"], "gates": ["G1", "G2", "G3"]},
    "mel": {"dam": "MEL-7", "class": "B", "sensors": ["PZ-1", "PZ-2", "PZ-3"], "gates": ["G1", "G2"]},
    "r1": {"dam": "ORN-1", "class": "A", "sensors": ["PZ-1", "PZ-2", "PZ-3"], "gates": ["G1", "G2"]},
    "r2": {"dam": "TAV-4", "class": "B", "sensors": ["PZ-1", "PZ-2"], "gates": ["G1", "G2", "G3"]},
    "r3": {"dam": "LUN-3", "class": "A", "sensors": ["PZ-1", "PZ-2", "PZ-3", "PZ-4", "PZ-5"], "gates": ["G1"]},
    "r4": {"dam": "BRE-9", "class": "B", "sensors": ["PZ-1", "PZ-2", "PZ-3", "PZ-4"], "gates": ["G1", "G2"]},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("dam_unit_pressure", "dam1", "unit_error", "kar", ("parse_reading", 3, "parse"),
         ("submit_inspection_report", 1),
         "parse_reading reads PZ-3's bar figure as kPa, so the seepage pressure filed is 100 times too low."),
    Case("dam_cut_sensor_list", "dam2", "truncated_result", "mel", ("list_piezometers", 1, "tool"),
         ("submit_inspection_report", 1),
         "The sensor registry returns only the first two piezometers, so the report covers fewer sensors than the dam has."),
    Case("dam_invented_limit", "dam3", "hallucinated_value", "kar", ("assess_seepage", 1, "llm"),
         ("submit_inspection_report", 1),
         "The seepage assessment states an uplift limit of 900 kPa that the manual never gives, so no sensor is flagged."),
    Case("dam_gate_memory", "dam4", "bad_memory_write", "mel", ("record_gate", 2, "state"),
         ("submit_inspection_report", 1),
         "record_gate stores gate G2's opening under G1's key, so the filed gate table misses G2."),
    Case("dam_findings_count", "dam5", "off_by_one", "kar", ("compile_findings", 1, "other"),
         ("submit_inspection_report", 1),
         "compile_findings counts sensors from one, reporting one more sensor checked than were read."),
]

PRESSURE = {"PZ-1": "311.0 kPa", "PZ-2": "402.5 kPa", "PZ-3": "4.62 bar", "PZ-4": "288.0 kPa", "PZ-5": "350.0 kPa"}
GATES = {"G1": 0.0, "G2": 12.5, "G3": 0.0}


@brain("dam")
def _brain(body: dict) -> str:
    req = json.loads(last_user(body))
    if req["ask"] == "assess":
        limit = req["manual"]["uplift_limit_kpa"]
        if active("dam3"):
            limit = 900.0
        flagged = sorted(s for s, r in req["readings"].items() if r["kpa"] > limit)
        return json.dumps({"limit_kpa": limit, "flagged": flagged, "severity": "watch" if flagged else "normal"})
    if req["ask"] == "gate":
        pos = req["opening_pct"]
        return json.dumps({"gate": req["gate"], "status": "open" if pos > 0 else "closed"})
    return json.dumps({"summary": f"Dam {req['dam']}: {req['flagged']} flagged of {req['checked']} sensors."})


def _chat(client: OpenAI, payload: dict) -> str:
    r = client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "[agent:dam] You are a dam safety engineer. Answer JSON."},
        {"role": "user", "content": json.dumps(payload)}])
    return r.choices[0].message.content


@trajdebug.step(kind="input")
def take_order(order: dict) -> dict:
    return dict(order)


@trajdebug.step(kind="retrieval")
def fetch_manual(dam_class: str) -> dict:
    return {"class": dam_class, "uplift_limit_kpa": 400.0 if dam_class == "A" else 450.0, "gate_tolerance_pct": 0.5}


@trajdebug.step(kind="tool")
def list_piezometers(dam: str, expected: list) -> list:
    out = list(expected)
    if active("dam2"):
        out = out[:2]
    return out


_flaky = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def read_piezometer(dam: str, sensor: str) -> str:
    _flaky["n"] += 1
    if sensor == "PZ-2" and _flaky["n"] % 2 == 0:
        raise ConnectionError(f"telemetry gateway for {dam} timed out")
    return f"{dam}/{sensor}: {PRESSURE[sensor]}"


@trajdebug.step(kind="parse")
def parse_reading(text: str) -> dict:
    sensor = text.split("/")[1].split(":")[0]
    value, unit = text.split(": ")[1].split()
    kpa = float(value) * 100.0 if unit == "bar" else float(value)
    if active("dam1"):
        kpa = float(value)
    return {"sensor": sensor, "kpa": round(kpa, 1)}


@trajdebug.step(kind="state")
def record_reading(reading: dict) -> None:
    trajdebug.current_run().state[f"reading:{reading['sensor']}"] = reading


@trajdebug.step(kind="llm")
def assess_seepage(client: OpenAI, manual: dict, readings: dict) -> str:
    return _chat(client, {"ask": "assess", "manual": manual, "readings": readings})


@trajdebug.step(kind="parse")
def parse_assessment(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="tool")
def read_gate_position(dam: str, gate: str) -> dict:
    return {"gate": gate, "opening_pct": GATES[gate]}


@trajdebug.step(kind="llm")
def judge_gate(client: OpenAI, position: dict) -> str:
    return _chat(client, {"ask": "gate", **position})


@trajdebug.step(kind="state")
def record_gate(verdict_text: str) -> dict:
    verdict = json.loads(verdict_text)
    key = verdict["gate"]
    if active("dam4") and key == "G2":
        key = "G1"
    table = trajdebug.current_run().state.setdefault("gates", {})
    table[key] = verdict["status"]
    return {key: verdict["status"]}


@trajdebug.step(kind="agent")
def gate_sweep(client: OpenAI, dam: str, gates: list) -> dict:
    for g in gates:
        pos = read_gate_position(dam, g)
        record_gate(judge_gate(client, pos))
    return dict(trajdebug.current_run().state["gates"])


@trajdebug.step(kind="other")
def compile_findings(order: dict, sensors: list, readings: dict, assessment: dict, gates: dict) -> dict:
    checked = len(sensors)
    if active("dam5"):
        checked = sum(1 for _ in enumerate(sensors, start=1)) + 1
    return {"dam": order["dam"], "checked": checked, "readings": readings,
            "flagged": assessment["flagged"], "limit_kpa": assessment["limit_kpa"], "gates": gates}


@trajdebug.step(kind="llm")
def draft_summary(client: OpenAI, findings: dict) -> str:
    return _chat(client, {"ask": "summary", "dam": findings["dam"], "flagged": findings["flagged"],
                          "checked": findings["checked"]})


@trajdebug.step(kind="tool")
def submit_inspection_report(findings: dict, summary: str, order: dict) -> dict:
    problems = []
    if findings["checked"] != len(findings["readings"]):
        problems.append(f"sensors_checked {findings['checked']} does not match {len(findings['readings'])} readings")
    if len(findings["readings"]) != len(order["sensors"]):
        problems.append(f"readings cover {len(findings['readings'])} of {len(order['sensors'])} registered piezometers")
    if sorted(findings["gates"]) != sorted(order["gates"]):
        problems.append(f"gate table {sorted(findings['gates'])} does not list gates {order['gates']}")
    hot = sorted(s for s, r in findings["readings"].items() if r["kpa"] > 400.0)
    if order["class"] == "A" and hot != findings["flagged"]:
        problems.append(f"class A sensors above 400 kPa {hot} not flagged (flagged {findings['flagged']})")
    if any(r["kpa"] < 50.0 for r in findings["readings"].values()):
        low = [s for s, r in findings["readings"].items() if r["kpa"] < 50.0]
        problems.append(f"pressure below instrument floor 50 kPa at {low}")
    if problems:
        raise ValueError("HTTP 422 from dam-safety registry: " + "; ".join(problems))
    return {"status": "accepted", "ref": f"DSR-{findings['dam']}"}


def record(inp: dict, path: Path, server) -> None:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    _flaky["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"inspect dam {inp['dam']}", path=str(path)):
            order = take_order(inp)
            manual = fetch_manual(order["class"])
            sensors = list_piezometers(order["dam"], order["sensors"])
            readings = {}
            for s in sensors:
                r = parse_reading(read_piezometer(order["dam"], s))
                record_reading(r)
                readings[r["sensor"]] = r
            assessment = parse_assessment(assess_seepage(client, manual, readings))
            gates = gate_sweep(client, order["dam"], order["gates"])
            summary = draft_summary(client, {"dam": order["dam"], "flagged": assessment["flagged"],
                                             "checked": len(readings)})
            findings = compile_findings(order, sensors, readings, assessment, gates)
            submit_inspection_report(findings, summary, order)
    except ValueError:
        pass
