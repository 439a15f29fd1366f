"""Gamelan ensemble rehearsals: a front-desk agent hands off to a rehearsal scheduler (or a performance desk);
the scheduler makes parallel roster and hall calls, asks a tuning sub-agent run as a tool, then books (openai_agents)."""
from __future__ import annotations

import asyncio
import json

from agents import (Agent, ModelSettings, RunConfig, Runner, function_tool, set_default_openai_api,
                    set_default_openai_client, set_tracing_disabled)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "gamelan-rehearsal-desk"
ROUTE = "openai_agents"
DOMAIN = "gamelan ensemble's rehearsals"
SHAPE = "Agents SDK: front desk agent with two hand-offs; scheduler agent with parallel tool calls (two roster sections, hall), a tuning sub-agent used as a tool (its own model calls and tool), a booking tool that checks the booking"
SWITCH = None

ROSTER = {
    "gangsa": ["Wayan Arta", "Nyoman Sari", "Ketut Dana", "Putu Ayu"],
    "kendang": ["Made Gede", "Komang Rai"],
    "gong": ["Ketut Lila"],
}
LAST_SEASON = {"gangsa": ["Wayan Arta", "Nyoman Sari", "Made Sutama", "Putu Ayu"]}
NEEDED = {"gangsa": 4, "kendang": 2, "gong": 1}
HALLS_TAKEN = {("Balai Banjar", "2027-02-09"), ("Balai Banjar", "2027-03-02")}
TUNED = {"slendro": "2027-01-20", "pelog": "2027-01-28"}

INPUTS = [
    {"request": "Book a full rehearsal of the slendro set on 2027-02-09 for gangsa and kendang.", "date": "2027-02-09", "set": "slendro", "sections": ["gangsa", "kendang"]},
    {"request": "Book a rehearsal of the pelog set on 2027-02-16 for gangsa and gong.", "date": "2027-02-16", "set": "pelog", "sections": ["gangsa", "gong"]},
    {"request": "Book a rehearsal of the pelog set on 2027-03-02 for kendang and gong.", "date": "2027-03-02", "set": "pelog", "sections": ["kendang", "gong"]},
    {"request": "Book a full rehearsal of the slendro set on 2027-02-23 for gangsa and gong.", "date": "2027-02-23", "set": "slendro", "sections": ["gangsa", "gong"]},
    {"request": "Book a rehearsal of the slendro set on 2027-03-09 for kendang and gangsa.", "date": "2027-03-09", "set": "slendro", "sections": ["kendang", "gangsa"]},
]

CASES = [
    {"id": "zzzh-gamelan-01", "input": 3, "switch": "handoff", "fault_kind": "wrong_routing",
     "root": "generation fake-model", "root_occurrence": 1, "failure": "book_performance",
     "description": "The front desk's model handed a rehearsal request to the performance desk, which tried to book a concert date with no contract."},
    {"id": "zzzh-gamelan-02", "input": 1, "switch": "roster", "fault_kind": "stale_data",
     "root": "list_players", "root_occurrence": 1, "failure": "book_rehearsal",
     "description": "The gangsa roster came from last season's list and still named Made Sutama, who has left the ensemble."},
    {"id": "zzzh-gamelan-03", "input": 0, "switch": "set", "fault_kind": "subagent_wrong_entity",
     "root": "generation fake-model", "root_occurrence": 4, "failure": "book_rehearsal",
     "description": "The tuning sub-agent inspected the pelog set when asked about the slendro set, so the booking carried a tuning check of the other set."},
    {"id": "zzzh-gamelan-04", "input": 2, "switch": "hall", "fault_kind": "tool_ignores_argument",
     "root": "check_hall", "root_occurrence": 1, "failure": "book_rehearsal",
     "description": "The hall lookup ignored the date 2027-03-02 and answered today's availability, reporting Balai Banjar free on a day it is taken."},
    {"id": "zzzh-gamelan-05", "input": 4, "switch": "slice", "fault_kind": "off_by_one",
     "root": "list_players", "root_occurrence": 1, "failure": "book_rehearsal",
     "description": "The roster lookup for the kendang section started its list at the second player, returning only Komang Rai."},
]


@function_tool
def list_players(section: str) -> str:
    """Current players of one section of the ensemble."""
    players = list(ROSTER[section])
    if SWITCH == "roster" and section in LAST_SEASON:
        players = list(LAST_SEASON[section])
    if SWITCH == "slice" and section == "kendang":
        players = players[1:]
    return json.dumps({"section": section, "players": players})


@function_tool
def check_hall(date: str) -> str:
    """Which hall is free on a date."""
    asked = "2026-12-06" if SWITCH == "hall" else date
    hall = "Balai Banjar" if ("Balai Banjar", asked) not in HALLS_TAKEN else "Pura Dalem pavilion"
    return json.dumps({"date": date, "hall": hall})


@function_tool
def inspect_set(set_name: str) -> str:
    """The last tuning check of an instrument set."""
    return json.dumps({"set": set_name, "checked": TUNED[set_name], "in_tune": True})


@function_tool(failure_error_function=None)
def book_rehearsal(date: str, hall: str, set_name: str, checked_set: str, players: list[str]) -> str:
    """Book the hall and notify the players."""
    current = {p for ps in ROSTER.values() for p in ps}
    for p in players:
        if p not in current:
            raise ValueError(f"{p} is not on the current roster")
    for section, n in NEEDED.items():
        have = [p for p in players if p in ROSTER[section]]
        if have and len(have) < n:
            raise ValueError(f"the {section} section needs {n} players, {len(have)} listed: {have}")
    if (hall, date) in HALLS_TAKEN:
        raise ValueError(f"{hall} is taken on {date}")
    if checked_set != set_name:
        raise ValueError(f"the {set_name} set has no tuning check before {date} (checked: {checked_set})")
    return json.dumps({"booking": f"R-{date}", "hall": hall, "players": len(players)})


@function_tool(failure_error_function=None)
def book_performance(date: str, programme: str) -> str:
    """Book a public performance."""
    raise ValueError(f"no performance contract is signed for {date}")


def _tool_results(msgs):
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            out.append(json.loads(m["content"]) if m["content"].startswith("{") else {"text": m["content"]})
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    results = _tool_results(msgs)
    if system.startswith("You check tuning"):
        wanted = user.split("set: ")[-1].strip()
        if not results:
            if SWITCH == "set":
                wanted = "pelog" if wanted == "slendro" else "slendro"
            return Reply(tool_calls=(tool_call("inspect_set", {"set_name": wanted}),))
        r = results[-1]
        return f"set: {r['set']}; checked {r['checked']}; in tune"
    req = next(i for i in INPUTS if i["request"] == user)
    if system.startswith("You are the front desk"):
        target = "transfer_to_performance_desk" if SWITCH == "handoff" else "transfer_to_rehearsal_scheduler"
        return Reply(tool_calls=(tool_call(target, {}),))
    called = [c["function"]["name"] for m in msgs if m["role"] == "assistant" for c in (m.get("tool_calls") or [])]
    if system.startswith("You book concerts"):
        if "book_performance" not in called:
            return Reply(tool_calls=(tool_call("book_performance", {"date": req["date"], "programme": req["set"]}),))
        return "Booked."
    if system.startswith("You schedule rehearsals"):
        if "list_players" not in called:
            calls = tuple(tool_call("list_players", {"section": s}) for s in req["sections"])
            return Reply(tool_calls=calls + (tool_call("check_hall", {"date": req["date"]}),))
        if "tuning_checker" not in called:
            return Reply(tool_calls=(tool_call("tuning_checker", {"input": f"set: {req['set']}"}),))
        if "book_rehearsal" not in called:
            players = [p for r in results if isinstance(r.get("players"), list) for p in r["players"]]
            hall = next(r["hall"] for r in results if "hall" in r)
            checked = next(r["text"] for r in results if "text" in r).split(";")[0].split(": ")[1]
            return Reply(tool_calls=(tool_call("book_rehearsal", {"date": req["date"], "hall": hall, "set_name": req["set"],
                                                                 "checked_set": checked, "players": players}),))
        b = next(r for r in results if "booking" in r)
        return f"Rehearsal booked: {b['booking']} in {b['hall']} for {b['players']} players."
    return "I can only help with the ensemble's calendar."


def build(model):
    settings = ModelSettings(parallel_tool_calls=True)
    checker = Agent(name="tuning_checker", instructions="You check tuning of one instrument set with inspect_set.",
                    model=model, tools=[inspect_set])
    scheduler = Agent(name="rehearsal_scheduler", instructions="You schedule rehearsals: roster, hall, tuning, then book.",
                      model=model, model_settings=settings,
                      tools=[list_players, check_hall,
                             checker.as_tool(tool_name="tuning_checker", tool_description="Ask the tuning checker about a set."),
                             book_rehearsal])
    performance = Agent(name="performance_desk", instructions="You book concerts and public performances.",
                        model=model, tools=[book_performance])
    return Agent(name="front_desk", instructions="You are the front desk of the gamelan ensemble. Hand the request on.",
                 model=model, handoffs=[scheduler, performance])


async def _run(server, inp):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    try:
        return await Runner.run(build(server.model), inp["request"], run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()


def record(server, inp, path):
    set_tracing_disabled(False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["request"])])
    try:
        asyncio.run(_run(server, inp))
    finally:
        set_trace_processors([])
