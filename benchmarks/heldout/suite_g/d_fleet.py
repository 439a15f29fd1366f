"""Fleet maintenance desk (route d: trajdebug's recording SDK).

A driver reports a fault on a van; the desk looks the vehicle up, has a model triage the report, routes
the job to a workshop lane, asks a parts sub-agent what to order, checks depot stock, reserves a bay and
files a work order with the workshop system, which validates the whole job.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug

from .common import AgentSpec, Case, Req, active, brain, keyed, sdk_chat


AGENT = "fleet-maintenance-desk"

VEHICLES = keyed(
    "model platform odometer_km depot",
    {
        'VAN-214': ('Ford Transit 2.0 EcoBlue', 'TRN', 148200, 'Leeds'),
        'VAN-241': ('Mercedes Sprinter 316', 'SPR', 96400, 'Leeds'),
        'VAN-118': ('Ford Transit 2.0 EcoBlue', 'TRN', 201950, 'York'),
        'VAN-305': ('Renault Master dCi', 'MAS', 62010, 'Hull'),
        'VAN-422': ('Mercedes Sprinter 316', 'SPR', 133700, 'York'),
        'VAN-509': ('Renault Master dCi', 'MAS', 88420, 'Leeds'),
        'VAN-630': ('Ford Transit 2.0 EcoBlue', 'TRN', 54300, 'Hull'),
    },
)
PARTS = {
    ("TRN", "brakes"): ["TRN-BP-4471 front pad set", "TRN-BD-2210 front disc pair"],
    ("SPR", "brakes"): ["SPR-BP-9902 front pad set", "SPR-BD-9120 front disc pair"],
    ("MAS", "brakes"): ["MAS-BP-3305 front pad set"],
    ("TRN", "cooling"): ["TRN-WP-1180 water pump", "TRN-TH-0440 thermostat"],
    ("SPR", "cooling"): ["SPR-WP-7714 water pump"],
    ("MAS", "cooling"): ["MAS-WP-2201 water pump", "MAS-HS-0090 radiator hose"],
    ("TRN", "electrical"): ["TRN-AL-5530 alternator"],
    ("MAS", "electrical"): ["MAS-BT-0712 battery 95Ah"],
    ("SPR", "electrical"): ["SPR-ST-3381 starter motor"],
}
STOCK = {  # depot -> part prefix -> units on the shelf
    "central": {"TRN": 40, "SPR": 25, "MAS": 18},
    "Leeds": {"TRN": 6, "SPR": 0, "MAS": 3},
    "York": {"TRN": 2, "SPR": 5, "MAS": 0},
    "Hull": {"TRN": 4, "SPR": 1, "MAS": 6},
}
LANES = {
    "heavy_bay": {"certified": {"BRK-2", "CLG-2", "ELC-2", "BRK-1", "CLG-1", "ELC-1"}, "rate": 92.0},
    "quick_lane": {"certified": {"BRK-1", "CLG-1", "ELC-1"}, "rate": 68.0},
}
SYMPTOMS = {
    "grind": ("brakes", 2),
    "pull": ("brakes", 1),
    "overheat": ("cooling", 2),
    "coolant": ("cooling", 1),
    "battery": ("electrical", 1),
    "crank": ("electrical", 2),
}


class WorkOrderRejected(RuntimeError):
    """The workshop system refused a work order."""


@brain("fleet.triage")
def _triage(req: Req) -> str:
    report = req.user.lower()
    system, level = next((v for k, v in SYMPTOMS.items() if k in report), ("electrical", 1))
    code = {"brakes": "BRK", "cooling": "CLG", "electrical": "ELC"}[system]
    return json.dumps(
        {"system": system, "job_class": f"{code}-{level}", "severity": "high" if level == 2 else "normal"}
    )


@brain("fleet.planner")
def _planner(req: Req) -> str:
    job = json.loads(req.user.split("JOB:", 1)[1])
    vehicle = job["vehicle"]
    if active("fleet.parts_brief"):
        vehicle = job["linked_vehicle"]  # the depot's paired van, named in the registry record
    return json.dumps({"ask_parts_agent": f"Which parts for {vehicle} ({job['system']})?", "vehicle": vehicle})


@brain("fleet.parts")
def _parts(req: Req) -> str:
    catalog = json.loads(req.user.split("CATALOG:", 1)[1])
    return json.dumps({"order": catalog["parts"][:2]})


@trajdebug.step(kind="tool")
def lookup_vehicle(vehicle_id: str) -> dict:
    rec = dict(VEHICLES[vehicle_id], vehicle=vehicle_id)
    rec["linked_vehicle"] = {"VAN-214": "VAN-241", "VAN-241": "VAN-214"}.get(vehicle_id, "VAN-509")
    return rec


@trajdebug.step(kind="condition")
def route_job(triage: dict) -> str:
    lane = "heavy_bay" if triage["severity"] == "high" else "quick_lane"
    if active("fleet.lane_route") and triage["system"] == "brakes":
        lane = "quick_lane"
    return lane


@trajdebug.step(kind="tool")
def parts_catalog(vehicle_id: str, system: str) -> dict:
    platform = VEHICLES[vehicle_id]["platform"]
    return {"vehicle": vehicle_id, "parts": PARTS[(platform, system)]}


@trajdebug.step(kind="agent")
def parts_agent(question: str, vehicle_id: str, system: str) -> list[str]:
    catalog = parts_catalog(vehicle_id, system)
    answer = sdk_chat(
        "choose_parts",
        "desk: fleet.parts. Pick the parts to order from the catalog.",
        f"{question}\nCATALOG: {json.dumps(catalog)}",
    )
    return json.loads(answer)["order"]


@trajdebug.step(kind="tool")
def stock_check(parts: list[str], depot: str) -> dict:
    shelf = STOCK["central"] if active("fleet.stock_depot") else STOCK[depot]
    return {"depot": depot, "available": {p.split(" ")[0]: shelf[p[:3]] for p in parts}}


@trajdebug.step(kind="tool")
def request_transfer(parts: list[str], depot: str) -> dict:
    return {"from": "central", "to": depot, "parts": [p.split(" ")[0] for p in parts], "eta": "2026-12-03T06:30"}


@trajdebug.step(kind="state")
def reserve_bay(lane: str, vehicle_id: str) -> dict:
    bookings = trajdebug.current_run().state.setdefault("bookings", [])
    slot = {"lane": lane, "bay": f"{lane}-2", "start": "2026-12-03T08:00", "vehicle": vehicle_id}
    bookings.append(slot)
    if active("fleet.bay_booking"):
        bookings.append(dict(slot, start="2026-12-03T08:00"))
    trajdebug.current_run().state["bookings"] = bookings
    return {"bookings": list(bookings)}


@trajdebug.step(kind="other")
def quote(lane: str, parts: list[str], level: int) -> dict:
    hours = 1.5 * level + 0.5 * len(parts)
    return {"labour_hours": hours, "labour_cost": round(hours * LANES[lane]["rate"], 2), "parts": parts}


@trajdebug.step(kind="tool")
def create_work_order(
    vehicle: dict, triage: dict, lane: str, transfer: dict | None, bookings: list, cost: dict
) -> dict:
    if triage["job_class"] not in LANES[lane]["certified"]:
        raise WorkOrderRejected(
            f"job class {triage['job_class']} cannot be scheduled: booked bay lacks the certification"
        )
    starts = [(b["bay"], b["start"]) for b in bookings]
    if len(set(starts)) != len(starts):
        raise WorkOrderRejected("bay calendar conflict: two activations share one bay and start time")
    for part in cost["parts"]:
        if not part.startswith(vehicle["platform"]):
            raise WorkOrderRejected(f"part {part.split(' ')[0]} is not listed for platform {vehicle['platform']}")
    shelf = STOCK[vehicle["depot"]]
    incoming = set(transfer["parts"]) if transfer else set()
    for part in cost["parts"]:
        if shelf[part[:3]] < 1 and part.split(" ")[0] not in incoming:
            raise WorkOrderRejected(f"depot {vehicle['depot']} cannot pick {part.split(' ')[0]}: no units on hand")
    return {"work_order": f"WO-{vehicle['vehicle'][-3:]}-1203", "status": "scheduled"}


def agent(inp: dict) -> dict:
    with trajdebug.step("driver_report", kind="input") as s:
        s.output = {"vehicle": inp["vehicle"], "report": inp["report"]}
    vehicle = lookup_vehicle(inp["vehicle"])
    triage = json.loads(
        sdk_chat("triage_report", "desk: fleet.triage. Classify the driver's report as JSON.", inp["report"])
    )
    lane = route_job(triage)
    job = {"vehicle": vehicle["vehicle"], "linked_vehicle": vehicle["linked_vehicle"], "system": triage["system"]}
    plan = json.loads(
        sdk_chat(
            "plan_repair", "desk: fleet.planner. Plan the repair and brief the parts agent.", f"JOB: {json.dumps(job)}"
        )
    )
    parts = parts_agent(plan["ask_parts_agent"], plan["vehicle"], triage["system"])
    stock = stock_check(parts, vehicle["depot"])
    missing = [p for p in parts if stock["available"][p.split(" ")[0]] < 1]
    transfer = request_transfer(missing, vehicle["depot"]) if missing else None
    bookings = reserve_bay(lane, vehicle["vehicle"])["bookings"]
    cost = quote(lane, parts, int(triage["job_class"][-1]))
    order = create_work_order(vehicle, triage, lane, transfer, bookings, cost)
    with trajdebug.step("confirm_driver", kind="output") as s:
        s.output = f"{order['work_order']} booked in {lane} for {vehicle['vehicle']}"
    return order


def record(inp: dict, path: Path) -> None:
    try:
        with trajdebug.run(AGENT, task=f"repair {inp['vehicle']}: {inp['report']}", path=str(path)):
            agent(inp)
    except WorkOrderRejected:
        pass


def _in(vehicle: str, report: str) -> dict[str, Any]:
    return {"vehicle": vehicle, "report": report}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="d", domain="fleet maintenance", record=record,
    summary="vehicle lookup, model triage, lane routing, parts sub-agent, stock, bay booking, work order",
    refs=[_in("VAN-118", "coolant light flickers on hills"), _in("VAN-305", "battery flat every morning"),
          _in("VAN-422", "engine overheats in traffic"), _in("VAN-630", "brakes pull left slightly")],
    cases=[
        Case("g_fleet_lane", "wrong_routing", "fleet.lane_route", _in("VAN-214", "brakes grind when stopping"),
             "route_job", "quick_lane",
             "The lane router sends a class-2 brake job to the quick lane, which the workshop system refuses."),
        Case("g_fleet_parts_entity", "wrong_entity_subagent", "fleet.parts_brief", _in("VAN-214", "engine overheats after 20 minutes"),
             "plan_repair", "VAN-241",
             "The planner briefs the parts sub-agent about the depot's paired van instead of the reported one."),
        Case("g_fleet_stock", "tool_ignores_arg", "fleet.stock_depot", _in("VAN-241", "brake pedal pulls to one side"),
             "stock_check", '"SPR-BP-9902": 25',
             "The stock service ignores the depot argument and answers with central warehouse stock."),
        Case("g_fleet_bay", "bad_state_write", "fleet.bay_booking", _in("VAN-509", "starter will not crank in the cold"),
             "reserve_bay", lambda out: len(out["bookings"]) > 1,
             "The bay reservation writes the same booking twice into the run's booking state."),
    ],
)
# fmt: on
