"""Tyre fitting (sdk): a garage books a four-tyre replacement job with a stock-search sub-agent."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug

from .common import Case, last_user, register_policy
from .kit import active
from .sdkutil import ask

AGENT, ROUTE, DOMAIN, EXT = "tyre_fitting_desk", "sdk", "tyre fitting", "jsonl"
SHAPE = "intake -> vehicle lookup -> parse size -> stock sub-agent (3 suppliers, filter, LLM pick, reserve) -> pressure spec -> convert -> slot context -> LLM slot -> job card -> submit"

VEHICLES = {
    "KX19ABC": {"model": "VW Golf 2019", "size": "225/45 R17 94W", "psi": 36},
    "LM21XYZ": {"model": "Skoda Octavia 2021", "size": "205/55 R16 91V", "psi": 33},
    "YR18KLM": {"model": "Ford Focus 2018", "size": "215/50 R17 95W", "psi": 35},
    "BD20PQR": {"model": "Toyota Corolla 2020", "size": "205/55 R16 91V", "psi": 32},
    "SN22TUV": {"model": "Kia Ceed 2022", "size": "225/45 R17 94W", "psi": 36},
    "WF17GHJ": {"model": "Vauxhall Astra 2017", "size": "215/50 R17 95W", "psi": 35},
}
INPUTS = {
    "golf": "Job: reg KX19ABC, 4 tyres, season all-season, depot Leeds, slot Thursday morning",
    "octavia": "Job: reg LM21XYZ, 4 tyres, season all-season, depot Leeds, slot Wednesday morning",
    "r1": "Job: reg YR18KLM, 4 tyres, season summer, depot Leeds, slot Tuesday afternoon",
    "r2": "Job: reg BD20PQR, 4 tyres, season all-season, depot Leeds, slot Friday morning",
    "r3": "Job: reg SN22TUV, 4 tyres, season summer, depot Leeds, slot Monday afternoon",
    "r4": "Job: reg WF17GHJ, 4 tyres, season all-season, depot Leeds, slot Thursday afternoon",
}
REFS = ["r1", "r2", "r3", "r4"]
OPEN_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
CATALOGUE = {
    "NorthTread": [("Pirelli P Zero", "225/45 R17", 94, "summer"), ("Vredestein Quatrac", "225/45 R17", 94, "all-season"),
                   ("Hankook Kinergy 4S2", "205/55 R16", 91, "all-season"), ("Bridgestone Turanza", "215/50 R17", 95, "summer"),
                   ("Falken Azenis", "205/55 R16", 94, "summer")],
    "TyreHub": [("Michelin CrossClimate 2", "225/45 R17", 91, "all-season"), ("Goodyear Vector 4S", "205/55 R16", 91, "all-season"),
                ("Continental AllSeason", "215/50 R17", 95, "all-season"), ("Michelin Pilot Sport 4", "205/55 R16", 91, "summer")],
    "MotorSupply": [("Nokian Seasonproof", "225/45 R17", 94, "all-season"), ("Dunlop Sport", "225/45 R17", 94, "summer"),
                    ("Kumho Solus 4S", "215/50 R17", 95, "all-season"), ("Toyo Proxes", "205/55 R16", 91, "summer")],
}
PRICE = {"Pirelli P Zero": 89, "Vredestein Quatrac": 104, "Hankook Kinergy 4S2": 88, "Bridgestone Turanza": 112,
         "Falken Azenis": 79, "Michelin CrossClimate 2": 98, "Goodyear Vector 4S": 96, "Continental AllSeason": 118,
         "Michelin Pilot Sport 4": 115, "Nokian Seasonproof": 101, "Dunlop Sport": 99, "Kumho Solus 4S": 92, "Toyo Proxes": 84}

CASES = [
    Case("zu_tyre_01", "tyre.parse_load", "lossy_parsing", "golf", "parse_tyre_size", 1, "parse", "submit_job", 1,
         "The size parser keeps the speed rating but drops the load index, so a tyre rated below the vehicle's minimum passes the filter."),
    Case("zu_tyre_02", "tyre.pressure_units", "unit_error", "golf", "convert_pressure", 1, "other", "submit_job", 1,
         "The pressure conversion divides psi by the kPa factor, giving a bar value far below the fitting range."),
    Case("zu_tyre_03", "tyre.reserve_qty", "wrong_tool_args", "octavia", "reserve_stock", 1, "tool", "submit_job", 1,
         "The reservation is called with the number of axles instead of the number of tyres."),
    Case("zu_tyre_04", "tyre.season_filter", "tool_ignores_argument", "golf", "query_supplier", 1, "tool", "submit_job", 1,
         "The first supplier's stock search ignores the season argument and lists a summer tyre, which the model then picks."),
    Case("zu_tyre_05", "tyre.slot_notes", "context_pollution", "octavia", "gather_slot_context", 1, "other", "submit_job", 1,
         "The slot context carries the previous customer's preference note, and the planner books a Saturday the depot is closed."),
]


def _policy(body: dict) -> str:
    system = body["messages"][0]["content"]
    data = json.loads(last_user(body))
    if "tyre" in system and "Pick" in system:
        best = min(data["candidates"], key=lambda c: (c["price"], c["name"]))
        return f"PICK: {best['name']} from {best['supplier']}"
    notes = data.get("notes", [])
    day = data["requested"]
    for n in notes:
        m = re.search(r"prefers (\w+day)", n)
        if m:
            day = m.group(1) + " " + data["requested"].split()[-1]
    return json.dumps({"slot": day, "bay": 2})


register_policy("tyres", _policy)
_SHARED_NOTES: list[str] = []


@trajdebug.step(kind="input")
def intake(text: str) -> dict:
    parts = dict(p.strip().split(" ", 1) for p in text.removeprefix("Job: ").split(",") if " tyres" not in p)
    qty = int(re.search(r"(\d+) tyres", text).group(1))
    return {"reg": parts["reg"], "qty": qty, "season": parts["season"],
            "depot": parts["depot"], "slot": parts["slot"]}


@trajdebug.step(kind="tool")
def lookup_vehicle(reg: str) -> dict:
    return {"reg": reg, **VEHICLES[reg]}


@trajdebug.step(kind="parse")
def parse_tyre_size(size: str) -> dict:
    m = re.match(r"(\d+)/(\d+) R(\d+) (\d+)(\w)", size)
    load = 0 if active("tyre.parse_load") else int(m.group(4))
    return {"width": int(m.group(1)), "profile": int(m.group(2)), "rim": int(m.group(3)), "load": load, "speed": m.group(5)}


@trajdebug.step(kind="tool")
def query_supplier(supplier: str, query: dict) -> list[dict]:
    size = f"{query['width']}/{query['profile']} R{query['rim']}"
    ignore = supplier == "NorthTread" and active("tyre.season_filter")
    return [{"supplier": supplier, "name": n, "size": s, "load": li, "season": se, "price": PRICE[n]}
            for n, s, li, se in CATALOGUE[supplier] if s == size and (ignore or se == query["season"])]


@trajdebug.step(kind="other")
def filter_matches(offers: list[list[dict]], spec: dict) -> list[dict]:
    return [o for batch in offers for o in batch if o["load"] >= spec["load"]]


@trajdebug.step(kind="parse")
def parse_pick(answer: dict, candidates: list[dict]) -> dict:
    name = re.match(r"PICK: (.+) from", answer["content"]).group(1)
    return next(c for c in candidates if c["name"] == name)


@trajdebug.step(kind="tool")
def reserve_stock(args: dict) -> dict:
    return {"reservation": f"RSV-{args['supplier'][:2].upper()}-{len(args['tyre'])}", "tyre": args["tyre"], "qty": args["qty"]}


@trajdebug.step(kind="agent")
def stock_search(spec: dict, job: dict) -> dict:
    query = {**spec, "season": job["season"]}
    offers = [query_supplier(s, query) for s in sorted(CATALOGUE)]
    candidates = filter_matches(offers, spec)
    answer = ask("pick_tyre", "[tyres] Pick the cheapest suitable tyre.", {"candidates": candidates, "job": job})
    pick = parse_pick({"content": answer}, candidates)
    args = {"supplier": pick["supplier"], "tyre": pick["name"], "qty": 2 if active("tyre.reserve_qty") else job["qty"]}
    res = reserve_stock(args)
    return {"pick": pick, "reservation": res}


@trajdebug.step(kind="tool")
def pressure_spec(vehicle: dict) -> dict:
    return {"model": vehicle["model"], "psi": vehicle["psi"]}


@trajdebug.step(kind="other")
def convert_pressure(spec: dict) -> dict:
    factor = 6.894757 * 14.5038 if active("tyre.pressure_units") else 14.5038
    return {"bar": round(spec["psi"] / factor, 2)}


@trajdebug.step(kind="other")
def gather_slot_context(job: dict) -> dict:
    notes = list(_SHARED_NOTES) if active("tyre.slot_notes") else []
    return {"requested": job["slot"], "depot": job["depot"], "notes": notes}


@trajdebug.step(kind="parse")
def parse_slot(answer: dict) -> dict:
    return json.loads(answer["content"])


@trajdebug.step(kind="other")
def build_job_card(job: dict, vehicle: dict, stock: dict, pressure: dict, slot: dict) -> dict:
    return {"reg": job["reg"], "tyre": stock["pick"]["name"], "load": stock["pick"]["load"], "season": stock["pick"]["season"],
            "qty": stock["reservation"]["qty"], "bar": pressure["bar"], "slot": slot["slot"], "depot": job["depot"]}


@trajdebug.step(kind="tool")
def submit_job(card: dict, job: dict) -> dict:
    v = VEHICLES[card["reg"]]
    need = int(v["size"].split()[-1][:-1])
    if card["load"] < need:
        raise ValueError(f"job card rejected: tyre {card['tyre']} load index {card['load']} below vehicle minimum {need}")
    if card["season"] != job["season"]:
        raise ValueError(f"job card rejected: tyre {card['tyre']} is {card['season']}, customer ordered {job['season']}")
    if card["qty"] != job["qty"]:
        raise ValueError(f"job card rejected: {card['qty']} tyres reserved for a {job['qty']}-tyre job")
    if not 1.8 <= card["bar"] <= 3.5:
        raise ValueError(f"job card rejected: inflation pressure {card['bar']} bar outside 1.8-3.5 bar")
    if card["slot"].split()[0] not in OPEN_DAYS:
        raise ValueError(f"job card rejected: slot {card['slot']} outside {card['depot']} depot opening days")
    return {"status": "accepted", "job": f"JOB-{card['reg']}"}


def record(key: str, path: Path) -> None:
    text = INPUTS[key]
    try:
        with trajdebug.run(AGENT, task=text, path=str(path)):
            job = intake(text)
            vehicle = lookup_vehicle(job["reg"])
            spec = parse_tyre_size(vehicle["size"])
            stock = stock_search(spec, job)
            pressure = convert_pressure(pressure_spec(vehicle))
            ctx = gather_slot_context(job)
            slot = parse_slot({"content": ask("plan_slot", "[tyres] Plan a fitting slot; answer JSON.", ctx)})
            card = build_job_card(job, vehicle, stock, pressure, slot)
            submit_job(card, job)
    except ValueError:
        pass
    _SHARED_NOTES[:] = ["customer KX19ABC prefers Saturday for collection"]
