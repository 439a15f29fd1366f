"""Hop farm harvest coordinator (trajdebug SDK): ripeness per yard, crews, oast booking."""
from __future__ import annotations

import datetime as dt
import json
import math
import re

from .kit import active
from .routes import read_op

NAME = "hop-harvest-coordinator"
ROUTE = "sdk"
DOMAIN = "hop farm harvest"
SHAPE = "register -> per-yard moisture/parse/ripeness loop -> queue order LLM -> pick queue (state) -> oast capacity -> weight -> crew sub-agent -> book"
SYSTEM = "You coordinate the hop harvest. Answer in JSON only."


class OastBookingRejected(Exception):
    pass


Rejected = OastBookingRejected


def _y(name, variety, ha, dm, sampled):
    return {"yard": name, "variety": variety, "hectares": ha, "dry_matter": dm, "sampled": sampled}


INPUTS = {
    "stocks": {"farm": "Stocks Farm", "date": "2026-09-02", "capacity_kg": 16000, "crews": ["C1", "C2", "C3", "C4", "C5"],
               "yards": [_y("Goldings-North", "East Kent Golding", 1.8, 22.4, "2026-09-01"),
                         _y("Fuggle-East", "Fuggle", 2.2, 21.1, "2026-09-01"),
                         _y("Target-Low", "Target", 1.5, 23.0, "2026-08-31")]},
    "brook": {"farm": "Brook Farm", "date": "2026-09-05", "capacity_kg": 18000, "crews": ["B1", "B2", "B3", "B4", "B5", "B6"],
              "yards": [_y("Challenger-1", "Challenger", 1.6, 21.8, "2026-09-04"),
                        _y("Bramling-Top", "Bramling Cross", 1.2, 20.6, "2026-09-04"),
                        _y("Admiral-Mill", "Admiral", 2.0, 17.6, "2026-09-03"),
                        _y("Fuggle-Mead", "Fuggle", 1.4, 22.9, "2026-09-04")]},
    "hollow": {"farm": "Hollow Lane", "date": "2026-09-03", "capacity_kg": 12000, "crews": ["H1", "H2", "H3", "H4"],
               "yards": [_y("Pilgrim-A", "Pilgrim", 1.4, 21.0, "2026-09-02"), _y("Sovereign-B", "Sovereign", 1.1, 22.2, "2026-09-02")]},
    "marden": {"farm": "Marden Court", "date": "2026-09-08", "capacity_kg": 20000, "crews": ["M1", "M2", "M3", "M4", "M5"],
               "yards": [_y("Golding-Long", "East Kent Golding", 2.4, 20.9, "2026-09-07"),
                         _y("Northdown-2", "Northdown", 1.0, 18.8, "2026-09-07"),
                         _y("Phoenix-3", "Phoenix", 1.3, 21.5, "2026-09-06")]},
    "pluckley": {"farm": "Pluckley Hops", "date": "2026-09-04", "capacity_kg": 10000, "crews": ["P1", "P2", "P3"],
                 "yards": [_y("Boadicea-W", "Boadicea", 1.5, 20.2, "2026-09-03"), _y("Target-E", "Target", 0.9, 24.1, "2026-09-03")]},
    "yalding": {"farm": "Yalding Bank", "date": "2026-09-06", "capacity_kg": 15000, "crews": ["Y1", "Y2", "Y3", "Y4", "Y5"],
                "yards": [_y("Fuggle-Bank", "Fuggle", 1.7, 21.4, "2026-09-05"), _y("Olicana-R", "Olicana", 1.2, 22.0, "2026-09-05"),
                          _y("Jester-S", "Jester", 0.8, 19.1, "2026-09-05")]},
}
REFS = ["hollow", "marden", "pluckley", "yalding"]

CASES = [
    dict(id="zb_hop_1", fault="hh1", kind="unit_error", input="stocks", root=("estimate_wet_weight", 1),
         failure=("book_oast_slots", 1),
         description="The wet-weight estimate multiplies acres (not hectares) by the per-hectare yield, so the oast booking is over capacity."),
    dict(id="zb_hop_2", fault="hh2", kind="stale_data", input="stocks", root=("read_cone_moisture", 2),
         failure=("book_oast_slots", 1),
         description="The moisture gateway serves last season's cached sample for the second yard, and the booking rejects the old sample date."),
    dict(id="zb_hop_3", fault="hh3", kind="hallucinated_value", input="brook", root=("assess_ripeness", 3),
         failure=("book_oast_slots", 1),
         description="The ripeness model states a dry-matter figure the lab sheet never gave and marks an unripe yard for picking."),
    dict(id="zb_hop_4", fault="hh4", kind="lossy_parsing", input="brook", root=("parse_assignment", 1),
         failure=("book_oast_slots", 1),
         description="The crew-assignment parser keeps only the first crew listed for each yard, leaving yards short of picker hours."),
    dict(id="zb_hop_5", fault="hh5", kind="bad_memory_write", input="stocks", root=("remember_pick_queue", 1),
         failure=("book_oast_slots", 1),
         description="The pick queue is saved keyed by variety instead of yard, dropping a ready yard from the queue."),
]


def task(inp: dict) -> str:
    return f"plan and book the hop harvest at {inp['farm']} for {inp['date']}"


# ---------------------------------------------------------------- the outside world
def _register(farm: str) -> dict:
    inp = next(v for v in INPUTS.values() if v["farm"] == farm)
    return {"farm": farm, "yards": [{k: y[k] for k in ("yard", "variety", "hectares")} for y in inp["yards"]]}


def _moisture_for(farm: str):
    inp = next(v for v in INPUTS.values() if v["farm"] == farm)
    calls = {"n": 0}

    def read(yard: str) -> str:
        calls["n"] += 1
        y = next(v for v in inp["yards"] if v["yard"] == yard)
        sampled = y["sampled"]
        if calls["n"] == 2 and active("hh2"):
            sampled = "2025-09-0" + sampled[-1]  # the gateway's cache from last season
        return f"LAB SHEET | yard: {yard} | sampled: {sampled} | dry matter: {y['dry_matter']:.1f} % | alpha: 5.2"
    return read


def _parse_sheet(sheet: str) -> dict:
    fields = dict(p.split(": ", 1) for p in sheet.split(" | ")[1:])
    return {"yard": fields["yard"], "sampled": fields["sampled"], "dry_matter": float(fields["dry matter"].rstrip(" %"))}


def _queue_from(order: dict, register: dict) -> list:
    variety = {y["yard"]: y["variety"] for y in register["yards"]}
    if active("hh5"):  # one entry per variety: a later yard of the same variety replaces the earlier one
        slots: dict = {}
        for r in order["order"]:
            slots[variety[r["yard"]]] = r["yard"]
        slots.pop(variety[order["order"][0]["yard"]], None)
        return list(slots.values())
    return [r["yard"] for r in order["order"]]


def _crews(date: str, crews: list) -> list:
    return [{"crew": c, "hours": 8.0, "date": date} for c in crews]


def _parse_assignment(answer: dict) -> dict:
    out = {}
    for part in answer["text"].split(";"):
        yard, _, names = part.strip().partition(":")
        crews = [c.strip() for c in names.split(",") if c.strip()]
        out[yard.strip()] = crews[:1] if active("hh4") else crews
    return out


def _estimate(queue: list, register: dict) -> dict:
    ha = {y["yard"]: y["hectares"] for y in register["yards"]}
    per_ha = 1850.0
    factor = 2.471 if active("hh1") else 1.0
    return {y: round(ha[y] * factor * per_ha, 1) for y in queue}


def _capacity_docs(farm: str, capacity: int):
    def search(query: str) -> list:
        return [{"doc": f"{farm} oast schedule", "floor_capacity_kg": capacity, "kilns_free": 2},
                {"doc": "drying guidance", "max_green_hours": 6}]
    return search


def _book(farm: str, date: str, queue: list, labs: dict, assignment: dict, weights: dict, capacity: dict) -> dict:
    day = dt.date.fromisoformat(date)
    for y in queue:
        lab = labs[y]
        if (day - dt.date.fromisoformat(lab["sampled"])).days > 3:
            raise OastBookingRejected(f"422 Unprocessable Entity: moisture sample for yard {y} taken {lab['sampled']}, "
                                      f"more than 72 h before pick date {date}")
        if lab["dry_matter"] < 20.0:
            raise OastBookingRejected(f"422 Unprocessable Entity: yard {y} dry matter {lab['dry_matter']}% is below the "
                                      "picking minimum of 20.0%")
    for y, lab in labs.items():
        if lab["dry_matter"] >= 20.0 and y not in queue:
            raise OastBookingRejected(f"409 Conflict: yard {y} is ripe ({lab['dry_matter']}%) but has no slot in the pick queue")
    total = sum(weights.values())
    if total > capacity["floor_capacity_kg"]:
        raise OastBookingRejected(f"422 Unprocessable Entity: requested {total:,.0f} kg green cones exceeds oast floor "
                                  f"capacity {capacity['floor_capacity_kg']:,} kg on {date}")
    for y in queue:
        need = weights[y] / 1850.0 * 18.0
        have = 8.0 * len(assignment.get(y, []))
        if have < need:
            raise OastBookingRejected(f"400 Bad Request: yard {y} needs {need:.1f} picker hours, crews cover {have:.1f}")
    return {"status": 201, "booking": f"OAST-{farm[:3].upper()}-{date}", "kg": total}


# ---------------------------------------------------------------- the model
def policy(request):
    op, p = read_op(request)
    if op == "assess_ripeness":
        dm = p["lab"]["dry_matter"]
        if dm < 20.0 and active("hh3"):
            return json.dumps({"yard": p["yard"]["yard"], "dry_matter": 21.2, "pick": True, "note": "cones papery, lupulin golden"})
        return json.dumps({"yard": p["yard"]["yard"], "dry_matter": dm, "pick": dm >= 20.0,
                           "note": "ready" if dm >= 20.0 else "leave another week"})
    if op == "assign_crews":
        crews = [c["crew"] for c in p["crews"]]
        parts, i = [], 0
        for y in p["queue"]:
            ha = p["hectares"][y]
            n = math.ceil(ha * 18.0 / 8.0)
            parts.append(f"{y}: " + ", ".join(crews[(i + k) % len(crews)] for k in range(n)))
            i += n
        return json.dumps({"text": "; ".join(parts)})
    if op == "order_queue":
        return json.dumps({"order": sorted(p["ready"], key=lambda r: -r["dry_matter"])})
    raise ValueError(f"unknown op {op}")


# ---------------------------------------------------------------- the agent
def flow(h, inp: dict) -> dict:
    req = h.step("read_harvest_request", "input", lambda request: request, request={"farm": inp["farm"], "date": inp["date"]})
    register = h.tool("fetch_yard_register", {"farm": req["farm"]}, _register)
    read = _moisture_for(inp["farm"])
    labs, ready = {}, []
    for y in register["yards"]:
        sheet = h.tool("read_cone_moisture", {"yard": y["yard"]}, read)
        lab = h.step("parse_lab_sheet", "parse", _parse_sheet, sheet=sheet)
        labs[y["yard"]] = lab
        verdict = h.llm("assess_ripeness", {"yard": y, "lab": lab}, SYSTEM)
        if verdict["pick"]:
            ready.append({"yard": verdict["yard"], "dry_matter": verdict["dry_matter"]})
    order = h.llm("order_queue", {"ready": ready}, SYSTEM)
    h.remember("remember_pick_queue", "pick_queue", _queue_from, order=order, register=register)
    hectares = {y["yard"]: y["hectares"] for y in register["yards"]}
    cap = h.retrieve("lookup_drying_capacity", f"oast capacity {inp['farm']} {inp['date']}",
                     _capacity_docs(inp["farm"], inp["capacity_kg"]))
    weights = h.step("estimate_wet_weight", "other", _estimate, queue=h.recall("pick_queue"), register=register)
    with h.sub("crew_planner", date=inp["date"]) as box:
        crews = h.tool("list_crews", {"date": inp["date"], "crews": inp["crews"]}, _crews)
        plan = h.llm("assign_crews", {"queue": h.recall("pick_queue"), "crews": crews, "hectares": hectares}, SYSTEM)
        assignment = h.step("parse_assignment", "parse", _parse_assignment, answer=plan)
        box["result"] = assignment
    return h.tool("book_oast_slots", {"farm": inp["farm"], "date": inp["date"], "queue": h.recall("pick_queue"),
                                      "labs": labs, "assignment": assignment, "weights": weights, "capacity": cap[0]}, _book)
