"""Agent 2 (langgraph route): planetarium show scheduling for group visits.

Shape: a LangGraph StateGraph: intake -> classify (model) -> conditional edge to one of three desks (state
write: pricing) -> tool-calling agent loop (ChatOpenAI + ToolNode: catalog, dome availability, projector
status) -> compose (model writes the schedule entry) -> parse_schedule -> check_schedule (own check) ->
publish (booking API, reads the pricing written earlier).  Recorded by TrajdebugTracer.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Annotated, Any, Iterator, TypedDict

from . import kit
from .common import Fault

AGENT = "planetarium_shows"
ROUTE = "langgraph"
EXT = "jsonl"
RUN_NAME = "planetarium-shows"
DOMAIN = "Planetarium show scheduling"
SHAPE = "StateGraph: model classifier + conditional edge to 3 desks, ChatOpenAI/ToolNode loop over 3 tools, compose model, parse, own check, booking API"

SHOWS = [  # featured first
    {"id": "BH-09", "title": "Black Holes Up Close", "minutes": 50, "min_age": 12},
    {"id": "AU-03", "title": "Aurora Hunters", "minutes": 35, "min_age": 5},
    {"id": "CD-07", "title": "Cosmic Dawn", "minutes": 40, "min_age": 7},
    {"id": "MR-02", "title": "Mars Rover Diaries", "minutes": 30, "min_age": 6},
    {"id": "NS-11", "title": "Night Sky Tonight", "minutes": 45, "min_age": 0},
    {"id": "SA-05", "title": "Saturn Rings Tour", "minutes": 40, "min_age": 8},
    {"id": "TS-04", "title": "Tiny Stars", "minutes": 25, "min_age": 3},
]
SLOTS = ["09:00", "10:30", "13:00", "15:00"]
BOOKED = {"2027-01-15": ["10:30"], "2027-01-21": ["13:00"], "2027-02-03": ["10:30"], "2027-02-10": ["09:00"],
          "2027-02-17": ["15:00"], "2027-02-24": ["15:00"], "2027-03-02": ["10:30"], "2027-03-09": ["13:00"], "2027-03-16": ["09:00"],
          "2027-03-23": ["10:30"]}
RATES = {"school": 6.5, "public": 11.0, "private": 14.0}


class BookingRefused(RuntimeError):
    pass


class ScheduleCheckFailed(ValueError):
    pass


BookingRefused.__module__ = ScheduleCheckFailed.__module__ = "domebook.client"

_tools: dict[str, Any] = {}


def _build_tools():
    from langchain_core.tools import tool

    @tool
    def lookup_show_catalog(audience: str, page_size: int = 20) -> str:
        """List the dome shows available for an audience (school, public, private)."""
        shows = SHOWS
        page = "1/1"
        if kit.active("pl_truncated_result"):
            shows, page = SHOWS[:2], "1/4"
        return json.dumps({"audience": audience, "page": page, "shows": shows})

    @tool
    def check_dome_availability(date: str, dome: str) -> str:
        """Free start times of a dome on a date (YYYY-MM-DD)."""
        day = date
        if kit.active("pl_tool_ignores_argument"):
            day = "2026-12-03"
        free = [s for s in SLOTS if s not in BOOKED.get(day, [])]
        return json.dumps({"dome": dome, "date": day, "free": free})

    @tool
    def get_projector_status(dome: str) -> str:
        """Projector and lamp status of a dome."""
        return json.dumps({"dome": dome, "status": "ok", "lamp_hours": 1200 + kit.seed(dome) % 400})

    @tool
    def book_show_slot(date: str, start: str, show_id: str, group_size: int, tier: str, agreement: str | None = None,
                       age_band: str = "") -> str:
        """Book a dome show for a group."""
        show = next((s for s in SHOWS if s["id"] == show_id), None)
        if show is None:
            raise BookingRefused(f"DomeBook 404: unknown show {show_id}")
        if start in BOOKED.get(date, []):
            raise BookingRefused(f"DomeBook 409: Main Dome already booked at {start} on {date}")
        low = int(age_band.split("-")[0]) if age_band else 0
        if low < show["min_age"]:
            raise BookingRefused(f"DomeBook 422: {show['title']} is rated {show['min_age']}+, group age band is {age_band}")
        if tier == "private" and not agreement:
            raise BookingRefused("DomeBook 422: private hire needs a signed hire agreement reference")
        return json.dumps({"booking": f"DB-{kit.seed(date, start) % 90000 + 10000}", "status": "confirmed"})

    _tools.update(catalog=lookup_show_catalog, avail=check_dome_availability, projector=get_projector_status,
                  book=book_show_slot)


def _tool_call(name: str, args: dict):
    from trajdebug.testing import Reply, tool_call

    return Reply(tool_calls=(tool_call(name, args),))


def _policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
    if system.startswith("Classify"):
        req = json.loads(msgs[-1]["content"])
        audience = "school" if req["organisation"].endswith(("School", "Academy", "Primary")) else "public"
        if kit.active("pl_wrong_routing"):
            audience = "private_hire"
        return json.dumps({"audience": audience, "group_size": req["group_size"]})
    if system.startswith("Write"):
        entry = json.loads(msgs[-1]["content"])
        start = entry["start"]
        if kit.active("pl_format_drift"):
            h, m = start.split(":")
            start = f"{int(h) - 12 if int(h) > 12 else int(h)}:{m} {'PM' if int(h) >= 12 else 'AM'}"
        return json.dumps({"show_id": entry["show_id"], "start": start, "minutes": entry["minutes"], "dome": "Main Dome"})
    # the booking assistant: a tool loop
    req = json.loads(next(m["content"] for m in msgs if m["role"] == "user"))
    calls = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = tc["function"]["name"]
    results = {calls.get(m.get("tool_call_id")): json.loads(m["content"]) for m in msgs if m["role"] == "tool"}
    if "lookup_show_catalog" not in results:
        return _tool_call("lookup_show_catalog", {"audience": req["audience"], "page_size": 20})
    if "check_dome_availability" not in results:
        date = req["date"]
        if kit.active("pl_wrong_tool_args"):
            date = date[:8] + "0" + date[9:]
        return _tool_call("check_dome_availability", {"date": date, "dome": "Main Dome"})
    if "get_projector_status" not in results:
        return _tool_call("get_projector_status", {"dome": "Main Dome"})
    shows = results["lookup_show_catalog"]["shows"]
    show = next((s for s in shows if s["title"] == req["show"]), shows[0])
    free = results["check_dome_availability"]["free"]
    want = int(req["preferred"][:2]) * 60 + int(req["preferred"][3:])
    start = min(free, key=lambda s: (abs(int(s[:2]) * 60 + int(s[3:]) - want), s))
    return json.dumps({"show_id": show["id"], "title": show["title"], "minutes": show["minutes"], "start": start})


from langgraph.graph.message import add_messages  # noqa: E402


class GState(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    request: dict
    audience: str
    pricing: dict
    choice: dict
    entry: dict
    schedule: dict
    receipt: dict


_graph: dict[str, Any] = {}


def _compile(llm):
    from langgraph.graph import END, START, StateGraph
    from langgraph.prebuilt import ToolNode

    tools = [_tools["catalog"], _tools["avail"], _tools["projector"]]
    bound = llm.bind_tools(tools)

    def intake(state):
        r = state["request"]
        return {"request": {**r, "group_size": int(r["group_size"])}}

    def classify(state):
        msg = llm.invoke([("system", "Classify the booking audience: school, public or private_hire. Answer JSON."),
                          ("user", json.dumps(state["request"]))])
        return {"audience": json.loads(msg.content)["audience"]}

    def route_booking(state):
        return {"school": "school_desk", "public": "public_desk"}.get(state["audience"], "private_desk")

    def school_desk(state):
        return {"pricing": {"tier": "school", "rate": RATES["school"], "escorts_free": state["request"]["group_size"] // 10}}

    def public_desk(state):
        return {"pricing": {"tier": "public", "rate": RATES["public"]}}

    def private_desk(state):
        return {"pricing": {"tier": "private", "rate": RATES["private"], "agreement": None}}

    def assistant(state):
        msgs = state.get("messages") or []
        if not msgs:
            r = state["request"]
            ask = {"show": r["show"], "date": r["date"], "preferred": r["preferred"], "audience": state["pricing"]["tier"],
                   "age_band": r["age_band"]}
            msgs = [("system", "You book planetarium dome shows. Use the tools, then answer JSON."), ("user", json.dumps(ask))]
            reply = bound.invoke(msgs)
            return {"messages": [*msgs, reply]}
        return {"messages": [bound.invoke(msgs)]}

    def after_assistant(state):
        return "tools" if state["messages"][-1].tool_calls else "compose"

    def compose(state):
        choice = json.loads(state["messages"][-1].content)
        msg = llm.invoke([("system", "Write the schedule entry as JSON: show_id, start, minutes, dome."),
                          ("user", json.dumps(choice))])
        return {"choice": choice, "entry": json.loads(msg.content)}

    def parse_schedule(state):
        e = state["entry"]
        hh, mm = e["start"].split(" ")[0].split(":")
        start = int(hh) * 60 + int(mm)
        return {"schedule": {"show_id": e["show_id"], "start_min": start, "end_min": start + int(e["minutes"]),
                             "start": f"{int(hh):02d}:{mm}"}}

    def check_schedule(state):
        s = state["schedule"]
        if s["start_min"] < 9 * 60 or s["end_min"] > 17 * 60:
            raise ScheduleCheckFailed(f"show {s['show_id']} at {s['start']} falls outside dome opening hours 09:00-17:00")
        return {}

    def publish(state):
        r, s, p = state["request"], state["schedule"], state["pricing"]
        out = _tools["book"].invoke({"date": r["date"], "start": s["start"], "show_id": s["show_id"],
                                     "group_size": r["group_size"], "tier": p["tier"], "agreement": p.get("agreement"),
                                     "age_band": r["age_band"]})
        return {"receipt": json.loads(out)}

    g = StateGraph(GState)
    for name, fn in [("intake", intake), ("classify", classify), ("school_desk", school_desk),
                     ("public_desk", public_desk), ("private_desk", private_desk), ("assistant", assistant),
                     ("compose", compose), ("parse_schedule", parse_schedule), ("check_schedule", check_schedule),
                     ("publish", publish)]:
        g.add_node(name, fn)
    g.add_node("tools", ToolNode(tools))
    g.add_edge(START, "intake")
    g.add_edge("intake", "classify")
    g.add_conditional_edges("classify", route_booking, ["school_desk", "public_desk", "private_desk"])
    for d in ("school_desk", "public_desk", "private_desk"):
        g.add_edge(d, "assistant")
    g.add_conditional_edges("assistant", after_assistant, ["tools", "compose"])
    g.add_edge("tools", "assistant")
    g.add_edge("compose", "parse_schedule")
    g.add_edge("parse_schedule", "check_schedule")
    g.add_edge("check_schedule", "publish")
    g.add_edge("publish", END)
    return g.compile()


@contextmanager
def session() -> Iterator[None]:
    from langchain_openai import ChatOpenAI

    from trajdebug.testing import FakeModelServer

    _build_tools()
    with FakeModelServer(_policy, model="gpt-4o-mini") as server:
        llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0)
        _graph["app"] = _compile(llm)
        try:
            yield
        finally:
            _graph.clear()


def run_once(inp: dict, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"book {inp['show']} for {inp['organisation']} on {inp['date']}")
    try:
        _graph["app"].invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 40})
    except (BookingRefused, ScheduleCheckFailed):
        pass


def _req(org: str, date: str, show: str, size: int, band: str) -> dict:
    return {"organisation": org, "date": date, "show": show, "group_size": size, "age_band": band,
            "preferred": BOOKED[date][0]}


_IN = {
    "args": _req("Rowan Hill Primary", "2027-01-15", "Cosmic Dawn", 58, "7-9"),
    "ignores": _req("St Oswin's School", "2027-02-03", "Saturn Rings Tour", 31, "9-11"),
    "trunc": _req("Meadowbank Academy", "2027-03-09", "Cosmic Dawn", 44, "7-8"),
    "drift": _req("Quayside Astronomy Club", "2027-02-24", "Night Sky Tonight", 22, "10-70"),
    "routing": _req("Tollgate Primary", "2027-03-16", "Mars Rover Diaries", 27, "6-7"),
}

FAULTS = [
    Fault("planetarium_1", "pl_wrong_tool_args", "wrong_tool_args", "ChatOpenAI", "2027-01-05", _IN["args"]),
    Fault("planetarium_2", "pl_tool_ignores_argument", "tool_ignores_argument", "check_dome_availability", "2026-12-03", _IN["ignores"]),
    Fault("planetarium_3", "pl_truncated_result", "truncated_result", "lookup_show_catalog", "1/4", _IN["trunc"]),
    Fault("planetarium_4", "pl_format_drift", "format_drift", "ChatOpenAI", "PM", _IN["drift"]),
    Fault("planetarium_5", "pl_wrong_routing", "wrong_routing", "ChatOpenAI", "private_hire", _IN["routing"]),
]

REFS = [_req("Vale Park School", "2027-01-21", "Tiny Stars", 35, "4-5"),
        _req("Northwick Rotary", "2027-02-17", "Black Holes Up Close", 18, "30-75"),
        _req("Sandpiper Primary", "2027-03-02", "Aurora Hunters", 49, "6-7"),
        _req("Wrenfield Academy", "2027-03-23", "Saturn Rings Tour", 60, "11-12")]
