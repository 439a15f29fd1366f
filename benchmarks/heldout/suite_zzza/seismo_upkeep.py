"""Maintenance planning for a seismograph network (route: sdk)."""
from __future__ import annotations

import json
import re

from openai import OpenAI

import trajdebug
import suitekit

NAME = "seismo-upkeep"
ROUTE = "sdk"
DOMAIN = "seismograph network: field maintenance"
SHAPE = ("long loop, ~50-60 steps: station register retrieval, then per station a telemetry tool, a parser, a "
         "score and a per-station run.state write; model plans the visits, parser, a route sub-agent (kind "
         "agent) with parallel travel-time tools, parts reservations, final work-order step with assertions")

ON = {"drift": False, "cache": False, "plan": False, "log": False, "page": False}

REGIONS = {
    "North Fells": ["NF01", "NF02", "NF03", "NF04", "NF05", "NF06", "NF07", "NF08", "NF09", "NF10", "NF11", "NF12"],
    "Coast": ["CO01", "CO02", "CO03", "CO04", "CO05", "CO06", "CO07", "CO08", "CO09", "CO10", "CO11"],
    "Basin": ["BA01", "BA02", "BA03", "BA04", "BA05", "BA06", "BA07", "BA08", "BA09", "BA10"],
    "Ridge": ["RI01", "RI02", "RI03", "RI04", "RI05", "RI06", "RI07", "RI08", "RI09"],
    "Delta": ["DE01", "DE02", "DE03", "DE04", "DE05", "DE06", "DE07", "DE08", "DE09", "DE10", "DE11", "DE12"],
}


def _tele(sid: str, idx: int) -> dict:
    # deterministic telemetry: a few stations in each region need a visit
    battery = 12.6 - (0.9 if idx % 5 == 2 else 0.0) - 0.05 * idx
    drift_us = 400 + 37 * idx if idx % 4 != 3 else 6200 + 11 * idx  # GPS clock drift
    power = "mains" if idx % 3 == 0 else "solar"
    if power == "mains":
        battery = 13.4
    return {"station": sid, "battery_v": round(battery, 2), "drift_us": drift_us, "power": power,
            "km": 8 + 6 * idx}


INPUTS = [
    {"region": "North Fells", "window_hours": 30, "crew": "Team A"},
    {"region": "Coast", "window_hours": 30, "crew": "Team B"},
    {"region": "Basin", "window_hours": 26, "crew": "Team A"},
    {"region": "Ridge", "window_hours": 28, "crew": "Team C"},
    {"region": "Delta", "window_hours": 30, "crew": "Team B"},
]

CASES = [
    dict(id="zs01", input=0, switch="drift", fault_kind="lossy_parsing",
         root=("read_health", 2), kind="parse", failure=("order_stops", 1),
         description="read_health keeps the number of a drift reading but drops its unit, so NF02's 474 us reads as 474 ms and the station gets a needless clock visit that overruns the crew window."),
    dict(id="zs02", input=1, switch="cache", fault_kind="stale_data",
         root=("fetch_health", 2), kind="tool", failure=("finalize_work_orders", 1),
         description="fetch_health serves CO02's telemetry from last month's cache (battery 12.5 V) although its battery has since fallen to 11.6 V, so the station gets no visit though it is on the outage list."),
    dict(id="zs03", input=2, switch="plan", fault_kind="plan_error",
         root=("plan_visits", 1), kind="llm", failure=("finalize_work_orders", 1),
         description="The model's visit plan lists every station of the region, routine ones included, so the work orders need 24.1 crew hours where 22 are available."),
    dict(id="zs04", input=3, switch="log", fault_kind="bad_memory_write",
         root=("log_station", 7), kind="state", failure=("reserve_parts", None),
         description="log_station, adding a visit note to RI06, copies RI07's whole health record (low solar battery) over RI06's entry, so mains-powered RI06 is planned a battery kit."),
    dict(id="zs05", input=4, switch="page", fault_kind="truncated_result",
         root=("list_stations", 1), kind="retrieval", failure=("finalize_work_orders", 1),
         description="The station register search returns only its first page of 10 stations, so DE11 and DE12 are never checked and the report covers 10 of the region's 12 stations."),
]


def policy(request):
    system = suitekit.system_of(request)
    user = suitekit.last_user(request)
    if system.startswith("Plan"):
        notes = json.loads(user)
        if ON["plan"]:
            visits = [n["station"] for n in notes["stations"]]
        else:
            visits = [n["station"] for n in notes["stations"] if n["urgency"] != "routine"]
        return json.dumps({"visits": visits, "order": "nearest first"})
    return "No plan."


@trajdebug.step(kind="input")
def maintenance_request(req: dict) -> dict:
    return dict(req)


@trajdebug.step(kind="retrieval")
def list_stations(region: str) -> dict:
    ids = REGIONS[region]
    page = ids[:10] if ON["page"] else ids
    return {"region": region, "stations": list(page)}


@trajdebug.step(kind="tool")
def fetch_health(station: str, idx: int) -> str:
    t = _tele(station, idx)
    if ON["cache"] and idx == 2:
        t["battery_v"] = 12.5  # the cached reading of last month
    return f"STA={station} BAT={t['battery_v']}V DRIFT={t['drift_us']}us PWR={t['power']} KM={t['km']}"


@trajdebug.step(kind="parse")
def read_health(line: str) -> dict:
    fields = dict(kv.split("=", 1) for kv in line.split())
    num, unit = re.match(r"([\d.]+)(\w+)", fields["DRIFT"]).groups()
    drift_ms = float(num) if ON["drift"] else float(num) / (1000.0 if unit == "us" else 1.0)
    return {"station": fields["STA"], "battery_v": float(fields["BAT"].rstrip("V")), "drift_ms": drift_ms,
            "power": fields["PWR"], "km": int(fields["KM"])}


@trajdebug.step(kind="other")
def score_station(health: dict) -> dict:
    needs = []
    if health["power"] == "solar" and health["battery_v"] < 11.8:
        needs.append("battery")
    if health["drift_ms"] > 5.0:
        needs.append("gps_clock")
    return {"station": health["station"], "needs": needs, "urgency": "urgent" if needs else "routine"}


@trajdebug.step(kind="state")
def log_station(health: dict, score: dict, previous: dict | None) -> str:
    state = trajdebug.current_run().state
    record = dict(health, **score)
    key = health["station"]
    state[f"station:{key}"] = record
    if previous is not None and previous["needs"] == [] and score["needs"]:
        # a routine neighbour shares the visit note of the site just logged
        shared = dict(state[f"station:{previous['station']}"], note=f"near {key}")
        if ON["log"]:
            shared = dict(record, station=previous["station"], note=f"near {key}")
        state[f"station:{previous['station']}"] = shared
    return key


@trajdebug.step(kind="other")
def collect_notes(checked: list[str]) -> list[dict]:
    state = trajdebug.current_run().state
    return [{"station": s, "urgency": state[f"station:{s}"]["urgency"], "needs": state[f"station:{s}"]["needs"]}
            for s in checked]


@trajdebug.step(kind="parse")
def parse_plan(content: str) -> list[str]:
    return list(json.loads(content)["visits"])


@trajdebug.step(kind="tool")
def travel_time(station: str, km: int) -> dict:
    return {"station": station, "hours": round(km / 45 + 1.5, 2)}  # drive plus 1.5 h on site


@trajdebug.step(kind="other")
def order_stops(legs: list[dict], window: float) -> dict:
    legs = sorted(legs, key=lambda leg: leg["hours"])
    total = round(sum(leg["hours"] for leg in legs), 2)
    if total > window:
        raise ValueError(f"route needs {total} crew hours, window is {window} hours")
    return {"stops": [leg["station"] for leg in legs], "hours": total}


@trajdebug.step(kind="agent")
def route_crew(visits: list[str], window: float) -> dict:
    state = trajdebug.current_run().state
    with trajdebug.ContextThreadPoolExecutor(max_workers=4) as pool:
        legs = list(pool.map(lambda s: travel_time(s, state[f"station:{s}"]["km"]), visits))
    return order_stops(legs, window)


@trajdebug.step(kind="tool")
def reserve_parts(station: str, needs: list[str]) -> dict:
    idx = next(i for ids in REGIONS.values() for i, s in enumerate(ids, 1) if s == station)
    if "battery" in needs and _tele(station, idx)["power"] == "mains":
        raise RuntimeError(f"stores refuse battery kit for {station}: the station runs on mains power")
    return {"station": station, "kits": [f"{n}-kit" for n in needs]}


@trajdebug.step(kind="tool")
def outage_list(region: str) -> list[str]:
    out = []
    for i, s in enumerate(REGIONS[region], 1):
        t = _tele(s, i)
        if t["power"] == "solar" and t["battery_v"] < 11.8:
            out.append(s)
    return out


@trajdebug.step(kind="tool")
def region_register(region: str) -> dict:
    return {"region": region, "stations": len(REGIONS[region])}


@trajdebug.step(kind="output")
def finalize_work_orders(req: dict, checked: list[str], route: dict, kits: list[dict], offline: list[str],
                         register: dict) -> dict:
    assert len(checked) == register["stations"], (
        f"report covers {len(checked)} of {register['stations']} stations in {req['region']}")
    missing = [s for s in offline if s not in route["stops"]]
    assert not missing, f"stations on the outage list without a visit: {', '.join(missing)}"
    assert route["hours"] <= req["window_hours"] - 4, (
        f"work orders need {route['hours']} crew hours; {req['crew']} has {req['window_hours']} with 4 h travel home")
    return {"crew": req["crew"], "stops": route["stops"], "hours": route["hours"], "kits": kits}


def record(inp: dict, path: str, base_url: str) -> None:
    client = suitekit.client(base_url)
    try:
        with trajdebug.run(NAME, task=f"maintenance plan for {inp['region']}", path=path):
            req = maintenance_request(inp)
            listing = list_stations(req["region"])
            checked, notes, previous = [], [], None
            for idx, sid in enumerate(listing["stations"], 1):
                line = fetch_health(sid, idx)
                health = read_health(line)
                score = score_station(health)
                log_station(health, score, previous)
                previous = dict(health, **score)
                checked.append(sid)
            notes = collect_notes(checked)
            msg = suitekit.chat(client, "fake-model", "plan_visits", [
                {"role": "system", "content": "Plan the crew's station visits. Answer JSON {visits: [...]}"},
                {"role": "user", "content": json.dumps({"region": req["region"], "stations": notes})}])
            visits = parse_plan(msg["content"])
            route = route_crew(visits, req["window_hours"])
            state = trajdebug.current_run().state
            kits = [reserve_parts(s, state[f"station:{s}"]["needs"]) for s in route["stops"]]
            offline = outage_list(req["region"])
            register = region_register(req["region"])
            finalize_work_orders(req, checked, route, kits, offline, register)
    except Exception:
        pass
