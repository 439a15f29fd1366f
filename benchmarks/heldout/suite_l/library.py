"""Interlibrary-loan agent (LangGraph): finds a cited book in the union catalog and borrows it for a patron.

A graph: intake (parse the citation) -> a catalog agent (a model with catalog tools, run by a ToolNode;
it looks up the patron and the holdings in one parallel turn) -> pick the lender (plain code) -> a lending
sub-agent (its own model turn and the ILL request tool) -> the agent's own citation check.
"""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from benchmarks.heldout.suite_l.kit import Case, active
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool


AGENT = "ill-borrowing-agent"
ROUTE = "langgraph"
DOMAIN = "interlibrary loans"

CATALOG = [
    {
        "oclc": "1140391",
        "title": "The Sea Around Us",
        "author": "Rachel Carson",
        "year": 1951,
        "volume": None,
    },
    {
        "oclc": "30624458",
        "title": "The Sea Around Us",
        "author": "Rachel Carson",
        "year": 1989,
        "volume": None,
    },
    {
        "oclc": "2330817",
        "title": "A History of the Hebrides",
        "author": "J. Hunter",
        "year": 1976,
        "volume": "1",
    },
    {
        "oclc": "2330818",
        "title": "A History of the Hebrides",
        "author": "J. Hunter",
        "year": 1976,
        "volume": "2",
    },
    {
        "oclc": "8870213",
        "title": "Glacial Geology of Norway",
        "author": "B. Andersen",
        "year": 1981,
        "volume": None,
    },
    {
        "oclc": "41255509",
        "title": "Medieval Irish Annals",
        "author": "G. Mac Niocaill",
        "year": 1975,
        "volume": None,
    },
    {
        "oclc": "1750023",
        "title": "Tidal Mills of Brittany",
        "author": "Y. Le Goff",
        "year": 1968,
        "volume": None,
    },
]
HOLDINGS = {
    "1140391": [("NLS", "UK", 8.0, "print"), ("BOD", "UK", 12.0, "print"), ("NLA", "AU", 3.0, "print")],
    "30624458": [("CUL", "UK", 6.0, "print"), ("TCD", "IE", 9.0, "print")],
    "2330817": [("NLS", "UK", 10.0, "print"), ("ABD", "UK", 14.0, "print")],
    "2330818": [("NLS", "UK", 10.0, "print")],
    "8870213": [("NTNU", "NO", 15.0, "print"), ("BL", "UK", 18.0, "print"), ("BL-EL", "UK", 0.0, "ebook")],
    "41255509": [("BL", "UK", 40.0, "print"), ("TCD", "IE", 7.0, "print"), ("BL-EL", "UK", 0.0, "ebook")],
    "1750023": [("BNF", "FR", 20.0, "print"), ("BL", "UK", 14.0, "print")],
}
PATRONS = {
    "P-20417": {"name": "I. MacLeod", "max_fee": 20.0},
    "P-31188": {"name": "A. Kerr", "max_fee": 15.0},
}


@tool
def search_union_catalog(title: str, author: str, year: int) -> list[dict[str, Any]]:
    """Search the union catalog for a work; returns matching records."""
    hits = [r for r in CATALOG if r["title"] == title and r["author"] == author]
    hits.sort(key=lambda r: (abs(r["year"] - year), r["volume"] or ""))
    if active("library.newest_first"):
        hits.sort(key=lambda r: -r["year"])
    return hits[:1]  # the best match only: the desk works from one record


@tool
def get_holdings(oclc: str, region: str, item_format: str = "print") -> list[dict[str, Any]]:
    """Libraries holding an OCLC number in a lending region, in a format."""
    rows = HOLDINGS.get(oclc, [])
    if not active("library.region_filter"):
        rows = [r for r in rows if r[1] in {"UK": ("UK", "IE"), "IE": ("IE", "UK")}[region]]
    return [
        {"lender": r[0], "country": r[1], "fee": r[2], "format": r[3]} for r in rows if r[3] == item_format
    ]


@tool
def check_patron(patron_id: str) -> dict[str, Any]:
    """The patron's borrowing record: name, status and maximum fee."""
    return {"patron_id": patron_id, "status": "active", **PATRONS[patron_id]}


@tool
def submit_ill_request(lender: str, oclc: str, patron_id: str, max_fee: float) -> dict[str, Any]:
    """Send an interlibrary-loan request to a lender (the ILL network's request API)."""
    row = next((r for r in HOLDINGS.get(oclc, []) if r[0] == lender), None)
    if row is None:
        raise ValueError(f"ILL network 404: {lender} holds no copy of OCLC {oclc}")
    if row[1] not in ("UK", "IE"):
        raise ValueError(f"ILL network 403: {lender} ({row[1]}) does not lend outside its consortium")
    if row[3] != "print":
        raise ValueError(
            f"ILL network 403: {lender} licence terms forbid lending the {row[3]} of OCLC {oclc}"
        )
    if row[2] > max_fee:
        raise ValueError(
            f"ILL network 402: {lender} charges {row[2]:.2f} GBP, above the patron's maximum of {max_fee:.2f}"
        )
    record = next(r for r in CATALOG if r["oclc"] == oclc)
    return {"request_id": f"ILL-{oclc[-4:]}-{lender}", "status": "sent", "item": record}


class LoanState(TypedDict, total=False):
    text: str
    request: dict[str, Any]
    messages: Annotated[list[Any], operator.add]
    lenders: list[dict[str, Any]]
    lender: dict[str, Any]
    loan: dict[str, Any]


CATALOG_SYS = "You are the catalog assistant of an interlibrary-loan desk. Find the cited work, then its UK/IE print holdings and the patron's record; finish with JSON {oclc, lenders:[{lender, fee}], max_fee}."
LENDING_SYS = "You are the lending clerk. Send one ILL request with the submit_ill_request tool."


def policy(request: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    messages = request.body["messages"]
    system, user = messages[0]["content"], messages[1]["content"]
    tools_seen = [m for m in messages if m["role"] == "tool"]
    if system == CATALOG_SYS:
        req = json.loads(user)
        if not tools_seen:
            return Reply(
                tool_calls=(
                    tool_call(
                        "search_union_catalog",
                        {"title": req["title"], "author": req["author"], "year": req["year"]},
                    ),
                )
            )
        if len(tools_seen) == 1:
            hit = json.loads(tools_seen[0]["content"])[0]
            fmt = "ebook" if active("library.ebook_args") else "print"
            return Reply(
                tool_calls=(
                    tool_call("get_holdings", {"oclc": hit["oclc"], "region": "UK", "item_format": fmt}),
                    tool_call("check_patron", {"patron_id": req["patron"]}),
                )
            )
        holdings, patron = json.loads(tools_seen[1]["content"]), json.loads(tools_seen[2]["content"])
        hit = json.loads(tools_seen[0]["content"])[0]
        fee_key = "fee_gbp" if active("library.fee_key") else "fee"
        lenders = [{"lender": h["lender"], fee_key: h["fee"]} for h in holdings]
        return json.dumps({"oclc": hit["oclc"], "lenders": lenders, "max_fee": patron["max_fee"]})
    if system == LENDING_SYS:
        if tools_seen:
            return "Request sent: " + tools_seen[-1]["content"][:120]
        order = json.loads(user)
        oclc = order["oclc"]
        if active("library.sibling_volume"):
            oclc = str(int(oclc) + 1)
        return Reply(
            tool_calls=(
                tool_call(
                    "submit_ill_request",
                    {
                        "lender": order["lender"],
                        "oclc": oclc,
                        "patron_id": order["patron"],
                        "max_fee": order["max_fee"],
                    },
                ),
            )
        )
    return "I cannot help with that."


def build(llm: Any) -> Any:
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    catalog_llm = llm.bind_tools([search_union_catalog, get_holdings, check_patron])
    lending_llm = llm.bind_tools([submit_ill_request])

    def intake(state: LoanState) -> dict[str, Any]:
        fields = dict(p.strip().split("=", 1) for p in state["text"].split(";"))
        req = {
            "title": fields["title"],
            "author": fields["author"],
            "year": int(fields["year"]),
            "patron": fields["patron"],
        }
        return {"request": req, "messages": [SystemMessage(CATALOG_SYS), HumanMessage(json.dumps(req))]}

    def catalog_agent(state: LoanState) -> dict[str, Any]:
        return {"messages": [catalog_llm.invoke(state["messages"])]}

    def route_catalog(state: LoanState) -> str:
        return "catalog_tools" if state["messages"][-1].tool_calls else "pick_lender"

    def pick_lender(state: LoanState) -> dict[str, Any]:
        summary = json.loads(state["messages"][-1].content)
        ranked = sorted(summary["lenders"], key=lambda r: float(r.get("fee", 0.0)))
        chosen = ranked[0]
        return {
            "lender": {"lender": chosen["lender"], "oclc": summary["oclc"], "max_fee": summary["max_fee"]},
            "lenders": ranked,
        }

    def lending_agent(state: LoanState) -> dict[str, Any]:
        order = {**state["lender"], "patron": state["request"]["patron"]}
        msgs: list[Any] = [SystemMessage(LENDING_SYS), HumanMessage(json.dumps(order))]
        first = lending_llm.invoke(msgs)
        call = first.tool_calls[0]
        result = submit_ill_request.invoke(call["args"])
        msgs += [first, ToolMessage(json.dumps(result), tool_call_id=call["id"], name="submit_ill_request")]
        lending_llm.invoke(msgs)
        return {"loan": result}

    def verify_citation(state: LoanState) -> dict[str, Any]:
        item, req = state["loan"]["item"], state["request"]
        if item["year"] != req["year"] or item["title"] != req["title"]:
            raise ValueError(
                f"loan {state['loan']['request_id']} is for {item['title']} ({item['year']}), the patron cited {req['title']} ({req['year']})"
            )
        if item["volume"] not in (None, "1"):
            raise ValueError(
                f"loan {state['loan']['request_id']} is volume {item['volume']}; the citation is to volume 1"
            )
        return {}

    g = StateGraph(LoanState)
    g.add_node("intake", intake)
    g.add_node("catalog_agent", catalog_agent)
    g.add_node("catalog_tools", ToolNode([search_union_catalog, get_holdings, check_patron]))
    g.add_node("pick_lender", pick_lender)
    g.add_node("lending_agent", lending_agent)
    g.add_node("verify_citation", verify_citation)
    g.add_edge(START, "intake")
    g.add_edge("intake", "catalog_agent")
    g.add_conditional_edges("catalog_agent", route_catalog, ["catalog_tools", "pick_lender"])
    g.add_edge("catalog_tools", "catalog_agent")
    g.add_edge("pick_lender", "lending_agent")
    g.add_edge("lending_agent", "verify_citation")
    g.add_edge("verify_citation", END)
    return g.compile()


_GRAPH: dict[str, Any] = {}


def record(server: Any, path: Path, inp: dict[str, Any]) -> None:
    """Record one run of the agent on ``inp`` into ``path`` (a failure is recorded, not raised)."""
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    if _GRAPH.get("url") != server.base_url:
        llm = ChatOpenAI(
            base_url=server.base_url,
            api_key="sk-not-needed",
            model="gpt-4o-mini",
            max_retries=0,
            temperature=0,
        )
        _GRAPH.update(url=server.base_url, graph=build(llm))
    server.use(policy)
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=inp["text"])
    try:
        _GRAPH["graph"].invoke({"text": inp["text"], "messages": []}, config={"callbacks": [tracer]})
    except ValueError:
        pass


def _req(title: str, author: str, year: int, patron: str) -> dict[str, Any]:
    return {"text": f"title={title}; author={author}; year={year}; patron={patron}"}


CASES = [
    Case(
        "library_01",
        "library.newest_first",
        "wrong_retrieval",
        "search_union_catalog",
        "30624458",
        _req("The Sea Around Us", "Rachel Carson", 1951, "P-20417"),
    ),
    Case(
        "library_02",
        "library.ebook_args",
        "wrong_tool_args",
        "ChatOpenAI",
        '"item_format": "ebook"',
        _req("Glacial Geology of Norway", "B. Andersen", 1981, "P-20417"),
    ),
    Case(
        "library_03",
        "library.region_filter",
        "tool_ignores_argument",
        "get_holdings",
        "NLA",
        _req("The Sea Around Us", "Rachel Carson", 1951, "P-31188"),
    ),
    Case(
        "library_04",
        "library.fee_key",
        "format_drift",
        "ChatOpenAI",
        "fee_gbp",
        _req("Medieval Irish Annals", "G. Mac Niocaill", 1975, "P-20417"),
    ),
    Case(
        "library_05",
        "library.sibling_volume",
        "subagent_wrong_entity",
        "ChatOpenAI",
        "2330818",
        _req("A History of the Hebrides", "J. Hunter", 1976, "P-20417"),
    ),
]
REFS = [
    _req("Tidal Mills of Brittany", "Y. Le Goff", 1968, "P-31188"),
    _req("Glacial Geology of Norway", "B. Andersen", 1981, "P-20417"),
    _req("Medieval Irish Annals", "G. Mac Niocaill", 1975, "P-31188"),
    _req("The Sea Around Us", "Rachel Carson", 1989, "P-20417"),
]
