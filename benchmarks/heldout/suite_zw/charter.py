"""Bus charter hire: a LangGraph quoting and booking agent (ChatOpenAI + ToolNode), traced."""

from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode
from trajdebug.integrations.langchain import TrajdebugTracer
from trajdebug.testing import Reply, tool_call

from .common import Case, last_user_json, system_text, tool_results
from .kit import active

NAME = "coach-charter-desk"
ROUTE = "langgraph"
DOMAIN = "bus charter hire"
EXT = "jsonl"
SHAPE = ("intake LLM | JSON parser -> planner LLM <-> ToolNode loop (distance, fleet, drivers, tolls) -> "
         "compliance node -> price node -> submit_booking node (booking API)")

INPUTS = {
    "leeds_york": {"origin": "Leeds", "destination": "York Minster", "date": "2026-06-14",
                   "return_date": "2026-06-14", "party": 48, "hire": "return"},
    "bath_oxford": {"origin": "Bath", "destination": "Oxford", "date": "2026-07-03",
                    "return_date": "2026-07-05", "party": 30, "hire": "return"},
    "derby_alton": {"origin": "Derby", "destination": "Alton Towers", "date": "2026-05-20",
                    "return_date": "2026-05-20", "party": 52, "hire": "return"},
    "hull_whitby": {"origin": "Hull", "destination": "Whitby", "date": "2026-08-09",
                    "return_date": "2026-08-09", "party": 24, "hire": "return"},
    "exeter_eden": {"origin": "Exeter", "destination": "Eden Project", "date": "2026-09-12",
                    "return_date": "2026-09-13", "party": 40, "hire": "return"},
    "crewe_chester": {"origin": "Crewe", "destination": "Chester Zoo", "date": "2026-04-18",
                      "return_date": "2026-04-18", "party": 16, "hire": "return"},
}
REFS = ["derby_alton", "hull_whitby", "exeter_eden", "crewe_chester"]
LEGS = {
    ("Leeds", "York Minster"): [("Leeds", "Tadcaster", 24.0), ("Tadcaster", "A64 junction", 9.5),
                                ("A64 junction", "York Minster", 7.1)],
    ("Bath", "Oxford"): [("Bath", "Swindon", 54.0), ("Swindon", "Faringdon", 21.0), ("Faringdon", "Oxford", 29.5)],
    ("Derby", "Alton Towers"): [("Derby", "Uttoxeter", 31.0), ("Uttoxeter", "Alton Towers", 12.5)],
    ("Hull", "Whitby"): [("Hull", "Driffield", 35.0), ("Driffield", "Scarborough", 46.0),
                         ("Scarborough", "Whitby", 32.0)],
    ("Exeter", "Eden Project"): [("Exeter", "Okehampton", 37.0), ("Okehampton", "Bodmin", 60.0),
                                 ("Bodmin", "Eden Project", 14.0)],
    ("Crewe", "Chester Zoo"): [("Crewe", "Tarporley", 22.0), ("Tarporley", "Chester Zoo", 21.0)],
}
FLEET = [{"vehicle": "C-33-02", "seats": 33}, {"vehicle": "C-49-11", "seats": 49}, {"vehicle": "C-53-07", "seats": 53},
         {"vehicle": "M-16-04", "seats": 16}, {"vehicle": "C-70-01", "seats": 70}]
BOOKED = {("C-53-07", "2026-06-14"), ("C-49-11", "2026-06-13")}
RATE_PER_KM = 2.40
TOLL = {"Leeds": 0.0, "Bath": 0.0, "Derby": 0.0, "Hull": 6.5, "Exeter": 0.0, "Crewe": 0.0}

CASES = [
    Case("zw_charter_date", "wrong_tool_args", "leeds_york", "ChatOpenAI", 3, "llm", "submit_booking", 1,
         "The planning model asks the fleet tool for the day before the hire date, so the coach it picks is "
         "already out on the hire date."),
    Case("zw_charter_seats", "tool_ignores_argument", "leeds_york", "fleet_availability", 1, "tool",
         "submit_booking", 1,
         "The fleet tool ignores the seats argument and offers the smallest free vehicle, a 16-seat minibus, for a party of 48."),
    Case("zw_charter_legs", "truncated_result", "bath_oxford", "route_distance", 1, "tool", "submit_booking", 1,
         "The routing tool returns only the first two legs of the route, so the quoted distance and price are short."),
    Case("zw_charter_miles", "unit_error", "bath_oxford", "price_quote", 1, "other", "submit_booking", 1,
         "The pricing node converts a distance already in kilometres as if it were miles, inflating the quote."),
    Case("zw_charter_oneway", "plan_error", "leeds_york", "ChatOpenAI", 1, "llm", "submit_booking", 1,
         "The intake model plans the hire as a single outbound leg although the customer asked for a return."),
]


class BookingRejected(RuntimeError):
    pass


def _policy(req):
    body = req.body or {}
    sys_text = system_text(body)
    if "extract" in sys_text:
        data = last_user_json(body)
        legs = [{"from": data["origin"], "to": data["destination"], "date": data["date"]}]
        if not active("zw_charter_oneway"):
            legs.append({"from": data["destination"], "to": data["origin"], "date": data["return_date"]})
        return json.dumps({"hire": data["hire"], "party": data["party"], "legs": legs})
    data = json.loads(sys_text.split("ITINERARY:", 1)[1])
    done = tool_results(body)
    first = data["legs"][0]
    if len(done) == 0:
        return Reply(tool_calls=(tool_call("route_distance", {"origin": first["from"], "destination": first["to"]}),))
    if len(done) == 1:
        day = first["date"]
        if active("zw_charter_date"):
            y, m, d = day.split("-")
            day = f"{y}-{m}-{int(d) - 1:02d}"
        return Reply(tool_calls=(tool_call("fleet_availability", {"date": day, "seats": data["party"]}),))
    if len(done) == 2:
        return Reply(tool_calls=(tool_call("driver_roster", {"date": first["date"]}),))
    if len(done) == 3:
        return Reply(tool_calls=(tool_call("toll_lookup", {"origin": first["from"]}),))
    return json.dumps({"ready": True, "vehicle": done[1]["vehicle"], "distance_km": done[0]["total_km"],
                       "driver": done[2]["driver"], "tolls_gbp": done[3]["tolls_gbp"]})


@tool
def route_distance(origin: str, destination: str) -> str:
    """Road legs and total distance in kilometres between two places."""
    legs = LEGS[(origin, destination)]
    if active("zw_charter_legs"):
        legs = legs[:2]
    return json.dumps({"legs": [{"from": a, "to": b, "km": k} for a, b, k in legs],
                       "total_km": round(sum(k for _, _, k in legs), 1)})


@tool
def fleet_availability(date: str, seats: int) -> str:
    """The first free coach on a date with at least the given number of seats."""
    free = [v for v in FLEET if (v["vehicle"], date) not in BOOKED]
    if not active("zw_charter_seats"):
        free = [v for v in free if v["seats"] >= seats]
    best = min(free, key=lambda v: v["seats"]) if free else None
    return json.dumps({"date": date, **(best or {"vehicle": None, "seats": 0})})


@tool
def driver_roster(date: str) -> str:
    """A driver with enough remaining duty hours on a date."""
    return json.dumps({"date": date, "driver": "D-" + date[-2:] + "7", "duty_hours_left": 10})


@tool
def toll_lookup(origin: str) -> str:
    """Road tolls in GBP for a trip starting at a place."""
    return json.dumps({"origin": origin, "tolls_gbp": TOLL[origin]})


def booking_api(booking: dict) -> str:
    """The operator's booking API (validates and confirms a charter)."""
    req = booking["request"]
    if booking["seats"] < req["party"]:
        raise BookingRejected(f"HTTP 422 {{\"error\": \"vehicle {booking['vehicle']} has {booking['seats']} seats, "
                              f"party size is {req['party']}\"}}")
    if (booking["vehicle"], req["date"]) in BOOKED:
        raise BookingRejected(f"HTTP 409 {{\"error\": \"vehicle {booking['vehicle']} is already booked on "
                              f"{req['date']}\"}}")
    if req["hire"] == "return" and len(booking["legs"]) < 2:
        raise BookingRejected("HTTP 422 {\"error\": \"hire type 'return' requires an inbound leg; itinerary has "
                              f"{len(booking['legs'])} leg\"}}")
    km = sum(k for _, _, k in LEGS[(req["origin"], req["destination"])]) * 2
    expected = round(km * RATE_PER_KM, 2)
    if abs(booking["mileage_charge_gbp"] - expected) > 1.0:
        raise BookingRejected(f"HTTP 422 {{\"error\": \"mileage charge {booking['mileage_charge_gbp']:.2f} GBP does "
                              f"not match the rate card: {km:.1f} km at {RATE_PER_KM:.2f} GBP/km is {expected:.2f} GBP\"}}")
    return json.dumps({"status": "confirmed", "reference": f"CH-{req['date'].replace('-', '')}-{booking['vehicle']}"})


class State(TypedDict, total=False):
    request: dict
    itinerary: dict
    messages: Annotated[list[AnyMessage], add_messages]
    resources: dict
    compliance: dict
    quote: dict
    booking: dict
    log: Annotated[list, operator.add]


def build(server):
    llm = ChatOpenAI(model="charter-model", base_url=server.base_url, api_key="test", max_retries=0, temperature=0)
    tools = [route_distance, fleet_availability, driver_roster, toll_lookup]
    planner_llm = llm.bind_tools(tools)

    def intake(state: State) -> dict:
        chain = llm | JsonOutputParser()
        itin = chain.invoke([SystemMessage("You extract a charter itinerary as JSON."),
                             HumanMessage(json.dumps(state["request"]))])
        return {"itinerary": itin, "log": ["intake"]}

    def planner(state: State) -> dict:
        msgs = state.get("messages") or [HumanMessage("Gather distance, a coach, a driver and tolls.")]
        sys = SystemMessage("You plan coach resources. ITINERARY:" + json.dumps(state["itinerary"]))
        reply = planner_llm.invoke([sys, *msgs])
        new = [reply] if state.get("messages") else [msgs[0], reply]
        return {"messages": new}

    def route_after_planner(state: State) -> str:
        return "tools" if state["messages"][-1].tool_calls else "collect"

    def collect(state: State) -> dict:
        return {"resources": json.loads(state["messages"][-1].content), "log": ["collect"]}

    def compliance(state: State) -> dict:
        res = state["resources"]
        hours = res["distance_km"] * 2 / 60.0
        return {"compliance": {"drive_hours": round(hours, 2), "within_limit": hours <= 9.0}, "log": ["compliance"]}

    def price_quote(state: State) -> dict:
        km = state["resources"]["distance_km"] * 2
        if active("zw_charter_miles"):
            km = km * 1.609
        return {"quote": {"distance_km": round(km, 1), "mileage_charge_gbp": round(km * RATE_PER_KM, 2),
                          "tolls_gbp": state["resources"]["tolls_gbp"]}, "log": ["price"]}

    def submit_booking(state: State) -> dict:
        res = state["resources"]
        seats = next(v["seats"] for v in FLEET if v["vehicle"] == res["vehicle"])
        payload = {"request": state["request"], "vehicle": res["vehicle"], "seats": seats,
                   "legs": state["itinerary"]["legs"], "driver": res["driver"], **state["quote"]}
        return {"booking": json.loads(booking_api(payload)), "log": ["book"]}

    g = StateGraph(State)
    g.add_node("intake", intake)
    g.add_node("planner", planner)
    g.add_node("tools", ToolNode(tools))
    g.add_node("collect", collect)
    g.add_node("compliance", compliance)
    g.add_node("price_quote", price_quote)
    g.add_node("submit_booking", submit_booking)
    g.add_edge(START, "intake")
    g.add_edge("intake", "planner")
    g.add_conditional_edges("planner", route_after_planner, ["tools", "collect"])
    g.add_edge("tools", "planner")
    g.add_edge("collect", "compliance")
    g.add_edge("compliance", "price_quote")
    g.add_edge("price_quote", "submit_booking")
    g.add_edge("submit_booking", END)
    return g.compile()


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    graph = build(server)
    req = INPUTS[inp_id]
    tracer = TrajdebugTracer(path=path, name=NAME, task=f"charter {req['origin']} to {req['destination']}")
    try:
        graph.invoke({"request": req, "log": []}, config={"callbacks": [tracer], "recursion_limit": 40})
    except BookingRejected:
        pass
