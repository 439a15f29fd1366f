"""Hackathon judging (LangGraph StateGraph + ChatOpenAI + trajdebug tracer, tie-break subgraph)."""

from __future__ import annotations

import json
import operator
import re
from pathlib import Path
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from .common import Case
from .kit import active

AGENT, ROUTE, DOMAIN = "hackathon-judging-desk", "langgraph", "hackathon judging"
SHAPE = "submissions tool, eligibility loop, rubric retriever, per-team LLM judge + scorecard parser loop, normalise, tally, tie-break subgraph, publish"

EVENTS = {
    "greenhack": {"event": "GreenHack 2026", "track": "open", "kickoff": "2026-06-06",
                  "teams": ["Byte Club", "Lambda Llamas", "Null Pointers", "Kernel Panic"]},
    "medhack": {"event": "MedHack Basel", "track": "open", "kickoff": "2026-09-12",
                "teams": ["Pulse", "Dose Control", "Byte Club", "Triage Trio", "Vital Signs"]},
    "cityhack": {"event": "CityHack Lyon", "track": "open", "kickoff": "2026-04-18",
                 "teams": ["Tram Fans", "Open Streets", "Parkside"]},
    "agrihack": {"event": "AgriHack Ghent", "track": "open", "kickoff": "2026-05-09",
                 "teams": ["Soil Stack", "Crop Circle", "Agri Devs", "Hay Ho"]},
    "finhack": {"event": "FinHack Oslo", "track": "open", "kickoff": "2026-10-03",
                "teams": ["Ledger Legends", "Coin Toss", "Fjord Finance"]},
    "edhack": {"event": "EdHack Porto", "track": "open", "kickoff": "2026-03-21",
               "teams": ["Chalk", "Quiz Wizards", "Study Buddies", "Recess"]},
}
INPUTS = {k: f"Judge {v['event']} ({v['track']} track), kickoff {v['kickoff']}" for k, v in EVENTS.items()}
REFS = ["cityhack", "agrihack", "finhack", "edhack"]

CASES = [
    Case("zk_hack_1", "wrong_tool_args", ("repo_activity", 1), ("publish_results", 1), "greenhack",
         "The eligibility loop asks repo_activity for commits since a week before kickoff, so a pre-built repo passes."),
    Case("zk_hack_2", "subagent_wrong_entity", ("demo_notes", 1), ("publish_results", 1), "medhack",
         "The tie-break subgraph fetches demo notes for a similarly named team, and its pick is not a finalist."),
    Case("zk_hack_3", "off_by_one", ("normalise", 1), ("publish_results", 1), "greenhack",
         "normalise divides the summed scores by one judge fewer than the panel, pushing averages past 10."),
    Case("zk_hack_4", "lossy_parsing", ("parse_scorecard", 1), ("publish_results", 1), "medhack",
         "parse_scorecard drops the last criterion line (demo) from every scorecard, starting with the first team."),
    Case("zk_hack_5", "wrong_retrieval", ("rubric_store", 1), ("publish_results", 1), "greenhack",
         "rubric_store returns the student-track rubric for an open-track event, so the judges score design instead of impact."),
]

RUBRICS = {"open": ["innovation", "impact", "execution", "demo"], "student": ["innovation", "design", "execution", "demo"]}


def _score(team: str, crit: str, judge: int) -> int:
    return 5 + (sum(map(ord, team + crit)) + judge * 3) % 5


def policy(req) -> str:
    prompt = req.body["messages"][-1]["content"]
    if prompt.startswith("Score team"):
        team = re.search(r"Score team '([^']+)'", prompt).group(1)
        crits = json.loads(prompt.split("\n", 1)[1])
        lines = [f"{c}: " + ",".join(str(_score(team, c, j)) for j in range(3)) for c in crits]
        return "\n".join(lines)
    if prompt.startswith("Compare the demos"):
        notes = json.loads(prompt.split("\n", 1)[1])
        best = max(notes, key=lambda n: (n["wow"], n["team"]))
        return f"WINNER: {best['team']}"
    return "ok"


class Rubrics(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        track = "student" if active("zk_hack_5") else re.search(r"(\w+) track", query).group(1)
        return [Document(page_content=json.dumps(RUBRICS[track]), metadata={"track": track, "year": 2026})]


class Scorecard(BaseOutputParser[dict]):
    def parse(self, text: str) -> dict:
        card = {}
        lines = text.splitlines()
        if active("zk_hack_4"):
            lines = lines[:-1] if len(lines) > 3 else lines
        for line in lines:
            crit, vals = line.split(": ")
            card[crit] = [int(v) for v in vals.split(",")]
        return card


@tool
def list_submissions(event: str) -> list:
    """Submitted projects of an event."""
    key = next(k for k, v in EVENTS.items() if v["event"] == event)
    slug = event.lower().replace(" ", "-")
    return [{"team": t, "repo": f"git.example.org/{slug}/" + t.lower().replace(" ", "-")} for t in EVENTS[key]["teams"]]


@tool
def repo_activity(repo: str, since: str) -> dict:
    """Commits in a repository since a date."""
    first = "2026-05-28" if repo.endswith("greenhack-2026/byte-club") else "2026-12-31"
    for ev in EVENTS.values():
        if ev["event"].lower().replace(" ", "-") in repo and first > ev["kickoff"]:
            first = ev["kickoff"]
    seen = max(first, since)
    return {"repo": repo, "since": since, "commits": 40 + len(repo), "first_commit": seen}


@tool
def demo_notes(team: str) -> dict:
    """The demo-day notes for a team."""
    return {"team": team, "wow": (sum(map(ord, team)) % 7) + (5 if team.endswith(" II") else 0), "ran_live": True}


@tool
def publish_results(results: dict) -> dict:
    """Publish the final ranking to the event site."""
    ev = next(v for v in EVENTS.values() if v["event"] == results["event"])
    for row in results["ranking"]:
        if set(row["criteria"]) != set(RUBRICS[ev["track"]]):
            missing = sorted(set(RUBRICS[ev["track"]]) - set(row["criteria"]))
            raise ValueError(f"400 Bad Request: scorecard for '{row['team']}' does not follow the {ev['track']} "
                             f"rubric (missing {', '.join(missing)})")
        if not 0 <= row["score"] <= 10:
            raise ValueError(f"400 Bad Request: score {row['score']} for '{row['team']}' is outside the 0-10 scale")
    win = results["winner"]
    if win not in [r["team"] for r in results["ranking"][:2]]:
        raise ValueError(f"409 Conflict: winner '{win}' is not one of the finalists")
    for row in results["ranking"]:
        if results["event"] == "GreenHack 2026" and row["team"] == "Byte Club":
            raise ValueError("409 Conflict: team 'Byte Club' has commits before kickoff 2026-06-06 (first 2026-05-28)")
    return {"published": True, "url": "https://results.example.org/" + results["event"].replace(" ", "-")}


class Judging(TypedDict, total=False):
    request: str
    event: str
    track: str
    kickoff: str
    teams: list
    cursor: int
    eligible: Annotated[list, operator.add]
    rubric: list
    cards: Annotated[list, operator.add]
    averages: list
    ranking: list
    finalists: list
    winner: str
    published: dict


class Tie(TypedDict, total=False):
    finalists: list
    notes: list
    winner: str


def tiebreak_graph(llm):
    def gather(s: Tie) -> dict:
        notes = []
        for i, t in enumerate(s["finalists"]):
            name = t + " II" if active("zk_hack_2") and i == 0 else t
            notes.append(demo_notes.invoke({"team": name}))
        return {"notes": notes}

    def compare(s: Tie) -> dict:
        text = llm.with_config(run_name="compare_demos").invoke("Compare the demos\n" + json.dumps(s["notes"])).content
        return {"winner": text.split(": ", 1)[1]}

    g = StateGraph(Tie)
    g.add_node("gather_demo_notes", gather)
    g.add_node("compare", compare)
    g.add_edge(START, "gather_demo_notes")
    g.add_edge("gather_demo_notes", "compare")
    g.add_edge("compare", END)
    return g.compile()


def build(llm):
    retriever = Rubrics().with_config(run_name="rubric_store")
    sub = tiebreak_graph(llm)

    def intake(s: Judging) -> dict:
        m = re.search(r"Judge (.+) \((\w+) track\), kickoff ([\d-]+)", s["request"])
        subs = list_submissions.invoke({"event": m.group(1)})
        return {"event": m.group(1), "track": m.group(2), "kickoff": m.group(3), "teams": subs, "cursor": 0}

    def eligibility(s: Judging) -> dict:
        team = s["teams"][s["cursor"]]
        since = s["kickoff"] if active("zk_hack_1") else s["kickoff"][:4] + "-01-01"
        act = repo_activity.invoke({"repo": team["repo"], "since": since})
        ok = act["first_commit"] >= s["kickoff"]
        return {"eligible": [team["team"]] if ok else [], "cursor": s["cursor"] + 1}

    def next_team(s: Judging) -> str:
        return "eligibility" if s["cursor"] < len(s["teams"]) else "load_rubric"

    def load_rubric(s: Judging) -> dict:
        docs = retriever.invoke(f"judging rubric for the {s['track']} track")
        return {"rubric": json.loads(docs[0].page_content), "cursor": 0}

    def judge(s: Judging) -> dict:
        team = s["eligible"][s["cursor"]]
        chain = llm.with_config(run_name="judge_panel") | Scorecard().with_config(run_name="parse_scorecard")
        card = chain.invoke(f"Score team '{team}' on each criterion, three judges\n" + json.dumps(s["rubric"]))
        return {"cards": [{"team": team, "card": card}], "cursor": s["cursor"] + 1}

    def next_card(s: Judging) -> str:
        return "judge" if s["cursor"] < len(s["eligible"]) else "normalise"

    def normalise(s: Judging) -> dict:
        out = []
        for c in s["cards"]:
            judges = len(next(iter(c["card"].values())))
            div = judges - 1 if active("zk_hack_3") else judges
            crit = {k: sum(v) / div for k, v in c["card"].items()}
            out.append({"team": c["team"], "criteria": crit, "score": round(sum(crit.values()) / len(crit), 2)})
        return {"averages": out}

    def tally(s: Judging) -> dict:
        ranking = sorted(s["averages"], key=lambda r: -r["score"])
        return {"ranking": ranking, "finalists": [r["team"] for r in ranking[:2]]}

    def tiebreak(s: Judging) -> dict:
        res = sub.invoke({"finalists": s["finalists"]})
        return {"winner": res["winner"]}

    def publish(s: Judging) -> dict:
        return {"published": publish_results.invoke({"results": {"event": s["event"], "ranking": s["ranking"],
                                                                  "winner": s["winner"]}})}

    g = StateGraph(Judging)
    for name, fn in [("intake", intake), ("eligibility", eligibility), ("load_rubric", load_rubric), ("judge", judge),
                     ("normalise", normalise), ("tally", tally), ("tiebreak", tiebreak), ("publish", publish)]:
        g.add_node(name, fn)
    g.add_edge(START, "intake")
    g.add_edge("intake", "eligibility")
    g.add_conditional_edges("eligibility", next_team, ["eligibility", "load_rubric"])
    g.add_edge("load_rubric", "judge")
    g.add_conditional_edges("judge", next_card, ["judge", "normalise"])
    g.add_edge("normalise", "tally")
    g.add_edge("tally", "tiebreak")
    g.add_edge("tiebreak", "publish")
    g.add_edge("publish", END)
    return g.compile()


def record(server, inp: str, out: Path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(out), name=AGENT, task=INPUTS[inp])
    build(llm).invoke({"request": INPUTS[inp], "eligible": [], "cards": []},
                      config={"callbacks": [tracer], "recursion_limit": 80})
