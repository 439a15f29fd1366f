"""Bagpipe repair bench (sdk): ticket -> plan -> inspect -> memory -> parts -> schedule -> work order."""

from __future__ import annotations

import json
import re
from typing import Any

import trajdebug

from .common import chat, last_user
from .kit import active

NAME = "bagpipe-repair-bench"
ROUTE = "sdk"
INPUTS = {
    "ghb": "Set GHB-1187 (Highland): bag leaks at stock, 3 drones, chanter reed too hard, drone cord 38 in",
    "smp": "Set SMP-0204 (Scottish smallpipes): bellows valve sticks, 3 drones, chanter reed buzzing, drone cord 30 in",
    "ref1": "Set GHB-0921 (Highland): hemp loose on tenor, 3 drones, chanter reed fine, drone cord 36 in",
    "ref2": "Set BRD-0330 (Border): bag dry, 3 drones, chanter reed soft, drone cord 34 in",
    "ref3": "Set GHB-1402 (Highland): drone reeds unstable, 3 drones, chanter reed hard, drone cord 40 in",
    "ref4": "Set SMP-0877 (Scottish smallpipes): bag seam, 3 drones, chanter reed buzzing, drone cord 31 in",
}
INSPECT = {
    "bag": {"leak_kpa_per_min": 0.8, "material": "hide"},
    "chanter_reed": {"strength": "hard", "gap_mm": 0.6},
    "drone_reeds": {"count": 3, "stable": False},
    "hemp": {"joints_loose": 2},
}
CATALOG = {"bag": 145.0, "chanter_reed": 18.5, "drone_reeds": 42.0, "hemp": 6.0}


def policy(request: Any) -> str:
    text = last_user(request)
    if text.startswith("PLAN"):
        return json.dumps({"inspect": ["bag", "chanter_reed", "drone_reeds", "hemp"]})
    if text.startswith("ORDER"):
        data = json.loads(text[5:])
        return json.dumps({"lines": [{"part": p, "qty": q} for p, q in data["needs"].items()], "note": "bench repair"})
    return "ok"


@trajdebug.step(kind="parse")
def parse_ticket(text: str) -> dict:
    set_id = re.search(r"Set (\S+)", text).group(1)
    drones_pat = r"(\d+) drone" if not active("bp_lossy") else r"(\d) drones? only"
    m = re.search(drones_pat, text)
    drones = int(m.group(1)) if m else 2
    cord = float(re.search(r"drone cord (\d+) in", text).group(1))
    kind = re.search(r"\((.+?)\)", text).group(1)
    return {"set_id": set_id, "kind": kind, "drones": drones, "cord_in": cord}


@trajdebug.step(kind="llm")
def plan_inspection(client: Any, ticket: dict) -> dict:
    return json.loads(chat(client, [{"role": "user", "content": "PLAN " + json.dumps(ticket)}]))


@trajdebug.step(kind="tool")
def inspect_component(component: str, set_id: str) -> dict:
    return {"component": component, "set": set_id, **INSPECT[component]}


@trajdebug.step(kind="state")
def remember_finding(finding: dict) -> None:
    run = trajdebug.current_run()
    key = finding["component"]
    if active("bp_memory") and key == "hemp":
        key = "drone_reeds"
    run.state.setdefault("findings", {})[key] = finding


@trajdebug.step(kind="other")
def convert_cord(cord_in: float) -> dict:
    cm = cord_in if active("bp_unit") else round(cord_in * 2.54, 1)
    return {"cord_cm": cm}


_PRICE_CALLS = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def price_part(part: str) -> dict:
    _PRICE_CALLS["n"] += 1
    if part == "bag" and _PRICE_CALLS["n"] == 1:
        raise ConnectionError("price list service: connection reset by peer")
    return {"part": part, "unit_price": CATALOG[part]}


@trajdebug.step(kind="tool")
def check_reed_stock(part: str, qty: int) -> dict:
    try:
        if part == "drone_reeds" and active("bp_swallow"):
            raise ConnectionError("stock service 503 Service Unavailable")
        return {"part": part, "available": 12, "ok": True}
    except ConnectionError:
        return {"part": part, "available": 0, "ok": True}


@trajdebug.step(kind="llm")
def draft_order(client: Any, needs: dict) -> dict:
    return json.loads(chat(client, [{"role": "user", "content": "ORDER" + json.dumps({"needs": needs})}]))


@trajdebug.step(kind="tool")
def bench_calendar(days: int) -> list[str]:
    return [f"2026-12-{d:02d}" for d in range(7, 7 + days)]


@trajdebug.step(kind="other")
def pick_ready_date(slots: list[str], turnaround: int) -> str:
    idx = turnaround - 2 if active("bp_obo") else turnaround - 1
    return slots[idx]


@trajdebug.step(kind="tool")
def submit_work_order(order: dict) -> dict:
    problems = []
    f = order["findings"]
    if len(f) != 4:
        problems.append(f"inspection sheet incomplete: {sorted(f)} (expected bag, chanter_reed, drone_reeds, hemp)")
    reeds = [ln for ln in order["lines"] if ln["part"] == "drone_reeds"]
    if reeds and reeds[0]["qty"] != order["drone_count_on_sheet"]:
        problems.append(f"drone reed qty {reeds[0]['qty']} != drones on inspection sheet {order['drone_count_on_sheet']}")
    if not 70 <= order["cord_cm"] <= 110:
        problems.append(f"cord_cm={order['cord_cm']} outside 70..110")
    if order["ready_by"] < "2026-12-11":
        problems.append(f"ready_by {order['ready_by']} is before the 5-day bench turnaround (earliest 2026-12-11)")
    if problems:
        raise ValueError("422 Unprocessable Entity: work order rejected: " + "; ".join(problems))
    return {"work_order": "WO-" + order["set_id"], "status": "accepted"}


@trajdebug.step(kind="tool")
def reserve_parts(lines: list[dict], stock: dict) -> dict:
    out = {}
    for ln in lines:
        out[ln["part"]] = min(ln["qty"], stock[ln["part"]]["available"])
    return out


def run_case(ctx: dict, inp: str, path: str) -> None:
    client = ctx["client"]
    text = INPUTS[inp]
    _PRICE_CALLS["n"] = 0
    try:
        with trajdebug.run(NAME, task=text, path=path) as run:
            with trajdebug.step("intake", kind="input") as s:
                s.output = text
            ticket = parse_ticket(text)
            plan = plan_inspection(client, ticket)
            with trajdebug.step("inspection_agent", kind="agent", input=plan):
                for comp in plan["inspect"]:
                    remember_finding(inspect_component(comp, ticket["set_id"]))
            findings = run.state["findings"]
            needs = {}
            for comp in plan["inspect"]:
                needs[comp] = ticket["drones"] if comp == "drone_reeds" else (2 if comp == "hemp" else 1)
            prices = {p: price_part(p) for p in needs}
            stock = {p: check_reed_stock(p, q) for p, q in needs.items()}
            order = draft_order(client, needs)
            reserved = reserve_parts(order["lines"], stock)
            slots = bench_calendar(10)
            sheet_drones = findings.get("drone_reeds", {}).get("count", 3)
            with trajdebug.step("confirm_reservation", kind="tool", input={"reserved": reserved, "needs": needs}) as s:
                short = {p: f"{reserved.get(p, 0)} of {q}" for p, q in needs.items() if reserved.get(p, 0) < q}
                s.output = {"held": reserved, "short": short}
                if short:
                    raise RuntimeError(f"409 Conflict: reservation incomplete, parts held: {short}")
            ready = pick_ready_date(slots, 5)
            cord = convert_cord(ticket["cord_in"])
            submit_work_order({
                "set_id": ticket["set_id"], "findings": findings, "lines": order["lines"],
                "drone_count_on_sheet": sheet_drones, "cord_cm": cord["cord_cm"], "ready_by": ready,
                "total": sum(prices[p]["unit_price"] * needs[p] for p in needs),
            })
    except (ValueError, RuntimeError):
        pass


CASES = [
    # (fault_id, kind, input, root, occ, root_kind, failure, failure_occ, description)
    ("bp_lossy", "lossy_parsing", "ghb", "parse_ticket", 1, "parse", "submit_work_order", 1,
     "The ticket parser misses the drone count and defaults to 2, so the order carries 2 drone reeds for a 3-drone set."),
    ("bp_unit", "unit_error", "smp", "convert_cord", 1, "other", "submit_work_order", 1,
     "The drone cord length in inches is passed on as centimetres without conversion."),
    ("bp_memory", "bad_memory_write", "ghb", "remember_finding", 4, "state", "submit_work_order", 1,
     "The hemp finding is written to memory under the drone_reeds key, overwriting it and leaving hemp off the sheet."),
    ("bp_obo", "off_by_one", "smp", "pick_ready_date", 1, "other", "submit_work_order", 1,
     "The ready date is picked one slot early, inside the 5-day bench turnaround."),
    ("bp_swallow", "swallowed_error", "ghb", "check_reed_stock", 3, "tool", "confirm_reservation", 1,
     "The stock lookup for drone reeds fails with a 503 that is caught and replaced by the requested quantity as if available."),
]
REFS = ["ref1", "ref2", "ref3", "ref4"]
