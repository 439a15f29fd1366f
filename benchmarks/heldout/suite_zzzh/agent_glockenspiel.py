"""Glockenspiel tuning service: one tuner agent reads the work order, lists the bars, measures every bar in one
turn of parallel tool calls, plans the grinding, submits the report, and answers a typed summary (openai_agents)."""
from __future__ import annotations

import asyncio
import json
import math
import re

from agents import (Agent, ModelSettings, RunConfig, Runner, function_tool, set_default_openai_api,
                    set_default_openai_client, set_tracing_disabled)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "glockenspiel-tuning"
ROUTE = "openai_agents"
DOMAIN = "glockenspiel tuning service"
SHAPE = "Agents SDK, single agent, six model turns: work-order tool, bar list tool, 6 to 11 parallel measure calls in one turn, grinding planner tool, report tool that checks, structured final output (pydantic output_type)"
SWITCH = None

MIDI = {"G5": 79, "A5": 81, "B5": 83, "C6": 84, "D6": 86, "E6": 88, "F#6": 90, "G6": 91, "A6": 93, "B6": 95, "C7": 96}
SHEETS = {
    "GT-31": "Work order GT-31\nCustomer: Hollis Primary School\nPitch: A4=442 Hz\nBars: G5 A5 B5 C6 D6 E6 F#6 G6 A6 B6 C7",
    "GT-32": "Work order GT-32\nCustomer: Brass & Bells Band\nPitch: A4=440 Hz\nBars: C6 D6 E6 F#6 G6 A6",
    "GT-33": "Work order GT-33\nCustomer: Lindqvist Percussion\nPitch: A4=443 Hz\nBars: G5 A5 B5 C6 D6 E6 F#6 G6 A6",
    "GT-34": "Work order GT-34\nCustomer: St Aldhelm Youth Orchestra\nPitch: A4=442 Hz\nBars: A5 B5 C6 D6 E6 F#6 G6",
    "GT-35": "Work order GT-35\nCustomer: Marlow Theatre Pit\nPitch: A4=441 Hz\nBars: G5 A5 B5 C6 D6 E6 F#6 G6 A6 B6",
}
INPUTS = [{"order_id": k, "request": f"Tune the glockenspiel on work order {k} and report."} for k in SHEETS]

CASES = [
    {"id": "zzzh-glockenspiel-01", "input": 0, "switch": "page", "fault_kind": "truncated_result",
     "root": "list_bars", "root_occurrence": 1, "failure": "submit_tuning_report",
     "description": "The bar list for GT-31 came back as its first page of 8 bars, leaving A6, B6 and C7 unmeasured and out of the report."},
    {"id": "zzzh-glockenspiel-02", "input": 2, "switch": "pitch", "fault_kind": "lossy_parsing",
     "root": "read_work_order", "root_occurrence": 1, "failure": "submit_tuning_report",
     "description": "The work-order reader rounded the sheet's pitch A4=443 Hz to an even 444 Hz, and every bar was planned against it."},
    {"id": "zzzh-glockenspiel-03", "input": 1, "switch": "summary", "fault_kind": "format_drift",
     "root": "generation fake-model", "root_occurrence": 5, "failure": "submit_tuning_report",
     "description": "The tuner wrote each correction in the report call as text with a unit ('+3.2c') where the report takes a number of cents."},
    {"id": "zzzh-glockenspiel-04", "input": 3, "switch": "reading", "fault_kind": "hallucinated_value",
     "root": "generation fake-model", "root_occurrence": 4, "failure": "submit_tuning_report",
     "description": "The tuner handed the grinding planner 1050.0 Hz for C6, a reading no measurement gave (the bench measured 1055.52 Hz)."},
    {"id": "zzzh-glockenspiel-05", "input": 4, "switch": "khz", "fault_kind": "unit_error",
     "root": "measure_bar", "root_occurrence": 6, "failure": "plan_grinding",
     "description": "The strobe tuner reading for E6 was reported in kilohertz (1.31) under the hertz field, so the planner saw a bar more than ten octaves flat."},
]


def target(pitch: float, note: str) -> float:
    return pitch * 2 ** ((MIDI[note] - 69) / 12)


def measured(order: str, note: str) -> float:
    pitch = float(re.search(r"A4=(\d+)", SHEETS[order]).group(1))
    offset = ((MIDI[note] * 7 + len(order)) % 23) - 11
    return round(target(pitch, note) * 2 ** (offset / 1200), 2)


_bench: dict = {}


@function_tool
def read_work_order(order_id: str) -> str:
    """Read the customer's work order sheet."""
    sheet = SHEETS[order_id]
    pitch = float(re.search(r"Pitch: A4=(\d+)", sheet).group(1))
    if SWITCH == "pitch":
        pitch = float(round(pitch / 2) * 2)
    customer = re.search(r"Customer: (.+)", sheet).group(1)
    return json.dumps({"order_id": order_id, "customer": customer, "pitch_a4": pitch})


@function_tool
def list_bars(order_id: str) -> str:
    """The bars of the instrument on a work order."""
    bars = SHEETS[order_id].split("Bars: ")[1].split()
    if SWITCH == "page":
        bars = bars[:8]
    return json.dumps({"order_id": order_id, "bars": bars})


@function_tool
def measure_bar(order_id: str, note: str) -> str:
    """Strobe tuner reading of one bar, in hertz."""
    hz = measured(order_id, note)
    _bench[(order_id, note)] = hz
    if SWITCH == "khz" and note == "E6":
        hz = round(hz / 1000, 2)
    return json.dumps({"note": note, "hz": hz})


class Reading(BaseModel):
    note: str
    hz: float


class Correction(BaseModel):
    note: str
    cents: float


@function_tool(failure_error_function=None)
def plan_grinding(pitch_a4: float, readings: list[Reading]) -> str:
    """Cents to remove or add on each bar to reach equal temperament at the order's pitch."""
    plan = []
    for r in readings:
        cents = round(1200 * math.log2(target(pitch_a4, r.note) / r.hz), 1)
        if abs(cents) > 100:
            raise ValueError(f"{r.note} at {r.hz} Hz is {cents} cents from {target(pitch_a4, r.note):.2f} Hz: more than the grinding can correct")
        plan.append({"note": r.note, "cents": cents})
    return json.dumps({"plan": plan, "max_cents": max(abs(p["cents"]) for p in plan)})


@function_tool(failure_error_function=None)
def submit_tuning_report(order_id: str, pitch_a4: float, corrections: list[Correction]) -> str:
    """File the tuning report for the work order; checked against the sheet and the bench log."""
    sheet = SHEETS[order_id]
    bars = sheet.split("Bars: ")[1].split()
    pitch = float(re.search(r"Pitch: A4=(\d+)", sheet).group(1))
    done = [c.note for c in corrections]
    missing = [b for b in bars if b not in done]
    if missing:
        raise ValueError(f"report for {order_id} covers {len(done)} of {len(bars)} bars; no correction for {missing}")
    if pitch_a4 != pitch:
        raise ValueError(f"report for {order_id} is tuned to A4={pitch_a4:g} Hz, the customer's sheet asks for A4={pitch:g} Hz")
    for c in corrections:
        hz = _bench.get((order_id, c.note))
        expected = round(1200 * math.log2(target(pitch, c.note) / hz), 1)
        if abs(expected - c.cents) > 1.0:
            raise ValueError(f"{c.note}: reported correction {c.cents:+.1f} cents, the bench log reading {hz} Hz needs {expected:+.1f}")
    return json.dumps({"order_id": order_id, "filed": True, "bars": len(corrections)})


class TuningSummary(BaseModel):
    order_id: str
    bars: int
    max_cents: float


def policy(request):
    msgs = request.body["messages"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    order = user.split("work order ")[1].split(" ")[0]
    called = [c["function"]["name"] for m in msgs if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
    results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
    if "read_work_order" not in called:
        return Reply(tool_calls=(tool_call("read_work_order", {"order_id": order}),))
    pitch = next(r["pitch_a4"] for r in results if "pitch_a4" in r)
    if "list_bars" not in called:
        return Reply(tool_calls=(tool_call("list_bars", {"order_id": order}),))
    bars = next(r["bars"] for r in results if "bars" in r)
    if "measure_bar" not in called:
        return Reply(tool_calls=tuple(tool_call("measure_bar", {"order_id": order, "note": b}) for b in bars))
    readings = [{"note": r["note"], "hz": r["hz"]} for r in results if "hz" in r]
    if "plan_grinding" not in called:
        if SWITCH == "reading":
            readings = [dict(r, hz=1050.0) if r["note"] == "C6" else r for r in readings]
        return Reply(tool_calls=(tool_call("plan_grinding", {"pitch_a4": pitch, "readings": readings}),))
    plan = next(r for r in results if "plan" in r)
    if "submit_tuning_report" not in called:
        corrections = plan["plan"]
        if SWITCH == "summary":
            corrections = [{"note": c["note"], "cents": f"{c['cents']:+.1f}c"} for c in corrections]
        return Reply(tool_calls=(tool_call("submit_tuning_report", {"order_id": order, "pitch_a4": pitch,
                                                                    "corrections": corrections}),))
    top = plan["max_cents"]
    return json.dumps({"order_id": order, "bars": len(plan["plan"]), "max_cents": top})


def build(model):
    return Agent(name="tuner", model=model, output_type=TuningSummary,
                 instructions="You tune glockenspiels: read the order, list and measure the bars, plan, report.",
                 model_settings=ModelSettings(parallel_tool_calls=True),
                 tools=[read_work_order, list_bars, measure_bar, plan_grinding, submit_tuning_report])


async def _run(server, inp):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        return await Runner.run(build(server.model), inp["request"], run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()


def record(server, inp, path):
    _bench.clear()
    set_tracing_disabled(False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["request"])])
    try:
        asyncio.run(_run(server, inp))
    finally:
        set_trace_processors([])
