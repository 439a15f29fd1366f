"""Submarine tour operator's dives: an OpenAI Agents SDK coordinator with two sub-agents run as tools.

Shape: dive_coordinator writes a plan, then calls conditions_analyst (a sub-agent with tool
sea_conditions) and manifest_clerk (a sub-agent that calls passenger_list and weigh_in in parallel),
writes the dive record to the ops memory (note_dive), reads it back to trim the ballast (ballast_calc)
and files the dive plan with the harbour authority (file_dive_plan raises on what it refuses); the model
API refuses a request that exceeds its context.
"""

from __future__ import annotations

import asyncio
import json
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "submarine-dive-ops"
ROUTE = "openai_agents"
DOMAIN = "submarine tour operator's dives"
SHAPE = "coordinator + 2 sub-agents as tools, 33-34 steps: plan -> analyst (tool) -> clerk (2 parallel tools) -> memory write -> memory read -> filing tool raises, or the model API refuses"
SWITCH = None

PAYLOAD_LIMIT_KG = 900
DIVES = {
    "D-21": {"site": "Kettle Reef", "date": "2027-04-10", "sub": "Nautilette", "booked": ["P1", "P2", "P3", "P4", "P5", "P6"]},
    "D-12": {"site": "Kettle Reef", "date": "2027-04-03", "sub": "Nautilette", "booked": ["P7", "P8", "P9", "P10"]},
    "D-34": {"site": "Wreck of the Maud", "date": "2027-05-02", "sub": "Deepling", "booked": ["P11", "P12", "P13", "P14", "P15"]},
    "D-40": {"site": "Orla Trench wall", "date": "2027-05-19", "sub": "Deepling", "booked": ["P16", "P17", "P18"]},
    "D-47": {"site": "Seal Caves", "date": "2027-06-07", "sub": "Nautilette", "booked": ["P19", "P20", "P21", "P22"]},
    "D-52": {"site": "Wreck of the Maud", "date": "2027-06-21", "sub": "Deepling", "booked": ["P23", "P24", "P25", "P26", "P27", "P28", "P29"]},
}
WEIGHTS = {f"P{i}": w for i, w in enumerate(
    [0, 82, 64, 91, 58, 77, 70, 88, 61, 95, 73, 69, 80, 57, 84, 90, 66, 72, 79, 86, 62, 75, 68, 93, 59, 81, 67, 74, 85, 60])}
SITES = {"Kettle Reef": {"max_depth_m": 38, "visibility_m": 14, "current_kn": 0.8},
         "Wreck of the Maud": {"max_depth_m": 52, "visibility_m": 9, "current_kn": 1.1},
         "Orla Trench wall": {"max_depth_m": 60, "visibility_m": 11, "current_kn": 1.4},
         "Seal Caves": {"max_depth_m": 24, "visibility_m": 16, "current_kn": 0.5}}

INPUTS = [
    {"dive_id": "D-21", "message": "Prepare and file the dive plan for dive D-21."},
    {"dive_id": "D-34", "message": "Please get dive D-34 ready and file it with the harbour authority."},
    {"dive_id": "D-40", "message": "Dive D-40: conditions, manifest, ballast, then file the plan."},
    {"dive_id": "D-47", "message": "File tomorrow's plan for dive D-47 (Seal Caves)."},
    {"dive_id": "D-52", "message": "Get the plan for dive D-52 filed, full boat."},
]

CASES = [
    {"id": "zzzg_sub_01", "input": 0, "switch": 1, "kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 5), "failure": ("file_dive_plan", 1),
     "description": "The manifest clerk looks up dive D-12, the earlier Kettle Reef dive, instead of D-21, "
                    "so the plan carries four passengers for a dive booked for six."},
    {"id": "zzzg_sub_02", "input": 4, "switch": 2, "kind": "unit_error",
     "root": ("weigh_in", 1), "failure": ("file_dive_plan", 1),
     "description": "The quayside scale reports the D-52 weigh-in in pounds while the manifest treats it "
                    "as kilograms, so the payload reads above the Deepling's 900 kg limit."},
    {"id": "zzzg_sub_03", "input": 1, "switch": 3, "kind": "swallowed_error",
     "root": ("sea_conditions", 1), "failure": ("generation fake-model", 3),
     "description": "The sea-conditions tool catches the buoy feed's failure and returns the feed's whole "
                    "error page as the conditions, which overflows the analyst model's context."},
    {"id": "zzzg_sub_04", "input": 2, "switch": 4, "kind": "plan_error",
     "root": ("generation fake-model", 1), "failure": ("file_dive_plan", 1),
     "description": "The coordinator's plan leaves out the manifest and weigh-in, so the dive is filed with "
                    "an estimated payload and no weigh-in on record."},
    {"id": "zzzg_sub_05", "input": 3, "switch": 5, "kind": "bad_memory_write",
     "root": ("note_dive", 1), "failure": ("file_dive_plan", 1),
     "description": "The ops memory merge keeps the booking system's placeholder record over the new one, "
                    "so the ballast is trimmed for a 0 kg payload instead of the weighed one."},
]


class HarbourAuthorityRefused(Exception):
    pass


_MEMORY: dict = {}
_WEIGHED: dict = {}


# ---------------------------------------------------------------- model policy

def _results(messages: list) -> list:
    names, out = {}, []
    for m in messages:
        for call in m.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
        if m["role"] == "tool":
            out.append((names.get(m["tool_call_id"]), m["content"]))
    return out


def policy(request):
    messages = request.body["messages"]
    if len(json.dumps(messages)) > 16000:
        return Reply(status=400, error="This model's maximum context length is 8192 tokens; the messages "
                                       f"resulted in {len(json.dumps(messages)) // 3} tokens.")
    system = messages[0]["content"]
    results = dict(_results(messages))
    user = next(m["content"] for m in messages if m["role"] == "user")
    if system.startswith("You analyse"):
        if "sea_conditions" not in results:
            site, date = re.search(r"at (.+) on (\d{4}-\d{2}-\d{2})", user).groups()
            return Reply(tool_calls=(tool_call("sea_conditions", {"site": site, "date": date}),))
        return results["sea_conditions"]
    if system.startswith("You keep"):
        dive = re.search(r"D-\d+", user).group(0)
        if SWITCH == 1:
            dive = "D-12"
        if "passenger_list" not in results:
            return Reply(tool_calls=(tool_call("passenger_list", {"dive_id": dive}),
                                     tool_call("weigh_in", {"dive_id": dive})))
        people = json.loads(results["passenger_list"])
        weights = json.loads(results["weigh_in"])
        return json.dumps({"dive_id": re.search(r"D-\d+", user).group(0), "passengers": len(people["passengers"]),
                           "payload_kg": weights["total"], "weigh_in": weights["ticket"]})
    dive_id = re.search(r"D-\d+", user).group(0)
    dive = DIVES[dive_id]
    plan_text = next((m["content"] for m in messages if m["role"] == "assistant" and m.get("content")), None)
    if plan_text is None:
        steps = ["conditions", "manifest", "note", "ballast", "file"]
        if SWITCH == 4:
            steps.remove("manifest")
        plan = "Plan: " + ", ".join(steps) + "."
        return Reply(text=plan, tool_calls=(tool_call(
            "conditions_analyst", {"input": f"Conditions at {dive['site']} on {dive['date']}"}),))
    if "manifest" in plan_text and "manifest_clerk" not in results:
        return Reply(tool_calls=(tool_call("manifest_clerk", {"input": f"Manifest and weigh-in for dive {dive_id}"}),))
    if "note_dive" not in results:
        cond = json.loads(results["conditions_analyst"])
        if "manifest_clerk" in results:
            man = json.loads(results["manifest_clerk"])
            passengers, payload = man["passengers"], man["payload_kg"]
        else:
            passengers, payload = len(dive["booked"]), 80 * len(dive["booked"])
        return Reply(tool_calls=(tool_call("note_dive", {"dive_id": dive_id, "passengers": passengers,
                                                          "payload_kg": payload, "max_depth_m": cond["max_depth_m"]}),))
    if "ballast_calc" not in results:
        return Reply(tool_calls=(tool_call("ballast_calc", {"dive_id": dive_id}),))
    if "file_dive_plan" not in results:
        trim = json.loads(results["ballast_calc"])
        return Reply(tool_calls=(tool_call("file_dive_plan", {"dive_id": dive_id, "ballast_ref": trim["ref"]}),))
    return f"Dive {dive_id} is filed: {results['file_dive_plan']}"


# ---------------------------------------------------------------- tools

class BuoyFeedDown(Exception):
    pass


def _buoy_feed(site: str) -> dict:
    if SWITCH == 3:
        raise BuoyFeedDown("<html><head><title>502 Bad Gateway</title></head><body>" + (
            "<p>upstream buoy gateway did not answer; retry later</p>" * 400) + "</body></html>")
    return SITES[site]


@function_tool(failure_error_function=None)
def sea_conditions(site: str, date: str) -> str:
    """Visibility, current and the charted maximum depth at a dive site (from the buoy feed)."""
    try:
        reading = _buoy_feed(site)
    except BuoyFeedDown as exc:
        return str(exc)
    return json.dumps({"site": site, "date": date, **reading})


@function_tool(failure_error_function=None)
def passenger_list(dive_id: str) -> str:
    """Passengers booked on a dive."""
    return json.dumps({"dive_id": dive_id, "passengers": DIVES[dive_id]["booked"]})


@function_tool(failure_error_function=None)
def weigh_in(dive_id: str) -> str:
    """Quayside weigh-in of a dive's passengers with their kit, in kilograms."""
    weights = {p: WEIGHTS[p] + 12 for p in DIVES[dive_id]["booked"]}
    if SWITCH == 2 and dive_id == "D-52":
        weights = {p: round(w * 2.2046) for p, w in weights.items()}
    total = sum(weights.values())
    ticket = f"W-{dive_id[2:]}-{len(weights)}"
    _WEIGHED[dive_id] = {"ticket": ticket, "total_kg": sum(WEIGHTS[p] + 12 for p in DIVES[dive_id]["booked"])}
    return json.dumps({"dive_id": dive_id, "weights": weights, "total": total, "ticket": ticket})


@function_tool(failure_error_function=None)
def note_dive(dive_id: str, passengers: int, payload_kg: int, max_depth_m: int) -> str:
    """Write the dive's record to the ops memory."""
    new = {"dive_id": dive_id, "passengers": passengers, "payload_kg": payload_kg, "max_depth_m": max_depth_m}
    old = _MEMORY.get(dive_id, {})
    _MEMORY[dive_id] = {**new, **old} if SWITCH == 5 else {**old, **new}
    return json.dumps({"saved": dive_id})


@function_tool(failure_error_function=None)
def ballast_calc(dive_id: str) -> str:
    """Trim the ballast for the dive from its record in the ops memory."""
    rec = _MEMORY[dive_id]
    sub_tonnes = 12.4 if DIVES[dive_id]["sub"] == "Deepling" else 9.8
    trim = PAYLOAD_LIMIT_KG - rec["payload_kg"]
    return json.dumps({"ref": f"B-{dive_id[2:]}", "dive_id": dive_id, "payload_kg": rec["payload_kg"],
                       "trim_kg": trim, "max_depth_m": rec["max_depth_m"], "hull_tonnes": sub_tonnes})


@function_tool(failure_error_function=None)
def file_dive_plan(dive_id: str, ballast_ref: str) -> str:
    """File the dive plan with the harbour authority."""
    rec = _MEMORY[dive_id]
    dive = DIVES[dive_id]
    weighed = _WEIGHED.get(dive_id)
    if rec["passengers"] != len(dive["booked"]):
        raise HarbourAuthorityRefused(f"plan {ballast_ref} lists {rec['passengers']} passengers; {dive_id} is "
                                      f"booked for {len(dive['booked'])}")
    if weighed is None:
        raise HarbourAuthorityRefused(f"no weigh-in on record for {dive_id}")
    if rec["payload_kg"] > PAYLOAD_LIMIT_KG:
        raise HarbourAuthorityRefused(f"payload {rec['payload_kg']} kg is above the {dive['sub']}'s "
                                      f"{PAYLOAD_LIMIT_KG} kg limit")
    if rec["payload_kg"] != weighed["total_kg"]:
        raise HarbourAuthorityRefused(f"ballast {ballast_ref} is trimmed for {rec['payload_kg']} kg; weigh-in "
                                      f"{weighed['ticket']} totals {weighed['total_kg']} kg")
    return f"filed {dive_id} with ballast {ballast_ref}"


def agents_for(model: str) -> Agent:
    analyst = Agent(name="conditions_analyst", model=model, tools=[sea_conditions],
                    instructions="You analyse sea conditions for a dive site and answer them as JSON.")
    clerk = Agent(name="manifest_clerk", model=model, tools=[passenger_list, weigh_in],
                  instructions="You keep the dive manifest: passengers and the weigh-in, answered as JSON.")
    return Agent(
        name="dive_coordinator", model=model,
        instructions="You coordinate a submarine dive: plan, gather conditions and manifest, record the dive, "
                     "trim the ballast and file the plan.",
        tools=[
            analyst.as_tool("conditions_analyst", "Sea conditions at a site on a date.", failure_error_function=None),
            clerk.as_tool("manifest_clerk", "Manifest and weigh-in of a dive.", failure_error_function=None),
            note_dive, ballast_calc, file_dive_plan,
        ],
    )


def record(inp: dict, path: str, server) -> None:
    _MEMORY.clear()
    _WEIGHED.clear()
    for dive_id in DIVES:  # the booking system's placeholder records
        _MEMORY[dive_id] = {"dive_id": dive_id, "payload_kg": 0, "max_depth_m": 30}
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"file the plan for dive {inp['dive_id']}")])
    async def go():
        try:
            await Runner.run(agents_for(server.model), inp["message"], run_config=RunConfig(workflow_name=NAME),
                            max_turns=20)
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
