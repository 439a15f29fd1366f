"""Glamping site bookings (OpenAI Agents SDK): a front desk hands off to a booking agent that searches units,
prices the stay, lists extras, holds a unit and confirms with the booking engine."""

from __future__ import annotations

import asyncio
import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_trace_processors

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from .common import Case, agents_model, conversation
from .kit import active

AGENT = "glamping-booking-desk"
ROUTE = "openai_agents"
DOMAIN = "glamping site bookings"
SHAPE = "front desk -> hand-off -> booking agent: availability, rates, extras, hold, confirm (7 model turns, 6 tools)"

UNITS = {
    "bell-04": {"site": "Hollow Oak", "type": "bell tent", "sleeps": 4, "pets": False},
    "bell-07": {"site": "Hollow Oak", "type": "bell tent", "sleeps": 4, "pets": True},
    "yurt-02": {"site": "Hollow Oak", "type": "yurt", "sleeps": 5, "pets": True},
    "pod-11": {"site": "Fernside", "type": "glamping pod", "sleeps": 2, "pets": False},
    "pod-12": {"site": "Fernside", "type": "glamping pod", "sleeps": 2, "pets": True},
    "shep-01": {"site": "Fernside", "type": "shepherd hut", "sleeps": 3, "pets": True},
}
TARIFF = {2026: {"bell tent": 113.0, "yurt": 149.0, "glamping pod": 89.0, "shepherd hut": 126.0},
          2025: {"bell tent": 95.0, "yurt": 132.0, "glamping pod": 79.0, "shepherd hut": 110.0}}
EXTRAS = [{"code": "WOOD-05", "name": "firewood crate", "gbp": 12.0}, {"code": "TUB-01", "name": "hot tub evening", "gbp": 45.0},
          {"code": "BRK-02", "name": "breakfast hamper", "gbp": 28.0}, {"code": "DOG-01", "name": "dog pack", "gbp": 15.0}]
INPUTS = {
    "A": {"guest": "Priya Nair", "site": "Hollow Oak", "type": "bell tent", "check_in": "2026-07-10", "nights": 3, "guests": 3, "pets": True},
    "B": {"guest": "Tom Ashby", "site": "Fernside", "type": "glamping pod", "check_in": "2026-08-03", "nights": 2, "guests": 2, "pets": True},
}
REFS = [
    {"guest": "Lena Brook", "site": "Fernside", "type": "shepherd hut", "check_in": "2026-06-12", "nights": 2, "guests": 3, "pets": False},
    {"guest": "Owen Price", "site": "Hollow Oak", "type": "yurt", "check_in": "2026-09-04", "nights": 4, "guests": 5, "pets": True},
    {"guest": "Mia Quinn", "site": "Hollow Oak", "type": "bell tent", "check_in": "2026-05-22", "nights": 3, "guests": 2, "pets": False},
    {"guest": "Sam Okafor", "site": "Fernside", "type": "glamping pod", "check_in": "2026-10-16", "nights": 2, "guests": 2, "pets": False},
]
CASES = [
    Case("zs_glamping_1", "glp.tariff", "stale_data", "A", "get_rate", 1, "tool", "confirm_booking", 1,
         "The rate service answers from last season's cached tariff, so the quoted total is below this season's price."),
    Case("zs_glamping_2", "glp.nights", "wrong_tool_args", "A", "generation fake-model", 6, "llm", "confirm_booking", 1,
         "The booking agent's confirmation call asks for one night fewer than the hold and the guest's request."),
    Case("zs_glamping_3", "glp.pets", "tool_ignores_argument", "B", "search_availability", 1, "tool", "confirm_booking", 1,
         "The availability search ignores the pets filter and offers a unit that does not take dogs."),
    Case("zs_glamping_4", "glp.extras", "truncated_result", "A", "list_extras", 1, "tool", "confirm_booking", 1,
         "The extras list is cut after its first entries, so the dog pack a pet booking needs is never added."),
    Case("zs_glamping_5", "glp.dates", "format_drift", "B", "search_availability", 1, "tool", "confirm_booking", 1,
         "The availability search answers the arrival date day-first, which the hold reads month-first."),
]


def policy(request: Any) -> Any:
    task, user, res = conversation(request)
    req = json.loads(user)
    if task == "front_desk":
        return Reply(tool_calls=(tool_call("transfer_to_booking_agent", {}),))
    if "search_availability" not in res:
        return Reply(tool_calls=(tool_call("search_availability", {"site": req["site"], "unit_type": req["type"],
                     "check_in": req["check_in"], "nights": req["nights"], "guests": req["guests"], "pets": req["pets"]}),))
    unit = res["search_availability"]["units"][0]
    if "get_rate" not in res:
        return Reply(tool_calls=(tool_call("get_rate", {"unit": unit["unit"], "check_in": req["check_in"], "nights": req["nights"]}),))
    if "list_extras" not in res:
        return Reply(tool_calls=(tool_call("list_extras", {"unit": unit["unit"]}),))
    if "hold_unit" not in res:
        return Reply(tool_calls=(tool_call("hold_unit", {"unit": unit["unit"], "arrival": unit["arrival"], "nights": req["nights"],
                                                         "guests": req["guests"]}),))
    if "confirm_booking" not in res:
        extras = ["WOOD-05"] + [e["code"] for e in res["list_extras"]["extras"] if req["pets"] and e["code"] == "DOG-01"]
        prices = {e["code"]: e["gbp"] for e in res["list_extras"]["extras"]}
        total = res["get_rate"]["total_gbp"] + sum(prices[c] for c in extras)
        nights = req["nights"] - 1 if active("glp.nights") else req["nights"]
        return Reply(tool_calls=(tool_call("confirm_booking", {"hold_id": res["hold_unit"]["hold_id"], "guest": req["guest"],
                     "nights": nights, "pets": req["pets"], "extras": extras, "total_gbp": round(total, 2)}),))
    return f"Booked: {res['confirm_booking']['reference']}."


HOLDS: dict = {}


@function_tool
def search_availability(site: str, unit_type: str, check_in: str, nights: int, guests: int, pets: bool) -> str:
    """Free units of a type on a site for the stay."""
    units = [u for u, d in UNITS.items() if d["site"] == site and d["type"] == unit_type and d["sleeps"] >= guests
             and (d["pets"] or not pets or active("glp.pets"))]
    arrival = check_in
    if active("glp.dates"):
        y, m, d = check_in.split("-")
        arrival = f"{d}/{m}/{y}"
    return json.dumps({"units": [{"unit": u, "arrival": arrival, "nights": nights} for u in sorted(units)]})


@function_tool
def get_rate(unit: str, check_in: str, nights: int) -> str:
    """Price of a stay in a unit."""
    year = 2025 if active("glp.tariff") else int(check_in[:4])
    nightly = TARIFF[year][UNITS[unit]["type"]]
    return json.dumps({"unit": unit, "nightly_gbp": nightly, "nights": nights, "total_gbp": nightly * nights})


@function_tool
def list_extras(unit: str) -> str:
    """Extras that can be added to a stay in a unit."""
    extras = [e for e in EXTRAS if e["code"] != "DOG-01" or UNITS[unit]["pets"]]
    if active("glp.extras"):
        extras = extras[:2]
    return json.dumps({"unit": unit, "extras": extras})


def _parse_arrival(text: str) -> str:
    if "/" in text:
        a, b, y = text.split("/")
        return f"{y}-{a}-{b}"  # the hold service reads slashed dates month first
    return text


@function_tool
def hold_unit(unit: str, arrival: str, nights: int, guests: int) -> str:
    """Hold a unit for 20 minutes while the booking is confirmed."""
    hold = f"H-{unit}-{len(HOLDS) + 1:03d}"
    HOLDS[hold] = {"unit": unit, "arrival": _parse_arrival(arrival), "nights": nights}
    return json.dumps({"hold_id": hold, "unit": unit, "arrival": HOLDS[hold]["arrival"], "nights": nights})


def _confirm(hold_id: str, guest: str, nights: int, pets: bool, extras: list[str], total_gbp: float) -> str:
    hold = HOLDS[hold_id]
    unit = UNITS[hold["unit"]]
    req = next(r for r in [*INPUTS.values(), *REFS] if r["guest"] == guest)
    if hold["arrival"] != req["check_in"]:
        raise RuntimeError(f"booking engine 409: hold {hold_id} starts {hold['arrival']}, the reservation request "
                           f"starts {req['check_in']}")
    if hold["nights"] != nights:
        raise RuntimeError(f"booking engine 409: hold {hold_id} covers {hold['nights']} night(s), the booking asks for {nights}")
    if pets and not unit["pets"]:
        raise RuntimeError(f"booking engine 422: unit {hold['unit']} does not accept pets")
    if pets and "DOG-01" not in extras:
        raise RuntimeError("booking engine 422: bookings with pets must include the dog pack extra (DOG-01)")
    start = date.fromisoformat(hold["arrival"])
    price = TARIFF[start.year][unit["type"]] * nights + sum(e["gbp"] for e in EXTRAS if e["code"] in extras)
    if abs(price - total_gbp) > 0.01:
        raise RuntimeError(f"booking engine 422: quoted total {total_gbp:.2f} GBP does not match the {start.year} tariff "
                           f"price {price:.2f} GBP for {hold['unit']}")
    out = (start + timedelta(days=nights)).isoformat()
    return json.dumps({"reference": f"GLP-{hold['unit']}-{hold['arrival']}", "check_out": out})


confirm_booking = function_tool(_confirm, name_override="confirm_booking", failure_error_function=None)


def _agents(model: Any) -> Agent:
    booking = Agent(name="booking_agent", instructions="TASK=booking. Book the guest's stay with the tools.", model=model,
                    tools=[search_availability, get_rate, list_extras, hold_unit, confirm_booking])
    return Agent(name="front_desk", instructions="TASK=front_desk. Hand booking requests to the booking agent.",
                 model=model, handoffs=[booking])


def record(inp: dict, dest: Path, server: Any) -> None:
    proc = TrajdebugProcessor(path=str(dest), name=AGENT, task=f"book {inp['type']} at {inp['site']} from {inp['check_in']}")
    set_trace_processors([proc])
    HOLDS.clear()

    async def go() -> None:
        model, client = agents_model(server)
        try:
            await Runner.run(_agents(model), json.dumps(inp, sort_keys=True), run_config=RunConfig(workflow_name=AGENT))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception as exc:  # noqa: BLE001 - the booking engine's refusal ends the run
        if "booking engine" not in str(exc):
            raise
