"""A polo club's chukka schedule: a LangGraph StateGraph with ChatOpenAI, tools inside nodes, a ground router
and a loop over chukkas driven by a conditional edge; the schedule validator is the last node.

Shape: intake -> roster (team_roster x2) -> pony_lines (pony_register per player) -> route_ground ->
main_ground | practice_ground (book_ground) -> planner (ChatOpenAI) -> parse_plan -> schedule_chukka (loop,
assign_ponies each chukka) -> umpires (umpire_rota) -> check_schedule.  About 30-45 steps.
"""

from __future__ import annotations

import json
import operator
import re
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from zd_common import last_user, payload

from trajdebug.integrations.langchain import TrajdebugTracer


NAME = "polo-chukka-scheduler"
SHORT = "polo"
ROUTE = "langgraph"
DOMAIN = "polo club's chukka schedule"
SHAPE = "StateGraph: tool fan-out nodes, conditional ground router, model planner, chukka loop via conditional edge; 30-41 steps"

PLANNER_NO_REST = False
CUP_TO_PRACTICE_GROUND = False
PONY_LINES_FROM_SECOND = False
ROSTER_LAST_SEASON = False
START_HOUR_ONLY = False
SWITCHES = [
    "PLANNER_NO_REST",
    "CUP_TO_PRACTICE_GROUND",
    "PONY_LINES_FROM_SECOND",
    "ROSTER_LAST_SEASON",
    "START_HOUR_ONLY",
]

ROSTERS = {
    "Los Potros": [("Ignacio", 5), ("Tom", 2), ("Sofia", 3), ("Marcus", 1)],
    "Cowdray Blue": [("Harriet", 4), ("Piers", 3), ("Juan", 2), ("Ollie", 2)],
    "Ham Polo": [("Lucy", 1), ("Diego", 6), ("Ben", 2), ("Ava", 2)],
    "Kirtlington": [("Rory", 3), ("Mateo", 4), ("Isla", 1), ("Fin", 1)],
    "Guards Greys": [("Nacho", 6), ("Will", 2), ("Kit", 1), ("Georgie", 1)],
}
LAST_SEASON = {"Cowdray Blue": [("Harriet", 4), ("Piers", 3), ("Juan", 5), ("Ollie", 2)]}
PONIES = {name: [f"{name[:3]}-{i}" for i in range(1, 5)] for team in ROSTERS.values() for name, _ in team}
GROUND_HOURS = {"Ground 1": ("14:30", "18:30"), "Ground 2": ("10:00", "19:00")}

INPUTS = [
    {"text": "Cup semi-final, 2026-06-14, 6 chukkas, Los Potros v Cowdray Blue, 12-goal, start 14:30"},
    {"text": "Club chukkas, 2026-06-16, 4 chukkas, Ham Polo v Kirtlington, 12-goal, start 16:00"},
    {"text": "Cup final, 2026-06-21, 6 chukkas, Guards Greys v Los Potros, 12-goal, start 15:15"},
    {"text": "Club chukkas, 2026-06-18, 4 chukkas, Kirtlington v Cowdray Blue, 12-goal, start 11:00"},
    {"text": "League match, 2026-06-20, 5 chukkas, Ham Polo v Guards Greys, 12-goal, start 14:45"},
]

CASES = [
    {
        "input": 2,
        "switch": "PLANNER_NO_REST",
        "fault_kind": "plan_error",
        "root": ("ChatOpenAI", 1, "llm"),
        "failure": ("check_schedule", 1),
        "description": "The planner model set the pony rest to zero chukkas, so the rotation sent ponies out in "
        "back-to-back chukkas.",
    },
    {
        "input": 0,
        "switch": "CUP_TO_PRACTICE_GROUND",
        "fault_kind": "wrong_routing",
        "root": ("route_ground", 1, "other"),
        "failure": ("check_schedule", 1),
        "description": "The ground router sent a cup semi-final to the practice ground, Ground 2.",
    },
    {
        "input": 1,
        "switch": "PONY_LINES_FROM_SECOND",
        "fault_kind": "off_by_one",
        "root": ("pony_lines", 1, "agent"),
        "failure": ("assign_ponies", 1),
        "description": "The pony lines node registered ponies from the second player on, skipping the first "
        "player of the home team.",
    },
    {
        "input": 3,
        "switch": "ROSTER_LAST_SEASON",
        "fault_kind": "stale_data",
        "root": ("team_roster", 2, "tool"),
        "failure": ("check_schedule", 1),
        "description": "The roster service returned Cowdray Blue's handicaps from last season (Juan at 5 goals, "
        "now 2).",
    },
    {
        "input": 4,
        "switch": "START_HOUR_ONLY",
        "fault_kind": "lossy_parsing",
        "root": ("intake", 1, "other"),
        "failure": ("check_schedule", 1),
        "description": "The intake parser kept only the hour of the start time and read 14:45 as 14:00.",
    },
]


class Chukkas(TypedDict, total=False):
    request: str
    match: dict
    players: list
    ponies: dict
    ground: dict
    plan: dict
    plan_text: str
    chukkas: Annotated[list, operator.add]
    umpires: dict


@tool
def team_roster(team: str) -> list:
    """Players of a team with their current handicaps."""
    if ROSTER_LAST_SEASON and team in LAST_SEASON:
        return [{"player": p, "handicap": h, "team": team} for p, h in LAST_SEASON[team]]
    return [{"player": p, "handicap": h, "team": team} for p, h in ROSTERS[team]]


@tool
def pony_register(player: str) -> list:
    """Ponies registered to a player for the day."""
    return list(PONIES[player])


@tool
def book_ground(ground: str, date: str, start: str) -> dict:
    """Book a ground for a match."""
    opens, closes = GROUND_HOURS[ground]
    return {"ground": ground, "date": date, "booked_from": start, "closes": closes, "opens": opens}


@tool
def assign_ponies(chukka: int, players: list, lines: dict, rest: int, history: list) -> dict:
    """Pick a pony for each player for one chukka, resting ponies as the plan says."""
    out = {}
    for p in players:
        strings = lines.get(p["player"])
        if not strings:
            raise KeyError(f"player {p['player']} has no ponies on the lines for chukka {chukka}")
        spell = 1 if rest >= 1 else 2  # chukkas a pony plays before it changes
        idx = ((chukka - 1) // spell) % len(strings)
        out[p["player"]] = strings[idx]
    return {"chukka": chukka, "ponies": out}


@tool
def umpire_rota(date: str, ground: str) -> dict:
    """Umpires on duty for a ground on a date."""
    return {"ground": ground, "umpires": ["R. Hale", "J. Ortiz"], "third_man": "C. Webb"}


def build(llm):
    def intake(state: Chukkas) -> dict:
        m = re.match(
            r"(.+?), (\d{4}-\d\d-\d\d), (\d) chukkas, (.+?) v (.+?), (\d+)-goal, start (\d\d):(\d\d)",
            state["request"],
        )
        kind, date, n, home, away, goal, hh, mm = m.groups()
        start = f"{hh}:00" if START_HOUR_ONLY else f"{hh}:{mm}"
        return {
            "match": {
                "kind": kind,
                "date": date,
                "chukkas": int(n),
                "teams": [home, away],
                "goal_limit": int(goal),
                "start": start,
            }
        }

    def roster(state: Chukkas) -> dict:
        players = []
        for team in state["match"]["teams"]:
            players += team_roster.invoke({"team": team})
        return {"players": players}

    def pony_lines(state: Chukkas) -> dict:
        players = state["players"]
        first = 1 if PONY_LINES_FROM_SECOND else 0
        return {
            "ponies": {p["player"]: pony_register.invoke({"player": p["player"]}) for p in players[first:]}
        }

    def route_ground(state: Chukkas) -> str:
        cup = state["match"]["kind"].startswith("Cup") and not CUP_TO_PRACTICE_GROUND
        league = state["match"]["kind"].startswith("League")
        return "main_ground" if cup or league else "practice_ground"

    def main_ground(state: Chukkas) -> dict:
        m = state["match"]
        return {"ground": book_ground.invoke({"ground": "Ground 1", "date": m["date"], "start": m["start"]})}

    def practice_ground(state: Chukkas) -> dict:
        m = state["match"]
        return {"ground": book_ground.invoke({"ground": "Ground 2", "date": m["date"], "start": m["start"]})}

    def planner(state: Chukkas) -> dict:
        m = state["match"]
        reply = llm.invoke(
            [
                SystemMessage(
                    "You plan polo match days. Answer JSON: chukka_minutes, interval_minutes, "
                    "halftime_after, halftime_minutes, pony_rest_chukkas."
                ),
                HumanMessage(
                    "Plan " + json.dumps({"kind": m["kind"], "chukkas": m["chukkas"], "ponies_per_player": 4})
                ),
            ]
        )
        return {"plan_text": reply.content}

    def parse_plan(state: Chukkas) -> dict:
        return {"plan": json.loads(state["plan_text"])}

    def schedule_chukka(state: Chukkas) -> dict:
        n = len(state.get("chukkas") or []) + 1
        plan = state["plan"]
        history = [c["ponies"] for c in state.get("chukkas") or []]
        picked = assign_ponies.invoke(
            {
                "chukka": n,
                "players": state["players"],
                "lines": state["ponies"],
                "rest": plan["pony_rest_chukkas"],
                "history": history,
            }
        )
        h, mi = map(int, state["match"]["start"].split(":"))
        t = h * 60 + mi + (n - 1) * (plan["chukka_minutes"] + plan["interval_minutes"])
        if n > plan["halftime_after"]:
            t += plan["halftime_minutes"] - plan["interval_minutes"]
        return {
            "chukkas": [{"chukka": n, "throw_in": f"{t // 60:02d}:{t % 60:02d}", "ponies": picked["ponies"]}]
        }

    def more_chukkas(state: Chukkas) -> str:
        return "schedule_chukka" if len(state["chukkas"]) < state["match"]["chukkas"] else "umpires"

    def umpires(state: Chukkas) -> dict:
        return {
            "umpires": umpire_rota.invoke(
                {"date": state["match"]["date"], "ground": state["ground"]["ground"]}
            )
        }

    def check_schedule(state: Chukkas) -> dict:
        m, ground = state["match"], state["ground"]
        if m["kind"].startswith("Cup") and ground["ground"] != "Ground 1":
            raise ValueError(
                f"{m['kind']} on {m['date']} is booked on {ground['ground']}; cup fixtures are played "
                f"on Ground 1"
            )
        if m["start"] < ground["opens"]:
            raise ValueError(
                f"first throw-in {m['start']} is before {ground['ground']} opens at {ground['opens']}"
            )
        per_team = {}
        for p in state["players"]:
            per_team[p["team"]] = per_team.get(p["team"], 0) + p["handicap"]
        for team, total in per_team.items():
            if total > m["goal_limit"]:
                raise ValueError(f"{team} handicap {total} is above the {m['goal_limit']}-goal limit")
        last_seen = {}
        for c in state["chukkas"]:
            for player, pony in c["ponies"].items():
                if pony in last_seen and c["chukka"] - last_seen[pony] < 2:
                    raise ValueError(
                        f"pony {pony} ({player}) plays chukkas {last_seen[pony]} and {c['chukka']} "
                        f"without a rest"
                    )
                last_seen[pony] = c["chukka"]
        return {}

    g = StateGraph(Chukkas)
    for fn in (
        intake,
        roster,
        pony_lines,
        main_ground,
        practice_ground,
        planner,
        parse_plan,
        schedule_chukka,
        umpires,
        check_schedule,
    ):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "roster")
    g.add_edge("roster", "pony_lines")
    g.add_conditional_edges("pony_lines", route_ground, ["main_ground", "practice_ground"])
    g.add_edge("main_ground", "planner")
    g.add_edge("practice_ground", "planner")
    g.add_edge("planner", "parse_plan")
    g.add_edge("parse_plan", "schedule_chukka")
    g.add_conditional_edges("schedule_chukka", more_chukkas, ["schedule_chukka", "umpires"])
    g.add_edge("umpires", "check_schedule")
    g.add_edge("check_schedule", END)
    return g.compile()


def policy(request):
    prompt = last_user(request)
    if prompt.startswith("Plan"):
        data = payload(prompt)
        rest = 0 if PLANNER_NO_REST else 1
        return json.dumps(
            {
                "chukka_minutes": 7,
                "interval_minutes": 3,
                "halftime_after": data["chukkas"] // 2,
                "halftime_minutes": 10,
                "pony_rest_chukkas": rest,
            }
        )
    return "{}"


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["text"])
    try:
        build(llm).invoke({"request": inp["text"]}, config={"callbacks": [tracer], "recursion_limit": 60})
    except Exception:  # noqa: BLE001
        pass
