"""car-rental-booker: books rental cars for employees' business trips.  A LangGraph graph: a model reads the
employee's request, code parses it, a prebuilt ReAct agent (langgraph.prebuilt.create_react_agent) searches,
quotes and books a car with its tools, and a compliance node checks the booking against the approved trip
and the travel policy.  ChatOpenAI against a fake model server; LangChain tracer."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from datetime import date
from typing import Annotated, Any

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import create_react_agent
from langgraph_route import chat_model, record_graph
from suite_common import FAULT, Agent, Case, Loc, called_tools, messages_of, results_of, system_text, text_of
from typing_extensions import TypedDict

from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "car-rental-booker"
MODEL = "gpt-4o-2024-08-06"

FLEET = {  # daily rates in cents, as the rental API sends them
    "Denver": [("CMP-DEN-11", "compact", "Toyota Corolla", 4200), ("MID-DEN-04", "midsize", "Hyundai Sonata", 5600),
               ("SUV-DEN-07", "SUV", "Ford Explorer", 7900), ("SUV-DEN-09", "SUV", "Jeep Grand Cherokee", 8400)],
    "Seattle": [("CMP-SEA-06", "compact", "Nissan Sentra", 4400), ("MID-SEA-02", "midsize", "Toyota Camry", 6150),
                ("SUV-SEA-01", "SUV", "Subaru Outback", 8200)],
    "Austin": [("CMP-AUS-02", "compact", "Kia Forte", 3900), ("SUV-AUS-03", "SUV", "Toyota RAV4", 6800),
               ("SUV-AUS-05", "SUV", "Honda CR-V", 7400), ("MID-AUS-01", "midsize", "Mazda 6", 5200)],
    "Chicago": [("MID-CHI-08", "midsize", "Chevrolet Malibu", 5900), ("CMP-CHI-03", "compact", "Honda Civic", 4600)],
    "Boston": [("CMP-BOS-05", "compact", "Toyota Corolla", 4800), ("SUV-BOS-02", "SUV", "Ford Escape", 8800)],
    "Phoenix": [("SUV-PHX-04", "SUV", "Chevrolet Equinox", 6900), ("CMP-PHX-01", "compact", "Nissan Versa", 3700)],
}
RENTED = {"SUV-AUS-03"}  # rented out since the availability cache was filled
TRIPS = {  # approved trips in the travel system
    "E-2231": [{"city": "Denver", "arrive": "2025-07-14", "depart": "2025-07-18", "cap_per_day": 95},
               {"city": "Denver", "arrive": "2025-07-03", "depart": "2025-07-13", "cap_per_day": 95}],
    "E-3380": [{"city": "Seattle", "arrive": "2025-08-04", "depart": "2025-08-08", "cap_per_day": 80}],
    "E-4102": [{"city": "Austin", "arrive": "2025-09-15", "depart": "2025-09-19", "cap_per_day": 90}],
    "E-1507": [{"city": "Chicago", "arrive": "2025-06-02", "depart": "2025-06-05", "cap_per_day": 80}],
    "E-2876": [{"city": "Boston", "arrive": "2025-10-06", "depart": "2025-10-10", "cap_per_day": 75}],
    "E-3014": [{"city": "Denver", "arrive": "2025-11-17", "depart": "2025-11-20", "cap_per_day": 85}],
    "E-3655": [{"city": "Phoenix", "arrive": "2025-03-10", "depart": "2025-03-14", "cap_per_day": 95}],
    "E-4420": [{"city": "Seattle", "arrive": "2025-05-19", "depart": "2025-05-23", "cap_per_day": 70}],
}
MONTHS = {m: i for i, m in enumerate(["January", "February", "March", "April", "May", "June", "July", "August",
                                      "September", "October", "November", "December"], start=1)}
_QUOTES: dict[str, dict[str, Any]] = {}


class PolicyViolation(RuntimeError):
    pass


# -- tools --------------------------------------------------------------------------------------------


@tool
def search_cars(city: str, pickup_date: str, return_date: str, category: str) -> str:
    """Available rental cars in a city for the dates, in a vehicle class (compact, midsize, SUV), cheapest first."""
    cars = [c for c in FLEET[city] if FAULT.on("availability_cache") or c[0] not in RENTED]
    if not FAULT.on("class_filter_dropped"):
        cars = [c for c in cars if c[1] == category]
    cars.sort(key=lambda c: c[3])
    return json.dumps([{"car_id": i, "class": k, "model": m, "daily_rate_usd": r / 100} for i, k, m, r in cars])


@tool
def get_quote(car_id: str, pickup_date: str, return_date: str) -> str:
    """A priced quote for a car and dates."""
    car = next(c for cars in FLEET.values() for c in cars if c[0] == car_id)
    days = (date.fromisoformat(return_date) - date.fromisoformat(pickup_date)).days
    rate = car[3] if FAULT.on("rate_in_cents") else car[3] / 100
    quote = {"quote_id": f"Q-{car_id}-{pickup_date.replace('-', '')}", "car_id": car_id, "days": days,
             "daily_rate": rate, "total_usd": round(rate * days, 2), "pickup_date": pickup_date, "return_date": return_date}
    _QUOTES[quote["quote_id"]] = quote
    return json.dumps(quote)


@tool
def book_car(quote_id: str, car_id: str, employee_id: str) -> str:
    """Book a quoted car for an employee."""
    q = _QUOTES[quote_id]
    car = next(c for cars in FLEET.values() for c in cars if c[0] == car_id)
    status = "waitlisted" if car_id in RENTED else "confirmed"
    return json.dumps({"confirmation": f"RC-{abs(sum(map(ord, quote_id + employee_id))) % 90000 + 10000}",
                       "status": status, "car_id": car_id, "class": car[1], "employee_id": employee_id,
                       "pickup_date": q["pickup_date"], "return_date": q["return_date"], "total_usd": q["total_usd"]})


# -- the fake model ----------------------------------------------------------------------------------


def _date(day: str, month: str, year: str) -> str:
    return f"{year}-{MONTHS[month]:02d}-{int(day):02d}"


def brain(request: Any) -> Any:
    msgs = messages_of(request)
    system = system_text(msgs)
    user = [text_of(m) for m in msgs if m.get("role") == "user"][-1]
    if "rental request" in system:
        city = next(c for c in FLEET if c in user)
        m = re.search(r"from (\d{1,2}) (\w+) to (\d{1,2}) (\w+) (\d{4})", user)
        ret_day = m.group(3)
        if FAULT.on("return_day_transposed") and ret_day == "13":
            ret_day = "31"
        category = next(k for k in ("SUV", "compact", "midsize") if k.lower() in user.lower())
        return json.dumps({"city": city, "pickup_date": _date(m.group(1), m.group(2), m.group(5)),
                           "return_date": _date(ret_day, m.group(4), m.group(5)), "category": category,
                           "employee_id": re.search(r"E-\d{4}", user).group(0)})
    if "car rental booking agent" in system:
        req = json.loads(user.split("Request:", 1)[1])
        done = {n for n, _a, r in called_tools(msgs) if r is not None}
        if "search_cars" not in done:
            return Reply(tool_calls=(tool_call("search_cars", {k: req[k] for k in ("city", "pickup_date", "return_date", "category")}),))
        cars = results_of(msgs, "search_cars")[-1]
        if "get_quote" not in done:
            return Reply(tool_calls=(tool_call("get_quote", {"car_id": cars[0]["car_id"], "pickup_date": req["pickup_date"],
                                                             "return_date": req["return_date"]}),))
        quote = results_of(msgs, "get_quote")[-1]
        if "book_car" not in done:
            return Reply(tool_calls=(tool_call("book_car", {"quote_id": quote["quote_id"], "car_id": quote["car_id"],
                                                            "employee_id": req["employee_id"]}),))
        b = results_of(msgs, "book_car")[-1]
        return f"Booked {b['car_id']} ({b['class']}), {b['pickup_date']} to {b['return_date']}, USD {b['total_usd']:.2f}: {b['confirmation']}."
    return "How can I help with your rental?"


# -- the graph ------------------------------------------------------------------------------------------


class RentalState(TypedDict, total=False):
    request: str
    intake_raw: str
    booking_request: dict[str, Any]
    messages: Annotated[list[AnyMessage], add_messages]
    remaining_steps: int
    booking: dict[str, Any]


def build(base_url: str) -> Any:
    llm = chat_model(base_url, MODEL)
    agent = create_react_agent(llm, [search_cars, get_quote, book_car], name="booking_agent",
                               prompt="You are the car rental booking agent. Search, take the cheapest car in the "
                                      "requested class, quote it, book it, and confirm.")

    def intake(state: RentalState) -> dict[str, Any]:
        ai = llm.invoke([SystemMessage("Extract the rental request as JSON: city, pickup_date, return_date (ISO), "
                                       "category (compact, midsize, SUV), employee_id."), HumanMessage(state["request"])])
        return {"intake_raw": ai.content}

    def parse_request(state: RentalState) -> dict[str, Any]:
        req = json.loads(state["intake_raw"])
        return {"booking_request": req, "messages": [HumanMessage(f"Request: {json.dumps(req)}")]}

    def verify_booking(state: RentalState) -> dict[str, Any]:
        booking = next(json.loads(m.content) for m in reversed(state["messages"])
                       if isinstance(m, ToolMessage) and m.name == "book_car")
        req = state["booking_request"]
        trips = TRIPS[booking["employee_id"]]
        trip = next((t for t in trips if t["arrive"] == booking["pickup_date"]), trips[0])
        if booking["status"] != "confirmed":
            raise PolicyViolation("Travel compliance: the rental is not confirmed")
        if booking["class"] != req["category"]:
            raise PolicyViolation("Travel compliance: booked vehicle class differs from the request")
        if booking["return_date"] != trip["depart"]:
            raise PolicyViolation("Travel compliance: rental period does not match the approved trip")
        days = (date.fromisoformat(booking["return_date"]) - date.fromisoformat(booking["pickup_date"])).days
        if booking["total_usd"] > trip["cap_per_day"] * days:
            raise PolicyViolation("Travel compliance: rental cost is above the travel-policy cap")
        return {"booking": booking}

    g = StateGraph(RentalState)
    g.add_node("intake", intake)
    g.add_node("parse_request", parse_request)
    g.add_node("booking_agent", agent)
    g.add_node("verify_booking", verify_booking)
    g.add_edge(START, "intake")
    g.add_edge("intake", "parse_request")
    g.add_edge("parse_request", "booking_agent")
    g.add_edge("booking_agent", "verify_booking")
    g.add_edge("verify_booking", END)
    return g.compile()


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server:
        graph = build(server.base_url)

        def record(request: str, path: str) -> BaseException | None:
            _QUOTES.clear()
            return record_graph(graph, {"request": request}, path, NAME, request, (PolicyViolation,))

        yield record


AGENT = Agent(
    name=NAME,
    route="langgraph",
    domain="car rental for business travel",
    summary="a model extracts the rental request, code parses it, a prebuilt ReAct agent (create_react_agent) "
    "searches, quotes and books with its tools, a compliance node checks the booking against the approved trip "
    "and the travel policy",
    features=["prebuilt ReAct agent as a subgraph"],
    passing=[
        "Hi, I need a midsize car in Chicago from 2 June to 5 June 2025 for a customer visit. Employee E-1507.",
        "Please book a compact in Boston from 6 October to 10 October 2025, employee E-2876.",
        "Need a midsize rental in Denver from 17 November to 20 November 2025 - E-3014.",
        "Could you reserve an SUV in Phoenix from 10 March to 14 March 2025? Employee E-3655, lots of site gear.",
        "Compact car in Seattle from 19 May to 23 May 2025 please, employee E-4420.",
    ],
    session=session,
    cases=[
        Case(
            "d-car-class-filter",
            "Car needed in Denver from 14 July to 18 July 2025, an SUV please (mountain roads). Employee E-2231.",
            "class_filter_dropped",
            "tool_ignores_argument",
            "The car search ignores the category; cheapest first, a compact Corolla tops the list, the booking "
            "agent quotes and books it, and compliance rejects the vehicle class.",
            [Loc("search_cars", 1, "CMP-DEN-11"), Loc("ChatOpenAI", 3, "CMP-DEN-11"), Loc("get_quote"),
             Loc("ChatOpenAI", 4), Loc("book_car"), Loc("verify_booking")],
        ),
        Case(
            "d-car-rate-cents",
            "I need a midsize car in Seattle from 4 August to 8 August 2025. Employee E-3380.",
            "rate_in_cents",
            "unit_error",
            "The quote multiplies the daily rate in cents (6150) by the days, so a USD 246 rental is quoted "
            "and booked at USD 24,600; compliance stops it at the policy cap.",
            [Loc("get_quote", 1, "24600"), Loc("ChatOpenAI", 4), Loc("book_car"), Loc("verify_booking")],
        ),
        Case(
            "d-car-stale-availability",
            "Book me an SUV in Austin from 15 September to 19 September 2025, employee E-4102.",
            "availability_cache",
            "stale_data",
            "The car search serves a cached availability list that still shows the RAV4 SUV-AUS-03 (rented "
            "since); the agent books it, the rental system only waitlists it and compliance refuses an "
            "unconfirmed rental.",
            [Loc("search_cars", 1, "SUV-AUS-03"), Loc("ChatOpenAI", 3, "SUV-AUS-03"), Loc("get_quote"),
             Loc("ChatOpenAI", 4), Loc("book_car"), Loc("verify_booking")],
        ),
        Case(
            "d-car-return-date",
            "Compact car in Denver from 3 July to 13 July 2025 for the plant audit, employee E-2231.",
            "return_day_transposed",
            "wrong_tool_args",
            "The intake model reads the return day 13 as 31; the car is searched, quoted and booked until "
            "31 July and compliance finds the rental does not match the approved trip.",
            [Loc("ChatOpenAI", 1, "2025-07-31"), Loc("parse_request"), Loc("ChatOpenAI", 2, "2025-07-31"),
             Loc("search_cars"), Loc("ChatOpenAI", 4), Loc("book_car"), Loc("verify_booking")],
        ),
    ],
)
