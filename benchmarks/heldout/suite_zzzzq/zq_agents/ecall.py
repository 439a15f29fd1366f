"""ecall-location-resolver: an emergency call-taking agent for a fire and rescue control room turns
a 999 call into a verified address, checks it against the handset's AML fix, picks the nearest
available fire stations and dispatches (LangGraph with a tool-calling model)."""
from __future__ import annotations

import json
import math
import re
from typing import Annotated, TypedDict

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import BaseOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import last_user, system_text, tool_results

NAME = "ecall-location-resolver"
ROUTE = "langgraph"
DOMAIN = "fire and rescue control room: 999 call to a verified address, AML cross-check and station selection"
SHAPE = "StateGraph: prompt|llm|custom output parser -> address retriever -> tool-calling llm <-> ToolNode (parallel: stations, status) -> unit selection node -> conditional route -> dispatch check"
SWITCH = None

ADDRESSES = [
    {"address": "14 Mill Lane, Great Ashford", "x": 12.1, "y": 4.3}, {"address": "14 Mill Lane, Ashford", "x": 1.2, "y": 15.0},
    {"address": "14 Mill Road, Great Ashford", "x": 14.9, "y": 7.8}, {"address": "3 Quarry Close, Whitby Heath", "x": 6.4, "y": 11.2},
    {"address": "3 Quarry Court, Whitby Heath", "x": 9.9, "y": 13.1}, {"address": "Unit 7 Canal Wharf, Lowmoor", "x": 18.2, "y": 2.5},
    {"address": "22 Church Street, Lowmoor", "x": 17.5, "y": 3.9}, {"address": "The Old Forge, Kings Hatch", "x": 3.3, "y": 3.1},
    {"address": "9 Station Approach, Kings Hatch", "x": 4.0, "y": 2.2},
]
STATIONS = [
    {"station": "Great Ashford", "service": "fire", "x": 12.5, "y": 5.0}, {"station": "Ashford Town", "service": "fire", "x": 1.0, "y": 14.0},
    {"station": "Whitby Heath", "service": "fire", "x": 7.0, "y": 12.0}, {"station": "Lowmoor", "service": "fire", "x": 16.5, "y": 3.0},
    {"station": "Kings Hatch", "service": "fire", "x": 3.0, "y": 4.0}, {"station": "Lowmoor Ambulance", "service": "ambulance", "x": 17.9, "y": 2.9},
    {"station": "Great Ashford Ambulance", "service": "ambulance", "x": 12.2, "y": 4.6}, {"station": "Centre Park", "service": "fire", "x": 10.0, "y": 9.0},
]
STATUS_NOW = {"Great Ashford": "available", "Ashford Town": "available", "Whitby Heath": "available", "Lowmoor": "committed",
              "Kings Hatch": "available", "Centre Park": "available"}
STATUS_0700 = dict(STATUS_NOW, Lowmoor="available")
INPUTS = [
    {"task": "999 call: kitchen fire, 14 Mill Lane Great Ashford", "call_id": "C-4471", "aml": (12.2, 4.4),
     "transcript": "Caller: there's a fire in my kitchen, smoke everywhere. I'm at 14 Mill Lane in Great Ashford."},
    {"task": "999 call: shed fire, 3 Quarry Close Whitby Heath", "call_id": "C-4472", "aml": (6.5, 11.1),
     "transcript": "Caller: my neighbour's shed is on fire, it's 3 Quarry Close, Whitby Heath."},
    {"task": "999 call: smoke from unit, Unit 7 Canal Wharf Lowmoor", "call_id": "C-4473", "aml": (18.1, 2.6),
     "transcript": "Caller: black smoke coming out of Unit 7 Canal Wharf, Lowmoor, nobody inside I think."},
    {"task": "999 call: chimney fire, The Old Forge Kings Hatch", "call_id": "C-4474", "aml": (3.4, 3.0),
     "transcript": "Caller: chimney fire at The Old Forge, Kings Hatch, sparks on the roof."},
    {"task": "999 call: car fire, 22 Church Street Lowmoor", "call_id": "C-4475", "aml": (17.4, 3.8),
     "transcript": "Caller: a car is burning outside 22 Church Street, Lowmoor."},
]
CASES = [
    {"id": "zq_ecall_1", "input": 0, "fault_kind": "lossy_parsing", "root": ("AddressParser", 1), "root_kind": "parse",
     "failure": ("dispatch", 1),
     "description": "The address parser keeps only the last word of the locality, so 'Great Ashford' becomes 'Ashford', the address resolves 14 km from the caller's AML fix and dispatch stops."},
    {"id": "zq_ecall_2", "input": 1, "fault_kind": "wrong_retrieval", "root": ("AddressIndex", 1), "root_kind": "retrieval",
     "failure": ("dispatch", 1),
     "description": "The address index ranks 3 Quarry Court above 3 Quarry Close for the caller's words, so the resolved point is 4 km from the AML fix."},
    {"id": "zq_ecall_3", "input": 2, "fault_kind": "tool_ignores_argument", "root": ("nearest_stations", 1), "root_kind": "tool",
     "failure": ("dispatch", 1),
     "description": "nearest_stations ignores its service argument and ranks every station, so Lowmoor Ambulance, the nearest to Canal Wharf, is selected as a fire pump."},
    {"id": "zq_ecall_4", "input": 4, "fault_kind": "stale_data", "root": ("station_status", 1), "root_kind": "tool",
     "failure": ("dispatch", 1),
     "description": "The station status tool answers the 07:00 snapshot, where Lowmoor is available, so Lowmoor's pump (committed since) is selected and dispatch refuses it."},
    {"id": "zq_ecall_5", "input": 3, "fault_kind": "off_by_one", "root": ("select_units", 1), "root_kind": "other",
     "failure": ("dispatch", 1),
     "description": "The unit selection skips the first available station in the ranked list (it starts at index 1), so Kings Hatch, the nearest available station to The Old Forge, is left out and dispatch refuses the plan."},
]


class CallState(TypedDict, total=False):
    transcript: str
    call_id: str
    aml: list
    parsed: dict
    location: dict
    messages: Annotated[list[AnyMessage], add_messages]
    units: list
    outcome: dict


class AddressParser(BaseOutputParser):
    def parse(self, text: str) -> dict:
        data = json.loads(text)
        locality = data["locality"]
        if SWITCH == "zq_ecall_1":
            locality = locality.split()[-1]  # postal towns are one word
        return {"premises": data["premises"], "locality": locality, "incident": data["incident"]}


class AddressIndex(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager=None):
        words = set(re.findall(r"[a-z0-9]+", query.lower()))
        def score(ia):
            i, a = ia
            aw = re.findall(r"[a-z0-9]+", a["address"].lower())
            if SWITCH == "zq_ecall_2":  # street types folded away, newest entry first on a tie
                aw = [w for w in aw if w not in ("close", "court", "road", "lane", "street")]
                return (sum(w in words for w in aw) / len(aw), i)
            return (sum(w in words for w in aw) / len(aw), -i)
        ranked = [a for _, a in sorted(enumerate(ADDRESSES), key=score, reverse=True)[:3]]
        return [Document(page_content=a["address"], metadata={"x": a["x"], "y": a["y"]}) for a in ranked]


@tool
def nearest_stations(x: float, y: float, service: str) -> list:
    """Stations of a service (fire, ambulance) nearest to a point, nearest first, with drive minutes."""
    rows = [s for s in STATIONS if s["service"] == service or SWITCH == "zq_ecall_3"]
    return [{"station": s["station"], "service": s["service"], "minutes": round(2 + 1.6 * math.hypot(s["x"] - x, s["y"] - y), 1)}
            for s in sorted(rows, key=lambda s: math.hypot(s["x"] - x, s["y"] - y))[:4]]


@tool
def station_status(stations: list[str]) -> dict:
    """Availability of each station's first pump."""
    table = STATUS_0700 if SWITCH == "zq_ecall_4" else STATUS_NOW
    return {s: table.get(s, "available") for s in stations}


def brain(request):
    sys_ = system_text(request)
    if "address" in sys_:
        user = last_user(request)
        m = re.search(r"(?:at |outside |of |it's )((?:\d+ |Unit \d+ |The )[A-Z][a-z]+ [A-Z][a-z]+),? (?:in )?([A-Z][a-z]+(?: [A-Z][a-z]+)?)", user)
        incident = next(w for w in ("kitchen", "shed", "chimney", "car", "smoke") if w in user)
        return json.dumps({"premises": m.group(1), "locality": m.group(2), "incident": incident})
    results = tool_results(request)
    if not results:
        loc = json.loads(last_user(request))
        return Reply(tool_calls=(tool_call("nearest_stations", {"x": loc["x"], "y": loc["y"], "service": "fire"}),))
    names = [n for n, _ in results]
    if "station_status" not in names:
        return Reply(tool_calls=(tool_call("station_status", {"stations": [r["station"] for r in results[0][1]]}),))
    return "Stations ranked and status checked; ready to select units."


def build(server):
    llm = ChatOpenAI(model=server.model, base_url=server.base_url, api_key="not-needed", max_retries=0)
    prompt = ChatPromptTemplate.from_messages([("system", "You read the caller's address as JSON: premises, locality, incident."),
                                               ("user", "{transcript}")])
    chain = prompt | llm | AddressParser()
    index = AddressIndex()
    planner = llm.bind_tools([nearest_stations, station_status])

    def take_call(state):
        return {"parsed": chain.invoke({"transcript": state["transcript"]})}

    def geocode(state):
        p = state["parsed"]
        docs = index.invoke(f"{p['premises']}, {p['locality']}")
        top = docs[0]
        return {"location": {"address": top.page_content, "x": top.metadata["x"], "y": top.metadata["y"]}}

    def plan(state):
        msgs = state.get("messages") or [SystemMessage("You find the nearest available fire stations with the tools."),
                                          HumanMessage(json.dumps(state["location"]))]
        reply = planner.invoke(msgs)
        return {"messages": ([reply] if state.get("messages") else msgs + [reply])}

    def route(state):
        return "tools" if state["messages"][-1].tool_calls else "select_units"

    def select_units(state):
        msgs = state["messages"]
        ranked = next(json.loads(m.content) for m in msgs if getattr(m, "name", None) == "nearest_stations")
        status = next(json.loads(m.content) for m in msgs if getattr(m, "name", None) == "station_status")
        avail = [r for r in ranked if status.get(r["station"]) == "available"]
        start = 1 if SWITCH == "zq_ecall_5" else 0
        return {"units": avail[start:start + 2]}

    def dispatch(state):
        loc, aml = state["location"], state["aml"]
        d = math.hypot(loc["x"] - aml[0], loc["y"] - aml[1])
        if d > 1.0:
            raise RuntimeError(f"dispatch stopped: {loc['address']} is {d:.1f} km from the caller's AML fix")
        for u in state["units"]:
            if u["service"] != "fire":
                raise RuntimeError(f"dispatch stopped: {u['station']} is not a fire station (service: {u['service']})")
            if STATUS_NOW.get(u["station"]) != "available":
                raise RuntimeError(f"dispatch stopped: {u['station']} pump is {STATUS_NOW.get(u['station'])} on the CAD board")
        best = sorted((math.hypot(s["x"] - loc["x"], s["y"] - loc["y"]), s["station"]) for s in STATIONS
                      if s["service"] == "fire" and STATUS_NOW[s["station"]] == "available")[0][1]
        if best not in [u["station"] for u in state["units"]]:
            raise RuntimeError(f"dispatch stopped: nearest available pump {best} not in the attendance")
        return {"outcome": {"call": state["call_id"], "address": loc["address"], "pumps": [u["station"] for u in state["units"]]}}

    g = StateGraph(CallState)
    for n, f in (("take_call", take_call), ("geocode", geocode), ("plan", plan), ("select_units", select_units), ("dispatch", dispatch)):
        g.add_node(n, f)
    g.add_node("tools", ToolNode([nearest_stations, station_status]))
    g.add_edge(START, "take_call")
    g.add_edge("take_call", "geocode")
    g.add_edge("geocode", "plan")
    g.add_conditional_edges("plan", route, ["tools", "select_units"])
    g.add_edge("tools", "plan")
    g.add_edge("select_units", "dispatch")
    g.add_edge("dispatch", END)
    return g.compile()


def record(inp, server, path):
    graph = build(server)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=inp["task"])
    graph.invoke({"transcript": inp["transcript"], "call_id": inp["call_id"], "aml": list(inp["aml"])}, config={"callbacks": [tracer]})
