"""Dental lab crown orders (sdk route): parse a prescription, plan, design each unit, mill, order ingots, QA, ship."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.heldout.suite_s import kit
from openai import OpenAI

import trajdebug


AGENT = "crown-lab"
ROUTE = "sdk"
EXT = "jsonl"
DOMAIN = "dental lab crown and bridge orders"
SHAPE = "parse, model plan, per-unit sub-agent (scan, design, state write), mill reservation retry, per-unit milling, ingot order, QA check, courier, model summary"

MATERIALS = {"zirconia": {"min_wall": 0.5, "family": "ZR"}, "emax": {"min_wall": 1.0, "family": "EM"}}
CATALOG = {"rev": "2025-2", "codes": {"A1": "24", "A2": "24", "A3": "26", "B1": "25", "C2": "25"}}
OLD_CATALOG = {"rev": "2023-1", "codes": {"A1": "19", "A2": "19", "A3": "19", "B1": "19", "C2": "19"}}
PREP = {11: 7.2, 12: 6.4, 13: 7.8, 14: 6.1, 15: 5.9, 16: 5.2, 21: 7.0, 24: 6.3, 25: 5.8, 26: 5.4, 36: 5.1, 46: 5.0}


class LabError(RuntimeError):
    pass


def _order(ref, clinic, units, bridge=None, due="2026-12-14"):
    text = f"REF {ref} | clinic {clinic} | units: " + "; ".join(f"{t} {m} {s}" for t, m, s in units)
    if bridge:
        text += f" | bridge {bridge}"
    return text + f" | due {due}"


CASES = [
    {"case": "crown_lab_wall_units", "fault": "cl1", "kind": "unit_error", "root": "compute_design",
     "fail": "mill_job", "marker": '"wall_mm": 0.13',
     "input": _order("DL-40211", "Harbourside Dental", [(24, "zirconia", "A2"), (25, "zirconia", "A2"), (26, "emax", "A3")])},
    {"case": "crown_lab_bridge_span", "fault": "cl2", "kind": "off_by_one", "root": "parse_rx",
     "fail": "qa_check", "marker": '"span_teeth": [14, 15]',
     "input": _order("DL-40388", "Northgate Smiles", [(14, "zirconia", "A3"), (15, "zirconia", "A3"), (16, "zirconia", "A3")], "14-16")},
    {"case": "crown_lab_ingot_catalog", "fault": "cl3", "kind": "stale_data", "root": "shade_catalog",
     "fail": "order_ingots", "marker": "2023-1",
     "input": _order("DL-40412", "Meadow Lane Clinic", [(11, "emax", "A1"), (21, "emax", "A1")])},
    {"case": "crown_lab_scan_archive", "fault": "cl4", "kind": "swallowed_error", "root": "fetch_scan",
     "fail": "mill_job", "marker": '"prep_height_mm": 0.0',
     "input": _order("DL-40457", "Riverside Dental Care", [(36, "zirconia", "B1"), (46, "zirconia", "B1")])},
    {"case": "crown_lab_unit_memory", "fault": "cl5", "kind": "bad_memory_write", "root": "remember_unit",
     "fail": "qa_check", "marker": '"tooth": 15, "material": "zirconia"',
     "input": _order("DL-40503", "Old Town Orthodontics", [(14, "zirconia", "A2"), (15, "emax", "A2"), (16, "zirconia", "A2")], "14-16")},
]
REFS = [
    _order("DL-39001", "Hillcrest Dental", [(12, "emax", "B1"), (13, "emax", "B1")]),
    _order("DL-39017", "Quayside Clinic", [(24, "zirconia", "C2"), (25, "zirconia", "C2"), (26, "zirconia", "C2")], "24-26"),
    _order("DL-39042", "Elm Street Dental", [(36, "zirconia", "A3")]),
    _order("DL-39088", "Parkview Smiles", [(11, "emax", "A2"), (21, "emax", "A2"), (14, "zirconia", "A1")]),
]


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = msgs[-1]["content"]
    if system.startswith("You plan"):
        order = json.loads(user)
        teeth = [u["tooth"] for u in order["units"]]
        return json.dumps({"order_ref": order["ref"], "sequence": sorted(teeth), "priority": "standard"})
    if system.startswith("You summarise"):
        data = json.loads(user)
        return f"Order {data['ref']}: {len(data['jobs'])} units milled, courier {data['courier']} booked."
    return "OK"


def _chat(client, system, payload):
    reply = client.chat.completions.create(
        model="lab-planner", messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
    )
    return reply.choices[0].message.content


@trajdebug.step(kind="input")
def intake(text: str) -> str:
    return text


@trajdebug.step(kind="parse")
def parse_rx(text: str) -> dict:
    fields = dict(part.strip().split(" ", 1) for part in text.split("|"))
    units = []
    for item in fields["units:"].split(";") if "units:" in fields else fields["units"].split(";"):
        tooth, material, shade = item.split()
        units.append({"tooth": int(tooth), "material": material, "shade": shade})
    order = {"ref": fields["REF"], "clinic": fields["clinic"], "units": units, "due": fields["due"]}
    if "bridge" in fields:
        lo, hi = (int(x) for x in fields["bridge"].split("-"))
        end = hi if kit.active("cl2") else hi + 1
        order["bridge"] = fields["bridge"]
        order["span_teeth"] = list(range(lo, end))
    return order


@trajdebug.step(kind="llm")
def plan_work(client, order: dict) -> dict:
    return json.loads(_chat(client, "You plan the lab's work sequence for a crown order. Answer JSON.", order))


@trajdebug.step(kind="tool")
def shade_catalog(materials: list) -> dict:
    cat = OLD_CATALOG if kit.active("cl3") else CATALOG
    return {"rev": cat["rev"], "ingots": {f"{MATERIALS[m]['family']}-{s}-{c}": [m, s] for m in materials for s, c in cat["codes"].items()}}


@trajdebug.step(kind="retrieval")
def fetch_scan(ref: str, tooth: int) -> dict:
    try:
        if kit.active("cl4") and tooth == 46:
            raise TimeoutError("scan archive read timed out")
        height = PREP[tooth]
        return {"scan_id": f"{ref}-S{tooth}", "tooth": tooth, "prep_height_mm": height, "margin_um": 40}
    except TimeoutError:
        return {"scan_id": f"{ref}-S{tooth}", "tooth": tooth, "prep_height_mm": 0.0, "margin_um": 40}


@trajdebug.step(kind="other")
def compute_design(unit: dict, scan: dict) -> dict:
    wall = round(min(2.0, 0.2 * scan["prep_height_mm"]), 2)
    if kit.active("cl1") and unit["tooth"] == 24:
        wall = round(wall / 10, 2)
    return {"tooth": unit["tooth"], "wall_mm": wall, "crown_height_mm": round(scan["prep_height_mm"] + 1.5, 1)}


@trajdebug.step(kind="state")
def remember_unit(unit: dict, design: dict, ingot: str, previous: dict | None) -> dict:
    material = unit["material"]
    if kit.active("cl5") and previous is not None:
        material = previous["material"]
    record = {"tooth": unit["tooth"], "material": material, "ingot": ingot, "wall_mm": design["wall_mm"],
              "crown_height_mm": design["crown_height_mm"]}
    trajdebug.current_run().state[f"unit:{unit['tooth']}"] = record
    return record


@trajdebug.step(kind="tool")
def reserve_mill(ref: str, attempt: int) -> dict:
    if attempt == 1:
        return {"status": "busy", "retry_after_s": 0}
    return {"status": "reserved", "mill": "M5-2", "slot": f"{ref}-slot"}


@trajdebug.step(kind="tool")
def mill_job(tooth: int, slot: str) -> dict:
    unit = trajdebug.current_run().state[f"unit:{tooth}"]
    material = MATERIALS[unit["material"]]
    if unit["crown_height_mm"] < 4.0:
        raise LabError(f"CAM server refused job {slot}/{tooth}: crown height {unit['crown_height_mm']} mm outside 4.0-11.0 mm")
    if unit["wall_mm"] < material["min_wall"]:
        raise LabError(f"CAM server refused job {slot}/{tooth}: wall {unit['wall_mm']} below {material['min_wall']} for {unit['material']}")
    return {"tooth": tooth, "job": f"{slot}/{tooth}", "material": unit["material"], "minutes": 18}


@trajdebug.step(kind="tool")
def order_ingots(codes: list, ) -> dict:
    current = {f"{MATERIALS[m]['family']}-{s}-{c}" for m in MATERIALS for s, c in CATALOG["codes"].items()}
    for code in codes:
        if code not in current:
            raise LabError(f"supplier order rejected: item {code} is not orderable (HTTP 422)")
    return {"po": "PO-" + str(len(codes)) + "-" + codes[0], "lines": len(codes)}


@trajdebug.step(kind="condition")
def qa_check(order: dict, jobs: list) -> dict:
    milled = {j["tooth"]: j["material"] for j in jobs}
    if "bridge" in order:
        lo, hi = (int(x) for x in order["bridge"].split("-"))
        missing = [t for t in range(lo, hi + 1) if t not in order["span_teeth"]]
        if missing:
            raise LabError(f"QA hold on {order['ref']}: bridge {order['bridge']} framework is missing pontic/abutment {missing}")
    for u in order["units"]:
        if milled.get(u["tooth"]) != u["material"]:
            raise LabError(f"QA hold on {order['ref']}: unit {u['tooth']} milled in {milled.get(u['tooth'])}, prescribed {u['material']}")
    return {"ref": order["ref"], "passed": True, "units": len(jobs)}


@trajdebug.step(kind="tool")
def book_courier(ref: str, clinic: str, due: str) -> dict:
    return {"ref": ref, "courier": "DX-" + ref[-3:], "deliver_by": due, "clinic": clinic}


@trajdebug.step(kind="llm")
def summarise(client, data: dict) -> str:
    return _chat(client, "You summarise a finished lab order for the clinic.", data)


@trajdebug.step(kind="output")
def deliver(text: str) -> str:
    return text


def record(text: str, path: Path, server) -> None:
    server.use(policy)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(AGENT, path=str(path), task=f"process lab order {text.split('|')[0].strip()}"):
            order = parse_rx(intake(text))
            plan = plan_work(client, order)
            cat = shade_catalog(sorted({u["material"] for u in order["units"]}))
            by_tooth = {u["tooth"]: u for u in order["units"]}
            previous = None
            codes = []
            for tooth in plan["sequence"]:
                unit = by_tooth[tooth]
                with trajdebug.step("unit_design", kind="agent", input={"tooth": tooth}):
                    scan = fetch_scan(order["ref"], tooth)
                    design = compute_design(unit, scan)
                    code = next(c for c, (m, s) in cat["ingots"].items() if m == unit["material"] and s == unit["shade"])
                    previous = remember_unit(unit, design, code, previous)
                    codes.append(code)
            attempt = 1
            while (slot := reserve_mill(order["ref"], attempt))["status"] != "reserved":
                attempt += 1
            jobs = [mill_job(t, slot["slot"]) for t in plan["sequence"]]
            po = order_ingots(sorted(set(codes)))
            qa = qa_check(order, jobs)
            courier = book_courier(order["ref"], order["clinic"], order["due"])
            text_out = summarise(client, {"ref": order["ref"], "jobs": jobs, "courier": courier["courier"], "po": po["po"], "qa": qa})
            deliver(text_out)
    except LabError:
        pass
