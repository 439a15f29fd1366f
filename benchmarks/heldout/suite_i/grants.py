"""Grant review panel (LangGraph, recorded by `TrajdebugTracer`): for each proposal of a funding
call the graph fetches the text, has the model extract its facts, triages it to the research or the
equipment reviewer (a conditional edge), parses and normalizes the score sheet, checks the budget and
files the sheet on the funder's portal; then it ranks the call and submits the panel's decision."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any, TypedDict

from benchmarks.heldout.suite_i._kit import Case, active, last_user, system_of
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer


NAME = "grant-panel"
ROUTE = "langgraph"

CRITERIA = {"research": ["methods", "impact", "team"], "equipment": ["methods", "shared_use", "quote"]}
PROPOSALS = {
    "GR-101": ("Soil microbiome under drought", "research", 240_000, "Dr. Amara Osei"),
    "GR-102": ("Cryo-EM detector upgrade", "equipment", 480_000, "Dr. Lena Fischer"),
    "GR-103": ("Reading recovery in rural schools", "research", 150_000, "Dr. Tomas Silva"),
    "GR-104": ("Shared mass spectrometer", "equipment", 390_000, "Dr. Priya Natarajan"),
    "GR-105": ("Coastal flood early warning", "research", 310_000, "Dr. Jonas Berg"),
    "GR-106": ("Long-read sequencing core", "equipment", 520_000, "Dr. Chen Wei"),
    "GR-107": ("Urban heat and sleep", "research", 95_000, "Dr. Sofia Romano"),
    "GR-108": ("Seismic array for the valley", "equipment", 275_000, "Dr. Kofi Mensah"),
    "GR-109": ("Bee pathogens and pesticides", "research", 180_000, "Dr. Ines Duarte"),
}
# A funding call: the proposals it received, in portal order.
INPUTS = {
    "call-ecology": ["GR-101", "GR-104", "GR-105", "GR-108", "GR-109"],
    "call-instruments": ["GR-103", "GR-102", "GR-106", "GR-107"],
    "call-society": ["GR-107", "GR-101", "GR-103", "GR-106", "GR-109"],
    "call-open": ["GR-105", "GR-104", "GR-108", "GR-102"],
    "call-ecology-2": ["GR-109", "GR-101", "GR-105", "GR-103"],
    "ref-spring": ["GR-103", "GR-109", "GR-104"],
    "ref-summer": ["GR-106", "GR-105", "GR-101", "GR-107"],
    "ref-autumn": ["GR-108", "GR-102", "GR-103", "GR-109", "GR-105"],
    "ref-winter": ["GR-101", "GR-106"],
}
REFS = ("ref-spring", "ref-summer", "ref-autumn", "ref-winter")

CASES = (
    Case("grants-cut", "gr_cut", "truncated_result", "call-ecology", "get_proposal", 'Budget justification: the sta"',
         "The portal's document API cuts GR-104's text before its budget line, so its budget is extracted as 0."),
    Case("grants-triage", "gr_triage", "wrong_routing", "call-instruments", "triage",
         '"proposal": "GR-102", "track": "research"',
         "Triage sends the Cryo-EM detector upgrade, an equipment proposal, to the research reviewer."),
    Case("grants-sheet", "gr_sheet", "format_drift", "call-society", "normalize_sheet", '"budget_eur": "EUR 150,000"',
         "The sheet normalizer writes GR-103's budget as display text ('EUR 150,000') where the portal expects a number."),
    Case("grants-context", "gr_context", "context_pollution", "call-ecology-2", "compose_prompt",
         "Context from the previous review",
         "The extraction prompt for GR-105 carries the previous proposal's text, whose budget line the model reads first."),
    Case("grants-cursor", "gr_cursor", "off_by_one", "call-open", "advance_cursor", '"remaining": 0, "scored": 3',
         "The cursor counts one proposal too many as done after the third sheet, so GR-102 is never reviewed."),
)


class PortalRejected(RuntimeError):
    """The funder's portal refused a submission."""

    __module__ = "funderportal.client"


# -- the scripted model ----------------------------------------------------------------------------


def _score(proposal: str, criterion: str) -> int:
    return 5 + zlib.crc32(f"{proposal}:{criterion}".encode()) % 5


def policy(request: Any) -> str:
    system, prompt = system_of(request), last_user(request)
    if system.startswith("You extract"):
        fields = dict(re.findall(r"^(Proposal|Title|Type|Lead): (.+)$", prompt, re.MULTILINE))
        budget = re.search(r"Budget: EUR ([\d,]+)", prompt)
        return json.dumps({"proposal": fields["Proposal"], "title": fields["Title"], "type": fields["Type"],
                           "lead": fields["Lead"], "budget_eur": int(budget.group(1).replace(",", "")) if budget else 0})
    track = "equipment" if "equipment" in system else "research"
    proposal = re.search(r"GR-\d+", prompt).group(0)
    lines = [f"- {c}: {_score(proposal, c)}/10" for c in CRITERIA[track]]
    return f"Score sheet for {proposal}\n" + "\n".join(lines) + "\nRecommendation: fund if the budget allows."


# -- tools and parsers -----------------------------------------------------------------------------


def _text(proposal: str) -> str:
    title, kind, budget, lead = PROPOSALS[proposal]
    summary = (f"This proposal, {title.lower()}, builds on five years of pilot work by the team and "
               f"partners in three regions. Work package 1 collects baseline data; work package 2 tests "
               f"the intervention; work package 3 shares results with practitioners and the public. ")
    return (f"Proposal: {proposal}\nTitle: {title}\nType: {kind}\nLead: {lead}\nSummary: {summary * 2}\n"
            f"Budget justification: the staff, equipment and travel costs are itemized in annex B.\n"
            f"Budget: EUR {budget:,}\n")


@tool
def get_call_rules(call_id: str) -> dict[str, Any]:
    """The rules of a funding call: budget cap per proposal and how many are funded."""
    return {"call": call_id, "cap_eur": 500_000, "fund_top": 2, "criteria": CRITERIA}


@tool
def get_proposal(proposal_id: str) -> str:
    """The submitted text of a proposal."""
    text = _text(proposal_id)
    if active("gr_cut") and proposal_id == "GR-104":
        text = text[: text.index("Budget justification") + 29]
    return text


@tool
def check_budget(proposal_id: str, budget_eur: Any, cap_eur: int) -> dict[str, Any]:
    """Whether a proposal's budget is within the call's cap."""
    within = budget_eur <= cap_eur if isinstance(budget_eur, int) else None
    return {"proposal": proposal_id, "within_cap": within}


@tool
def file_score_sheet(sheet: dict[str, Any]) -> dict[str, Any]:
    """File a proposal's score sheet on the funder's portal."""
    proposal = sheet["proposal"]
    _, kind, budget, _ = PROPOSALS[proposal]
    if not isinstance(sheet["budget_eur"], int):
        raise PortalRejected(f"{proposal}: budget_eur must be an integer amount, got {sheet['budget_eur']!r}")
    if sorted(sheet["scores"]) != sorted(CRITERIA[kind]):
        raise PortalRejected(f"{proposal} was submitted as {kind}: the sheet must score {CRITERIA[kind]}, "
                             f"it scores {sorted(sheet['scores'])}")
    if sheet["budget_eur"] != budget:
        raise PortalRejected(f"{proposal}: sheet declares EUR {sheet['budget_eur']:,}, the submission "
                             f"requests EUR {budget:,}")
    return {"proposal": proposal, "sheet_id": f"SS-{proposal[3:]}-{sum(sheet['scores'].values())}"}


@tool
def submit_panel(call_id: str, ranking: list[str], funded: list[str]) -> dict[str, Any]:
    """Submit the panel's ranking and funding decision for a call."""
    expected = INPUTS[call_id]
    missing = sorted(set(expected) - set(ranking))
    if missing:
        raise PortalRejected(f"call {call_id} received {len(expected)} proposals, the panel ranked "
                             f"{len(ranking)}: no decision on {', '.join(missing)}")
    return {"call": call_id, "decision": f"DEC-{call_id}", "funded": funded}


def _parse_extraction(text: str) -> dict[str, Any]:
    return json.loads(text)


def _triage(facts: dict[str, Any]) -> dict[str, Any]:
    track = facts["type"]
    if active("gr_triage") and facts["proposal"] == "GR-102":
        track = "research" if "detector" in facts["title"].lower() else track
    return {"proposal": facts["proposal"], "track": track}


def _compose(texts: dict[str, str]) -> str:
    if active("gr_context") and "GR-105" in texts["current"] and texts["previous"]:
        return f"Context from the previous review:\n{texts['previous']}\n---\n{texts['current']}"
    return texts["current"]


def _parse_scores(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in re.findall(r"- (\w+): (\d+)/10", text)}


def _normalize(sheet: dict[str, Any]) -> dict[str, Any]:
    budget = sheet["budget_eur"]
    if active("gr_sheet") and sheet["proposal"] == "GR-103":
        budget = f"EUR {budget:,}"
    return {**sheet, "budget_eur": budget, "total": sum(sheet["scores"].values())}


def _advance(cursor: dict[str, int]) -> dict[str, int]:
    scored = cursor["scored"] + 1
    if active("gr_cursor") and scored == 3:
        scored += 1
    return {"scored": cursor["scored"] + 1, "total": cursor["total"], "remaining": cursor["total"] - scored}


compose_prompt = RunnableLambda(_compose, name="compose_prompt")
parse_extraction = RunnableLambda(_parse_extraction, name="parse_extraction")
triage = RunnableLambda(_triage, name="triage")
parse_scores = RunnableLambda(_parse_scores, name="parse_scores")
normalize_sheet = RunnableLambda(_normalize, name="normalize_sheet")
advance_cursor = RunnableLambda(_advance, name="advance_cursor")


# -- the graph -------------------------------------------------------------------------------------


class Panel(TypedDict, total=False):
    call: str
    proposals: list[str]
    rules: dict[str, Any]
    text: str
    previous: str
    facts: dict[str, Any]
    track: str
    sheet: dict[str, Any]
    sheets: list[dict[str, Any]]
    cursor: dict[str, int]
    decision: dict[str, Any]


def _graph(llm: ChatOpenAI) -> Any:
    def load_call(state: Panel) -> Panel:
        rules = get_call_rules.invoke({"call_id": state["call"]})
        return {"rules": rules, "sheets": [], "cursor": {"scored": 0, "total": len(state["proposals"])}}

    def fetch(state: Panel) -> Panel:
        return {"text": get_proposal.invoke({"proposal_id": state["proposals"][state["cursor"]["scored"]]})}

    def extract(state: Panel) -> Panel:
        prompt = compose_prompt.invoke({"current": state["text"], "previous": state.get("previous", "")})
        reply = llm.invoke([("system", "You extract the facts of a grant proposal as JSON."), ("user", prompt)])
        facts = parse_extraction.invoke(reply.content)
        return {"facts": facts, "track": triage.invoke(facts)["track"], "previous": state["text"]}

    def route_track(state: Panel) -> str:
        return f"review_{state['track']}"

    def review(track: str) -> Any:
        def node(state: Panel) -> Panel:
            facts = state["facts"]
            reply = llm.invoke([("system", f"You score {track} proposals on {', '.join(CRITERIA[track])}, out of 10."),
                                ("user", f"Score proposal {facts['proposal']}:\n{state['text']}")])
            sheet = {"proposal": facts["proposal"], "track": track, "budget_eur": facts["budget_eur"],
                     "scores": parse_scores.invoke(reply.content)}
            return {"sheet": normalize_sheet.invoke(sheet)}
        return node

    def file_sheet(state: Panel) -> Panel:
        sheet = state["sheet"]
        budget = check_budget.invoke({"proposal_id": sheet["proposal"], "budget_eur": sheet["budget_eur"],
                                      "cap_eur": state["rules"]["cap_eur"]})
        filed = file_score_sheet.invoke({"sheet": sheet})
        return {"sheets": [*state["sheets"], {**sheet, **filed, "within_cap": budget["within_cap"]}]}

    def advance(state: Panel) -> Panel:
        return {"cursor": advance_cursor.invoke({**state["cursor"]})}

    def next_proposal(state: Panel) -> str:
        return "fetch" if state["cursor"]["remaining"] > 0 else "rank"

    def rank(state: Panel) -> Panel:
        ranked = sorted(state["sheets"], key=lambda s: (-s["total"], s["proposal"]))
        funded = [s["proposal"] for s in ranked if s["within_cap"]][: state["rules"]["fund_top"]]
        decision = submit_panel.invoke({"call_id": state["call"], "ranking": [s["proposal"] for s in ranked],
                                        "funded": funded})
        return {"decision": decision}

    g = StateGraph(Panel)
    for name, node in (("load_call", load_call), ("fetch", fetch), ("extract", extract), ("file_sheet", file_sheet),
                       ("advance", advance), ("rank", rank)):
        g.add_node(name, node)
    for track in CRITERIA:
        g.add_node(f"review_{track}", review(track))
        g.add_edge(f"review_{track}", "file_sheet")
    g.add_edge(START, "load_call")
    g.add_edge("load_call", "fetch")
    g.add_edge("fetch", "extract")
    g.add_conditional_edges("extract", route_track, [f"review_{t}" for t in CRITERIA])
    g.add_edge("file_sheet", "advance")
    g.add_conditional_edges("advance", next_proposal, ["fetch", "rank"])
    g.add_edge("rank", END)
    return g.compile()


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="panel-reviewer", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"review the proposals of {input_id}")
    try:
        _graph(llm).invoke({"call": input_id, "proposals": INPUTS[input_id]},
                           config={"callbacks": [tracer], "recursion_limit": 200})
    except PortalRejected:
        pass
