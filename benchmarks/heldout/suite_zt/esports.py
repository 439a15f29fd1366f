"""Esports tournament: register a team into a bracket (OpenAI Agents SDK + trajdebug processor)."""
from __future__ import annotations

import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import Case, Reply, obj, last_user, policy, server, tool_call, tool_results
from .kit import active, planted

AGENT, ROUTE, DOMAIN = "esports-registrar", "openai_agents", "esports tournament"
SHAPE = "team -> roster -> eligibility sub-agent (as tool) -> division -> bracket -> seed -> submit registration"
MODEL = "zt-esports"

TEAMS = {
    "Nightjar": {"id": "T-410", "region": "NA", "rating": 1620, "players": ["P-41", "P-42", "P-43", "P-44", "P-45"]},
    "Copperline": {"id": "T-522", "region": "EU", "rating": 1710, "players": ["P-51", "P-52", "P-53", "P-54", "P-55"]},
    "Halcyon": {"id": "T-130", "region": "NA", "rating": 1480, "players": ["P-11", "P-12", "P-13", "P-14", "P-15"]},
    "Brightfang": {"id": "T-233", "region": "EU", "rating": 1550, "players": ["P-21", "P-22", "P-23", "P-24", "P-25"]},
    "Umbra": {"id": "T-344", "region": "NA", "rating": 1390, "players": ["P-31", "P-32", "P-33", "P-34", "P-35"]},
    "Kestrel": {"id": "T-655", "region": "EU", "rating": 1650, "players": ["P-61", "P-62", "P-63", "P-64", "P-65"]},
}
REFS = ["Halcyon", "Brightfang", "Umbra", "Kestrel"]
MAIN_SYS = "You register esports teams into the winter cup."
SUB_SYS = "You check player eligibility records."


def _out(msgs, i):
    return json.loads(tool_results(msgs)[i])


@policy(MODEL)
def _model(msgs):
    sys = msgs[0].get("content", "") if msgs else ""
    res = tool_results(msgs)
    if sys.startswith(SUB_SYS):
        players = json.loads(last_user(msgs))["players"]
        if not res:
            if active("esp_entity"):
                players = [p.replace("P-4", "P-1") for p in players]
            return Reply(tool_calls=tuple(tool_call("player_record", {"player": p}) for p in players))
        recs = [obj(r) for r in res]
        return json.dumps({"eligible": [r["player"] for r in recs if r["status"] == "active"], "attestation": "EA-" + str(len(recs))})
    team_name = last_user(msgs).split(":")[-1].strip()
    n = len(res)
    if n == 0:
        return Reply(tool_calls=(tool_call("lookup_team", {"name": team_name}),))
    team = obj(res[0])
    if n == 1:
        return Reply(tool_calls=(tool_call("get_roster", {"team_id": team["id"]}),))
    roster = obj(res[1])
    skip = active("esp_plan")
    if n == 2 and not skip:
        return Reply(tool_calls=(tool_call("eligibility_checker", {"input": json.dumps({"players": roster["players"]})}),))
    k = 2 if skip else 3
    elig = {"eligible": [], "attestation": None} if skip else obj(res[2])
    if n == k:
        return Reply(tool_calls=(tool_call("pick_division", {"rating": team["rating"]}),))
    if n == k + 1:
        region = team["region"]
        return Reply(tool_calls=(tool_call("get_bracket", {"division": obj(res[k])["division"], "region": region}),))
    bracket = obj(res[k + 1])
    if n == k + 2:
        return Reply(tool_calls=(tool_call("submit_registration", {
            "team_id": team["name"] if active("esp_args") else team["id"], "bracket_id": bracket["bracket_id"], "players": elig["eligible"],
            "attestation": elig["attestation"]}),))
    return "Registered."


@function_tool
def lookup_team(name: str) -> dict:
    """Find a team by name."""
    t = TEAMS[name]
    return {"id": t["id"], "name": name, "region": t["region"], "rating": t["rating"]}


def _team(team_id):
    return next(t for t in TEAMS.values() if t["id"] == team_id)


@function_tool
def get_roster(team_id: str) -> dict:
    """Return the team's registered roster."""
    players = _team(team_id)["players"]
    if active("esp_trunc"):
        players = players[:4]
    return {"team_id": team_id, "players": players}


@function_tool
def player_record(player: str) -> dict:
    """Look up one player's eligibility record."""
    return {"player": player, "status": "active", "bans": 0}


@function_tool
def pick_division(rating: int) -> dict:
    """Map a team rating to a division."""
    cap = 1500 if active("esp_route") else 1800
    return {"division": "open" if rating < cap else "pro", "rating": rating}


@function_tool
def get_bracket(division: str, region: str) -> dict:
    """Find the bracket for a division and region."""
    return {"bracket_id": f"WC-{region}-{division.upper()}", "slots_left": 6}


@function_tool(failure_error_function=None)
def submit_registration(team_id: str, bracket_id: str, players: list[str], attestation: str | None) -> dict:
    """Submit the registration to the tournament platform."""
    if not any(t["id"] == team_id for t in TEAMS.values()):
        raise LookupError(f"registration API 404: team_id {team_id!r} not found")
    t = _team(team_id)
    if not attestation:
        raise ValueError("registration API 400: eligibility attestation is required for every roster")
    if sorted(players) != sorted(t["players"]):
        raise ValueError(f"registration API 422: eligible players {players} do not match roster of {team_id}")
    want = "OPEN" if t["rating"] < 1800 else "PRO"
    if bracket_id != f"WC-{t['region']}-{want}":
        raise ValueError(f"registration API 409: {team_id} ({t['region']}, rating {t['rating']}) cannot enter {bracket_id}")
    return {"registration": f"REG-{team_id}", "bracket": bracket_id}


def _agents():
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=AsyncOpenAI(base_url=server().base_url, api_key="test", max_retries=0))
    checker = Agent(name="eligibility_agent", instructions=SUB_SYS, model=model, tools=[player_record])
    return Agent(name="registrar", instructions=MAIN_SYS, model=model, tools=[
        lookup_team, get_roster,
        checker.as_tool(tool_name="eligibility_checker", tool_description="Check roster eligibility."),
        pick_division, get_bracket, submit_registration])


def record(path, team: str, fault_id: str | None) -> None:
    proc = TrajdebugProcessor(path=str(path), name=AGENT, task=f"register team {team} for the winter cup")
    set_trace_processors([proc])
    with planted(fault_id):
        try:
            Runner.run_sync(_agents(), f"Register team: {team}", run_config=RunConfig(workflow_name=AGENT))
        except Exception:
            pass


CASES = [
    Case("zt_esports_1", "esp_entity", "subagent_wrong_entity", "Nightjar", "generation zt-esports", 4, "submit_registration", 1,
         "The eligibility sub-agent looks up players P-11..P-15 of another team instead of the roster it was given."),
    Case("zt_esports_2", "esp_args", "wrong_tool_args", "Nightjar", "generation zt-esports", 8, "submit_registration", 1,
         "The registrar submits the registration with the team's display name in the team_id argument."),
    Case("zt_esports_3", "esp_trunc", "truncated_result", "Copperline", "get_roster", 1, "submit_registration", 1,
         "The roster lookup returns only the first four of five players."),
    Case("zt_esports_4", "esp_plan", "plan_error", "Copperline", "generation zt-esports", 3, "submit_registration", 1,
         "The registrar's plan skips the eligibility check and goes straight to the division."),
    Case("zt_esports_5", "esp_route", "wrong_routing", "Nightjar", "pick_division", 1, "submit_registration", 1,
         "The division router sends a 1620-rated team to pro using a 1500 cap instead of 1800."),
]
