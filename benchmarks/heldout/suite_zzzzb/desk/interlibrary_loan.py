"""Interlibrary-loan desk of a county library system (LangGraph + TrajdebugTracer)."""
from __future__ import annotations

import datetime as dt
import json
import operator
from typing import Annotated, TypedDict

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool

from . import common

RUN_NAME = "county-ill-desk"
ROUTE = "langgraph"
DOMAIN = "county library system: interlibrary-loan borrowing requests"
SHAPE = ("LangGraph StateGraph: request parsing (prompt | model | JSON parser), patron record tool and a memory "
         "node, a catalog agent loop (model with bound tools, ToolNode, back to the model), lender-policy retriever, "
         "a loop over candidate lenders (availability tool), due-date computation, patron notice by the model, "
         "request placement and billing tools")
SWITCH = None

PATRONS = {
    "P-30118": {"name": "Lucia Ferraro", "home_branch": "BR-NORTH", "last_pickup": "BR-EAST", "fines": 0.0},
    "P-22740": {"name": "Owen Tadesse", "home_branch": "BR-MAIN", "last_pickup": "BR-MAIN", "fines": 1.5},
    "P-41992": {"name": "Mina Park", "home_branch": "BR-SOUTH", "last_pickup": "BR-EAST", "fines": 0.0},
    "P-10563": {"name": "Gareth Hume", "home_branch": "BR-MAIN", "last_pickup": "BR-NORTH", "fines": 0.0},
    "P-57201": {"name": "Rosa Quintero", "home_branch": "BR-NORTH", "last_pickup": "BR-NORTH", "fines": 0.0},
}
ACTIVE_PICKUP = {"BR-NORTH", "BR-MAIN", "BR-SOUTH"}  # BR-EAST closed for renovation
HOLDINGS = [
    {"oclc": "1189043", "title": "Hydrology and Floodplain Analysis", "author": "Bedient", "edition": "6th", "year": 2019,
     "lenders": ["Springfield Technical CC", "Westfield State University"]},
    {"oclc": "0877120", "title": "Hydrology and Floodplain Analysis", "author": "Bedient", "edition": "5th", "year": 2012,
     "lenders": ["Holyoke Public Library", "Amherst Town Library"]},
    {"oclc": "1301775", "title": "The Night Watch", "author": "Waters", "edition": "1st", "year": 2006,
     "lenders": ["Amherst Town Library", "Holyoke Public Library", "Westfield State University"]},
    {"oclc": "1022518", "title": "Statistical Rethinking", "author": "McElreath", "edition": "2nd", "year": 2020,
     "lenders": ["Westfield State University", "Springfield Technical CC", "Amherst Town Library"]},
    {"oclc": "0950011", "title": "Statistical Rethinking", "author": "McElreath", "edition": "1st", "year": 2015,
     "lenders": ["Holyoke Public Library"]},
    {"oclc": "1410632", "title": "Braiding Sweetgrass", "author": "Kimmerer", "edition": "1st", "year": 2013,
     "lenders": ["Holyoke Public Library", "Amherst Town Library"]},
    {"oclc": "1377209", "title": "Working in Public", "author": "Eghbal", "edition": "1st", "year": 2020,
     "lenders": ["Springfield Technical CC", "Westfield State University"]},
]
POLICIES = [
    {"lender": "Springfield Technical CC", "loan_days": 21, "fee": 10.0, "turnaround_days": 2},
    {"lender": "Springfield College", "loan_days": 42, "fee": 0.0, "turnaround_days": 4},
    {"lender": "Westfield State University", "loan_days": 28, "fee": 0.0, "turnaround_days": 3},
    {"lender": "Holyoke Public Library", "loan_days": 21, "fee": 0.0, "turnaround_days": 1},
    {"lender": "Amherst Town Library", "loan_days": 28, "fee": 0.0, "turnaround_days": 2},
]
ON_SHELF = {"Springfield Technical CC": True, "Westfield State University": False, "Holyoke Public Library": True,
            "Amherst Town Library": True}

INPUTS = [
    {"task": "ILL: Hydrology and Floodplain Analysis 6th ed. for P-30118",
     "request": "Patron P-30118 needs Hydrology and Floodplain Analysis by Bedient, 6th edition, by 2025-04-30 for a PE exam course. Request date 2025-04-07."},
    {"task": "ILL: The Night Watch for P-22740",
     "request": "Patron P-22740 asks for The Night Watch by Waters, 1st edition, by 2025-05-15. Request date 2025-04-07."},
    {"task": "ILL: Statistical Rethinking 2nd ed. for P-41992",
     "request": "Patron P-41992 needs Statistical Rethinking by McElreath, 2nd edition, by 2025-05-02 for a thesis. Request date 2025-04-07."},
    {"task": "ILL: Braiding Sweetgrass for P-10563",
     "request": "Patron P-10563 asks for Braiding Sweetgrass by Kimmerer, 1st edition, by 2025-05-20 for a book club. Request date 2025-04-07."},
    {"task": "ILL: Working in Public for P-57201",
     "request": "Patron P-57201 needs Working in Public by Eghbal, 1st edition, by 2025-04-25. Request date 2025-04-07."},
]

CASES = [
    {"id": "ill_edition_filter", "input": 2, "switch": "title_author_only", "fault_kind": "tool_ignores_argument",
     "root": ("union_catalog_search", 1), "failure": ("place_request", 1),
     "description": "The union catalog search drops the edition it was given and lists the 1st edition first, so the request goes out for OCLC 0950011 instead of the 2nd edition."},
    {"id": "ill_policy_match", "input": 0, "switch": "policy_name_prefix", "fault_kind": "wrong_retrieval",
     "root": ("lender_policy_search", 1), "failure": ("place_request", 1),
     "description": "The lender-policy search returns Springfield College's policy for Springfield Technical CC, so the request carries a 42-day loan and no fee against the lender's 21 days and 10.00 USD."},
    {"id": "ill_due_date", "input": 1, "switch": "ship_day_counted", "fault_kind": "off_by_one",
     "root": ("compute_due_date", 1), "failure": ("place_request", 1),
     "description": "The due-date node counts the shipping day as the first loan day, so the requested due date is one day short of the lender's 21-day period."},
    {"id": "ill_notice_fee", "input": 3, "switch": "courtesy_fee", "fault_kind": "hallucinated_value",
     "root": ("ChatOpenAI", 4), "failure": ("bill_patron", 1),
     "description": "The patron notice written by the model quotes a 5.00 USD lending fee that no lender policy or record holds, and billing refuses it."},
    {"id": "ill_pickup_memory", "input": 2, "switch": "last_pickup_branch", "fault_kind": "bad_memory_write",
     "root": ("remember_patron", 1), "failure": ("place_request", 1),
     "description": "The patron memory stores the branch of the last pickup, BR-EAST (closed), as the delivery point instead of the home branch BR-SOUTH."},
]


@tool
def patron_record(patron_id: str) -> dict:
    """Patron record from the ILS."""
    return {"patron_id": patron_id, **PATRONS[patron_id]}


@tool
def union_catalog_search(title: str, author: str, edition: str) -> list:
    """Search the union catalog for holdings of a title, author and edition."""
    hits = [h for h in HOLDINGS if h["title"].lower() == title.lower() and h["author"].lower() == author.lower()]
    if SWITCH == "title_author_only":
        hits.sort(key=lambda h: h["year"])
    else:
        hits = [h for h in hits if h["edition"] == edition]
    return [{"oclc": h["oclc"], "edition": h["edition"], "year": h["year"], "lenders": h["lenders"]} for h in hits]


@tool
def check_availability(lender: str, oclc: str) -> dict:
    """Whether a lender's copy is on the shelf."""
    return {"lender": lender, "oclc": oclc, "on_shelf": ON_SHELF[lender]}


@tool
def place_request(oclc: str, lender: str, edition: str, due: str, ship: str, loan_days: int, max_cost: float, pickup: str) -> dict:
    """Place an ILL request with a lender."""
    holding = next(h for h in HOLDINGS if h["oclc"] == oclc)
    if pickup not in ACTIVE_PICKUP:
        raise ValueError(f"ILL: pickup location {pickup} is not an active delivery point")
    if holding["edition"] != edition:
        raise ValueError(f"ILL: OCLC {oclc} is the {holding['edition']} edition ({holding['year']}); request asks for the {edition}")
    policy = next(p for p in POLICIES if p["lender"] == lender)
    if policy["fee"] > max_cost:
        raise ValueError(f"ILL: {lender} charges {policy['fee']:.2f} USD per loan; request authorises {max_cost:.2f}")
    end = dt.date.fromisoformat(ship) + dt.timedelta(days=policy["loan_days"])
    if due != end.isoformat():
        raise ValueError(f"ILL: {lender} lends for {policy['loan_days']} days from shipment {ship} (due {end.isoformat()}); request gave {due}")
    return {"request_id": f"ILL-{oclc[-4:]}-{lender[:3].upper()}", "lender": lender, "due": due}


@tool
def bill_patron(patron_id: str, amount: float, lender: str) -> dict:
    """Post the lending fee to the patron's account."""
    policy = next(p for p in POLICIES if p["lender"] == lender)
    if abs(amount - policy["fee"]) > 0.005:
        raise ValueError(f"billing: notice quotes {amount:.2f} USD; {lender} charges {policy['fee']:.2f}")
    return {"patron_id": patron_id, "posted": amount}


class LenderPolicySearch(BaseRetriever):
    """Lending policies of partner libraries."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        docs = []
        for p in POLICIES:
            if SWITCH == "policy_name_prefix":
                score = len(set(query.lower().split()[:1]) & set(p["lender"].lower().split())) + (0.5 if p["loan_days"] > 30 else 0)
            else:
                score = 2 if p["lender"].lower() == query.lower() else 0
            if score:
                docs.append((score, Document(page_content=json.dumps(p), metadata={"lender": p["lender"], "score": score})))
        docs.sort(key=lambda d: -d[0])
        return [d for _, d in docs]


lender_policy_search = LenderPolicySearch().with_config(run_name="lender_policy_search")


class IllState(TypedDict, total=False):
    request: str
    fields: dict
    patron: dict
    delivery: dict
    messages: Annotated[list, operator.add]
    candidates: list
    policies: dict
    choice: dict
    due: dict
    notice: dict
    result: dict


def build_graph(llm):
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_core.output_parsers import JsonOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    read_chain = ChatPromptTemplate.from_messages([
        ("system", "You read interlibrary-loan requests. Answer JSON with patron_id, title, author, edition, needed_by, requested."),
        ("user", "{text}")]) | llm | JsonOutputParser()
    catalog_llm = llm.bind_tools([union_catalog_search])
    notice_chain = ChatPromptTemplate.from_messages([
        ("system", "You write the patron notice for an interlibrary loan. Answer JSON with text and fee."),
        ("user", "{payload}")]) | llm | JsonOutputParser()

    def parse_request(state):
        return {"fields": read_chain.invoke({"text": state["request"]})}

    def load_patron(state):
        return {"patron": patron_record.invoke({"patron_id": state["fields"]["patron_id"]})}

    def remember_patron(state):
        p = state["patron"]
        branch = p["last_pickup"] if SWITCH == "last_pickup_branch" else p["home_branch"]
        return {"delivery": {"patron_id": p["patron_id"], "pickup": branch, "max_cost": 0.0 if p["fines"] else 15.0}}

    def catalog_agent(state):
        msgs = state.get("messages") or [
            SystemMessage("You find holdings for interlibrary loan in the union catalog."),
            HumanMessage(json.dumps({k: state["fields"][k] for k in ("title", "author", "edition")}))]
        reply = catalog_llm.invoke(msgs)
        out = {"messages": ([] if state.get("messages") else msgs) + [reply]}
        if not reply.tool_calls:
            out["candidates"] = json.loads(reply.content)["candidates"]
        return out

    def after_catalog(state) -> str:
        return "catalog_tools" if state["messages"][-1].tool_calls else "lender_policies"

    def lender_policies(state):
        policies = {}
        for lender in sorted({c["lender"] for c in state["candidates"]}):
            docs = lender_policy_search.invoke(lender)
            policies[lender] = json.loads(docs[0].page_content)
        return {"policies": policies}

    def rank_lenders(state):
        ranked = []
        for cand in state["candidates"]:
            avail = check_availability.invoke({"lender": cand["lender"], "oclc": cand["oclc"]})
            if avail["on_shelf"]:
                ranked.append({**state["policies"][cand["lender"]], **cand})
        ranked.sort(key=lambda c: (c["fee"], c["turnaround_days"]))
        return {"choice": ranked[0]}

    def compute_due_date(state):
        c = state["choice"]
        ship = dt.date.fromisoformat(state["fields"]["requested"]) + dt.timedelta(days=1)
        days = c["loan_days"] - 1 if SWITCH == "ship_day_counted" else c["loan_days"]
        return {"due": {"ship": ship.isoformat(), "due": (ship + dt.timedelta(days=days)).isoformat(), "loan_days": c["loan_days"]}}

    def draft_patron_notice(state):
        payload = json.dumps({"patron": state["patron"]["name"], "title": state["fields"]["title"], "choice": state["choice"],
                              "due": state["due"], "pickup": state["delivery"]["pickup"]})
        return {"notice": notice_chain.invoke({"payload": payload})}

    def submit(state):
        c, d, dl = state["choice"], state["due"], state["delivery"]
        placed = place_request.invoke({"oclc": c["oclc"], "lender": c["lender"], "edition": state["fields"]["edition"],
                                       "due": d["due"], "ship": d["ship"], "loan_days": c["loan_days"],
                                       "max_cost": dl["max_cost"] if c["fee"] else 0.0, "pickup": dl["pickup"]})
        billed = bill_patron.invoke({"patron_id": dl["patron_id"], "amount": float(state["notice"]["fee"]), "lender": c["lender"]})
        return {"result": {"placed": placed, "billed": billed}}

    g = StateGraph(IllState)
    for name, node in [("parse_request", parse_request), ("load_patron", load_patron), ("remember_patron", remember_patron),
                       ("catalog_agent", catalog_agent), ("catalog_tools", ToolNode([union_catalog_search])),
                       ("lender_policies", lender_policies), ("rank_lenders", rank_lenders),
                       ("compute_due_date", compute_due_date), ("draft_patron_notice", draft_patron_notice), ("submit", submit)]:
        g.add_node(name, node)
    g.add_edge(START, "parse_request")
    g.add_edge("parse_request", "load_patron")
    g.add_edge("load_patron", "remember_patron")
    g.add_edge("remember_patron", "catalog_agent")
    g.add_conditional_edges("catalog_agent", after_catalog, ["catalog_tools", "lender_policies"])
    g.add_edge("catalog_tools", "catalog_agent")
    g.add_edge("lender_policies", "rank_lenders")
    g.add_edge("rank_lenders", "compute_due_date")
    g.add_edge("compute_due_date", "draft_patron_notice")
    g.add_edge("draft_patron_notice", "submit")
    g.add_edge("submit", END)
    return g.compile()


GRAPHS: dict = {}


def record(server, inp: dict, path: str) -> None:
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    if server.base_url not in GRAPHS:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
        GRAPHS[server.base_url] = build_graph(llm)
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=inp["task"])
    GRAPHS[server.base_url].invoke({"request": inp["request"]}, config={"callbacks": [tracer]})


def brain(request):
    import re

    from trajdebug.testing import Reply, tool_call

    system = common.chat_system(request)
    user = common.chat_user(request)
    if "interlibrary-loan requests" in system:
        m = re.search(r"Patron (P-\d+) (?:needs|asks for) (.+?) by (\w+), (\w+) edition, by (\d{4}-\d\d-\d\d).*Request date (\d{4}-\d\d-\d\d)", user)
        pid, title, author, ed, needed, req = m.groups()
        return json.dumps({"patron_id": pid, "title": title, "author": author, "edition": ed, "needed_by": needed, "requested": req})
    if "union catalog" in system:
        results = common.chat_tool_results(request)
        if not results:
            args = json.loads(user)
            return Reply(tool_calls=(tool_call("union_catalog_search", args),))
        hits = results[-1] if isinstance(results[-1], list) else []
        cands = [{"oclc": h["oclc"], "edition": h["edition"], "lender": lender} for h in hits[:1] for lender in h["lenders"]]
        return json.dumps({"candidates": cands})
    if "patron notice" in system:
        p = json.loads(user)
        fee = p["choice"]["fee"]
        if SWITCH == "courtesy_fee":
            fee = 5.0
        return json.dumps({"text": f"Dear {p['patron']}, {p['title']} is on its way from {p['choice']['lender']}. Pick it up at "
                                   f"{p['pickup']}; it is due back {p['due']['due']}. Lending fee: {fee:.2f} USD.", "fee": fee})
    return "{}"
