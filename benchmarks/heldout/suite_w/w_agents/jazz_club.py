"""Jazz club gig programming (route: langgraph).

A LangGraph graph with ChatOpenAI against the fake model server: the model plans the evening's sets,
then a tool-calling loop (model node + ToolNode) reads the band's rider and the venue calendar in
parallel, checks the backline inventory of the room and the ticket sales; code builds the run sheet,
the club checks it against its licence and publishes the gig to the box office.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import FakeModelServer, Reply, tool_call

import kit

AGENT = "jazz-club-programming"
ROUTE = "langgraph"
DOMAIN = "jazz club gig programming"
SHAPE = "set plan (llm) -> tool loop: rider + calendar (parallel), backline, ticket sales -> summary (llm) -> run sheet (code) -> licence check -> box-office API"

BANDS = {
    "Fergus McCreadie Trio": {"players": 3, "backline": ["grand piano", "double bass amp", "drum kit"]},
    "Tommy Smith Quartet": {"players": 4, "backline": ["grand piano", "double bass amp", "drum kit"]},
    "Kitchen Sink Big Band": {"players": 15, "backline": ["upright piano", "bass amp", "drum kit", "guitar amp"]},
    "Mezcla": {"players": 6, "backline": ["keyboard amp", "bass amp", "drum kit", "congas"]},
    "Fat-Suit": {"players": 8, "backline": ["keyboard amp", "bass amp", "drum kit", "guitar amp"]},
    "Corrie Dick Trio": {"players": 3, "backline": ["grand piano", "double bass amp", "drum kit"]},
    "Brass Jaw": {"players": 4, "backline": ["drum kit"]},
    "Georgia Cecile Quintet": {"players": 5, "backline": ["grand piano", "double bass amp", "drum kit"]},
    "Luca Manning Duo": {"players": 2, "backline": ["grand piano"]},
}
ROOMS = {
    "Main Room": {"capacity": 220, "stock": ["grand piano", "upright piano", "double bass amp", "bass amp", "drum kit",
                                             "guitar amp", "keyboard amp", "congas"]},
    "Cellar": {"capacity": 90, "stock": ["upright piano", "bass amp", "drum kit", "keyboard amp", "guitar amp"]},
}
CURFEW = "23:30"


def _inp(date: str, band: str, support: str, room: str, start: str, sold: int) -> dict:
    return {"date": date, "headliner": band, "support": support, "room": room, "first_set": start, "sold": sold}


REFS = [
    _inp("2026-12-10", "Mezcla", "Brass Jaw", "Main Room", "20:00", 141),
    _inp("2026-12-11", "Kitchen Sink Big Band", "Luca Manning Duo", "Main Room", "19:45", 188),
    _inp("2026-12-12", "Fat-Suit", "Corrie Dick Trio", "Cellar", "20:30", 64),
    _inp("2026-12-17", "Corrie Dick Trio", "Luca Manning Duo", "Main Room", "20:15", 97),
]


def _event_id(date: str, room: str) -> str:
    return f"EV-{date[5:7]}{date[8:]}-{'M' if room == 'Main Room' else 'C'}"


# ---------------------------------------------------------------- the scripted model

def _results(messages: list[dict]) -> dict[str, list]:
    names = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    out: dict[str, list] = {}
    for m in messages:
        if m.get("role") == "tool":
            try:
                val = json.loads(m["content"])
            except ValueError:
                val = m["content"]
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(val)
    return out


def _hm(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def brain(request):
    messages = request.body["messages"]
    system = messages[0]["content"]
    req = json.loads(next(m["content"] for m in messages if m["role"] == "user" and "headliner" in m["content"]))
    if system.startswith("PLAN"):
        h, m = map(int, req["first_set"].split(":"))
        t1 = h * 60 + m
        gap = 80
        sets = [{"act": req["headliner"], "start": _hm(t1), "mins": 60},
                {"act": req["support"], "start": _hm(t1 - 45), "mins": 35},
                {"act": req["headliner"], "start": _hm(t1 + gap), "mins": 50}]
        if kit.active("jz-plan-support-last"):
            sets[1]["start"] = _hm(t1 + 70)
        return json.dumps({"doors": _hm(t1 - 60), "sets": sets})
    seen = _results(messages)
    if "band_rider" not in seen:
        band = req["support"] if kit.active("jz-rider-support") else req["headliner"]
        return Reply(tool_calls=(tool_call("band_rider", {"band": band}),
                                 tool_call("venue_calendar", {"date": req["date"], "room": req["room"]})))
    if "backline_inventory" not in seen:
        return Reply(tool_calls=(tool_call("backline_inventory", {"items": seen["band_rider"][-1]["backline"],
                                                                  "room": req["room"]}),))
    if "ticket_sales" not in seen:
        return Reply(tool_calls=(tool_call("ticket_sales", {"event_id": seen["venue_calendar"][-1]["event_id"]}),))
    plan = json.loads(messages[1]["content"])["plan"]
    doors = plan["doors"]
    if kit.active("jz-doors-12h"):
        h, m = map(int, doors.split(":"))
        doors = f"{(h - 1) % 12 + 1}:{m:02d} PM"
    return json.dumps({"event_id": seen["venue_calendar"][-1]["event_id"], "doors": doors,
                       "players": seen["band_rider"][-1]["players"],
                       "backline_ok": all(i["in_stock"] for i in seen["backline_inventory"][-1]["items"]),
                       "sold": len(seen["ticket_sales"][-1]["orders"])})


# ---------------------------------------------------------------- tools

@tool
def band_rider(band: str) -> str:
    """The band's technical rider: players and backline."""
    return json.dumps({"band": band, **BANDS[band]})


@tool
def venue_calendar(date: str, room: str) -> str:
    """The club's calendar entry for the date and room."""
    if kit.active("jz-calendar-room"):
        room = "Main Room"
    return json.dumps({"date": date, "room": room, "event_id": _event_id(date, room), "status": "pencilled"})


@tool
def backline_inventory(items: list[str], room: str) -> str:
    """Whether the room's backline store holds the items."""
    return json.dumps({"room": room, "items": [{"item": i, "in_stock": i in ROOMS[room]["stock"]} for i in items]})


_SOLD: dict[str, int] = {}


@tool
def ticket_sales(event_id: str) -> str:
    """Orders sold so far for the event."""
    orders = [f"T-{k + 1:04d}" for k in range(_SOLD.get(event_id, 0))]
    if kit.active("jz-sales-page"):
        orders = orders[:50]
    return json.dumps({"event_id": event_id, "orders": orders, "page": 1, "of": 1})


@tool
def box_office_publish(sheet: dict) -> dict:
    """Publish the gig and its remaining tickets to the box office."""
    cap = ROOMS[sheet["room"]]["capacity"]
    if sheet["sold"] + sheet["release"] != cap:
        raise RuntimeError("409 Conflict: release would change the room's capacity")
    if sheet["true_sold"] > sheet["sold"]:
        raise RuntimeError(f"409 Conflict: releasing {sheet['release']} tickets would oversell {sheet['event_id']} "
                           f"(capacity {cap}, {sheet['true_sold']} already sold)")
    if not "18:00" <= sheet["doors"] <= "21:00":
        raise RuntimeError(f"422 Unprocessable Entity: doors time {sheet['doors']} outside the premises licence (18:00-23:30)")
    if sheet["players"] != BANDS[sheet["headliner"]]["players"]:
        raise RuntimeError(f"422 Unprocessable Entity: crew call for {sheet['players']} players does not match the contracted line-up")
    if not sheet["backline_ok"]:
        raise RuntimeError(f"409 Conflict: backline for {sheet['event_id']} cannot be confirmed in {sheet['room']}")
    return {"status": "on sale", "event_id": sheet["event_id"], "release": sheet["release"]}


# ---------------------------------------------------------------- the graph

class S(TypedDict, total=False):
    request: dict
    plan: dict
    messages: Annotated[list[AnyMessage], add_messages]
    summary: dict
    sheet: dict
    receipt: dict


TOOLS = [band_rider, venue_calendar, backline_inventory, ticket_sales]


def build(llm: ChatOpenAI):
    bound = llm.bind_tools(TOOLS)

    def plan(state: S, config: RunnableConfig) -> dict:
        reply = llm.invoke([SystemMessage("PLAN the evening's sets."), HumanMessage(json.dumps(state["request"]))],
                           config=config)
        p = json.loads(reply.content)
        return {"plan": p, "messages": [SystemMessage("You are the programming assistant of the club. Use the tools."),
                                        HumanMessage(json.dumps({"plan": p})),
                                        HumanMessage(json.dumps(state["request"]))]}

    def assistant(state: S, config: RunnableConfig) -> dict:
        return {"messages": [bound.invoke(state["messages"], config=config)]}

    def summarise(state: S) -> dict:
        return {"summary": json.loads(state["messages"][-1].content)}

    def run_sheet(state: S) -> dict:
        s, req, p = state["summary"], state["request"], state["plan"]
        digits = "".join(ch for ch in s["doors"] if ch.isdigit() or ch == ":")
        h, m = digits.split(":")[:2]
        cap = ROOMS[req["room"]]["capacity"]
        return {"sheet": {"event_id": s["event_id"], "room": req["room"], "headliner": req["headliner"], "doors": f"{int(h):02d}:{m[:2]}",
                          "sets": p["sets"], "players": s["players"], "backline_ok": s["backline_ok"],
                          "sold": s["sold"], "release": cap - s["sold"], "true_sold": req["sold"]}}

    def licence_check(state: S) -> dict:
        sets = sorted(state["sheet"]["sets"], key=lambda x: x["start"])
        for a, b in zip(sets, sets[1:]):
            h, m = map(int, a["start"].split(":"))
            if _hm(h * 60 + m + a["mins"]) > b["start"]:
                raise ValueError(f"running order clash: {a['act']} at {a['start']} runs into {b['act']} at {b['start']}")
        last = sets[-1]
        h, m = map(int, last["start"].split(":"))
        if _hm(h * 60 + m + last["mins"]) > CURFEW:
            raise ValueError(f"last set ends after the {CURFEW} curfew")
        return {"sheet": dict(state["sheet"], licence="ok")}

    def publish(state: S, config: RunnableConfig) -> dict:
        return {"receipt": box_office_publish.invoke({"sheet": state["sheet"]}, config=config)}

    g = StateGraph(S)
    for name, fn in [("plan", plan), ("assistant", assistant), ("tools", ToolNode(TOOLS)), ("summarise", summarise),
                     ("run_sheet", run_sheet), ("licence_check", licence_check), ("publish", publish)]:
        g.add_node(name, fn)
    g.add_edge(START, "plan")
    g.add_edge("plan", "assistant")
    g.add_conditional_edges("assistant", tools_condition, {"tools": "tools", END: "summarise"})
    g.add_edge("tools", "assistant")
    for a, b in [("summarise", "run_sheet"), ("run_sheet", "licence_check"), ("licence_check", "publish"), ("publish", END)]:
        g.add_edge(a, b)
    return g.compile()


@contextmanager
def session():
    with FakeModelServer(brain, model="club-model") as server:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="club-model", max_retries=0)
        yield build(llm)


def record(graph, inp: dict, path) -> None:
    _SOLD[_event_id(inp["date"], inp["room"])] = inp["sold"]
    tracer = TrajdebugTracer(path=str(path), name=AGENT, task=f"programme {inp['headliner']} on {inp['date']}")
    try:
        graph.invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 40})
    except Exception:
        pass


CASES = [
    {"case": "w_jazz_club_1", "fault": "jz-rider-support", "kind": "wrong_tool_args",
     "input": _inp("2026-12-13", "Fat-Suit", "Brass Jaw", "Cellar", "20:00", 71),
     "root": "ChatOpenAI", "marker": '"band": "Brass Jaw"'},
    {"case": "w_jazz_club_2", "fault": "jz-calendar-room", "kind": "tool_ignores_argument",
     "input": _inp("2026-12-18", "Kitchen Sink Big Band", "Mezcla", "Cellar", "20:15", 58),
     "root": "venue_calendar", "marker": "EV-1218-M"},
    {"case": "w_jazz_club_3", "fault": "jz-sales-page", "kind": "truncated_result",
     "input": _inp("2026-12-19", "Fergus McCreadie Trio", "Luca Manning Duo", "Main Room", "20:00", 132),
     "root": "ticket_sales", "marker": 'T-0050\\"]'},
    {"case": "w_jazz_club_4", "fault": "jz-doors-12h", "kind": "format_drift",
     "input": _inp("2026-12-20", "Kitchen Sink Big Band", "Corrie Dick Trio", "Main Room", "19:30", 175),
     "root": "ChatOpenAI", "marker": "6:30 PM"},
    {"case": "w_jazz_club_5", "fault": "jz-plan-support-last", "kind": "plan_error",
     "input": _inp("2026-12-21", "Mezcla", "Luca Manning Duo", "Main Room", "20:45", 120),
     "root": "ChatOpenAI", "marker": "21:55"},
]
