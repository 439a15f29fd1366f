"""surf-flag-officer: a beach lifeguard service's duty officer agent sets the hourly flag for a beach
from tide, buoy and a rip-assessor sub-agent, and posts it to lifeguard HQ (which checks it)."""
from __future__ import annotations

import asyncio
import json
import re
from typing import Literal

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import last_user, system_text, tool_results

NAME = "surf-flag-officer"
ROUTE = "openai_agents"
DOMAIN = "beach lifeguard service: hourly flag decision per beach"
SHAPE = "Agents SDK: officer agent, parallel tool calls (tide, buoy), rip-assessor sub-agent as a tool (own tool + model), post_flag tool with a typed schema and HQ check"
SWITCH = None

BUOY = {"Fistral North": 1.8, "Fistral South": 1.4, "Polzeath": 0.9, "Perranporth": 2.7, "Gwithian": 1.3}
TOWER_VISUAL = {"Fistral North": 1.9, "Fistral South": 1.4, "Polzeath": 1.0, "Perranporth": 2.6, "Gwithian": 1.3}
TIDES = {  # hour -> state, per beach (the same table for the bay)
    10: "low", 11: "low", 12: "mid", 13: "mid", 14: "high", 15: "high", 16: "mid", 22: "high", 23: "high", 0: "mid",
    1: "mid", 2: "low", 3: "low", 4: "low"}
RIP_HISTORY = {
    "Fistral North": [{"tide": "low", "rescues": 14}, {"tide": "mid", "rescues": 3}, {"tide": "high", "rescues": 1}],
    "Fistral South": [{"tide": "low", "rescues": 2}, {"tide": "mid", "rescues": 2}, {"tide": "high", "rescues": 1}],
    "Polzeath": [{"tide": "low", "rescues": 1}, {"tide": "mid", "rescues": 6}, {"tide": "high", "rescues": 0}],
    "Perranporth": [{"tide": "low", "rescues": 9}, {"tide": "mid", "rescues": 8}, {"tide": "high", "rescues": 4}],
    "Gwithian": [{"tide": "low", "rescues": 1}, {"tide": "mid", "rescues": 1}, {"tide": "high", "rescues": 7}],
}
INPUTS = [
    {"task": "10:00 flag, Fistral North", "beach": "Fistral North", "hour": 10},
    {"task": "12:00 flag, Polzeath", "beach": "Polzeath", "hour": 12},
    {"task": "14:00 flag, Perranporth", "beach": "Perranporth", "hour": 14},
    {"task": "11:00 flag, Gwithian", "beach": "Gwithian", "hour": 11},
    {"task": "14:00 flag, Fistral North", "beach": "Fistral North", "hour": 14},
]
CASES = [
    {"id": "zq_surf_1", "input": 0, "fault_kind": "subagent_wrong_entity", "root": ("generation fake-model", 3), "root_kind": "llm",
     "failure": ("post_flag", 1),
     "description": "The rip-assessor sub-agent looks up the rip history of Fistral South instead of Fistral North, rates the rip low, and HQ rejects the yellow flag where the North rip calls for red."},
    {"id": "zq_surf_2", "input": 3, "fault_kind": "hallucinated_value", "root": ("generation fake-model", 4), "root_kind": "llm",
     "failure": ("post_flag", 1),
     "description": "The rip assessor states a wave height of 2.1 m for Gwithian that no buoy reading holds (1.3 m), the officer posts a red_yellow flag on it and HQ rejects the height."},
    {"id": "zq_surf_3", "input": 4, "fault_kind": "wrong_tool_args", "root": ("generation fake-model", 1), "root_kind": "llm",
     "failure": ("post_flag", 1),
     "description": "The officer model asks the tide table for hour 2 instead of 14 (a 12-hour clock reading), gets low tide instead of high, the rip is rated high and HQ rejects the red flag where the tower calls for red_yellow."},
    {"id": "zq_surf_4", "input": 2, "fault_kind": "swallowed_error", "root": ("get_surf_obs", 1), "root_kind": "tool",
     "failure": ("post_flag", 1),
     "description": "The buoy feed times out and get_surf_obs answers the seasonal mean of 0.8 m as if measured, so the flag posted for Perranporth does not match the tower's 2.6 m."},
    {"id": "zq_surf_5", "input": 1, "fault_kind": "format_drift", "root": ("generation fake-model", 4), "root_kind": "llm",
     "failure": ("post_flag", 1),
     "description": "The rip assessor answers its risk as a score, 4/5, instead of low/moderate/high, the officer passes it on, and post_flag's schema rejects the rip_risk value."},
]


def _flag(wave, risk):
    if wave >= 2.5 or risk == "high":
        return "red"
    if wave >= 1.2 or risk == "moderate":
        return "red_yellow"
    return "green" if risk == "low" and wave < 0.8 else "red_yellow"


def brain(request):
    sys_ = system_text(request)
    user = last_user(request)
    results = tool_results(request)
    if sys_.startswith("You are the rip assessor"):
        beach = re.search(r"beach: ([A-Za-z ]+?);", user).group(1)
        if not results:
            if SWITCH == "zq_surf_1":
                beach = "Fistral South"  # the history index lists Fistral under its south beach
            return Reply(tool_calls=(tool_call("get_rip_history", {"beach": beach}),))
        hist = results[-1][1]
        tide = re.search(r"tide: (\w+)", user).group(1)
        wave = float(re.search(r"wave: ([\d.]+)", user).group(1))
        rescues = next(h["rescues"] for h in hist["history"] if h["tide"] == tide)
        risk = "high" if rescues >= 8 else "moderate" if rescues >= 3 else "low"
        if SWITCH == "zq_surf_5":
            return json.dumps({"beach": beach, "rip_risk": f"{1 + rescues // 2}/5", "rescues_at_tide": rescues})
        beach = re.search(r"beach: ([A-Za-z ]+?);", user).group(1)
        out = {"beach": beach, "rip_risk": risk, "rescues_at_tide": rescues}
        if SWITCH == "zq_surf_2":
            out["wave_m"] = 2.1
        return json.dumps(out)
    beach = re.search(r"for (.+?) at", user).group(1)
    hour = int(re.search(r"at (\d+):00", user).group(1))
    names = [n for n, _ in results]
    if not results:
        tide_hour = hour % 12 if SWITCH == "zq_surf_3" else hour  # "2 o'clock" on the rota
        return Reply(tool_calls=(tool_call("get_tide", {"beach": beach, "hour": tide_hour}),
                                 tool_call("get_surf_obs", {"beach": beach})))
    got = dict(results)
    if "rip_assessor" not in names:
        return Reply(tool_calls=(tool_call("rip_assessor", {"input": f"beach: {beach}; tide: {got['get_tide']['state']}; wave: {got['get_surf_obs']['wave_m']}"}),))
    if "post_flag" not in names:
        rip = got["rip_assessor"]
        wave = rip.get("wave_m", got["get_surf_obs"]["wave_m"])
        risk = rip["rip_risk"]
        return Reply(tool_calls=(tool_call("post_flag", {"beach": beach, "hour": hour, "flag": _flag(wave, risk), "wave_m": wave, "rip_risk": risk}),))
    return f"Posted: {got['post_flag']['flag']} flag at {beach} for {hour}:00."


def record(inp, server, path):
    oai = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=oai)

    @function_tool
    def get_tide(beach: str, hour: int) -> dict:
        """Tide state for a beach at an hour (0-23)."""
        return {"beach": beach, "hour": hour, "state": TIDES[hour]}

    @function_tool
    def get_surf_obs(beach: str) -> dict:
        """Latest wave height from the beach's wave buoy."""
        try:
            if SWITCH == "zq_surf_4":
                raise TimeoutError(f"buoy feed for {beach} timed out after 5 s")
            wave, period = BUOY[beach], 11
        except TimeoutError:
            wave, period = 0.8, 9  # seasonal mean keeps the flag board going
        return {"beach": beach, "wave_m": wave, "period_s": period}

    @function_tool
    def get_rip_history(beach: str) -> dict:
        """Rip rescues by tide state at a beach over the last three seasons."""
        return {"beach": beach, "history": RIP_HISTORY[beach]}

    @function_tool(failure_error_function=None)
    def post_flag(beach: str, hour: int, flag: Literal["red", "red_yellow", "yellow", "green"], wave_m: float,
                  rip_risk: Literal["low", "moderate", "high"]) -> dict:
        """Post the flag decision to lifeguard HQ."""
        tower = TOWER_VISUAL[beach]
        if abs(wave_m - tower) > 0.4:
            raise ValueError(f"HQ rejected {flag} flag at {beach}: wave {wave_m} m, tower reads {tower} m")
        rescues = next(h["rescues"] for h in RIP_HISTORY[beach] if h["tide"] == TIDES[hour])
        need = _flag(tower, "high" if rescues >= 8 else "moderate" if rescues >= 3 else "low")
        if flag != need:
            raise ValueError(f"HQ rejected {flag} flag at {beach} {hour}:00: rip camera and tower call for {need}")
        return {"beach": beach, "flag": flag, "hour": hour, "status": "posted"}

    assessor = Agent(name="rip-assessor", model=model, tools=[get_rip_history],
                     instructions="You are the rip assessor. Look up the beach's rip history and rate the rip risk as JSON.")
    officer = Agent(name="flag-officer", model=model,
                    instructions="You are the duty flag officer. Check tide and buoy, ask the rip assessor, then post the flag.",
                    tools=[get_tide, get_surf_obs,
                           assessor.as_tool(tool_name="rip_assessor", tool_description="Rate the rip risk for a beach, tide and wave."),
                           post_flag])
    hour = inp["hour"]
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=inp["task"])])
    try:
        async def main():
            try:
                return await Runner.run(officer, f"Set the flag for {inp['beach']} at {hour}:00.", run_config=RunConfig(workflow_name=NAME))
            finally:
                await oai.close()

        asyncio.run(main())
    finally:
        set_trace_processors([])
