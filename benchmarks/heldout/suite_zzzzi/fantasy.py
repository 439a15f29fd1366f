"""Fantasy football league: the commissioner's desk takes a trade request, hands it to the trade reviewer,
which reads rosters and players, has a valuation analyst sub-agent value the deal, and executes it on the
league platform (route: openai_agents)."""

from __future__ import annotations

import json

from agents import Agent, function_tool

from _sdkagents import calls_and_results, first_user, model_for, run_recorded
from trajdebug.testing import Reply, tool_call

NAME = "fantasy-trade-desk"
ROUTE = "openai_agents"
SWITCH = None
ROSTER_MAX = 15
WEEK = 9

PLAYERS = {
    "J. Williams (RB, DEN)": {"salary": 14.5, "value": 61, "status": "active"},
    "J. Williams (WR, DET)": {"salary": 31.0, "value": 88, "status": "active"},
    "T. Hill (WR, MIA)": {"salary": 33.5, "value": 90, "status": "active"},
    "D. Henry (RB, BAL)": {"salary": 29.0, "value": 86, "status": "active"},
    "S. Barkley (RB, PHI)": {"salary": 32.0, "value": 91, "status": "active"},
    "G. Kittle (TE, SF)": {"salary": 18.5, "value": 72, "status": "active"},
    "M. Evans (WR, TB)": {"salary": 24.0, "value": 79, "status": "questionable"},
    "K. Walker (RB, SEA)": {"salary": 21.0, "value": 75, "status": "active"},
    "C. Olave (WR, NO)": {"salary": 17.0, "value": 70, "status": "active"},
    "B. Bowers (TE, LV)": {"salary": 16.0, "value": 68, "status": "active"},
}
ROSTERS = {  # team -> (players at week 1, players now)
    "Gridiron Goats": (13, 14), "Waiver Wire Wizards": (13, 14), "Touchdown Tacos": (13, 13),
    "Blitz Brigade": (12, 14), "Red Zone Rascals": (14, 14), "Fourth and Long": (13, 13),
}
FEED_ERRORS = {"M. Evans (WR, TB)"}  # the primary injury feed has no row for him this week

INPUTS = [
    {"task": "trade: Gridiron Goats send T. Hill for D. Henry from Touchdown Tacos", "a": "Gridiron Goats",
     "b": "Touchdown Tacos", "a_gives": ["T. Hill (WR, MIA)"], "b_gives": ["D. Henry (RB, BAL)"]},
    {"task": "trade: Blitz Brigade send G. Kittle and C. Olave for J. Williams (WR) from Waiver Wire Wizards",
     "a": "Blitz Brigade", "b": "Waiver Wire Wizards", "a_gives": ["G. Kittle (TE, SF)", "C. Olave (WR, NO)"],
     "b_gives": ["J. Williams (WR, DET)"]},
    {"task": "trade: Red Zone Rascals send S. Barkley for J. Williams (WR) from Fourth and Long",
     "a": "Red Zone Rascals", "b": "Fourth and Long", "a_gives": ["S. Barkley (RB, PHI)"],
     "b_gives": ["J. Williams (WR, DET)"]},
    {"task": "trade: Fourth and Long send K. Walker for M. Evans from Touchdown Tacos", "a": "Fourth and Long",
     "b": "Touchdown Tacos", "a_gives": ["K. Walker (RB, SEA)"], "b_gives": ["M. Evans (WR, TB)"]},
    {"task": "trade: Touchdown Tacos send B. Bowers for C. Olave from Gridiron Goats", "a": "Touchdown Tacos",
     "b": "Gridiron Goats", "a_gives": ["B. Bowers (TE, LV)"], "b_gives": ["C. Olave (WR, NO)"]},
]

CASES = [
    {"id": "fantasy_to_waivers", "input": 4, "switch": "to_waivers", "fault_kind": "wrong_routing",
     "root": ("generation fake-model", 1, "llm"), "failure": ("submit_waiver_claim", 1),
     "description": "the commissioner's desk hands the Bowers-for-Olave trade to the waiver clerk, which files "
                    "a waiver claim for a player on another team's roster and is refused"},
    {"id": "fantasy_roster_week_one", "input": 1, "switch": "roster_week_one", "fault_kind": "tool_ignores_argument",
     "root": ("get_roster", 2, "tool"), "failure": ("execute_trade", 1),
     "description": "the roster service ignores the week and answers Waiver Wire Wizards' week-1 roster of 13, "
                    "so the 2-for-1 is declared as leaving 14 players and the platform counts 15"},
    {"id": "fantasy_analyst_namesake", "input": 2, "switch": "analyst_namesake", "fault_kind": "subagent_wrong_entity",
     "root": ("valuation_analyst", 1, "agent"), "failure": ("execute_trade", 1),
     "description": "the valuation analyst values J. Williams the Denver running back instead of the Detroit "
                    "receiver in the deal, and the platform rejects the declared value gap"},
    {"id": "fantasy_skip_valuation", "input": 0, "switch": "skip_valuation", "fault_kind": "plan_error",
     "root": ("generation fake-model", 3, "llm"), "failure": ("execute_trade", 1),
     "description": "the trade reviewer plans to execute right after reading rosters and players, skipping "
                    "the valuation the league requires, and the platform refuses a trade without one"},
    {"id": "fantasy_feed_default", "input": 3, "switch": "feed_default", "fault_kind": "swallowed_error",
     "root": ("get_player", 2, "tool"), "failure": ("execute_trade", 1),
     "description": "the player lookup hides the injury feed's missing row behind a default record with a "
                    "zero salary, and the platform's salary ledger disagrees with the declared amount"},
]


@function_tool
def get_roster(team: str, week: int) -> dict:
    """A team's roster size at a given week of the season."""
    then, now = ROSTERS[team]
    size = then if (SWITCH == "roster_week_one" and team == "Waiver Wire Wizards") else (then if week == 1 else now)
    return {"team": team, "week": week, "players": size, "max": ROSTER_MAX}


@function_tool
def get_player(player: str) -> dict:
    """Salary (in $M), status and bye week of a player, from the league's injury and salary feed."""
    try:
        if player in FEED_ERRORS:
            raise LookupError(player)
        row = PLAYERS[player]
    except LookupError:
        if SWITCH == "feed_default":
            return {"player": player, "salary": 0.0, "status": "active", "source": "default"}
        row = PLAYERS[player]  # the secondary feed
    return {"player": player, "salary": row["salary"], "status": row["status"], "source": "league feed"}


@function_tool
def player_value(player: str) -> dict:
    """Rest-of-season trade value of a player (0-100)."""
    return {"player": player, "value": PLAYERS[player]["value"]}


@function_tool(failure_error_function=None)
def execute_trade(team_a: str, team_b: str, a_gives: list[str], b_gives: list[str], valuation_id: str,
                  value_gap: int, roster_after_b: int, salary_in_a: float) -> str:
    """Execute a trade on the league platform."""
    if not valuation_id:
        raise ValueError("league platform: trade needs a valuation reference (league rule 7.2)")
    real_b = ROSTERS[team_b][1] + len(a_gives) - len(b_gives)
    if real_b > ROSTER_MAX:
        raise ValueError(f"league platform: {team_b} would hold {real_b} players (limit {ROSTER_MAX})")
    if real_b != roster_after_b:
        raise ValueError(f"league platform: {team_b} roster after the trade declared as {roster_after_b}; "
                         f"platform counts {real_b}")
    ledger = round(sum(PLAYERS[p]["salary"] for p in b_gives), 1)
    if abs(ledger - salary_in_a) > 0.05:
        raise ValueError(f"league platform: {team_a} declared incoming salary ${salary_in_a}M; ledger says ${ledger}M")
    real_gap = abs(sum(PLAYERS[p]["value"] for p in a_gives) - sum(PLAYERS[p]["value"] for p in b_gives))
    if real_gap != value_gap:
        raise ValueError(f"league platform: declared value gap {value_gap}; platform values give {real_gap}")
    return f"trade executed: {team_a} <-> {team_b}"


@function_tool
def get_waiver_order(team: str) -> dict:
    """A team's position in this week's waiver order."""
    return {"team": team, "week": WEEK, "position": sorted(ROSTERS).index(team) + 1, "teams": len(ROSTERS)}


@function_tool(failure_error_function=None)
def submit_waiver_claim(team: str, player: str) -> str:
    """File a waiver claim for a free agent."""
    raise ValueError(f"league platform: {player} is on a roster, not on waivers; claim by {team} refused")


def _deal(request):
    return json.loads(first_user(request))


def brain(request):
    system = next((m["content"] for m in request.body.get("messages") or [] if m.get("role") == "system"), "")
    done = calls_and_results(request)
    got = {}
    for name, args, value in done:
        got.setdefault(name, []).append((args, value))
    if "commissioner" in system:
        deal = _deal(request)
        target = "transfer_to_waiver_clerk" if SWITCH == "to_waivers" else "transfer_to_trade_reviewer"
        return Reply(tool_calls=(tool_call(target, {}),))
    if "waiver clerk" in system:
        deal = _deal(request)
        if "get_waiver_order" not in got:
            return Reply(tool_calls=(tool_call("get_waiver_order", {"team": deal["a"]}),))
        return Reply(tool_calls=(tool_call("submit_waiver_claim", {"team": deal["a"], "player": deal["b_gives"][0]}),))
    if "valuation analyst" in system:
        ask = json.loads(first_user(request))
        if "player_value" not in got:
            names = []
            for p in ask["a_gives"] + ask["b_gives"]:
                if SWITCH == "analyst_namesake" and p.startswith("J. Williams"):
                    p = "J. Williams (RB, DEN)"
                names.append(p)
            return Reply(tool_calls=tuple(tool_call("player_value", {"player": p}) for p in names))
        vals = [v["value"] for _, v in got["player_value"]]
        n = len(ask["a_gives"])
        return json.dumps({"valuation_id": f"VAL-{sum(vals) * 7:05d}", "a_value": sum(vals[:n]),
                           "b_value": sum(vals[n:]), "gap": abs(sum(vals[:n]) - sum(vals[n:]))})
    if "trade reviewer" in system:
        deal = _deal(request)
        if "get_roster" not in got:
            calls = [tool_call("get_roster", {"team": deal["a"], "week": WEEK}),
                     tool_call("get_roster", {"team": deal["b"], "week": WEEK})]
            calls += [tool_call("get_player", {"player": p}) for p in deal["a_gives"] + deal["b_gives"]]
            return Reply(tool_calls=tuple(calls))
        rosters = {v["team"]: v for _, v in got["get_roster"]}
        players = {v["player"]: v for _, v in got["get_player"]}
        if "value_trade" not in got and SWITCH != "skip_valuation":
            return Reply(tool_calls=(tool_call("value_trade", {"input": json.dumps(
                {"a_gives": deal["a_gives"], "b_gives": deal["b_gives"]})}),))
        if "execute_trade" not in got:
            val = got["value_trade"][0][1] if "value_trade" in got else {"valuation_id": "", "gap": 0}
            val = json.loads(val) if isinstance(val, str) else val
            return Reply(tool_calls=(tool_call("execute_trade", {
                "team_a": deal["a"], "team_b": deal["b"], "a_gives": deal["a_gives"], "b_gives": deal["b_gives"],
                "valuation_id": val["valuation_id"], "value_gap": val["gap"],
                "roster_after_b": rosters[deal["b"]]["players"] + len(deal["a_gives"]) - len(deal["b_gives"]),
                "salary_in_a": round(sum(players[p]["salary"] for p in deal["b_gives"]), 1)}),))
        return f"Done: {got['execute_trade'][0][1]}"
    return "Noted."


def record(inp: dict, out: str, client, model: str) -> None:
    m = model_for(client, model)
    analyst = Agent(name="valuation_analyst", model=m, tools=[player_value],
                    instructions="You are the valuation analyst. Value each player in the deal; answer JSON: "
                                 "valuation_id, a_value, b_value, gap.")
    reviewer = Agent(name="trade_reviewer", model=m,
                     instructions="You are the trade reviewer. Read both rosters and every player, have the deal "
                                  "valued, then execute the trade.",
                     tools=[get_roster, get_player, analyst.as_tool("value_trade", "Value a proposed trade."),
                            execute_trade])
    clerk = Agent(name="waiver_clerk", model=m, tools=[get_waiver_order, submit_waiver_claim],
                  instructions="You are the waiver clerk. File waiver claims for free agents.")
    desk = Agent(name="commissioner_desk", model=m, handoffs=[reviewer, clerk],
                 instructions="You are the commissioner's desk. Send trades to the trade reviewer and waiver "
                              "claims to the waiver clerk.")
    deal = {k: inp[k] for k in ("a", "b", "a_gives", "b_gives")}
    run_recorded(desk, json.dumps(deal), out, NAME, inp["task"])
