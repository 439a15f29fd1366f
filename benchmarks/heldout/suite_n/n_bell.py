"""Bell foundry quoting (langgraph route): order intake, a model-written plan, a tool loop, order confirmation."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, TypedDict

import nkit
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call


NAME = "bell-foundry"
ROUTE = "langgraph"
DOMAIN = "bell foundry casting quotes"
SHAPE = "parse node, planner model, model/tool loop (one tool per turn: profile per bell, stock, reserve, furnace), confirmation node"

ORDERS = {
    "o1": "Order 7731 for St Brannoc: 3 bells, notes Eb4, F4, G4; bell bronze; pour week 2026-W40",
    "o2": "Order 7745 for Kirkby Chapel: 2 bells, notes Bb4, C5; bell bronze; pour week 2026-W41",
    "o3": "Order 7752 for Hollin School: 2 bells, notes Ab4, Bb4; bell bronze; pour week 2026-W42",
    "r1": "Order 7701 for Dunmere: 2 bells, notes D5, E5; bell bronze; pour week 2026-W38",
    "r2": "Order 7710 for Oakridge Hall: 1 bell, notes C5; bell bronze; pour week 2026-W39",
    "r3": "Order 7718 for Saltcote: 3 bells, notes A4, B4, C#5; bell bronze; pour week 2026-W39",
    "r4": "Order 7724 for Penhallow: 2 bells, notes F5, G5; bell bronze; pour week 2026-W40",
}
INPUTS = {k: {"order": v} for k, v in ORDERS.items()}
REFS = ["r1", "r2", "r3", "r4"]
FAULTS = [
    {"id": "bf-plan", "kind": "plan_error", "input": "o1", "root": "ChatOpenAI", "marker": "PLAN: profile, stock, furnace"},
    {"id": "bf-resv", "kind": "hallucinated_value", "input": "o2", "root": "ChatOpenAI", "marker": "MR-5521"},
    {"id": "bf-alloy", "kind": "wrong_tool_args", "input": "o3", "root": "ChatOpenAI", "marker": "aluminium bronze"},
    {"id": "bf-lb", "kind": "unit_error", "input": "o1", "root": "bell_profile", "marker": "832.5"},
    {"id": "bf-note", "kind": "lossy_parsing", "input": "o3", "root": "intake", "marker": '"A4"'},
]
SEMITONES = {"C": 0, "C#": 1, "Db": 1, "D": 2, "Eb": 3, "E": 4, "F": 5, "F#": 6, "G": 7, "Ab": 8, "A": 9, "Bb": 10, "B": 11}
CAPACITY_KG = 1500


def _weight(note: str) -> float:
    m = re.fullmatch(r"([A-G][b#]?)(\d)", note)
    idx = SEMITONES[m.group(1)] + 12 * int(m.group(2))
    # a treble-to-tenor scale: weight roughly halves per 6 semitones above C4
    return round(520 * 2 ** (-(idx - 48) / 6.5), 1)


@tool
def bell_profile(note: str) -> str:
    """Diameter and casting weight of a bell sounding `note` (scientific pitch, e.g. Eb4)."""
    kg = _weight(note)
    if nkit.active("bf-lb"):
        kg = round(kg * 2.20462, 1)
    return json.dumps({"tool": "bell_profile", "note": note, "weight_kg": kg, "diameter_mm": round(1000 * (kg / 520) ** (1 / 3))})


@tool
def alloy_stock(alloy: str, kg: float) -> str:
    """Metal on hand for an alloy, against the kilograms needed."""
    return json.dumps({"tool": "alloy_stock", "alloy": alloy, "on_hand_kg": 4200, "needed_kg": kg})


@tool
def reserve_metal(alloy: str, kg: float) -> str:
    """Reserve metal for a pour; returns the reservation id."""
    RESERVATIONS["MR-1043"] = alloy
    return json.dumps({"tool": "reserve_metal", "reservation": "MR-1043", "alloy": alloy, "kg": kg})


RESERVATIONS: dict[str, str] = {"MR-1043": "bell bronze"}


@tool
def book_furnace(reservation: str, kg: float, week: str) -> str:
    """Book the crucible for a pour week with a metal reservation."""
    if reservation == "none":
        raise RuntimeError("Furnace scheduler rejected booking: a pour needs a metal reservation (got none)")
    if reservation != "MR-1043":
        raise RuntimeError(f"Furnace scheduler: reservation {reservation} not found")
    if RESERVATIONS[reservation] != "bell bronze":
        raise RuntimeError(f"Furnace scheduler rejected booking: crucible C2 is charged for bell bronze, reservation {reservation} holds {RESERVATIONS[reservation]}")
    if kg > CAPACITY_KG:
        raise RuntimeError(f"Furnace scheduler rejected booking: charge {kg} kg exceeds crucible capacity {CAPACITY_KG} kg")
    return json.dumps({"tool": "book_furnace", "slot": f"{week}-C2", "kg": kg})


TOOLS = [bell_profile, alloy_stock, reserve_metal, book_furnace]


@tool
def confirm_order(order_id: str, notes: list[str], slot: str) -> str:
    """Confirm the quoted order with the order system."""
    contract = _CONTRACT[order_id]
    if notes != contract["notes"]:
        raise RuntimeError(f"Order system 409: order {order_id} lines {notes} do not match the signed contract {contract['notes']}")
    return json.dumps({"order": order_id, "slot": slot, "status": "confirmed"})


_CONTRACT: dict[str, dict[str, Any]] = {}


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    order: dict
    plan: str


def intake(state: State) -> dict:
    text = state["messages"][0].content
    m = re.search(r"Order (\d+) for ([^:]+): (\d+) bells?, notes ([^;]+); ([^;]+); pour week (\S+)", text)
    notes = [n.strip() for n in m.group(4).split(",")]
    if nkit.active("bf-note"):
        notes = [re.sub(r"^([A-G])b", r"\1", n) for n in notes]
    return {"order": {"id": m.group(1), "client": m.group(2), "notes": notes, "alloy": m.group(5), "week": m.group(6)}}


def make_graph(llm: ChatOpenAI):
    planner_llm = llm
    agent_llm = llm.bind_tools(TOOLS, parallel_tool_calls=False)

    def planner(state: State) -> dict:
        msg = planner_llm.invoke([SystemMessage("You are the foundry planner. Answer with one line: PLAN: ..."),
                                  HumanMessage(json.dumps(state["order"]))])
        return {"plan": msg.content}

    def agent(state: State) -> dict:
        sys_msg = SystemMessage(f"You quote bell castings. Follow the plan. {state['plan']}. Order: {json.dumps(state['order'])}")
        msg = agent_llm.invoke([sys_msg, *state["messages"]])
        return {"messages": [msg]}

    def route(state: State) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else "confirm"

    def confirm(state: State) -> dict:
        slot = next(json.loads(m.content)["slot"] for m in state["messages"] if getattr(m, "name", None) == "book_furnace")
        out = confirm_order.invoke({"order_id": state["order"]["id"], "notes": state["order"]["notes"], "slot": slot})
        return {"messages": [AIMessage(out)]}

    g = StateGraph(State)
    g.add_node("intake", intake)
    g.add_node("planner", planner)
    g.add_node("agent", agent)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_node("confirm", confirm)
    g.add_edge(START, "intake")
    g.add_edge("intake", "planner")
    g.add_edge("planner", "agent")
    g.add_conditional_edges("agent", route, {"tools": "tools", "confirm": "confirm"})
    g.add_edge("tools", "agent")
    g.add_edge("confirm", END)
    return g.compile()


def policy(request) -> Any:
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    if system.startswith("You are the foundry planner"):
        if nkit.active("bf-plan"):
            return "PLAN: profile, stock, furnace"
        return "PLAN: profile, stock, reserve, furnace"
    order = json.loads(system.split("Order: ", 1)[1])
    results = [json.loads(m["content"]) for m in msgs if m["role"] == "tool"]
    by_tool: dict[str, list[dict]] = {}
    for r in results:
        by_tool.setdefault(r["tool"], []).append(r)
    profiles = by_tool.get("bell_profile", [])
    if len(profiles) < len(order["notes"]):
        return Reply(tool_calls=(tool_call("bell_profile", {"note": order["notes"][len(profiles)]}),))
    total = round(sum(p["weight_kg"] for p in profiles) * 1.1, 1)
    if "alloy_stock" not in by_tool:
        return Reply(tool_calls=(tool_call("alloy_stock", {"alloy": order["alloy"], "kg": total}),))
    plan = system.split("PLAN: ", 1)[1].split(".")[0]
    if "reserve" in plan and "reserve_metal" not in by_tool:
        alloy = "aluminium bronze" if nkit.active("bf-alloy") else order["alloy"]
        return Reply(tool_calls=(tool_call("reserve_metal", {"alloy": alloy, "kg": total}),))
    if "book_furnace" not in by_tool:
        resv = by_tool["reserve_metal"][0]["reservation"] if "reserve_metal" in by_tool else "none"
        if nkit.active("bf-resv"):
            resv = "MR-5521"
        return Reply(tool_calls=(tool_call("book_furnace", {"reservation": resv, "kg": total, "week": order["week"]}),))
    return f"Quote ready: {len(profiles)} bells, {total} kg bell bronze, slot {by_tool['book_furnace'][0]['slot']}."


def record(inp: dict, path) -> None:
    server = nkit.SERVER
    server.use(policy)
    RESERVATIONS.clear()
    text = inp["order"]
    oid = text.split()[1]
    _CONTRACT[oid] = {"notes": [n.strip() for n in re.search(r"notes ([^;]+);", text).group(1).split(",")]}
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"quote casting for order {oid}")
    graph = make_graph(llm)
    try:
        graph.invoke({"messages": [HumanMessage(text)]}, config={"callbacks": [tracer], "recursion_limit": 60})
    except RuntimeError:
        pass
