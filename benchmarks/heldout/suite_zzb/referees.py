"""Ice hockey referee assignments (openai_agents route): an assignor agent with an availability sub-agent as a tool."""

from __future__ import annotations

import json

from .common import Case, Reply, last_user_json, policy, server, tool_results
from .kit import active

NAME = "hockey-referee-assignor"
ROUTE = "openai_agents"

POOL = [
    {"ref_id": "R-03", "grade": 2, "club": "Harbour Hawks", "km": {"Civic Ice Centre": 18, "Northgate Arena": 64, "Lakeside Rink": 140}},
    {"ref_id": "R-05", "grade": 3, "club": "none", "km": {"Civic Ice Centre": 25, "Northgate Arena": 40, "Lakeside Rink": 170}},
    {"ref_id": "R-08", "grade": 2, "club": "Northgate Wolves", "km": {"Civic Ice Centre": 30, "Northgate Arena": 5, "Lakeside Rink": 120}},
    {"ref_id": "R-11", "grade": 3, "club": "none", "km": {"Civic Ice Centre": 12, "Northgate Arena": 55, "Lakeside Rink": 95}},
    {"ref_id": "R-12", "grade": 2, "club": "none", "km": {"Civic Ice Centre": 9, "Northgate Arena": 70, "Lakeside Rink": 180}},
    {"ref_id": "R-17", "grade": 4, "club": "Lakeside Lynx", "km": {"Civic Ice Centre": 44, "Northgate Arena": 81, "Lakeside Rink": 6}},
    {"ref_id": "R-21", "grade": 4, "club": "none", "km": {"Civic Ice Centre": 35, "Northgate Arena": 22, "Lakeside Rink": 210}},
    {"ref_id": "R-24", "grade": 4, "club": "none", "km": {"Civic Ice Centre": 28, "Northgate Arena": 48, "Lakeside Rink": 88}},
]
GAMES = {
    "G-3107": {"game_id": "G-3107", "date": "2026-12-12", "level": "U18 AAA", "min_grade": 4, "home": "Lakeside Lynx",
               "away": "Harbour Hawks", "rink": "Lakeside Rink", "doubleheader": "G-3108"},
    "G-3108": {"game_id": "G-3108", "date": "2026-12-12", "level": "U16 AA", "min_grade": 3, "home": "Civic Blades",
               "away": "Northgate Wolves", "rink": "Lakeside Rink", "doubleheader": "G-3107"},
    "G-3120": {"game_id": "G-3120", "date": "2026-12-13", "level": "Senior A", "min_grade": 4, "home": "Civic Blades",
               "away": "Lakeside Lynx", "rink": "Civic Ice Centre", "doubleheader": None},
    "G-3091": {"game_id": "G-3091", "date": "2026-12-06", "level": "U16 AA", "min_grade": 3, "home": "Harbour Hawks",
               "away": "Civic Blades", "rink": "Civic Ice Centre", "doubleheader": None},
    "G-3095": {"game_id": "G-3095", "date": "2026-12-06", "level": "U18 AAA", "min_grade": 4, "home": "Northgate Wolves",
               "away": "Civic Blades", "rink": "Northgate Arena", "doubleheader": None},
    "G-3099": {"game_id": "G-3099", "date": "2026-12-07", "level": "Senior A", "min_grade": 4, "home": "Harbour Hawks",
               "away": "Northgate Wolves", "rink": "Lakeside Rink", "doubleheader": "G-3100"},
    "G-3100": {"game_id": "G-3100", "date": "2026-12-07", "level": "U14 A", "min_grade": 2, "home": "Civic Blades",
               "away": "Lakeside Lynx", "rink": "Lakeside Rink", "doubleheader": "G-3099"},
}
INPUTS = {"g3107": "G-3107", "g3120": "G-3120", "g3091": "G-3091", "g3095": "G-3095", "g3099": "G-3099", "g3100": "G-3100"}
REFS = ["g3091", "g3095", "g3099", "g3100"]
MAX_KM = 150

CASES = [
    Case("zzb_referees_01", NAME, ROUTE, "subagent_wrong_entity", "ref_entity", "g3107", "generation ref-assignor", 2, "llm",
         "assign_officials", "the assignor briefs the availability sub-agent with the doubleheader's other game, so conflicts are checked against the wrong clubs."),
    Case("zzb_referees_02", NAME, ROUTE, "tool_ignores_argument", "ref_km", "g3107", "get_travel_km", 1, "tool",
         "assign_officials", "get_travel_km ignores the rink argument and returns the distance to the Civic Ice Centre."),
    Case("zzb_referees_03", NAME, ROUTE, "hallucinated_value", "ref_linesman", "g3120", "generation ref-assignor", 0, "llm",
         "assign_officials", "the assignor model adds a linesman id that no tool returned."),
    Case("zzb_referees_04", NAME, ROUTE, "truncated_result", "ref_page", "g3120", "list_referees", 1, "tool",
         "assign_officials", "list_referees returns only the first page of five referees, leaving out every grade-4 referee but one."),
    Case("zzb_referees_05", NAME, ROUTE, "wrong_tool_args", "ref_swap", "g3107", "generation ref-assignor", 0, "llm",
         "assign_officials", "the assignor model submits the assignment with the day before the game's date."),
]
_CURRENT: dict = {}


class AssignmentRejected(RuntimeError):
    pass


def _call(name: str, args: dict) -> Reply:
    return Reply(tool_calls=((name, args),))


@policy("ref-assignor")
def _assignor(request):
    game = _CURRENT
    done = tool_results(request)
    names = [n for n, _ in done]
    if "get_fixture" not in names:
        return _call("get_fixture", {"game_id": game["game_id"]})
    fixture = json.loads(dict(done)["get_fixture"])
    if "availability_checker" not in names:
        brief = fixture
        if active("ref_entity") and fixture["doubleheader"]:
            brief = GAMES[fixture["doubleheader"]]
        return _call("availability_checker", {"input": json.dumps(
            {"date": brief["date"], "level": brief["level"], "home": brief["home"], "away": brief["away"]})})
    candidates = json.loads(dict(done)["availability_checker"])["available"]
    km = {json.loads(c)["ref_id"]: json.loads(c)["km"] for n, c in done if n == "get_travel_km"}
    for ref in candidates:
        if ref["ref_id"] not in km:
            return _call("get_travel_km", {"ref_id": ref["ref_id"], "rink": fixture["rink"]})
    if "assign_officials" not in names:
        near = [r for r in candidates if km[r["ref_id"]] <= MAX_KM]
        refs = sorted(near, key=lambda r: (-r["grade"], km[r["ref_id"]]))
        referee = refs[0]["ref_id"]
        lines = [r["ref_id"] for r in sorted(refs[1:], key=lambda r: km[r["ref_id"]])][:2]
        if active("ref_linesman"):
            lines = [lines[0], "R-27"]
        date = fixture["date"]
        if active("ref_swap"):
            date = date[:8] + f"{int(date[8:]) - 1:02d}"
        return _call("assign_officials", {"game_id": fixture["game_id"], "date": date, "referee": referee, "linesmen": lines})
    return "Officials assigned: " + dict(done)["assign_officials"]


@policy("ref-availability")
def _availability(request):
    brief = last_user_json(request)
    done = tool_results(request)
    names = [n for n, _ in done]
    if "list_referees" not in names:
        return _call("list_referees", {"date": brief["date"], "level": brief["level"]})
    pool = json.loads(dict(done)["list_referees"])["referees"]
    if "check_conflicts" not in names:
        return _call("check_conflicts", {"ref_ids": [r["ref_id"] for r in pool], "home": brief["home"], "away": brief["away"]})
    blocked = set(json.loads(dict(done)["check_conflicts"])["conflicted"])
    return json.dumps({"available": [r for r in pool if r["ref_id"] not in blocked]})


def build():
    from agents import Agent, OpenAIChatCompletionsModel, function_tool
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0)

    @function_tool
    def get_fixture(game_id: str) -> str:
        """Fetch a game's fixture: date, level, clubs, rink."""
        g = GAMES[game_id]
        return json.dumps({k: g[k] for k in ("game_id", "date", "level", "home", "away", "rink", "doubleheader")})

    @function_tool
    def list_referees(date: str, level: str) -> str:
        """List the referees free on a date, in register order."""
        pool = [{"ref_id": r["ref_id"], "grade": r["grade"]} for r in POOL]
        if active("ref_page"):
            pool = pool[:5]
        return json.dumps({"date": date, "referees": pool})

    @function_tool
    def check_conflicts(ref_ids: list[str], home: str, away: str) -> str:
        """Return the referees registered with either club."""
        clubs = {r["ref_id"]: r["club"] for r in POOL}
        return json.dumps({"conflicted": [r for r in ref_ids if clubs[r] in (home, away)]})

    @function_tool
    def get_travel_km(ref_id: str, rink: str) -> str:
        """Road distance from a referee's home to a rink."""
        target = "Civic Ice Centre" if active("ref_km") else rink
        r = next(x for x in POOL if x["ref_id"] == ref_id)
        return json.dumps({"ref_id": ref_id, "km": r["km"][target]})

    @function_tool(failure_error_function=None)
    def assign_officials(game_id: str, date: str, referee: str, linesmen: list[str]) -> str:
        """Submit the officials for a game to the league's assignment system."""
        g = GAMES[game_id]
        by_id = {r["ref_id"]: r for r in POOL}
        if date != g["date"]:
            raise AssignmentRejected(f"League API 409: assignment date {date} does not match game {game_id} on {g['date']}")
        for rid in [referee, *linesmen]:
            if rid not in by_id:
                raise AssignmentRejected(f"League API 404: official {rid} not found in the register")
        for rid in [referee, *linesmen]:
            r = by_id[rid]
            if r["club"] in (g["home"], g["away"]):
                raise AssignmentRejected(f"League API 422: {rid} is registered with {r['club']}, a club in game {game_id}")
            if r["km"][g["rink"]] > MAX_KM:
                raise AssignmentRejected(f"League API 422: {rid} travel {r['km'][g['rink']]} km to {g['rink']} exceeds {MAX_KM} km")
        if by_id[referee]["grade"] < g["min_grade"]:
            raise AssignmentRejected(f"League API 422: referee {referee} grade {by_id[referee]['grade']} below grade "
                                     f"{g['min_grade']} required for {g['level']}")
        return json.dumps({"game_id": game_id, "status": "assigned", "referee": referee, "linesmen": linesmen})

    checker = Agent(name="availability_checker_agent", instructions="List free referees for the game and drop those with club conflicts.",
                    model=OpenAIChatCompletionsModel(model="ref-availability", openai_client=client),
                    tools=[list_referees, check_conflicts])
    return Agent(name="assignor", instructions="Assign one referee and two linesmen to the game.",
                 model=OpenAIChatCompletionsModel(model="ref-assignor", openai_client=client),
                 tools=[get_fixture, checker.as_tool(tool_name="availability_checker",
                                                      tool_description="Check which referees are free and conflict-free."),
                        get_travel_km, assign_officials])


def record(input_key: str, path: str) -> None:
    from agents import RunConfig, Runner
    from agents.exceptions import UserError
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    game = GAMES[INPUTS[input_key]]
    _CURRENT.clear()
    _CURRENT.update(game)
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"assign officials for {game['game_id']}")])
    try:
        Runner.run_sync(build(), json.dumps({"game_id": game["game_id"]}), run_config=RunConfig(workflow_name=NAME),
                        max_turns=20)
    except UserError:
        pass
