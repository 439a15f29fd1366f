"""Vending machine restocking: build a van load for one route (trajdebug SDK)."""
from __future__ import annotations

import json

import trajdebug

from .common import Case, last_user, openai_client, policy, sdk_chat
from .kit import active, planted

AGENT, ROUTE, DOMAIN = "vending-restocker", "sdk", "vending machine restocking"
SHAPE = "route -> per-machine telemetry loop (retry) -> needs -> LLM stop plan -> warehouse -> cash sub-agent -> van load"
MODEL = "zt-vending"

ROUTES = {
    "R-EAST": ["VM-11", "VM-12", "VM-14", "VM-17"],
    "R-DOCKS": ["VM-21", "VM-23", "VM-24"],
    "R-CAMPUS": ["VM-31", "VM-32", "VM-33"],
    "R-HOSP": ["VM-41", "VM-42"],
    "R-MALL": ["VM-51", "VM-52", "VM-53"],
    "R-DEPOT": ["VM-61", "VM-62", "VM-63", "VM-64"],
}
REFS = ["R-CAMPUS", "R-HOSP", "R-MALL", "R-DEPOT"]
SKUS = {"A1": ("cola 330ml", 350), "A2": ("water 500ml", 520), "B1": ("crisps", 40), "B2": ("pretzels", 60),
        "C1": ("choc bar", 50), "C2": ("granola bar", 45), "D1": ("juice 250ml", 270)}
PAR = 10


def _counts(machine: str, day: int = 0) -> dict[str, int]:
    seed = sum(map(ord, machine)) + day * 5
    return {sku: (seed * (i + 3)) % 8 + day * 4 for i, sku in enumerate(SKUS)}


@policy(MODEL)
def _model(msgs):
    req = json.loads(last_user(msgs))
    memo = " ".join(req.get("memos", []))
    stops = [m for m in req["needs"] if m not in memo]
    loads = {m: req["needs"][m] for m in stops}
    if active("vend_plan"):
        last = stops[-1]
        loads[last] = {k: v for k, v in loads[last].items() if v >= 5}
    return json.dumps({"stops": stops, "loads": loads})


@trajdebug.step(kind="tool")
def load_route(route: str) -> dict:
    return {"route": route, "machines": ROUTES[route], "van": "VAN-3", "payload_kg": 250}


_flaky = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_telemetry(machine: str) -> str:
    if _flaky["n"] == 0 and machine.endswith("2"):
        _flaky["n"] += 1
        raise ConnectionError("telemetry gateway 503")
    day = 1 if (active("vend_stale") and machine.endswith("2")) else 0
    stamp = "2026-12-04T06:00Z" if day else "2026-12-05T06:00Z"
    return f"{machine}@{stamp};" + ";".join(f"{k}:{v}" for k, v in _counts(machine, day).items())


@trajdebug.step(kind="parse")
def parse_telemetry(text: str) -> dict:
    head, *slots = text.split(";")
    machine, stamp = head.split("@")
    return {"machine": machine, "as_of": stamp, "slots": {k: int(v) for k, v in (s.split(":") for s in slots)}}


@trajdebug.step(kind="other")
def compute_needs(tele: dict) -> dict:
    return {sku: PAR - c for sku, c in tele["slots"].items() if c < PAR}


@trajdebug.step(kind="other")
def compose_plan_context(route: str, needs: dict) -> dict:
    memos = [f"{route}: gate code changed, use rear entrance"]
    if active("vend_ctx"):
        memos.append(f"R-NORTH: {ROUTES[route][1]} removed from service last week, skip it")
    return {"route": route, "needs": needs, "memos": memos}


@trajdebug.step(kind="tool")
def check_warehouse(skus: list[str]) -> dict:
    stock = {s: 200 for s in sorted(skus)}
    if active("vend_trunc"):
        stock = dict(list(stock.items())[:5])
    return {"depot": "DEP-1", "stock": stock}


@trajdebug.step(kind="tool")
def count_coins(machine: str) -> dict:
    return {"machine": machine, "cash_eur": 40 + sum(map(ord, machine)) % 60}


@trajdebug.step(kind="agent")
def cash_collection(stops: list[str]) -> dict:
    counts = [count_coins(m) for m in stops]
    return {"bags": len(counts), "total_eur": sum(c["cash_eur"] for c in counts)}


@trajdebug.step(kind="other")
def build_load_sheet(plan: dict, stock: dict) -> dict:
    lines, grams = [], 0
    for m in plan["stops"]:
        for sku, qty in plan["loads"][m].items():
            qty = qty if sku in stock["stock"] else 0
            lines.append({"machine": m, "sku": sku, "qty": qty})
            grams += qty * SKUS[sku][1]
    kg = grams / 1000 if not active("vend_unit") else grams / 100
    return {"lines": lines, "weight_kg": round(kg, 1), "stops": plan["stops"]}


@trajdebug.step(kind="tool")
def submit_van_load(route: dict, sheet: dict, counts: dict) -> dict:
    if sheet["weight_kg"] > route["payload_kg"]:
        raise ValueError(f"van load rejected: {sheet['weight_kg']} kg exceeds {route['van']} payload of "
                         f"{route['payload_kg']} kg")
    missing = [m for m in route["machines"] if m not in sheet["stops"]]
    if missing:
        raise ValueError(f"van load rejected: route {route['route']} stops not covered: {', '.join(missing)}")
    for m in route["machines"]:
        for sku, c in _counts(m).items():
            add = sum(ln["qty"] for ln in sheet["lines"] if ln["machine"] == m and ln["sku"] == sku)
            if c + add < PAR:
                raise ValueError(f"van load rejected: {m} slot {sku} would hold {c + add} after restock, "
                                 f"below par {PAR}")
    return {"status": "dispatched", "manifest": f"VL-{route['route']}"}


def record(path, route_id: str, fault_id: str | None) -> None:
    _flaky["n"] = 0
    client = openai_client()
    with planted(fault_id):
        try:
            with trajdebug.run(AGENT, task=f"restock route {route_id}", path=str(path)):
                route = load_route(route_id)
                needs = {}
                for m in route["machines"]:
                    needs[m] = compute_needs(parse_telemetry(fetch_telemetry(m)))
                ctx = compose_plan_context(route_id, needs)
                plan = json.loads(sdk_chat(client, "plan_restock", MODEL, [
                    {"role": "system", "content": "Plan the stop order and per-machine loads. Answer JSON."},
                    {"role": "user", "content": json.dumps(ctx)}]))
                stock = check_warehouse(sorted({s for m in needs.values() for s in m}))
                counts = cash_collection(plan["stops"])
                sheet = build_load_sheet(plan, stock)
                submit_van_load(route, sheet, counts)
        except Exception:
            pass


CASES = [
    Case("zt_vending_1", "vend_unit", "unit_error", "R-EAST", "build_load_sheet", 1, "submit_van_load", 1,
         "The load sheet divides grams by 100 instead of 1000 when it converts the van weight to kilograms."),
    Case("zt_vending_2", "vend_stale", "stale_data", "R-EAST", "fetch_telemetry", 3, "submit_van_load", 1,
         "The telemetry read for VM-12 serves yesterday's cached counts, so its needs come out too low."),
    Case("zt_vending_3", "vend_ctx", "context_pollution", "R-DOCKS", "compose_plan_context", 1, "submit_van_load", 1,
         "The planning context carries another route's memo saying a machine of this route was removed."),
    Case("zt_vending_4", "vend_plan", "plan_error", "R-DOCKS", "plan_restock", 1, "submit_van_load", 1,
         "The restock plan drops the small top-ups of the last stop, loading only slots short by 5 or more."),
    Case("zt_vending_5", "vend_trunc", "truncated_result", "R-EAST", "check_warehouse", 1, "submit_van_load", 1,
         "The warehouse stock answer lists only its first five SKUs, so the others are loaded as zero."),
]
