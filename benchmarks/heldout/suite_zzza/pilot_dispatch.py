"""Harbour pilot boat dispatch (route: openai_agents, Chat Completions, structured output)."""
from __future__ import annotations

import ast
import asyncio
import json
import re

from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call
import suitekit

NAME = "pilot-dispatch"
ROUTE = "openai_agents"
DOMAIN = "harbour pilot boat: dispatch"
SHAPE = ("one Agents SDK dispatcher, ~14-16 steps: four parallel tool calls (vessel, tide, roster, notices), a "
         "boarding-planner sub-agent as a tool with its own two tools, an assignment tool the pilot station "
         "checks, and a structured final answer (pydantic output_type)")

ON = {"tide": False, "sister": False, "feet": False, "shift": False, "notices": False}

VESSELS = {
    "9786541": {"name": "Nordic Crest", "length_m": 289, "draught_m": 12.6},
    "9786553": {"name": "Nordic Crown", "length_m": 182, "draught_m": 9.1},  # sister yard number, smaller
    "9402117": {"name": "Saltire Trader", "length_m": 144, "draught_m": 8.2},
    "9650038": {"name": "Ebba Maersk Lines", "length_m": 333, "draught_m": 14.1},
    "9511290": {"name": "Kittiwake", "length_m": 99, "draught_m": 5.4},
    "9723350": {"name": "Polar Ivy", "length_m": 228, "draught_m": 11.0},
}
TIDES = {"B2": ("14:30", 16.2), "B4": ("06:10", 17.5), "B7": ("11:45", 13.9), "B9": ("19:20", 16.4),
         "B5": ("09:05", 14.4)}
ROSTER = {"day": [{"pilot": "Ingrid Lund", "class": "A"}, {"pilot": "Tomas Berg", "class": "B"}],
          "night": [{"pilot": "Sven Aas", "class": "A"}, {"pilot": "Olle Nyqvist", "class": "C"}]}
CLASS_MAX_M = {"A": 400, "B": 200, "C": 120}
POINTS = [("Inner Gate", 200), ("Pilot Station Alpha", 400)]
NOTICES = {"B2": ["B2: fender repairs, use starboard side to"], "B4": [], "B7": ["B7: dredging until 2026-12-20"],
           "B9": [], "B5": []}
OTHER_NOTICES = ["Anchorage: boarding point moved to North Buoy for vessels bound for B11-B14",
                 "Archive 2025-03: Inner Gate closed for survey"]

INPUTS = [
    {"text": "Dispatch a pilot for IMO 9786541 to berth B2 on 2026-12-09, day shift."},
    {"text": "Vessel IMO 9402117 needs a pilot for berth B4 on 2026-12-09, day shift."},
    {"text": "Pilot required: IMO 9650038, berth B9, 2026-12-10, day shift."},
    {"text": "IMO 9511290 to berth B7 on 2026-12-10; day shift please."},
    {"text": "Book a pilot for IMO 9723350 at berth B5, 2026-12-11, day shift."},
]

CASES = [
    dict(id="zh01", input=1, switch="tide", fault_kind="format_drift",
         root=("tide_window", 1), kind="tool", failure=("turn 4", 1),
         description="The tide service answers high water as '0610h' instead of '06:10', and the dispatcher copies it into the dispatch order, whose boarding time must be HH:MM."),
    dict(id="zh02", input=0, switch="sister", fault_kind="subagent_wrong_entity",
         root=("generation fake-model", 3), kind="llm", failure=("assign_pilot", 1),
         description="The boarding-planner sub-agent looks up IMO 9786553 (Nordic Crown, 182 m) instead of 9786541 (Nordic Crest, 289 m) and picks Inner Gate, limited to 200 m."),
    dict(id="zh03", input=2, switch="feet", fault_kind="unit_error",
         root=("vessel_details", 1), kind="tool", failure=("assign_pilot", 1),
         description="vessel_details reports Ebba Maersk Lines' draught in feet (46.3) under draught_m, so the assignment sees a draught deeper than the berth's tide."),
    dict(id="zh04", input=3, switch="shift", fault_kind="wrong_tool_args",
         root=("generation fake-model", 1), kind="llm", failure=("assign_pilot", 1),
         description="The dispatcher model asks pilot_roster for the night shift although the request is for the day shift, and assigns Sven Aas, who is off duty by day."),
    dict(id="zh05", input=4, switch="notices", fault_kind="context_pollution",
         root=("harbour_notices", 1), kind="tool", failure=("assign_pilot", 1),
         description="harbour_notices returns port-wide and archived notices besides B5's, and the dispatcher takes the anchorage notice's North Buoy as the boarding point for B5."),
]


def _lit(text):
    try:
        return ast.literal_eval(text)
    except Exception:
        try:
            return json.loads(text)
        except Exception:
            return text


def _results(msgs):
    names, out = {}, {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    for m in msgs:
        if m.get("role") == "tool":
            out.setdefault(names.get(m.get("tool_call_id")), []).append(_lit(m.get("content")))
    return out


def policy(request):
    msgs = request.body.get("messages") or []
    system = suitekit.system_of(request)
    first_user = next((m["content"] for m in msgs if m.get("role") == "user"), "")
    res = _results(msgs)
    imo = re.search(r"IMO (\d{7})", first_user).group(1)
    if system.startswith("You plan boarding"):
        if "vessel_details" not in res:
            return Reply(tool_calls=(tool_call("vessel_details", {"imo": "9786553" if ON["sister"] else imo}),))
        v = res["vessel_details"][0]
        if "boarding_points" not in res:
            return Reply(tool_calls=(tool_call("boarding_points", {"length_m": v["length_m"]}),))
        return json.dumps({"boarding_point": res["boarding_points"][0]["points"][0], "ladder": "starboard"})
    berth = re.search(r"berth (B\d+)", first_user).group(1)
    date = re.search(r"\d{4}-\d{2}-\d{2}", first_user).group(0)
    if "vessel_details" not in res:
        shift = "night" if ON["shift"] else "day"
        return Reply(tool_calls=(tool_call("vessel_details", {"imo": imo}),
                                 tool_call("tide_window", {"berth": berth, "date": date}),
                                 tool_call("pilot_roster", {"date": date, "shift": shift}),
                                 tool_call("harbour_notices", {"berth": berth})))
    if "ask_boarding_planner" not in res:
        return Reply(tool_calls=(tool_call("ask_boarding_planner", {"input": f"Boarding point for IMO {imo} bound for {berth}?"}),))
    plan = _lit(res["ask_boarding_planner"][0])
    point = plan["boarding_point"]
    for n in res["harbour_notices"][0]["notices"]:
        m = re.search(r"boarding point moved to ([A-Z][a-z]+ [A-Z][a-z]+)", n)
        if m:
            point = m.group(1)
    vessel, tide, roster = res["vessel_details"][0], res["tide_window"][0], res["pilot_roster"][0]
    pilot = next(p["pilot"] for p in roster["pilots"] if CLASS_MAX_M[p["class"]] >= vessel["length_m"])
    if "assign_pilot" not in res:
        return Reply(tool_calls=(tool_call("assign_pilot", {
            "pilot": pilot, "imo": imo, "berth": berth, "date": date, "boarding_time": tide["high_water"],
            "boarding_point": point, "draught_m": vessel["draught_m"]}),))
    a = res["assign_pilot"][0]
    return json.dumps({"pilot": a["pilot"], "imo": imo, "boarding_time": a["boarding_time"],
                       "boarding_point": a["boarding_point"], "launch": a["launch"]})


class DispatchOrder(BaseModel):
    pilot: str
    imo: str
    boarding_time: str = Field(pattern=r"^\d{2}:\d{2}$")
    boarding_point: str
    launch: str


def _agent():
    from agents import Agent, function_tool

    @function_tool(failure_error_function=None)
    def vessel_details(imo: str) -> dict:
        """Ship register: name, length and draught of a vessel."""
        v = dict(VESSELS[imo], imo=imo)
        if ON["feet"]:
            v["draught_m"] = round(v["draught_m"] * 3.28084, 1)
        return v

    @function_tool(failure_error_function=None)
    def tide_window(berth: str, date: str) -> dict:
        """High water time and depth at a berth on a date."""
        hw, depth = TIDES[berth]
        if ON["tide"]:
            hw = hw.replace(":", "") + "h"
        return {"berth": berth, "date": date, "high_water": hw, "depth_m": depth}

    @function_tool(failure_error_function=None)
    def pilot_roster(date: str, shift: str) -> dict:
        """Pilots on duty for a date and shift, with their licence class."""
        return {"date": date, "shift": shift, "pilots": ROSTER[shift]}

    @function_tool(failure_error_function=None)
    def harbour_notices(berth: str) -> dict:
        """Notices to mariners in force for a berth."""
        notes = list(NOTICES[berth])
        if ON["notices"]:
            notes += OTHER_NOTICES
        return {"berth": berth, "notices": notes}

    @function_tool(failure_error_function=None)
    def boarding_points(length_m: int) -> dict:
        """Boarding points usable by a vessel of this length, nearest first."""
        return {"length_m": length_m, "points": [p for p, limit in POINTS if length_m <= limit]}

    @function_tool(failure_error_function=None)
    def assign_pilot(pilot: str, imo: str, berth: str, date: str, boarding_time: str, boarding_point: str,
                     draught_m: float) -> dict:
        """Assign a pilot and the pilot boat; the pilot station checks the job first."""
        v = VESSELS[imo]
        on_duty = {p["pilot"] for p in ROSTER["day"]}
        if pilot not in on_duty:
            raise ValueError(f"pilot {pilot} is not on the day shift on {date}")
        limits = dict(POINTS)
        if boarding_point not in limits:
            raise ValueError(f"boarding point {boarding_point} does not serve {berth}")
        if v["length_m"] > limits[boarding_point]:
            raise ValueError(f"{boarding_point} is limited to {limits[boarding_point]} m; {v['name']} is {v['length_m']} m")
        depth = TIDES[berth][1]
        if draught_m + 1.5 > depth:
            raise ValueError(f"draught {draught_m} m leaves under 1.5 m under keel in {depth} m at {berth}")
        hhmm = re.sub(r"\D", "", boarding_time)
        return {"pilot": pilot, "boarding_time": boarding_time, "boarding_point": boarding_point,
                "launch": "PB Lodsen 2" if int(hhmm[:2]) < 12 else "PB Lodsen 4"}

    planner = Agent(name="boarding_planner", model="fake-model", tools=[vessel_details, boarding_points],
                    instructions="You plan boarding: find the vessel, then a boarding point that fits it.")
    return Agent(name="dispatcher", model="fake-model", output_type=DispatchOrder,
                 tools=[vessel_details, tide_window, pilot_roster, harbour_notices,
                        planner.as_tool("ask_boarding_planner", "Ask the boarding planner for a boarding point.",
                                        failure_error_function=None), assign_pilot],
                 instructions="You are the pilot dispatcher. Gather vessel, tide, roster and notices, get a "
                              "boarding point, assign the pilot and answer the dispatch order.")


def record(inp: dict, path: str, base_url: str) -> None:
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors

    async def main() -> None:
        client = suitekit.async_client(base_url)
        set_default_openai_client(client)
        try:
            await Runner.run(_agent(), inp["text"], run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["text"])])
    try:
        asyncio.run(main())
    except Exception:
        pass
    finally:
        set_trace_processors([])
