"""Bicycle courier dispatch (recording SDK): parse a manifest, plan the stops, route the legs, pick a rider, quote and dispatch."""

from __future__ import annotations

import json
import re

import trajdebug

from . import common, kit

NAME = "courier-dispatch"
ROUTE = "sdk"
DOMAIN = "bicycle courier dispatch"
EXT = "jsonl"
DESK = "courier"
SHAPE = "parse -> plan (llm) -> per-leg routing loop -> closures -> rider choice (llm) -> ping with retry -> state -> fare -> brief (llm) -> dispatch API"

STREETS = {"Dock Lane 4": (0, 0), "Mill St 12": (1200, 800), "Canal Row 3": (2100, 300), "Oak Ave 7": (600, 2400),
           "Quay Rd 9": (2600, 1900), "Hill Ct 2": (300, 1500), "Baker Yd 5": (1800, 2600), "Fen Way 1": (900, 200)}
CLOSED = {"C-17": "Canal Row 3"}
RIDERS = [
    {"rider": "R-11", "name": "Ines", "cargo_kg": 4.0, "on_shift": True},
    {"rider": "R-24", "name": "Tomas", "cargo_kg": 12.0, "on_shift": True},
    {"rider": "R-31", "name": "Maren", "cargo_kg": 9.0, "on_shift": True},
]
TARIFF = [(3.0, 6.50), (6.0, 9.75), (10.0, 13.00), (float("inf"), 18.00)]  # (up to km, fare EUR)

INPUTS = {
    "A": {"job": "J-5521", "pickup": "Dock Lane 4", "manifest": "3 parcels: 2.5 kg, 1.2 kg, 4.0 kg",
          "drops": ["Mill St 12", "Oak Ave 7", "Quay Rd 9"], "avoid_closures": True},
    "B": {"job": "J-5540", "pickup": "Dock Lane 4", "manifest": "2 parcels: 3.5 kg, 2.0 kg",
          "drops": ["Canal Row 3", "Hill Ct 2"], "avoid_closures": True},
    "R1": {"job": "J-5502", "pickup": "Dock Lane 4", "manifest": "1 parcels: 0.8 kg", "drops": ["Fen Way 1"], "avoid_closures": True},
    "R2": {"job": "J-5507", "pickup": "Dock Lane 4", "manifest": "2 parcels: 1.0 kg, 1.5 kg",
           "drops": ["Hill Ct 2", "Baker Yd 5"], "avoid_closures": True},
    "R3": {"job": "J-5513", "pickup": "Dock Lane 4", "manifest": "4 parcels: 1.0 kg, 2.0 kg, 0.5 kg, 3.0 kg",
           "drops": ["Mill St 12", "Fen Way 1", "Baker Yd 5"], "avoid_closures": True},
    "R4": {"job": "J-5518", "pickup": "Dock Lane 4", "manifest": "2 parcels: 6.0 kg, 2.5 kg",
           "drops": ["Oak Ave 7", "Quay Rd 9"], "avoid_closures": True},
}
REFS = ["R1", "R2", "R3", "R4"]

CASES = [
    common.Case("zj-courier-01", "lossy_parsing", "A", "parse_manifest", 1, "dispatch_job", 1,
                "The manifest parser drops the last parcel of the comma list, so the dispatched load misses a parcel."),
    common.Case("zj-courier-02", "unit_error", "A", "total_distance", 1, "dispatch_job", 1,
                "The leg distances come back in metres and the total is not divided by 1000, so the job is dispatched with a distance in kilometres a thousand times too large."),
    common.Case("zj-courier-03", "bad_memory_write", "A", "record_assignment", 1, "dispatch_job", 1,
                "The assignment written to run state takes the first roster rider instead of the one the model chose, a rider whose cargo limit is below the load."),
    common.Case("zj-courier-04", "off_by_one", "B", "quote_fare", 1, "dispatch_job", 1,
                "The fare lookup indexes the tariff band one past the band the distance falls in."),
    common.Case("zj-courier-05", "swallowed_error", "B", "fetch_closures", 1, "dispatch_job", 1,
                "The closures API answers with an error payload that the agent treats as no closures, so the route runs through a closed street."),
]


@trajdebug.step(kind="input")
def read_request(job: dict) -> dict:
    return dict(job)


@trajdebug.step(kind="parse")
def parse_manifest(text: str) -> dict:
    head, _, rest = text.partition(":")
    count = int(head.split()[0])
    items = [p.strip() for p in rest.split(",")]
    if kit.active("courier.lossy_parsing") and len(items) > 2:
        items = items[:-1]
    weights = [float(re.match(r"([\d.]+)\s*kg", p).group(1)) for p in items if p]
    return {"declared": count, "weights_kg": weights}


@trajdebug.step(kind="parse")
def parse_stop_order(text: str) -> list:
    return json.loads(text)["order"]


@trajdebug.step(kind="tool")
def route_leg(origin: str, dest: str) -> dict:
    (x1, y1), (x2, y2) = STREETS[origin], STREETS[dest]
    return {"from": origin, "to": dest, "metres": abs(x1 - x2) + abs(y1 - y2)}


@trajdebug.step(kind="other")
def total_distance(legs: list) -> dict:
    metres = sum(leg["metres"] for leg in legs)
    km = metres if kit.active("courier.unit_error") else metres / 1000
    return {"km": round(km, 2), "legs": len(legs)}


@trajdebug.step(kind="tool")
def fetch_closures(area: str) -> dict:
    if kit.active("courier.swallowed_error"):
        return {"error": {"status": 503, "message": "closures feed upstream timed out"}}
    return {"area": area, "closures": [{"id": k, "street": v} for k, v in CLOSED.items()]}


@trajdebug.step(kind="other")
def apply_closures(order: list, feed: dict) -> dict:
    closed = {c["street"] for c in feed.get("closures", [])}
    reachable = [s for s in order if s not in closed]
    return {"order": order, "closed_stops": sorted(set(order) & closed), "reachable": reachable}


@trajdebug.step(kind="tool")
def list_riders(zone: str) -> list:
    return [dict(r) for r in RIDERS]


_PINGS = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def ping_rider(rider: str) -> dict:
    _PINGS["n"] += 1
    if _PINGS["n"] % 2 == 1:
        raise ConnectionError(f"push gateway did not acknowledge {rider}")
    return {"rider": rider, "ack": True}


@trajdebug.step(kind="state")
def record_assignment(choice: dict, roster: list, load_kg: float) -> dict:
    picked = roster[0] if kit.active("courier.bad_memory_write") else next(r for r in roster if r["rider"] == choice["rider"])
    entry = {"rider": picked["rider"], "cargo_kg": picked["cargo_kg"], "load_kg": load_kg}
    trajdebug.current_run().state["assignment"] = entry
    return entry


@trajdebug.step(kind="other")
def quote_fare(distance: dict) -> dict:
    band = next(i for i, (upto, _) in enumerate(TARIFF) if distance["km"] <= upto)
    if kit.active("courier.off_by_one"):
        band += 1
    return {"band": band, "fare_eur": TARIFF[band][1], "km": distance["km"]}


@trajdebug.step(kind="tool")
def dispatch_job(job: dict) -> dict:
    a = trajdebug.current_run().state["assignment"]
    problems = []
    if job["parcels"] != job["declared_parcels"]:
        problems.append(f"manifest declares {job['declared_parcels']} parcels, job carries {job['parcels']}")
    if job["distance_km"] > 40:
        problems.append(f"distance_km {job['distance_km']} exceeds the 40 km city limit")
    if a["cargo_kg"] < a["load_kg"]:
        problems.append(f"rider {a['rider']} cargo limit {a['cargo_kg']} kg is below load {a['load_kg']} kg")
    expected = next(f for upto, f in TARIFF if job["distance_km"] <= upto)
    if abs(job["fare_eur"] - expected) > 0.001:
        problems.append(f"fare {job['fare_eur']:.2f} does not match tariff {expected:.2f} for {job['distance_km']} km")
    for cid, street in CLOSED.items():
        if street in job["order"] and street not in job["detour_for"]:
            problems.append(f"stop {street} is behind closure {cid} and the job has no detour")
    if problems:
        raise RuntimeError("HTTP 422 from dispatch API: {\"error\": \"job rejected\", \"details\": " + json.dumps(problems) + "}")
    return {"status": 201, "job": job["job"], "rider": a["rider"]}


@common.policy(DESK)
def _policy(messages: list[dict]) -> str:
    system, user = messages[0]["content"].lower(), json.loads(messages[-1]["content"])
    if "order the drops" in system:
        return json.dumps({"order": sorted(user["drops"], key=lambda s: sum(STREETS[s]))})
    if "choose a rider" in system:
        fit = [r for r in user["roster"] if r["cargo_kg"] >= user["load_kg"] and r["on_shift"]]
        best = min(fit, key=lambda r: r["cargo_kg"])
        return json.dumps({"rider": best["rider"], "why": f"smallest cargo bike that fits {user['load_kg']} kg"})
    if "avoid closures" in system:
        return json.dumps({"order": user["reachable"] + user["closed"], "note": "closed stops go last via detour"}) if user["closed"] else json.dumps({"order": user["order"], "note": "no detour needed"})
    return f"Pick up at {user['pickup']}, {user['parcels']} parcels, {len(user['order'])} drops, {user['km']} km."


def run_once(inp: dict, path) -> None:
    with trajdebug.run(NAME, task=f"dispatch courier job {inp['job']}", path=str(path)) as run:
        job = read_request(inp)
        manifest = parse_manifest(job["manifest"])
        plan = common.sdk_chat("plan_stops", DESK, "Order the drops for one bike, shortest first. Answer JSON {order}.",
                               {"pickup": job["pickup"], "drops": job["drops"]})
        order = parse_stop_order(plan)
        legs, here = [], job["pickup"]
        for stop in order:
            legs.append(route_leg(here, stop))
            here = stop
        distance = total_distance(legs)
        feed = fetch_closures("central")
        checked = apply_closures(order, feed)
        if checked["closed_stops"]:
            detour = common.sdk_chat("replan_detour", DESK, "Re-order the stops to avoid closures. Answer JSON {order, note}.",
                                     {"order": order, "reachable": checked["reachable"], "closed": checked["closed_stops"]})
            order = parse_stop_order(detour)
            checked = {"order": order, "closed_stops": [], "detour_for": checked["closed_stops"]}
        roster = list_riders("central")
        load = round(sum(manifest["weights_kg"]), 2)
        answer = common.sdk_chat("choose_rider", DESK, "Choose a rider whose bike fits the load. Answer JSON {rider, why}.",
                                 {"roster": roster, "load_kg": load, "km": distance["km"]})
        with trajdebug.step("parse_rider_choice", kind="parse", input={"text": answer}) as s:
            s.output = choice = json.loads(answer)
        ping_rider(choice["rider"])
        record_assignment(choice, roster, load)
        common.sdk_chat("compose_brief", DESK, "Write the rider brief in one line.",
                        {"pickup": job["pickup"], "parcels": len(manifest["weights_kg"]), "order": order, "km": distance["km"]})
        fare = quote_fare(distance)
        dispatch_job({"job": job["job"], "declared_parcels": manifest["declared"], "parcels": len(manifest["weights_kg"]),
                      "distance_km": distance["km"], "fare_eur": fare["fare_eur"], "order": order,
                      "detour_for": checked.get("detour_for", [])})
