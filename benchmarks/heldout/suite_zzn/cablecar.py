"""Cable car: sells a party's tickets for a departure (openai_agents route, Responses API)."""
from __future__ import annotations

import asyncio
import datetime as dt
import json

import kit
from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from common import agent_history
from openai import AsyncOpenAI
from trajdebug.testing import Reply, tool_call

from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME = "cablecar-ticketing"
ROUTE = "openai_agents"
DOMAIN = "a cable car's ticketing"
SHAPE = "Agent ticket_desk (Responses API): get_timetable, check_capacity, fare_checker sub-agent as tool per passenger (passenger_record tool), price_ticket per passenger, issue_tickets, validate_order tool"

WEEKDAY = ["09:00", "10:30", "12:00", "14:30", "16:00"]
SUNDAY = ["10:00", "12:00", "14:00", "16:00"]
FARES = {"adult": 42.0, "child": 21.0, "senior": 30.0}
SOLD = {"09:00": 20, "10:00": 10, "10:30": 12, "12:00": 25, "14:00": 8, "14:30": 5, "16:00": 0}
LAST_TICKET = {"2026-07-04": 4410, "2026-07-05": 4520, "2026-07-06": 4633, "2026-07-07": 4702,
               "2026-07-08": 4811, "2026-06-27": 3900, "2026-06-28": 3991, "2026-06-29": 4066, "2026-06-30": 4150}


def category(age: int) -> str:
    return "child" if age < 16 else "senior" if age >= 65 else "adult"


def _req(date, time, ret, party):
    return {"date": date, "time": time, "return": ret, "party": [{"name": n, "age": a} for n, a in party]}


CASES = [
    {"id": "zzn_cable_01", "kind": "wrong_tool_args", "input": _req("2026-07-04", "10:30", True, [("Rosa Keller", 41), ("Lukas Frey", 12), ("Mira Frey", 9)]),
     "root": ("response", 13), "failure": ("validate_order", 1),
     "desc": "The desk model calls price_ticket for Lukas Frey with return_trip false on a return booking, so he is charged the single 21.00 CHF, not the return 33.60 CHF."},
    {"id": "zzn_cable_02", "kind": "tool_ignores_argument", "input": _req("2026-07-05", "10:00", False, [("Ivo Marin", 70), ("Ana Marin", 67)]),
     "root": ("get_timetable", 1), "failure": ("validate_order", 1),
     "desc": "get_timetable ignores the date and returns the weekday timetable for Sunday 2026-07-05, so the desk books the 10:30 departure, which does not run on Sundays."},
    {"id": "zzn_cable_03", "kind": "off_by_one", "input": _req("2026-07-06", "12:00", True, [("Jan Novak", 35), ("Eva Novak", 33)]),
     "root": ("issue_tickets", 1), "failure": ("validate_order", 1),
     "desc": "issue_tickets numbers the first new ticket as the last one already issued (4633) instead of the next."},
    {"id": "zzn_cable_04", "kind": "format_drift", "input": _req("2026-07-07", "14:30", False, [("Nils Lind", 40), ("Greta Lind", 72)]),
     "root": ("response", 8), "failure": ("validate_order", 1),
     "desc": "The fare checker sub-agent answers Greta Lind's category as 'SENIOR (65+)' instead of the code 'senior', which price_ticket reads as an adult fare."},
    {"id": "zzn_cable_05", "kind": "subagent_wrong_entity", "input": _req("2026-07-08", "16:00", True, [("Otto Roth", 77), ("Pia Roth", 8)]),
     "root": ("response", 8), "failure": ("validate_order", 1),
     "desc": "The fare checker sub-agent, asked about Pia Roth, answers with Otto Roth's record (senior) instead of hers (child)."},
]
REFS = [_req("2026-06-27", "12:00", True, [("Dora Veit", 30), ("Emil Veit", 6)]),
        _req("2026-06-28", "14:00", False, [("Karl Aas", 68), ("Lea Aas", 66), ("Tim Aas", 15)]),
        _req("2026-06-29", "09:00", True, [("Uma Roy", 52)]),
        _req("2026-06-30", "16:00", False, [("Vik Sen", 23), ("Zia Sen", 24)])]
PARTY: dict = {}


def brain(request):
    instr, user, hist = agent_history(request)
    if instr.startswith("You decide fare categories"):
        name = json.loads(user)["passenger"] if user.startswith("{") else user.split(": ", 1)[-1]
        recs = [o for n, a, o in hist if n == "passenger_record"]
        if not recs:
            return Reply(tool_calls=(tool_call("passenger_record", {"name": name}),))
        rec = recs[-1]
        if kit.on("zzn_cable_05") and name == "Pia Roth":
            rec = {"name": "Otto Roth", "age": 77}
        cat = category(rec["age"])
        if kit.on("zzn_cable_04") and cat == "senior":
            cat = "SENIOR (65+)"
        return json.dumps({"name": rec["name"], "category": cat})
    req = json.loads(user)
    done = [n for n, a, o in hist]
    out = {n: o for n, a, o in hist}
    if "get_timetable" not in done:
        return Reply(tool_calls=(tool_call("get_timetable", {"route": "valley-summit", "date": req["date"]}),))
    deps = out["get_timetable"]["departures"]
    when = req["time"] if req["time"] in deps else min((t for t in deps if t >= req["time"]), default=deps[-1])
    if "check_capacity" not in done:
        return Reply(tool_calls=(tool_call("check_capacity", {"date": req["date"], "time": when}),))
    cats = [o for n, a, o in hist if n == "fare_checker"]
    if len(cats) < len(req["party"]):
        p = req["party"][len(cats)]
        return Reply(tool_calls=(tool_call("fare_checker", {"input": f"Fare category for: {p['name']}"}),))
    prices = [o for n, a, o in hist if n == "price_ticket"]
    if len(prices) < len(req["party"]):
        i = len(prices)
        c = cats[i]
        c = json.loads(c)["category"] if isinstance(c, str) else c["category"]
        ret = req["return"]
        if kit.on("zzn_cable_01") and i == 1:
            ret = False
        return Reply(tool_calls=(tool_call("price_ticket", {"category": c, "return_trip": ret}),))
    if "issue_tickets" not in done:
        return Reply(tool_calls=(tool_call("issue_tickets", {"date": req["date"], "time": when, "count": len(req["party"])}),))
    if "validate_order" not in done:
        order = {"date": req["date"], "time": when, "return": req["return"],
                 "timetable": out["get_timetable"], "tickets": out["issue_tickets"],
                 "lines": [{"name": p["name"], "fare": pr["fare"], "category": pr["category"]} for p, pr in zip(req["party"], prices)]}
        return Reply(tool_calls=(tool_call("validate_order", {"order_json": json.dumps(order)}),))
    return f"Tickets {out['issue_tickets']['numbers']} issued for the {when} departure."


@function_tool
def get_timetable(route: str, date: str) -> dict:
    """Departures of a route on a date."""
    day = dt.date.fromisoformat(date)
    times = SUNDAY if day.weekday() == 6 else WEEKDAY
    if kit.on("zzn_cable_02"):
        times = WEEKDAY
    return {"route": route, "date": date, "departures": times}


@function_tool
def check_capacity(date: str, time: str) -> dict:
    """Free seats on a departure (cabin of 30)."""
    return {"time": time, "free": 30 - SOLD.get(time, 0)}


@function_tool
def passenger_record(name: str) -> dict:
    """The booking's record of a passenger."""
    for p in PARTY["party"]:
        if p["name"] == name:
            return dict(p)
    return {"name": name, "age": None}


@function_tool
def price_ticket(category: str, return_trip: bool) -> dict:
    """Fare for a fare category."""
    base = FARES.get(category, FARES["adult"])
    cat = category if category in FARES else "adult"
    return {"category": cat, "fare": base * (2 if return_trip else 1) * 0.8 if return_trip else base}


@function_tool
def issue_tickets(date: str, time: str, count: int) -> dict:
    """Issue numbered tickets for a departure."""
    first = LAST_TICKET[date] + 1
    if kit.on("zzn_cable_03"):
        first = LAST_TICKET[date]
    return {"numbers": [f"T-{first + i}" for i in range(count)], "time": time}


@function_tool(failure_error_function=None)
def validate_order(order_json: str) -> str:
    """Check an order against the ticketing rules before payment."""
    order = json.loads(order_json)
    day = dt.date.fromisoformat(order["date"])
    real = SUNDAY if day.weekday() == 6 else WEEKDAY
    if order["time"] not in real:
        raise ValueError(f"departure {order['time']} does not run on {day:%A} {order['date']}")
    for ln, p in zip(order["lines"], PARTY["party"]):
        cat = category(p["age"])
        fare = FARES[cat] * 2 * 0.8 if order["return"] else FARES[cat]
        if abs(ln["fare"] - fare) > 0.005:
            raise ValueError(f"{p['name']} ({p['age']}) charged {ln['fare']:.2f} CHF as {ln['category']}; the {cat} fare is {fare:.2f} CHF")
    nums = [int(t.split("-")[1]) for t in order["tickets"]["numbers"]]
    if min(nums) <= LAST_TICKET[order["date"]]:
        raise ValueError(f"ticket T-{min(nums)} was already issued (last issued T-{LAST_TICKET[order['date']]})")
    return "order valid"


def record(inp, path, server):
    server.use(brain)
    PARTY.clear()
    PARTY.update(inp)
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=f"tickets for {inp['date']} {inp['time']}")])
    fare_agent = Agent(name="fare_checker", instructions="You decide fare categories from passenger records.",
                       model="fake-model", tools=[passenger_record])
    desk = Agent(name="ticket_desk", instructions="You sell cable car tickets. Use the tools, then validate the order.",
                 model="fake-model",
                 tools=[get_timetable, check_capacity,
                        fare_agent.as_tool(tool_name="fare_checker", tool_description="Fare category of one passenger."),
                        price_ticket, issue_tickets, validate_order])

    async def main():
        cli = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(cli)
        try:
            await Runner.run(desk, json.dumps(inp), max_turns=30, run_config=RunConfig(workflow_name=NAME))
        finally:
            await cli.close()

    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])
