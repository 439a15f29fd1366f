"""Caving club trip desk: a triage agent hands a trip request to a planner, which surveys the cave,
checks the members, asks a gear sub-agent (an agent run as a tool) to reserve kit, and registers
the trip with the rescue callout (OpenAI Agents SDK, Chat Completions).

Shape: triage agent -> hand-off to one of two planner agents -> parallel survey + member look-ups ->
gear sub-agent (Agent.as_tool, its own tool) -> callout register tool (raises on the club's rules);
a model request that overflows the context window is refused by the API.
"""

from __future__ import annotations

import ast
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


NAME = "caving-trip-desk"
ROUTE = "openai_agents"
DOMAIN = "caving club's trips"
SHAPE = "SDK triage agent -> hand-off to one of two planners -> parallel tools -> agent-as-tool gear sub-agent -> register tool; context-window refusal possible (~20-26 steps)"

SW = dict.fromkeys(
    ("triage_by_size", "other_trip_kit", "tight_callout", "whole_survey", "member_page"), False
)

MEMBERS = {
    "Ellie Vance": "srt",
    "Tariq Hale": "srt",
    "Maud Pryce": "novice",
    "Owen Gray": "srt",
    "Priya Nair": "novice",
    "Sam Ruddock": "srt",
    "Beth Coles": "srt",
    "Jonah Webb": "novice",
    "Ana Petrov": "srt",
    "Carl Frost": "srt",
}
CAVES = {
    "Swildon's Hole": {
        "Short Dry Way": {"srt": False, "hours": 3},
        "Twenty Foot Pot": {"srt": True, "hours": 5},
    },
    "Lost John's": {"Main Drain": {"srt": False, "hours": 4}, "Centipede Pitch": {"srt": True, "hours": 6}},
    "Dan yr Ogof": {
        "Show Cave Bypass": {"srt": False, "hours": 3},
        "Great North Road": {"srt": True, "hours": 7},
    },
}
OTHER_TRIP = {"T-41": "T-40", "T-42": "T-40", "T-43": "T-44", "T-44": "T-43", "T-45": "T-44"}
KIT: dict = {}

INPUTS = [
    {
        "trip": "T-41",
        "cave": "Swildon's Hole",
        "date": "2027-03-06",
        "start": "10:00",
        "party": ["Ellie Vance", "Maud Pryce", "Tariq Hale"],
    },
    {
        "trip": "T-42",
        "cave": "Lost John's",
        "date": "2027-03-13",
        "start": "09:00",
        "party": ["Owen Gray", "Sam Ruddock", "Beth Coles", "Ana Petrov"],
    },
    {
        "trip": "T-43",
        "cave": "Dan yr Ogof",
        "date": "2027-03-20",
        "start": "09:30",
        "party": ["Carl Frost", "Tariq Hale"],
    },
    {
        "trip": "T-44",
        "cave": "Lost John's",
        "date": "2027-03-27",
        "start": "10:30",
        "party": ["Priya Nair", "Jonah Webb", "Ellie Vance", "Owen Gray", "Sam Ruddock", "Beth Coles"],
    },
    {
        "trip": "T-45",
        "cave": "Swildon's Hole",
        "date": "2027-04-03",
        "start": "11:00",
        "party": ["Ana Petrov", "Beth Coles", "Carl Frost"],
    },
]


@function_tool(failure_error_function=None)
def cave_survey(cave: str, section: str) -> dict:
    """Survey notes for one section of a cave: whether it needs SRT and how long a round trip takes."""
    if SW["whole_survey"]:
        passages = [
            {
                "passage": f"{cave} passage {i}",
                "grade": 3 + i % 3,
                "notes": "squeeze, wet, boulder choke, low airspace " * 6,
            }
            for i in range(420)
        ]
        return {"cave": cave, "sections": CAVES[cave], "passages": passages}
    return {"cave": cave, "section": section, **CAVES[cave][section]}


@function_tool(failure_error_function=None)
def member_records(names: list[str]) -> list:
    """Club records of the listed members: SRT sign-off or novice."""
    rows = [{"name": n, "level": MEMBERS[n]} for n in names]
    if SW["member_page"]:
        rows = rows[:4]
    return rows


@function_tool(failure_error_function=None)
def gear_store(trip: str, harnesses: int, srt_kits: int) -> dict:
    """Reserve harnesses and SRT kits from the club store for a trip."""
    KIT[trip] = {"harnesses": harnesses, "srt_kits": srt_kits}
    return {"trip": trip, "reserved": KIT[trip]}


@function_tool(failure_error_function=None)
def callout_register(
    trip: str, cave: str, section: str, party: list[str], exit_time: str, callout_time: str
) -> str:
    """Register the trip with the rescue callout; the warden refuses plans that break the club's rules."""
    req = _req[trip]
    if sorted(party) != sorted(req["party"]):
        raise ValueError(
            f"callout for {trip} lists {len(party)} cavers, the sign-up sheet has {len(req['party'])}"
        )
    sec = CAVES[cave][section]
    novices = [n for n in party if MEMBERS[n] == "novice"]
    if sec["srt"] and novices:
        raise ValueError(f"{novices[0]} is not signed off for SRT and {section} in {cave} is a pitch")
    if sec["srt"] and KIT.get(trip, {}).get("srt_kits", 0) < len(party):
        raise ValueError(f"no SRT kit reserved for {trip}: {len(party)} cavers on {section}")
    eh, em = map(int, exit_time.split(":"))
    ch, cm = map(int, callout_time.split(":"))
    if ch * 60 + cm < eh * 60 + em + 120:
        raise ValueError(f"callout {callout_time} is less than two hours after the planned exit {exit_time}")
    return f"{trip} registered with callout at {callout_time}"


_req: dict = {}


def _results(messages) -> dict:
    names, out = {}, {}
    for m in messages:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            try:
                out[names.get(m["tool_call_id"])] = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                out[names.get(m["tool_call_id"])] = m["content"]
    return out


def _hhmm(start: str, hours: int) -> str:
    h, m = map(int, start.split(":"))
    return f"{h + hours:02d}:{m:02d}"


def policy(request):
    body = request.body
    if len(json.dumps(body)) > 60000:
        return Reply(
            status=400,
            error="This model's maximum context length is 16385 tokens; the messages resulted in 41212 tokens.",
        )
    msgs = body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    res = _results(msgs)
    users = [m["content"] for m in msgs if m["role"] == "user"]
    if system.startswith("Gear"):
        ask = json.loads(users[-1])
        if "gear_store" not in res:
            trip = OTHER_TRIP[ask["trip"]] if SW["other_trip_kit"] else ask["trip"]
            return Reply(
                tool_calls=(
                    tool_call(
                        "gear_store",
                        {
                            "trip": trip,
                            "harnesses": ask["cavers"],
                            "srt_kits": ask["cavers"] if ask["srt"] else 0,
                        },
                    ),
                )
            )
        return f"Reserved: {res['gear_store']['reserved']} for {res['gear_store']['trip']}"
    req = json.loads(users[0])
    if system.startswith("Trip desk"):
        party = req["party"]
        if SW["triage_by_size"]:
            target = "novice_trip_planner" if len(party) > 3 else "sport_trip_planner"
        else:
            target = (
                "novice_trip_planner" if any(MEMBERS[n] == "novice" for n in party) else "sport_trip_planner"
            )
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    srt = system.startswith("Sport")
    section = next(s for s, v in CAVES[req["cave"]].items() if v["srt"] == srt)
    if "cave_survey" not in res:
        return Reply(
            tool_calls=(
                tool_call("cave_survey", {"cave": req["cave"], "section": section}),
                tool_call("member_records", {"names": req["party"]}),
            )
        )
    if "gear_checker" not in res:
        return Reply(
            tool_calls=(
                tool_call(
                    "gear_checker",
                    {
                        "input": json.dumps(
                            {
                                "trip": req["trip"],
                                "cavers": len(res["member_records"]),
                                "srt": res["cave_survey"]["srt"],
                            }
                        )
                    },
                ),
            )
        )
    if "callout_register" not in res:
        hours = res["cave_survey"]["hours"]
        exit_time = _hhmm(req["start"], hours)
        callout = _hhmm(req["start"], hours + (1 if SW["tight_callout"] else 3))
        return Reply(
            tool_calls=(
                tool_call(
                    "callout_register",
                    {
                        "trip": req["trip"],
                        "cave": req["cave"],
                        "section": section,
                        "party": [r["name"] for r in res["member_records"]],
                        "exit_time": exit_time,
                        "callout_time": callout,
                    },
                ),
            )
        )
    return f"Trip {req['trip']} planned: {section}, {res['callout_register']}."


GEAR = Agent(
    name="gear_checker",
    instructions="Gear store clerk: reserve kit for the trip with the gear_store tool.",
    model="fake-model",
    tools=[gear_store],
)
GEAR_TOOL = GEAR.as_tool(
    tool_name="gear_checker", tool_description="Reserve harnesses and SRT kit for a trip."
)
SPORT = Agent(
    name="sport_trip_planner",
    instructions="Sport trip planner: plan SRT trips for signed-off members.",
    model="fake-model",
    tools=[cave_survey, member_records, GEAR_TOOL, callout_register],
)
NOVICE = Agent(
    name="novice_trip_planner",
    instructions="Novice trip planner: plan horizontal trips that suit novices.",
    model="fake-model",
    tools=[cave_survey, member_records, GEAR_TOOL, callout_register],
)
TRIAGE = Agent(
    name="trip_desk",
    instructions="Trip desk: hand each trip request to the right planner.",
    model="fake-model",
    handoffs=[SPORT, NOVICE],
)

_loop = asyncio.new_event_loop()
_clients: dict = {}


def record(inp: dict, server, dest: str) -> None:
    _req[inp["trip"]] = inp
    KIT.clear()
    if server.base_url not in _clients:
        _clients[server.base_url] = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(_clients[server.base_url])
    set_default_openai_api("chat_completions")
    set_trace_processors(
        [TrajdebugProcessor(path=dest, name=NAME, task=f"plan trip {inp['trip']} to {inp['cave']}")]
    )
    try:
        _loop.run_until_complete(
            Runner.run(TRIAGE, json.dumps(inp), run_config=RunConfig(workflow_name=NAME), max_turns=12)
        )
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass
    finally:
        set_trace_processors([])


CASES = [
    {
        "id": "cave_triage_size",
        "input": 0,
        "switch": "triage_by_size",
        "fault_kind": "wrong_routing",
        "root": ("generation fake-model", 1, "llm"),
        "failure": ("callout_register", 1),
        "description": "The trip desk hands a party with a novice to the sport planner because it decides by party size.",
    },
    {
        "id": "cave_other_kit",
        "input": 1,
        "switch": "other_trip_kit",
        "fault_kind": "subagent_wrong_entity",
        "root": ("generation fake-model", 4, "llm"),
        "failure": ("callout_register", 1),
        "description": "The gear sub-agent reserves the SRT kit against trip T-40 instead of T-42.",
    },
    {
        "id": "cave_tight_callout",
        "input": 2,
        "switch": "tight_callout",
        "fault_kind": "plan_error",
        "root": ("generation fake-model", 6, "llm"),
        "failure": ("callout_register", 1),
        "description": "The planner sets the callout only one hour after the planned exit.",
    },
    {
        "id": "cave_whole_survey",
        "input": 4,
        "switch": "whole_survey",
        "fault_kind": "tool_ignores_argument",
        "root": ("cave_survey", 1, "tool"),
        "failure": ("generation fake-model", 3),
        "description": "The survey tool ignores the section asked for and returns all 420 passages, and the next model request is refused for its length.",
    },
    {
        "id": "cave_member_page",
        "input": 3,
        "switch": "member_page",
        "fault_kind": "truncated_result",
        "root": ("member_records", 1, "tool"),
        "failure": ("callout_register", 1),
        "description": "The member look-up returns only its first four rows, so two of the six cavers drop out of the plan.",
    },
]
