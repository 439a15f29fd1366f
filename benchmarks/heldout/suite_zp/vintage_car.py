"""Vintage car restoration workshop: quotes parts for a restoration job, books the paint shop through a
sub-agent and submits the work order to the workshop system (recording SDK)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import ApiError, Case, chat_json, last_user_json
from .kit import active

NAME = "restoration-quoter"
ROUTE = "sdk"
DOMAIN = "vintage car restoration"
SHAPE = "plan -> fx -> per part: catalogue search (retry), parse listing, pick supplier, remember -> paint-shop sub-agent -> assemble (GBP) -> submit work order"

INPUTS: dict[str, dict[str, Any]] = {
    "etype": {"job": "JOB-5521", "car": {"make": "Jaguar", "model": "E-Type", "series": "S1", "year": 1964, "reg": "KJH 412B"},
              "parts": ["rear wheel bearing kit", "front chrome bumper", "door seal set"], "budget_gbp": 1200.0,
              "colour": "Opalescent Silver Blue"},
    "mgb": {"job": "JOB-5534", "car": {"make": "MG", "model": "MGB", "series": "Mk1", "year": 1966, "reg": "EVX 90D"},
            "parts": ["door seal set", "front chrome bumper", "clutch master cylinder"], "budget_gbp": 600.0,
            "colour": "Tartan Red"},
    "mini": {"job": "JOB-5540", "car": {"make": "Austin", "model": "Mini", "series": "Mk1", "year": 1962, "reg": "312 BHK"},
             "parts": ["door seal set", "rear wheel bearing kit"], "budget_gbp": 600.0, "colour": "Almond Green"},
    "healey": {"job": "JOB-5547", "car": {"make": "Austin-Healey", "model": "3000", "series": "Mk2", "year": 1962, "reg": "WPL 58"},
               "parts": ["front chrome bumper", "clutch master cylinder"], "budget_gbp": 700.0, "colour": "Healey Blue"},
    "beetle": {"job": "JOB-5552", "car": {"make": "Volkswagen", "model": "Beetle", "series": "1200", "year": 1965, "reg": "DRT 771C"},
               "parts": ["rear wheel bearing kit", "door seal set", "clutch master cylinder"], "budget_gbp": 800.0,
               "colour": "Sea Blue"},
    "spitfire": {"job": "JOB-5561", "car": {"make": "Triumph", "model": "Spitfire", "series": "Mk2", "year": 1966, "reg": "HNO 322D"},
                 "parts": ["front chrome bumper", "door seal set"], "budget_gbp": 650.0, "colour": "Signal Red"},
}
MAIN = ("etype", "mgb")
REFS = ("mini", "healey", "beetle", "spitfire")

CASES = [
    Case("vcr-1", "lossy_parsing", "etype", ("parse_listing", 2), ("submit_work_order", 1),
         "The listing parser cuts the revision suffix off the bumper's part number, so the work order names a part the catalogue does not hold."),
    Case("vcr-2", "unit_error", "mgb", ("assemble_work_order", 1), ("submit_work_order", 1),
         "Assembling the order multiplies the dollar prices by the GBP/USD rate instead of dividing, so the order total exceeds the authorised budget."),
    Case("vcr-3", "wrong_retrieval", "etype", ("search_parts_catalog", 4), ("submit_work_order", 1),
         "The catalogue search for the door seals returns Series 2 listings only, so the chosen seal set does not fit the Series 1 car."),
    Case("vcr-4", "bad_memory_write", "mgb", ("record_quote", 2), ("submit_work_order", 1),
         "The second quote is remembered under the first part's key, so the work order repeats one part and misses another."),
    Case("vcr-5", "subagent_wrong_entity", "etype", ("paint_brief", 1), ("submit_work_order", 1),
         "The paint-shop sub-agent's brief names another customer's registration, so the paint code booked belongs to a different car."),
]

# ---------------------------------------------------------------------------------------------------------
# the outside world

CATALOGUE = {
    "rear wheel bearing kit": [
        "PN: WB-1180 | fits: Jaguar E-Type S1 1961-1968; MG MGB Mk1 1962-1967; Volkswagen Beetle 1200 1960-1967; Austin Mini Mk1 1959-1967 | price: USD 96.00 | stock: 7",
        "PN: WB-1192 | fits: Jaguar E-Type S1 1961-1968 | price: USD 131.50 | stock: 2",
    ],
    "front chrome bumper": [
        "PN: BD-3301-R | fits: Jaguar E-Type S1 1961-1968; MG MGB Mk1 1962-1967 | price: USD 412.00 | stock: 3",
        "PN: BD-3309 | fits: Austin-Healey 3000 Mk2 1961-1963; Triumph Spitfire Mk2 1965-1967 | price: USD 388.00 | stock: 1",
    ],
    "door seal set": [
        "PN: DS-7702 | fits: Jaguar E-Type S1 1961-1968; MG MGB Mk1 1962-1967; Austin Mini Mk1 1959-1967; Volkswagen Beetle 1200 1960-1967; Triumph Spitfire Mk2 1965-1967 | price: USD 74.25 | stock: 12",
        "PN: DS-7710 | fits: Jaguar E-Type S2 1969-1971 | price: USD 69.90 | stock: 9",
    ],
    "clutch master cylinder": [
        "PN: CM-4410 | fits: MG MGB Mk1 1962-1967; Austin-Healey 3000 Mk2 1961-1963; Volkswagen Beetle 1200 1960-1967 | price: USD 158.00 | stock: 5",
    ],
}
PAINT_REGISTER = {  # registration -> (vehicle, paint code, colour)
    "KJH 412B": ("Jaguar E-Type S1", "JAG-0128", "Opalescent Silver Blue"),
    "KJH 412C": ("Jaguar Mk2 3.8", "JAG-0145", "Old English White"),
    "EVX 90D": ("MG MGB Mk1", "MG-0211", "Tartan Red"),
    "312 BHK": ("Austin Mini Mk1", "BMC-0033", "Almond Green"),
    "WPL 58": ("Austin-Healey 3000 Mk2", "BMC-0090", "Healey Blue"),
    "DRT 771C": ("Volkswagen Beetle 1200", "VW-L360", "Sea Blue"),
    "HNO 322D": ("Triumph Spitfire Mk2", "TR-0032", "Signal Red"),
}
FX_GBPUSD = 1.27


def policy(req: Any) -> str:
    p = last_user_json(req.body)
    task = p.get("task")
    if task == "plan":
        return json.dumps({"stages": ["strip", "source parts", "paint", "reassembly"], "part_order": p["parts"]})
    if task == "pick_listing":
        car = p["car"]
        want = f"{car['make']} {car['model']} {car['series']}"
        for lst in p["listings"]:
            if want in lst["fits"]:
                return json.dumps({"part_number": lst["part_number"], "reason": f"fits {want}"})
        return json.dumps({"part_number": p["listings"][0]["part_number"], "reason": "closest listing"})
    if task == "paint_brief":
        reg = p["reg"]
        if active("vcr-5"):
            reg = "KJH 412C"  # the previous customer's car from the shop's thread
        return json.dumps({"reg": reg, "colour": p["colour"], "coats": 3, "booth": "B2"})
    if task == "booth_slot":
        return json.dumps({"booth": p["booth"], "start": "2027-04-12", "days": 3})
    return json.dumps({"note": "no task"})


_attempts = {"n": 0}


@trajdebug.step(kind="input")
def intake(job: dict) -> dict:
    return {"job": job["job"], "car": dict(job["car"]), "parts": list(job["parts"]),
            "budget_gbp": job["budget_gbp"], "colour": job["colour"]}


@trajdebug.step(kind="llm")
def plan_restoration(client: OpenAI, job: dict) -> dict:
    _, out = chat_json(client, "You plan classic car restorations.", {"task": "plan", "job": job["job"], "parts": job["parts"]})
    return out


@trajdebug.step(kind="tool")
def fetch_fx_rate(pair: str) -> dict:
    return {"pair": pair, "rate": FX_GBPUSD, "meaning": "1 GBP = 1.27 USD", "as_of": "2027-04-01"}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="retrieval")
def search_parts_catalog(part: str, car: dict) -> list[str]:
    _attempts["n"] += 1
    if _attempts["n"] == 1:
        raise ConnectionError("parts catalogue gateway reset the connection")
    hits = CATALOGUE[part]
    if active("vcr-3") and part == "door seal set":
        hits = [h for h in hits if "E-Type S2" in h]  # fuzzy model match on "E-Type" only
    return list(hits)


@trajdebug.step(kind="parse")
def parse_listing(lines: list[str]) -> list[dict]:
    out = []
    for line in lines:
        fields = dict(f.split(": ", 1) for f in line.split(" | "))
        pn = fields["PN"]
        if active("vcr-1"):
            pn = re.sub(r"-[A-Z]$", "", pn)
        cur, amount = fields["price"].split()
        out.append({"part_number": pn, "fits": fields["fits"], "currency": cur, "price": float(amount),
                    "stock": int(fields["stock"])})
    return out


@trajdebug.step(kind="llm")
def pick_listing(client: OpenAI, car: dict, part: str, listings: list[dict]) -> dict:
    _, out = chat_json(client, "You choose parts suppliers for restorations.",
                       {"task": "pick_listing", "car": car, "part": part, "listings": listings})
    chosen = next(x for x in listings if x["part_number"] == out["part_number"])
    return {**out, "listing": chosen}


@trajdebug.step(kind="state")
def record_quote(parts: list[str], index: int, quote: dict) -> dict:
    key = parts[index]
    if active("vcr-4") and index > 0:
        key = parts[index - 1]
    trajdebug.current_run().state[f"quote:{key}"] = quote
    return {"key": f"quote:{key}", "part_number": quote["part_number"]}


@trajdebug.step(kind="llm")
def paint_brief(client: OpenAI, job: dict) -> dict:
    _, out = chat_json(client, "You are the paint shop coordinator.",
                       {"task": "paint_brief", "reg": job["car"]["reg"], "colour": job["colour"]})
    return out


@trajdebug.step(kind="tool")
def lookup_paint_code(reg: str) -> dict:
    vehicle, code, colour = PAINT_REGISTER[reg]
    return {"reg": reg, "vehicle": vehicle, "paint_code": code, "colour": colour}


@trajdebug.step(kind="llm")
def booth_slot(client: OpenAI, brief: dict) -> dict:
    _, out = chat_json(client, "You schedule the paint booths.", {"task": "booth_slot", "booth": brief["booth"]})
    return out


@trajdebug.step(kind="tool")
def reserve_booth(slot: dict, paint: dict) -> dict:
    return {"reservation": f"PB-{slot['booth']}-{slot['start']}", "paint_code": paint["paint_code"], "days": slot["days"]}


@trajdebug.step(kind="agent")
def paint_shop(client: OpenAI, job: dict) -> dict:
    brief = paint_brief(client, job)
    paint = lookup_paint_code(brief["reg"])
    slot = booth_slot(client, brief)
    booking = reserve_booth(slot, paint)
    return {"paint": paint, "booking": booking}


@trajdebug.step(kind="other")
def assemble_work_order(job: dict, paint: dict, fx: dict) -> dict:
    state = trajdebug.current_run().state
    lines = []
    for part in job["parts"]:
        q = state.get(f"quote:{part}")
        if q is not None:
            gbp = q["price_usd"] * fx["rate"] if active("vcr-2") else q["price_usd"] / fx["rate"]
            lines.append({"part": part, "part_number": q["part_number"], "price_gbp": round(gbp, 2)})
    total = round(sum(x["price_gbp"] for x in lines), 2)
    return {"job": job["job"], "reg": job["car"]["reg"], "lines": lines, "total_gbp": total,
            "paint_code": paint["paint"]["paint_code"], "booth": paint["booking"]["reservation"]}


def _fits(fits: str, car: dict) -> bool:
    want = f"{car['make']} {car['model']} {car['series']}"
    for entry in fits.split("; "):
        if entry.startswith(want + " "):
            lo, hi = entry.rsplit(" ", 1)[1].split("-")
            return int(lo) <= car["year"] <= int(hi)
    return False


@trajdebug.step(kind="tool")
def submit_work_order(order: dict, job: dict) -> dict:
    known = {}
    for lines in CATALOGUE.values():
        for line in lines:
            f = dict(x.split(": ", 1) for x in line.split(" | "))
            known[f["PN"]] = f["fits"]
    car = job["car"]
    for line in order["lines"]:
        pn = line["part_number"]
        if pn not in known:
            raise ApiError(422, {"error": "unknown_part", "detail": f"part number {pn} is not in the catalogue"})
        if not _fits(known[pn], car):
            raise ApiError(422, {"error": "fitment", "detail": f"part {pn} ({known[pn]}) does not fit {car['make']} {car['model']} {car['series']} {car['year']}"})
    listed = [x["part"] for x in order["lines"]]
    pns = [x["part_number"] for x in order["lines"]]
    if sorted(listed) != sorted(job["parts"]) or len(set(pns)) != len(pns):
        raise ApiError(422, {"error": "lines_mismatch", "detail": f"work order {order['job']} lists part numbers {pns}; job authorises {job['parts']}"})
    if order["total_gbp"] > job["budget_gbp"]:
        raise ApiError(422, {"error": "over_budget", "detail": f"order total {order['total_gbp']:.2f} GBP exceeds the authorised {job['budget_gbp']:.2f} GBP"})
    vehicle = PAINT_REGISTER[car["reg"]][1]
    if order["paint_code"] != vehicle:
        raise ApiError(409, {"error": "paint_mismatch", "detail": f"paint code {order['paint_code']} is not recorded for vehicle {car['reg']}"})
    return {"status": 201, "work_order": f"WO-{order['job']}", "total_gbp": order["total_gbp"]}


def record(inp_id: str, out: Path, base_url: str) -> None:
    job_in = INPUTS[inp_id]
    client = OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    _attempts["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"quote and order parts for {job_in['job']}", path=str(out)):
            job = intake(job_in)
            plan = plan_restoration(client, job)
            fx = fetch_fx_rate("GBP/USD")
            for i, part in enumerate(plan["part_order"]):
                hits = search_parts_catalog(part, job["car"])
                listings = parse_listing(hits)
                pick = pick_listing(client, job["car"], part, listings)
                record_quote(job["parts"], i, {"part_number": pick["part_number"], "price_usd": pick["listing"]["price"]})
            paint = paint_shop(client, job)
            order = assemble_work_order(job, paint, fx)
            submit_work_order(order, job)
    except ApiError:
        pass
