"""Dulcimer maker: a LangGraph tool loop (model <-> ToolNode) with parallel price look-ups, then a parser and a quote validator."""

from __future__ import annotations

import datetime as dt
import json

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "hollow-creek-dulcimer-quotes"
ROUTE = "langgraph"
DOMAIN = "dulcimer maker"
SHAPE = "LangGraph ReAct loop: intake node, model node <-> ToolNode over two tool rounds (three parallel price calls, then the shop calendar), parse node, validator node; ~19 steps"
ON: set[str] = set()

INPUTS = [
    {"customer": "R. Alvarez", "body": "hourglass", "top": "spruce", "back": "walnut", "courses": 4, "scale_in": 27, "deadline": "2027-03-01", "budget_usd": 1400},
    {"customer": "B. Okafor", "body": "teardrop", "top": "cedar", "back": "cherry", "courses": 3, "scale_in": 25, "deadline": "2027-02-15", "budget_usd": 1100},
    {"customer": "L. Nguyen", "body": "hourglass", "top": "redwood", "back": "maple", "courses": 4, "scale_in": 28, "deadline": "2027-04-10", "budget_usd": 1600},
    {"customer": "S. Berg", "body": "elliptical", "top": "spruce", "back": "cherry", "courses": 5, "scale_in": 26, "deadline": "2027-03-20", "budget_usd": 1500},
    {"customer": "T. Ward", "body": "teardrop", "top": "cedar", "back": "walnut", "courses": 4, "scale_in": 25, "deadline": "2027-02-28", "budget_usd": 1300},
]
WOOD = {"spruce": 95.0, "cedar": 110.0, "redwood": 130.0, "walnut": 160.0, "cherry": 140.0, "maple": 120.0}
CASES = [
    {"id": "dulc-01", "input": 0, "switch": "a", "kind": "wrong_tool_args", "root": ("ChatOpenAI", 1, "llm"), "failure": ("check_quote", 1),
     "description": "The model asks the timber price for the back in spruce, the top's wood, instead of the walnut ordered, and the quote check finds no back line that does not match the order."},
    {"id": "dulc-02", "input": 3, "switch": "b", "kind": "tool_ignores_argument", "root": ("string_set_price", 1, "tool"), "failure": ("check_quote", 1),
     "description": "The string-set price tool ignores the number of courses and always prices a three-course set, so the five-course quote does not add up to the order at the check."},
    {"id": "dulc-03", "input": 2, "switch": "c", "kind": "lossy_parsing", "root": ("read_quote", 1, "other"), "failure": ("check_quote", 1),
     "description": "The quote parser keeps only the first three lines of the model's quote, dropping the fret kit, so the lines no longer sum to the quoted total."},
    {"id": "dulc-04", "input": 1, "switch": "d", "kind": "format_drift", "root": ("ChatOpenAI", 3, "llm"), "failure": ("check_quote", 1),
     "description": "The model's final quote gives the ready date as 02/09/2027 instead of an ISO date, and the quote check cannot read it."},
    {"id": "dulc-05", "input": 4, "switch": "e", "kind": "swallowed_error", "root": ("wood_price", 1, "tool"), "failure": ("check_quote", 1),
     "description": "The timber supplier's price lookup for the walnut back times out and the tool returns a price of 0 instead of reporting it, so the quote carries an unpriced back."},
]


@tool
def wood_price(top: str, back: str) -> dict:
    """Prices of bookmatched tonewood sets for the top and the back."""
    back_usd = WOOD[back]
    if "e" in ON:
        try:
            raise TimeoutError("timber supplier did not answer")
        except TimeoutError:
            back_usd = 0.0
    return {"woods": [{"species": top, "part": "top", "usd": WOOD[top]}, {"species": back, "part": "back", "usd": back_usd}]}


@tool
def string_set_price(courses: int) -> dict:
    """Price of the string set and tuners for the number of courses."""
    n = courses
    if "b" in ON:
        n = 3
    return {"courses": n, "usd": 18.0 * n + 40.0}


@tool
def fret_kit_price(scale_in: float) -> dict:
    """Price of the fret wire and slotting for a scale length in inches."""
    return {"scale_in": scale_in, "usd": round(60 + 2.5 * scale_in, 2)}


@tool
def shop_calendar(weeks: int) -> dict:
    """Earliest ready date for a build of the given length in weeks."""
    return {"ready": (dt.date(2026, 12, 14) + dt.timedelta(weeks=weeks)).isoformat()}


TOOLS = [wood_price, string_set_price, fret_kit_price, shop_calendar]


def policy(request):
    msgs = request.body["messages"]
    order = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
    if not results:
        back = order["top"] if "a" in ON else order["back"]
        return Reply(tool_calls=(
            tool_call("wood_price", {"top": order["top"], "back": back}),
            tool_call("string_set_price", {"courses": order["courses"]}),
            tool_call("fret_kit_price", {"scale_in": order["scale_in"]}),
        ))
    if not any("ready" in r for r in results):
        return Reply(tool_calls=(tool_call("shop_calendar", {"weeks": 8}),))
    lines = []
    for r in results:
        if "woods" in r:
            lines.extend({"item": f"{w['species']} {w['part']}", "usd": w["usd"]} for w in r["woods"])
        elif "courses" in r:
            lines.append({"item": f"{r['courses']}-course strings and tuners", "usd": r["usd"]})
        elif "scale_in" in r:
            lines.append({"item": f"fret kit {r['scale_in']} in", "usd": r["usd"]})
    labour = 520.0
    lines.append({"item": "labour", "usd": labour})
    ready = next(r["ready"] for r in results if "ready" in r)
    if "d" in ON:
        y, m, d = ready.split("-")
        ready = f"{m}/{d}/{y}"
    return json.dumps({"lines": lines, "total_usd": round(sum(x["usd"] for x in lines), 2), "ready": ready})


class QuoteState(MessagesState):
    order: dict
    quote: dict


def build(llm):
    model = llm.bind_tools(TOOLS)

    def intake(state: QuoteState) -> dict:
        order = state["order"]
        return {"messages": [SystemMessage("You are the quoting assistant of a dulcimer workshop. Price every part, then give the ready date."),
                             HumanMessage(json.dumps(order))]}

    def luthier(state: QuoteState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    def read_quote(state: QuoteState) -> dict:
        quote = json.loads(state["messages"][-1].content)
        if "c" in ON:
            quote["lines"] = quote["lines"][:3]
        return {"quote": quote}

    def check_quote(state: QuoteState) -> dict:
        order, quote = state["order"], state["quote"]
        items = [line["item"] for line in quote["lines"]]
        for part in ("top", "back"):
            if f"{order[part]} {part}" not in items:
                raise ValueError(f"quote for {order['customer']}: no {order[part]} {part} line (lines: {items})")
        if f"{order['courses']}-course strings and tuners" not in items:
            raise ValueError(f"quote for {order['customer']}: strings do not match a {order['courses']}-course build (lines: {items})")
        if any(line["usd"] <= 0 for line in quote["lines"]):
            raise ValueError(f"quote for {order['customer']}: unpriced line in {quote['lines']}")
        if abs(sum(line["usd"] for line in quote["lines"]) - quote["total_usd"]) > 0.01:
            raise ValueError(f"quote for {order['customer']}: lines sum to {sum(line['usd'] for line in quote['lines'])}, total says {quote['total_usd']}")
        ready = dt.date.fromisoformat(quote["ready"])
        if ready > dt.date.fromisoformat(order["deadline"]) or quote["total_usd"] > order["budget_usd"]:
            raise ValueError(f"quote for {order['customer']} misses the deadline or budget")
        return {"quote": {**quote, "checked": True}}

    g = StateGraph(QuoteState)
    g.add_node("intake", intake)
    g.add_node("luthier", luthier)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("read_quote", read_quote)
    g.add_node("check_quote", check_quote)
    g.add_edge(START, "intake")
    g.add_edge("intake", "luthier")
    g.add_conditional_edges("luthier", tools_condition, {"tools": "tools", END: "read_quote"})
    g.add_edge("tools", "luthier")
    g.add_edge("read_quote", "check_quote")
    g.add_edge("check_quote", END)
    return g.compile()


def record(inp: dict, path, ctx) -> None:
    llm = ChatOpenAI(base_url=ctx.server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"{inp['customer']} {inp['body']} dulcimer quote")
    try:
        build(llm).invoke({"order": inp, "messages": []}, config={"callbacks": [tracer]})
    except Exception:
        pass
