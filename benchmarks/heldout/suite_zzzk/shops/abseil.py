"""Abseiling instructor service (langgraph route): a StateGraph with a model that reads the request,
a code parser, a track decision with a conditional edge, a tool-calling planner loop (ToolNode,
parallel tool calls), a safety review node, a confirmation model call and a booking tool."""

from __future__ import annotations

import json
import re
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

NAME = "abseil-booking-desk"
ROUTE = "langgraph"
DOMAIN = "an abseiling instructor service"
SHAPE = "StateGraph: model intake -> code parser -> track node + conditional edge -> planner model <-> ToolNode loop (parallel calls) -> safety review -> confirmation model -> booking tool"
SWITCH = None

CRAGS = {
    "Stanage Edge": {"height_m": 18, "terrain": "gritstone edge", "outdoor": True, "cert": "SPA"},
    "Gogarth Main Cliff": {"height_m": 45, "terrain": "sea cliff", "outdoor": True, "cert": "RCI-sea"},
    "Dinas Rock": {"height_m": 30, "terrain": "limestone crag", "outdoor": True, "cert": "SPA"},
    "Portland West": {"height_m": 25, "terrain": "sea cliff", "outdoor": True, "cert": "RCI-sea"},
    "Awesome Walls Liverpool": {"height_m": 20, "terrain": "indoor wall", "outdoor": False, "cert": "CWI"},
}
INSTRUCTORS = [
    {"name": "Rhys Pritchard", "certs": ["SPA", "CWI"]},
    {"name": "Ffion Hughes", "certs": ["SPA"]},
    {"name": "Tom Ashby", "certs": ["CWI", "SPA"]},
    {"name": "Megan Lloyd", "certs": ["RCI-sea", "SPA"]},
    {"name": "Owain Beddoe", "certs": ["RCI-sea", "CWI"]},
]
ROPES = [{"rope_id": "R-40", "length_m": 40}, {"rope_id": "R-50", "length_m": 50}, {"rope_id": "R-60", "length_m": 60},
         {"rope_id": "R-70", "length_m": 70}, {"rope_id": "R-100", "length_m": 100}]

INPUTS = [
    {"text": "Hi, we'd like an abseil taster at Stanage Edge on 2027-03-13 for 3 adults + 2 children.",
     "participants": ["Amy Cole", "Ben Cole", "Kit Cole", "Jo Reid", "Sam Reid"]},
    {"text": "Sea-cliff abseil at Gogarth Main Cliff, 2027-04-02, group of 4 adults.",
     "participants": ["Dai Evans", "Nia Evans", "Huw Price", "Cerys Price"]},
    {"text": "Team day at Dinas Rock on 2027-05-08: 5 adults + 1 child.",
     "participants": ["Lena Ortiz", "Raj Patel", "Ola Nowak", "Tim Shaw", "Zoe Shaw", "Max Shaw"]},
    {"text": "Portland West abseil, 2027-06-19, 2 adults + 2 children please.",
     "participants": ["Ruth Kemp", "Alan Kemp", "Ivy Kemp", "Noah Kemp"]},
    {"text": "Indoor intro at Awesome Walls Liverpool on 2027-02-20 for 6 adults.",
     "participants": ["Lee Moss", "Ann Moss", "Kay Ford", "Ian Ford", "Liz Hart", "Guy Hart"]},
]

CASES = [
    {"id": "zzzk-abseil-1", "input": 2, "switch": "rope_for_height", "kind": "wrong_tool_args",
     "root": ("ChatOpenAI", 3), "failure": ("safety_review", 1),
     "description": "The planner asks the rope store for a rope as long as the 30 m drop instead of twice the drop plus the anchor margin, and takes the 40 m rope it gets."},
    {"id": "zzzk-abseil-2", "input": 0, "switch": "forecast_today", "kind": "tool_ignores_argument",
     "root": ("weather_window", 1), "failure": ("booking_system", 1),
     "description": "The weather window tool disregards the date it is given and returns the forecast for the day it is asked, not 2027-03-13."},
    {"id": "zzzk-abseil-3", "input": 3, "switch": "adults_only_count", "kind": "lossy_parsing",
     "root": ("parse_request", 1), "failure": ("booking_system", 1),
     "description": "Parsing the request keeps only the '2 adults' part of '2 adults + 2 children', so the group is counted as 2."},
    {"id": "zzzk-abseil-4", "input": 1, "switch": "first_page_only", "kind": "truncated_result",
     "root": ("instructor_roster", 1), "failure": ("safety_review", 1),
     "description": "The instructor roster returns only its first page of three names, none holding the sea-cliff certificate, and the planner picks from those."},
    {"id": "zzzk-abseil-5", "input": 1, "switch": "cliff_to_indoor", "kind": "wrong_routing",
     "root": ("choose_track", 1), "failure": ("booking_system", 1),
     "description": "The track decision sends the Gogarth sea-cliff request down the indoor wall track, so an indoor wall slot is put forward for a crag session."},
]


class Booking(TypedDict, total=False):
    request: str
    participants: list
    extracted: str
    booking: dict
    track: str
    messages: Annotated[list, add_messages]
    plan: dict
    review: dict
    confirmation: str
    receipt: dict


@tool
def crag_conditions(crag: str) -> dict:
    """Height, terrain and the certificate an instructor needs at a crag."""
    return {"crag": crag, **CRAGS[crag]}


@tool
def weather_window(crag: str, date: str) -> dict:
    """The forecast window for a crag on a date."""
    day = date
    if SWITCH == "forecast_today":
        day = "2027-03-06"
    return {"crag": crag, "forecast_date": day, "wind_kmh": 18, "rain_mm": 0.4, "window": "09:00-15:00"}


@tool
def instructor_roster(cert: str) -> dict:
    """Instructors free this season, listed by seniority."""
    names = INSTRUCTORS[:3] if SWITCH == "first_page_only" else INSTRUCTORS
    return {"requested_cert": cert, "instructors": names}


@tool
def rope_inventory(min_length_m: int) -> dict:
    """The shortest rope in the store that is at least min_length_m long."""
    for rope in ROPES:
        if rope["length_m"] >= min_length_m:
            return rope
    return ROPES[-1]


@tool
def wall_slots(date: str) -> dict:
    """Free sessions at the partner indoor wall."""
    return {"venue": "Awesome Walls Liverpool", "date": date, "slots": ["10:00", "13:30"], "instructor": "Tom Ashby"}


@tool
def booking_system(booking: dict) -> dict:
    """Books the session: checks venue, headcount, insurance forecast."""
    if booking["venue"] != booking["crag"]:
        raise ValueError(f"session requested at {booking['crag']}, slot offered is at {booking['venue']}")
    if booking["headcount"] != len(booking["participants"]):
        raise ValueError(f"{len(booking['participants'])} named participants, headcount {booking['headcount']}")
    if booking.get("forecast_date") not in (None, booking["date"]):
        raise ValueError(f"insurer needs the forecast for {booking['date']}, have {booking['forecast_date']}")
    return {"booked": True, "ref": f"AB-{abs(hash(booking['crag'] + booking['date'])) % 9000 + 1000}"}


def _tool_results(messages):
    out = {}
    for m in messages:
        if m.get("role") == "tool":
            data = json.loads(m["content"])
            out[m.get("tool_call_id")] = data
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] == "system" else ""
    if system.startswith("Extract"):
        text = msgs[-1]["content"]
        crag = next(c for c in CRAGS if c in text)
        date = re.search(r"\d{4}-\d\d-\d\d", text).group(0)
        group = re.search(r"(\d+ adults?(?: \+ \d+ child(?:ren)?)?)", text).group(1)
        return json.dumps({"crag": crag, "date": date, "group": group})
    if system.startswith("Confirm"):
        plan = json.loads(msgs[-1]["content"])
        return f"Booked: {plan['crag']} on {plan['date']} with {plan['instructor']}, rope {plan['rope_id']}."
    # planner
    ask = json.loads(msgs[1]["content"])
    results = {}
    for m in msgs:
        if m.get("role") == "tool":
            results.update({k: json.loads(m["content"]) for k in [m["tool_call_id"]]})
    calls = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = tc["function"]["name"]
    by_name = {calls[k]: v for k, v in results.items() if k in calls}
    if "crag_conditions" not in by_name:
        return Reply(tool_calls=(tool_call("crag_conditions", {"crag": ask["crag"]}),
                                 tool_call("weather_window", {"crag": ask["crag"], "date": ask["date"]})))
    crag = by_name["crag_conditions"]
    if "instructor_roster" not in by_name:
        need = crag["height_m"] if SWITCH == "rope_for_height" else 2 * crag["height_m"] + 5
        return Reply(tool_calls=(tool_call("instructor_roster", {"cert": crag["cert"]}),
                                 tool_call("rope_inventory", {"min_length_m": need})))
    roster = by_name["instructor_roster"]["instructors"]
    qualified = [i for i in roster if crag["cert"] in i["certs"]]
    chosen = (qualified or roster)[0]
    rope = by_name["rope_inventory"]
    return json.dumps({"crag": ask["crag"], "date": ask["date"], "instructor": chosen["name"],
                       "instructor_certs": chosen["certs"], "rope_id": rope["rope_id"], "rope_m": rope["length_m"],
                       "height_m": crag["height_m"], "cert": crag["cert"],
                       "forecast_date": by_name["weather_window"]["forecast_date"]})


def follow_track(state):
    return state["track"]


def planner_next(state):
    return "tools" if state["messages"][-1].tool_calls else "review"


def build(llm):
    planner_llm = llm.bind_tools([crag_conditions, weather_window, instructor_roster, rope_inventory])

    def intake(state):
        reply = llm.invoke([SystemMessage("Extract crag, date (ISO) and group as JSON."), HumanMessage(state["request"])])
        return {"extracted": reply.content}

    def parse_request(state):
        data = json.loads(state["extracted"])
        parts = re.findall(r"(\d+) (?:adults?|child(?:ren)?)", data["group"])
        if SWITCH == "adults_only_count":
            parts = parts[:1]
        data["headcount"] = sum(int(p) for p in parts)
        return {"booking": data}

    def choose_track(state):
        crag = state["booking"]["crag"]
        indoor = "Walls" in crag or (SWITCH == "cliff_to_indoor" and "Gogarth" in crag)
        return {"track": "indoor" if indoor else "outdoor"}

    def planner(state):
        msgs = state.get("messages") or [SystemMessage("Plan the session with the tools; answer the plan as JSON."),
                                         HumanMessage(json.dumps({"crag": state["booking"]["crag"], "date": state["booking"]["date"]}))]
        reply = planner_llm.invoke(msgs)
        update = {"messages": ([*msgs, reply] if not state.get("messages") else [reply])}
        if not reply.tool_calls:
            update["plan"] = json.loads(reply.content)
        return update

    def indoor_plan(state):
        slots = wall_slots.invoke({"date": state["booking"]["date"]})
        return {"plan": {"crag": slots["venue"], "date": slots["date"], "instructor": slots["instructor"],
                         "instructor_certs": ["CWI", "SPA"], "rope_id": "wall-auto", "rope_m": 0, "height_m": 0,
                         "cert": "CWI", "forecast_date": None}}

    def safety_review(state):
        plan = state["plan"]
        if plan["cert"] not in plan["instructor_certs"]:
            raise ValueError(f"{plan['instructor']} holds {plan['instructor_certs']}, {plan['crag']} needs {plan['cert']}")
        if plan["rope_m"] and plan["rope_m"] < 2 * plan["height_m"] + 5:
            raise ValueError(f"rope {plan['rope_id']} ({plan['rope_m']} m) is short of twice the {plan['height_m']} m drop plus 5 m")
        return {"review": {"passed": True, "checked": ["cert", "rope"]}}

    def confirm(state):
        reply = llm.invoke([SystemMessage("Confirm the booking in one sentence."), HumanMessage(json.dumps(state["plan"]))])
        return {"confirmation": reply.content}

    def book(state):
        plan, booking = state["plan"], state["booking"]
        receipt = booking_system.invoke({"booking": {
            "crag": booking["crag"], "venue": plan["crag"], "date": booking["date"], "headcount": booking["headcount"],
            "participants": state["participants"], "forecast_date": plan["forecast_date"], "instructor": plan["instructor"]}})
        return {"receipt": receipt}

    g = StateGraph(Booking)
    g.add_node("intake", intake)
    g.add_node("parse_request", parse_request)
    g.add_node("choose_track", choose_track)
    g.add_node("planner", planner)
    g.add_node("tools", ToolNode([crag_conditions, weather_window, instructor_roster, rope_inventory]))
    g.add_node("indoor_plan", indoor_plan)
    g.add_node("safety_review", safety_review)
    g.add_node("confirm", confirm)
    g.add_node("book", book)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_request")
    g.add_edge("parse_request", "choose_track")
    g.add_conditional_edges("choose_track", follow_track, {"indoor": "indoor_plan", "outdoor": "planner"})
    g.add_conditional_edges("planner", planner_next, {"tools": "tools", "review": "safety_review"})
    g.add_edge("tools", "planner")
    g.add_edge("indoor_plan", "safety_review")
    g.add_edge("safety_review", "confirm")
    g.add_edge("confirm", "book")
    g.add_edge("book", END)
    return g.compile()


def record(inp, path, server):
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    tracer = TrajdebugTracer(path=path, name=NAME, task=inp["text"])
    try:
        build(llm).invoke({"request": inp["text"], "participants": inp["participants"]}, config={"callbacks": [tracer]})
    except ValueError:
        pass
