"""Roofer's repair quotes (langgraph route): a tool-calling model loop (ChatOpenAI with bound tools and a
ToolNode, parallel material price calls), then a parse node, a pricing node and a quote check node.
"""
from __future__ import annotations

import json

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from suite_common import tool_results
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "roof-repair-quotes"
ROUTE = "langgraph"
DOMAIN = "a roofer's repair quotes"
SHAPE = "ReAct loop: ChatOpenAI with bound tools <-> ToolNode (survey, parallel material prices, labour rate, scaffold), then parse node, pricing node, quote check node; 23-31 steps"
SWITCH = None

SURVEYS = {
    "J-3301": {"address": "14 Mill Row", "eaves_m": 5.5, "items": [
        {"item": "natural slate", "m2": 12.0}, {"item": "lead flashing", "m2": 2.5}, {"item": "ridge tiles", "m2": 3.0},
        {"item": "breathable membrane", "m2": 12.0}, {"item": "battens", "m2": 12.0}]},
    "J-3302": {"address": "2 Orchard Close", "eaves_m": 3.2, "items": [
        {"item": "concrete tile", "m2": 18.0}, {"item": "battens", "m2": 18.0}, {"item": "breathable membrane", "m2": 18.0}]},
    "J-3305": {"address": "The Old Forge", "eaves_m": 6.8, "items": [
        {"item": "natural slate", "m2": 20.0}, {"item": "lead flashing", "m2": 4.0}, {"item": "battens", "m2": 20.0},
        {"item": "breathable membrane", "m2": 20.0}]},
    "J-3309": {"address": "41 Quarry Lane", "eaves_m": 2.8, "items": [
        {"item": "EPDM membrane", "m2": 22.0}, {"item": "fascia board", "m2": 4.0}]},
    "J-3311": {"address": "7 Chapel Yard", "eaves_m": 7.5, "items": [
        {"item": "clay plain tile", "m2": 15.0}, {"item": "ridge tiles", "m2": 4.0}, {"item": "lead flashing", "m2": 1.5},
        {"item": "battens", "m2": 15.0}]},
}
PRICES = {"natural slate": 78.0, "lead flashing": 115.0, "ridge tiles": 42.0, "breathable membrane": 6.5, "battens": 9.0,
          "concrete tile": 31.0, "EPDM membrane": 38.0, "fascia board": 55.0, "clay plain tile": 64.0}
LABOUR = {"roofer": 42.0}
HOURS_PER_M2 = 1.6
BAND = (60.0, 320.0)  # the firm's price band per square metre of roof

INPUTS = [{"job": j, "customer": c} for j, c in
          [("J-3301", "Mrs Adeyemi"), ("J-3302", "Mr Hollis"), ("J-3305", "Forge Trust"), ("J-3309", "Ms Varga"), ("J-3311", "Chapel Yard Lettings")]]

CASES = [
    {"id": "zzz-roof-1", "switch": "survey_page", "input": 0, "kind": "truncated_result",
     "root": ("roof_survey", 1), "failure": ("quote_check", 1),
     "description": "The roof survey tool returns only the first page of three damage items of the five surveyed at 14 Mill Row."},
    {"id": "zzz-roof-2", "switch": "qty_eaves", "input": 2, "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 2), "failure": ("quote_check", 1),
     "description": "The model asks the price of the natural slate for 6.8 square metres, the eaves height, instead of the 20 square metres surveyed."},
    {"id": "zzz-roof-3", "switch": "rate_made_up", "input": 4, "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 5), "failure": ("quote_check", 1),
     "description": "The model's final quote prices labour at 96 pounds an hour, a rate no tool returned (the labour rate tool said 42)."},
    {"id": "zzz-roof-4", "switch": "scaffold_zero", "input": 2, "kind": "swallowed_error",
     "root": ("scaffold_quote", 1), "failure": ("quote_check", 1),
     "description": "The scaffold hire lookup fails on the supplier's side and the tool answers a price of 0 instead of reporting it."},
    {"id": "zzz-roof-5", "switch": "labour_day", "input": 3, "kind": "unit_error",
     "root": ("labour_rate", 1), "failure": ("quote_check", 1),
     "description": "The labour rate tool returns the roofer's day rate (336) in the hourly rate field."},
]


@tool
def roof_survey(job: str) -> dict:
    """The surveyor's record of a job: address, eaves height and the items to repair."""
    s = SURVEYS[job]
    items = s["items"][:3] if SWITCH == "survey_page" else s["items"]
    return {"job": job, "address": s["address"], "eaves_m": s["eaves_m"], "items": items}


@tool
def material_price(item: str, m2: float) -> dict:
    """Supplier price for a material, for the given area in square metres."""
    return {"item": item, "m2": m2, "unit_price": PRICES[item], "price": round(PRICES[item] * m2 * 1.1, 2)}


@tool
def labour_rate(trade: str) -> dict:
    """The firm's hourly labour rate for a trade."""
    rate = LABOUR[trade] * 8 if SWITCH == "labour_day" else LABOUR[trade]
    return {"trade": trade, "per_hour": rate}


@tool
def scaffold_quote(eaves_m: float, weeks: int) -> dict:
    """Scaffold hire price from the scaffold supplier."""
    try:
        if SWITCH == "scaffold_zero":
            raise TimeoutError("supplier price service timed out")
        return {"eaves_m": eaves_m, "weeks": weeks, "price": round(280 + 65 * eaves_m * weeks, 2)}
    except TimeoutError:
        return {"eaves_m": eaves_m, "weeks": weeks, "price": 0.0}


TOOLS = [roof_survey, material_price, labour_rate, scaffold_quote]


def policy(request):
    res = tool_results(request)
    by = {}
    for r in res:
        by.setdefault(r["name"], []).append(json.loads(r["content"]))
    job = request.body["messages"][-1]["content"] if not res else None
    if "roof_survey" not in by:
        text = next(m["content"] for m in request.body["messages"] if m["role"] == "user")
        return Reply(tool_calls=(tool_call("roof_survey", {"job": json.loads(text.split("JOB:", 1)[1])["job"]}),))
    survey = by["roof_survey"][0]
    if "material_price" not in by:
        calls = []
        for it in survey["items"]:
            m2 = it["m2"]
            if SWITCH == "qty_eaves" and it["item"] == "natural slate":
                m2 = survey["eaves_m"]
            calls.append(tool_call("material_price", {"item": it["item"], "m2": m2}))
        return Reply(tool_calls=tuple(calls))
    if "labour_rate" not in by:
        return Reply(tool_calls=(tool_call("labour_rate", {"trade": "roofer"}),))
    if survey["eaves_m"] > 4.0 and "scaffold_quote" not in by:
        return Reply(tool_calls=(tool_call("scaffold_quote", {"eaves_m": survey["eaves_m"], "weeks": 2}),))
    rate = by["labour_rate"][0]["per_hour"]
    if SWITCH == "rate_made_up":
        rate = 96.0
    roof_m2 = max(it["m2"] for it in survey["items"])
    lines = [{"line": p["item"], "m2": p["m2"], "amount": p["price"]} for p in by["material_price"]]
    lines.append({"line": "labour", "hours": round(roof_m2 * HOURS_PER_M2, 1), "rate": rate,
                  "amount": round(roof_m2 * HOURS_PER_M2 * rate, 2)})
    if "scaffold_quote" in by:
        lines.append({"line": "scaffold", "amount": by["scaffold_quote"][0]["price"]})
    return json.dumps({"job": survey["job"], "lines": lines})


def build(llm):
    bound = llm.bind_tools(TOOLS)

    def estimator(state: MessagesState) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    def more_tools(state: MessagesState) -> str:
        return "tools" if state["messages"][-1].tool_calls else "draft_quote"

    def draft_quote(state: MessagesState) -> dict:
        quote = json.loads(state["messages"][-1].content)
        return {"messages": [HumanMessage(json.dumps({"draft": quote}), name="draft")]}

    def price_quote(state: MessagesState) -> dict:
        quote = json.loads(state["messages"][-1].content)["draft"]
        net = round(sum(l["amount"] for l in quote["lines"]), 2)
        priced = dict(quote, net=net, vat=round(net * 0.2, 2), total=round(net * 1.2, 2))
        return {"messages": [HumanMessage(json.dumps({"priced": priced}), name="priced")]}

    def quote_check(state: MessagesState) -> dict:
        priced = json.loads(state["messages"][-1].content)["priced"]
        survey = next(json.loads(m.content) for m in state["messages"] if getattr(m, "name", None) == "roof_survey")
        job = survey["job"]
        header = SURVEYS_ON_FILE[job]
        lines = {l["line"]: l for l in priced["lines"]}
        for it in header["items"]:
            if it["item"] not in lines:
                raise ValueError(f"quote for {job} has no line for {it['item']} ({it['m2']} m2 surveyed)")
            if lines[it["item"]]["m2"] < it["m2"]:
                raise ValueError(f"quote for {job} prices {lines[it['item']]['m2']} m2 of {it['item']}, survey needs {it['m2']} m2")
        if header["eaves_m"] > 4.0 and lines.get("scaffold", {}).get("amount", 0) <= 0:
            raise ValueError(f"eaves at {header['eaves_m']} m need scaffold, quote {job} prices it at {lines.get('scaffold', {}).get('amount', 0)}")
        roof_m2 = max(it["m2"] for it in header["items"])
        per_m2 = priced["net"] / roof_m2
        if not BAND[0] <= per_m2 <= BAND[1]:
            raise ValueError(f"quote {job} comes to {per_m2:.2f} per m2, outside the firm's band {BAND[0]:.0f}-{BAND[1]:.0f}")
        return {"messages": [HumanMessage(f"Quote {job} for {priced['total']:.2f} incl. VAT approved.", name="approved")]}

    g = StateGraph(MessagesState)
    g.add_node("estimator", estimator)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("draft_quote", draft_quote)
    g.add_node("price_quote", price_quote)
    g.add_node("quote_check", quote_check)
    g.add_edge(START, "estimator")
    g.add_conditional_edges("estimator", more_tools, ["tools", "draft_quote"])
    g.add_edge("tools", "estimator")
    g.add_edge("draft_quote", "price_quote")
    g.add_edge("price_quote", "quote_check")
    g.add_edge("quote_check", END)
    return g.compile()


SURVEYS_ON_FILE = SURVEYS  # the office's copy of each survey, as the surveyor filed it


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0, temperature=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"quote repair job {inp['job']} for {inp['customer']}")
    build(llm).invoke({"messages": [SystemMessage("You are the estimator of a roofing firm. Use the tools to price the job, then answer the quote as JSON."),
                                    HumanMessage("Quote this repair. JOB:" + json.dumps(inp))]},
                      config={"callbacks": [tracer], "recursion_limit": 40})
