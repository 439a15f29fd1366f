"""Zipline park group dispatch (OpenAI Agents SDK): guest services reads the group notes and forecast,
plans, and hands off to the canopy or junior line guide, who weighs riders, checks the line, sizes
harnesses and books the session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from . import common
from .common import Case
from .kit import active

AGENT = "zipline-dispatch"
ROUTE = "openai_agents"
EXT = "jsonl"
DOMAIN = "zipline park"
SHAPE = ("guest-services agent (plan, group notes, wind forecast) with a hand-off to the canopy or junior "
         "guide agent (weigh-in, line status, harness sizing, session booking)")

GROUPS = {
    "G-510": {"date": "2026-06-12", "line": "L3", "ages": "adults", "prefer": "afternoon",
              "riders": {"R1": 82, "R2": 67, "R3": 74, "R4": 91, "R5": 58, "R6": 70}},
    "G-522": {"date": "2026-06-13", "line": "L2", "ages": "adults and teens", "prefer": "afternoon",
              "riders": {"R1": 48, "R2": 52, "R3": 77, "R4": 81, "R5": 69}},
    "G-530": {"date": "2026-06-14", "line": "L1", "ages": "adults", "prefer": "morning",
              "riders": {"R1": 88, "R2": 64, "R3": 71}},
    "G-534": {"date": "2026-06-14", "line": "JR", "ages": "children 8-11", "prefer": "afternoon",
              "riders": {"R1": 31, "R2": 35, "R3": 29, "R4": 40}},
    "G-541": {"date": "2026-06-15", "line": "L3", "ages": "adults", "prefer": "afternoon",
              "riders": {"R1": 95, "R2": 60, "R3": 73, "R4": 66, "R5": 84, "R6": 79, "R7": 62}},
    "G-547": {"date": "2026-06-16", "line": "L2", "ages": "adults and teens", "prefer": "morning",
              "riders": {"R1": 55, "R2": 70}},
}
REFS = ["G-530", "G-534", "G-541", "G-547"]
CLOSED = {("L3", "2026-06-12"): "cable inspection"}
GUSTS = {"2026-06-12": {"14:00": 10.6, "10:00": 6.1}, "2026-06-13": {"14:00": 5.0, "10:00": 4.2},
         "2026-06-14": {"14:00": 7.5, "10:00": 3.9}, "2026-06-15": {"14:00": 8.8, "10:00": 8.1},
         "2026-06-16": {"14:00": 11.2, "10:00": 6.6}}
LIMITS = {"L1": 120, "L2": 120, "L3": 125, "JR": 60}
HARNESS = [(45, "XS"), (60, "S"), (80, "M"), (100, "L"), (130, "XL")]

CASES = [
    Case("zq_zipline_line", "zipline-line", "tool_ignores_argument", "G-510", ("check_line_status", 1),
         ("book_session", 1), "The line-status tool ignores its line argument and reports line L1, so the "
                              "guide books line L3 on a day it is closed for inspection."),
    Case("zq_zipline_plan", "zipline-plan", "plan_error", "G-522", ("generation gpt-4o-mini", 1),
         ("book_session", 1), "Guest services' plan leaves out the weigh-in, so the guide sizes harnesses "
                              "without weights and dispatch refuses the session."),
    Case("zq_zipline_handoff", "zipline-handoff", "wrong_routing", "G-522", ("generation gpt-4o-mini", 3),
         ("book_session", 1), "Guest services hands a group with adults to the junior line guide, whose line "
                              "has a 60 kg limit."),
    Case("zq_zipline_wind", "zipline-wind", "format_drift", "G-510", ("get_weather_forecast", 1),
         ("book_session", 1), "The forecast tool answers gusts as 'NN km/h' strings instead of gust_ms "
                              "numbers, the windy afternoon slot reads as calm, and dispatch is locked."),
    Case("zq_zipline_notes", "zipline-notes", "context_pollution", "G-522", ("get_group_notes", 1),
         ("book_session", 1), "The group notes carry the previous group's rider lines too, so the session is "
                              "booked for more riders than the group has waivers."),
]


def policy(req: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = next(common.text_of(m.get("content")) for m in msgs if m.get("role") == "user")
    calls = common.called_tools(msgs)
    results = common.tool_results(msgs)
    got = {}
    for (name, _), res in zip(calls, results):
        try:
            got[name] = json.loads(res)
        except ValueError:
            got[name] = res
    group_id = user.split("group ")[1].split()[0]
    if system.startswith("You are guest services"):
        if "get_group_notes" not in got:
            steps = ["notes", "forecast", "weights", "line status", "harnesses", "book"]
            if active("zipline-plan"):
                steps.remove("weights")
            return Reply(text="Plan: " + ", ".join(steps) + ".",
                         tool_calls=(tool_call("get_group_notes", {"group": group_id}),))
        notes = got["get_group_notes"]
        if "get_weather_forecast" not in got:
            return Reply(tool_calls=(tool_call("get_weather_forecast", {"date": notes["date"]}),))
        adults = "adults" in notes["ages"]
        if active("zipline-handoff") and "teens" in notes["ages"]:
            adults = False
        return Reply(tool_calls=(tool_call("transfer_to_canopy_guide" if adults else "transfer_to_junior_guide", {}),))
    if system.startswith("You are the canopy guide") or system.startswith("You are the junior line guide"):
        plan = next(common.text_of(m.get("content")) for m in msgs
                    if m.get("role") == "assistant" and common.text_of(m.get("content")).startswith("Plan:"))
        notes = got["get_group_notes"]
        riders = [line.split(":", 1)[1].strip() for line in notes["text"].splitlines() if line.startswith("Rider:")]
        forecast = got["get_weather_forecast"]
        order = ["14:00", "10:00"] if notes["prefer"] == "afternoon" else ["10:00", "14:00"]
        slot = next((t for t in order for s in forecast["slots"] if s["time"] == t
                     and float(s.get("gust_ms", 0)) <= 9.0), order[-1])
        line = "JR" if system.startswith("You are the junior") else notes["line"]
        if "weights" in plan and "get_group_weights" not in got:
            return Reply(tool_calls=(tool_call("get_group_weights", {"group": group_id}),))
        if "check_line_status" not in got:
            return Reply(tool_calls=(tool_call("check_line_status", {"line": line, "date": notes["date"]}),))
        status = got["check_line_status"]
        if status["status"] != "open":
            line = status["alternative"]
        weights = got.get("get_group_weights", {})
        if "assign_harnesses" not in got:
            return Reply(tool_calls=(tool_call("assign_harnesses", {"riders": riders, "weights": weights}),))
        if "book_session" not in got:
            return Reply(tool_calls=(tool_call("book_session", {
                "group": group_id, "date": notes["date"], "time": slot, "line": line, "riders": riders,
                "harnesses": got["assign_harnesses"]["harnesses"]}),))
        return f"Group {group_id} booked: {got['book_session']['session']}."
    return "no answer"


def _agents() -> Any:
    from agents import Agent, function_tool
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    model = OpenAIChatCompletionsModel(model=common.MODEL, openai_client=AsyncOpenAI(
        base_url=common.server().base_url, api_key="sk-test-local", max_retries=0))

    @function_tool
    def get_group_notes(group: str) -> str:
        """The group's booking notes: date, line, ages, preferred time and the rider list."""
        g = GROUPS[group]
        lines = [f"Group {group} booked for {g['date']}, line {g['line']}, {g['ages']}."]
        lines += [f"Rider: {r}" for r in g["riders"]]
        if active("zipline-notes"):
            lines += ["-- previous thread (group G-519) --", "Rider: R6", "Rider: R7", "Rider: R8"]
        return json.dumps({"group": group, "date": g["date"], "line": g["line"], "ages": g["ages"],
                           "prefer": g["prefer"], "text": "\n".join(lines)})

    @function_tool
    def get_weather_forecast(date: str) -> str:
        """Hourly wind gust forecast at the top platform."""
        slots = []
        for t, ms in GUSTS[date].items():
            if active("zipline-wind"):
                slots.append({"time": t, "gust": f"{round(ms * 3.6)} km/h"})
            else:
                slots.append({"time": t, "gust_ms": ms})
        return json.dumps({"date": date, "slots": slots})

    @function_tool
    def get_group_weights(group: str) -> str:
        """Weigh-in results of the group's riders, in kg."""
        return json.dumps(GROUPS[group]["riders"])

    @function_tool
    def check_line_status(line: str, date: str) -> str:
        """Whether a line is open on a date, with the alternative line when it is not."""
        asked = "L1" if active("zipline-line") else line
        why = CLOSED.get((asked, date))
        return json.dumps({"line": line, "date": date, "status": "closed" if why else "open", "reason": why,
                           "alternative": "L2"})

    @function_tool(strict_mode=False)
    def assign_harnesses(riders: list[str], weights: dict[str, float]) -> str:
        """Harness sizes from rider weights (M when a weight is missing)."""
        out = {}
        for r in riders:
            w = weights.get(r)
            out[r] = next(size for limit, size in HARNESS if w is not None and w <= limit) if w else "M"
        return json.dumps({"harnesses": out})

    @function_tool(failure_error_function=None, strict_mode=False)
    def book_session(group: str, date: str, time: str, line: str, riders: list[str],
                     harnesses: dict[str, str]) -> str:
        """Book the dispatch session for the group."""
        g = GROUPS[group]
        if (line, date) in CLOSED:
            raise RuntimeError(f"HTTP 423 from dispatch: {{\"error\": \"line {line} closed\", \"date\": \"{date}\", "
                               f"\"reason\": \"{CLOSED[(line, date)]}\"}}")
        if GUSTS[date][time] > 9.0:
            raise RuntimeError(f"HTTP 423 from dispatch: {{\"error\": \"dispatch locked\", \"slot\": \"{date} "
                               f"{time}\", \"gust_ms\": {GUSTS[date][time]}, \"limit_ms\": 9.0}}")
        if len(riders) != len(g["riders"]):
            raise RuntimeError(f"HTTP 422 from dispatch: {{\"error\": \"rider count {len(riders)} does not match "
                               f"{len(g['riders'])} waivers\", \"group\": \"{group}\"}}")
        for r in riders:
            size = next(s for limit, s in HARNESS if g["riders"][r] <= limit)
            if harnesses.get(r) != size:
                raise RuntimeError(f"HTTP 422 from dispatch: {{\"error\": \"harness check\", \"rider\": \"{r}\", "
                                   f"\"weighed_kg\": {g['riders'][r]}, \"harness\": \"{harnesses.get(r)}\"}}")
        heavy = [f"{r} ({g['riders'][r]} kg)" for r in riders if g["riders"][r] > LIMITS[line]]
        if heavy:
            raise RuntimeError(f"HTTP 422 from dispatch: {{\"error\": \"riders over the {LIMITS[line]} kg limit of "
                               f"line {line}\", \"riders\": \"{', '.join(heavy)}\"}}")
        return json.dumps({"session": f"S-{date[5:].replace('-', '')}-{time[:2]}-{line}", "status": "booked"})

    guide_tools = [get_group_weights, check_line_status, assign_harnesses, book_session]
    canopy = Agent(name="canopy_guide", model=model, tools=guide_tools,
                   instructions="You are the canopy guide. Weigh riders, check the line, size harnesses, book.")
    junior = Agent(name="junior_guide", model=model, tools=guide_tools,
                   instructions="You are the junior line guide. Weigh riders, check the line, size harnesses, book.")
    desk = Agent(name="guest_services", model=model, tools=[get_group_notes, get_weather_forecast],
                 handoffs=[canopy, junior],
                 instructions="You are guest services at Ridgeline Zip Park. Plan the visit, read the notes and "
                              "forecast, then hand the group to the right guide.")
    return desk


def setup() -> None:
    common.server().use(policy)


def record(key: str, path: Path) -> None:
    from agents import RunConfig, Runner, set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    processor = TrajdebugProcessor(path=str(path), name=AGENT)
    set_trace_processors([processor])
    Runner.run_sync(_agents(), f"Dispatch group {key} for their zipline session.",
                    run_config=RunConfig(workflow_name=AGENT, trace_metadata={"task": f"dispatch group {key}"}),
                    max_turns=20)
