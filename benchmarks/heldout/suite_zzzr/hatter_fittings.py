"""A hatter's fitting desk as a LangGraph StateGraph (route langgraph).

Shape: order intake node -> shop-book notes node -> model reads the head measurement
(ChatOpenAI) -> a parsing node -> a sizing node calling a tool -> a conditional edge
choosing the felt or the straw workroom (each a node calling two tools) -> a pydantic
fitting ticket checked in the last node.  State lives in the graph's state.
"""

from __future__ import annotations

import re
from typing import TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel, model_validator

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "hatter-fitting-desk"
ROUTE = "langgraph"
DOMAIN = "a hatter's fittings"
SHAPE = "StateGraph, 8 nodes with a conditional edge to one of two workrooms, model + 3 tools, pydantic ticket check, 13-15 steps"
SWITCH = None

CARDS = {
    "Mrs Ashdown": {"circumference_cm": 55.5, "shape": "round oval"},
    "Mr Tregear": {"circumference_cm": 58.0, "shape": "long oval"},
    "Dr Okafor": {"circumference_cm": 59.5, "shape": "long oval"},
    "Miss Penhale": {"circumference_cm": 54.0, "shape": "round oval"},
    "Mr Villiers": {"circumference_cm": 61.0, "shape": "regular oval"},
}
BLOCK_SIZES = [53, 54, 55, 56, 57, 58, 59, 60, 61, 62]

INPUTS = [
    {"order": "HF-301", "customer": "Mrs Ashdown", "style": "cloche", "material": "fur felt"},
    {"order": "HF-302", "customer": "Mr Tregear", "style": "boater", "material": "sennit straw"},
    {"order": "HF-303", "customer": "Dr Okafor", "style": "homburg", "material": "fur felt"},
    {"order": "HF-304", "customer": "Miss Penhale", "style": "pork pie", "material": "wool felt"},
    {"order": "HF-305", "customer": "Mr Villiers", "style": "panama", "material": "panama straw"},
]

CASES = [
    {"id": "zzzr-hat-route", "input": 2, "switch": "workroom", "kind": "wrong_routing",
     "root": ("route_workroom", 1), "failure": ("reserve_block", 1),
     "desc": "The fur felt homburg was sent to the straw workroom, which then tried to reserve a straw block for it."},
    {"id": "zzzr-hat-card", "input": 3, "switch": "previous_card", "kind": "context_pollution",
     "root": ("gather_notes", 1), "failure": ("confirm_fitting", 1),
     "desc": "The shop-book notes for Miss Penhale also carried the measurement card of the fitting before (Dr Okafor), and the model read his 59.5 cm from it."},
    {"id": "zzzr-hat-reading", "input": 0, "switch": "hat_size_reply", "kind": "format_drift",
     "root": ("ChatOpenAI", 1), "failure": ("read_measurement", 1),
     "desc": "The model gave the head as a hat size (6 7/8) instead of a circumference in centimetres."},
    {"id": "zzzr-hat-block", "input": 1, "switch": "block_index", "kind": "off_by_one",
     "root": ("size_for_head", 1), "failure": ("confirm_fitting", 1),
     "desc": "The block size table was read one entry too low, giving a 57 cm block for a 58 cm head."},
    {"id": "zzzr-hat-shape", "input": 4, "switch": "shape_ignored", "kind": "tool_ignores_argument",
     "root": ("block_stock", 1), "failure": ("confirm_fitting", 1),
     "desc": "The block stock lookup answered with long oval blocks whatever shape it was asked for, here a regular oval head."},
]


class Fitting(TypedDict, total=False):
    request: dict
    order: dict
    notes: str
    reading: str
    head: dict
    block_size: int
    workroom: str
    block: dict
    reservation: dict
    ticket: dict


class FittingTicket(BaseModel):
    order: str
    customer: str
    style: str
    material: str
    head_cm: float
    head_shape: str
    block_id: str
    block_cm: int
    block_shape: str
    booked_customer_cm: float

    @model_validator(mode="after")
    def block_fits_head(self):
        if self.block_cm < self.head_cm or self.block_cm - self.head_cm > 1.0:
            raise ValueError(f"block {self.block_cm} cm does not fit a {self.head_cm} cm head")
        if self.block_shape != self.head_shape:
            raise ValueError(f"block shape {self.block_shape} does not match head shape {self.head_shape}")
        if abs(self.head_cm - self.booked_customer_cm) > 0.6:
            raise ValueError(f"measured {self.head_cm} cm against {self.booked_customer_cm} cm in the customer's booking")
        return self


_previous = {b["order"]: a["customer"] for a, b in zip(INPUTS, INPUTS[1:])}


def policy(request):
    text = request.body["messages"][-1]["content"]
    cards = re.findall(r"card: ([\d.]+) cm, ([a-z ]+)", text)
    cm, shape = cards[-1]
    if SWITCH == "hat_size_reply":
        return f"hat size 6 7/8, {shape}"
    return f"{cm} cm, {shape}"


@tool
def size_for_head(circumference_cm: float) -> int:
    """The smallest hat block that takes a head of this circumference."""
    i = next(i for i, s in enumerate(BLOCK_SIZES) if s >= circumference_cm)
    if SWITCH == "block_index":
        i -= 1
    return BLOCK_SIZES[i]


@tool
def block_stock(size_cm: int, shape: str, material: str) -> dict:
    """A free block of this size, shape and material in the block room."""
    kind = "straw" if "straw" in material else "felt"
    served = shape
    if SWITCH == "shape_ignored":
        served = "long oval"
    return {"block_id": f"{kind[0].upper()}B-{size_cm}-{served.split()[0][:2].upper()}", "size_cm": size_cm,
            "shape": served, "kind": kind}


@tool
def reserve_block(block_id: str, order: str, material: str) -> dict:
    """Reserve a block for an order."""
    if block_id.startswith("SB") and "straw" not in material:
        raise ValueError(f"block {block_id} is a straw block; order {order} is {material}")
    if block_id.startswith("FB") and "straw" in material:
        raise ValueError(f"block {block_id} is a felt block; order {order} is {material}")
    return {"block_id": block_id, "order": order, "reserved": True}


def build(llm):
    def take_order(state: Fitting) -> dict:
        r = state["request"]
        return {"order": {"order": r["order"], "customer": r["customer"], "style": r["style"], "material": r["material"]}}

    def gather_notes(state: Fitting) -> dict:
        who = state["order"]["customer"]
        card = CARDS[who]
        notes = f"{who} card: {card['circumference_cm']} cm, {card['shape']}"
        if SWITCH == "previous_card":
            prev = _previous[state["order"]["order"]]  # the card left open from the fitting before
            notes += f"\n{prev} card: {CARDS[prev]['circumference_cm']} cm, {CARDS[prev]['shape']}"
        return {"notes": notes}

    def measure_head(state: Fitting) -> dict:
        reply = llm.invoke([SystemMessage("Read the customer's head circumference and shape from the shop book."),
                            HumanMessage(state["notes"])])
        return {"reading": reply.content}

    def read_measurement(state: Fitting) -> dict:
        m = re.fullmatch(r"([\d.]+) cm, ([a-z ]+)", state["reading"].strip())
        if m is None:
            raise ValueError(f"could not read a circumference in cm from {state['reading']!r}")
        return {"head": {"circumference_cm": float(m.group(1)), "shape": m.group(2)}}

    def size_head(state: Fitting) -> dict:
        return {"block_size": size_for_head.invoke({"circumference_cm": state["head"]["circumference_cm"]})}

    def route_workroom(state: Fitting) -> str:
        material = state["order"]["material"]
        straw = "straw" in material
        if SWITCH == "workroom":
            straw = not straw
        return "straw_workroom" if straw else "felt_workroom"

    def workroom(name):
        def node(state: Fitting) -> dict:
            block = block_stock.invoke({"size_cm": state["block_size"], "shape": state["head"]["shape"],
                                        "material": "straw" if name == "straw" else "felt"})
            res = reserve_block.invoke({"block_id": block["block_id"], "order": state["order"]["order"],
                                        "material": state["order"]["material"]})
            return {"workroom": name, "block": block, "reservation": res}
        return node

    def confirm_fitting(state: Fitting) -> dict:
        o, h, b = state["order"], state["head"], state["block"]
        ticket = FittingTicket(order=o["order"], customer=o["customer"], style=o["style"], material=o["material"],
                               head_cm=h["circumference_cm"], head_shape=h["shape"], block_id=b["block_id"],
                               block_cm=b["size_cm"], block_shape=b["shape"],
                               booked_customer_cm=CARDS[o["customer"]]["circumference_cm"])
        return {"ticket": ticket.model_dump()}

    g = StateGraph(Fitting)
    g.add_node("take_order", take_order)
    g.add_node("gather_notes", gather_notes)
    g.add_node("measure_head", measure_head)
    g.add_node("read_measurement", read_measurement)
    g.add_node("size_head", size_head)
    g.add_node("felt_workroom", workroom("felt"))
    g.add_node("straw_workroom", workroom("straw"))
    g.add_node("confirm_fitting", confirm_fitting)
    g.add_edge(START, "take_order")
    g.add_edge("take_order", "gather_notes")
    g.add_edge("gather_notes", "measure_head")
    g.add_edge("measure_head", "read_measurement")
    g.add_edge("read_measurement", "size_head")
    g.add_conditional_edges("size_head", route_workroom, ["felt_workroom", "straw_workroom"])
    g.add_edge("felt_workroom", "confirm_fitting")
    g.add_edge("straw_workroom", "confirm_fitting")
    g.add_edge("confirm_fitting", END)
    return g.compile()


def record(server, given: dict, path) -> None:
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="millinery-reader", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"fitting {given['order']} for {given['customer']}")
    try:
        build(llm).invoke({"request": given}, config={"callbacks": [tracer]})
    except Exception:
        pass
