"""House removals (LangGraph): survey a home, size the van and crew, quote and book the move."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from trajdebug.integrations.langchain import TrajdebugTracer

from . import common
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "removals-planner", "langgraph", "house removals", "jsonl"

MOVES = {
    "M-5501": {"customer": "Ines Varga", "from": "14 Kell Road, Flat 3", "to": "2 Birch Close", "rooms": ["lounge", "kitchen", "bedroom 1", "bedroom 2", "garage"], "date": "2026-12-19"},
    "M-5502": {"customer": "Tom Achebe", "from": "88 Quarry Lane, Flat 12", "to": "5 Mill Yard", "rooms": ["lounge", "kitchen", "bedroom 1", "study"], "date": "2026-12-20"},
    "M-5503": {"customer": "Rosa Kettle", "from": "3 Dene Street", "to": "41 Harbour View", "rooms": ["lounge", "kitchen", "bedroom 1"], "date": "2026-12-21"},
    "M-5504": {"customer": "Ade Mensah", "from": "19 Poplar Walk", "to": "7 Orchard Rise", "rooms": ["lounge", "kitchen", "bedroom 1", "bedroom 2"], "date": "2026-12-22"},
    "M-5505": {"customer": "Lena Fisk", "from": "60 Canal Row, Flat 1", "to": "12 Ash Grove", "rooms": ["lounge", "kitchen"], "date": "2026-12-23"},
    "M-5506": {"customer": "Omar Quist", "from": "27 Heron Way", "to": "9 Bell Lane", "rooms": ["lounge", "kitchen", "bedroom 1", "bedroom 2", "study"], "date": "2026-12-28"},
}
REFS = ["M-5503", "M-5504", "M-5505", "M-5506"]
ITEMS = {
    "lounge": [("sofa", 1.8), ("armchair", 0.7), ("bookcase", 0.9), ("tv unit", 0.5), ("boxes x6", 0.6)],
    "kitchen": [("fridge freezer", 0.9), ("table", 0.8), ("chairs x4", 0.6), ("boxes x10", 1.0)],
    "bedroom 1": [("double bed", 1.6), ("wardrobe", 1.5), ("chest of drawers", 0.6), ("boxes x5", 0.5)],
    "bedroom 2": [("single bed", 1.0), ("wardrobe", 1.2), ("desk", 0.5), ("boxes x4", 0.4)],
    "study": [("desk", 0.7), ("filing cabinet", 0.4), ("bookcase", 0.9), ("boxes x8", 0.8)],
    "garage": [("workbench", 1.1), ("bike x2", 0.8), ("lawnmower", 0.4), ("shelving", 0.6), ("boxes x12", 1.2), ("tool chest", 0.5)],
}
ACCESS_NOTES = [
    {"address": "14 Kell Road, Flat 3", "note": "second floor, no lift, 40 m carry"},
    {"address": "14 Kell Road, Flat 30", "note": "ground floor, lift, kerbside parking"},
    {"address": "88 Quarry Lane, Flat 12", "note": "fourth floor, lift, permit bay"},
    {"address": "3 Dene Street", "note": "ground floor, driveway"},
    {"address": "19 Poplar Walk", "note": "ground floor, street parking"},
    {"address": "60 Canal Row, Flat 1", "note": "first floor, no lift, 10 m carry"},
    {"address": "27 Heron Way", "note": "ground floor, driveway"},
]
VEHICLES = [("luton van", 18.0), ("7.5 t lorry", 34.0), ("18 t lorry", 60.0)]


def _llm() -> ChatOpenAI:
    return ChatOpenAI(model="gpt-4o-mini", base_url=common.server().base_url, api_key="test-key", max_retries=0, temperature=0)


@common.handler("rem:crew")
def _crew(msgs, tools):
    d = json.loads(common.last_user(msgs))
    stairs = "no lift" in d["access"]
    crew = 2 + (d["volume_m3"] > 15) + (1 if stairs else 0)
    extra = [m for m in msgs if m.get("role") == "user" and "piano" in common._text(m.get("content"))]
    return json.dumps({"crew": crew, "hours": round(d["volume_m3"] / 2.5 + (2 if stairs else 1), 1),
                       "specialist": ["upright piano"] if extra else []})


@common.handler("rem:quote")
def _quote(msgs, tools):
    d = json.loads(common.last_user(msgs))
    total = d["crew"] * d["hours"] * 38.0 + d["vehicle_rate"] + 95.0 * len(d["specialist"])
    if active("rem_quote_format"):
        return f"Quote for {d['customer']}: total £{total:,.2f} including VAT."
    return f"Quote for {d['customer']}.\nTOTAL: {total:.2f} GBP"


@tool
def room_items(room: str, move_id: str) -> list:
    """List the surveyed items in one room."""
    items = [{"item": n, "m3": v} for n, v in ITEMS[room]]
    if active("rem_room_page") and len(items) > 5:
        return items[:5]
    return items


@tool
def find_access_notes(address: str) -> str:
    """Search the access notes by address."""
    def score(n):
        a, b = set(re.findall(r"\w+", n["address"])), set(re.findall(r"\w+", address))
        return len(a & b) / len(a | b)
    hits = sorted(ACCESS_NOTES, key=score, reverse=True)
    pick = hits[1] if active("rem_access_match") and "Kell" in address else hits[0]
    return json.dumps(pick)


def book_move(move_id: str, quote_total: float, vehicle: str, crew: int, specialist: list, volume_m3: float, items_listed: int) -> dict:
    """The dispatch system's booking call (its validation errors come back as ValueError)."""
    move = MOVES[move_id]
    expected = sum(len(ITEMS[r]) for r in move["rooms"])
    if items_listed != expected:
        raise ValueError(f"dispatch 422: inventory lists {items_listed} items, survey sheet has {expected}")
    cap = dict(VEHICLES)[vehicle]
    if volume_m3 > cap * 0.9:
        raise ValueError(f"dispatch 422: {volume_m3} m3 exceeds 90% of {vehicle} capacity {cap} m3")
    if specialist:
        raise ValueError(f"dispatch 409: specialist handling {specialist} not on the survey for {move['customer']}")
    if quote_total < 300:
        raise ValueError(f"dispatch 422: quote total {quote_total:.2f} GBP below the minimum charge of 300.00 GBP")
    note = next(n["note"] for n in ACCESS_NOTES if n["address"] == move["from"])
    need = 3 + (volume_m3 > 15)
    if "no lift" in note and crew < need:
        raise ValueError(f"dispatch 409: {crew} crew booked for a no-lift carry of {volume_m3} m3 at {move['from']}; health and safety minimum is {need}")
    return {"booking": f"BK-{move_id}", "status": "confirmed"}


class S(TypedDict, total=False):
    move_id: str
    move: dict
    history: list
    items: list
    volume_m3: float
    access: str
    vehicle: str
    plan: dict
    packing: dict
    quote_text: str
    quote_total: float
    booking: dict


def intake(s: S) -> dict:
    return {"move": MOVES[s["move_id"]]}


def load_history(s: S) -> dict:
    hist = [f"Customer {s['move']['customer']}: please take care with the {s['move']['rooms'][0]} furniture."]
    if active("rem_history_mix"):
        hist.insert(0, "Customer Hal Brennan (M-5499): we also need the upright piano moved.")
    return {"history": hist}


def inventory(s: S) -> dict:
    items = []
    for room in s["move"]["rooms"]:
        items += room_items.invoke({"room": room, "move_id": s["move_id"]})
    return {"items": items}


def estimate_volume(s: S) -> dict:
    return {"volume_m3": round(sum(i["m3"] for i in s["items"]) * 1.15, 2)}


def access(s: S) -> dict:
    return {"access": json.loads(find_access_notes.invoke({"address": s["move"]["from"]}))["note"]}


def choose_vehicle(s: S) -> dict:
    need = len(s["move"]["rooms"]) * 3.0 if active("rem_vehicle_rule") else s["volume_m3"]
    return {"vehicle": next(n for n, cap in VEHICLES if need <= cap * 0.9)}


def crew_plan(s: S) -> dict:
    msgs = [SystemMessage("[rem:crew] You plan removal crews. Answer JSON.")]
    msgs += [HumanMessage(h) for h in s["history"]]
    msgs.append(HumanMessage(json.dumps({"volume_m3": s["volume_m3"], "access": s["access"]})))
    return {"plan": json.loads(_llm().invoke(msgs).content)}


def count_boxes(s: dict) -> dict:
    return {"boxes": sum(int(i["item"].split("x")[-1]) for i in s["items"] if i["item"].startswith("boxes"))}


def order_materials(s: dict) -> dict:
    return {"order": {"boxes": s["boxes"] + 10, "tape_rolls": 1 + s["boxes"] // 10}}


class P(TypedDict, total=False):
    items: list
    boxes: int
    order: dict


def _packing_graph():
    g = StateGraph(P)
    g.add_node("count_boxes", count_boxes)
    g.add_node("order_materials", order_materials)
    g.add_edge(START, "count_boxes")
    g.add_edge("count_boxes", "order_materials")
    g.add_edge("order_materials", END)
    return g.compile()


PACKING = None


def packing(s: S) -> dict:
    out = PACKING.invoke({"items": s["items"]})
    return {"packing": out["order"]}


def quote(s: S) -> dict:
    payload = {"customer": s["move"]["customer"], "crew": s["plan"]["crew"], "hours": s["plan"]["hours"],
               "vehicle_rate": 95.0 + 7.5 * s["volume_m3"],
               "specialist": s["plan"]["specialist"]}
    text = _llm().invoke([SystemMessage("[rem:quote] You write removal quotes."), HumanMessage(json.dumps(payload))]).content
    return {"quote_text": text}


def read_total(s: S) -> dict:
    m = re.search(r"TOTAL: ([\d.]+) GBP", s["quote_text"])
    if m is None:
        m = re.search(r"(\d+(?:\.\d+)?)", s["quote_text"].split("total", 1)[-1])
    return {"quote_total": float(m.group(1))}


def submit(s: S) -> dict:
    res = book_move(**{"move_id": s["move_id"], "quote_total": s["quote_total"], "vehicle": s["vehicle"],
                            "crew": s["plan"]["crew"], "specialist": s["plan"]["specialist"],
                            "volume_m3": s["volume_m3"], "items_listed": len(s["items"])})
    return {"booking": res}


def _graph():
    global PACKING
    PACKING = _packing_graph()
    g = StateGraph(S)
    order = ["intake", "load_history", "inventory", "estimate_volume", "access", "crew_plan",
             "packing", "quote", "read_total", "choose_vehicle", "submit"]
    fns = globals()
    for n in order:
        g.add_node(n, fns[n])
    g.add_edge(START, order[0])
    for a, b in zip(order, order[1:]):
        g.add_edge(a, b)
    g.add_edge(order[-1], END)
    return g.compile()


GRAPH = None


def record(move_id: str, path: Path) -> None:
    global GRAPH
    if GRAPH is None:
        GRAPH = _graph()
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"book removal {move_id}")
    try:
        GRAPH.invoke({"move_id": move_id}, config={"callbacks": [tracer], "run_name": AGENT})
    except ValueError:
        pass


CASES = [
    dict(case="zr_rem_01", fault_id="rem_room_page", kind="truncated_result", input="M-5501", root=("room_items", 5),
         failure=("submit", 1), description="the room survey tool returns only the first five items of the garage."),
    dict(case="zr_rem_02", fault_id="rem_quote_format", kind="format_drift", input="M-5502", root=("ChatOpenAI", 2),
         failure=("submit", 1), description="the quote model writes the total as a pound amount with a thousands comma instead of the TOTAL line."),
    dict(case="zr_rem_03", fault_id="rem_vehicle_rule", kind="wrong_routing", input="M-5501", root=("choose_vehicle", 1),
         failure=("submit", 1), description="vehicle choice sizes by room count instead of surveyed volume and sends a luton van."),
    dict(case="zr_rem_04", fault_id="rem_history_mix", kind="context_pollution", input="M-5502", root=("load_history", 1),
         failure=("submit", 1), description="another customer's piano request is loaded into this move's conversation history."),
    dict(case="zr_rem_05", fault_id="rem_access_match", kind="wrong_retrieval", input="M-5501", root=("find_access_notes", 1),
         failure=("submit", 1), description="the access-note search returns Flat 30's notes (lift) for Flat 3 (no lift)."),
]
