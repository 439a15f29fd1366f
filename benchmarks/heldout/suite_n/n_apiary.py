"""Apiary inspector (sdk route): mite washes per hive, treatment plan, supplier order, application booking."""

from __future__ import annotations

import json
import re

import nkit

import trajdebug


NAME = "apiary-inspector"
ROUTE = "sdk"
DOMAIN = "beekeeping (varroa treatment)"
SHAPE = "per-hive loop (wash-sheet read, parse, model verdict, ledger write), plan, day pick, order, booking, registry report"

# yard -> (hives: (id, boxes, mites, bees), forecast max temps for the week)
YARDS = {
    "ridge-3": ([("H-101", 2, 6, 300), ("H-102", 3, 4, 300), ("H-103", 2, 12, 300), ("H-104", 2, 13, 300), ("H-105", 1, 3, 300)],
                [31.2, 27.4, 26.0, 30.1, 24.8]),
    "orchard-east": ([("H-201", 2, 5, 300), ("H-202", 2, 11, 300), ("H-203", 3, 2, 300), ("H-204", 2, 15, 300)],
                     [32.5, 28.9, 25.1, 23.0, 22.7]),
    "heath-9": ([("H-901", 1, 3, 300), ("H-902", 2, 10, 300), ("H-903", 2, 14, 300), ("H-904", 3, 7, 300), ("H-905", 2, 9, 300), ("H-906", 2, 16, 300)],
                [30.4, 27.7, 29.8, 26.3, 25.0]),
    "millpond": ([("H-301", 2, 4, 300), ("H-302", 2, 12, 300), ("H-303", 1, 6, 300)], [26.5, 27.0, 28.2, 29.5, 30.0]),
    "causeway": ([("H-401", 3, 9, 300), ("H-402", 2, 14, 300), ("H-403", 2, 3, 300), ("H-404", 2, 11, 300)], [29.9, 24.4, 23.9, 25.2, 26.6]),
    "larchwood": ([("H-501", 2, 2, 300), ("H-502", 2, 5, 300), ("H-503", 3, 13, 300)], [33.0, 31.5, 28.4, 27.0, 26.1]),
    "saltmarsh": ([("H-601", 1, 10, 300), ("H-602", 2, 4, 300), ("H-603", 2, 17, 300), ("H-604", 2, 6, 300), ("H-605", 3, 12, 300)],
                  [25.5, 25.9, 26.8, 30.2, 31.1]),
}
DATES = ["2026-09-14", "2026-09-15", "2026-09-16", "2026-09-17", "2026-09-18"]
INPUTS = {y: {"yard": y, "week": "2026-W38", "beekeeper": "team-b"} for y in YARDS}
REFS = ["millpond", "causeway", "larchwood", "saltmarsh"]
FAULTS = [
    {"id": "ap-parse", "kind": "lossy_parsing", "input": "ridge-3", "root": "parse_wash", "marker": '"mite_pct": 0.33'},
    {"id": "ap-unit", "kind": "unit_error", "input": "orchard-east", "root": "plan_treatment", "marker": '"oxalic_kg": 0.14'},
    {"id": "ap-dayidx", "kind": "off_by_one", "input": "heath-9", "root": "pick_day", "marker": '"date": "2026-09-16"'},
    {"id": "ap-ledger", "kind": "bad_memory_write", "input": "heath-9", "root": "record_hive", "marker": '"action": "monitor", "hive": "H-903"'},
    {"id": "ap-weather", "kind": "swallowed_error", "input": "ridge-3", "root": "fetch_forecast", "marker": "21.5"},
]
THRESHOLD = 3.0
GRAMS_PER_BOX = 3.5


@trajdebug.step(kind="input")
def intake(request: dict) -> dict:
    return {"text": f"Inspect yard {request['yard']} for week {request['week']} and arrange varroa treatment", **request}


@trajdebug.step(kind="tool")
def load_yard(yard: str) -> dict:
    hives, _ = YARDS[yard]
    return {"yard": yard, "hives": [{"hive": h, "boxes": b} for h, b, _, _ in hives]}


@trajdebug.step(kind="tool")
def fetch_forecast(yard: str, week: str) -> dict:
    try:
        if nkit.active("ap-weather"):
            raise TimeoutError("met service read timed out after 10s")
        temps = YARDS[yard][1]
        return {"yard": yard, "week": week, "days": [{"date": d, "max_c": t} for d, t in zip(DATES, temps)]}
    except TimeoutError:
        # keep going with the climatological normal for the week
        return {"yard": yard, "week": week, "days": [{"date": d, "max_c": 21.5} for d in DATES]}


@trajdebug.step(kind="tool")
def read_wash_sheet(yard: str, hive: str) -> str:
    for h, _, mites, bees in YARDS[yard][0]:
        if h == hive:
            return f"{hive} alcohol wash: {mites} mites/{bees} bees, brood present"
    raise KeyError(hive)


@trajdebug.step(kind="parse")
def parse_wash(text: str) -> dict:
    m = re.search(r"(\d+) mites/(\d+) bees", text)
    mites, bees = int(m.group(1)), int(m.group(2))
    if nkit.active("ap-parse") and mites >= 10:
        mites = int(str(mites)[0])
    return {"hive": text.split()[0], "mites": mites, "bees": bees, "mite_pct": round(100 * mites / bees, 2)}


@trajdebug.step(kind="llm")
def assess_hive(messages: list[dict]) -> dict:
    wash = json.loads(messages[-1]["content"])
    action = "treat" if wash["mite_pct"] >= THRESHOLD else "monitor"
    text = json.dumps({"hive": wash["hive"], "action": action, "mite_pct": wash["mite_pct"]})
    return {"role": "assistant", "content": text}


@trajdebug.step(kind="state")
def record_hive(verdict: dict, previous: dict | None) -> dict:
    entry = json.loads(verdict["content"])
    if nkit.active("ap-ledger") and previous is not None and entry["action"] == "treat" and previous["action"] == "treat":
        entry = {**entry, "action": "monitor"}
    trajdebug.current_run().state.setdefault("ledger", {})[entry["hive"]] = entry
    return entry


@trajdebug.step(kind="other")
def plan_treatment(yard: dict) -> dict:
    ledger = trajdebug.current_run().state["ledger"]
    boxes = {h["hive"]: h["boxes"] for h in yard["hives"]}
    treat = [h for h, e in ledger.items() if e["action"] == "treat"]
    grams = sum(GRAMS_PER_BOX * boxes[h] for h in treat)
    kg = grams / 100 if nkit.active("ap-unit") else grams / 1000
    return {"hives": treat, "oxalic_g": grams, "oxalic_kg": round(kg, 3)}


@trajdebug.step(kind="condition")
def pick_day(forecast: dict) -> dict:
    days = forecast["days"]
    for i, d in enumerate(days):
        if d["max_c"] <= 29.0:
            j = i + 1 if nkit.active("ap-dayidx") else i
            return {"date": days[j]["date"], "reason": "first day at or under 29 C"}
    return {"date": None, "reason": "no suitable day"}


@trajdebug.step(kind="tool")
def order_treatment(yard: str, plan: dict) -> dict:
    if plan["oxalic_kg"] > 0.1:
        raise RuntimeError(f"Supplier rejected order: {plan['oxalic_kg']} kg oxalic acid exceeds the 0.1 kg per-yard dispensing limit")
    return {"order": f"OX-{yard}-{len(plan['hives'])}", "kg": plan["oxalic_kg"], "status": "accepted"}


@trajdebug.step(kind="tool")
def book_application(yard: str, day: dict, plan: dict) -> dict:
    temps = dict(zip(DATES, YARDS[yard][1]))
    if temps[day["date"]] > 29.0:
        raise RuntimeError(f"Booking refused for {day['date']}: met office max {temps[day['date']]} C, oxalic vapour work needs 29 C or below")
    return {"booking": f"BK-{yard}-{day['date']}", "hives": plan["hives"]}


@trajdebug.step(kind="tool")
def file_report(yard: str, plan: dict) -> dict:
    for h, _, mites, bees in YARDS[yard][0]:
        pct = 100 * mites / bees
        if pct >= THRESHOLD and h not in plan["hives"]:
            raise RuntimeError(f"Registry returned 422: hive {h} lab wash {mites}/{bees} ({pct:.1f}%) is over the 3% action level but has no treatment filed")
    return {"report": f"RPT-{yard}", "filed": True}


@trajdebug.step(kind="output")
def summary(plan: dict, booking: dict, order: dict) -> str:
    return f"Treating {len(plan['hives'])} hives on {booking['booking']} with order {order['order']}"


def agent(request: dict) -> None:
    req = intake(request)
    yard = load_yard(req["yard"])
    forecast = fetch_forecast(req["yard"], req["week"])
    previous = None
    for hive in yard["hives"]:
        text = read_wash_sheet(req["yard"], hive["hive"])
        wash = parse_wash(text)
        verdict = assess_hive([
            {"role": "system", "content": "Decide treat or monitor from the wash; 3% is the action level."},
            {"role": "user", "content": json.dumps(wash)},
        ])
        previous = record_hive(verdict, previous)
    plan = plan_treatment(yard)
    day = pick_day(forecast)
    order = order_treatment(req["yard"], plan)
    booking = book_application(req["yard"], day, plan)
    file_report(req["yard"], plan)
    summary(plan, booking, order)


def record(request: dict, path) -> None:
    try:
        with trajdebug.run(NAME, task=f"varroa round for {request['yard']}", path=str(path)):
            agent(request)
    except RuntimeError:
        pass
