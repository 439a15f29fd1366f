"""An ice cream van round's stock (openai_agents route, Responses API): plan the day's reorder for a van."""
import asyncio
import json
import math

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

import kit
from common import Reply, tool_call, tool_outputs
from trajdebug.integrations.openai_agents import TrajdebugProcessor

NAME, ROUTE, DOMAIN = "icecream-van-stock", "openai_agents", "an ice cream van round's stock"
SHAPE = "Agents SDK agent (Responses API): parallel round + notes lookup, depot sub-agent (its own turns, depot tool), stock count, footfall forecast, reorder, validator tool"

ROUNDS = {("VAN-1", "tue"): ["Green Park", "School Lane", "Harbour Wall", "Mill Lane"],
          ("VAN-1", "thu"): ["Green Park", "Abbey Road", "Mill Lane", "Beach Huts", "Leisure Centre"],
          ("VAN-1", "sat"): ["Beach Huts", "Harbour Wall", "Pier Head", "Green Park"],
          ("VAN-2", "tue"): ["Castle Mound", "Mill Lane", "Station Yard"],
          ("VAN-2", "thu"): ["Station Yard", "Castle Mound", "Orchard Estate", "Rec Ground"],
          ("VAN-2", "sat"): ["Rec Ground", "Castle Mound", "Pier Head"],
          ("VAN-3", "sun"): ["Pier Head", "Beach Huts", "Lighthouse"]}
NOTES = [{"van": "VAN-2", "note": "Mill Lane closed for roadworks, skip it"},
         {"van": "VAN-1", "note": "Green Park fete at 2pm, arrive early"},
         {"van": "VAN-3", "note": "Lighthouse car park resurfaced"}]
FOOTFALL = {"Green Park": 60, "School Lane": 35, "Harbour Wall": 50, "Mill Lane": 30, "Abbey Road": 25,
            "Beach Huts": 80, "Leisure Centre": 40, "Pier Head": 90, "Castle Mound": 45, "Station Yard": 20,
            "Orchard Estate": 30, "Rec Ground": 55, "Lighthouse": 35}
WEATHER = {"sunny": 1.0, "cloudy": 0.6, "rain": 0.3}
SHARE = {"99 cone": 0.30, "screwball": 0.10, "choc ice": 0.10, "lolly": 0.15, "tub": 0.10, "oyster": 0.05,
         "sorbet": 0.10, "slush": 0.10}
STOCK = {"VAN-1": {"99 cone": 20, "screwball": 4, "choc ice": 10, "lolly": 8, "tub": 5, "oyster": 2, "sorbet": 3,
                   "slush": 1},
         "VAN-2": {"99 cone": 30, "screwball": 12, "choc ice": 2, "lolly": 10, "tub": 9, "oyster": 6, "sorbet": 0,
                   "slush": 4},
         "VAN-3": {"99 cone": 10, "screwball": 2, "choc ice": 4, "lolly": 3, "tub": 2, "oyster": 1, "sorbet": 1,
                   "slush": 0}}
ORDERS = {}


def _req(van, day, weather):
    return {"van": van, "day": day, "weather": weather,
            "text": f"Plan {van}'s {day} round reorder; forecast {weather}."}


INPUTS = {"v1": _req("VAN-1", "thu", "sunny"), "v2": _req("VAN-2", "thu", "cloudy"), "v3": _req("VAN-1", "sat", "rain"),
          "v4": _req("VAN-1", "tue", "cloudy"), "v5": _req("VAN-2", "sat", "sunny"),
          "r1": _req("VAN-2", "tue", "sunny"), "r2": _req("VAN-1", "tue", "rain"), "r3": _req("VAN-3", "sun", "sunny"),
          "r4": _req("VAN-2", "thu", "rain")}
REFS = ["r1", "r2", "r3", "r4"]
CASES = [
    {"id": "zzs_icecream_round_day", "kind": "wrong_retrieval", "input": "v1", "root": ("get_round", 1),
     "failure": ("validate_load", 1),
     "description": "The round lookup for Thursday returns VAN-1's Tuesday round, so the reorder covers the wrong stops."},
    {"id": "zzs_icecream_other_van_notes", "kind": "context_pollution", "input": "v4", "root": ("get_driver_notes", 1),
     "failure": ("validate_load", 1),
     "description": "The driver notes come back for every van, and VAN-2's Mill Lane closure leads the model to drop Mill Lane from VAN-1's round."},
    {"id": "zzs_icecream_stock_page", "kind": "truncated_result", "input": "v5", "root": ("stock_levels", 1),
     "failure": ("validate_load", 1),
     "description": "The stock count returns only the first five lines of the van's eight, so sorbet and slush are never reordered."},
    {"id": "zzs_icecream_depot_van", "kind": "subagent_wrong_entity", "input": "v2", "root": ("response", 3),
     "failure": ("validate_load", 1),
     "description": "The depot sub-agent holds the depot collection bay for VAN-1 while planning VAN-2's restock."},
    {"id": "zzs_icecream_rain_demand", "kind": "tool_ignores_argument", "input": "v3", "root": ("forecast_footfall", 1),
     "failure": ("validate_load", 1),
     "description": "The footfall forecast ignores weather='rain' and returns sunny-day footfall, so the reorder is three times too large."},
]


def expected_boxes(van, stops, weather, stock):
    sales = sum(FOOTFALL[s] for s in stops) * WEATHER[weather]
    out = {}
    for sku, share in SHARE.items():
        need = share * sales - stock.get(sku, 0)
        if need > 0:
            out[sku] = math.ceil(need / 12)
    return out


@function_tool
def get_round(van: str, day: str) -> list:
    """The stops of a van's round on a weekday."""
    if kit.on("zzs_icecream_round_day"):
        day = "tue"
    return ROUNDS[(van, day)]


@function_tool
def get_driver_notes(van: str) -> list:
    """Drivers' notes for a van."""
    if kit.on("zzs_icecream_other_van_notes"):
        return [n["note"] for n in NOTES]
    return [n["note"] for n in NOTES if n["van"] == van]


@function_tool
def forecast_footfall(stops: list[str], weather: str) -> dict:
    """Expected customers per stop for the weather."""
    factor = 1.0 if kit.on("zzs_icecream_rain_demand") else WEATHER[weather]
    return {s: round(FOOTFALL[s] * factor, 1) for s in stops}


@function_tool
def stock_levels(van: str) -> dict:
    """Units on board, per line."""
    items = list(STOCK[van].items())
    if kit.on("zzs_icecream_stock_page"):
        items = items[:5]
    return dict(items)


@function_tool
def check_depot(van: str, day: str) -> dict:
    """Hold a collection bay at the depot for a van's restock."""
    return {"van": van, "day": day, "bay": 2 + len(day) % 3, "hold_ref": f"H-{van[-1]}-{day}"}


@function_tool
def place_reorder(van: str, day: str, stops: list[str], boxes_json: str, hold_ref: str) -> dict:
    """Place the depot reorder for the round (boxes per line as a JSON object)."""
    ref = f"RO-{van[-1]}-{day}"
    boxes = json.loads(boxes_json)
    ORDERS[ref] = {"van": van, "day": day, "stops": stops, "boxes": boxes, "hold_ref": hold_ref}
    return {"reorder": ref, "lines": len(boxes)}


def _validate(reorder: str, weather: str) -> dict:
    o = ORDERS[reorder]
    closed = [n["note"] for n in NOTES if n["van"] == o["van"] and "skip" in n["note"]]
    round_ = [s for s in ROUNDS[(o["van"], o["day"])] if not any(s in c for c in closed)]
    if o["stops"] != round_:
        raise ValueError(f"{reorder}: stops {o['stops']} differ from {o['van']}'s {o['day']} round {round_}")
    if not o["hold_ref"].startswith(f"H-{o['van'][-1]}-"):
        raise ValueError(f"{reorder}: depot hold {o['hold_ref']} is not held for {o['van']}")
    want = expected_boxes(o["van"], round_, weather, STOCK[o["van"]])
    if o["boxes"] != want:
        raise ValueError(f"{reorder}: boxes {o['boxes']} differ from the stock plan {want}")
    return {"reorder": reorder, "valid": True}


validate_load = function_tool(_validate, name_override="validate_load",
                              description_override="Check the reorder against the round and stock rules.",
                              failure_error_function=None)


def brain(inp):
    def policy(request):
        body = request.body
        instructions = body.get("instructions") or ""
        got = dict(tool_outputs(request))
        van = inp["van"]
        if instructions.startswith("#depot"):
            if "check_depot" not in got:
                text = next(i["content"] for i in body["input"] if isinstance(i, dict) and i.get("role") == "user")
                ask = json.loads(text)
                held_for = "VAN-1" if kit.on("zzs_icecream_depot_van") else ask["van"]
                return Reply(tool_calls=(tool_call("check_depot", {"van": held_for, "day": ask["day"]}),))
            return json.dumps(got["check_depot"])
        if "get_round" not in got:
            return Reply(tool_calls=(tool_call("get_round", {"van": van, "day": inp["day"]}),
                                     tool_call("get_driver_notes", {"van": van})))
        stops = list(got["get_round"])
        for note in got["get_driver_notes"]:
            if "skip" in note:
                stops = [s for s in stops if s not in note]
        if "depot_desk" not in got:
            return Reply(tool_calls=(tool_call("depot_desk", {"input": json.dumps({"van": van, "day": inp["day"]})}),))
        if "stock_levels" not in got:
            return Reply(tool_calls=(tool_call("stock_levels", {"van": van}),))
        if "forecast_footfall" not in got:
            return Reply(tool_calls=(tool_call("forecast_footfall", {"stops": stops, "weather": inp["weather"]}),))
        sales = sum(got["forecast_footfall"].values())
        stock = got["stock_levels"]
        boxes = {}
        for sku, units in stock.items():
            need = SHARE[sku] * sales - units
            if need > 0:
                boxes[sku] = math.ceil(need / 12)
        if "place_reorder" not in got:
            desk = got["depot_desk"]
            desk = json.loads(desk) if isinstance(desk, str) else desk
            return Reply(tool_calls=(tool_call("place_reorder", {"van": van, "day": inp["day"], "stops": stops,
                                                                 "boxes_json": json.dumps(boxes), "hold_ref": desk["hold_ref"]}),))
        if "validate_load" not in got:
            return Reply(tool_calls=(tool_call("validate_load", {"reorder": got["place_reorder"]["reorder"],
                                                                 "weather": inp["weather"]}),))
        return f"Reorder {got['place_reorder']['reorder']} placed for {van}."

    return policy


def record(server, inp, path):
    server.use(brain(inp))
    ORDERS.clear()
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, task=f"reorder for {inp['van']} {inp['day']}")])
    depot = Agent(name="depot_desk", instructions="#depot Hold a collection bay at the depot.", model=server.model,
                  tools=[check_depot])
    agent = Agent(name="van_planner", instructions="#van Plan the van's reorder with the tools.", model=server.model,
                  tools=[get_round, get_driver_notes, forecast_footfall, stock_levels,
                         depot.as_tool(tool_name="depot_desk", tool_description="Ask the depot desk to hold a collection bay."),
                         place_reorder, validate_load])

    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(agent, inp["text"], max_turns=20, run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
