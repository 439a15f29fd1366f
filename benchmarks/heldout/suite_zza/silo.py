"""Grain silo fumigation (OpenAI Agents SDK): coordinator agent with tools and a gas-monitor agent used as a tool."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI
from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .kit import active

AGENT = "silo-fumigation-coordinator"
ROUTE = "openai_agents"
DOMAIN = "grain silo fumigation"
SHAPE = "Agents SDK: coordinator (silo record, dose, exposure schedule) -> gas-monitor agent as tool (sensor read, summary) -> clearance certificate tool"

SILOS = {
    "S-4": {"capacity_m3": 1200, "fill_pct": 80, "commodity": "wheat", "licence": "FL-2231", "neighbour": "S-5", "dip_hour": 90},
    "S-7": {"capacity_m3": 950, "fill_pct": 65, "commodity": "barley", "licence": "FL-1876", "neighbour": "S-8", "dip_hour": 70},
    "S-1": {"capacity_m3": 800, "fill_pct": 90, "commodity": "wheat", "licence": "FL-2231", "neighbour": "S-2", "dip_hour": None},
    "S-2": {"capacity_m3": 800, "fill_pct": 55, "commodity": "maize", "licence": "FL-1876", "neighbour": "S-1", "dip_hour": None},
    "S-5": {"capacity_m3": 1500, "fill_pct": 70, "commodity": "oats", "licence": "FL-3310", "neighbour": "S-4", "dip_hour": None},
    "S-9": {"capacity_m3": 1100, "fill_pct": 85, "commodity": "wheat", "licence": "FL-3310", "neighbour": "S-8", "dip_hour": None},
    "S-8": {"capacity_m3": 700, "fill_pct": 60, "commodity": "barley", "licence": "FL-1876", "neighbour": "S-7", "dip_hour": None},
}
INPUTS = {"A": {"silo": "S-4", "start": "2026-12-07"}, "B": {"silo": "S-7", "start": "2026-12-08"},
          "R1": {"silo": "S-1", "start": "2026-12-01"}, "R2": {"silo": "S-2", "start": "2026-12-02"},
          "R3": {"silo": "S-5", "start": "2026-12-03"}, "R4": {"silo": "S-9", "start": "2026-12-04"}}
REFS = ["R1", "R2", "R3", "R4"]
LABEL_G_PER_M3 = 2.0
TABLET_G = 3.0


def ppm_series(silo: str) -> list:
    return [{"hour": h, "ppm": 260 + (h % 5) * 4 - len(silo)} for h in range(0, 120, 2)]


@function_tool
def get_silo_record(silo: str) -> str:
    """Return the silo's register entry."""
    s = SILOS[silo]
    return json.dumps({"silo": silo, "capacity_m3": s["capacity_m3"], "fill_pct": s["fill_pct"], "commodity": s["commodity"],
                       "fumigator_licence": s["licence"], "seal_test": "passed"})


@function_tool
def calc_dose(volume_m3: float, commodity: str) -> str:
    """Phosphine tablets needed for a fumigation volume."""
    tablets = int(volume_m3 * LABEL_G_PER_M3 / TABLET_G + 0.999)
    return json.dumps({"volume_m3": volume_m3, "commodity": commodity, "tablets": tablets})


@function_tool
def schedule_exposure(start: str, days: int) -> str:
    """Exposure calendar for a fumigation: dates under gas and the ventilation date."""
    d0 = dt.date.fromisoformat(start)
    n = days - 1 if active("silo_04") else days
    dates = [(d0 + dt.timedelta(days=i)).isoformat() for i in range(n)]
    return json.dumps({"under_gas": dates, "ventilate_on": (d0 + dt.timedelta(days=n)).isoformat()})


@function_tool
def read_gas_sensors(silo: str, hours: int) -> str:
    """Phosphine readings of a silo's sensors, every two hours."""
    readings = [r for r in ppm_series(silo) if r["hour"] < hours]
    if active("silo_05"):
        readings = readings[:40]
    return json.dumps({"silo": silo, "readings": readings})


@function_tool(failure_error_function=None)
def issue_clearance_certificate(silo: str, licence: str, tablets: int, ventilate_on: str, start: str, min_ppm: int, log_hours: int, log_silo: str) -> str:
    """Issue the clearance certificate after fumigation."""
    s = SILOS[silo]
    if licence not in {v["licence"] for v in SILOS.values()}:
        raise RuntimeError(f"fumigation registry 404: licence {licence} not found")
    need = int(s["capacity_m3"] * LABEL_G_PER_M3 / TABLET_G + 0.999)
    if tablets < need:
        raise RuntimeError(f"clearance refused for {silo}: {tablets} tablets below label rate for {s['capacity_m3']} m3 (minimum {need})")
    due = (dt.date.fromisoformat(start) + dt.timedelta(days=5)).isoformat()
    if ventilate_on != due:
        raise RuntimeError(f"clearance refused for {silo}: ventilation on {ventilate_on} before the 5-day exposure ends {due}")
    if log_silo != silo:
        raise RuntimeError(f"clearance refused for {silo}: gas log attached is for {log_silo}")
    if log_hours < 120 or min_ppm < 200:
        raise RuntimeError(f"clearance refused for {silo}: gas log covers {log_hours} h at minimum {min_ppm} ppm; label requires 120 h at 200 ppm or more")
    return json.dumps({"certificate": f"FC-{silo}-{start}", "status": "issued"})


def _tool_results(msgs: list) -> list:
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m.get("content") or "{}"))
            except ValueError:
                out.append({"text": m.get("content")})
    return out


def policy(request: Any) -> Any:
    msgs = (request.body or {}).get("messages") or []
    system = " ".join(str(m.get("content")) for m in msgs if m.get("role") == "system")
    user = " ".join(str(m.get("content")) for m in msgs if m.get("role") == "user")
    done = _tool_results(msgs)
    if "gas monitor" in system:
        silo = re.search(r"silo (S-\d+)", user).group(1)
        if not done:
            if active("silo_03"):
                silo = re.search(r"neighbour (S-\d+)", user).group(1)
            return Reply(tool_calls=(tool_call("read_gas_sensors", {"silo": silo, "hours": 120}),))
        log = done[0]
        return json.dumps({"log_silo": log["silo"], "min_ppm": min(r["ppm"] for r in log["readings"]), "log_hours": log["readings"][-1]["hour"] + 2})
    silo = re.search(r"silo (S-\d+)", user).group(1)
    start = re.search(r"starting (\d{4}-\d\d-\d\d)", user).group(1)
    n = len(done)
    if n == 0:
        return Reply(tool_calls=(tool_call("get_silo_record", {"silo": silo}),))
    rec = done[0]
    if n == 1:
        vol = rec["fill_pct"] if active("silo_02") else rec["capacity_m3"]
        return Reply(tool_calls=(tool_call("calc_dose", {"volume_m3": vol, "commodity": rec["commodity"]}),))
    if n == 2:
        return Reply(tool_calls=(tool_call("schedule_exposure", {"start": start, "days": 5}),))
    if n == 3:
        return Reply(tool_calls=(tool_call("gas_monitor", {"input": f"Report the phosphine log for silo {silo}; neighbour {SILOS[silo]['neighbour']} shares the gallery"}),))
    if n == 4:
        log = done[3] if "log_silo" in done[3] else json.loads(done[3].get("text", "{}"))
        licence = "FL-" + str(sum(ord(c) for c in silo) * 7) if active("silo_01") else rec["fumigator_licence"]
        return Reply(tool_calls=(tool_call("issue_clearance_certificate", {
            "silo": silo, "licence": licence, "tablets": done[1]["tablets"], "ventilate_on": done[2]["ventilate_on"],
            "start": start, "min_ppm": log["min_ppm"], "log_hours": log["log_hours"], "log_silo": log["log_silo"]}),))
    return f"Clearance certificate {done[4].get('certificate')} issued for {silo}."


def record(key: str, path: Path, base_url: str) -> None:
    inp = INPUTS[key]
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0))
    monitor = Agent(name="gas_monitor_agent", instructions="You are the gas monitor. Read the silo's sensors and report the minimum.",
                    model=model, tools=[read_gas_sensors])
    coordinator = Agent(
        name="fumigation_coordinator", model=model,
        instructions="You coordinate grain silo fumigation: dose, exposure, gas log, clearance certificate.",
        tools=[get_silo_record, calc_dose, schedule_exposure,
               monitor.as_tool("gas_monitor", "Ask the gas monitor for a silo's phosphine log"), issue_clearance_certificate],
    )
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"fumigate silo {inp['silo']} from {inp['start']}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(coordinator, f"Fumigate silo {inp['silo']} starting {inp['start']} and issue the clearance certificate.",
                        run_config=RunConfig(workflow_name=AGENT), max_turns=12)
    except Exception as exc:  # noqa: BLE001 - the run's failure is recorded by the processor
        if "clearance refused" not in str(exc) and "registry" not in str(exc):
            raise


CASES = [
    dict(case="silo_01", fault_kind="hallucinated_value", input="A", root=("generation fake-model", 7, "llm"), failure=("issue_clearance_certificate", 1),
         description="The coordinator model writes a fumigator licence number found in none of its inputs into the certificate call, and the registry does not know it."),
    dict(case="silo_02", fault_kind="wrong_tool_args", input="B", root=("generation fake-model", 2, "llm"), failure=("issue_clearance_certificate", 1),
         description="The coordinator model passes the silo's fill percentage as the dose volume, so the dose is far below the label rate the certificate checks."),
    dict(case="silo_03", fault_kind="subagent_wrong_entity", input="A", root=("generation fake-model", 5, "llm"), failure=("issue_clearance_certificate", 1),
         description="The gas-monitor agent reads the sensors of the neighbouring silo named in its request, and the certificate finds the log is for another silo."),
    dict(case="silo_04", fault_kind="off_by_one", input="B", root=("schedule_exposure", 1, "tool"), failure=("issue_clearance_certificate", 1),
         description="The exposure scheduler counts one day too few, so ventilation is planned a day before the five-day exposure ends."),
    dict(case="silo_05", fault_kind="truncated_result", input="A", root=("read_gas_sensors", 1, "tool"), failure=("issue_clearance_certificate", 1),
         description="The sensor read returns only its first 40 samples, so the gas log attached to the certificate covers 80 of the 120 exposure hours."),
]
