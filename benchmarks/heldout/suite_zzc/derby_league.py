"""Roller derby league: triage hand-off, roster and insurance loop, lineup memory, venue slot, bout publish (openai_agents)."""

from __future__ import annotations

import json
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, brain, last_user, tool_results
from .kit import active

NAME = "derby-bout-scheduler"
ROUTE = "openai_agents"
DOMAIN = "roller derby league"
SHAPE = "league triage hands off to a bout desk: rosters, per-skater insurance loop, lineup memory, venue slot, publish"

TEAMS = {
    "Mill City Rollers": ["#12 Hex", "#77 Nova", "#3 Brick"],
    "Harbour Hellcats": ["#9 Vex", "#21 Tally", "#44 Moss"],
    "Quarry Queens": ["#5 Flint", "#18 Opal"],
    "Ridge Wreckers": ["#2 Sable", "#66 Juno"],
    "Canal Crushers": ["#8 Wren", "#31 Pike"],
    "Foundry Furies": ["#14 Ember", "#90 Rook"],
}
LAPSED = {"#21 Tally"}
INPUTS = {
    "mh": {"home": "Mill City Rollers", "away": "Harbour Hellcats", "date": "2027-01-16", "type": "sanctioned"},
    "qr": {"home": "Quarry Queens", "away": "Ridge Wreckers", "date": "2027-01-23", "type": "sanctioned"},
    "r1": {"home": "Canal Crushers", "away": "Foundry Furies", "date": "2027-01-30", "type": "sanctioned"},
    "r2": {"home": "Ridge Wreckers", "away": "Canal Crushers", "date": "2027-02-06", "type": "sanctioned"},
    "r3": {"home": "Foundry Furies", "away": "Quarry Queens", "date": "2027-02-13", "type": "sanctioned"},
    "r4": {"home": "Quarry Queens", "away": "Canal Crushers", "date": "2027-02-20", "type": "sanctioned"},
}
REFS = ["r1", "r2", "r3", "r4"]

CASES = [
    Case("derby_away_roster_skipped", "dl1", "plan_error", "qr", ("generation fake-model", 5, "llm"),
         ("publish_bout", 1),
         "The bout desk plans insurance checks for the home roster only, so the away skaters are never cleared."),
    Case("derby_handoff_scrimmage", "dl2", "wrong_routing", "mh", ("generation fake-model", 1, "llm"),
         ("publish_bout", 1),
         "League triage hands a sanctioned bout to the scrimmage desk, which publishes it as an unranked scrimmage."),
    Case("derby_venue_clock", "dl3", "format_drift", "qr", ("get_venue_slot", 1, "tool"),
         ("publish_bout", 1),
         "The venue system answers the doors time as '6pm' instead of 24-hour time, which the publish API rejects."),
    Case("derby_lineup_saved_short", "dl4", "bad_memory_write", "mh", ("save_lineup", 1, "tool"),
         ("publish_bout", 1),
         "save_lineup keeps the home lineup without its last skater, so the published charter misses a cleared skater."),
    Case("derby_insurance_timeout", "dl5", "swallowed_error", "mh", ("check_insurance", 5, "tool"),
         ("publish_bout", 1),
         "The insurance check times out for a lapsed skater and the tool answers 'active' instead of reporting it."),
]

_memory: dict = {}


def _desk_brain(body: dict, desk_type: str):
    done = tool_results(body)
    names = [n for n, _ in done]
    req = json.loads(last_user(body))
    if "get_rosters" not in names:
        return Reply(tool_calls=(tool_call("get_rosters", {"home": req["home"], "away": req["away"]}),))
    rosters = json.loads(dict(done)["get_rosters"])
    skaters = rosters["home"] + rosters["away"]
    if active("dl1"):
        skaters = rosters["home"]
    checked = [json.loads(c) for n, c in done if n == "check_insurance"]
    if len(checked) < len(skaters):
        return Reply(tool_calls=(tool_call("check_insurance", {"skater": skaters[len(checked)]}),))
    cleared = [c["skater"] for c in checked if c["status"] == "active"]
    if "save_lineup" not in names:
        return Reply(tool_calls=(tool_call("save_lineup", {"bout": req["date"], "skaters": cleared}),))
    if "get_venue_slot" not in names:
        return Reply(tool_calls=(tool_call("get_venue_slot", {"date": req["date"]}),))
    if "publish_bout" not in names:
        slot = json.loads(dict(done)["get_venue_slot"])
        return Reply(tool_calls=(tool_call("publish_bout", {"bout_json": json.dumps({
            "home": req["home"], "away": req["away"], "date": req["date"], "type": desk_type,
            "doors": slot["doors"], "checked": [c["skater"] for c in checked]})}),))
    return "Bout published."


@brain("derby-triage")
def _triage(body: dict):
    target = "transfer_to_bout_desk"
    if active("dl2"):
        target = "transfer_to_scrimmage_desk"
    if not tool_results(body):
        return Reply(tool_calls=(tool_call(target, {}),))
    return "Handed over."


@brain("derby-bout")
def _bout(body: dict):
    return _desk_brain(body, "sanctioned")


@brain("derby-scrim")
def _scrim(body: dict):
    return _desk_brain(body, "scrimmage")


def last_user_json(body):
    return json.loads(last_user(body))


@function_tool
def get_rosters(home: str, away: str) -> str:
    """Charter rosters of both teams."""
    return json.dumps({"home": TEAMS[home], "away": TEAMS[away]})


@function_tool
def check_insurance(skater: str) -> str:
    """Check a skater's league insurance status."""
    status = "lapsed" if skater in LAPSED else "active"
    if skater in LAPSED and active("dl5"):
        try:
            raise TimeoutError("insurer API timed out")
        except TimeoutError:
            status = "active"
    return json.dumps({"skater": skater, "status": status})


@function_tool
def save_lineup(bout: str, skaters: list[str]) -> str:
    """Save the cleared lineup to league memory."""
    kept = list(skaters)
    if active("dl4"):
        kept = kept[:2] + kept[3:]
    _memory[bout] = kept
    return json.dumps({"bout": bout, "saved": len(kept)})


@function_tool
def get_venue_slot(date: str) -> str:
    """Venue booking for the bout date."""
    doors = "18:00"
    if active("dl3"):
        doors = "6pm"
    return json.dumps({"date": date, "venue": "Eastgate Sports Hall", "doors": doors})


@function_tool(failure_error_function=None)
def publish_bout(bout_json: str) -> str:
    """Publish the bout to the league calendar and the rankings body."""
    b = json.loads(bout_json)
    errs = []
    if b["type"] != "sanctioned":
        errs.append(f"bout {b['home']} v {b['away']} on {b['date']} is listed as sanctioned but filed as {b['type']}")
    expected = TEAMS[b["home"]] + TEAMS[b["away"]]
    missing = [s for s in expected if s not in b["checked"]]
    if missing:
        errs.append(f"no insurance clearance for {missing}")
    lapsed = [s for s in b["checked"] if s in LAPSED and s in _memory.get(b["date"], [])]
    if lapsed:
        errs.append(f"skater {lapsed} on charter has lapsed insurance (policy expired 2026-11-30)")
    should = [s for s in expected if s not in LAPSED]
    if sorted(_memory.get(b["date"], [])) != sorted(should):
        errs.append(f"charter {_memory.get(b['date'])} does not match cleared skaters {should}")
    if len(b["doors"]) != 5 or b["doors"][2] != ":":
        errs.append(f"doors '{b['doors']}' is not HH:MM")
    if errs:
        raise ValueError("rankings API 400: " + "; ".join(errs))
    return json.dumps({"bout": f"B-{b['date']}", "published": True})


def record(inp: dict, path: Path, server) -> None:
    _memory.clear()
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="fake-model", openai_client=client)
    tools = [get_rosters, check_insurance, save_lineup, get_venue_slot, publish_bout]
    bout = Agent(name="bout_desk", model=model, tools=tools,
                 instructions="[agent:derby-bout] You schedule sanctioned bouts.")
    scrim = Agent(name="scrimmage_desk", model=model, tools=tools,
                  instructions="[agent:derby-scrim] You schedule scrimmages.")
    triage = Agent(name="league_triage", model=model, handoffs=[bout, scrim],
                   instructions="[agent:derby-triage] Route bout requests to the right desk.")
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=f"schedule {inp['home']} v {inp['away']}")
    set_trace_processors([proc])
    try:
        Runner.run_sync(triage, json.dumps(inp), run_config=RunConfig(workflow_name=NAME), max_turns=30)
    except Exception as exc:  # noqa: BLE001
        if "rankings API" not in str(exc):
            raise
