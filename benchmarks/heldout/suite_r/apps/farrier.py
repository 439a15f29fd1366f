"""Farrier visit desk: a LangGraph graph (ChatOpenAI + ToolNode) books shoeing visits for a yard's horses."""

from __future__ import annotations

import json
import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer, Reply, tool_call

from .. import kit


AGENT = "farrier-desk"
ROUTE = "langgraph"
EXT = "jsonl"

HORSES = {
    "Bramble": {"hoof_width_mm": 128, "size": "3", "pattern": "Classic Hind"},
    "Juniper": {"hoof_width_mm": 121, "size": "2", "pattern": "Classic Front"},
    "Pebble": {"hoof_width_mm": 98, "size": "00", "pattern": "Pony Lite"},
    "Maestro": {"hoof_width_mm": 135, "size": "4", "pattern": "Eventer Wide"},
    "Tansy": {"hoof_width_mm": 112, "size": "1", "pattern": "Classic Front"},
    "Quill": {"hoof_width_mm": 104, "size": "0", "pattern": "Pony Lite"},
    "Sorrel": {"hoof_width_mm": 126, "size": "3", "pattern": "Classic Front"},
    "Dunmore": {"hoof_width_mm": 140, "size": "5", "pattern": "Draft Plain"},
    "Wren": {"hoof_width_mm": 101, "size": "0", "pattern": "Pony Lite"},
    "Hazel": {"hoof_width_mm": 118, "size": "2", "pattern": "Classic Hind"},
    "Otto": {"hoof_width_mm": 131, "size": "4", "pattern": "Classic Front"},
    "Clover": {"hoof_width_mm": 96, "size": "00", "pattern": "Pony Lite"},
}
SIZE_WIDTH = {"00": (92, 100), "0": (100, 108), "1": (108, 116), "2": (116, 124), "3": (124, 132), "4": (130, 138), "5": (137, 146)}
REGION_FARRIER = {"Fenwick Vale": "F-12 Dana Pryce", "Ashby Moor": "F-07 Tom Gillard", "Kestle Down": "F-19 Ruth Abiola", "Marram Coast": "F-03 Ilse Varga"}

REQUESTS = {
    "r1": "Yard: Sallow Farm (Fenwick Vale). Horses: Bramble, Juniper, Pebble. Juniper is lame on the near fore since this morning, heat in the hoof. Reported 2026-04-02.",
    "r2": "Yard: Hollin Stables (Kestle Down). Horses: Maestro, Tansy. Routine reset, shoes are 6 weeks old. Reported 2026-04-02.",
    "r3": "Yard: Brackenridge (Marram Coast). Horses: Quill, Sorrel, Dunmore. Sorrel is lame behind, pulled a shoe in the field. Reported 2026-04-02.",
    "r4": "Yard: Top Lane Livery (Fenwick Vale). Horses: Wren, Hazel. Routine trim and reset. Reported 2026-04-02.",
    "r5": "Yard: Coldharbour (Ashby Moor). Horses: Otto, Clover, Tansy. Otto is lame on the off fore after hacking. Reported 2026-04-02.",
    "r6": "Yard: Mill Leat (Kestle Down). Horses: Hazel, Quill, Otto. Hazel is lame, stone bruise suspected. Reported 2026-04-02.",
    "r7": "Yard: Parsonage Paddocks (Marram Coast). Horses: Clover, Maestro. Routine reset before the show season. Reported 2026-04-02.",
    "r8": "Yard: Windle End (Ashby Moor). Horses: Sorrel, Wren. Routine trim. Reported 2026-04-02.",
    "r9": "Yard: Greyfriars (Fenwick Vale). Horses: Dunmore, Tansy, Bramble. Tansy is lame, abscess suspected. Reported 2026-04-02.",
}

FAULTS = [
    {"id": "fa-a", "kind": "wrong_routing", "order": "r1", "root": "ChatOpenAI", "marker": "queue=routine;"},
    {"id": "fa-b", "kind": "truncated_result", "order": "r3", "root": "farrier_calendar", "marker": "cursor-2"},
    {"id": "fa-c", "kind": "wrong_tool_args", "order": "r9", "root": "ChatOpenAI", "marker": "Ashby Moor"},
    {"id": "fa-d", "kind": "bad_memory_write", "order": "r5", "root": "remember_horses", "marker": "\"Clover\": {\"size\": \"4\""},
    {"id": "fa-e", "kind": "plan_error", "order": "r6", "root": "ChatOpenAI", "marker": "horses=Hazel,Quill;"},
]
REFS = ["r2", "r4", "r7", "r8"]


def parse_request(text: str) -> dict:
    yard = text.split("Yard: ")[1].split(" (")[0]
    region = text.split("(")[1].split(")")[0]
    horses = [h.strip() for h in text.split("Horses: ")[1].split(".")[0].split(",")]
    lame = [h for h in horses if f"{h} is lame" in text]
    return {"yard": yard, "region": region, "horses": horses, "lame": lame, "reported": text.split("Reported ")[1].rstrip(".")}


# -- tools --------------------------------------------------------------------------------

@tool
def horse_record(horse: str) -> str:
    """The yard's record for one horse: hoof width, shoe size and pattern."""
    return json.dumps({"horse": horse, **HORSES[horse]})


SLOTS = ["2026-04-03 07:30", "2026-04-03 13:00", "2026-04-04 08:00", "2026-04-09 09:30", "2026-04-14 08:00", "2026-04-21 10:00"]


@tool
def farrier_calendar(region: str, within_days: int) -> str:
    """Open visit slots of the farrier covering a region, within a number of days."""
    days = {s: int(s[8:10]) - 2 for s in SLOTS}
    free = [s for s in SLOTS if days[s] <= within_days and not (region == "Marram Coast" and s.startswith("2026-04-03"))]
    if kit.active("fa-b"):
        return json.dumps({"farrier": REGION_FARRIER[region], "slots": [s for s in SLOTS if s >= "2026-04-09"][:3], "next": "cursor-2"})
    return json.dumps({"farrier": REGION_FARRIER[region], "slots": free, "next": None})


@tool
def book_visit(yard: str, region: str, slot: str, horses: list[str]) -> str:
    """Book the farrier for a visit to a yard."""
    return json.dumps({"booking": "BK-" + yard[:3].upper() + slot[8:10] + slot[11:13], "yard": yard, "region": region, "slot": slot, "horses": horses})


TOOLS = [horse_record, farrier_calendar, book_visit]


class Refused(RuntimeError):
    pass


Refused.__module__ = "farrier_app"


# -- the scripted model -------------------------------------------------------------------

def policy(request: Any) -> Reply | str:
    body = request.body or {}
    msgs = body.get("messages") or []
    system = str(msgs[0].get("content") or "") if msgs else ""
    user = next(str(m.get("content")) for m in msgs if m.get("role") == "user")
    req = parse_request(user.split("REQUEST: ")[1].split("\n")[0])
    if system.startswith("You triage"):
        queue = "urgent" if req["lame"] else "routine"
        if kit.active("fa-a"):
            queue = "routine"
        horses = req["horses"]
        if kit.active("fa-e"):
            horses = horses[:-1]
        return f"queue={queue}; horses={','.join(horses)}; work={'remove+dress+reshoe' if req['lame'] else 'trim+reset'}"
    plan = user.split("PLAN: ")[1].split("\n")[0]
    horses = plan.split("horses=")[1].split(";")[0].split(",")
    queue = plan.split("queue=")[1].split(";")[0]
    results = [m for m in msgs if m.get("role") == "tool"]
    calls = [c for m in msgs if m.get("role") == "assistant" for c in (m.get("tool_calls") or [])]
    names = [c["function"]["name"] for c in calls]
    if "horse_record" not in names:
        return Reply(tool_calls=tuple(tool_call("horse_record", {"horse": h}) for h in horses))
    if "farrier_calendar" not in names:
        region = req["region"]
        if kit.active("fa-c"):
            region = "Ashby Moor"
        return Reply(tool_calls=(tool_call("farrier_calendar", {"region": region, "within_days": 2 if queue == "urgent" else 21}),))
    if "book_visit" not in names:
        cal = json.loads(results[-1]["content"])
        call_region = json.loads(calls[names.index("farrier_calendar")]["function"]["arguments"])["region"]
        return Reply(tool_calls=(tool_call("book_visit", {"yard": req["yard"], "region": call_region, "slot": cal["slots"][0], "horses": horses}),))
    booking = json.loads(results[-1]["content"])
    return f"Booked {booking['booking']} at {booking['yard']} on {booking['slot']} for {', '.join(booking['horses'])}."


# -- the graph ----------------------------------------------------------------------------

class State(TypedDict, total=False):
    request: str
    parsed: dict
    plan: str
    queue: str
    messages: Annotated[list, add_messages]
    notes: dict
    order: dict
    referrals: Annotated[list, operator.add]


def build(base_url: str):
    llm = ChatOpenAI(model="gpt-4o-mini", base_url=base_url, api_key="sk-local", max_retries=0, temperature=0)
    desk_llm = llm.bind_tools(TOOLS)

    def intake(state: State) -> dict:
        return {"parsed": parse_request(state["request"])}

    def triage(state: State) -> dict:
        reply = llm.invoke([SystemMessage("You triage farrier requests: queue=urgent|routine; horses=...; work=..."),
                            HumanMessage(f"REQUEST: {state['request']}")])
        plan = str(reply.content)
        return {"plan": plan, "queue": plan.split("queue=")[1].split(";")[0]}

    def notify_vet(state: State) -> dict:
        return {"referrals": [f"vet referral: {h} at {state['parsed']['yard']}" for h in state["parsed"]["lame"]]}

    def desk(state: State) -> dict:
        msgs = state.get("messages") or [
            SystemMessage("You are the farrier desk agent. Read each horse's record, find a slot, book the visit."),
            HumanMessage(f"REQUEST: {state['request']}\nPLAN: {state['plan']}"),
        ]
        reply = desk_llm.invoke(msgs)
        return {"messages": ([] if state.get("messages") else msgs) + [reply]}

    def remember_horses(state: State) -> dict:
        notes: dict = {}
        last = None
        for m in state["messages"]:
            if isinstance(m, ToolMessage) and m.name == "horse_record":
                rec = json.loads(m.content)
                size = rec["size"]
                if kit.active("fa-d") and last is not None and rec["horse"] == "Clover":
                    size = last["size"]
                notes[rec["horse"]] = {"size": size, "pattern": rec["pattern"]}
                last = rec
        return {"notes": notes}

    def order_shoes(state: State) -> dict:
        lines = [{"horse": h, "size": n["size"], "pattern": n["pattern"], "sets": 1} for h, n in state["notes"].items()]
        return {"order": {"supplier": "Mustad trade desk", "lines": lines}}

    def fit_check(state: State) -> dict:
        widths = {}
        for m in state["messages"]:
            if isinstance(m, ToolMessage) and m.name == "horse_record":
                rec = json.loads(m.content)
                widths[rec["horse"]] = rec["hoof_width_mm"]
        for line in state["order"]["lines"]:
            lo, hi = SIZE_WIDTH[line["size"]]
            if not lo <= widths[line["horse"]] <= hi:
                raise Refused(f"fitting bench: size {line['size']} shoe does not suit {line['horse']} (hoof width {widths[line['horse']]} mm)")
        return {}

    def confirm(state: State) -> dict:
        parsed = state["parsed"]
        booking = None
        for m in state["messages"]:
            if isinstance(m, ToolMessage) and m.name == "book_visit":
                booking = json.loads(m.content)
        if booking is None:
            raise Refused("yard office: no booking reference on the visit")
        if booking["region"] != parsed["region"]:
            raise Refused(f"booking API 409: {REGION_FARRIER[booking['region']]} does not cover {parsed['region']}")
        if set(booking["horses"]) != set(parsed["horses"]):
            raise Refused(f"yard office: visit request lists {len(parsed['horses'])} horses, booking {booking['booking']} covers {len(booking['horses'])}")
        if parsed["lame"]:
            if not state.get("referrals"):
                raise Refused(f"welfare rule 4.2: lameness reported for {', '.join(parsed['lame'])}, no vet referral on file")
            if booking["slot"] > "2026-04-04 23:59":
                raise Refused(f"welfare rule 4.1: lame horse seen {booking['slot']}, more than 48 h after the report")
        return {}

    g = StateGraph(State)
    for name, fn in [("intake", intake), ("triage", triage), ("notify_vet", notify_vet), ("desk", desk),
                     ("remember_horses", remember_horses), ("order_shoes", order_shoes), ("fit_check", fit_check),
                     ("confirm", confirm)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_edge(START, "intake")
    g.add_edge("intake", "triage")
    g.add_conditional_edges("triage", lambda s: "notify_vet" if s["queue"] == "urgent" else "desk", ["notify_vet", "desk"])
    g.add_edge("notify_vet", "desk")
    g.add_conditional_edges("desk", tools_condition, {"tools": "tools", END: "remember_horses"})
    g.add_edge("tools", "desk")
    g.add_edge("remember_horses", "order_shoes")
    g.add_edge("order_shoes", "fit_check")
    g.add_edge("fit_check", "confirm")
    g.add_edge("confirm", END)
    return g.compile()


_CTX: dict = {}


def setup():
    server = FakeModelServer(policy).start()
    _CTX["server"] = server
    _CTX["graph"] = build(server.base_url)
    return server


def teardown(server) -> None:
    server.stop()
    _CTX.clear()


def record(key: str, path) -> None:
    text = REQUESTS[key]
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=text)
    try:
        _CTX["graph"].invoke({"request": text}, config={"callbacks": [tracer]})
    except Refused:
        pass
