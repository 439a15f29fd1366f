"""Airship sightseeing operator: books a party onto a flight (LangGraph route, tool-calling loop).

Shape: a ReAct-style graph: ChatOpenAI with bound tools <-> ToolNode (the first turn asks for three
tools in parallel), then a manifest node that parses the model's JSON answer and seats the party, then a
dispatch node whose confirm_booking tool re-checks lift, seats and head count and raises.
"""

from __future__ import annotations

import ast
import json
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call


NAME = "airship-flight-booker"
ROUTE = "langgraph"
DOMAIN = "airship sightseeing operator"
SHAPE = "LangGraph tool loop: model <-> ToolNode (3 parallel calls, then 1), manifest parser node, dispatch tool (~14-16 steps)"

SW = dict.fromkeys(
    ("morning_temp", "quiet_hold_timeout", "yesterday_forecast", "lift_in_lb", "seat_from_one"), False
)

FLIGHTS = {
    "LK-SUN": {
        "route": "Lakes sunset",
        "seats": ["1A", "1B", "2A", "2B", "3A", "3B", "4A", "4B"],
        "held": ["1A", "2B"],
        "envelope_kg": 520,
    },
    "CO-MOR": {
        "route": "Coast morning",
        "seats": ["1A", "1B", "2A", "2B", "3A", "3B"],
        "held": ["3A"],
        "envelope_kg": 430,
    },
    "CA-NOO": {
        "route": "Castles noon",
        "seats": ["1A", "1B", "2A", "2B", "3A", "3B", "4A", "4B"],
        "held": [],
        "envelope_kg": 480,
    },
}
FORECAST = {
    ("LK-SUN", "2027-07-03"): {"morning_c": 14, "departure_c": 27, "wind_kt": 9},
    ("CO-MOR", "2027-07-10"): {"morning_c": 12, "departure_c": 15, "wind_kt": 11},
    ("CA-NOO", "2027-08-01"): {"morning_c": 17, "departure_c": 29, "wind_kt": 7},
    ("LK-SUN", "2027-08-14"): {"morning_c": 13, "departure_c": 24, "wind_kt": 12},
    ("CA-NOO", "2027-07-22"): {"morning_c": 15, "departure_c": 25, "wind_kt": 6},
}
YESTERDAY = {k: {**v, "departure_c": v["departure_c"] - 10} for k, v in FORECAST.items()}

INPUTS = [
    {"flight": "LK-SUN", "date": "2027-07-03", "party": [82, 67, 95, 71]},
    {"flight": "CO-MOR", "date": "2027-07-10", "party": [96, 88, 102, 91]},
    {"flight": "CA-NOO", "date": "2027-08-01", "party": [88, 79, 64, 70]},
    {"flight": "LK-SUN", "date": "2027-08-14", "party": [90, 85, 77]},
    {"flight": "CA-NOO", "date": "2027-07-22", "party": [55, 60, 72, 48]},
]


def lift_kg(envelope_kg: float, temp_c: float) -> float:
    return round(envelope_kg * (1 - (temp_c - 15) * 0.025) - 80, 1)


@tool
def weather_forecast(flight: str, date: str) -> dict:
    """Forecast at the mast for the flight's date: morning and departure temperature, wind."""
    src = YESTERDAY if SW["yesterday_forecast"] else FORECAST
    return {"flight": flight, "date": date, **src[(flight, date)]}


@tool
def seat_availability(flight: str, date: str) -> dict:
    """Free seats on the gondola plan, after seats held by other bookings."""
    plan = FLIGHTS[flight]
    try:
        if SW["quiet_hold_timeout"]:
            raise TimeoutError("reservations service timed out")
        held = list(plan["held"])
    except TimeoutError:
        held = []
    return {"flight": flight, "free": [s for s in plan["seats"] if s not in held]}


@tool
def crew_roster(flight: str, date: str) -> dict:
    """Pilot and crew weights rostered for the flight."""
    return {"flight": flight, "pilot": "R. Okoye", "crew_kg": 160}


@tool
def lift_budget(flight: str, temp_c: float) -> dict:
    """Payload the envelope can lift at an air temperature, after crew and ballast reserve."""
    kg = lift_kg(FLIGHTS[flight]["envelope_kg"], temp_c)
    if SW["lift_in_lb"]:
        return {"flight": flight, "payload": round(kg * 2.20462, 1)}
    return {"flight": flight, "payload": kg}


@tool
def confirm_booking(flight: str, date: str, seats: list, weights: list, party_size: int) -> str:
    """Dispatch re-checks the booking against the current forecast and the gondola plan, then confirms it."""
    plan = FLIGHTS[flight]
    if len(seats) != party_size or len(weights) != party_size:
        raise ValueError(f"manifest for {flight} {date} lists {len(seats)} seats for a party of {party_size}")
    taken = [s for s in seats if s in plan["held"]]
    if taken:
        raise ValueError(f"seat {taken[0]} on {flight} {date} is already held by another booking")
    payload = lift_kg(plan["envelope_kg"], FORECAST[(flight, date)]["departure_c"])
    if sum(weights) > payload:
        raise ValueError(
            f"party of {sum(weights)} kg exceeds the {payload} kg lift at {FORECAST[(flight, date)]['departure_c']} C"
        )
    return f"booked {flight} {date}: seats {', '.join(seats)}"


TOOLS = [weather_forecast, seat_availability, crew_roster, lift_budget]


def _results(request) -> dict:
    names, out = {}, {}
    for m in request.body["messages"]:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            try:
                out[names.get(m["tool_call_id"])] = json.loads(m["content"])
            except ValueError:
                out[names.get(m["tool_call_id"])] = ast.literal_eval(m["content"])
    return out


def policy(request):
    req = json.loads(
        next(m["content"] for m in request.body["messages"] if m["role"] == "user").split("\n", 1)[1]
    )
    res = _results(request)
    f, d = req["flight"], req["date"]
    if "weather_forecast" not in res:
        return Reply(
            tool_calls=(
                tool_call("weather_forecast", {"flight": f, "date": d}),
                tool_call("seat_availability", {"flight": f, "date": d}),
                tool_call("crew_roster", {"flight": f, "date": d}),
            )
        )
    w = res["weather_forecast"]
    if "lift_budget" not in res:
        temp = w["morning_c"] if SW["morning_temp"] else w["departure_c"]
        return Reply(tool_calls=(tool_call("lift_budget", {"flight": f, "temp_c": temp}),))
    payload = res["lift_budget"]["payload"]
    total = sum(req["party"])
    if total > payload or w["wind_kt"] > 15:
        return json.dumps(
            {"flight": f, "date": d, "bookable": False, "reason": f"party {total} kg over {payload} kg lift"}
        )
    return json.dumps(
        {
            "flight": f,
            "date": d,
            "bookable": True,
            "payload_kg": payload,
            "free_seats": res["seat_availability"]["free"],
            "party_kg": req["party"],
        }
    )


class Booking(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    manifest: dict
    confirmation: str


def build(llm):
    model = llm.bind_tools(TOOLS)

    def planner(state: Booking) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    def next_step(state: Booking) -> str:
        return "tools" if state["messages"][-1].tool_calls else "build_manifest"

    def build_manifest(state: Booking) -> dict:
        answer = json.loads(state["messages"][-1].content)
        if not answer["bookable"]:
            return {
                "manifest": {
                    "flight": answer["flight"],
                    "date": answer["date"],
                    "seats": [],
                    "weights": [],
                    "bookable": False,
                }
            }
        weights = answer["party_kg"]
        free = answer["free_seats"]
        first = 1 if SW["seat_from_one"] else 0
        seats = [free[i] for i in range(first, len(weights))]
        return {
            "manifest": {
                "flight": answer["flight"],
                "date": answer["date"],
                "seats": seats,
                "weights": weights,
                "bookable": True,
            }
        }

    def dispatch(state: Booking) -> dict:
        m = state["manifest"]
        if not m["bookable"]:
            return {"confirmation": "not bookable"}
        return {
            "confirmation": confirm_booking.invoke(
                {
                    "flight": m["flight"],
                    "date": m["date"],
                    "seats": m["seats"],
                    "weights": m["weights"],
                    "party_size": len(m["weights"]),
                }
            )
        }

    g = StateGraph(Booking)
    g.add_node("planner", planner)
    g.add_node("tools", ToolNode(TOOLS, handle_tool_errors=False))
    g.add_node("build_manifest", build_manifest)
    g.add_node("dispatch", dispatch)
    g.add_edge(START, "planner")
    g.add_conditional_edges("planner", next_step, ["tools", "build_manifest"])
    g.add_edge("tools", "planner")
    g.add_edge("build_manifest", "dispatch")
    g.add_edge("dispatch", END)
    return g.compile()


_graphs: dict = {}


def record(inp: dict, server, dest: str) -> None:
    if server.base_url not in _graphs:
        llm = ChatOpenAI(
            base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0, temperature=0
        )
        _graphs[server.base_url] = build(llm)
    task = f"book {len(inp['party'])} on {inp['flight']} {inp['date']}"
    tracer = TrajdebugTracer(path=dest, name=NAME, task=task)
    try:
        _graphs[server.base_url].invoke(
            {
                "messages": [
                    (
                        "system",
                        "You book airship sightseeing flights. Check weather, seats and lift before answering in JSON.",
                    ),
                    ("user", "BOOKING\n" + json.dumps(inp)),
                ]
            },
            config={"callbacks": [tracer]},
        )
    except Exception:  # noqa: BLE001  (the recorded run keeps the failure; the generator checks it)
        pass


CASES = [
    {
        "id": "air_morning_temp",
        "input": 0,
        "switch": "morning_temp",
        "fault_kind": "wrong_tool_args",
        "root": ("ChatOpenAI", 2, "llm"),
        "failure": ("confirm_booking", 1),
        "description": "The model asks for the lift budget at the 14 C morning temperature instead of the 27 C departure temperature.",
    },
    {
        "id": "air_hold_timeout",
        "input": 3,
        "switch": "quiet_hold_timeout",
        "fault_kind": "swallowed_error",
        "root": ("seat_availability", 1, "tool"),
        "failure": ("confirm_booking", 1),
        "description": "The seat look-up treats a reservations timeout as no seats held and offers seat 1A, which another booking holds.",
    },
    {
        "id": "air_yesterday",
        "input": 2,
        "switch": "yesterday_forecast",
        "fault_kind": "stale_data",
        "root": ("weather_forecast", 1, "tool"),
        "failure": ("confirm_booking", 1),
        "description": "The forecast tool serves the previous day's forecast, 10 C cooler at departure, so the lift looks larger than it is.",
    },
    {
        "id": "air_lift_lb",
        "input": 1,
        "switch": "lift_in_lb",
        "fault_kind": "unit_error",
        "root": ("lift_budget", 1, "tool"),
        "failure": ("confirm_booking", 1),
        "description": "The lift budget is returned in pounds while everything else reads it as kilograms.",
    },
    {
        "id": "air_seat_from_one",
        "input": 4,
        "switch": "seat_from_one",
        "fault_kind": "off_by_one",
        "root": ("build_manifest", 1, "other"),
        "failure": ("confirm_booking", 1),
        "description": "Seating starts from the second passenger, so the manifest has three seats for a party of four.",
    },
]
