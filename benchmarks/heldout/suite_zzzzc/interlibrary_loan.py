"""interlibrary-loan: a public library's interlibrary-loan desk (langgraph route).

A LangGraph StateGraph: the model reads the patron's request (JSON parser), a catalog retriever finds
the work, a tool-calling model checks the patron and the lenders (parallel tool calls through a
ToolNode) and asks for a shipping quote, a routing function picks loan or purchase, and the request
goes to the regional ILL system.
"""
from __future__ import annotations

import json
import operator
import re
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from common import Reply, chat_messages, last_user, system_text, tool_call, tool_results_chat
from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "interlibrary-loan"
ROUTE = "langgraph"
DOMAIN = "public library interlibrary-loan desk"
SHAPE = "StateGraph: understand (llm + JSON parser) -> catalog retriever -> tool-calling model <-> ToolNode (parallel patron/lender checks, shipping quote) -> choose -> routing function -> loan or purchase tool"
SWITCH = None

INPUTS = [
    {"task": "ILL: Silence by John Cage for P-20931",
     "text": "Patron P-20931 at Eastgate branch needs 'Silence' by John Cage in print by 2026-12-18."},
    {"task": "ILL: The Overstory by Richard Powers for P-11873",
     "text": "Patron P-11873 at Millbrook branch needs 'The Overstory' by Richard Powers in print by 2026-12-22."},
    {"task": "ILL: Invisible Cities by Italo Calvino for P-30412",
     "text": "Patron P-30412 at Eastgate branch needs 'Invisible Cities' by Italo Calvino in print by 2027-01-08."},
    {"task": "ILL: The Power Broker by Robert Caro for P-45590",
     "text": "Patron P-45590 at Riverside branch needs 'The Power Broker' by Robert Caro in print by 2027-01-15."},
    {"task": "ILL: Braiding Sweetgrass by Robin Wall Kimmerer for P-52208",
     "text": "Patron P-52208 at Millbrook branch needs 'Braiding Sweetgrass' by Robin Wall Kimmerer in print by 2026-12-30."},
]

CATALOG = [
    {"oclc": "3312047", "title": "Silence", "author": "Shusaku Endo", "year": 1969},
    {"oclc": "1283318", "title": "Silence", "author": "John Cage", "year": 1961},
    {"oclc": "904512", "title": "The Overstory", "author": "Richard Powers", "year": 2018},
    {"oclc": "220917", "title": "Invisible Cities", "author": "Italo Calvino", "year": 1974},
    {"oclc": "1158", "title": "The Power Broker", "author": "Robert Caro", "year": 1974},
    {"oclc": "794616", "title": "Braiding Sweetgrass", "author": "Robin Wall Kimmerer", "year": 2013},
    {"oclc": "550031", "title": "Invisible Man", "author": "Ralph Ellison", "year": 1952},
]
HOLDINGS = {  # oclc -> lenders (system, library, format, available)
    "3312047": [("NWL", "Northwood Public", "print", True)],
    "1283318": [("EGL", "Eastgate North", "print", True), ("SCC", "South County College", "print", True),
                ("HVL", "Harbor View Library", "ebook", True)],
    "904512": [("SCC", "South County College", "print", True), ("HVL", "Harbor View Library", "ebook", True),
               ("NWL", "Northwood Public", "print", False)],
    "220917": [("EGL", "Eastgate North", "print", True), ("NWL", "Northwood Public", "print", True)],
    "1158": [("SCC", "South County College", "print", True), ("HVL", "Harbor View Library", "print", True),
             ("NWL", "Northwood Public", "print", False)],
    "794616": [("HVL", "Harbor View Library", "print", True), ("SCC", "South County College", "ebook", True)],
}
OWN_SYSTEM = "EGL"


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    request: dict
    candidates: list
    lenders: list
    path: str
    result: dict


# ------------------------------------------------------------------ the model's side
def brain(request):
    system = system_text(request)
    if system.startswith("Read the patron"):
        t = last_user(request)
        m = re.search(r"Patron (\S+) at (\w+) branch needs '(.+?)' by (.+?) in (\w+) by (\d{4})-(\d\d)-(\d\d)", t)
        needed = f"{m.group(6)}-{m.group(7)}-{m.group(8)}"
        if SWITCH == "C5":
            needed = f"{m.group(7)}/{m.group(8)}/{m.group(6)}"
        return json.dumps({"patron": m.group(1), "branch": m.group(2), "title": m.group(3), "author": m.group(4),
                           "format": m.group(5), "needed_by": needed})
    results = tool_results_chat(request)
    req = json.loads(next(m["content"] for m in chat_messages(request) if m.get("role") == "user"))
    if "check_lenders" not in results:
        fmt = "ebook" if SWITCH == "C2" else req["format"]
        return Reply(tool_calls=(
            tool_call("check_patron", {"patron_id": req["patron"]}),
            tool_call("check_lenders", {"oclc": req["oclc"], "item_format": fmt, "exclude_system": OWN_SYSTEM}),
        ))
    lenders = [x for x in results["check_lenders"][0] if x["available"]]
    if "shipping_quote" not in results and lenders:
        return Reply(tool_calls=(tool_call("shipping_quote", {"lender": lenders[0]["library"], "branch": req["branch"]}),))
    return f"{len(lenders)} lenders can supply OCLC {req['oclc']}; ready to request."


# ------------------------------------------------------------------ tools and retriever
class CatalogRetriever(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        q = json.loads(query)

        def score(rec):
            s = 2 if rec["title"].lower() == q["title"].lower() else 0
            if SWITCH != "C1":
                s += 1 if rec["author"].lower() == q["author"].lower() else 0
            return s

        hits = sorted((r for r in CATALOG if score(r) > 0), key=score, reverse=True)
        return [Document(page_content=f"{r['title']} / {r['author']} ({r['year']})", metadata=dict(r)) for r in hits[:3]]


@tool
def check_patron(patron_id: str) -> dict:
    """Patron standing: active card, open loans, ILL quota."""
    return {"patron_id": patron_id, "status": "active", "open_ill": 1, "quota": 5}


@tool
def check_lenders(oclc: str, item_format: str, exclude_system: str) -> list:
    """Network libraries holding the work in a format, leaving out one system."""
    rows = [{"system": s, "library": lib, "format": f, "available": a} for s, lib, f, a in HOLDINGS.get(oclc, [])]
    rows = [r for r in rows if r["format"] == item_format]
    if SWITCH != "C3":
        rows = [r for r in rows if r["system"] != exclude_system]
    return rows


@tool
def shipping_quote(lender: str, branch: str) -> dict:
    """Courier days and cost from a lender to a branch."""
    return {"lender": lender, "branch": branch, "days": 4, "cost": 0.0}


@tool
def send_ill_request(request: dict) -> dict:
    """Submit the request to the regional ILL system."""
    if not re.fullmatch(r"\d{4}-\d\d-\d\d", str(request.get("needed_by", ""))):
        raise ValueError(f"ILL schema: needed_by {request.get('needed_by')!r} is not an ISO 8601 date")
    if request["lender_system"] == OWN_SYSTEM:
        raise ValueError(f"ILL system refused: lender {request['lender']} belongs to the requesting system {OWN_SYSTEM}; "
                         f"use an intra-system hold")
    if request["lender_format"] != "print":
        raise ValueError(f"ILL system refused: the {request['lender_format']} licence of {request['lender']} does not "
                         f"permit interlibrary lending")
    work = next(r for r in CATALOG if r["oclc"] == request["oclc"])
    if work["author"] != request["cited_author"]:
        raise ValueError(f"ILL system refused: OCLC {request['oclc']} is '{work['title']}' by {work['author']}, the "
                         f"citation names {request['cited_author']}")
    return {"ill_id": f"ILL-{request['oclc']}-{request['patron']}", "status": "sent"}


@tool
def create_purchase_request(request: dict) -> dict:
    """Suggest a purchase for a work no lender can supply."""
    available = [r for r in request["lenders"] if r["available"]]
    if available:
        raise ValueError(f"purchase refused: OCLC {request['oclc']} is available from {len(available)} network "
                         f"lenders; purchase requests are only for titles no lender can supply")
    return {"purchase_id": f"PR-{request['oclc']}", "status": "queued"}


TOOLS = [check_patron, check_lenders, shipping_quote]


def build(llm):
    parser_chain = llm | JsonOutputParser()
    retriever = CatalogRetriever().with_config(run_name="catalog_search")
    agent_llm = llm.bind_tools(TOOLS)

    def understand(state: State) -> dict:
        text = state["messages"][0].content
        req = parser_chain.invoke([SystemMessage("Read the patron request; answer JSON: patron, branch, title, author, format, needed_by."),
                                   HumanMessage(text)])
        return {"request": req}

    def search_catalog(state: State) -> dict:
        r = state["request"]
        docs = retriever.invoke(json.dumps({"title": r["title"], "author": r["author"]}))
        return {"candidates": [d.metadata for d in docs]}

    def agent(state: State) -> dict:
        req = dict(state["request"], oclc=state["candidates"][0]["oclc"])
        msgs = [SystemMessage("You are the ILL assistant. Check the patron and the lenders, then get a shipping quote."),
                HumanMessage(json.dumps(req))] + [m for m in state["messages"][1:]]
        return {"messages": [agent_llm.invoke(msgs)]}

    def needs_tools(state: State) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else "choose"

    def choose(state: State) -> dict:
        lenders = []
        for m in state["messages"]:
            if isinstance(m, ToolMessage) and m.name == "check_lenders":
                lenders = json.loads(m.content)
        return {"lenders": lenders}

    def route_request(state: State) -> str:
        lenders = state["lenders"]
        if SWITCH == "C4":
            return "request_loan" if lenders and lenders[-1]["available"] else "suggest_purchase"
        return "request_loan" if any(x["available"] for x in lenders) else "suggest_purchase"

    def request_loan(state: State) -> dict:
        r, work = state["request"], state["candidates"][0]
        lender = next(x for x in state["lenders"] if x["available"])
        out = send_ill_request.invoke({"request": {
            "oclc": work["oclc"], "cited_author": r["author"], "patron": r["patron"], "branch": r["branch"],
            "needed_by": r["needed_by"], "lender": lender["library"], "lender_system": lender["system"],
            "lender_format": lender["format"]}})
        return {"result": out}

    def suggest_purchase(state: State) -> dict:
        out = create_purchase_request.invoke({"request": {"oclc": state["candidates"][0]["oclc"],
                                                          "lenders": state["lenders"]}})
        return {"result": out}

    g = StateGraph(State)
    for name, fn in [("understand", understand), ("search_catalog", search_catalog), ("agent", agent),
                     ("choose", choose), ("request_loan", request_loan), ("suggest_purchase", suggest_purchase)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_edge(START, "understand")
    g.add_edge("understand", "search_catalog")
    g.add_edge("search_catalog", "agent")
    g.add_conditional_edges("agent", needs_tools, ["tools", "choose"])
    g.add_edge("tools", "agent")
    g.add_conditional_edges("choose", route_request, ["request_loan", "suggest_purchase"])
    g.add_edge("request_loan", END)
    g.add_edge("suggest_purchase", END)
    return g.compile()


def execute(inp, server, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    try:
        build(llm).invoke({"messages": [HumanMessage(inp["text"])]}, config={"callbacks": [tracer]})
    except ValueError:
        pass


CASES = [
    {"id": "zc61-ill-1", "input": 0, "switch": "C1", "fault_kind": "wrong_retrieval",
     "root": {"name": "catalog_search", "occurrence": 1, "kind": "retrieval"},
     "failure": {"name": "send_ill_request", "occurrence": 1},
     "description": "The catalog search ranks on the title alone and returns Shusaku Endo's 'Silence' (OCLC 3312047) first for a request for John Cage's 'Silence'."},
    {"id": "zc61-ill-2", "input": 1, "switch": "C2", "fault_kind": "wrong_tool_args",
     "root": {"name": "ChatOpenAI", "occurrence": 2, "kind": "llm"},
     "failure": {"name": "send_ill_request", "occurrence": 1},
     "description": "The tool-calling model asks check_lenders for the ebook format although the patron asked for print, so the only lender found holds an ebook licence."},
    {"id": "zc61-ill-3", "input": 2, "switch": "C3", "fault_kind": "tool_ignores_argument",
     "root": {"name": "check_lenders", "occurrence": 1, "kind": "tool"},
     "failure": {"name": "send_ill_request", "occurrence": 1},
     "description": "The lender lookup ignores its exclude_system argument and lists Eastgate North, a branch of the requesting system, as the first lender."},
    {"id": "zc61-ill-4", "input": 3, "switch": "C4", "fault_kind": "wrong_routing",
     "root": {"name": "route_request", "occurrence": 1, "kind": "other"},
     "failure": {"name": "create_purchase_request", "occurrence": 1},
     "description": "The routing function looks only at the last lender's availability and sends a title two lenders can supply to the purchase branch."},
    {"id": "zc61-ill-5", "input": 4, "switch": "C5", "fault_kind": "format_drift",
     "root": {"name": "ChatOpenAI", "occurrence": 1, "kind": "llm"},
     "failure": {"name": "send_ill_request", "occurrence": 1},
     "description": "The request-reading model writes needed_by as 12/30/2026 instead of the ISO date it gives for every other request, and the ILL schema rejects it."},
]
