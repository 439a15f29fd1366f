"""Hotel revenue management (OpenAI Agents SDK, recorded by `TrajdebugProcessor`): a rate manager
reads the hotel's contract, keeps its blackout nights and floor in memory, then for each night of the
window asks competitor rates and a demand forecast (a forecaster agent used as a tool) in one turn,
prices the night, pushes the rate to the channel manager and finally audits what went live."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool, set_trace_processors
from benchmarks.heldout.suite_i._kit import (
    Case,
    active,
    calls_so_far,
    json_in,
    last_user,
    outputs_so_far,
    system_of,
)
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import FakeModelServer, Reply, tool_call


NAME = "hotel-rate-desk"
ROUTE = "openai_agents"

HOTELS = {  # hotel -> (floor EUR, ceiling EUR, blackout nights)
    "HTL-LIS": (89, 260, ["2026-12-23"]), "HTL-OPO": (79, 230, ["2026-12-31"]), "HTL-MAD": (99, 290, ["2026-12-26"]),
    "HTL-SEV": (69, 210, ["2026-12-25"]), "HTL-VAL": (75, 220, ["2026-12-30"]), "HTL-BCN": (109, 320, ["2026-12-31"]),
    "HTL-FAR": (65, 200, ["2026-12-24"]), "HTL-BIL": (85, 240, ["2026-12-27"]),
}
INPUTS = {  # window -> (hotel, nights)
    "win-lis": ("HTL-LIS", ["2026-12-23", "2026-12-24", "2026-12-25"]),
    "win-opo": ("HTL-OPO", ["2026-12-27", "2026-12-28", "2026-12-29"]),
    "win-mad": ("HTL-MAD", ["2026-12-20", "2026-12-21", "2026-12-22"]),
    "win-sev": ("HTL-SEV", ["2026-12-26", "2026-12-27", "2026-12-28"]),
    "win-opo-2": ("HTL-OPO", ["2026-12-20", "2026-12-21", "2026-12-22"]),
    "ref-val": ("HTL-VAL", ["2026-12-28", "2026-12-29", "2026-12-30"]),
    "ref-bcn": ("HTL-BCN", ["2026-12-29", "2026-12-30"]),
    "ref-far": ("HTL-FAR", ["2026-12-22", "2026-12-23", "2026-12-24"]),
    "ref-bil": ("HTL-BIL", ["2026-12-26", "2026-12-27"]),
}
REFS = ("ref-val", "ref-bcn", "ref-far", "ref-bil")

CASES = (
    Case("hotel-blackout", "hr_memory", "bad_memory_write", "win-lis", "remember", '"key": "blackouts", "stored": []',
         "The memory tool stores Lisbon's blackout nights as an empty list, so 2026-12-23 is priced with a promotion."),
    Case("hotel-forecast", "hr_pct", "format_drift", "win-opo", "generation forecast-v1", '91%',
         "The forecaster answers 2026-12-27's occupancy as a percentage string ('91%') where the pricing tool expects a fraction."),
    Case("hotel-suite", "hr_suite", "wrong_tool_args", "win-mad", "generation rates-v3", '"room_type": "suite"',
         "The rate manager asks competitor rates for suites instead of doubles for 2026-12-21."),
    Case("hotel-median", "hr_median", "hallucinated_value", "win-opo-2", "generation rates-v3", '"comp_median": 410',
         "The rate manager prices 2026-12-21 at Porto with a compset median of 410 EUR that no competitor result holds."),
    Case("hotel-queued", "hr_queued", "swallowed_error", "win-sev", "push_rate", '"status": "queued"',
         "A 429 from the channel manager on the last night is swallowed and the push reported as queued."),
)


class ChannelRejected(RuntimeError):
    """The channel manager refused a rate."""

    __module__ = "channelmgr.client"


_memory: dict[str, Any] = {}


def _history(night: str) -> float:
    day = int(night[-2:])
    return round(0.42 + (day * 37 % 50) / 100, 2)


def _comps(hotel: str, night: str, room_type: str) -> list[int]:
    base = {"double": 120, "suite": 340}[room_type] + (HOTELS[hotel][0] - 80)
    return [base + (int(night[-2:]) * k) % 41 for k in (3, 7, 11, 13)]


# -- the scripted model ----------------------------------------------------------------------------


def _forecaster(request: Any) -> Reply | str:
    night = json_in(last_user(request))["night"]
    out = outputs_so_far(request)
    if "get_history" not in out:
        return Reply(tool_calls=(tool_call("get_history", {"night": night}),))
    occupancy: Any = out["get_history"][0]["occupancy"]
    if active("hr_pct") and night == "2026-12-27":
        occupancy = f"{round(occupancy * 100)}%"
    return json.dumps({"night": night, "occupancy": occupancy})


def _night_step(hotel: str, night: str, done: list[tuple[str, dict[str, Any]]], out: dict[str, list[Any]]) -> Reply | None:
    def made(name: str) -> bool:
        return any(n == name and a.get("night") == night for n, a in done)

    if not made("get_competitor_rates"):
        room = "suite" if active("hr_suite") and night == "2026-12-21" else "double"
        return Reply(tool_calls=(tool_call("get_competitor_rates", {"night": night, "room_type": room}),
                                 tool_call("forecast_demand", {"input": json.dumps({"night": night})})))
    if not made("price_night"):
        comps = next(c for c in out["get_competitor_rates"] if c["night"] == night)
        fc = next(f for f in out["forecast_demand"] if f["night"] == night)
        median = 410 if active("hr_median") and (hotel, night) == ("HTL-OPO", "2026-12-21") else comps["median"]
        return Reply(tool_calls=(tool_call("price_night", {"night": night, "comp_median": median,
                                                           "occupancy": str(fc["occupancy"])}),))
    if not made("push_rate"):
        price = next(p for p in out["price_night"] if p["night"] == night)
        return Reply(tool_calls=(tool_call("push_rate", {"night": night, "rate": price["rate"], "promo": price["promo"]}),))
    return None


def policy(request: Any) -> Reply | str:
    if system_of(request).startswith("You forecast"):
        return _forecaster(request)
    task = json.loads(next(m for m in request.body["messages"] if m["role"] == "user")["content"])
    done, out = calls_so_far(request), outputs_so_far(request)
    names = [n for n, _ in done]
    if "get_contract" not in names:
        return Reply(tool_calls=(tool_call("get_contract", {"hotel": task["hotel"]}),))
    if "remember" not in names:
        contract = out["get_contract"][0]
        return Reply(tool_calls=(tool_call("remember", {"key": "blackouts", "value": json.dumps(contract["blackouts"])}),
                                 tool_call("remember", {"key": "floor", "value": json.dumps(contract["floor"])})))
    for night in task["nights"]:
        step = _night_step(task["hotel"], night, done, out)
        if step is not None:
            return step
    if "audit_channel" not in names:
        return Reply(tool_calls=(tool_call("audit_channel", {"hotel": task["hotel"], "nights": task["nights"]}),))
    return f"Rates live for {len(task['nights'])} nights at {task['hotel']}."


# -- the tools -------------------------------------------------------------------------------------


@function_tool(failure_error_function=None)
def get_contract(hotel: str) -> str:
    """The owner's pricing contract: floor, ceiling and nights closed to promotions."""
    floor, ceiling, blackouts = HOTELS[hotel]
    _memory["hotel"] = hotel
    return json.dumps({"hotel": hotel, "floor": floor, "ceiling": ceiling, "blackouts": blackouts})


@function_tool(failure_error_function=None)
def remember(key: str, value: str) -> str:
    """Keep a value in the desk's memory for later tools."""
    stored = json.loads(value)
    if active("hr_memory") and key == "blackouts" and _memory.get("hotel") == "HTL-LIS":
        stored = [n for n in stored if n != "2026-12-23"]
    _memory[key] = stored
    return json.dumps({"key": key, "stored": stored})


@function_tool(failure_error_function=None)
def get_history(night: str) -> str:
    """Occupancy on the same night last year and this year's pickup, as a fraction of rooms."""
    return json.dumps({"night": night, "occupancy": _history(night)})


@function_tool(failure_error_function=None)
def get_competitor_rates(night: str, room_type: str) -> str:
    """Rates of the compset for a night and room type (EUR)."""
    rates = _comps(_memory["hotel"], night, room_type)
    return json.dumps({"night": night, "room_type": room_type, "rates": rates, "median": statistics.median(rates)})


@function_tool(failure_error_function=None)
def price_night(night: str, comp_median: float, occupancy: str) -> str:
    """Price a night from the compset median and the forecast occupancy."""
    occ = float(occupancy.rstrip("%"))
    promo = night not in _memory["blackouts"] and occ < 0.6
    rate = max(_memory["floor"], comp_median * (0.8 + 0.4 * occ)) * (0.9 if promo else 1.0)
    return json.dumps({"night": night, "rate": round(rate), "promo": promo})


_throttled: set[str] = set()


@function_tool(failure_error_function=None)
def push_rate(night: str, rate: int, promo: bool) -> str:
    """Push a night's rate to the channel manager."""
    floor, ceiling, blackouts = HOTELS[_memory["hotel"]]
    if promo and night in blackouts:
        raise ChannelRejected(f"{night} is closed to promotional rates under the owner's contract")
    if not floor <= rate <= ceiling:
        raise ChannelRejected(f"rate {rate} EUR for {night} is outside the contract band {floor}-{ceiling} EUR")
    status = "live"
    if night == "2026-12-28" and night not in _throttled:  # the channel manager throttles one push a window
        _throttled.add(night)
        status = "queued" if active("hr_queued") else "live"
    if status == "live":
        _memory.setdefault("live", set()).add(night)
    return json.dumps({"night": night, "rate": rate, "status": status, "ref": f"CM-{night[5:].replace('-', '')}-{rate}"})


@function_tool(failure_error_function=None)
def audit_channel(hotel: str, nights: list[str]) -> str:
    """Read back which rates are live on the channels."""
    missing = [n for n in nights if n not in _memory.get("live", set())]
    if missing:
        raise ChannelRejected(f"{hotel}: no live rate on the channels for {', '.join(missing)}")
    return json.dumps({"hotel": hotel, "live": nights})


# -- the run ---------------------------------------------------------------------------------------


def record(server: FakeModelServer, input_id: str, path: Path) -> None:
    _memory.clear()
    _throttled.clear()
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    forecaster = Agent(name="forecaster", instructions="You forecast hotel demand for one night as JSON.",
                       tools=[get_history], model=OpenAIChatCompletionsModel(model="forecast-v1", openai_client=client))
    demand = forecaster.as_tool(tool_name="forecast_demand", tool_description="Forecast a night's occupancy.")
    manager = Agent(name="rate_manager", instructions="You manage hotel room rates within the owner's contract.",
                    tools=[get_contract, remember, get_competitor_rates, demand, price_night, push_rate, audit_channel],
                    model=OpenAIChatCompletionsModel(model="rates-v3", openai_client=client))
    set_trace_processors([TrajdebugProcessor(path=str(path), name=NAME, task=f"price {input_id}")])
    hotel, nights = INPUTS[input_id]
    try:
        Runner.run_sync(manager, json.dumps({"hotel": hotel, "nights": nights}), max_turns=30,
                        run_config=RunConfig(workflow_name=NAME))
    except Exception as exc:
        if "Error running tool" not in str(exc):
            raise
