"""Monorail maintenance depot: night-shift inspection planner traced with OpenInference + OpenTelemetry (OTLP JSON).

Shape (long, 40-60 spans): fleet roster tool -> one `inspect_car` sub-agent span per car due (manual
retriever, telemetry tool, instrumented model diagnosis, diagnosis parser, bay router) -> model shift plan ->
bay assignment tool -> parts order tool -> release-to-service gate (re-reads telemetry for every car due).
"""
from __future__ import annotations

import json
import re

from suitecommon import Spans, otel, read_prompt, write_otlp

RUN_NAME = "monorail-night-shift"
ROUTE = "otlp"
DOMAIN = "monorail maintenance depot"
SHAPE = "long trace: a sub-agent span per car (6-9 cars x 6 spans) with retriever, tool, model, parser, router; then plan, tools and a release gate"

ACTIVE = ""

OK = {"bearing_c": 61, "brake_pad_mm": 11.0, "collector_gap_mm": 10.0}


def _car(km, **over):
    return {**OK, "km_since_service": km, **over}


NIGHTS = {
    "2026-12-07": {"MR-01": _car(10120), "MR-02": _car(10480, collector_gap_mm=13.5, brake_pad_mm=5.2), "MR-03": _car(9900),
                   "MR-04": _car(10010, bearing_c=91), "MR-05": _car(10300), "MR-06": _car(10050)},
    "2026-12-08": {"MR-07": _car(10200, brake_pad_mm=4.8), "MR-08": _car(10100), "MR-09": _car(9980, collector_gap_mm=7.1),
                   "MR-10": _car(10400), "MR-11": _car(10220), "MR-12": _car(10090, bearing_c=88), "MR-13": _car(9950)},
    "2026-12-09": {"MR-14": _car(10010), "MR-15": _car(10330, bearing_c=96), "MR-16": _car(10080), "MR-17": _car(9920),
                   "MR-18": _car(10150, brake_pad_mm=5.0), "MR-19": _car(10260), "MR-20": _car(10410, collector_gap_mm=12.8),
                   "MR-21": _car(10240, bearing_c=87)},
    "2026-12-10": {"MR-22": _car(10110), "MR-23": _car(10500, brake_pad_mm=4.4), "MR-24": _car(10060), "MR-25": _car(9970),
                   "MR-26": _car(10140, collector_gap_mm=13.1), "MR-27": _car(10320)},
    "2026-12-11": {"MR-28": _car(10030), "MR-29": _car(10190), "MR-30": _car(10270, bearing_c=93), "MR-31": _car(9940),
                   "MR-32": _car(10360), "MR-33": _car(10080, brake_pad_mm=5.6), "MR-34": _car(10210), "MR-35": _car(10120),
                   "MR-36": _car(10440, collector_gap_mm=6.9)},
}
SETS = {}  # two-car sets: the sister car of each car
for night in NIGHTS.values():
    cars = list(night)
    for a, b in zip(cars[0::2], cars[1::2]):
        SETS[a], SETS[b] = b, a
MANUAL = {"bearing": "Section 7.2 axle bearing: drop bogie on a lift bay, replace bearing, torque 180 Nm",
          "brake": "Section 5.4 brake pads: lift bay, replace pads below 6 mm, bed in 20 cycles",
          "collector": "Section 9.1 collector shoe: gap 8-12 mm, regap on any bay",
          "wash": "Section 2.1 exterior wash: wash bay, no lift needed"}

INPUTS = [{"night": n, "depot": "Depot East", "shift": "22:00-06:00"} for n in NIGHTS]
CASES = [
    {"id": "mon_roster_page", "input": 2, "switch": "roster_page", "kind": "truncated_result",
     "root": ("fleet_roster", 1), "failure": ("release_to_service", 1),
     "description": "The fleet roster returns only its first page of six cars, so the last two cars due that night are never inspected."},
    {"id": "mon_sister_car", "input": 3, "switch": "sister_car", "kind": "subagent_wrong_entity",
     "root": ("inspect_car", 2), "failure": ("release_to_service", 1),
     "description": "The inspection sub-agent for MR-23 reads the telemetry of its sister car MR-22 and reports it as MR-23."},
    {"id": "mon_prior_readings", "input": 4, "switch": "keep_readings", "kind": "context_pollution",
     "root": ("collect_readings", 3), "failure": ("release_to_service", 1),
     "description": "The readings buffer for MR-30 still holds MR-29's telemetry first, and the diagnosis model reads that car's values."},
    {"id": "mon_second_action", "input": 0, "switch": "first_action", "kind": "lossy_parsing",
     "root": ("parse_diagnosis", 2), "failure": ("release_to_service", 1),
     "description": "The diagnosis parser keeps only the first action of MR-02's diagnosis and drops the collector-shoe regap."},
    {"id": "mon_wash_bay", "input": 1, "switch": "wash_route", "kind": "wrong_routing",
     "root": ("route_car", 6), "failure": ("assign_bays", 1),
     "description": "The bay router sends MR-12, which needs an axle bearing, to the wash bay."},
]


def diagnose(r: dict) -> list[str]:
    actions = []
    if r["bearing_c"] > 85:
        actions.append("replace axle bearing")
    if r["brake_pad_mm"] < 6:
        actions.append("replace brake pads")
    if not 8 <= r["collector_gap_mm"] <= 12:
        actions.append("regap collector shoe")
    return actions


def policy(request):
    system, data = read_prompt(request)
    if system.startswith("Diagnose the car"):
        reading = data["readings"][0]["telemetry"]
        actions = diagnose(reading)
        return f"{data['car']}: " + ("Actions: " + "; ".join(actions) if actions else "Actions: none") + "."
    if system.startswith("Plan the night shift"):
        lift = [c["car"] for c in data["cars"] if c["bay"] == "lift"]
        other = [c["car"] for c in data["cars"] if c["bay"] != "lift"]
        return "Shift order: " + ", ".join(lift + other) + "."
    raise ValueError(f"no answer for {system[:40]}")


def record(server, inp: dict, path: str) -> None:
    from openai import OpenAI

    provider, exporter = otel()
    exporter.clear()
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    sp = Spans(provider.get_tracer("monorail-depot"))
    night = NIGHTS[inp["night"]]

    def chat(messages):
        return client.chat.completions.create(model=server.model, messages=messages).choices[0].message.content

    try:
        with sp.step(RUN_NAME, "AGENT", inp) as done:
            with sp.step("fleet_roster", "TOOL", {"night": inp["night"], "due_km": 9900}) as out:
                due = sorted(night)
                if ACTIVE == "roster_page":
                    due = due[:6]
                due = out(due)
            buffer: list[dict] = []
            orders = []
            for car in due:
                with sp.step("inspect_car", "AGENT", {"car": car}) as report:
                    unit = car
                    if ACTIVE == "sister_car" and car == "MR-23":
                        unit = SETS[car]
                    with sp.step("read_telemetry", "TOOL", {"unit": unit}) as out:
                        telemetry = out(dict(night[unit]))
                    with sp.step("collect_readings", "CHAIN", {"car": car, "telemetry": telemetry}) as out:
                        if ACTIVE != "keep_readings" or car != "MR-30":
                            buffer.clear()
                        buffer.append({"car": car, "telemetry": telemetry})
                        readings = out(list(buffer))
                    diagnosis = chat([{"role": "system", "content": "Diagnose the car from its telemetry; list the actions."},
                                      {"role": "user", "content": json.dumps({"car": car, "readings": readings})}])
                    with sp.step("parse_diagnosis", "CHAIN", {"text": diagnosis}) as out:
                        body = re.search(r"Actions: (.*)\.$", diagnosis).group(1)
                        actions = [] if body == "none" else [a.strip() for a in body.split(";")]
                        if ACTIVE == "first_action" and car == "MR-02":
                            actions = actions[:1]
                        actions = out(actions)
                    with sp.step("maintenance_manual", "RETRIEVER", {"actions": actions}) as out:
                        keys = [k for k in ("bearing", "brake", "collector") if any(k in a for a in actions)] or ["wash"]
                        out([{"id": k, "content": MANUAL[k]} for k in keys])
                    with sp.step("route_car", "CHAIN", {"car": car, "actions": actions}) as out:
                        bay = "lift" if any("bearing" in a or "brake" in a for a in actions) else ("service" if actions else "wash")
                        if ACTIVE == "wash_route" and car == "MR-12":
                            bay = "wash"
                        bay = out(bay)
                    orders.append(report({"car": car, "actions": actions, "bay": bay}))
            plan = chat([{"role": "system", "content": "Plan the night shift: lift-bay work first."},
                         {"role": "user", "content": json.dumps({"cars": orders, "shift": inp["shift"]})}])
            with sp.step("assign_bays", "TOOL", {"orders": orders, "plan": plan}) as out:
                bays = {"lift": ["L1", "L2", "L3"], "service": ["S1", "S2"], "wash": ["W1"]}
                assigned = {}
                for o in orders:
                    needs_lift = any("bearing" in a or "brake" in a for a in o["actions"])
                    if needs_lift and o["bay"] != "lift":
                        raise ValueError(f"work order for {o['car']} ({', '.join(o['actions'])}) needs a lift; {o['bay']} bay {bays[o['bay']][0]} has none")
                    assigned[o["car"]] = bays[o["bay"]][len(assigned) % len(bays[o["bay"]])]
                out(assigned)
            with sp.step("order_parts", "TOOL", {"orders": orders}) as out:
                parts = [f"{o['car']}: {a}" for o in orders for a in o["actions"] if "replace" in a]
                out({"parts": parts, "store": "Depot East stores"})
            with sp.step("release_to_service", "TOOL", {"night": inp["night"], "orders": orders}) as out:
                by_car = {o["car"]: o for o in orders}
                for car, telemetry in sorted(night.items()):
                    if car not in by_car:
                        raise RuntimeError(f"{car} is due ({telemetry['km_since_service']:,} km since service) and has no inspection record")
                    needed = diagnose(telemetry)
                    missing = [a for a in needed if a not in by_car[car]["actions"]]
                    if missing:
                        raise RuntimeError(f"{car} cannot be released: gate telemetry calls for {', '.join(missing)}, no work order covers it")
                out({"released": sorted(c for c, o in by_car.items() if not o["actions"]), "held": sorted(c for c, o in by_car.items() if o["actions"])})
            done({"night": inp["night"], "orders": len(orders)})
    except Exception:
        pass
    write_otlp(exporter, path)
