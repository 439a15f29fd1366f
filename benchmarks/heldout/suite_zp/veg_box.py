"""Organic veg box delivery: builds a subscriber's weekly box from the farms' harvest notes, weighs it,
routes it to a delivery round through a planning subgraph and dispatches it (LangGraph + ChatOpenAI)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import ApiError, Case, last_user_json
from .kit import active

NAME = "veg-box-dispatch"
ROUTE = "langgraph"
DOMAIN = "organic veg box delivery"
SHAPE = "load order -> harvest retriever -> compose model -> box parser -> delivery subgraph (round router model, slot model <-> tools loop) -> pack scale tool -> dispatch (API call)"

INPUTS: dict[str, dict[str, Any]] = {
    "hughes": {"order": "VB-20417", "subscriber": "R. Hughes", "box": "medium", "exclude": ["Beetroot"], "postcode": "BS3 4QT", "week": "2027-W15"},
    "osei": {"order": "VB-20433", "subscriber": "A. Osei", "box": "large", "exclude": [], "postcode": "BS7 8NU", "week": "2027-W15"},
    "lind": {"order": "VB-20440", "subscriber": "K. Lind", "box": "small", "exclude": ["Onions"], "postcode": "BS3 1EX", "week": "2027-W15"},
    "patel": {"order": "VB-20452", "subscriber": "M. Patel", "box": "medium", "exclude": ["Kale"], "postcode": "BS7 0AA", "week": "2027-W16"},
    "moore": {"order": "VB-20461", "subscriber": "J. Moore", "box": "small", "exclude": [], "postcode": "BS3 5DD", "week": "2027-W16"},
    "ruiz": {"order": "VB-20470", "subscriber": "C. Ruiz", "box": "large", "exclude": ["Garlic"], "postcode": "BS7 9PL", "week": "2027-W16"},
}
MAIN = ("hughes", "osei")
REFS = ("lind", "patel", "moore", "ruiz")

CASES = [
    Case("vbd-1", "wrong_routing", "hughes", ("ChatOpenAI", 2), ("dispatch", 1),
         "The round router sends a south Bristol postcode to the north round, which the dispatch API refuses."),
    Case("vbd-2", "wrong_tool_args", "osei", ("ChatOpenAI", 3), ("dispatch", 1),
         "The slot model books the delivery slot for the previous week, so the slot does not match the order's week."),
    Case("vbd-3", "lossy_parsing", "osei", ("BoxParser", 1), ("dispatch", 1),
         "The box parser drops the fractional part of each kilogram quantity, so the box comes in under its minimum weight."),
    Case("vbd-4", "unit_error", "hughes", ("pack_weights", 1), ("dispatch", 1),
         "The packing scale tool adds gram lines as kilograms, so the box is declared far over the parcel limit."),
    Case("vbd-5", "truncated_result", "osei", ("HarvestRetriever", 1), ("dispatch", 1),
         "The harvest search returns only its first four notes, so the large box is composed with too few lines."),
]

HARVEST = [
    ("Potatoes", "1.5 kg", "Field 3, Ashcombe"), ("Carrots", "1.5 kg", "Field 1, Ashcombe"), ("Onions", "0.75 kg", "Barn store, Lydford"),
    ("Kale", "300 g", "Polytunnel 2, Lydford"), ("Beetroot", "1.25 kg", "Field 5, Ashcombe"), ("Leeks", "0.75 kg", "Field 2, Lydford"),
    ("Squash", "1.5 kg", "Barn store, Ashcombe"), ("Garlic", "150 g", "Drying shed, Lydford"), ("Parsnips", "1.25 kg", "Field 4, Ashcombe"),
    ("Chard", "300 g", "Polytunnel 1, Ashcombe"), ("Celeriac", "0.75 kg", "Field 6, Lydford"),
]
LINES = {"small": 5, "medium": 7, "large": 9}
MIN_KG = {"small": 3.0, "medium": 5.0, "large": 7.0}
ROUNDS = {"BS3": "R-SOUTH", "BS7": "R-NORTH"}


def policy(req: Any) -> Any:
    from trajdebug.testing import Reply, tool_call

    body = req.body
    p = last_user_json(body)
    if body.get("tools"):
        asked = [c["function"]["name"] for m in body["messages"] if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])]
        if "check_van_capacity" not in asked:
            return Reply(tool_calls=(tool_call("check_van_capacity", {"round": p["round"], "week": p["week"]}),))
        if "book_delivery_slot" not in asked:
            week = p["week"]
            if active("vbd-2"):
                week = f"{week[:6]}{int(week[6:]) - 1:02d}"
            return Reply(tool_calls=(tool_call("book_delivery_slot", {"round": p["round"], "week": week, "order": p["order"]}),))
        return "Slot booked for the round."
    if p.get("task") == "compose":
        lines = []
        for note in p["harvest"]:
            item, qty = note["item"], note["qty"]
            if item in p["exclude"]:
                continue
            if len(lines) < p["lines"]:
                lines.append(f"- {item}: {qty}")
        return "Box for this week:\n" + "\n".join(lines)
    if p.get("task") == "route":
        rnd = ROUNDS[p["postcode"].split()[0]]
        if active("vbd-1"):
            rnd = "R-NORTH"
        return json.dumps({"round": rnd, "reason": f"postcode district {p['postcode'].split()[0]}"})
    return "{}"


class HarvestRetriever(BaseRetriever):
    k: int = 20

    def _get_relevant_documents(self, query: str, *, run_manager: Any = None) -> list[Document]:
        docs = [Document(page_content=f"{i}: {q} per box available, {src}", metadata={"item": i, "qty": q}) for i, q, src in HARVEST]
        k = 4 if active("vbd-5") else self.k
        return docs[:k]


class BoxParser(BaseOutputParser[list]):
    def parse(self, text: str) -> list:
        out = []
        for m in re.finditer(r"-\s*([A-Za-z ]+):\s*([\d.]+)\s*(kg|g)", text):
            qty = float(m.group(2))
            if active("vbd-3") and m.group(3) == "kg":
                qty = float(int(qty))
            out.append({"item": m.group(1).strip(), "qty": qty, "unit": m.group(3)})
        return out


@tool
def pack_weights(lines: list[dict]) -> str:
    """Packing-house scale: the box's total weight in kilograms for the given lines."""
    total = 0.0
    for line in lines:
        if line["unit"] == "g" and not active("vbd-4"):
            total += line["qty"] / 1000
        else:
            total += line["qty"]
    return json.dumps({"total_kg": round(total, 3), "lines": len(lines)})


@tool
def check_van_capacity(round: str, week: str) -> str:
    """Free box slots on a delivery round's van in a week."""
    return json.dumps({"round": round, "week": week, "free_boxes": 14})


@tool
def book_delivery_slot(round: str, week: str, order: str) -> str:
    """Book the order onto a delivery round for a week; returns the slot."""
    return json.dumps({"slot": f"SL-{round}-{week}-{order[-3:]}", "round": round, "week": week})


def dispatch_api(order: str, week: str, postcode: str, box: str, lines: list[dict], weight_kg: float, slot: dict) -> dict:
    """The dispatch API (POST /v2/dispatch): validates and accepts the packed box."""
    if ROUNDS[postcode.split()[0]] != slot["round"]:
        raise ApiError(409, {"error": "round_mismatch", "detail": f"postcode {postcode} is not served by round {slot['round']}"})
    if slot["week"] != week:
        raise ApiError(409, {"error": "slot_week", "detail": f"slot {slot['slot']} is for {slot['week']}; order {order} is for {week}"})
    if len(lines) < LINES[box]:
        raise ApiError(422, {"error": "short_box", "detail": f"a {box} box needs {LINES[box]} lines; order {order} has {len(lines)}"})
    if weight_kg > 15.0:
        raise ApiError(422, {"error": "parcel_limit", "detail": f"declared weight {weight_kg} kg exceeds the 15 kg parcel limit"})
    if weight_kg < MIN_KG[box]:
        raise ApiError(422, {"error": "under_weight", "detail": f"declared weight {weight_kg} kg is under the {box} box minimum of {MIN_KG[box]} kg"})
    return {"status": 202, "dispatch": f"DX-{order}", "slot": slot["slot"]}


class State(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    order: dict
    harvest: list
    box_text: str
    lines: list
    weight: dict
    round: dict
    slot: dict
    dispatch: dict


def make_graph(base_url: str):
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-test", temperature=0, max_retries=0)
    slot_tools = [check_van_capacity, book_delivery_slot]
    slot_llm = llm.bind_tools(slot_tools)
    retriever = HarvestRetriever()
    parser = BoxParser()

    def load_order(state: State) -> dict:
        o = dict(state["order"])
        o["lines"] = LINES[o["box"]]
        return {"order": o}

    def harvest(state: State) -> dict:
        docs = retriever.invoke(f"harvest notes for {state['order']['week']}")
        return {"harvest": [{"item": d.metadata["item"], "qty": d.metadata["qty"]} for d in docs]}

    def compose(state: State) -> dict:
        o = state["order"]
        msg = llm.invoke([SystemMessage("You compose organic veg boxes."),
                          HumanMessage(json.dumps({"task": "compose", "harvest": state["harvest"], "exclude": o["exclude"], "lines": o["lines"]}))])
        return {"box_text": msg.content}

    def parse_box(state: State) -> dict:
        return {"lines": parser.invoke(state["box_text"])}

    def weigh(state: State) -> dict:
        return {"weight": json.loads(pack_weights.invoke({"lines": state["lines"]}))}

    def route(state: State) -> dict:
        o = state["order"]
        msg = llm.invoke([SystemMessage("You assign delivery rounds."),
                          HumanMessage(json.dumps({"task": "route", "postcode": o["postcode"]}))])
        r = json.loads(msg.content)
        o = state["order"]
        return {"round": r, "messages": [SystemMessage("You book delivery slots."),
                                         HumanMessage(json.dumps({"task": "slot", "round": r["round"], "week": o["week"], "order": o["order"]}))]}

    def slotter(state: State) -> dict:
        return {"messages": [slot_llm.invoke(state["messages"])]}

    def after_slotter(state: State) -> str:
        return "slot_tools" if state["messages"][-1].tool_calls else END

    sub = StateGraph(State)
    sub.add_node("route", route)
    sub.add_node("slotter", slotter)
    sub.add_node("slot_tools", ToolNode(slot_tools))
    sub.add_edge(START, "route")
    sub.add_edge("route", "slotter")
    sub.add_conditional_edges("slotter", after_slotter, {"slot_tools": "slot_tools", END: END})
    sub.add_edge("slot_tools", "slotter")
    delivery = sub.compile()

    def dispatch(state: State) -> dict:
        o = state["order"]
        slot = next(json.loads(m.content) for m in reversed(state["messages"]) if getattr(m, "name", None) == "book_delivery_slot")
        out = dispatch_api(order=o["order"], week=o["week"], postcode=o["postcode"], box=o["box"],
                           lines=state["lines"], weight_kg=state["weight"]["total_kg"], slot=slot)
        return {"dispatch": out}

    g = StateGraph(State)
    for name, fn in (("load_order", load_order), ("harvest", harvest), ("compose", compose), ("parse_box", parse_box),
                     ("weigh", weigh), ("delivery", delivery), ("dispatch", dispatch)):
        g.add_node(name, fn)
    g.add_edge(START, "load_order")
    for a, b in (("load_order", "harvest"), ("harvest", "compose"), ("compose", "parse_box"), ("parse_box", "delivery"),
                 ("delivery", "weigh"), ("weigh", "dispatch")):
        g.add_edge(a, b)
    g.add_edge("dispatch", END)
    return g.compile()


def record(inp_id: str, out: Path, base_url: str) -> None:
    graph = make_graph(base_url)
    order = INPUTS[inp_id]
    tracer = TrajdebugTracer(path=str(out), name=NAME, task=f"pack and dispatch veg box {order['order']}")
    try:
        graph.invoke({"order": order}, config={"callbacks": [tracer], "run_name": NAME})
    except ApiError:
        pass
