"""bowling-league-night: a bowling centre's league-night desk (OpenAI Agents SDK on Chat Completions, JSONL).

The league desk agent reads the roster, the desk notes and the lane status in parallel, asks the handicap
clerk (an agent run as a tool: a bowler-averages tool whose game window is traced as a custom span), holds
lanes for the night's matches and hands off to league scoring, which posts the handicaps and publishes the
lane sheet. A tournament desk agent runs bracket events.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

from ._common import Env, called, last_user, read_value, run_recorded_sdk, sdk_loop, system_text, tool_results

NAME = "bowling-league-night"
ROUTE = "openai_agents"
DOMAIN = "bowling centre: league night lanes and handicaps"
SHAPE = "Agents SDK (Chat Completions): desk agent with three parallel lookups, a handicap-clerk agent run as a tool (averages tool + custom span), lane-hold tool, hand-off to a scoring agent (post handicaps, publish sheet); a tournament agent also reachable by hand-off"

SWITCH: str | None = None


def _on(name: str) -> bool:
    return SWITCH == name


LEAGUES: dict[str, dict[str, Any]] = {
    "Thursday Mixed": {"teams": ["Alley Cats", "Ten Pin Ladies", "Pin Pals", "Gutter Gang", "Strike Force",
                                 "Lucky Strikes", "Spare Parts", "Kingpins", "Split Happens", "Rolling Thunder"]},
    "Monday Majors": {"teams": ["Strike Force", "Spare Parts", "Night Owls", "Lane Legends", "Hook Shots",
                                "The Pocket", "Dead Wood", "Full Rack"]},
    "Tuesday Trios": {"teams": ["Pin Pals", "Brooklyn Bunch", "Triple Threat", "Clean Frames", "Ball Hogs", "Turkey Trot"]},
    "Wednesday Seniors": {"teams": ["Silver Strikers", "Golden Oldies", "Steady Eddies", "Grand Slammers",
                                    "Wise Guys", "Vintage Rollers", "Old Timers", "Easy Spares"]},
    "Friday Fun": {"teams": ["Pinheads", "Bowl Movements", "Lane Rangers", "Split Ends", "Gutter Ball Gang", "Sparetime"]},
}

NIGHTS = {
    "Thursday Mixed": {"week": 9, "date": "2025-03-06"},
    "Monday Majors": {"week": 12, "date": "2025-03-10"},
    "Tuesday Trios": {"week": 5, "date": "2025-03-11"},
    "Wednesday Seniors": {"week": 7, "date": "2025-03-12"},
    "Friday Fun": {"week": 3, "date": "2025-03-14"},
}

DESK_NOTES = [
    {"league": "Thursday Mixed", "at": "2025-03-05", "text": "Alley Cats bowl on lanes 23-24 (wheelchair ramp)."},
    {"league": "Tuesday Trios", "at": "2025-03-04", "text": "Pin Pals bowl on lanes 23-24 (wheelchair ramp)."},
    {"league": "Monday Majors", "at": "2025-02-24", "text": "Night Owls prefer the quiet end; fine on any pair."},
    {"league": "Wednesday Seniors", "at": "2025-02-26", "text": "Start 13:30 sharp; coffee urn on lane 1 side."},
    {"league": "Friday Fun", "at": "2025-03-01", "text": "Bumpers available on request; music at 80%."},
]

OUT_OF_ORDER_MORNING = {"2025-03-06": [19], "2025-03-10": [], "2025-03-11": [7], "2025-03-12": [11], "2025-03-14": []}
OUT_OF_ORDER_LIVE = {"2025-03-06": [19], "2025-03-10": [], "2025-03-11": [7], "2025-03-12": [5, 11], "2025-03-14": []}
OUT_SINCE = {("2025-03-12", 5): "16:05 (pinsetter jam)"}

BRACKETS = {"Trios Cup roll-off": "2025-03-25", "Spring Scratch Doubles": "2025-04-05"}

INPUTS: list[dict[str, Any]] = [
    {"request_id": "LN-0306", "league": "Thursday Mixed"},
    {"request_id": "LN-0310", "league": "Monday Majors"},
    {"request_id": "LN-0311", "league": "Tuesday Trios"},
    {"request_id": "LN-0312", "league": "Wednesday Seniors"},
    {"request_id": "LN-0314", "league": "Friday Fun"},
]

FIRST = ["Dee", "Raj", "Kim", "Lou", "Ana", "Bo", "Cy", "Eve", "Gil", "Ida", "Jo", "Max", "Ned", "Oli", "Pat", "Ros"]
LAST = ["Marsh", "Patel", "Okoro", "Byrne", "Silva", "Novak", "Reyes", "Hale", "Quinn", "Lund", "Frey", "Moss"]


def _team_id(league: str, team: str) -> str:
    return f"T{zlib.crc32(f'{league}/{team}'.encode()) % 9000 + 1000}"


def _bowlers(league: str, team: str) -> list[dict]:
    tid = _team_id(league, team)
    out = []
    for i in range(3):
        h = zlib.crc32(f"{tid}-{i}".encode())
        out.append({"bowler_id": f"B{tid[1:]}{i}", "name": f"{FIRST[h % len(FIRST)]} {LAST[(h // 7) % len(LAST)]}"})
    return out


def _score(bowler_id: str, week: int, game: int) -> int:
    return 115 + zlib.crc32(f"{bowler_id}/{week}/{game}".encode()) % 95


def _average(bowler_id: str, weeks: list[int]) -> int:
    games = [_score(bowler_id, w, g) for w in weeks for g in (1, 2, 3)]
    return sum(games) // len(games)


def _handicap(avg: int) -> int:
    return int(0.9 * max(0, 220 - avg))


def _schedule(league: str, week: int) -> list[list[str]]:
    teams = LEAGUES[league]["teams"]
    n = len(teams)
    rot = teams[:1] + teams[1:][week % (n - 1):] + teams[1:][: week % (n - 1)]
    return [[rot[i], rot[n - 1 - i]] for i in range(n // 2)]


# --- tools and agents -------------------------------------------------------------------------------------------


def _tools() -> dict[str, Any]:
    from agents import custom_span, function_tool

    @function_tool
    def league_roster(league: str, week: int) -> dict:
        """The league's teams and this week's matches."""
        matches = [{"match": f"{a} v {b}", "home": a, "away": b} for a, b in _schedule(league, week)]
        total = len(matches)
        if _on("roster_page"):
            matches = matches[:3]
        return {"league": league, "week": week, "date": NIGHTS[league]["date"],
                "teams": [{"team_id": _team_id(league, t), "team": t} for t in LEAGUES[league]["teams"]],
                "matches": matches, "total_matches": total, "page": 1}

    @function_tool
    def desk_notes(league: str) -> list:
        """The front desk's recent notes for a league."""
        notes = sorted(DESK_NOTES, key=lambda n: n["at"], reverse=True)
        if not _on("notes_filter"):
            notes = [n for n in notes if n["league"] == league]
        return notes[:3]

    @function_tool
    def lane_status(date: str) -> dict:
        """Lanes out of order (the lane-control snapshot)."""
        if _on("status_snapshot"):
            return {"date": date, "as_of": "09:00", "out_of_order": list(OUT_OF_ORDER_MORNING[date])}
        return {"date": date, "as_of": "17:40", "out_of_order": list(OUT_OF_ORDER_LIVE[date])}

    @function_tool
    def bowler_averages(league: str, team_ids: list[str], through_week: int) -> dict:
        """Season averages of every bowler of the given teams, through a week."""
        data: dict[str, Any] = {"league": league, "through_week": through_week}
        with custom_span("average_window", data=data):
            last = through_week - 1 if _on("window_end") else through_week
            weeks = list(range(1, last + 1))
            by_id = {_team_id(league, t): t for t in LEAGUES[league]["teams"]}
            averages = {}
            for tid in team_ids:
                for b in _bowlers(league, by_id[tid]):
                    averages[b["bowler_id"]] = {"name": b["name"], "team_id": tid, "average": _average(b["bowler_id"], weeks)}
            data.update({"weeks": weeks, "games": 3 * len(weeks), "averages": averages})
        return {"league": league, "through_week": through_week, "averages": averages}

    @function_tool(failure_error_function=None)
    def hold_lanes(date: str, pairs: list[str]) -> dict:
        """Hold lane pairs for the night in lane control."""
        for pair in pairs:
            for lane in (int(x) for x in pair.split("-")):
                if lane in OUT_OF_ORDER_LIVE[date]:
                    since = OUT_SINCE.get((date, lane), "the morning check")
                    raise RuntimeError(f"lane control: lane {lane} is out of order since {since}; cannot hold {pair}")
        return {"date": date, "held": pairs, "status": "held"}

    @function_tool(failure_error_function=None, strict_mode=False)
    def post_handicaps(league: str, week: int, handicaps: dict[str, int]) -> dict:
        """Post the night's bowler handicaps to the league secretary (checked against certified averages)."""
        night = NIGHTS[league]
        for bid, hcp in handicaps.items():
            certified = _average(bid, list(range(1, night["week"])))
            if hcp != _handicap(certified):
                raise ValueError(f"league secretary: handicap {hcp} for {bid} differs from {_handicap(certified)} "
                                 f"(certified average {certified} through week {night['week'] - 1})")
        return {"league": league, "week": week, "posted": len(handicaps), "status": "posted"}

    @function_tool(failure_error_function=None, strict_mode=False)
    def publish_lane_sheet(league: str, week: int, sheet: list[dict[str, str]]) -> dict:
        """Publish the lane sheet on the centre's screens and the league site."""
        expected = [f"{a} v {b}" for a, b in _schedule(league, week)]
        placed = [row["match"] for row in sheet]
        missing = [m for m in expected if m not in placed]
        if missing:
            raise ValueError(f"lane sheet: {league} week {week} has {len(expected)} matches, the sheet places "
                             f"{len(placed)}; missing {', '.join(missing)}")
        seen: dict[str, str] = {}
        for row in sheet:
            if row["lanes"] in seen:
                raise ValueError(f"lane sheet: lanes {row['lanes']} carry two matches: {seen[row['lanes']]} and {row['match']}")
            seen[row["lanes"]] = row["match"]
        return {"league": league, "week": week, "matches": len(sheet), "status": "published"}

    @function_tool(failure_error_function=None)
    def open_bracket(event: str, date: str, teams: list[str]) -> dict:
        """Open a bracket event in the tournament system."""
        if event in BRACKETS:
            return {"event": event, "date": date, "entries": len(teams), "status": "open"}
        raise LookupError(f"tournament system: no bracket event '{event}' on {date}; league nights are posted by "
                          f"league scoring")

    return {"league_roster": league_roster, "desk_notes": desk_notes, "lane_status": lane_status,
            "bowler_averages": bowler_averages, "hold_lanes": hold_lanes, "post_handicaps": post_handicaps,
            "publish_lane_sheet": publish_lane_sheet, "open_bracket": open_bracket}


DESK = ("You are the league desk at Strikers Lanes. Look up the roster, desk notes and lane status, get handicaps "
        "from the handicap clerk, hold one lane pair per match, then hand off to league scoring.")
CLERK = "You are the handicap clerk. Get bowler averages, then answer JSON {\"handicaps\": {bowler_id: handicap}} (90% of 220 minus average)."
SCORING = "You are league scoring. Post the handicaps, then publish the lane sheet exactly as held."
TOURNAMENT = "You are the tournament desk. Open bracket events for roll-offs and cups."

_agents: dict[str, Any] = {}


def _agent(env: Env) -> Any:
    if env.base_url in _agents:
        return _agents[env.base_url]
    from agents import Agent
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

    model = OpenAIChatCompletionsModel(model=env.model, openai_client=sdk_loop().client(env))
    t = _tools()
    clerk = Agent(name="handicap_clerk", instructions=CLERK, model=model, tools=[t["bowler_averages"]])
    scoring = Agent(name="league_scoring", instructions=SCORING, model=model,
                    tools=[t["post_handicaps"], t["publish_lane_sheet"]])
    tournament = Agent(name="tournament_desk", instructions=TOURNAMENT, model=model, tools=[t["open_bracket"]])
    desk = Agent(name="league_desk", instructions=DESK, model=model,
                 tools=[t["league_roster"], t["desk_notes"], t["lane_status"],
                        clerk.as_tool(tool_name="handicap_clerk", tool_description="Compute tonight's bowler handicaps."),
                        t["hold_lanes"]],
                 handoffs=[scoring, tournament])
    _agents[env.base_url] = desk
    return desk


def run(inp: dict, out: Path, env: Env) -> None:
    from agents import RunConfig, Runner

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    night = NIGHTS[inp["league"]]
    processor = TrajdebugProcessor(path=str(out), name=NAME, task=f"league night {inp['league']} week {night['week']}")
    agent = _agent(env)
    run_recorded_sdk(lambda: Runner.run(
        agent, f"Set up tonight's league: {inp['league']}, week {night['week']}, {night['date']}.",
        run_config=RunConfig(workflow_name="league night", group_id=inp["request_id"]), max_turns=12), processor)


# --- the model --------------------------------------------------------------------------------------------------


def _outs(request: Any, name: str) -> list:
    return [read_value(t) for n, t in tool_results(request) if n == name]


def brain(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    system = system_text(request)
    done = [n for n, _ in called(request)]
    if system.startswith("You are the handicap clerk"):
        got = _outs(request, "bowler_averages")
        if not got:
            ask = last_user(request)
            spec = json.loads(ask[ask.index("{"):])
            return Reply(tool_calls=(tool_call("bowler_averages", spec),))
        avgs = got[0]["averages"]
        return json.dumps({"handicaps": {bid: _handicap(v["average"]) for bid, v in avgs.items()}})
    first_user = next((m["content"] for m in request.body.get("messages", []) if m.get("role") == "user"), "")
    league = first_user.split("league: ", 1)[1].split(",")[0]
    week = int(first_user.split("week ", 1)[1].split(",")[0])
    date = first_user.rstrip(".").rsplit(", ", 1)[1]
    if system.startswith("You are the league desk"):
        if "league_roster" not in done:
            return Reply(tool_calls=(tool_call("league_roster", {"league": league, "week": week}),
                                     tool_call("desk_notes", {"league": league}),
                                     tool_call("lane_status", {"date": date})))
        roster = _outs(request, "league_roster")[0]
        if "handicap_clerk" not in done:
            spec = {"league": league, "team_ids": [t["team_id"] for t in roster["teams"]], "through_week": week - 1}
            return Reply(tool_calls=(tool_call("handicap_clerk", {"input": "Averages and handicaps for " + json.dumps(spec)}),))
        if "hold_lanes" not in done:
            notes = _outs(request, "desk_notes")[0]
            status = _outs(request, "lane_status")[0]
            fixed = {}
            for n in notes:
                if " bowl on lanes " in n["text"]:
                    team, lanes = n["text"].split(" bowl on lanes ")
                    fixed[team] = lanes.split(" ")[0]
            pairs = [f"{i}-{i + 1}" for i in range(1, 24, 2)
                     if i not in status["out_of_order"] and i + 1 not in status["out_of_order"]]
            free = [p for p in pairs if p not in fixed.values()]
            sheet = []
            for m in roster["matches"]:
                lanes = fixed.get(m["home"]) or fixed.get(m["away"]) or free.pop(0)
                sheet.append({"match": m["match"], "lanes": lanes})
            return Reply(text="Lanes: " + json.dumps(sheet), tool_calls=(
                tool_call("hold_lanes", {"date": date, "pairs": sorted({r["lanes"] for r in sheet}, key=lambda p: int(p.split("-")[0]))}),))
        target = "tournament_desk" if _on("handoff_pick") else "league_scoring"
        return Reply(tool_calls=(tool_call(f"transfer_to_{target}", {}),))
    sheet: list = []
    for m in request.body.get("messages", []):
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"].startswith("Lanes: "):
            sheet = json.loads(m["content"][len("Lanes: "):])
    if system.startswith("You are league scoring"):
        if "post_handicaps" not in done:
            clerk = json.loads(_outs(request, "handicap_clerk")[0]) if isinstance(_outs(request, "handicap_clerk")[0], str) \
                else _outs(request, "handicap_clerk")[0]
            return Reply(tool_calls=(tool_call("post_handicaps", {"league": league, "week": week, "handicaps": clerk["handicaps"]}),))
        if "publish_lane_sheet" not in done:
            return Reply(tool_calls=(tool_call("publish_lane_sheet", {"league": league, "week": week, "sheet": sheet}),))
        return f"{league} week {week} is set: {len(sheet)} matches on the lanes, handicaps posted."
    if system.startswith("You are the tournament desk"):
        if "open_bracket" not in done:
            return Reply(tool_calls=(tool_call("open_bracket", {"event": f"{league} week {week}", "date": date,
                                                                "teams": [r["match"] for r in sheet]}),))
        return "Bracket opened."
    return "I only run league nights."
