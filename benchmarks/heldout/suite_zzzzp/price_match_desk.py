"""price-match-desk: a store's price-match promise desk, a LangGraph tool-calling agent (langgraph)."""
from __future__ import annotations

import json
import re
from datetime import date, datetime
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from common import messages_of, server, system_of, tool_results, user_of
from trajdebug.testing import Reply, tool_call
from trajdebug.integrations.langchain import TrajdebugTracer

NAME, ROUTE = "price-match-desk", "langgraph"
DOMAIN = "store price-match promise: verifying a competitor's lower price against the receipt and adjusting it"
SHAPE = "StateGraph: extraction chain (prompt | model | JSON parser), model <-> ToolNode loop with parallel tool calls, decision node, conditional router, adjustment/decline tool nodes, confirm"
SWITCH = None


def _on(case):
    return SWITCH == case


RECEIPTS = {
    "R-30112": {"store": 7, "date": "2025-03-12", "lines": [("MUG-SET4", 24.00), ("KTL-900", 49.99)]},
    "R-30187": {"store": 12, "date": "2025-03-04", "lines": [("TWL-BATH", 12.00), ("MAT-BATH", 18.50), ("BLD-PRO", 89.00)]},
    "R-30240": {"store": 7, "date": "2025-03-15", "lines": [("PAN-28", 32.00), ("AIRF-5L", 119.00)]},
    "R-30301": {"store": 3, "date": "2025-03-16", "lines": [("TOAST-2", 39.00), ("SCL-KIT", 21.00)]},
    "R-30355": {"store": 3, "date": "2025-03-10", "lines": [("CUP-6", 9.00), ("SAU-3", 27.00), ("KNF-BLK", 45.00),
                                                           ("BRD-OAK", 22.00), ("VAC-STK", 149.00)]},
}
# (sku, competitor) -> {zip: price}; "online" is the national web price
PRICES = {
    ("KTL-900", "Rivermart"): {"30301": 44.99, "online": 39.99},
    ("BLD-PRO", "HomeBarn"): {"30318": 79.00, "online": 79.00},
    ("AIRF-5L", "Kitchenly"): {"30305": 99.00, "online": 99.00},
    ("PAN-28", "Kitchenly"): {"30305": 24.00, "online": 24.00},
    ("TOAST-2", "Rivermart Marketplace"): {"30309": 31.00, "online": 31.00},
    ("VAC-STK", "HomeBarn"): {"30318": 129.00, "online": 125.00},
}
COMPETITORS = {"Rivermart": "retailer", "HomeBarn": "retailer", "Kitchenly": "retailer",
               "Rivermart Marketplace": "Marketplace"}

INPUTS = [
    {"task": "price match R-30112 KTL-900 Rivermart", "text": "Receipt R-30112: I bought the Nordic kettle (SKU KTL-900). Rivermart sells it for $44.99 at their store in ZIP 30301."},
    {"task": "price match R-30187 BLD-PRO HomeBarn", "text": "Receipt R-30187: I bought the Pro blender (SKU BLD-PRO). HomeBarn sells it for $79.00 at their store in ZIP 30318."},
    {"task": "price match R-30240 AIRF-5L Kitchenly", "text": "Receipt R-30240: I bought the 5 litre air fryer (SKU AIRF-5L). Kitchenly sells it for $99.00 at their store in ZIP 30305."},
    {"task": "price match R-30301 TOAST-2 Rivermart Marketplace", "text": "Receipt R-30301: I bought the two-slot toaster (SKU TOAST-2). Rivermart Marketplace sells it for $31.00 at their store in ZIP 30309."},
    {"task": "price match R-30355 VAC-STK HomeBarn", "text": "Receipt R-30355: I bought the stick vacuum (SKU VAC-STK). HomeBarn sells it for $129.00 at their store in ZIP 30318."},
]

CASES = [
    {"id": "zzzzp_pm_zip_ignored", "input": 0, "fault_kind": "tool_ignores_argument",
     "root": ("fetch_competitor_price", 1, "tool"), "failure": ("issue_adjustment", 1),
     "description": "fetch_competitor_price drops zip_code and answers Rivermart's national online price 39.99, so the adjustment is priced below the 44.99 the price feed verifies for ZIP 30301 and the POS refuses it."},
    {"id": "zzzzp_pm_legacy_pos_date", "input": 1, "fault_kind": "format_drift",
     "root": ("lookup_receipt", 1, "tool"), "failure": ("issue_adjustment", 1),
     "description": "lookup_receipt answers store 12's legacy POS date as 03/04/2025 (month first); the decision node reads it day first as 2025-04-03 and the POS refuses an adjustment whose purchase date does not match the receipt."},
    {"id": "zzzzp_pm_first_line_sku", "input": 2, "fault_kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 3, "llm"), "failure": ("issue_adjustment", 1),
     "description": "the research model calls fetch_competitor_price with the SKU of the receipt's first line (PAN-28) rather than the claimed AIRF-5L, so the competitor price is for another product and the POS price check refuses the adjustment."},
    {"id": "zzzzp_pm_marketplace_case", "input": 3, "fault_kind": "wrong_routing",
     "root": ("route_claim", 1, "other"), "failure": ("issue_adjustment", 1),
     "description": "route_claim compares the competitor type with 'marketplace' in lower case while the exclusions tool answers 'Marketplace', so a marketplace seller's claim is routed to the adjustment, which the POS refuses."},
    {"id": "zzzzp_pm_receipt_page", "input": 4, "fault_kind": "truncated_result",
     "root": ("lookup_receipt", 1, "tool"), "failure": ("decide", 1),
     "description": "lookup_receipt returns only the first page (3 lines) of a 5-line receipt, so the claimed VAC-STK line is missing when the decision node looks up its price."},
]

EXTRACT = "Extract the price-match claim as JSON: receipt_id, sku, competitor, zip_code, claimed_price."
RESEARCH = "You verify price-match claims. Look up the receipt first, then the competitor's price and exclusions, then answer JSON {match, sku, competitor_price, purchase_date}."


def brain(request):
    sysmsg = system_of(request)
    if sysmsg.startswith("Extract the price-match claim"):
        text = user_of(request)
        m = re.search(r"Receipt (R-\d+).*\(SKU ([A-Z0-9-]+)\)\. (.+?) sells it for \$([\d.]+) .*ZIP (\d+)", text)
        return json.dumps({"receipt_id": m[1], "sku": m[2], "competitor": m[3], "claimed_price": float(m[4]), "zip_code": m[5]})
    if sysmsg.startswith("You verify price-match claims"):
        claim = json.loads(user_of(request))
        results = [json.loads(r) for r in tool_results(request)]
        if not results:
            return Reply(tool_calls=(tool_call("lookup_receipt", {"receipt_id": claim["receipt_id"]}),))
        receipt = results[0]
        if len(results) == 1:
            sku = claim["sku"]
            if _on("zzzzp_pm_first_line_sku"):
                sku = receipt["lines"][0]["sku"]
            return Reply(tool_calls=(
                tool_call("fetch_competitor_price", {"sku": sku, "competitor": claim["competitor"], "zip_code": claim["zip_code"]}),
                tool_call("check_exclusions", {"competitor": claim["competitor"], "sku": claim["sku"]})))
        price = results[1]
        return json.dumps({"match": price["price"] is not None, "sku": claim["sku"],
                           "competitor_price": price["price"], "purchase_date": receipt["date"]})
    return "OK"


@tool
def lookup_receipt(receipt_id: str) -> str:
    """A receipt's store, date and lines."""
    r = RECEIPTS[receipt_id]
    day = r["date"]
    if _on("zzzzp_pm_legacy_pos_date") and r["store"] == 12:
        day = datetime.strptime(day, "%Y-%m-%d").strftime("%m/%d/%Y")  # store 12's POS prints month first
    lines = [{"sku": s, "price": p} for s, p in r["lines"]]
    page = 3 if _on("zzzzp_pm_receipt_page") else 50
    return json.dumps({"receipt_id": receipt_id, "store": r["store"], "date": day, "lines": lines[:page]})


@tool
def fetch_competitor_price(sku: str, competitor: str, zip_code: str) -> str:
    """A competitor's current shelf price for a SKU near a ZIP code."""
    prices = PRICES.get((sku, competitor), {})
    where = "online" if _on("zzzzp_pm_zip_ignored") else zip_code
    return json.dumps({"sku": sku, "competitor": competitor, "price": prices.get(where, prices.get("online")), "as_of": "2025-03-20"})


@tool
def check_exclusions(competitor: str, sku: str) -> str:
    """Whether a competitor or SKU is excluded from price match."""
    return json.dumps({"competitor": competitor, "competitor_type": COMPETITORS.get(competitor, "unknown"), "sku_excluded": False})


@tool
def issue_adjustment(receipt_id: str, sku: str, new_price: float, purchase_date: str, competitor: str, zip_code: str) -> str:
    """Refund the difference on a receipt line at the POS."""
    r = RECEIPTS[receipt_id]
    if COMPETITORS.get(competitor) != "retailer":
        raise ValueError(f"POS: {competitor} seller listings are not eligible for price match")
    if purchase_date != r["date"]:
        raise ValueError(f"POS: purchase date {purchase_date} does not match receipt {receipt_id} ({r['date']})")
    verified = PRICES[(sku, competitor)].get(zip_code)
    if verified is None or abs(verified - new_price) > 0.005:
        raise ValueError(f"POS: competitor price {new_price:.2f} not verified for {sku} at {competitor} ZIP {zip_code} (feed: {verified})")
    line = dict(r["lines"])[sku]
    return json.dumps({"receipt_id": receipt_id, "sku": sku, "refund": round(line - new_price, 2), "status": "refunded"})


@tool
def send_decline(receipt_id: str, reason: str) -> str:
    """Tell the customer the claim was declined."""
    return json.dumps({"receipt_id": receipt_id, "sent": True, "reason": reason})


class Desk(TypedDict, total=False):
    text: str
    claim: dict
    messages: Annotated[list[AnyMessage], add_messages]
    decision: dict
    exclusions: dict
    result: dict


def build(llm):
    tools = [lookup_receipt, fetch_competitor_price, check_exclusions]
    researcher = llm.bind_tools(tools)
    extract = ChatPromptTemplate.from_messages([("system", EXTRACT), ("human", "{text}")]) | llm | JsonOutputParser()

    def read_claim(state: Desk) -> dict:
        claim = extract.invoke({"text": state["text"]})
        return {"claim": claim, "messages": [SystemMessage(RESEARCH), HumanMessage(json.dumps(claim))]}

    def research(state: Desk) -> dict:
        return {"messages": [researcher.invoke(state["messages"])]}

    def decide(state: Desk) -> dict:
        answer = json.loads(state["messages"][-1].content)
        outputs = {m.name: json.loads(m.content) for m in state["messages"] if isinstance(m, ToolMessage)}
        receipt = outputs["lookup_receipt"]
        prices = {l["sku"]: l["price"] for l in receipt["lines"]}
        if answer["sku"] not in prices:
            raise LookupError(f"{answer['sku']} is not on receipt {receipt['receipt_id']} ({len(prices)} lines read)")
        raw = answer["purchase_date"]
        try:
            bought = date.fromisoformat(raw)
        except ValueError:
            bought = datetime.strptime(raw, "%d/%m/%Y").date()  # the desk's locale is day first
        gap = round(prices[answer["sku"]] - (answer["competitor_price"] or prices[answer["sku"]]), 2)
        return {"decision": {**answer, "purchase_date": bought.isoformat(), "line_price": prices[answer["sku"]], "gap": gap},
                "exclusions": outputs["check_exclusions"]}

    def route_claim(state: Desk) -> str:
        ctype = state["exclusions"]["competitor_type"]
        if _on("zzzzp_pm_marketplace_case"):
            excluded = ctype == "marketplace"
        else:
            excluded = ctype.lower() == "marketplace"
        return "decline" if excluded or state["decision"]["gap"] <= 0 else "adjust"

    def adjust(state: Desk) -> dict:
        c, d = state["claim"], state["decision"]
        out = issue_adjustment.invoke({"receipt_id": c["receipt_id"], "sku": d["sku"], "new_price": d["competitor_price"],
                                       "purchase_date": d["purchase_date"], "competitor": c["competitor"], "zip_code": c["zip_code"]})
        return {"result": json.loads(out)}

    def decline(state: Desk) -> dict:
        out = send_decline.invoke({"receipt_id": state["claim"]["receipt_id"], "reason": "not eligible"})
        return {"result": json.loads(out)}

    def confirm(state: Desk) -> dict:
        res = state["result"]
        if res.get("status") == "refunded" and res["refund"] <= 0:
            raise ValueError(f"refund {res['refund']} is not positive")
        return {"result": {**res, "confirmed": True}}

    g = StateGraph(Desk)
    for name, fn in (("read_claim", read_claim), ("research", research), ("decide", decide),
                     ("adjust", adjust), ("decline", decline), ("confirm", confirm)):
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(tools, handle_tool_errors=False))
    g.add_edge(START, "read_claim")
    g.add_edge("read_claim", "research")
    g.add_conditional_edges("research", tools_condition, {"tools": "tools", END: "decide"})
    g.add_edge("tools", "research")
    g.add_conditional_edges("decide", route_claim, {"adjust": "adjust", "decline": "decline"})
    g.add_edge("adjust", "confirm")
    g.add_edge("decline", "confirm")
    g.add_edge("confirm", END)
    return g.compile()


_GRAPH = {}


def graph():
    key = server().base_url
    if key not in _GRAPH:
        llm = ChatOpenAI(model=server().model, base_url=key, api_key="not-needed", max_retries=0)
        _GRAPH.clear()
        _GRAPH[key] = build(llm)
    return _GRAPH[key]


def run(inp: dict, path: str) -> None:
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["task"])
    graph().invoke({"text": inp["text"]}, config={"callbacks": [tracer]})
