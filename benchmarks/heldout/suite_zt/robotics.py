"""Robotics competition: inspect a robot and file its qualification match form (LangGraph + tracer)."""
from __future__ import annotations

import json
from typing import TypedDict

from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case, last_user, policy, server
from .kit import active, planted

AGENT, ROUTE, DOMAIN = "robot-inspector", "langgraph", "robotics competition"
SHAPE = "entry -> rulebook retrieval -> per-subsystem inspection loop -> scores -> scout subgraph -> LLM strategy -> match form"
MODEL = "zt-robotics"

TEAMS = {
    "4631": {"alliance": "A3", "partners": ["4631", "2056", "5210"], "matches": ["Q13", "Q27"], "climber_kg": 4.2,
             "parts": {"drivetrain": 24.35, "arm": 14.6, "electrical": 13.3}},
    "2056": {"alliance": "A3", "partners": ["2056", "4631", "1114"], "matches": ["Q08", "Q22"], "climber_kg": 3.9,
             "parts": {"drivetrain": 22.7, "arm": 16.5, "electrical": 13.1}},
    "1114": {"alliance": "A1", "partners": ["1114", "254", "971"], "matches": ["Q02", "Q19"], "climber_kg": 3.5,
             "parts": {"drivetrain": 21.0, "arm": 15.0, "electrical": 12.0}},
    "971": {"alliance": "A1", "partners": ["971", "1114", "254"], "matches": ["Q05", "Q21"], "climber_kg": 4.0,
            "parts": {"drivetrain": 25.0, "arm": 11.5, "electrical": 12.5}},
    "3310": {"alliance": "A2", "partners": ["3310", "118", "148"], "matches": ["Q04", "Q30"], "climber_kg": 5.0,
             "parts": {"drivetrain": 20.0, "arm": 13.0, "electrical": 11.0}},
    "148": {"alliance": "A2", "partners": ["148", "3310", "118"], "matches": ["Q09", "Q24"], "climber_kg": 4.4,
            "parts": {"drivetrain": 23.5, "arm": 12.25, "electrical": 12.0}},
}
REFS = ["1114", "971", "3310", "148"]
LIMIT = 56.0
SUBSYSTEMS = ["drivetrain", "arm", "electrical"]


@policy(MODEL)
def _model(msgs):
    req = json.loads(last_user(msgs))
    if "alliance_teams" in req:
        others = [t for t in req["alliance_teams"] if t != req["team"]]
        pick = others[0]
        if active("rob_entity"):
            pick = req["team"][:2] + req["team"][3] + req["team"][2]
        return json.dumps({"partner": pick})
    return json.dumps({"auton": "two-piece-left" if req["weight_kg"] < 50 else "one-piece-center", "endgame": "climb" if req["climber"] else "park"})


class Rulebook(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        season = "2025" if active("rob_rules") else "2026"
        limit = "57.0" if season == "2025" else "56.0"
        return [Document(page_content=f"R104 ({season}): robot weight must not exceed {limit} kg without bumpers.",
                         metadata={"rule": "R104", "season": season}),
                Document(page_content="R108: bumpers must display the alliance colour.", metadata={"rule": "R108", "season": "2026"})]


RULEBOOK = Rulebook()


@tool
def get_entry(team: str) -> dict:
    """The team's event entry."""
    t = TEAMS[team]
    return {"team": team, "alliance": t["alliance"], "matches": t["matches"]}


@tool
def read_inspection_log(team: str, subsystem: str) -> str:
    """Raw inspection log line for one subsystem."""
    return f"{team}/{subsystem}: weight={TEAMS[team]['parts'][subsystem]}kg; status=pass; inspector=K. Osei"


@tool
def alliance_roster(alliance: str, team: str) -> list:
    """Teams in the alliance."""
    return TEAMS[team]["partners"]


class S(TypedDict, total=False):
    team: str
    entry: dict
    rules: list
    idx: int
    logs: list
    parsed: list
    scores: dict
    partner: str
    strategy: dict
    form: dict


def load_entry(state: S) -> dict:
    return {"entry": get_entry.invoke({"team": state["team"]}), "idx": 0, "logs": [], "parsed": []}


def fetch_rules(state: S) -> dict:
    docs = RULEBOOK.invoke("robot weight limit bumpers", config={"run_name": "rulebook"})
    return {"rules": [d.page_content for d in docs]}


def inspect_subsystem(state: S) -> dict:
    sub = SUBSYSTEMS[state["idx"]]
    return {"logs": state["logs"] + [read_inspection_log.invoke({"team": state["team"], "subsystem": sub})],
            "idx": state["idx"] + 1}


def parse_logs(state: S) -> dict:
    out = []
    for line in state["logs"]:
        head, body = line.split(": ", 1)
        fields = dict(kv.split("=") for kv in body.split("; "))
        w = fields["weight"].removesuffix("kg")
        out.append({"subsystem": head.split("/")[1], "kg": float(w.split(".")[0]) if active("rob_lossy") else float(w),
                    "status": fields["status"]})
    return {"parsed": out}


def record_scores(state: S) -> dict:
    scores = {p["subsystem"]: p["status"] for p in state["parsed"]}
    if active("rob_memory"):
        scores = {("arm" if k == "drivetrain" else k): v for k, v in scores.items()}
    weight = round(sum(p["kg"] for p in state["parsed"]), 2)
    return {"scores": {"signoff": scores, "base_kg": weight}}


def scout_pick(state: S) -> dict:
    llm = ChatOpenAI(model=MODEL, base_url=server().base_url, api_key="test", max_retries=0)
    teams = alliance_roster.invoke({"alliance": state["entry"]["alliance"], "team": state["team"]})
    reply = llm.invoke([SystemMessage("Pick the alliance partner to pair with for auton."),
                        HumanMessage(json.dumps({"team": state["team"], "alliance_teams": teams}))],
                       config={"run_name": "scout_llm"})
    return {"partner": json.loads(reply.content)["partner"]}


def _scout():
    g = StateGraph(S)
    g.add_node("scout_pick", scout_pick)
    g.add_edge(START, "scout_pick")
    g.add_edge("scout_pick", END)
    return g.compile()


def plan_strategy(state: S) -> dict:
    limit = float(next(r for r in state["rules"] if r.startswith("R104")).split("exceed ")[1].split(" ")[0])
    climber = state["scores"]["base_kg"] + TEAMS[state["team"]]["climber_kg"] <= limit
    llm = ChatOpenAI(model=MODEL, base_url=server().base_url, api_key="test", max_retries=0)
    reply = llm.invoke([SystemMessage("Choose auton and endgame."), HumanMessage(json.dumps(
        {"weight_kg": state["scores"]["base_kg"], "climber": climber, "partner": state["partner"]}))],
        config={"run_name": "strategy_planner"})
    return {"strategy": dict(json.loads(reply.content), climber=climber)}


def build_form(state: S) -> dict:
    e = state["entry"]
    slot = 1 if active("rob_slot") else 0
    weight = state["scores"]["base_kg"] + (TEAMS[state["team"]]["climber_kg"] if state["strategy"]["climber"] else 0)
    return {"form": {"team": state["team"], "match": e["matches"][slot], "partner": state["partner"],
                     "alliance": e["alliance"], "weight_kg": round(weight, 2), "signoff": state["scores"]["signoff"],
                     "auton": state["strategy"]["auton"], "endgame": state["strategy"]["endgame"]}}


def submit_match_form(state: S) -> dict:
    f = state["form"]
    t = TEAMS[f["team"]]
    missing = [s for s in SUBSYSTEMS if f["signoff"].get(s) != "pass"]
    if missing:
        raise ValueError(f"field system: inspection incomplete for {f['team']}: no sign-off for {', '.join(missing)}")
    actual = round(sum(t["parts"].values()) + (t["climber_kg"] if f["endgame"] == "climb" else 0), 2)
    if actual > LIMIT:
        raise ValueError(f"field system: weigh-in {actual} kg for {f['team']} exceeds the R104 limit of {LIMIT} kg")
    if f["partner"] not in t["partners"] or f["partner"] == f["team"]:
        raise ValueError(f"field system: partner {f['partner']} is not in alliance {f['alliance']}")
    if f["match"] != t["matches"][0]:
        raise ValueError(f"field system: {f['team']} next qualification match is {t['matches'][0]}, form names {f['match']}")
    return {"form_id": f"MF-{f['team']}-{f['match']}"}


def _graph():
    g = StateGraph(S)
    for fn in (load_entry, fetch_rules, inspect_subsystem, parse_logs, record_scores, plan_strategy, build_form,
               submit_match_form):
        g.add_node(fn.__name__, fn)
    g.add_node("scout", _scout())
    g.add_edge(START, "load_entry")
    g.add_edge("load_entry", "fetch_rules")
    g.add_edge("fetch_rules", "inspect_subsystem")
    g.add_conditional_edges("inspect_subsystem", lambda s: "more" if s["idx"] < len(SUBSYSTEMS) else "done",
                            {"more": "inspect_subsystem", "done": "parse_logs"})
    g.add_edge("parse_logs", "record_scores")
    g.add_edge("record_scores", "scout")
    g.add_edge("scout", "plan_strategy")
    g.add_edge("plan_strategy", "build_form")
    g.add_edge("build_form", "submit_match_form")
    g.add_edge("submit_match_form", END)
    return g.compile()


def record(path, team: str, fault_id: str | None) -> None:
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"inspect team {team} and file its match form")
    with planted(fault_id):
        try:
            _graph().invoke({"team": team}, config={"callbacks": [tracer]})
        except Exception:
            pass


CASES = [
    Case("zt_robotics_1", "rob_slot", "off_by_one", "4631", "build_form", 1, "submit_match_form", 1,
         "The match form takes the team's second scheduled match instead of its next one."),
    Case("zt_robotics_2", "rob_rules", "wrong_retrieval", "4631", "rulebook", 1, "submit_match_form", 1,
         "The rulebook search returns last season's R104 with a 57.0 kg limit, so the climber is kept."),
    Case("zt_robotics_3", "rob_memory", "bad_memory_write", "2056", "record_scores", 1, "submit_match_form", 1,
         "The score record files the drivetrain sign-off under the arm, losing the drivetrain entry."),
    Case("zt_robotics_4", "rob_lossy", "lossy_parsing", "4631", "parse_logs", 1, "submit_match_form", 1,
         "The log parser cuts subsystem weights to whole kilograms, under-reporting the robot's weight."),
    Case("zt_robotics_5", "rob_entity", "subagent_wrong_entity", "4631", "scout_llm", 1, "submit_match_form", 1,
         "The scout subgraph picks team 4613 as partner, a near-twin number that is not in the alliance."),
]
