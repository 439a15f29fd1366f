"""Interlibrary loan desk (route a: LangGraph, ChatOpenAI, ToolNode, a retriever; recorded with TrajdebugTracer).

A patron asks for a book the library does not hold. The desk searches the union catalogue (a retriever),
looks the patron and their desk notes up (tools), lets a planner model read the lender's terms (a tool in a
ToolNode loop) and decide delivery and pickup, computes the due date and places the request
with the interlibrary loan system, which validates the citation, the borrower and the dates.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from .common import AgentSpec, Case, Reply, Req, active, brain, keyed, model_server, table, tool_call


AGENT = "interlibrary-loan-desk"
TODAY = dt.date(2026, 12, 2)

UNION_CATALOGUE = table(
    "oclc title author lender loan_days",
    [
        ('869311220', 'The Ordinary Virtues', 'Michael Ignatieff', 'UBC', 28),
        ('701554122', 'The Ordinary Virtues', 'Lena Hartwig', 'Carleton', 21),
        ('1032247781', 'Braiding Sweetgrass', 'Robin Wall Kimmerer', 'McGill', 28),
        ('318092456', 'The Making of the Atomic Bomb', 'Richard Rhodes', 'Queens', 21),
        ('915233041', 'Silent Spring Revisited', 'Conor Mark Jameson', 'UBC', 28),
        ('280017654', 'Silent Spring Revisited', 'Gino Ruiz', 'Laval', 14),
        ('677120983', 'The Gene', 'Siddhartha Mukherjee', 'Dalhousie', 28),
        ('450091337', 'Seeing Like a State', 'James C. Scott', 'McGill', 28),
    ],
)
LENDERS = {"UBC": 28, "Carleton": 21, "McGill": 21, "Queens": 21, "Laval": 14, "Dalhousie": 28}
PATRONS = keyed(
    "category branch loans_out limit",
    {
        'P-1001': ('graduate', 'Science Library', 5, 5),
        'P-1002': ('undergraduate', 'Main Library', 1, 3),
        'P-1003': ('faculty', 'Law Library', 4, 20),
        'P-1004': ('undergraduate', 'Main Library', 0, 3),
        'P-1005': ('graduate', 'Science Library', 2, 5),
    },
)
PROFILE_CACHE = {"P-1001": {"loans_out": 2, "as_of": "2026-11-04"}}
NOTES = {
    "P-1001": "Thesis on civic ethics. pickup: Science Library",
    "P-1002": "pickup: Main Library",
    "P-1003": "pickup: Law Library",
    "P-1004": "First ILL request. pickup: Main Library",
    "P-1005": "pickup: Science Library",
}
DESK_LOG = "P-2230 (faculty, health sciences) asked for courier delivery; pickup: Medical Library"
RESTRICTED = {"Medical Library": {"faculty"}}


class ILLRefused(RuntimeError):
    """The interlibrary loan system refused a request."""


class CatalogueRetriever(BaseRetriever):
    """Union catalogue search: title and author."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        title, _, author = query.partition(" by ")
        hits = [r for r in UNION_CATALOGUE if r["title"].lower() == title.strip().lower()]
        if not active("library.title_only"):
            hits = [r for r in hits if r["author"].lower() == author.strip().lower()]
        else:
            hits = sorted(hits, key=lambda r: r["loan_days"])
        return [Document(page_content=f"{r['title']} / {r['author']}", metadata=r) for r in hits]


@tool
def get_patron(patron: str) -> str:
    """The patron's borrower record."""
    rec = dict(PATRONS[patron], patron=patron)
    if active("library.profile_cache") and patron in PROFILE_CACHE:
        rec.update(PROFILE_CACHE[patron])
    return json.dumps(rec)


@tool
def recall_notes(patron: str) -> str:
    """Notes the desk keeps about a patron."""
    notes = NOTES[patron]
    if active("library.desk_log"):
        notes = f"{notes}\n{DESK_LOG}"
    return notes


@tool
def lender_terms(lender: str) -> str:
    """A lending library's terms for interlibrary loans."""
    return json.dumps({"lender": lender, "max_loan_days": LENDERS[lender], "renewals": 1})


@tool
def place_ill_request(request: dict) -> str:
    """Place the request with the interlibrary loan system."""
    record = next(r for r in UNION_CATALOGUE if r["oclc"] == request["oclc"])
    if record["author"].split()[-1].lower() not in request["citation"].lower():
        raise ILLRefused("bibliographic verification failed: record does not match the patron's citation")
    patron = PATRONS[request["patron"]]
    if request["delivery"] == "home_loan" and patron["loans_out"] >= patron["limit"]:
        raise ILLRefused("borrower is at the home-loan limit for their category")
    if patron["category"] not in RESTRICTED.get(request["pickup"], {patron["category"]}):
        raise ILLRefused("pickup location is restricted for this borrower category")
    days = (dt.date.fromisoformat(request["due"]) - TODAY).days
    if days > LENDERS[record["lender"]]:
        raise ILLRefused("due date is past the lending library's maximum loan period")
    return json.dumps({"ill_id": f"ILL-{request['oclc'][-4:]}", "status": "requested"})


@brain("library.planner")
def _planner(req: Req) -> Any:
    ctx = json.loads(req.user)
    first = ctx["holdings"][0]
    if not req.called("lender_terms"):
        return Reply(tool_calls=(tool_call("lender_terms", {"lender": first["lender"]}),))
    patron = ctx["patron"]
    delivery = "reading_room" if patron["loans_out"] >= patron["limit"] else "home_loan"
    pickups = [line.split("pickup:", 1)[1].strip() for line in ctx["notes"].splitlines() if "pickup:" in line]
    pickup = pickups[-1] if pickups else patron["branch"]
    return json.dumps({"oclc": first["oclc"], "lender": first["lender"], "delivery": delivery, "pickup": pickup})


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    request: dict
    holdings: list
    patron: dict
    notes: str
    decision: dict
    due: str


_GRAPH: Any = None


def graph() -> Any:
    global _GRAPH
    if _GRAPH is None:
        from langchain_openai import ChatOpenAI

        llm = ChatOpenAI(
            base_url=model_server().base_url, api_key="not-needed", model="gpt-4o-mini", max_retries=0, temperature=0
        ).bind_tools([lender_terms])
        retriever = CatalogueRetriever()

        def catalogue_search(state: State) -> dict:
            docs = retriever.invoke(state["request"]["citation"])
            return {"holdings": [d.metadata for d in docs]}

        def patron_lookup(state: State) -> dict:
            pid = state["request"]["patron"]
            patron = json.loads(get_patron.invoke({"patron": pid}))
            notes = recall_notes.invoke({"patron": pid})
            ctx = {"citation": state["request"]["citation"], "holdings": state["holdings"], "patron": patron}
            ctx["notes"] = notes
            return {"patron": patron, "notes": notes, "messages": [HumanMessage(json.dumps(ctx))]}

        def planner(state: State) -> dict:
            system = SystemMessage("desk: library.planner. Choose lender, delivery and pickup; reply in JSON.")
            return {"messages": [llm.invoke([system, *state["messages"]])]}

        def compute_due(state: State) -> dict:
            decision = json.loads(state["messages"][-1].content)
            terms = next(json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage))
            holding = next(h for h in state["holdings"] if h["oclc"] == decision["oclc"])
            days = min(terms["max_loan_days"], holding["loan_days"])
            if active("library.due_count"):
                days += 1  # counts the pickup day as a loan day
            return {"decision": decision, "due": (TODAY + dt.timedelta(days=days)).isoformat()}

        def submit(state: State) -> dict:
            req = dict(state["decision"], patron=state["request"]["patron"], due=state["due"])
            req["citation"] = state["request"]["citation"]
            return {"messages": [HumanMessage(place_ill_request.invoke({"request": req}))]}

        g = StateGraph(State)
        for fn in (catalogue_search, patron_lookup, planner, compute_due, submit):
            g.add_node(fn.__name__, fn)
        g.add_node("tools", ToolNode([lender_terms], handle_tool_errors=False))
        g.add_edge(START, "catalogue_search")
        g.add_edge("catalogue_search", "patron_lookup")
        g.add_edge("patron_lookup", "planner")
        g.add_conditional_edges("planner", tools_condition, {"tools": "tools", END: "compute_due"})
        g.add_edge("tools", "planner")
        g.add_edge("compute_due", "submit")
        g.add_edge("submit", END)
        _GRAPH = g.compile()
    return _GRAPH


def record(inp: dict, path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"ILL request for {inp['patron']}: {inp['citation']}")
    state = {"messages": [], "request": inp, "holdings": [], "patron": {}, "notes": "", "decision": {}, "due": ""}
    try:
        graph().invoke(state, config={"callbacks": [tracer]})
    except ILLRefused:
        pass


def _in(patron: str, citation: str) -> dict[str, Any]:
    return {"patron": patron, "citation": citation}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="a", domain="interlibrary loans", record=record,
    summary="catalogue retriever, patron and notes tools, planner LLM + ToolNode, due date, ILL submit",
    refs=[_in("P-1002", "Braiding Sweetgrass by Robin Wall Kimmerer"), _in("P-1003", "The Gene by Siddhartha Mukherjee"),
          _in("P-1005", "Seeing Like a State by James C. Scott"), _in("P-1001", "The Making of the Atomic Bomb by Richard Rhodes")],
    cases=[
        Case("g_library_catalogue", "wrong_retrieval", "library.title_only", _in("P-1002", "The Ordinary Virtues by Michael Ignatieff"),
             "CatalogueRetriever", "Lena Hartwig",
             "The catalogue search matches on title alone and ranks another author's same-titled book first."),
        Case("g_library_profile", "stale_data", "library.profile_cache", _in("P-1001", "Silent Spring Revisited by Conor Mark Jameson"),
             "get_patron", "2026-11-04",
             "The patron lookup answers from a month-old cached profile that undercounts the loans out."),
        Case("g_library_due", "off_by_one", "library.due_count", _in("P-1004", "Braiding Sweetgrass by Robin Wall Kimmerer"),
             "compute_due", "2026-12-24",
             "The due-date node counts the pickup day as a loan day, one day past the lender's maximum."),
        Case("g_library_notes", "context_pollution", "library.desk_log", _in("P-1005", "The Ordinary Virtues by Michael Ignatieff"),
             "recall_notes", "P-2230",
             "The notes lookup appends another patron's desk-log entry, whose pickup branch the planner then uses."),
    ],
)
# fmt: on
