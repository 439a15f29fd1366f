"""library-lending: a public library's hold-request agent as a LangGraph StateGraph that loops over the
titles a member asks for.  A model reads the request; for each title the graph prepares a lookup, runs a
catalog sub-agent (its own graph: a model with search and copy tools), a model decides between a hold and
an interlibrary loan, the hold or loan is placed and recorded in the graph state; at the end pickup notices
are composed and sent and the batch is checked.  ChatOpenAI against a fake model server; LangChain tracer."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Annotated, Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from langgraph_route import chat_model, record_graph
from suite_common import FAULT, Agent, Case, Loc, called_tools, messages_of, results_of, system_text, text_of
from typing_extensions import TypedDict

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "library-lending"
MODEL = "gpt-4o-mini"

CATALOG = [  # catalog order
    {"record_id": "R-1002", "title": "The Left Hand of God", "author": "Paul Hoffman",
     "copies": [("C-1002-1", "Central", "available")]},
    {"record_id": "R-1001", "title": "The Left Hand of Darkness", "author": "Ursula K. Le Guin",
     "copies": [("C-1001-1", "Central", "available"), ("C-1001-2", "Eastside", "on loan")]},
    {"record_id": "R-1010", "title": "Dune", "author": "Frank Herbert",
     "copies": [("C-1010-1", "Eastside", "available"), ("C-1010-2", "Central", "on loan")]},
    {"record_id": "R-1011", "title": "Dune Messiah", "author": "Frank Herbert", "copies": [("C-1011-1", "Central", "available")]},
    {"record_id": "R-1020", "title": "Piranesi", "author": "Susanna Clarke",
     "copies": [("C-1020-1", "Westside", "available"), ("C-1020-2", "Central", "on loan")]},
    {"record_id": "R-1030", "title": "The Overstory", "author": "Richard Powers", "copies": [("C-1030-1", "Central", "available")]},
    {"record_id": "R-1040", "title": "Klara and the Sun", "author": "Kazuo Ishiguro",
     "copies": [("C-1040-1", "Central", "available"), ("C-1040-2", "Westside", "available")]},
    {"record_id": "R-1060", "title": "Braiding Sweetgrass", "author": "Robin Wall Kimmerer",
     "copies": [("C-1060-1", "Central", "available")]},
    {"record_id": "R-1070", "title": "The Ministry for the Future", "author": "Kim Stanley Robinson",
     "copies": [("C-1070-1", "Eastside", "available")]},
    {"record_id": "R-1080", "title": "Station Eleven", "author": "Emily St. John Mandel",
     "copies": [("C-1080-1", "Central", "available"), ("C-1080-2", "Central", "available")]},
    {"record_id": "R-1090", "title": "The Remains of the Day", "author": "Kazuo Ishiguro",
     "copies": [("C-1090-1", "Westside", "available")]},
]
REASSIGN = {"C-1080-1": "C-1080-2"}  # C-1080-1 is set aside for a reading group: the ILS holds the other copy
ILS_HOLDS: dict[str, str] = {}  # copy id -> member, as the ILS records them


class LendingError(RuntimeError):
    pass


# -- tools ------------------------------------------------------------------------------------------------


@tool
def search_catalog(query: str) -> str:
    """Search the catalog by title words; returns matching records in catalog order."""
    def words(text: str) -> set[str]:
        return set(re.findall(r"\w+", text.lower())) - {"the", "of", "and", "a"}

    asked = words(query)
    hits = [r for r in CATALOG if len(asked & words(r["title"])) >= max(1, len(asked) - 1)]
    return json.dumps([{"record_id": r["record_id"], "title": r["title"], "author": r["author"]} for r in hits])


@tool
def get_copies(record_id: str) -> str:
    """The copies of a record: copy id, branch, status."""
    r = next(r for r in CATALOG if r["record_id"] == record_id)
    return json.dumps([{"copy_id": c, "branch": b, "status": s} for c, b, s in r["copies"]])


@tool
def place_hold(record_id: str, copy_id: str, member_id: str, pickup_branch: str) -> str:
    """Place a hold in the ILS; the ILS may assign another copy of the same record."""
    assigned = REASSIGN.get(copy_id, copy_id)
    ILS_HOLDS[assigned] = member_id
    branch = next(b for r in CATALOG for c, b, _s in r["copies"] if c == assigned)
    return json.dumps({"hold_id": f"H-{assigned[2:]}-{member_id[2:]}", "record_id": record_id, "copy_id": assigned,
                       "pickup_branch": pickup_branch, "status": "ready" if branch == pickup_branch else "in transit"})


@tool
def request_ill(title: str, member_id: str, pickup_branch: str) -> str:
    """Request an interlibrary loan from the regional consortium."""
    return json.dumps({"ill_id": f"ILL-{abs(sum(map(ord, title + member_id))) % 9000 + 1000}", "title": title,
                       "pickup_branch": pickup_branch, "status": "requested"})


@tool
def send_pickup_notices(member_id: str, notices: list[dict[str, Any]]) -> str:
    """Send the member the pickup notices; the ILS checks each hold it refers to."""
    for n in notices:
        if n["kind"] == "hold" and ILS_HOLDS.get(n["copy_id"]) != member_id:
            raise LendingError("ILS refused the notice batch: a notice refers to a copy not held for this member")
    return json.dumps({"member_id": member_id, "sent": len(notices)})


# -- the fake model -----------------------------------------------------------------------------------------


def brain(request: Any) -> Any:
    msgs = messages_of(request)
    system = system_text(msgs)
    users = [text_of(m) for m in msgs if m.get("role") == "user"]
    if "lending request" in system:
        text = users[-1]
        member = re.search(r"M-\d{4}", text).group(0)
        default = re.search(r"(?:collect|pick (?:them|it) up|pickup) (?:everything )?at (\w+)", text)
        titles = []
        for m in re.finditer(r"\"([^\"]+)\"(?: \(pickup at (\w+)\))?", text):
            titles.append({"title": m.group(1), "pickup": m.group(2) or (default.group(1) if default else "Central")})
        return json.dumps({"member_id": member, "titles": titles})
    if "catalog agent" in system:
        start = max(i for i, m in enumerate(msgs) if m.get("role") == "user")
        mine = msgs[start:]
        ask = text_of(msgs[start])
        title = re.search(r"Find: (.+?);", ask).group(1)
        pickup = re.search(r"pickup at (\w+)", "\n".join(users)).group(1)  # the first pickup branch in view
        done = {n for n, _a, r in called_tools(mine) if r is not None}
        if "search_catalog" not in done:
            return Reply(tool_calls=(tool_call("search_catalog", {"query": title}),))
        hits = results_of(mine, "search_catalog")[-1]
        exact = [h for h in hits if h["title"].lower() == title.lower()]
        pick = hits[0] if FAULT.on("first_search_hit") and hits else (exact[0] if exact else None)
        if pick is None:
            return json.dumps({"record_id": None, "title": title, "copy_id": None, "copy_branch": None,
                               "pickup_branch": pickup, "available": False})
        if "get_copies" not in done:
            return Reply(tool_calls=(tool_call("get_copies", {"record_id": pick["record_id"]}),))
        copies = [c for c in results_of(mine, "get_copies")[-1] if c["status"] == "available"]
        copies.sort(key=lambda c: c["branch"] != pickup)
        c = copies[0] if copies else None
        return json.dumps({"record_id": pick["record_id"], "title": pick["title"], "copy_id": c and c["copy_id"],
                           "copy_branch": c and c["branch"], "pickup_branch": pickup, "available": bool(c)})
    if "Decide how to fulfil" in system:
        pick = json.loads(users[-1].split("Catalog result:", 1)[1])
        choice = "hold" if pick["available"] else "ill"
        if FAULT.on("ill_when_elsewhere") and pick["available"] and pick["copy_branch"] != pick["pickup_branch"]:
            choice = "ill"  # "no copy at the pickup branch" taken for "not available"
        return json.dumps({"fulfilment": choice})
    return "Sorry, I only handle lending requests."


# -- the graphs ---------------------------------------------------------------------------------------------


class CatalogState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


class LendingState(TypedDict, total=False):
    request: str
    request_raw: str
    member_id: str
    titles: list[dict[str, str]]
    index: int
    catalog_messages: list[Any]
    current: dict[str, Any]
    decision_raw: str
    placed: dict[str, Any]
    holds: list[dict[str, Any]]
    notices: list[dict[str, Any]]
    sent: dict[str, Any]


def build(base_url: str) -> Any:
    llm = chat_model(base_url, MODEL)
    cat_llm = llm.bind_tools([search_catalog, get_copies])

    def catalog_model(state: CatalogState) -> dict[str, Any]:
        return {"messages": [cat_llm.invoke(state["messages"])]}

    def catalog_next(state: CatalogState) -> str:
        return "tools" if getattr(state["messages"][-1], "tool_calls", None) else END

    cg = StateGraph(CatalogState)
    cg.add_node("catalog_model", catalog_model)
    cg.add_node("tools", ToolNode([search_catalog, get_copies], handle_tool_errors=False))
    cg.add_edge(START, "catalog_model")
    cg.add_conditional_edges("catalog_model", catalog_next, {"tools": "tools", END: END})
    cg.add_edge("tools", "catalog_model")
    catalog_agent = cg.compile(name="catalog_agent")

    def parse_request(state: LendingState) -> dict[str, Any]:
        ai = llm.invoke([SystemMessage("Extract the lending request as JSON: member_id and titles, each with its "
                                       "pickup branch."), HumanMessage(state["request"])])
        return {"request_raw": ai.content}

    def read_request(state: LendingState) -> dict[str, Any]:
        data = json.loads(state["request_raw"])
        return {"member_id": data["member_id"], "titles": data["titles"], "index": 0, "holds": [],
                "catalog_messages": []}

    def prepare_lookup(state: LendingState) -> dict[str, Any]:
        t = state["titles"][state["index"]]
        ask = HumanMessage(f"Find: {t['title']}; pickup at {t['pickup']}. Any branch can send a copy.")
        system = SystemMessage("You are the catalog agent. Find the record for the title and the best available copy "
                               "for the pickup branch. Answer with JSON.")
        history = list(state.get("catalog_messages") or []) if FAULT.on("keep_lookup_history") else []
        return {"catalog_messages": [system, *[m for m in history if not isinstance(m, SystemMessage)], ask]}

    def catalog_lookup(state: LendingState, config: RunnableConfig) -> dict[str, Any]:
        out = catalog_agent.invoke({"messages": state["catalog_messages"]}, config)
        return {"current": json.loads(out["messages"][-1].content), "catalog_messages": out["messages"]}

    def decide_fulfilment(state: LendingState) -> dict[str, Any]:
        ai = llm.invoke([SystemMessage("Decide how to fulfil the title: a hold when a copy is available anywhere in "
                                       "our branches (they transfer), else an interlibrary loan. JSON."),
                         HumanMessage(f"Catalog result: {json.dumps(state['current'])}")])
        return {"decision_raw": ai.content}

    def route(state: LendingState) -> str:
        return "hold" if json.loads(state["decision_raw"])["fulfilment"] == "hold" else "ill"

    def hold(state: LendingState) -> dict[str, Any]:
        c = state["current"]
        return {"placed": json.loads(place_hold.invoke({"record_id": c["record_id"], "copy_id": c["copy_id"],
                                                        "member_id": state["member_id"],
                                                        "pickup_branch": c["pickup_branch"]}))}

    def ill(state: LendingState) -> dict[str, Any]:
        c = state["current"]
        return {"placed": json.loads(request_ill.invoke({"title": c["title"], "member_id": state["member_id"],
                                                         "pickup_branch": c["pickup_branch"]}))}

    def record_hold(state: LendingState) -> dict[str, Any]:
        c, p = state["current"], state["placed"]
        if "hold_id" in p:
            copy_id = c["copy_id"] if FAULT.on("record_requested_copy") else p["copy_id"]
            entry = {"kind": "hold", "title": c["title"], "record_id": c["record_id"], "copy_id": copy_id,
                     "ref": p["hold_id"], "pickup_branch": p["pickup_branch"]}
        else:
            entry = {"kind": "ill", "title": c["title"], "record_id": c["record_id"], "ref": p["ill_id"],
                     "pickup_branch": p["pickup_branch"], "available_in_network": c["available"]}
        return {"holds": [*state["holds"], entry], "index": state["index"] + 1}

    def more(state: LendingState) -> str:
        return "prepare_lookup" if state["index"] < len(state["titles"]) else "compose_notices"

    def compose_notices(state: LendingState) -> dict[str, Any]:
        return {"notices": [{"kind": h["kind"], "copy_id": h.get("copy_id"), "title": h["title"],
                             "text": f"'{h['title']}' ({h['ref']}) will be waiting at {h['pickup_branch']}."}
                            for h in state["holds"]]}

    def send_notices(state: LendingState) -> dict[str, Any]:
        return {"sent": json.loads(send_pickup_notices.invoke({"member_id": state["member_id"], "notices": state["notices"]}))}

    def finalize(state: LendingState) -> dict[str, Any]:
        asked = {t["title"].lower(): t["pickup"] for t in state["titles"]}
        for h in state["holds"]:
            if h["title"].lower() not in asked:
                raise LendingError("Circulation check failed: the holds placed are not the titles the member asked for")
            if h["pickup_branch"] != asked[h["title"].lower()]:
                raise LendingError("Circulation check failed: an item is routed to a branch the member did not choose")
            if h["kind"] == "ill" and h["available_in_network"]:
                raise LendingError("Circulation check failed: interlibrary loan requested for a title we hold")
        return {}

    g = StateGraph(LendingState)
    for name, fn in [("parse_request", parse_request), ("read_request", read_request), ("prepare_lookup", prepare_lookup),
                     ("catalog_lookup", catalog_lookup), ("decide_fulfilment", decide_fulfilment), ("hold", hold),
                     ("ill", ill), ("record_hold", record_hold), ("compose_notices", compose_notices),
                     ("send_notices", send_notices), ("finalize", finalize)]:
        g.add_node(name, fn)
    g.add_edge(START, "parse_request")
    g.add_edge("parse_request", "read_request")
    g.add_edge("read_request", "prepare_lookup")
    g.add_edge("prepare_lookup", "catalog_lookup")
    g.add_edge("catalog_lookup", "decide_fulfilment")
    g.add_conditional_edges("decide_fulfilment", route, {"hold": "hold", "ill": "ill"})
    g.add_edge("hold", "record_hold")
    g.add_edge("ill", "record_hold")
    g.add_conditional_edges("record_hold", more, {"prepare_lookup": "prepare_lookup", "compose_notices": "compose_notices"})
    g.add_edge("compose_notices", "send_notices")
    g.add_edge("send_notices", "finalize")
    g.add_edge("finalize", END)
    return g.compile()


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server:
        graph = build(server.base_url)

        def record(request: str, path: str) -> BaseException | None:
            ILS_HOLDS.clear()
            return record_graph(graph, {"request": request}, path, NAME, request, (LendingError,),
                                recursion_limit=60)

        yield record


AGENT = Agent(
    name=NAME,
    route="langgraph",
    domain="library lending",
    summary="a model reads the request; per title: prepare the lookup, a catalog sub-agent graph (model + "
    "search/copies tools), a model decides hold vs interlibrary loan, place it, record it in the graph state; "
    "then compose and send pickup notices and check the batch",
    features=["loop over titles", "sub-agent graph", "state across iterations"],
    passing=[
        "Member M-1100 would like \"The Overstory\" and \"Braiding Sweetgrass\"; she will collect everything at Central.",
        "Please request \"A Memory Called Empire\" for member M-1203, pickup at Westside.",
        "M-1307 asks for \"The Ministry for the Future\", pickup at Central.",
        "Member M-1410: \"Dune\" (pickup at Eastside) and \"The Remains of the Day\" (pickup at Westside).",
        "Member M-1522 wants \"Station Eleven\" and \"Klara and the Sun\", pickup at Central.",
    ],
    session=session,
    cases=[
        Case(
            "d-lib-copy-memory",
            "Member M-5531 wants \"Station Eleven\" and \"The Overstory\", pickup at Central.",
            "record_requested_copy",
            "bad_memory_write",
            "The ILS holds the other copy of Station Eleven (C-1080-2) but recording the hold in the graph state "
            "keeps the copy the catalog proposed (C-1080-1); the pickup notice built from that state is refused.",
            [Loc("record_hold", 1, "C-1080-1"), Loc("compose_notices"), Loc("send_pickup_notices")],
        ),
        Case(
            "d-lib-left-hand",
            "Member M-2207 asks for \"The Left Hand of Darkness\" and \"Piranesi\"; pickup at Central.",
            "first_search_hit",
            "subagent_wrong_entity",
            "The catalog sub-agent returns the first search hit, The Left Hand of God, for The Left Hand of "
            "Darkness; a hold is placed and recorded for the wrong book and the circulation check fails.",
            [Loc("ChatOpenAI", 3, "R-1002"), Loc("ChatOpenAI", 4, "Left Hand of God"), Loc("catalog_lookup", 1),
             Loc("place_hold", 1), Loc("record_hold", 1), Loc("finalize")],
        ),
        Case(
            "d-lib-branch-carryover",
            "Member M-3390: \"Dune\" (pickup at Eastside) and \"Klara and the Sun\" (pickup at Central).",
            "keep_lookup_history",
            "context_pollution",
            "Preparing the second lookup keeps the first title's conversation (Dune, pickup at Eastside) in the "
            "catalog agent's prompt; the agent routes Klara and the Sun to Eastside and the circulation check "
            "fails.",
            [Loc("prepare_lookup", 2, "Eastside"), Loc("ChatOpenAI", 8, "Eastside"), Loc("catalog_lookup", 2),
             Loc("place_hold", 2), Loc("record_hold", 2), Loc("finalize")],
        ),
        Case(
            "d-lib-needless-ill",
            "Please get \"Piranesi\" for member M-4418, pickup at Central.",
            "ill_when_elsewhere",
            "wrong_routing",
            "The only available copy of Piranesi is at Westside; the fulfilment model routes the title to an "
            "interlibrary loan instead of a transfer hold, and the circulation check refuses it.",
            [Loc("ChatOpenAI", 5, "ill"), Loc("request_ill", 1), Loc("record_hold", 1), Loc("finalize")],
        ),
    ],
)
