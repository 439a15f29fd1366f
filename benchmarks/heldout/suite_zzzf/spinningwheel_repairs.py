"""Spinning-wheel restorer: inspects a wheel part by part, has a model assess each part, keeps findings in
run.state, prices replacements from suppliers in parallel, lets a workshop-planner sub-agent book bench time
(its booking service drops the first connection), and writes the invoice.

Route: trajdebug's own recording API (long loop, state keys per part, thread pool, retry, sub-agent).
"""

from __future__ import annotations

import json
import math
import re

import trajdebug
import suite_common as sc

RUN_NAME = "spinningwheel-restoration-bench"
ROUTE = "sdk"
DOMAIN = "spinning-wheel restorer's repairs"
SHAPE = "long loop: record lookup, then per part photo tool -> inspect tool -> model assessment -> parser -> state write (8-9 parts), parallel supplier prices in a thread pool, planner sub-agent (state reads, model plan, retried booking), estimate, final invoice assertion (about 50-56 steps)"
ACTIVE = None

INPUTS = [
    {"ticket": "SW-901", "wheel": "W-Saxony-1880", "cap_gbp": 420.0, "complaint": "treadle"},
    {"ticket": "SW-902", "wheel": "W-Castle-1902", "cap_gbp": 380.0, "complaint": "flyer"},
    {"ticket": "SW-903", "wheel": "W-Norwegian-1850", "cap_gbp": 520.0, "complaint": "scotch tension"},
    {"ticket": "SW-904", "wheel": "W-Great-1790", "cap_gbp": 300.0, "complaint": "drive wheel"},
    {"ticket": "SW-905", "wheel": "W-Saxony-1911", "cap_gbp": 450.0, "complaint": "bobbin"},
]
BASE_PARTS = ["drive wheel", "axle", "crank", "footman", "treadle", "mother-of-all", "flyer", "bobbin"]
WEAR = {
    "W-Saxony-1880": [10, 35, 15, 70, 40, 5, 20, 65, 30],
    "W-Castle-1902": [20, 10, 45, 15, 30, 10, 75, 25, 15],
    "W-Norwegian-1850": [30, 20, 10, 50, 15, 25, 35, 40, 80],
    "W-Great-1790": [55, 30, 20, 10, 5, 45, 15, 20, 10],
    "W-Saxony-1911": [15, 10, 25, 20, 35, 10, 30, 85, 20],
}
EXTRA_PART = {"W-Norwegian-1850": "scotch tension", "W-Saxony-1911": "scotch tension"}  # fitted at the last visit
SUPPLIERS = {"flyer": 68.0, "bobbin": 22.0, "footman": 31.0, "treadle": 95.0, "scotch tension": 18.0,
             "drive wheel": 210.0, "axle": 44.0, "crank": 52.0, "mother-of-all": 120.0}
RATE_GBP = 32.0
BENCH_SESSION_H = 3.0

CASES = [
    {"id": "zzzf_spinningwheel_01", "input": 2, "switch": "cached_record", "fault_kind": "stale_data",
     "root": ("read_wheel_record", 1), "failure": "final_invoice",
     "description": "The wheel record comes from the cache written before the last visit, so the scotch tension fitted then is never inspected and the customer's complaint gets no invoice line."},
    {"id": "zzzf_spinningwheel_02", "input": 0, "switch": "finding_key", "fault_kind": "bad_memory_write",
     "root": ("remember_finding", 5), "failure": "final_invoice",
     "description": "The treadle's finding is filed under the footman's key, overwriting it, so the footman vanishes from the invoice."},
    {"id": "zzzf_spinningwheel_03", "input": 1, "switch": "price_timeout", "fault_kind": "swallowed_error",
     "root": ("supplier_price", 1), "failure": "final_invoice",
     "description": "The supplier price lookup for the flyer hides a timeout and answers a price of 0.00, so the replacement reaches the invoice unpriced."},
    {"id": "zzzf_spinningwheel_04", "input": 3, "switch": "hours_made_up", "fault_kind": "hallucinated_value",
     "root": ("assess_part", 1), "failure": "final_invoice",
     "description": "The assessment model states twelve labour hours for the drive wheel although the inspection shows moderate wear, and the invoice passes the customer's approved cap."},
    {"id": "zzzf_spinningwheel_05", "input": 4, "switch": "sessions_floor", "fault_kind": "plan_error",
     "root": ("plan_bench_time", 1), "failure": "final_invoice",
     "description": "The planner model rounds the number of three-hour bench sessions down, so fewer bench hours are booked than the labour the estimate charges."},
]


def policy(request):
    system = sc.system_of(request)
    user = json.loads(sc.last_user(request))
    if system.startswith("Assess one spinning-wheel part"):
        wear = user["wear_pct"]
        if wear >= 60:
            out = {"part": user["part"], "action": "replace", "hours": 1.0}
        elif wear >= 25:
            out = {"part": user["part"], "action": "repair", "hours": round(wear / 20, 1)}
        else:
            out = {"part": user["part"], "action": "keep", "hours": 0.25}
        if ACTIVE == "hours_made_up" and user["part"] == "drive wheel":
            out["hours"] = 12.0
        return json.dumps(out)
    if system.startswith("Plan bench sessions"):
        hours = user["labour_hours"]
        n = math.floor(hours / BENCH_SESSION_H) if ACTIVE == "sessions_floor" else math.ceil(hours / BENCH_SESSION_H)
        return json.dumps({"sessions": [{"day": i + 1, "hours": BENCH_SESSION_H} for i in range(n)]})
    return "{}"


def _ask(messages):
    client = sc.openai_client()
    return client.chat.completions.create(model=sc.model(), messages=messages).choices[0].message.content


@trajdebug.step(kind="input")
def intake(ticket: dict) -> dict:
    return ticket


@trajdebug.step(kind="tool")
def read_wheel_record(wheel_id: str) -> dict:
    parts = list(BASE_PARTS)
    if wheel_id in EXTRA_PART and ACTIVE != "cached_record":
        parts.append(EXTRA_PART[wheel_id])
    return {"wheel": wheel_id, "parts": parts, "wear": dict(zip(parts, WEAR[wheel_id]))}


@trajdebug.step(kind="tool")
def photograph_part(ticket: str, part: str) -> dict:
    return {"ticket": ticket, "part": part, "photo": f"{ticket}/{part.replace(' ', '-')}.jpg"}


@trajdebug.step(kind="tool")
def inspect_part(wheel_id: str, part: str, wear_table: dict) -> dict:
    wear = wear_table[part]
    return {"part": part, "wear_pct": wear, "play_mm": round(wear / 25, 1), "cracks": wear >= 60}


@trajdebug.step(kind="llm")
def assess_part(messages: list[dict]) -> str:
    return _ask(messages)


@trajdebug.step(kind="parse")
def parse_assessment(text: str) -> dict:
    d = json.loads(text)
    return {"part": d["part"], "action": d["action"], "hours": float(d["hours"])}


@trajdebug.step(kind="state")
def remember_finding(finding: dict, previous_part: str | None) -> str:
    key = previous_part if (ACTIVE == "finding_key" and finding["part"] == "treadle") else finding["part"]
    trajdebug.current_run().state[f"finding:{key}"] = finding
    return key


@trajdebug.step(kind="tool")
def supplier_price(part: str) -> dict:
    if ACTIVE == "price_timeout" and part == "flyer":
        try:
            raise TimeoutError("supplier catalogue did not answer in 3 s")
        except TimeoutError:
            return {"part": part, "price_gbp": 0.0, "supplier": "Ashford"}
    return {"part": part, "price_gbp": SUPPLIERS[part], "supplier": "Ashford"}


@trajdebug.step(kind="agent")
def price_replacements(parts: list[str]) -> list[dict]:
    with trajdebug.ContextThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(supplier_price, parts))


@trajdebug.step(kind="state")
def recall_findings(parts: list[str]) -> list[dict]:
    state = trajdebug.current_run().state
    return [state[f"finding:{p}"] for p in parts if f"finding:{p}" in state]


@trajdebug.step(kind="llm")
def plan_bench_time(messages: list[dict]) -> str:
    return _ask(messages)


_bench = {"calls": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def book_bench(ticket: str, sessions: list[dict]) -> dict:
    _bench["calls"] += 1
    if _bench["calls"] == 1:
        raise ConnectionError("bench calendar closed the connection")
    return {"ticket": ticket, "booked_hours": sum(s["hours"] for s in sessions), "days": len(sessions)}


@trajdebug.step(kind="agent")
def workshop_planner(ticket: str, parts: list[str]) -> dict:
    findings = recall_findings(parts)
    labour = round(sum(f["hours"] for f in findings), 2)
    plan = json.loads(plan_bench_time([
        {"role": "system", "content": "Plan bench sessions of three hours for the repair; answer JSON sessions."},
        {"role": "user", "content": json.dumps({"ticket": ticket, "labour_hours": labour})}]))
    booking = book_bench(ticket, plan["sessions"])
    return {"findings": findings, "labour_hours": labour, "booking": booking}


@trajdebug.step(kind="other")
def estimate(findings: list[dict], prices: list[dict]) -> dict:
    lines = []
    price_of = {p["part"]: p["price_gbp"] for p in prices}
    for f in findings:
        amount = round(f["hours"] * RATE_GBP + (price_of.get(f["part"], 0.0) if f["action"] == "replace" else 0.0), 2)
        lines.append({"part": f["part"], "action": f["action"], "hours": f["hours"], "amount_gbp": amount,
                      "parts_gbp": price_of.get(f["part"]) if f["action"] == "replace" else None})
    return {"lines": lines, "total_gbp": round(sum(ln["amount_gbp"] for ln in lines), 2),
            "labour_hours": round(sum(ln["hours"] for ln in lines), 2)}


@trajdebug.step(kind="output")
def final_invoice(ticket: dict, record: dict, est: dict, booking: dict) -> str:
    on_invoice = {ln["part"] for ln in est["lines"]}
    assert ticket["complaint"] in on_invoice, f"the customer's complaint part '{ticket['complaint']}' has no invoice line"
    missing = [p for p in record["parts"] if p not in on_invoice]
    assert not missing, f"invoice has no line for {', '.join(missing)}"
    for ln in est["lines"]:
        assert ln["parts_gbp"] is None or ln["parts_gbp"] > 0, f"replacement {ln['part']} priced at {ln['parts_gbp']:.2f} GBP"
    assert est["total_gbp"] <= ticket["cap_gbp"], f"invoice {est['total_gbp']:.2f} GBP exceeds the approved {ticket['cap_gbp']:.2f} GBP"
    assert booking["booked_hours"] >= est["labour_hours"], f"{booking['booked_hours']} bench hours booked for {est['labour_hours']} labour hours"
    return f"Invoice for {ticket['ticket']}: {est['total_gbp']:.2f} GBP, {booking['days']} bench days."


def record(inp: dict, path: str) -> None:
    _bench["calls"] = 0
    with trajdebug.run(RUN_NAME, task=f"restore wheel {inp['wheel']} ({inp['ticket']})", path=path):
        ticket = intake(inp)
        rec = read_wheel_record(ticket["wheel"])
        previous = None
        for part in rec["parts"]:
            photograph_part(ticket["ticket"], part)
            seen = inspect_part(ticket["wheel"], part, rec["wear"])
            text = assess_part([
                {"role": "system", "content": "Assess one spinning-wheel part from its inspection; answer JSON part, action, hours."},
                {"role": "user", "content": json.dumps(seen)}])
            remember_finding(parse_assessment(text), previous)
            previous = part
        plan = workshop_planner(ticket["ticket"], rec["parts"])
        to_replace = [f["part"] for f in plan["findings"] if f["action"] == "replace"]
        prices = price_replacements(to_replace)
        est = estimate(plan["findings"], prices)
        final_invoice(ticket, rec, est, plan["booking"])
