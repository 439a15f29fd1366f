"""Trout hatchery feeding plan: recalls the shift notes of the hatchery building, then a feed planner agent
lists the raceways, reads biomass and water temperature (parallel tool calls), looks up the feed table,
schedules the meals of each raceway and submits the day's feed orders to the feeder controller
(OpenAI Agents SDK)."""
from __future__ import annotations

import asyncio
import json

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, custom_span, function_tool, trace
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI
from pydantic import BaseModel

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

from ._common import messages, system, tool_results, user

NAME = "hatchery-feed"
ROUTE = "openai_agents"
DOMAIN = "trout hatchery raceway feeding"
SHAPE = "memory recall span, planner agent: plan + raceway listing, parallel biomass reads, parallel feed-table lookups, parallel meal scheduling, feeder submission"
SWITCH = None


def active(case: str) -> bool:
    return SWITCH == case


INPUTS = [
    {"building": "HB-A", "date": "2025-04-09"},
    {"building": "HB-B", "date": "2025-04-09"},
    {"building": "HB-C", "date": "2025-04-09"},
    {"building": "HB-A", "date": "2025-04-10"},
    {"building": "HB-B", "date": "2025-04-10"},
]

CASES = [
    {"id": "zzzzh-hatch-1", "input": 2, "kind": "truncated_result", "root": ("list_raceways", 1), "root_kind": "tool",
     "failure": "submit_feed_orders",
     "what": "The raceway listing answers the first page of six raceways of HB-C only, so R7 is left without a feed order and the feeder controller refuses the day's orders."},
    {"id": "zzzzh-hatch-2", "input": 0, "kind": "plan_error", "root": ("generation fake-model", 1), "root_kind": "llm",
     "failure": "submit_feed_orders",
     "what": "The planner's opening plan puts the fry on 3 meals a day, the fingerling rate, and the feeder controller refuses fry orders under 6 meals."},
    {"id": "zzzzh-hatch-3", "input": 1, "kind": "tool_ignores_argument", "root": ("feed_table", 2), "root_kind": "tool", "root_has": "brown trout",
     "failure": "submit_feed_orders",
     "what": "The feed table tool ignores the species argument and answers the rainbow trout rate (2.3% of body weight) for the 22 g brown trout in R3, above the 1.87% ceiling the feeder enforces for them."},
    {"id": "zzzzh-hatch-4", "input": 3, "kind": "context_pollution", "root": ("recall_shift_notes", 1), "root_kind": "other",
     "failure": "submit_feed_orders",
     "what": "The shift-note recall returns the HB-D notes of that date with the HB-A ones, the planner reads 'R4: hold feed after grading' as meant for HB-A and leaves R4 without an order."},
    {"id": "zzzzh-hatch-5", "input": 4, "kind": "off_by_one", "root": ("schedule_meals", 2), "root_kind": "tool", "root_has": "R2",
     "failure": "submit_feed_orders",
     "what": "The meal scheduler builds range(meals - 1) meal times for R2, so its meals add to one meal less than the daily ration."},
]

RACEWAYS = {
    "HB-A": [("R1", "rainbow trout", 2.1, 52000), ("R2", "rainbow trout", 11.5, 30500), ("R3", "rainbow trout", 48.0, 16200), ("R4", "rainbow trout", 95.0, 9800)],
    "HB-B": [("R1", "rainbow trout", 1.6, 61000), ("R2", "rainbow trout", 18.0, 24000), ("R3", "brown trout", 22.0, 19500), ("R4", "rainbow trout", 60.0, 8800)],
    "HB-C": [("R1", "brook trout", 3.2, 40000), ("R2", "brook trout", 9.0, 26000), ("R3", "rainbow trout", 30.0, 21000),
             ("R4", "rainbow trout", 75.0, 12000), ("R5", "rainbow trout", 140.0, 7000), ("R6", "brown trout", 35.0, 15500), ("R7", "brown trout", 120.0, 6100)],
}
TEMP = {"HB-A": 11.0, "HB-B": 9.5, "HB-C": 10.5}
NOTES = {"HB-A": ["R1 swim-up fry took feed well", "R3 oxygen 8.9 mg/L at 06:00"],
         "HB-B": ["R2 splash guard loose"],
         "HB-D": ["R4: hold feed 24 h after grading (graded 04-09 16:00)", "R1 inflow screen cleaned"],
         "HB-C": ["R6 mortality back to normal"]}
RATE = {"rainbow trout": 2.3, "brown trout": 1.7, "brook trout": 2.0}


def _rate(species, weight_g):
    return round(RATE[species] * (1.6 if weight_g < 2.5 else 1.0 if weight_g < 40 else 0.7), 2)


@function_tool
def list_raceways(building: str) -> list[dict]:
    """Stocked raceways of a building."""
    rows = RACEWAYS[building]
    if active("zzzzh-hatch-1"):
        rows = rows[:6]  # the inventory service's page size
    return [{"raceway": r, "species": s} for r, s, _, _ in rows]


@function_tool
def get_biomass(building: str, raceway: str) -> dict:
    """Fish count and mean weight of a raceway."""
    r = next(x for x in RACEWAYS[building] if x[0] == raceway)
    return {"raceway": raceway, "species": r[1], "mean_weight_g": r[2], "count": r[3], "biomass_kg": round(r[2] * r[3] / 1000, 1)}


@function_tool
def get_water_temp(building: str) -> dict:
    """Inflow water temperature of a building."""
    return {"building": building, "temp_c": TEMP[building]}


@function_tool
def feed_table(species: str, temp_c: float, mean_weight_g: float) -> dict:
    """Daily ration (% of body weight) from the feed manufacturer's table."""
    sp = species
    if active("zzzzh-hatch-3"):
        sp = "rainbow trout"  # the table service reads one sheet
    return {"species": species, "temp_c": temp_c, "mean_weight_g": mean_weight_g, "pct_bw": _rate(sp, mean_weight_g)}


@function_tool
def schedule_meals(raceway: str, daily_kg: float, meals: int) -> dict:
    """Meal times and grams per meal between 07:00 and 19:00."""
    n = meals
    if active("zzzzh-hatch-5") and raceway == "R2":
        n = meals - 1
    step = 12 * 60 // max(meals - 1, 1)
    times = [f"{7 + (i * step) // 60:02d}:{(i * step) % 60:02d}" for i in range(n)]
    return {"raceway": raceway, "meal_times": times, "meal_g": [round(daily_kg * 1000 / meals)] * len(times)}


class FeedOrder(BaseModel):
    raceway: str
    species: str
    mean_weight_g: float
    pct_bw: float
    daily_kg: float
    meal_times: list[str]
    meal_g: list[int]


@function_tool(failure_error_function=None)
def submit_feed_orders(building: str, date: str, orders: list[FeedOrder]) -> dict:
    """Send the day's orders to the automatic feeders."""
    have = {o.raceway for o in orders}
    for r, s, w, n in RACEWAYS[building]:
        if r not in have:
            raise ValueError(f"feeder {building}: stocked raceway {r} ({n} {s}) has no feed order for {date}")
    for o in orders:
        ceiling = round(_rate(o.species, o.mean_weight_g) * 1.1, 2)
        if o.pct_bw > ceiling:
            raise ValueError(f"feeder {building}: {o.raceway} ration {o.pct_bw}% BW above the {ceiling}% ceiling for {o.species} of {o.mean_weight_g} g")
        if o.mean_weight_g < 2.5 and len(o.meal_times) < 6:
            raise ValueError(f"feeder {building}: {o.raceway} fry of {o.mean_weight_g} g need at least 6 meals, order has {len(o.meal_times)}")
        if abs(sum(o.meal_g) / 1000 - o.daily_kg) > 0.05 * o.daily_kg:
            raise ValueError(f"feeder {building}: {o.raceway} meals add to {sum(o.meal_g) / 1000:.1f} kg, daily ration {o.daily_kg} kg")
    return {"building": building, "date": date, "orders": len(orders), "status": "loaded"}


def brain(request):
    if not system(request).startswith("You plan the day's feeding"):
        return "I cannot help with that."
    ask = json.loads(user(request))
    b = ask["building"]
    res = tool_results(request)
    got = {}
    for n, r in res:
        got.setdefault(n, []).append(r)
    if "list_raceways" not in got:
        meals = {"fry": 6, "fingerling": 4, "grower": 3}
        if active("zzzzh-hatch-2"):
            meals["fry"] = 3
        plan = {"meals_per_day": meals, "steps": ["list raceways", "biomass and temperature", "feed table", "meal times", "submit"]}
        return Reply(text=json.dumps(plan), tool_calls=(tool_call("list_raceways", {"building": b}),))
    held = {n.split(":")[0].strip() for n in ask["notes"] if "hold feed" in n}
    rws = [r for r in got["list_raceways"][0] if r["raceway"] not in held]
    if "get_biomass" not in got:
        return Reply(tool_calls=tuple(tool_call("get_biomass", {"building": b, "raceway": r["raceway"]}) for r in rws) + (tool_call("get_water_temp", {"building": b}),))
    temp = got["get_water_temp"][0]["temp_c"]
    bio = {x["raceway"]: x for x in got["get_biomass"]}
    if "feed_table" not in got:
        return Reply(tool_calls=tuple(tool_call("feed_table", {"species": x["species"], "temp_c": temp, "mean_weight_g": x["mean_weight_g"]}) for x in bio.values()))
    plan = None
    for m in messages(request):
        if m.get("role") == "assistant" and m.get("content"):
            plan = json.loads(m["content"])
            break
    rates = {(f["species"], f["mean_weight_g"]): f["pct_bw"] for f in got["feed_table"]}
    daily = {r: round(x["biomass_kg"] * rates[(x["species"], x["mean_weight_g"])] / 100, 1) for r, x in bio.items()}
    if "schedule_meals" not in got:
        def meals(w):
            return plan["meals_per_day"]["fry" if w < 2.5 else "fingerling" if w < 40 else "grower"]
        return Reply(tool_calls=tuple(tool_call("schedule_meals", {"raceway": r, "daily_kg": daily[r], "meals": meals(x["mean_weight_g"])}) for r, x in bio.items()))
    if "submit_feed_orders" not in got:
        sched = {s["raceway"]: s for s in got["schedule_meals"]}
        orders = [{"raceway": r, "species": x["species"], "mean_weight_g": x["mean_weight_g"], "pct_bw": rates[(x["species"], x["mean_weight_g"])],
                   "daily_kg": daily[r], "meal_times": sched[r]["meal_times"], "meal_g": sched[r]["meal_g"]} for r, x in bio.items()]
        return Reply(tool_calls=(tool_call("submit_feed_orders", {"building": b, "date": ask["date"], "orders": orders}),))
    return f"Feed orders for {b} loaded: {got['submit_feed_orders'][0]['orders']} raceways."


def record(inp: dict, path, server) -> None:
    model = OpenAIChatCompletionsModel(model=server.model, openai_client=AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))
    planner = Agent(name="feed_planner", instructions="You plan the day's feeding of a hatchery building: state a plan, then use the tools and submit the orders.",
                    model=model, tools=[list_raceways, get_biomass, get_water_temp, feed_table, schedule_meals, submit_feed_orders])
    proc = TrajdebugProcessor(path=str(path), name=NAME, task=f"feeding plan {inp['building']} {inp['date']}")
    client = model._client
    set_trace_processors([proc])

    async def go():
        with trace(NAME):
            with custom_span("recall_shift_notes", data={}) as span:
                notes = list(NOTES[inp["building"]])
                if active("zzzzh-hatch-4"):
                    notes += NOTES["HB-D"]  # the notes store is queried by date
                span.span_data.data = {"building": inp["building"], "notes": notes}
            try:
                await Runner.run(planner, json.dumps({**inp, "notes": notes}), run_config=RunConfig(workflow_name=NAME), max_turns=12)
            finally:
                await client.close()

    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])
