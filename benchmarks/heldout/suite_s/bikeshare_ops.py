"""Bike-share rebalancing (openai_agents route): a dispatcher agent with alert and station tools, a dock
inspector sub-agent called as a tool, and hand-offs to the north or south depot agent."""

from __future__ import annotations

import json
from pathlib import Path

from agents import (
    Agent,
    AgentsException,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    function_tool,
    set_trace_processors,
)
from benchmarks.heldout.suite_s import kit
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call


AGENT = "bikeshare-dispatch"
ROUTE = "openai_agents"
EXT = "jsonl"
DOMAIN = "bike-share fleet rebalancing"
SHAPE = "dispatcher agent: alert board, donor station status, dock-inspector sub-agent via as_tool (search + dock report); hand-off to north or south depot agent: van schedule, bike move, job confirmation"

# id -> name, zone, bikes docked, docks, ebike battery avg %
STATIONS = {
    "ST-101": ("Kings Cross Square", "north", 3, 24, 71), "ST-118": ("Kings Cross Road", "south", 9, 13, 66),
    "ST-104": ("Canal Basin", "north", 21, 25, 58), "ST-107": ("Mill Street", "north", 18, 20, 64),
    "ST-121": ("Harbour Gate", "south", 2, 20, 75), "ST-125": ("Market Hall", "south", 19, 22, 62),
    "ST-130": ("Station Approach", "south", 1, 30, 70), "ST-133": ("Riverside Walk", "south", 22, 26, 55),
    "ST-110": ("Park Lodge", "north", 0, 18, 68), "ST-112": ("Brewery Yard", "north", 17, 19, 61),
    "ST-140": ("Old Quay", "south", 23, 24, 59), "ST-114": ("Tannery Lane", "north", 4, 16, 73),
}
# region -> alerts (id, station, level, donor)
BOARDS = {
    "R-N1": [("AL-501", "ST-101", "low", "ST-104"), ("AL-502", "ST-114", "low", "ST-112"), ("AL-503", "ST-110", "low", "ST-107")],
    "R-S4": [("AL-511", "ST-118", "high", "ST-125"), ("AL-512", "ST-130", "low", "ST-140")],
    "R-S1": [("AL-521", "ST-121", "high", "ST-125"), ("AL-522", "ST-130", "low", "ST-133")],
    "R-M1": [("AL-531", "ST-114", "low", "ST-112"), ("AL-532", "ST-130", "low", "ST-140"), ("AL-533", "ST-121", "low", "ST-133"),
             ("AL-534", "ST-110", "critical", "ST-104")],
    "R-N3": [("AL-541", "ST-114", "high", "ST-104"), ("AL-542", "ST-101", "low", "ST-112")],
    "R-S2": [("AL-551", "ST-130", "high", "ST-140"), ("AL-552", "ST-121", "low", "ST-125")],
    "R-S3": [("AL-561", "ST-121", "high", "ST-133")],
    "R-N4": [("AL-571", "ST-110", "high", "ST-112"), ("AL-572", "ST-114", "low", "ST-107")],
    "R-M2": [("AL-581", "ST-101", "low", "ST-104"), ("AL-582", "ST-130", "critical", "ST-125")],
}

CASES = [
    {"case": "bikeshare_namesake_dock", "fault": "bk1", "kind": "subagent_wrong_entity", "root": "generation bike-model",
     "fail": "move_bikes", "marker": "ST-101", "input": "R-S4"},
    {"case": "bikeshare_move_direction", "fault": "bk2", "kind": "wrong_tool_args", "root": "generation bike-model",
     "fail": "move_bikes", "marker": '"from_station": "ST-121"', "input": "R-S1"},
    {"case": "bikeshare_battery_scale", "fault": "bk3", "kind": "unit_error", "root": "station_status",
     "fail": "confirm_job", "marker": '"ebike_battery_pct": 0.', "input": "R-N3"},
    {"case": "bikeshare_alert_page", "fault": "bk4", "kind": "truncated_result", "root": "alert_board",
     "fail": "confirm_job", "marker": '"count": 3}', "input": "R-M1"},
    {"case": "bikeshare_depot_handoff", "fault": "bk5", "kind": "wrong_routing", "root": "generation bike-model",
     "fail": "van_schedule", "marker": "transfer_to_south_depot", "input": "R-N4"},
]
REFS = ["R-N1", "R-S2", "R-S3", "R-M2"]

LEVEL = {"critical": 0, "high": 1, "low": 2}


class OpsError(RuntimeError):
    pass


@function_tool
def alert_board(region: str) -> str:
    """Open rebalancing alerts for a region, oldest first."""
    alerts = [{"alert": a, "station": s, "level": lv, "donor": d} for a, s, lv, d in BOARDS[region]]
    if kit.active("bk4"):
        alerts = alerts[:3]
    return json.dumps({"region": region, "alerts": alerts, "count": len(alerts)})


@function_tool
def station_status(station_id: str) -> str:
    """Live status of a docking station."""
    name, zone, bikes, docks, batt = STATIONS[station_id]
    value = batt / 100 if kit.active("bk3") else batt
    return json.dumps({"station": station_id, "name": name, "zone": zone, "bikes": bikes, "docks": docks,
                       "ebike_battery_pct": value})


@function_tool
def find_station(name: str) -> str:
    """Search stations by name."""
    words = name.lower().split()
    hits = [{"station": sid, "name": v[0], "zone": v[1]} for sid, v in STATIONS.items()
            if all(w in v[0].lower() for w in words[:2])]
    return json.dumps(hits)


@function_tool
def dock_report(station_id: str) -> str:
    """Dock-by-dock report of a station: free and broken docks."""
    name, _zone, bikes, docks, _ = STATIONS[station_id]
    broken = 1
    return json.dumps({"station": station_id, "name": name, "free_docks": docks - bikes - broken, "broken": broken})


@function_tool(failure_error_function=None)
def van_schedule(depot: str, station_id: str) -> str:
    """Schedule a rebalancing van from a depot to a station."""
    zone = STATIONS[station_id][1]
    if zone != depot:
        raise OpsError(f"van scheduler: {station_id} is outside the {depot} depot service area")
    return json.dumps({"van": f"VAN-{depot[0].upper()}3", "station": station_id, "eta_min": 25})


@function_tool(failure_error_function=None)
def move_bikes(from_station: str, to_station: str, count: int) -> str:
    """Move bikes between stations with the van."""
    _, _, bikes, _, _ = STATIONS[from_station]
    _, _, tb, tdocks, _ = STATIONS[to_station]
    free = tdocks - tb - 1
    if count > bikes - 2:
        raise OpsError(f"fleet API 409: {from_station} has {bikes} bikes docked, cannot collect {count}")
    if count > free:
        raise OpsError(f"fleet API 409: {to_station} has {free} free docks, cannot deliver {count}")
    return json.dumps({"moved": count, "from": from_station, "to": to_station})


@function_tool(failure_error_function=None)
def confirm_job(region: str, alert: str, moved: int, donor_battery_pct: float) -> str:
    """Close a rebalancing job with operations."""
    open_alerts = sorted(BOARDS[region], key=lambda a: LEVEL[a[2]])
    if open_alerts[0][2] == "critical" and open_alerts[0][0] != alert:
        raise OpsError(f"ops API 412: critical alert {open_alerts[0][0]} in {region} must be served before {alert}")
    if donor_battery_pct < 20:
        raise OpsError(f"ops API 422: e-bikes averaging {donor_battery_pct}% charge cannot be redeployed")
    return json.dumps({"alert": alert, "closed": True, "moved": moved})


def _history(msgs):
    names, results = {}, {}
    for m in msgs:
        for c in m.get("tool_calls") or ():
            names[c["id"]] = c["function"]["name"]
        if m["role"] == "tool":
            results.setdefault(names.get(m["tool_call_id"]), []).append(m["content"])
    return results


def _call(name, args):
    return Reply(tool_calls=(tool_call(name, args),))


def dispatcher(msgs, user):
    got = _history(msgs)
    region = user.split()[-1]
    if "alert_board" not in got:
        return _call("alert_board", {"region": region})
    board = json.loads(got["alert_board"][0])
    alert = sorted(board["alerts"], key=lambda a: LEVEL[a["level"]])[0]
    if "station_status" not in got:
        return _call("station_status", {"station_id": alert["donor"]})
    if "inspect_docks" not in got:
        return _call("inspect_docks", {"input": f"Free docks at {STATIONS[alert['station']][0]} for alert {alert['alert']}"})
    zone = STATIONS[alert["station"]][1]
    if kit.active("bk5"):
        zone = "south" if zone == "north" else "north"
    if f"transfer_to_{zone}_depot" not in got:
        return _call(f"transfer_to_{zone}_depot", {})
    return "Handed to the depot."


def depot(msgs, user, name):
    got = _history(msgs)
    region = user.split()[-1]
    board = json.loads(got["alert_board"][0])
    alert = sorted(board["alerts"], key=lambda a: LEVEL[a["level"]])[0]
    donor = json.loads(got["station_status"][0])
    docks = json.loads(got["inspect_docks"][0])
    if "van_schedule" not in got:
        return _call("van_schedule", {"depot": name, "station_id": alert["station"]})
    count = min(docks["free_docks"], donor["bikes"] - 2)
    if "move_bikes" not in got:
        src, dst = donor["station"], alert["station"]
        if kit.active("bk2"):
            src, dst = dst, src
        return _call("move_bikes", {"from_station": src, "to_station": dst, "count": count})
    if "confirm_job" not in got:
        return _call("confirm_job", {"region": region, "alert": alert["alert"], "moved": count,
                                     "donor_battery_pct": donor["ebike_battery_pct"]})
    return f"Alert {alert['alert']} served: {count} bikes moved."


def inspector(msgs):
    task = next(m["content"] for m in msgs if m["role"] == "user")
    name = task.split(" at ", 1)[1].split(" for alert")[0]
    got = _history(msgs)
    if "find_station" not in got:
        return _call("find_station", {"name": name})
    hits = json.loads(got["find_station"][0])
    pick = next(h for h in hits if h["name"] == name)
    if kit.active("bk1"):
        pick = next((h for h in hits if h["name"] != name), pick)
    if "dock_report" not in got:
        return _call("dock_report", {"station_id": pick["station"]})
    rep = json.loads(got["dock_report"][0])
    return json.dumps({"station": rep["station"], "free_docks": rep["free_docks"]})


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"] if msgs[0]["role"] in ("system", "developer") else ""
    user = next(m["content"] for m in msgs if m["role"] == "user")
    if system.startswith("You inspect"):
        return inspector(msgs)
    if system.startswith("You run the north"):
        return depot(msgs, user, "north")
    if system.startswith("You run the south"):
        return depot(msgs, user, "south")
    return dispatcher(msgs, user)


def build(server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model="bike-model", openai_client=client)
    insp = Agent(name="dock_inspector", model=model, tools=[find_station, dock_report],
                 instructions="You inspect a station's docks and report free docks as JSON.")
    north = Agent(name="north_depot", model=model, tools=[van_schedule, move_bikes, confirm_job],
                  instructions="You run the north depot's vans: schedule, move bikes, confirm the job.")
    south = Agent(name="south_depot", model=model, tools=[van_schedule, move_bikes, confirm_job],
                  instructions="You run the south depot's vans: schedule, move bikes, confirm the job.")
    return Agent(name="dispatcher", model=model, handoffs=[north, south],
                 tools=[alert_board, station_status,
                        insp.as_tool(tool_name="inspect_docks", tool_description="Ask the dock inspector for free docks.")],
                 instructions="You dispatch rebalancing work: read alerts, check the donor, inspect docks, hand off to a depot.")


def record(region: str, path: Path, server) -> None:
    server.use(policy)
    set_trace_processors([TrajdebugProcessor(path=str(path), name=AGENT, task=f"rebalance region {region}")])
    try:
        Runner.run_sync(build(server), f"Serve the top alert in region {region}", max_turns=30,
                        run_config=RunConfig(workflow_name=AGENT, tracing_disabled=False))
    except (OpsError, AgentsException):
        pass
    finally:
        set_trace_processors([])
