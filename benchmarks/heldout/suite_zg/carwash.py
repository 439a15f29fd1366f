"""Mobile car wash scheduling: the OpenAI Agents SDK (dispatcher + fleet sub-agent as a tool), traced with TrajdebugProcessor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .kit import active

AGENT = "mobile-carwash"
ROUTE = "openai_agents"
DOMAIN = "mobile car wash scheduling"
SHAPE = "dispatcher agent: request -> fleet sub-agent (as tool, lookup per plate) -> weather -> van availability -> price per vehicle -> confirm"
EXT = "jsonl"

REQUESTS = {
    "MW-901": {"request_id": "MW-901", "created": "2026-08-14", "service_date": "2026-08-16", "zip": "94110",
               "zone": "mission", "package": "ceramic", "plates": ["7KQX214"], "household": ["7KQX214", "8BRN552"]},
    "MW-915": {"request_id": "MW-915", "created": "2026-08-15", "service_date": "2026-08-18", "zip": "94117",
               "zone": "haight", "package": "full", "plates": ["6TRV903", "5LMA118"], "household": ["6TRV903", "5LMA118", "9ZZC400"]},
    "MW-870": {"request_id": "MW-870", "created": "2026-08-01", "service_date": "2026-08-03", "zip": "94110",
               "zone": "mission", "package": "basic", "plates": ["8BRN552"], "household": ["8BRN552"]},
    "MW-874": {"request_id": "MW-874", "created": "2026-08-02", "service_date": "2026-08-05", "zip": "94122",
               "zone": "sunset", "package": "full", "plates": ["4PLM771"], "household": ["4PLM771", "3DDE190"]},
    "MW-882": {"request_id": "MW-882", "created": "2026-08-04", "service_date": "2026-08-06", "zip": "94117",
               "zone": "haight", "package": "ceramic", "plates": ["9ZZC400", "6TRV903"], "household": ["9ZZC400", "6TRV903"]},
    "MW-890": {"request_id": "MW-890", "created": "2026-08-07", "service_date": "2026-08-09", "zip": "94122",
               "zone": "sunset", "package": "basic", "plates": ["3DDE190"], "household": ["3DDE190"]},
}
REGISTRY = {"7KQX214": "van", "8BRN552": "sedan", "6TRV903": "suv", "5LMA118": "sedan", "9ZZC400": "van",
            "4PLM771": "suv", "3DDE190": "sedan"}
PRICES = {("basic", "sedan"): 45.0, ("basic", "suv"): 55.0, ("basic", "van"): 65.0, ("full", "sedan"): 89.0,
          ("full", "suv"): 104.0, ("full", "van"): 119.0, ("ceramic", "sedan"): 129.0, ("ceramic", "suv"): 149.0,
          ("ceramic", "van"): 169.0}
RAIN = {("2026-08-16", "94110"): 10, ("2026-08-18", "94117"): 15}
INPUTS = {k: {"request_id": k} for k in ("MW-901", "MW-915", "MW-870", "MW-874", "MW-882", "MW-890")}
INPUTS["a"], INPUTS["b"] = INPUTS["MW-901"], INPUTS["MW-915"]
REFS = ["MW-870", "MW-874", "MW-882", "MW-890"]


def _tools(msgs: list) -> list:
    return [json.loads(m["content"]) if m["content"].startswith(("{", "[")) else m["content"]
            for m in msgs if m["role"] == "tool"]


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    done = _tools(msgs)
    if system.startswith("FLEET"):
        plates = json.loads(msgs[1]["content"])["plates"]
        household = json.loads(msgs[1]["content"])["household"]
        if len(done) < len(plates):
            plate = plates[len(done)]
            if active("cw-2") and len(plates) == 1:
                plate = [p for p in household if p not in plates][0]
            return Reply(tool_calls=(tool_call("lookup_vehicle", {"plate": plate}),))
        return json.dumps({"vehicles": done})
    if not done:
        rid = msgs[-1]["content"].split()[-1]
        return Reply(tool_calls=(tool_call("get_booking_request", {"request_id": rid}),))
    req = done[0]
    if len(done) == 1:
        return Reply(tool_calls=(tool_call("fleet_desk", {"input": json.dumps(
            {"plates": req["plates"], "household": req["household"]})}),))
    if len(done) == 2:
        return Reply(tool_calls=(tool_call("check_weather", {"date": req["service_date"], "zip": req["zip"]}),))
    if len(done) == 3:
        date = req["created"] if active("cw-1") else req["service_date"]
        return Reply(tool_calls=(tool_call("check_van_availability", {"date": date, "zone": req["zone"]}),))
    vehicles = done[1]["vehicles"]
    priced = done[4:]
    if len(priced) < len(vehicles):
        v = vehicles[len(priced)]
        return Reply(tool_calls=(tool_call("price_package", {"vehicle_class": v["class"], "package": req["package"]}),))
    if len(priced) == len(vehicles):
        slot = done[3]["slots"][0]
        return Reply(tool_calls=(tool_call("confirm_appointment", {
            "request_id": req["request_id"], "date": req["service_date"], "van": slot["van"], "time": slot["time"],
            "plates": [v["plate"] for v in vehicles], "classes": [v["class"] for v in vehicles],
            "total": sum(p["price"] for p in priced)}),))
    return f"Booked {req['request_id']}: {done[-1]}"


def record(server, inp: dict, out: Path) -> None:
    holds: set = set()

    @function_tool
    def get_booking_request(request_id: str) -> str:
        """Read a wash request from the booking inbox."""
        return json.dumps(REQUESTS[request_id])

    @function_tool
    def lookup_vehicle(plate: str) -> str:
        """Vehicle registry lookup by licence plate."""
        return json.dumps({"plate": plate, "class": REGISTRY[plate]})

    @function_tool
    def check_weather(date: str, zip: str) -> str:
        """Rain probability for a service date and ZIP."""
        rain = RAIN.get((date, zip), 5)
        return json.dumps({"date": date, "zip": zip, "rain_pct": rain})

    @function_tool
    def check_van_availability(date: str, zone: str) -> str:
        """Open van slots in a zone on a date; the first slot is held for 15 minutes."""
        slots = [{"van": "V-2", "time": "09:00"}, {"van": "V-3", "time": "10:30"}]
        if not active("cw-3"):
            slots = slots[1:] if zone in ("mission", "haight") else slots
        try:
            if active("cw-5"):
                raise TimeoutError("hold service answered 423 Locked")
            holds.add((date, slots[0]["van"], slots[0]["time"]))
        except TimeoutError:
            pass
        return json.dumps({"date": date, "zone": zone, "slots": slots})

    @function_tool
    def price_package(vehicle_class: str, package: str) -> str:
        """Price of a wash package for a vehicle class."""
        used = "basic" if active("cw-4") else package
        return json.dumps({"vehicle_class": vehicle_class, "package": package, "price": PRICES[(used, vehicle_class)]})

    @function_tool(failure_error_function=None)
    def confirm_appointment(request_id: str, date: str, van: str, time: str, plates: list[str], classes: list[str], total: float) -> str:
        """Confirm the appointment with the scheduling service."""
        req = REQUESTS[request_id]
        if (date, van, time) not in holds:
            raise RuntimeError(f"HTTP 409 from scheduler: no hold for van {van} at {time} on {date}")
        if van == "V-2" and time == "09:00" and req["zone"] in ("mission", "haight"):
            raise RuntimeError(f"HTTP 409 from scheduler: slot {van} {time} on {date} was taken at 07:12 by booking MW-880")
        for plate, cls in zip(plates, classes):
            if plate not in req["plates"] or REGISTRY[plate] != cls:
                raise RuntimeError(f"HTTP 422 from scheduler: vehicle {plate} ({cls}) is not on request {request_id}")
        expected = sum(PRICES[(req["package"], REGISTRY[p])] for p in req["plates"])
        if abs(total - expected) > 0.01:
            raise RuntimeError(f"HTTP 422 from scheduler: total {total:.2f} does not match {req['package']} price {expected:.2f}")
        return json.dumps({"request_id": request_id, "status": "confirmed", "van": van, "time": time})

    async def main() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="local", max_retries=0)
        fleet = Agent(name="fleet_desk", instructions="FLEET: look up every plate in the registry and report its class",
                      model=OpenAIChatCompletionsModel(model="carwash-fleet", openai_client=client), tools=[lookup_vehicle])
        dispatcher = Agent(
            name="dispatcher", instructions="DISPATCH: schedule the mobile wash request end to end",
            model=OpenAIChatCompletionsModel(model="carwash-dispatch", openai_client=client),
            tools=[get_booking_request, fleet.as_tool(tool_name="fleet_desk", tool_description="Vehicle classes by plate"),
                   check_weather, check_van_availability, price_package, confirm_appointment])
        try:
            await Runner.run(dispatcher, f"Schedule request {inp['request_id']}", max_turns=20,
                             run_config=RunConfig(workflow_name=AGENT))
        finally:
            await client.close()

    set_trace_processors([TrajdebugProcessor(path=str(out), name=AGENT, task=f"schedule wash {inp['request_id']}")])
    try:
        asyncio.run(main())
    finally:
        set_trace_processors([])


CASES_SPEC = [
    ("cw-1", "wrong_tool_args", "a", "generation carwash-dispatch", "2026-08-14", "confirm_appointment",
     "The dispatcher asks for van availability on the request's creation date instead of its service date, so the slot it confirms was never held."),
    ("cw-2", "subagent_wrong_entity", "a", "generation carwash-fleet", "8BRN552", "confirm_appointment",
     "The fleet sub-agent looks up the household's other plate instead of the one on the request."),
    ("cw-3", "stale_data", "b", "check_van_availability", "V-2", "confirm_appointment",
     "The availability tool answers a morning snapshot that still lists V-2 09:00, which another booking took."),
    ("cw-4", "tool_ignores_argument", "a", "price_package", "ceramic", "confirm_appointment",
     "The package price tool ignores the ceramic package argument and prices the basic wash."),
    ("cw-5", "swallowed_error", "b", "check_van_availability", "V-3", "confirm_appointment",
     "The availability tool swallows the hold service's 423 and still answers the slot as held, so confirmation finds no hold."),
]
