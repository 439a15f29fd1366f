"""Bike share rebalancing (OpenAI Agents SDK, Chat Completions): plans a truck's moves before a demand window.

Shape: a dispatcher `Agent` with function tools, run by `Runner`: station list, status per station (parallel
calls, a failed call retried by the model), demand forecast, truck capacity, a `move_planner` sub-agent (an
agent used as a tool), a moves parser, the truck schedule and `validate_plan` (the operator's rebalancing rules,
raising), then the dispatcher's answer.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any


sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit
from common import MODEL, chat_messages, system_text, text_of, tool_calls_made


NAME = "bikeshare-rebalance"
ROUTE = "openai_agents"
DOMAIN = "bike share rebalancing"
EXT = "jsonl"
SHAPE = ("Agents SDK (Chat Completions): dispatcher agent, tools for stations, status (parallel, retried), "
         "forecast, truck capacity, move_planner sub-agent as a tool, moves parser, truck schedule, validator "
         "tool; 33-39 steps")

MIN_AFTER = 3     # bikes a station must keep through the window
TARGET = 5        # what the planner fills a short station to

# station id -> (name, docks, active)
REGISTRY = {
    "S-01": ("Maple & 3rd", 15, True), "S-02": ("Civic Center", 20, True), "S-03": ("Riverside Park", 18, True),
    "S-04": ("Harbor Row", 12, True), "S-05": ("Tech Campus", 24, True),
    "S-21": ("Millbrook Station", 16, True), "S-22": ("Elm Court", 14, True), "S-23": ("Millbrook Library", 20, True),
    "S-24": ("Granary Square", 12, True), "S-27": ("Mill Lane", 12, False),
    "S-31": ("Cathedral Steps", 20, True), "S-32": ("Weavers Alley", 15, True), "S-33": ("Old Market", 18, True),
    "S-34": ("Town Hall", 22, True), "S-35": ("Bridge Gate", 12, True),
    "S-06": ("Eastgate Mall", 16, True), "S-07": ("Eastgate Clinic", 14, True), "S-08": ("Foundry Lofts", 18, True),
    "S-09": ("Kiln Street", 12, True),
    "S-41": ("Central Terminal", 30, True), "S-42": ("Stadium North", 25, True), "S-43": ("Ferry Landing", 15, True),
    "S-44": ("Pier 9", 12, True),
    "S-51": ("Northfield Green", 16, True), "S-52": ("Orchard Way", 14, True), "S-53": ("Northfield Depot", 20, True),
    "S-54": ("Quarry Road", 12, True),
    "S-61": ("Southbank Quay", 18, True), "S-62": ("Arts Centre", 18, True), "S-63": ("Tannery Yard", 15, True),
    "S-64": ("Southbank Pool", 20, True), "S-65": ("Rope Walk", 12, True), "S-66": ("Gasworks", 10, False),
    "S-71": ("Westpark Gates", 15, True), "S-72": ("Sports Ground", 15, True), "S-73": ("Lakeside Cafe", 10, True),
    "S-81": ("Terminal 1", 30, True), "S-82": ("Long Stay", 24, True), "S-83": ("Cargo Road", 20, True),
}
ZONES = {
    "Z-Riverside": ["S-01", "S-02", "S-03", "S-04", "S-05"],
    "Z-Millbrook": ["S-21", "S-22", "S-23", "S-24", "S-27"],
    "Z-Old Town": ["S-31", "S-32", "S-33", "S-34", "S-35"],
    "Z-Eastgate": ["S-06", "S-07", "S-08", "S-09"],
    "Z-Harbourfront": ["S-41", "S-42", "S-43", "S-44"],
    "Z-Northfield": ["S-51", "S-52", "S-53", "S-54"],
    "Z-Southbank": ["S-61", "S-62", "S-63", "S-64", "S-65", "S-66"],
    "Z-Westpark": ["S-71", "S-72", "S-73"],
    "Z-Airport": ["S-81", "S-82", "S-83"],
}
TRUCKS = {"T-2": 15, "T-3": 12, "T-7": 12}

# input -> zone, date, window hour, truck, bikes now, forecast net flow by hour, stations whose status call fails once,
# whether the truck's fleet record fails once
INPUTS: dict[str, dict[str, Any]] = {
    "riverside-0916": {"zone": "Z-Riverside", "date": "2024-09-16", "hour": 7, "truck": "T-3",
                       "bikes": {"S-01": 6, "S-02": 8, "S-03": 14, "S-04": 3, "S-05": 5},
                       "flow": {7: {"S-01": -5, "S-02": 6, "S-03": -2, "S-04": -1, "S-05": 10},
                                17: {"S-01": 4, "S-02": -6, "S-03": 1, "S-04": 3, "S-05": -8}},
                       "flaky": [], "fleet_hiccup": False},
    "millbrook-0917": {"zone": "Z-Millbrook", "date": "2024-09-17", "hour": 7, "truck": "T-3",
                       "bikes": {"S-21": 12, "S-22": 4, "S-23": 9, "S-24": 6, "S-27": 0},
                       "flow": {7: {"S-21": -2, "S-22": -2, "S-23": 3, "S-24": 0, "S-27": 0}},
                       "flaky": ["S-22"], "fleet_hiccup": False},
    "oldtown-0918": {"zone": "Z-Old Town", "date": "2024-09-18", "hour": 8, "truck": "T-7",
                     "bikes": {"S-31": 16, "S-32": 2, "S-33": 1, "S-34": 17, "S-35": 3},
                     "flow": {8: {"S-31": 2, "S-32": -1, "S-33": -2, "S-34": -1, "S-35": -1}},
                     "flaky": [], "fleet_hiccup": True},
    "eastgate-0919": {"zone": "Z-Eastgate", "date": "2024-09-19", "hour": 7, "truck": "T-3",
                      "bikes": {"S-06": 2, "S-07": 9, "S-08": 4, "S-09": 3},
                      "flow": {7: {"S-06": -1, "S-07": 1, "S-08": 2, "S-09": -1}},
                      "flaky": [], "fleet_hiccup": False},
    "harbourfront-0920": {"zone": "Z-Harbourfront", "date": "2024-09-20", "hour": 17, "truck": "T-3",
                          "bikes": {"S-41": 26, "S-42": 1, "S-43": 4, "S-44": 8},
                          "flow": {17: {"S-41": -1, "S-42": -6, "S-43": -1, "S-44": 1}},
                          "flaky": ["S-43"], "fleet_hiccup": False},
    # reference inputs
    "northfield-0909": {"zone": "Z-Northfield", "date": "2024-09-09", "hour": 7, "truck": "T-2",
                        "bikes": {"S-51": 10, "S-52": 2, "S-53": 15, "S-54": 5},
                        "flow": {7: {"S-51": -3, "S-52": 0, "S-53": 1, "S-54": -1}},
                        "flaky": ["S-53"], "fleet_hiccup": False},
    "southbank-0910": {"zone": "Z-Southbank", "date": "2024-09-10", "hour": 8, "truck": "T-3",
                       "bikes": {"S-61": 3, "S-62": 14, "S-63": 7, "S-64": 6, "S-65": 9, "S-66": 0},
                       "flow": {8: {"S-61": -2, "S-62": 2, "S-63": -1, "S-64": -3, "S-65": 0, "S-66": 0}},
                       "flaky": [], "fleet_hiccup": False},
    "westpark-0911": {"zone": "Z-Westpark", "date": "2024-09-11", "hour": 17, "truck": "T-7",
                      "bikes": {"S-71": 12, "S-72": 11, "S-73": 4},
                      "flow": {17: {"S-71": 1, "S-72": -9, "S-73": 0}},
                      "flaky": [], "fleet_hiccup": True},
    "airport-0912": {"zone": "Z-Airport", "date": "2024-09-12", "hour": 7, "truck": "T-2",
                     "bikes": {"S-81": 25, "S-82": 2, "S-83": 6},
                     "flow": {7: {"S-81": -4, "S-82": -5, "S-83": -2}},
                     "flaky": ["S-82"], "fleet_hiccup": False},
}

CASES = [
    {"case": "zzh_bike_01", "switch": "bike.forecast_hour", "input": "riverside-0916", "fault_kind": "wrong_tool_args",
     "root": ("generation fake-model", 3), "failure": ("validate_plan", 1),
     "description": "The dispatcher model asks the demand forecast for hour 17 instead of the 07:00 window, so "
                    "the moves are planned for evening flows and Maple & 3rd runs dry in the morning."},
    {"case": "zzh_bike_02", "switch": "bike.active_filter", "input": "millbrook-0917",
     "fault_kind": "tool_ignores_argument",
     "root": ("list_stations", 1), "failure": ("validate_plan", 1),
     "description": "The station list ignores active_only=true and returns Mill Lane (S-27), decommissioned, "
                    "which the planner then fills with five bikes."},
    {"case": "zzh_bike_03", "switch": "bike.fleet_fallback", "input": "oldtown-0918", "fault_kind": "swallowed_error",
     "root": ("truck_capacity", 1), "failure": ("validate_plan", 1),
     "description": "The truck capacity tool catches the fleet API's 503 for T-7 and answers the generic 20 bikes "
                    "instead of failing, so the schedule loads 13 bikes on a 12-bike truck."},
    {"case": "zzh_bike_04", "switch": "bike.status_recall", "input": "eastgate-0919",
     "fault_kind": "hallucinated_value",
     "root": ("generation fake-model", 5), "failure": ("validate_plan", 1),
     "description": "Handing the stations to the move planner, the dispatcher model states 14 bikes at Foundry "
                    "Lofts (S-08) where the status call returned 4, and the plan takes 7 bikes from it."},
    {"case": "zzh_bike_05", "switch": "bike.moves_digits", "input": "harbourfront-0920", "fault_kind": "lossy_parsing",
     "root": ("parse_moves", 1), "failure": ("validate_plan", 1),
     "description": "The moves parser's pattern reads a single-digit count, so 'S-41 -> S-42: 10 bikes' is "
                    "skipped and Stadium North gets nothing."},
]
REFS = ["northfield-0909", "southbank-0910", "westpark-0911", "airport-0912"]

_CALLS: dict[str, int] = {}


class FleetApiError(RuntimeError):
    """The fleet API did not answer."""


# -- the model ------------------------------------------------------------------------------------------


def plan_moves(stations: list[dict]) -> list[tuple[str, str, int]]:
    """The move planner's arithmetic: fill short stations to TARGET from stations above it."""
    need = {s["id"]: TARGET - s["projected"] for s in stations if s["projected"] < TARGET}
    give = {s["id"]: max(0, min(s["bikes"], s["projected"] - TARGET)) for s in stations}
    give = {k: v for k, v in give.items() if v > 0}
    moves = []
    for dest in sorted(need, key=lambda k: (-need[k], k)):
        want = need[dest]
        while want > 0 and give:
            src = sorted(give, key=lambda k: (-give[k], k))[0]
            take = min(want, give[src])
            moves.append((src, dest, take))
            want -= take
            give[src] -= take
            if give[src] == 0:
                del give[src]
    return moves


def _dispatcher(messages: list[dict]) -> Any:
    from trajdebug.testing import Reply, tool_call

    task = text_of(next(m for m in messages if m.get("role") == "user"))
    zone = re.search(r"zone (Z-[\w ]+?) for", task).group(1)
    hour = int(re.search(r"the (\d\d):00 window", task).group(1))
    truck = re.search(r"truck (T-\d+)", task).group(1)
    calls = tool_calls_made(messages)
    ids = [c.get("id") for m in messages for c in (m.get("tool_calls") or [])]
    results = {m.get("tool_call_id"): text_of(m) for m in messages if m.get("role") == "tool"}
    done: dict[str, list[tuple[dict, Any]]] = {}
    failed: list[tuple[str, dict]] = []
    for (name, args), cid in zip(calls, ids, strict=True):
        raw = results.get(cid, "")
        if raw.startswith("An error occurred"):
            failed.append((name, args))
            continue
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        done.setdefault(name, []).append((args, value))
    ok_args = [a for entries in done.values() for a, _ in entries]
    retry = [(n, a) for n, a in failed if a not in ok_args]
    if retry:
        return Reply(tool_calls=tuple(tool_call(n, a) for n, a in retry))
    if "list_stations" not in done:
        return Reply(tool_calls=(tool_call("list_stations", {"zone": zone, "active_only": True}),))
    stations = done["list_stations"][0][1]["stations"]
    status = {a["station_id"]: v for a, v in done.get("station_status", [])}
    if len(status) < len(stations):
        return Reply(tool_calls=tuple(tool_call("station_status", {"station_id": s["id"]})
                                      for s in stations if s["id"] not in status))
    if "demand_forecast" not in done:
        asked = 17 if kit.on("bike.forecast_hour") else hour
        return Reply(tool_calls=(tool_call("demand_forecast", {"zone": zone, "hour": asked}),))
    if "truck_capacity" not in done:
        return Reply(tool_calls=(tool_call("truck_capacity", {"truck_id": truck}),))
    if "move_planner" not in done:
        flow = done["demand_forecast"][0][1]["net_flow"]
        rows = []
        for s in stations:
            bikes = status[s["id"]]["bikes"]
            if kit.on("bike.status_recall") and s["id"] == "S-08":
                bikes = 14
            rows.append({"id": s["id"], "docks": s["docks"], "bikes": bikes, "net_flow": flow[s["id"]],
                         "projected": bikes + flow[s["id"]]})
        payload = {"zone": zone, "window": f"{hour:02d}:00", "truck_capacity": done["truck_capacity"][0][1]["capacity"],
                   "stations": rows}
        return Reply(tool_calls=(tool_call("move_planner", {"input": json.dumps(payload)}),))
    if "parse_moves" not in done:
        return Reply(tool_calls=(tool_call("parse_moves", {"text": done["move_planner"][0][1]}),))
    if "schedule_truck" not in done:
        moves = done["parse_moves"][0][1]["moves"]
        return Reply(tool_calls=(tool_call("schedule_truck", {"truck_id": truck, "capacity":
                                                              done["truck_capacity"][0][1]["capacity"],
                                                              "moves_json": json.dumps(moves)}),))
    if "validate_plan" not in done:
        plan = {"zone": zone, "date_window": f"{hour:02d}:00", "window_hour": hour, "truck_id": truck,
                "moves": done["parse_moves"][0][1]["moves"], "trips": done["schedule_truck"][0][1]["trips"]}
        return Reply(tool_calls=(tool_call("validate_plan", {"plan_json": json.dumps(plan)}),))
    trips = done["schedule_truck"][0][1]["trips"]
    return f"Plan for {zone} at {hour:02d}:00 is approved: {len(trips)} trip(s) on {truck}."


def brain(request: Any) -> Any:
    messages = chat_messages(request)
    system = system_text(messages)
    if system.startswith("You plan bike moves"):
        payload = json.loads(text_of([m for m in messages if m.get("role") == "user"][-1]))
        moves = plan_moves(payload["stations"])
        if not moves:
            return "No moves needed."
        return "; ".join(f"{a} -> {b}: {n} bike{'s' if n != 1 else ''}" for a, b, n in moves)
    if system.startswith("You dispatch rebalancing trucks"):
        return _dispatcher(messages)
    return "I cannot help with that."


# -- tools -------------------------------------------------------------------------------------------------

_INPUT: dict[str, Any] = {}


def _tools() -> list[Any]:
    from agents import function_tool

    @function_tool
    def list_stations(zone: str, active_only: bool) -> str:
        """The stations of a zone with their dock counts.

        Args:
            zone: The zone id.
            active_only: Leave out stations that are closed or decommissioned.
        """
        out = []
        for sid in ZONES[zone]:
            name, docks, active = REGISTRY[sid]
            if active_only and not active and not kit.on("bike.active_filter"):
                continue
            out.append({"id": sid, "name": name, "docks": docks})
        return json.dumps({"zone": zone, "stations": out})

    @function_tool
    def station_status(station_id: str) -> str:
        """Live status of a station: bikes docked and free docks.

        Args:
            station_id: The station id.
        """
        inp = _INPUT["value"]
        key = f"status:{station_id}"
        _CALLS[key] = _CALLS.get(key, 0) + 1
        if station_id in inp["flaky"] and _CALLS[key] == 1:
            raise TimeoutError(f"station {station_id} gateway did not answer within 3 s")
        bikes = inp["bikes"][station_id]
        return json.dumps({"station_id": station_id, "bikes": bikes, "free_docks": REGISTRY[station_id][1] - bikes})

    @function_tool
    def demand_forecast(zone: str, hour: int) -> str:
        """Forecast net bike flow per station over the hour starting at `hour` (negative: bikes leave).

        Args:
            zone: The zone id.
            hour: Start hour of the window, 0-23.
        """
        flow = _INPUT["value"]["flow"].get(hour)
        if flow is None:
            flow = dict.fromkeys(ZONES[zone], 0)
        return json.dumps({"zone": zone, "hour": hour, "net_flow": dict(flow)})

    @function_tool
    def truck_capacity(truck_id: str) -> str:
        """How many bikes a truck carries, from the fleet record.

        Args:
            truck_id: The truck id.
        """
        _CALLS["fleet"] = _CALLS.get("fleet", 0) + 1
        try:
            if _INPUT["value"]["fleet_hiccup"] and _CALLS["fleet"] == 1:
                raise FleetApiError("fleet API 503 Service Unavailable")
            capacity = TRUCKS[truck_id]
        except FleetApiError:
            if not kit.on("bike.fleet_fallback"):
                raise
            capacity = 20
        return json.dumps({"truck_id": truck_id, "capacity": capacity})

    @function_tool
    def parse_moves(text: str) -> str:
        """Read the move planner's text into moves.

        Args:
            text: The planner's moves, 'SRC -> DEST: N bikes; ...'.
        """
        count = r"(\d)" if kit.on("bike.moves_digits") else r"(\d+)"
        pattern = re.compile(r"(S-\d+) -> (S-\d+): " + count + r" bikes?\b")
        return json.dumps({"moves": [{"from": a, "to": b, "bikes": int(n)} for a, b, n in pattern.findall(text)]})

    @function_tool
    def schedule_truck(truck_id: str, capacity: int, moves_json: str) -> str:
        """Group the moves into truck trips of at most `capacity` bikes each.

        Args:
            truck_id: The truck id.
            capacity: Bikes the truck carries.
            moves_json: The moves as a JSON list of {from, to, bikes}.
        """
        trips, current, load = [], [], 0
        for m in json.loads(moves_json):
            if current and load + m["bikes"] > capacity:
                trips.append({"trip": len(trips) + 1, "moves": current, "load": load})
                current, load = [], 0
            current.append(m)
            load += m["bikes"]
        if current:
            trips.append({"trip": len(trips) + 1, "moves": current, "load": load})
        return json.dumps({"truck_id": truck_id, "trips": trips})

    @function_tool(failure_error_function=None)
    def validate_plan(plan_json: str) -> str:
        """Check a rebalancing plan against the operator's rules before it is sent to the driver.

        Args:
            plan_json: The plan: zone, window_hour, truck_id, moves, trips.
        """
        plan = json.loads(plan_json)
        inp = _INPUT["value"]
        for m in plan["moves"]:
            for sid in (m["from"], m["to"]):
                if not REGISTRY[sid][2]:
                    raise ValueError(f"move {m['from']} -> {m['to']} ({m['bikes']} bikes) uses {sid} "
                                     f"({REGISTRY[sid][0]}), which is decommissioned")
        capacity = TRUCKS[plan["truck_id"]]
        for t in plan["trips"]:
            if t["load"] > capacity:
                raise ValueError(f"trip {t['trip']} carries {t['load']} bikes; truck {plan['truck_id']} holds {capacity}")
        taken: dict[str, int] = {}
        for m in plan["moves"]:
            taken[m["from"]] = taken.get(m["from"], 0) + m["bikes"]
        for sid, n in sorted(taken.items()):
            if n > inp["bikes"][sid]:
                raise ValueError(f"moves take {n} bikes from {sid} ({REGISTRY[sid][0]}), which holds "
                                 f"{inp['bikes'][sid]}")
        flow = inp["flow"][plan["window_hour"]]
        for sid in ZONES[plan["zone"]]:
            if not REGISTRY[sid][2]:
                continue
            after = inp["bikes"][sid] + sum(m["bikes"] for m in plan["moves"] if m["to"] == sid) - taken.get(sid, 0)
            projected = after + flow[sid]
            if projected < MIN_AFTER or projected > REGISTRY[sid][1]:
                raise ValueError(f"{sid} ({REGISTRY[sid][0]}) is projected at {projected} bikes by the end of the "
                                 f"{plan['window_hour']:02d}:00 window (docks {REGISTRY[sid][1]}, minimum {MIN_AFTER})")
        return "plan approved"

    return [list_stations, station_status, demand_forecast, truck_capacity, parse_moves, schedule_truck, validate_plan]


async def _run(inp_id: str, path: Path, server: Any) -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
    from agents.exceptions import AgentsException
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    inp = INPUTS[inp_id]
    client = AsyncOpenAI(base_url=server.base_url, api_key="ops-local", max_retries=0)
    model = OpenAIChatCompletionsModel(model=MODEL, openai_client=client)
    planner = Agent(name="move_planner", model=model,
                    instructions="You plan bike moves between stations: fill every station projected under "
                                 f"{TARGET} bikes from stations above it. Answer 'SRC -> DEST: N bikes; ...'.")
    tools = _tools()
    tools.insert(4, planner.as_tool(tool_name="move_planner",
                                    tool_description="Plan moves from station projections (JSON input)."))
    dispatcher = Agent(name="dispatcher", model=model, tools=tools,
                       instructions="You dispatch rebalancing trucks for the bike share. Use the tools: stations, "
                                    "status, forecast for the window, truck capacity, the move planner, then parse, "
                                    "schedule and validate the plan.")
    processor = TrajdebugProcessor(path=path, name=NAME)
    set_trace_processors([processor])
    task = (f"Rebalance zone {inp['zone']} for the {inp['hour']:02d}:00 window on {inp['date']} "
            f"with truck {inp['truck']}.")
    try:
        await Runner.run(dispatcher, task, max_turns=20,
                         run_config=RunConfig(workflow_name=NAME, trace_metadata={"task": task}))
    except AgentsException:
        pass
    finally:
        await client.close()


def record(inp_id: str, path: Path, server: Any) -> None:
    _CALLS.clear()
    _INPUT["value"] = INPUTS[inp_id]
    asyncio.run(_run(inp_id, path, server))
