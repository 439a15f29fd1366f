"""Weekly rota for a district's fire lookout towers (route: langgraph)."""
from __future__ import annotations

import json
import operator
import re
from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
import suitekit

NAME = "lookout-rota"
ROUTE = "langgraph"
DOMAIN = "fire lookout towers: weekly staffing rota"
SHAPE = ("LangGraph loop, ~30-45 steps: model intake node, parse node, two tool nodes, then per week a "
         "grading node with a staffing router and a single/double watch node with a loop router; model "
         "review node; publish node validates against the burn-ban register")

ON = {"towers": False, "district": False, "weeks": False, "season": False, "route": False}

DISTRICTS = {
    "Kettle Ridge": {"towers": ["T3", "T7"], "danger": ["moderate", "high", "extreme", "very high", "high"]},
    "Sable Creek": {"towers": ["S1", "S4", "S5"], "danger": ["high", "very high", "very high", "high"]},
    "Owl Hollow": {"towers": ["O2"], "danger": ["low", "moderate", "high", "extreme", "extreme", "high"]},
    "Granite Pass": {"towers": ["G1", "G6"], "danger": ["moderate", "moderate", "very high", "high", "high", "moderate"]},
    "Larch Flats": {"towers": ["L2", "L8", "L9"], "danger": ["very high", "extreme", "high"]},
}
LOOKOUTS = [
    {"name": "Rae Tulley", "cert_until": "2026-05-31"}, {"name": "Ines Okafor", "cert_until": "2027-04-30"},
    {"name": "Bram Holt", "cert_until": "2026-12-31"}, {"name": "Mika Sorensen", "cert_until": "2027-03-31"},
    {"name": "Tomas Reyes", "cert_until": "2026-10-31"}, {"name": "Dana Whitcombe", "cert_until": "2027-06-30"},
    {"name": "Owen Pratt", "cert_until": "2026-06-15"}, {"name": "Lena Fisk", "cert_until": "2027-01-31"},
    {"name": "Caleb Moore", "cert_until": "2026-11-30"}, {"name": "Priya Nand", "cert_until": "2027-05-31"},
    {"name": "Jonah Birch", "cert_until": "2026-12-15"},
]

INPUTS = [
    {"text": "Rota for Kettle Ridge towers T3 and T7, five weeks from ISO week 27 of 2026."},
    {"text": "Please staff Sable Creek (S1, S4, S5) for four weeks starting 2026 week 28."},
    {"text": "Owl Hollow lookout O2 needs a six week rota from 2026 week 26."},
    {"text": "Granite Pass, towers G1 and G6: six weeks from week 29 of 2026."},
    {"text": "Larch Flats towers L2, L8 and L9, three weeks starting 2026 week 30."},
]

CASES = [
    dict(id="zl01", input=3, switch="towers", fault_kind="format_drift",
         root=("ChatOpenAI", 1), kind="llm", failure=("publish", 1),
         description="The intake model answers the towers as one text 'G1, G6' instead of a list, and read_fields turns the text into single characters, so no real tower is staffed."),
    dict(id="zl02", input=0, switch="district", fault_kind="wrong_tool_args",
         root=("danger_outlook", 1), kind=None, failure=("publish", 1),
         description="danger_outlook asks the fire-danger tool for the first tower id (T3) instead of the district, gets the moderate default for every week and staffs the extreme week with one lookout."),
    dict(id="zl03", input=2, switch="weeks", fault_kind="off_by_one",
         root=("more_weeks", 5), kind=None, failure=("publish", 1),
         description="The loop router compares the week index with len(weeks) - 1 after it was already advanced, so the sixth week (2026-W31) is never planned."),
    dict(id="zl04", input=1, switch="season", fault_kind="tool_ignores_argument",
         root=("lookout_roster", 1), kind="tool", failure=("publish", 1),
         description="lookout_roster ignores its season argument and returns every lookout on file, including Rae Tulley and Owen Pratt whose certificates expired before the season."),
    dict(id="zl05", input=4, switch="route", fault_kind="wrong_routing",
         root=("staffing_route", 1), kind=None, failure=("publish", 1),
         description="staffing_route sends only weeks graded exactly 'extreme' to a double watch, so the very high week 2026-W30 at Larch Flats, a burn-ban week, gets one lookout per tower."),
]


def policy(request):
    system = suitekit.system_of(request)
    user = suitekit.last_user(request)
    if system.startswith("Extract"):
        district = next(d for d in DISTRICTS if d in user)
        towers = re.findall(r"\b[A-Z]\d\b", user)
        weeks = {"three": 3, "four": 4, "five": 5, "six": 6}[re.search(r"(three|four|five|six) weeks?", user).group(1)]
        start = int(re.search(r"week (\d+)", user).group(1))
        value = ", ".join(towers) if ON["towers"] else towers
        return json.dumps({"district": district, "towers": value, "start_week": f"2026-W{start}", "weeks": weeks})
    if system.startswith("Summarise"):
        return "Rota ready: every tower staffed each week, double watches in the burn-ban weeks."
    return "?"


class Rota(TypedDict, total=False):
    request: str
    fields_json: str
    fields: dict
    lookouts: list
    danger: list
    week: int
    grade: str
    rota: Annotated[list, operator.add]
    summary: str


@tool
def lookout_roster(district: str, season: int) -> list[dict]:
    """Lookouts with a fire-watch certificate valid for the season, for a district."""
    people = LOOKOUTS if ON["season"] else [p for p in LOOKOUTS if p["cert_until"] >= f"{season}-07-01"]
    return [dict(p, district=district) for p in people]


@tool
def fire_danger_outlook(district: str, weeks: int) -> list[str]:
    """The fire service's weekly danger outlook for a district."""
    levels = DISTRICTS.get(district, {}).get("danger")
    return list(levels[:weeks]) if levels else ["moderate"] * weeks


@tool
def burn_ban_register(district: str) -> list[int]:
    """Week offsets of the season for which the district has declared a burn ban."""
    return [i for i, lv in enumerate(DISTRICTS[district]["danger"]) if lv in ("extreme", "very high")]


def build(llm):
    def intake(state: Rota) -> dict:
        msg = llm.invoke([SystemMessage("Extract district, towers, start_week and weeks as JSON."),
                          HumanMessage(state["request"])])
        return {"fields_json": msg.content}

    def read_fields(state: Rota) -> dict:
        raw = json.loads(state["fields_json"])
        year, week = raw["start_week"].split("-W")
        weeks = [f"{year}-W{int(week) + i}" for i in range(int(raw["weeks"]))]
        return {"fields": {"district": raw["district"], "towers": list(raw["towers"]), "weeks": weeks,
                           "season": int(year)}, "week": 0, "rota": []}

    def load_roster(state: Rota) -> dict:
        f = state["fields"]
        return {"lookouts": lookout_roster.invoke({"district": f["district"], "season": f["season"]})}

    def danger_outlook(state: Rota) -> dict:
        f = state["fields"]
        area = f["towers"][0] if ON["district"] else f["district"]
        return {"danger": fire_danger_outlook.invoke({"district": area, "weeks": len(f["weeks"])})}

    def grade_week(state: Rota) -> dict:
        level = state["danger"][state["week"]]
        return {"grade": level}

    def staffing_route(state: Rota) -> str:
        if ON["route"]:
            return "double_watch" if state["grade"] == "extreme" else "single_watch"
        return "double_watch" if state["grade"] in ("extreme", "very high") else "single_watch"

    def _assign(state: Rota, per_tower: int) -> dict:
        f = state["fields"]
        people = state["lookouts"]
        start = state["week"] * len(f["towers"]) * 2
        entries = []
        for t_i, tower in enumerate(f["towers"]):
            crew = [people[(start + t_i * 2 + k) % len(people)]["name"] for k in range(per_tower)]
            entries.append({"week": f["weeks"][state["week"]], "tower": tower, "lookouts": crew})
        return {"rota": entries, "week": state["week"] + 1}

    def single_watch(state: Rota) -> dict:
        return _assign(state, 1)

    def double_watch(state: Rota) -> dict:
        return _assign(state, 2)

    def more_weeks(state: Rota) -> str:
        last = len(state["fields"]["weeks"]) - 1 if ON["weeks"] else len(state["fields"]["weeks"])
        return "grade_week" if state["week"] < last else "review"

    def review(state: Rota) -> dict:
        msg = llm.invoke([SystemMessage("Summarise the rota for the district ranger."),
                          HumanMessage(json.dumps(state["rota"]))])
        return {"summary": msg.content}

    def publish(state: Rota) -> dict:
        f = state["fields"]
        bans = burn_ban_register.invoke({"district": f["district"]})
        open_towers = DISTRICTS[f["district"]]["towers"]
        certs = {p["name"]: p["cert_until"] for p in LOOKOUTS}
        for i, week in enumerate(f["weeks"]):
            rows = {r["tower"]: r for r in state["rota"] if r["week"] == week}
            if not rows:
                raise ValueError(f"rota for {f['district']} has no entries for {week}")
            for tower in open_towers:
                if tower not in rows:
                    raise ValueError(f"open tower {tower} has no lookout in {week}")
                crew = rows[tower]["lookouts"]
                if i in bans and len(crew) < 2:
                    raise ValueError(f"{week} is a burn-ban week in {f['district']}: {tower} needs 2 lookouts, has {len(crew)}")
                for name in crew:
                    if certs[name] < f"{f['season']}-07-01":
                        raise ValueError(f"{name}'s fire-watch certificate expired {certs[name]}; cannot staff {tower} in {week}")
        return {"summary": state["summary"] + " Published."}

    g = StateGraph(Rota)
    for fn in (intake, read_fields, load_roster, danger_outlook, grade_week, single_watch, double_watch, review, publish):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "read_fields")
    g.add_edge("read_fields", "load_roster")
    g.add_edge("load_roster", "danger_outlook")
    g.add_edge("danger_outlook", "grade_week")
    g.add_conditional_edges("grade_week", staffing_route, ["single_watch", "double_watch"])
    g.add_conditional_edges("single_watch", more_weeks, ["grade_week", "review"])
    g.add_conditional_edges("double_watch", more_weeks, ["grade_week", "review"])
    g.add_edge("review", "publish")
    g.add_edge("publish", END)
    return g.compile()


def record(inp: dict, path: str, base_url: str) -> None:
    llm = suitekit.chat_model(base_url)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["text"])
    try:
        build(llm).invoke({"request": inp["text"]}, config={"callbacks": [tracer], "recursion_limit": 120})
    except Exception:
        pass
