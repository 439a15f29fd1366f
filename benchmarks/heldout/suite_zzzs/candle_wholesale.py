"""A candlemaker's wholesale orders: a LangGraph graph with a routing edge, a tool-calling desk loop
(ChatOpenAI bound to tools, a ToolNode, parallel stock calls), a spec-sheet retriever, pricing and
freight nodes and an invoice tool that the ledger checks."""
from __future__ import annotations

import json
import math
from typing import Annotated, TypedDict

import httpx
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer

from suite_common import Reply, tool_call  # noqa: F401

RUN_NAME = "candle-wholesale-desk"
ROUTE = "langgraph"
DOMAIN = "candlemaker's wholesale orders"
SHAPE = ("~25-35 steps: intake with a routing edge (wholesale desk or retail desk), a 3-turn tool-calling loop "
         "(parallel stock checks, wax price + packing plan, final lines as JSON), spec-sheet retriever per SKU, "
         "pricing node, freight tool, invoice tool")

SWITCHES = ["RETAIL_THRESHOLD", "DESK_DISCOUNT", "NEAREST_SPEC", "FLOOR_CASES", "STOCK_QUIET"]
RETAIL_THRESHOLD = DESK_DISCOUNT = NEAREST_SPEC = FLOOR_CASES = STOCK_QUIET = False

INPUTS = [
    {"order": "CW-801", "account": "WH-22", "terms": "wholesale", "agreed_discount_pct": 5,
     "lines": [{"sku": "PIL-3x4", "units": 1200}, {"sku": "TIN-8oz", "units": 600}]},
    {"order": "CW-802", "account": "WH-31", "terms": "wholesale", "agreed_discount_pct": 8,
     "lines": [{"sku": "TAP-10", "units": 2400}, {"sku": "PIL-3x6", "units": 500}, {"sku": "VOT-2", "units": 900}]},
    {"order": "CW-803", "account": "WH-07", "terms": "wholesale", "agreed_discount_pct": 5,
     "lines": [{"sku": "JAR-12oz", "units": 720}]},
    {"order": "CW-804", "account": "WH-40", "terms": "wholesale", "agreed_discount_pct": 10,
     "lines": [{"sku": "PIL-3x4", "units": 4110}, {"sku": "VOT-2", "units": 1500}]},
    {"order": "CW-805", "account": "WH-18", "terms": "wholesale", "agreed_discount_pct": 0,
     "lines": [{"sku": "TIN-8oz", "units": 640}, {"sku": "JAR-12oz", "units": 360}]},
]
STOCK = {"PIL-3x4": 5000, "PIL-3x6": 3000, "TIN-8oz": 2500, "TAP-10": 8000, "VOT-2": 6000, "JAR-12oz": 1500}
PER_CASE = {"PIL-3x4": 24, "PIL-3x6": 12, "TIN-8oz": 24, "TAP-10": 100, "VOT-2": 72, "JAR-12oz": 12}
SPECS = {"PIL-3x4": 310, "PIL-3x6": 520, "TIN-8oz": 200, "TAP-10": 55, "VOT-2": 60, "JAR-12oz": 340}
CONTRACT_CAP = {"PIL-3x4": 4.20, "PIL-3x6": 6.60, "TIN-8oz": 3.30, "TAP-10": 1.20, "VOT-2": 1.10, "JAR-12oz": 5.60}
WAX_EUR_PER_KG = 6.80


def _msgs(request):
    return request.body.get("messages") or []


def policy(request):
    msgs = _msgs(request)
    first = msgs[-1].get("content") if msgs else ""
    user = next((m["content"] for m in msgs if m.get("role") == "user"), "")
    if isinstance(first, str) and first.startswith("Classify"):
        return "wholesale"
    order = json.loads(user.split("\n", 1)[1])
    tools = [m for m in msgs if m.get("role") == "tool"]
    if not tools:
        return Reply(tool_calls=tuple(tool_call("check_stock", {"sku": l["sku"]}) for l in order["lines"]))
    results = [json.loads(m["content"]) for m in tools]
    stock = {r["sku"]: r["on_hand"] for r in results if "on_hand" in r}
    if not any("eur_per_kg" in r for r in results):
        units = {l["sku"]: min(l["units"], stock[l["sku"]]) for l in order["lines"]}
        return Reply(tool_calls=(tool_call("wax_price", {"grade": "soy-blend"}), tool_call("pack_plan", {"units": units})))
    packing = next(r for r in results if "cases" in r)
    lines = [{"sku": sku, "units": n, "cases": packing["cases"][sku]} for sku, n in packing["units"].items()]
    discount = order["agreed_discount_pct"]
    if DESK_DISCOUNT:
        discount = 12
    return json.dumps({"lines": lines, "discount_pct": discount, "wax_eur_per_kg": next(r["eur_per_kg"] for r in results if "eur_per_kg" in r)})


@tool
def check_stock(sku: str) -> dict:
    """Units on hand for a SKU in the finished-goods store."""
    try:
        if STOCK_QUIET and sku == "TIN-8oz":
            raise TimeoutError("warehouse scanner did not answer")
        return {"sku": sku, "on_hand": STOCK[sku]}
    except TimeoutError:
        return {"sku": sku, "on_hand": 0}


@tool
def wax_price(grade: str) -> dict:
    """Current wax price for a grade, EUR per kg."""
    return {"grade": grade, "eur_per_kg": WAX_EUR_PER_KG}


@tool
def pack_plan(units: dict) -> dict:
    """Cases needed per SKU for the units to ship."""
    cases = {}
    for sku, n in units.items():
        cases[sku] = n // PER_CASE[sku] if FLOOR_CASES else math.ceil(n / PER_CASE[sku])
    return {"units": units, "cases": cases}


@tool
def book_freight(cases: dict, units: dict) -> dict:
    """Book the carrier for the cases of an order."""
    for sku, n in units.items():
        if cases[sku] * PER_CASE[sku] < n:
            raise ValueError(f"carrier: {n} units of {sku} do not fit in {cases[sku]} cases of {PER_CASE[sku]}")
    total = sum(cases.values())
    return {"pallets": math.ceil(total / 40), "cases": total}


@tool
def post_invoice(account: str, terms: str, price_list: str, lines: list, discount_pct: float, agreed_discount_pct: float) -> dict:
    """Post the invoice to the ledger."""
    if terms == "wholesale" and price_list != "W":
        raise ValueError(f"ledger: account {account} is on wholesale terms, invoice priced on list {price_list}")
    if not lines or sum(l["units"] for l in lines) == 0:
        raise ValueError(f"ledger: invoice for {account} has no units")
    if discount_pct > agreed_discount_pct:
        raise ValueError(f"ledger: discount {discount_pct}% is above the {agreed_discount_pct}% agreed with {account}")
    for l in lines:
        if l["units"] == 0:
            raise ValueError(f"ledger: line {l['sku']} carries 0 units; a line with nothing to ship is cancelled, not invoiced")
        if price_list == "W" and l["unit_eur"] > CONTRACT_CAP[l["sku"]]:
            raise ValueError(f"ledger: {l['sku']} at {l['unit_eur']:.2f} EUR is over the contract cap of {CONTRACT_CAP[l['sku']]:.2f} EUR")
    return {"invoice": "INV-" + account, "total_eur": round(sum(l["units"] * l["unit_eur"] for l in lines) * (1 - discount_pct / 100), 2)}


class SpecSheets(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        sku = query
        if NEAREST_SPEC and query == "PIL-3x4":
            sku = "PIL-3x6"
        return [Document(page_content=f"{sku}: {SPECS[sku]} g soy-blend wax, cotton wick", metadata={"sku": sku, "wax_g": SPECS[sku]})]


class Order(TypedDict, total=False):
    order: dict
    messages: Annotated[list[AnyMessage], add_messages]
    desk: dict
    specs: dict
    priced: dict
    freight: dict
    invoice: dict


_GRAPHS: dict = {}


def build(server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0,
                     http_client=httpx.Client(verify=False), http_async_client=httpx.AsyncClient(verify=False))
    desk_llm = llm.bind_tools([check_stock, wax_price, pack_plan])
    specs = SpecSheets()

    def intake(state: Order) -> dict:
        o = state["order"]
        return {"messages": [SystemMessage("You run the wholesale desk of a candle works. Use the tools, then answer the lines as JSON."),
                             HumanMessage("Prepare order:\n" + json.dumps(o))]}

    def route_account(state: Order) -> str:
        o = state["order"]
        units = sum(l["units"] for l in o["lines"])
        floor = 2000 if RETAIL_THRESHOLD else 500
        return "desk" if o["terms"] == "wholesale" and units >= floor else "retail_desk"

    def desk(state: Order) -> dict:
        return {"messages": [desk_llm.invoke(state["messages"])]}

    def after_desk(state: Order) -> str:
        return "tools" if state["messages"][-1].tool_calls else "read_desk"

    def read_desk(state: Order) -> dict:
        answer = json.loads(state["messages"][-1].content)
        return {"desk": {**answer, "price_list": "W"}}

    def retail_desk(state: Order) -> dict:
        o = state["order"]
        lines = [{"sku": l["sku"], "units": l["units"], "cases": math.ceil(l["units"] / PER_CASE[l["sku"]])} for l in o["lines"]]
        return {"desk": {"lines": lines, "discount_pct": 0, "wax_eur_per_kg": WAX_EUR_PER_KG, "price_list": "R"}}

    def spec_sheets(state: Order) -> dict:
        found = {}
        for l in state["desk"]["lines"]:
            doc = specs.invoke(l["sku"])[0]
            found[l["sku"]] = doc.metadata["wax_g"]
        return {"specs": found}

    def price_lines(state: Order) -> dict:
        d = state["desk"]
        markup = 1.6 if d["price_list"] == "W" else 2.4
        lines = []
        for l in d["lines"]:
            unit = state["specs"][l["sku"]] / 1000 * d["wax_eur_per_kg"] * markup + 0.35
            lines.append({"sku": l["sku"], "units": l["units"], "unit_eur": round(unit, 2)})
        return {"priced": {"lines": lines, "discount_pct": d["discount_pct"], "price_list": d["price_list"]}}

    def freight(state: Order) -> dict:
        d = state["desk"]
        cases = {l["sku"]: l["cases"] for l in d["lines"]}
        units = {l["sku"]: l["units"] for l in d["lines"]}
        return {"freight": book_freight.invoke({"cases": cases, "units": units})}

    def invoice(state: Order) -> dict:
        o, p = state["order"], state["priced"]
        return {"invoice": post_invoice.invoke({"account": o["account"], "terms": o["terms"], "price_list": p["price_list"],
                                                "lines": p["lines"], "discount_pct": p["discount_pct"],
                                                "agreed_discount_pct": o["agreed_discount_pct"]})}

    g = StateGraph(Order)
    for fn in (intake, desk, read_desk, retail_desk, spec_sheets, price_lines, freight, invoice):
        g.add_node(fn.__name__, fn)
    g.add_node("tools", ToolNode([check_stock, wax_price, pack_plan]))
    g.add_edge(START, "intake")
    g.add_conditional_edges("intake", route_account, ["desk", "retail_desk"])
    g.add_conditional_edges("desk", after_desk, ["tools", "read_desk"])
    g.add_edge("tools", "desk")
    g.add_edge("read_desk", "spec_sheets")
    g.add_edge("retail_desk", "spec_sheets")
    g.add_edge("spec_sheets", "price_lines")
    g.add_edge("price_lines", "freight")
    g.add_edge("freight", "invoice")
    g.add_edge("invoice", END)
    return g.compile()


def record(inp, path, server):
    server.use(policy)
    if _GRAPHS.get("url") != server.base_url:
        _GRAPHS.update(url=server.base_url, graph=build(server))
    graph = _GRAPHS["graph"]
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"wholesale order {inp['order']}")
    try:
        graph.invoke({"order": inp}, config={"callbacks": [tracer]})
    except ValueError:
        pass


CASES = [
    {"id": "zzzs-candle-01", "input": 2, "switch": "RETAIL_THRESHOLD", "fault_kind": "wrong_routing",
     "root": {"name": "route_account", "occurrence": 1, "kind": "other"}, "failure": {"name": "post_invoice", "occurrence": 1},
     "description": "The account router sends CW-803 (720 units, wholesale terms) to the retail desk because it applies a 2000-unit floor instead of 500."},
    {"id": "zzzs-candle-02", "input": 0, "switch": "DESK_DISCOUNT", "fault_kind": "hallucinated_value",
     "root": {"name": "ChatOpenAI", "occurrence": 3, "kind": "llm"}, "failure": {"name": "post_invoice", "occurrence": 1},
     "description": "The desk model's final answer gives a 12% discount that neither the order (5% agreed) nor any tool result states."},
    {"id": "zzzs-candle-03", "input": 3, "switch": "NEAREST_SPEC", "fault_kind": "wrong_retrieval",
     "root": {"name": "SpecSheets", "occurrence": 1, "kind": "retrieval"}, "failure": {"name": "post_invoice", "occurrence": 1},
     "description": "The spec-sheet search for PIL-3x4 returns the PIL-3x6 sheet (520 g of wax instead of 310 g), which prices the pillar over its cap."},
    {"id": "zzzs-candle-04", "input": 3, "switch": "FLOOR_CASES", "fault_kind": "off_by_one",
     "root": {"name": "pack_plan", "occurrence": 1, "kind": "tool"}, "failure": {"name": "book_freight", "occurrence": 1},
     "description": "The packing plan rounds the case count down, so 4110 pillars get 171 cases of 24 and the last partial case is dropped."},
    {"id": "zzzs-candle-05", "input": 4, "switch": "STOCK_QUIET", "fault_kind": "swallowed_error",
     "root": {"name": "check_stock", "occurrence": 1, "kind": "tool"}, "failure": {"name": "post_invoice", "occurrence": 1},
     "description": "The stock check for TIN-8oz catches a scanner timeout and answers 0 on hand, so the desk ships none of the 640 tins."},
]
