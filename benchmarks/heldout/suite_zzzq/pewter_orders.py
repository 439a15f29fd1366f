"""Pewterer's orders: order-taking agent (langgraph route). A tool-calling loop (model node with bound tools
and a ToolNode, messages in the graph's state) searches the catalogue, checks alloy stock, prices lines and
books engraving; a schema check reads the model's JSON confirmation and checks it against the order."""
import json
from typing import List

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, Field

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "pewter-order-desk"
ROUTE = "langgraph"
DOMAIN = "pewterer's orders"
SHAPE = "tool-calling loop: model node with bound tools <-> ToolNode (parallel calls), history node, JSON confirmation read by a pydantic schema check"
ACTIVE = None

CATALOGUE = [
    {"sku": "TK-HP", "item": "tankard", "size": "half pint", "price": 48.0},
    {"sku": "TK-PT", "item": "tankard", "size": "pint", "price": 62.0},
    {"sku": "PL-8", "item": "plate", "size": "8 inch", "price": 35.0},
    {"sku": "PL-10", "item": "plate", "size": "10 inch", "price": 44.0},
    {"sku": "PO-S", "item": "porringer", "size": "small", "price": 29.0},
    {"sku": "PO-L", "item": "porringer", "size": "large", "price": 39.0},
    {"sku": "QU-1", "item": "quaich", "size": "one handle", "price": 55.0},
    {"sku": "QU-2", "item": "quaich", "size": "two handle", "price": 68.0},
]
LEAD_WEEKS = 3
THIS_WEEK = 10
EARLIER_THREAD = "Earlier customer (Farrant): engrave every piece 'FARRANT 1888'."

INPUTS = [
    {"order": "PW-81", "customer": "Ridley", "lines": [["tankard", "pint", 6]], "engraving": "RIDLEY"},
    {"order": "PW-82", "customer": "The Bell Inn", "lines": [["tankard", "half pint", 12], ["plate", "10 inch", 4]], "engraving": "BELL"},
    {"order": "PW-83", "customer": "Mossop", "lines": [["quaich", "two handle", 2], ["porringer", "small", 3]], "engraving": "M & J"},
    {"order": "PW-84", "customer": "Wenn", "lines": [["plate", "8 inch", 8]], "engraving": "WENN 1926"},
    {"order": "PW-85", "customer": "Castle guild", "lines": [["porringer", "large", 5], ["quaich", "one handle", 1], ["tankard", "pint", 2]], "engraving": "GUILD"},
]


@tool
def catalogue_search(item: str) -> list:
    """Search the pewter catalogue; returns the first page of matching pieces."""
    rows = [r for r in CATALOGUE if item in r["item"] or item in r["sku"].lower()] or list(CATALOGUE)
    page = sorted(rows, key=lambda r: r["sku"])
    if ACTIVE == "truncated_result":
        page = page[:1]
    return page


@tool
def alloy_stock(kg_needed: float) -> dict:
    """Lead-free pewter alloy in stock."""
    return {"kg_in_stock": 140.0, "kg_needed": kg_needed, "enough": kg_needed <= 140.0}


@tool
def price_line(sku: str, qty: int) -> dict:
    """Price a line of the order."""
    unit = next(r["price"] for r in CATALOGUE if r["sku"] == sku)
    return {"sku": sku, "qty": qty, "amount": round(unit * qty * (0.9 if qty >= 10 else 1.0), 2)}


@tool
def engraving_slots(week: int, pieces: int, text: str) -> dict:
    """Book the engraver for a week."""
    if ACTIVE == "tool_ignores_argument":
        week = THIS_WEEK
    return {"week": week, "pieces": pieces, "text": text, "booked": True}


TOOLS = [catalogue_search, alloy_stock, price_line, engraving_slots]


class Line(BaseModel):
    sku: str
    qty: int = Field(gt=0)
    amount: float = Field(gt=0)


class Confirmation(BaseModel):
    order: str
    lines: List[Line]
    engraving: str
    ship_week: int


def _results(messages):
    names, out = {}, {}
    for m in messages:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out.setdefault(names[m["tool_call_id"]], []).append(json.loads(m["content"]))
    return out


def policy(request):
    msgs = request.body["messages"]
    order = json.loads(next(m["content"] for m in msgs if m["role"] == "user").split("\n", 1)[1])
    history = " ".join(m["content"] for m in msgs if m["role"] == "system")
    res = _results(msgs)
    lines = order["lines"]
    if "catalogue_search" not in res:
        return Reply(tool_calls=tuple(
            tool_call("catalogue_search", {"item": it}) for i, (it, _, _) in enumerate(lines)))
    skus = []
    for (it, size, qty), page in zip(lines, res["catalogue_search"]):
        match = [r for r in page if r["item"] == it and r["size"] == size] or page
        skus.append(match[0]["sku"])
    pieces = sum(q for _, _, q in lines)
    if "price_line" not in res:
        calls = [tool_call("alloy_stock", {"kg_needed": round(pieces * 0.6, 1)})]
        for i, (sku, (_, _, qty)) in enumerate(zip(skus, lines)):
            if ACTIVE == "wrong_tool_args" and i == 1:
                qty = lines[0][2]
            calls.append(tool_call("price_line", {"sku": sku, "qty": qty}))
        return Reply(tool_calls=tuple(calls))
    text = order["engraving"]
    if "engrave every piece" in history:
        text = history.split("engrave every piece '", 1)[1].split("'", 1)[0]
    if "engraving_slots" not in res:
        return Reply(tool_calls=(tool_call("engraving_slots", {"week": order["week"] + LEAD_WEEKS, "pieces": pieces, "text": text}),))
    slot = res["engraving_slots"][0]
    conf = {"order": order["order"], "lines": [{"sku": p["sku"], "qty": p["qty"], "amount": p["amount"]} for p in res["price_line"]],
            "engraving": slot["text"], "ship_week": slot["week"] + 1}
    if ACTIVE == "format_drift" and order["order"] == "PW-85":
        conf["lines"] = [{"sku": p["sku"], "quantity": p["qty"], "amount": f"£{p['amount']:.2f}"} for p in res["price_line"]]
    return json.dumps(conf)


def build(llm, order):
    bound = llm.bind_tools(TOOLS)

    def recall_thread(state: MessagesState) -> dict:
        notes = "Customer notes: none on file."
        if ACTIVE == "context_pollution" and order["customer"] == "Mossop":
            notes = "Customer notes: " + EARLIER_THREAD
        return {"messages": [SystemMessage(notes)]}

    def order_agent(state: MessagesState) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    def confirm_order(state: MessagesState) -> dict:
        conf = Confirmation.model_validate_json(state["messages"][-1].content)
        asked = {}
        for it, size, qty in order["lines"]:
            sku = next(r["sku"] for r in CATALOGUE if r["item"] == it and r["size"] == size)
            asked[sku] = qty
        got = {x.sku: x.qty for x in conf.lines}
        if got != asked:
            raise ValueError(f"confirmation {conf.order} lists {got}, the order asks for {asked}")
        if conf.engraving != order["engraving"]:
            raise ValueError(f"engraving '{conf.engraving}' is not the customer's '{order['engraving']}'")
        if conf.ship_week < order["week"] + LEAD_WEEKS:
            raise ValueError(f"ship week {conf.ship_week} is inside the {LEAD_WEEKS}-week casting lead time")
        for x in conf.lines:
            unit = next(r["price"] for r in CATALOGUE if r["sku"] == x.sku)
            if not unit * x.qty * 0.89 <= x.amount <= unit * x.qty:
                raise ValueError(f"{x.sku}: {x.amount} does not match {x.qty} at list price {unit}")
        return {"messages": [SystemMessage(f"confirmed {conf.order}")]}

    g = StateGraph(MessagesState)
    g.add_node("recall_thread", recall_thread)
    g.add_node("order_agent", order_agent)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("confirm_order", confirm_order)
    g.add_edge(START, "recall_thread")
    g.add_edge("recall_thread", "order_agent")
    g.add_conditional_edges("order_agent", tools_condition, {"tools": "tools", END: "confirm_order"})
    g.add_edge("tools", "order_agent")
    g.add_edge("confirm_order", END)
    return g.compile()


def run_one(server, inp, path):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    order = dict(inp, week=THIS_WEEK)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"pewter order {inp['order']}")
    msg = HumanMessage("Take this order.\n" + json.dumps(order))
    build(llm, order).invoke({"messages": [msg]}, config={"callbacks": [tracer], "recursion_limit": 40})


def _c(n, kind, inp, root, occ, rkind, failure, desc):
    return {"id": f"zzzq-pewter-{n}", "kind": kind, "switch": kind, "input": inp,
            "root": {"name": root, "occurrence": occ, "kind": rkind}, "failure": failure, "description": desc}


CASES = [
    _c(1, "wrong_tool_args", 1, "ChatOpenAI", 2, "llm", "confirm_order",
       "The model prices the plates with the tankards' quantity of 12 instead of 4."),
    _c(2, "tool_ignores_argument", 3, "engraving_slots", 1, "tool", "confirm_order",
       "The engraving booking ignores the requested week and books the current week."),
    _c(3, "truncated_result", 0, "catalogue_search", 1, "tool", "confirm_order",
       "The catalogue search returns only its first hit, so the pint tankard is missing and the half pint is taken."),
    _c(4, "format_drift", 4, "ChatOpenAI", 4, "llm", "confirm_order",
       "The model's confirmation names the quantity 'quantity' and writes amounts as pound strings."),
    _c(5, "context_pollution", 2, "recall_thread", 1, "other", "confirm_order",
       "The thread recall puts an earlier customer's engraving instruction into this order's context."),
]
