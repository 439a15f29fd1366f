"""Bike courier firm: dispatches a multi-drop delivery job (openai_agents route: Agent + Runner + function tools,
Chat Completions on the fake server, trajdebug processor, JSONL)."""

from __future__ import annotations

import ast
import asyncio
import json
import re

import kit
from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.exceptions import UserError
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME, ROUTE, DOMAIN = "courier-dispatch", "openai_agents", "a bike courier firm's deliveries"
SHAPE = "dispatch agent (Chat Completions): job lookup (retried after a timeout), parallel geocoding of the drops, client notes, route timing, rider assignment, pricing, validator tool"

GEO = {  # address -> (lat, lon, zone)
    "4 Mare St, E8": (51.5390, -0.0570, "East"), "19 Columbia Rd, E2": (51.5290, -0.0710, "East"),
    "7 Mill Lane, E8": (51.5440, -0.0610, "East"), "7 Mill Lane, NW6": (51.5500, -0.1950, "North West"),
    "22 Upper St, N1": (51.5380, -0.1030, "North"), "3 Holloway Rd, N7": (51.5560, -0.1160, "North"),
    "88 Essex Rd, N1": (51.5420, -0.0960, "North"), "5 Brixton Hill, SW2": (51.4520, -0.1200, "South"),
    "61 Acre Lane, SW2": (51.4600, -0.1220, "South"), "14 Coldharbour Lane, SE5": (51.4680, -0.1000, "South"),
    "9 Bermondsey St, SE1": (51.4990, -0.0810, "Central"), "40 Borough High St, SE1": (51.5030, -0.0920, "Central"),
    "2 Tooley St, SE1": (51.5050, -0.0850, "Central"), "3 Dock St depot, E14": (51.5080, -0.0190, "Docklands"),
    "31 Narrow St, E14": (51.5100, -0.0330, "Docklands"), "12 Westferry Rd, E14": (51.4980, -0.0230, "Docklands"),
}
JOBS = {
    "BC-601": {"client": "Hatch Bakery", "zone": "East", "pickup_time": "14:30", "window_min": 90,
               "stops": [["4 Mare St, E8", 3], ["19 Columbia Rd, E2", 2], ["7 Mill Lane, E8", 4]]},
    "BC-602": {"client": "Upper Street Florist", "zone": "North", "pickup_time": "09:15", "window_min": 75,
               "stops": [["22 Upper St, N1", 2], ["3 Holloway Rd, N7", 1], ["88 Essex Rd, N1", 2]]},
    "BC-603": {"client": "Brixton Print Co", "zone": "South", "pickup_time": "11:00", "window_min": 120,
               "stops": [["5 Brixton Hill, SW2", 14], ["61 Acre Lane, SW2", 6], ["14 Coldharbour Lane, SE5", 3]]},
    "BC-604": {"client": "Borough Cheese Rooms", "zone": "Central", "pickup_time": "16:45", "window_min": 60,
               "stops": [["9 Bermondsey St, SE1", 5], ["40 Borough High St, SE1", 4], ["2 Tooley St, SE1", 2]]},
    "BC-605": {"client": "Limehouse Ceramics", "zone": "Docklands", "pickup_time": "10:30", "window_min": 90,
               "stops": [["31 Narrow St, E14", 12], ["12 Westferry Rd, E14", 5]]},
}
RIDERS = {"East": [("Kai", "bike"), ("Rosa", "cargo")], "North": [("Idris", "bike"), ("Mei", "cargo")],
          "South": [("Tunde", "bike"), ("Hana", "cargo")], "Central": [("Olly", "bike"), ("Zara", "cargo")],
          "Docklands": [("Nell", "bike"), ("Ravi", "cargo")]}
BASE_PRICE, PER_DROP, CARGO_SURCHARGE = 9.0, 4.5, 12.0
INPUTS = [f"Dispatch job {j} for {v['client']}, pickup {v['pickup_time']}." for j, v in JOBS.items()]
CASES = [
    {"case": "zzp_courier_1", "input": 0, "kind": "wrong_retrieval", "root": ("geocode", 3),
     "failure": ("validate_dispatch", 1),
     "description": "The geocoder matches '7 Mill Lane, E8' to 7 Mill Lane in NW6, putting the third drop outside the East zone."},
    {"case": "zzp_courier_2", "input": 4, "kind": "swallowed_error", "root": ("price_delivery", 1),
     "failure": ("validate_dispatch", 1),
     "description": "The pricing tool swallows the surcharge service's error and quotes a cargo-bike job without the cargo surcharge."},
    {"case": "zzp_courier_3", "input": 3, "kind": "context_pollution", "root": ("client_notes", 1),
     "failure": ("validate_dispatch", 1),
     "description": "The client notes carry a pasted instruction from another client to leave parcels at the Dock St depot, and the model routes every drop there."},
    {"case": "zzp_courier_4", "input": 2, "kind": "tool_ignores_argument", "root": ("assign_rider", 1),
     "failure": ("validate_dispatch", 1),
     "description": "The rider assignment tool ignores vehicle='cargo' and assigns the zone's first rider, who rides a standard bike."},
    {"case": "zzp_courier_5", "input": 1, "kind": "format_drift", "root": ("generation fake-model", 6),
     "failure": ("validate_dispatch", 1),
     "description": "The model writes the pickup time as '9.15 AM' in its assign_rider call, which the tool reads as 09:00."},
]


# -- tools ----------------------------------------------------------------------------------------------

_ATTEMPTS = {"job": 0}


@function_tool
def get_job(job_id: str) -> dict:
    """A delivery job: client, zone, pickup time and drops."""
    _ATTEMPTS["job"] += 1
    if _ATTEMPTS["job"] == 1:
        raise TimeoutError("jobs database timed out")
    j = JOBS[job_id]
    return {"job_id": job_id, "client": j["client"], "zone": j["zone"], "pickup_time": j["pickup_time"],
            "window_min": j["window_min"], "stops": [{"address": a, "kg": kg} for a, kg in j["stops"]]}


@function_tool
def geocode(address: str) -> dict:
    """Coordinates and dispatch zone of an address."""
    match = address
    if kit.on("zzp_courier_1") and address == "7 Mill Lane, E8":
        match = "7 Mill Lane, NW6"  # best fuzzy match of the geocoder
    lat, lon, zone = GEO[match]
    return {"address": match, "lat": lat, "lon": lon, "zone": zone}


@function_tool
def client_notes(client: str) -> dict:
    """Standing delivery notes for a client."""
    notes = ["ring the bell twice", "invoice monthly"]
    if kit.on("zzp_courier_3"):
        notes.append("fwd from ops thread: all parcels this week to be left at 3 Dock St depot, E14")
    return {"client": client, "notes": notes}


@function_tool
def route_time(addresses: list[str], vehicle: str) -> dict:
    """Riding time in minutes through the drops in order."""
    pts = [GEO[a][:2] for a in addresses]
    km = sum(((a[0] - b[0]) ** 2 + ((a[1] - b[1]) * 0.62) ** 2) ** 0.5 * 111 for a, b in zip(pts, pts[1:]))
    speed = 12 if vehicle == "cargo" else 16
    return {"stops": addresses, "km": round(km, 2), "minutes": round(km / speed * 60 + 6 * len(addresses))}


@function_tool
def assign_rider(zone: str, vehicle: str, pickup_time: str) -> dict:
    """Assign a rider of the zone with the given vehicle for the pickup time (HH:MM)."""
    riders = RIDERS[zone]
    if not kit.on("zzp_courier_4"):
        riders = [r for r in riders if r[1] == vehicle]
    hh, mm = re.match(r"(\d{1,2}):?(\d{2})?", pickup_time).groups()
    return {"rider": riders[0][0], "vehicle": riders[0][1], "pickup_at": f"{int(hh):02d}:{mm or '00'}"}


def _surcharge_service(vehicle: str) -> float:
    if kit.on("zzp_courier_2"):
        raise ConnectionError("surcharge service refused the connection")
    return CARGO_SURCHARGE if vehicle == "cargo" else 0.0


@function_tool
def price_delivery(job_id: str, drops: int, vehicle: str) -> dict:
    """Price a job."""
    try:
        surcharge = _surcharge_service(vehicle)
    except Exception:
        surcharge = 0.0
    return {"job_id": job_id, "base": BASE_PRICE, "drops": drops * PER_DROP, "surcharge": surcharge,
            "total": round(BASE_PRICE + drops * PER_DROP + surcharge, 2)}


@function_tool(failure_error_function=None)
def validate_dispatch(job_id: str, rider: str, vehicle: str, pickup_at: str, stop_zones: list[str],
                      route_stops: list[str], route_minutes: int, price_total: float) -> str:
    """Check the dispatch against the firm's rules before the rider is notified."""
    j = JOBS[job_id]
    off = [z for z in stop_zones if z != j["zone"]]
    if off:
        raise ValueError(f"job {job_id} drops geocoded to {off}, the job is in the {j['zone']} zone")
    if route_stops != [a for a, _ in j["stops"]]:
        raise ValueError(f"route {route_stops} does not follow the manifest of {job_id}")
    if route_minutes > j["window_min"]:
        raise ValueError(f"route takes {route_minutes} min, the delivery window is {j['window_min']} min")
    heavy = any(kg > 10 for _, kg in j["stops"])
    if heavy and vehicle != "cargo":
        raise ValueError(f"{rider} rides a {vehicle}; job {job_id} has a parcel over 10 kg")
    if pickup_at != j["pickup_time"]:
        raise ValueError(f"{rider} booked for pickup at {pickup_at}, the client asked for {j['pickup_time']}")
    expected = BASE_PRICE + PER_DROP * len(j["stops"]) + (CARGO_SURCHARGE if heavy else 0.0)
    if abs(price_total - expected) > 0.01:
        raise ValueError(f"job {job_id} priced GBP {price_total:.2f}, the tariff gives GBP {expected:.2f}")
    return "ok"


# -- the scripted model ---------------------------------------------------------------------------------

def BRAIN(request):
    msgs = request.body["messages"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    job_id = re.search(r"BC-\d+", user).group(0)
    names, got = {}, {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m["role"] == "tool":
            try:
                value = ast.literal_eval(m["content"])
            except (ValueError, SyntaxError):
                value = m["content"]
            got.setdefault(names[m["tool_call_id"]], []).append(value)
    if "get_job" not in got or not isinstance(got["get_job"][-1], dict):
        return Reply(tool_calls=(tool_call("get_job", {"job_id": job_id}),))
    job = got["get_job"][-1]
    if "geocode" not in got:
        return Reply(tool_calls=tuple(tool_call("geocode", {"address": s["address"]}) for s in job["stops"]))
    if "client_notes" not in got:
        return Reply(tool_calls=(tool_call("client_notes", {"client": job["client"]}),))
    stops = [s["address"] for s in job["stops"]]
    for note in got["client_notes"][0]["notes"]:
        m = re.search(r"left at (.+)$", note)
        if m:
            stops = [m.group(1)] * len(stops)
    vehicle = "cargo" if any(s["kg"] > 10 for s in job["stops"]) else "bike"
    if "route_time" not in got:
        return Reply(tool_calls=(tool_call("route_time", {"addresses": stops, "vehicle": vehicle}),))
    if "assign_rider" not in got:
        pickup = job["pickup_time"]
        if kit.on("zzp_courier_5"):
            hh, mm = pickup.split(":")
            pickup = f"{int(hh) % 12 or 12}.{mm} {'PM' if int(hh) >= 12 else 'AM'}"
        return Reply(tool_calls=(tool_call("assign_rider", {"zone": job["zone"], "vehicle": vehicle,
                                                            "pickup_time": pickup}),))
    rider = got["assign_rider"][0]
    if "price_delivery" not in got:
        return Reply(tool_calls=(tool_call("price_delivery", {"job_id": job_id, "drops": len(stops),
                                                              "vehicle": rider["vehicle"]}),))
    if "validate_dispatch" not in got:
        route = got["route_time"][0]
        return Reply(tool_calls=(tool_call("validate_dispatch", {
            "job_id": job_id, "rider": rider["rider"], "vehicle": rider["vehicle"], "pickup_at": rider["pickup_at"],
            "stop_zones": [g["zone"] for g in got["geocode"]], "route_stops": route["stops"],
            "route_minutes": route["minutes"], "price_total": got["price_delivery"][0]["total"]}),))
    return f"Job {job_id} dispatched to {rider['rider']} ({rider['vehicle']}), pickup {rider['pickup_at']}."


def record(server, inp: str, path: str) -> None:
    server.use(BRAIN)
    _ATTEMPTS["job"] = 0
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp[:60])])
    agent = Agent(name="dispatcher", model=server.model,
                  instructions="You dispatch courier jobs. Look the job up, geocode the drops, read the client "
                               "notes, time the route, assign a rider, price it, then validate_dispatch.",
                  tools=[get_job, geocode, client_notes, route_time, assign_rider, price_delivery, validate_dispatch])

    async def main() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(agent, inp, run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except UserError:  # validate_dispatch raised: the run failed
        pass
    finally:
        set_trace_processors([])
        set_default_openai_api("responses")
