"""Draper's fabric cuts (langgraph route): a tool-calling loop (ChatOpenAI.bind_tools + ToolNode) with parallel calls and a memory tool, then ticket parsing, a schema check and the till."""
import ast
import json
from typing import Annotated

from langchain_core.messages import AnyMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import BaseModel, field_validator
from typing_extensions import TypedDict

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "fabric-cutting-desk"
ROUTE = "langgraph"
DOMAIN = "draper's fabric cuts"
SHAPE = "model tool loop: parallel bolt lookups -> parallel cuts -> memory note -> model ticket -> parse -> schema check -> till"
SWITCH = set()

BOLTS = {
    ("harris tweed", "navy check"): {"bolt": "B-118", "remaining_m": 9.5, "width_cm": 150, "price_per_m": 52.00},
    ("harris tweed", "herringbone grey"): {"bolt": "B-114", "remaining_m": 22.0, "width_cm": 150, "price_per_m": 48.00},
    ("irish linen", "natural"): {"bolt": "B-203", "remaining_m": 40.0, "width_cm": 140, "price_per_m": 24.00},
    ("irish linen", "indigo"): {"bolt": "B-207", "remaining_m": 14.0, "width_cm": 140, "price_per_m": 26.00},
    ("silk dupion", "ivory"): {"bolt": "B-310", "remaining_m": 12.0, "width_cm": 140, "price_per_m": 39.00},
    ("wool crepe", "black"): {"bolt": "B-402", "remaining_m": 30.0, "width_cm": 147, "price_per_m": 31.50},
    ("cotton lawn", "liberty floral"): {"bolt": "B-515", "remaining_m": 18.0, "width_cm": 137, "price_per_m": 22.00, "mill": "imperial"},
}
LEDGER = {}

INPUTS = [
    {"customer": "Mrs Achterberg", "min_width_cm": 137,
     "cuts": [["harris tweed", "herringbone grey", 2.5], ["irish linen", "natural", 1.75]]},
    {"customer": "Mr Osei", "min_width_cm": 140,
     "cuts": [["wool crepe", "black", 3.0], ["silk dupion", "ivory", 1.5], ["irish linen", "indigo", 2.25]]},
    {"customer": "Ms Quennell", "min_width_cm": 135,
     "cuts": [["cotton lawn", "liberty floral", 2.0], ["silk dupion", "ivory", 0.75]]},
    {"customer": "Theatre Royal wardrobe", "min_width_cm": 140,
     "cuts": [["harris tweed", "navy check", 4.0], ["wool crepe", "black", 6.0], ["irish linen", "natural", 3.5],
              ["silk dupion", "ivory", 2.0]]},
    {"customer": "Dr Lindqvist", "min_width_cm": 135,
     "cuts": [["irish linen", "indigo", 1.25], ["cotton lawn", "liberty floral", 1.5]]},
]
CASES = [
    {"id": "zzzu_draper_swap", "input": 1, "switch": "swap_lengths", "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 2), "failure": "check_ticket",
     "desc": "The model asked for the silk's 1.5 m on the wool crepe bolt and the crepe's 3.0 m on the silk, so the ticket did not match the order."},
    {"id": "zzzu_draper_colour", "input": 0, "switch": "colour_ignored", "kind": "tool_ignores_argument",
     "root": ("find_bolt", 1), "failure": "check_ticket",
     "desc": "The bolt lookup ignored the colourway and answered the first tweed bolt on the rack, the navy check, for a grey herringbone request."},
    {"id": "zzzu_draper_note", "input": 3, "switch": "note_rounds", "kind": "bad_memory_write",
     "root": ("note_cuts", 1), "failure": "ring_up",
     "desc": "The cutting-book note stored each cut rounded down to whole metres, so the till's ledger disagreed with the ticket."},
    {"id": "zzzu_draper_inches", "input": 2, "switch": "width_inches", "kind": "unit_error",
     "root": ("find_bolt", 1), "failure": "check_ticket",
     "desc": "The lawn bolt's width came back in inches (54) from the imperial mill's record, read as centimetres by the ticket check."},
    {"id": "zzzu_draper_price", "input": 4, "switch": "price_made_up", "kind": "hallucinated_value",
     "root": ("ChatOpenAI", 4), "failure": "ring_up",
     "desc": "The model's ticket priced the indigo linen at 19.50 a metre, a figure no lookup returned (the bolt is 26.00)."},
]


@tool
def find_bolt(fabric: str, colour: str) -> dict:
    """The bolt on the rack for a fabric and colourway."""
    if "colour_ignored" in SWITCH:
        key = [k for k in BOLTS if k[0] == fabric][0]
    else:
        key = (fabric, colour)
    row = dict(BOLTS[key])
    row["colour"] = key[1]
    if row.get("mill") == "imperial" and "width_inches" in SWITCH:
        row["width_cm"] = 54
    row.pop("mill", None)
    return row


@tool
def cut_length(bolt: str, metres: float) -> dict:
    """Cut a length from a bolt."""
    for row in BOLTS.values():
        if row["bolt"] == bolt:
            if metres > row["remaining_m"]:
                raise ValueError(f"bolt {bolt} has {row['remaining_m']} m left")
            return {"bolt": bolt, "cut_m": metres, "left_m": round(row["remaining_m"] - metres, 2)}
    raise KeyError(bolt)


@tool
def note_cuts(customer: str, cuts: list) -> str:
    """Write the cuts into the shop's cutting book."""
    entry = [{"bolt": c["bolt"], "metres": c["metres"]} for c in cuts]
    if "note_rounds" in SWITCH:
        entry = [{"bolt": c["bolt"], "metres": float(int(c["metres"]))} for c in cuts]
    LEDGER[customer] = entry
    return f"noted {len(entry)} cuts for {customer}"


def policy(request):
    msgs = request.body["messages"]
    order = json.loads(msgs[1]["content"].split("\n", 1)[1])
    tool_msgs = [m for m in msgs if m["role"] == "tool"]
    rounds = sum(1 for m in msgs if m["role"] == "assistant")
    if rounds == 0:
        return _calls([("find_bolt", {"fabric": f, "colour": c}) for f, c, _ in order["cuts"]])
    found = [json.loads(m["content"]) for m in tool_msgs[: len(order["cuts"])]]
    if rounds == 1:
        metres = [m for _, _, m in order["cuts"]]
        if "swap_lengths" in SWITCH:
            metres[0], metres[1] = metres[1], metres[0]
        return _calls([("cut_length", {"bolt": b["bolt"], "metres": m}) for b, m in zip(found, metres)])
    cuts = [json.loads(m["content"]) for m in tool_msgs[len(order["cuts"]): 2 * len(order["cuts"])]]
    if rounds == 2:
        return _calls([("note_cuts", {"customer": order["customer"],
                                      "cuts": [{"bolt": c["bolt"], "metres": c["cut_m"]} for c in cuts]})])
    lines = []
    for b, c in zip(found, cuts):
        price = b["price_per_m"]
        if "price_made_up" in SWITCH and b["bolt"] == "B-207":
            price = 19.50
        lines.append({"bolt": b["bolt"], "colour": b["colour"], "width_cm": b["width_cm"], "metres": c["cut_m"],
                      "price_per_m": price})
    return "Cutting ticket:\n" + json.dumps({"customer": order["customer"], "lines": lines})


def _calls(pairs):
    from trajdebug.testing import Reply, tool_call
    return Reply(tool_calls=tuple(tool_call(n, a) for n, a in pairs))


class TicketLine(BaseModel):
    bolt: str
    colour: str
    width_cm: int
    metres: float
    price_per_m: float

    @field_validator("metres")
    @classmethod
    def quarter_metres(cls, v):
        if round(v * 4) != v * 4:
            raise ValueError("cuts are sold in quarter metres")
        return v


class Desk(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    order: dict
    ticket: dict
    receipt: dict


def build(llm):
    tools = [find_bolt, cut_length, note_cuts]
    bound = llm.bind_tools(tools)

    def cutter(state: Desk) -> dict:
        return {"messages": [bound.invoke(state["messages"])]}

    def read_ticket(state: Desk) -> dict:
        text = state["messages"][-1].content
        return {"ticket": json.loads(text.split("\n", 1)[1])}

    def check_ticket(state: Desk) -> dict:
        order = state["order"]
        lines = [TicketLine(**ln) for ln in state["ticket"]["lines"]]
        for (fabric, colour, metres), ln in zip(order["cuts"], lines):
            if ln.colour != colour:
                raise ValueError(f"ticket line {ln.bolt} is {ln.colour}; the customer chose {colour}")
            if ln.metres != metres:
                raise ValueError(f"ticket line {ln.bolt} cuts {ln.metres} m; the customer asked {metres} m of {fabric}")
            if ln.width_cm < order["min_width_cm"]:
                raise ValueError(f"bolt {ln.bolt} is {ln.width_cm} cm wide; the pattern needs {order['min_width_cm']} cm")
        return {}

    def ring_up(state: Desk) -> dict:
        ticket = state["ticket"]
        book = LEDGER[ticket["customer"]]
        total = 0.0
        for ln, noted in zip(ticket["lines"], book):
            if noted["metres"] != ln["metres"]:
                raise ValueError(f"till: cutting book has {noted['metres']} m of {ln['bolt']}, ticket {ln['metres']} m")
            shelf = [r for r in BOLTS.values() if r["bolt"] == ln["bolt"]][0]["price_per_m"]
            if abs(shelf - ln["price_per_m"]) > 0.001:
                raise ValueError(f"till: {ln['bolt']} rings at {shelf:.2f} a metre, ticket says {ln['price_per_m']:.2f}")
            total += ln["metres"] * ln["price_per_m"]
        return {"receipt": {"customer": ticket["customer"], "total": round(total, 2)}}

    g = StateGraph(Desk)
    g.add_node("cutter", cutter)
    g.add_node("tools", ToolNode(tools))
    g.add_node("read_ticket", read_ticket)
    g.add_node("check_ticket", check_ticket)
    g.add_node("ring_up", ring_up)
    g.add_edge(START, "cutter")
    g.add_conditional_edges("cutter", tools_condition, {"tools": "tools", END: "read_ticket"})
    g.add_edge("tools", "cutter")
    g.add_edge("read_ticket", "check_ticket")
    g.add_edge("check_ticket", "ring_up")
    g.add_edge("ring_up", END)
    return g.compile()


def run_one(server, inp, path):
    LEDGER.clear()
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"cuts for {inp['customer']}")
    order = {"customer": inp["customer"], "cuts": inp["cuts"], "min_width_cm": inp["min_width_cm"]}
    msgs = [("system", "You cut fabric at the counter. Look up each bolt, cut, note the cuts, then write the ticket."),
            ("user", "Order:\n" + json.dumps(order))]
    try:
        build(llm).invoke({"messages": msgs, "order": order}, config={"callbacks": [tracer], "recursion_limit": 20})
    except Exception:
        pass
