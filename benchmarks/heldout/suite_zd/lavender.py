"""Lavender distillery: turn a field harvest into distilled charges and register the oil lot (sdk)."""
from __future__ import annotations

import json
from pathlib import Path

import trajdebug

from .common import chat_json, last_user_json
from .kit import active

NAME = "lavender-distillery"
ROUTE = "sdk"
DOMAIN = "lavender distillery"
SHAPE = "field log -> parse -> LLM charge plan -> per-charge still loop (retrying condenser read) -> GC sub-agent -> yield -> LLM label -> register lot"

INPUTS = {
    "F3": {"batch": "LV-0412", "field": "F3", "variety": "angustifolia", "harvest_kg": 820},
    "F7": {"batch": "LV-0415", "field": "F7", "variety": "intermedia", "harvest_kg": 1150},
    "F1": {"batch": "LV-0401", "field": "F1", "variety": "angustifolia", "harvest_kg": 640},
    "F2": {"batch": "LV-0403", "field": "F2", "variety": "intermedia", "harvest_kg": 980},
    "F5": {"batch": "LV-0408", "field": "F5", "variety": "angustifolia", "harvest_kg": 720},
    "F9": {"batch": "LV-0410", "field": "F9", "variety": "intermedia", "harvest_kg": 1320},
}
REFS = ["F1", "F2", "F5", "F9"]
OIL_RATE = {"angustifolia": 0.011, "intermedia": 0.019}  # ml oil per g dry flower, roughly
CASES = [
    {"id": "zd_lavender_unit", "kind": "unit_error", "input": "F3", "root": "compute_yield", "occ": 1,
     "failure": "register_lot", "description": "compute_yield divides millilitres by grams of dry flower as if it were kilograms, so the lot's yield percent is a thousand times too high and the registry rejects it."},
    {"id": "zd_lavender_lossy", "kind": "lossy_parsing", "input": "F7", "root": "parse_field_log", "occ": 1,
     "failure": "register_lot", "description": "parse_field_log keeps only the integer part of the moisture reading, dropping its decimals, so the dry mass is off and the registry's mass balance check refuses the lot."},
    {"id": "zd_lavender_obo", "kind": "off_by_one", "input": "F3", "root": "schedule_charges", "occ": 1,
     "failure": "register_lot", "description": "schedule_charges builds the charge list with range(1, n), so the last charge of flowers is never distilled and the registered mass does not balance."},
    {"id": "zd_lavender_swallow", "kind": "swallowed_error", "input": "F7", "root": "parse_gc_report", "occ": 1,
     "failure": "register_lot", "description": "parse_gc_report catches the lab's malformed chromatogram row and returns an empty profile instead of raising, so the lot goes to the registry without its linalool figure."},
    {"id": "zd_lavender_label", "kind": "hallucinated_value", "input": "F3", "root": "draft_label", "occ": 1,
     "failure": "register_lot", "description": "draft_label states a harvest date no input holds, and the registry refuses a label whose date differs from the field log."},
]

FIELD_LOGS = {
    "F3": "field=F3;cut=2026-07-12;fresh_kg=820;moisture=38.6%",
    "F7": "field=F7;cut=2026-07-19;fresh_kg=1150;moisture=41.4%",
    "F1": "field=F1;cut=2026-07-02;fresh_kg=640;moisture=36.2%",
    "F2": "field=F2;cut=2026-07-05;fresh_kg=980;moisture=40.8%",
    "F5": "field=F5;cut=2026-07-09;fresh_kg=720;moisture=37.5%",
    "F9": "field=F9;cut=2026-07-16;fresh_kg=1320;moisture=42.3%",
}
CHARGE_KG = 300


def policy(req):
    ask = last_user_json(req)
    if ask.get("ask") == "charge_plan":
        n = -(-int(ask["dry_kg"]) // CHARGE_KG)
        return json.dumps({"charges": n, "charge_kg": CHARGE_KG, "steam_minutes": 50 if ask["variety"] == "intermedia" else 45})
    if ask.get("ask") == "label":
        date = ask["cut"]
        if active("zd_lavender_label"):
            date = "2026-06-30"
        return json.dumps({"title": f"Lavandula {ask['variety']} essential oil", "lot": ask["batch"],
                           "harvest_date": date, "volume_ml": ask["oil_ml"]})
    if ask.get("ask") == "gc_summary":
        return json.dumps({"grade": "fine" if ask["linalool"] >= 25 else "standard"})
    return json.dumps({"note": "unknown request"})


@trajdebug.step(kind="tool")
def fetch_field_log(field: str) -> str:
    return FIELD_LOGS[field]


@trajdebug.step(kind="parse")
def parse_field_log(text: str) -> dict:
    parts = dict(p.split("=", 1) for p in text.split(";"))
    moist = parts["moisture"].rstrip("%")
    moisture = float(moist.split(".")[0]) if active("zd_lavender_lossy") else float(moist)
    return {"field": parts["field"], "cut": parts["cut"], "fresh_kg": float(parts["fresh_kg"]), "moisture_pct": moisture}


@trajdebug.step(kind="other")
def dry_mass(log: dict) -> dict:
    return {"dry_kg": round(log["fresh_kg"] * (1 - log["moisture_pct"] / 100), 1)}


@trajdebug.step(kind="llm")
def plan_charges(base_url: str, batch: dict, dry: dict) -> dict:
    return chat_json(base_url, "You are the still-house planner. Answer JSON.",
                     {"ask": "charge_plan", "dry_kg": dry["dry_kg"], "variety": batch["variety"]})


@trajdebug.step(kind="other")
def schedule_charges(plan: dict, dry: dict) -> list[dict]:
    n = plan["charges"]
    numbers = range(1, n) if active("zd_lavender_obo") else range(1, n + 1)
    left, out = dry["dry_kg"], []
    for i in numbers:
        kg = min(plan["charge_kg"], round(left, 1)) if i < n else round(left, 1)
        out.append({"charge": i, "kg": kg, "steam_minutes": plan["steam_minutes"]})
        left -= kg
    return out


@trajdebug.step(kind="tool")
def load_still(charge: dict) -> dict:
    return {"still": "S2", "charge": charge["charge"], "loaded_kg": charge["kg"], "status": "steaming"}


_flaky = {"n": 0}


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def read_condenser(still: dict, variety: str) -> dict:
    _flaky["n"] += 1
    if still["charge"] == 2 and _flaky["n"] % 2 == 1:
        raise ConnectionError("condenser gauge S2 did not answer (timeout 2s)")
    return {"charge": still["charge"], "oil_ml": round(still["loaded_kg"] * 1000 * OIL_RATE[variety], 1)}


@trajdebug.step(kind="state")
def log_charge(reading: dict) -> None:
    st = trajdebug.current_run().state
    st.setdefault("charges", []).append({"charge": reading["charge"], "oil_ml": reading["oil_ml"]})
    st["oil_ml"] = round(sum(c["oil_ml"] for c in st["charges"]), 1)


@trajdebug.step(kind="tool")
def request_gc(batch: str) -> str:
    return f"sample={batch}|linalool=31.2|linalyl_acetate=38.9|camphor=0.4|row4=terpinen-4-ol:n/a"


@trajdebug.step(kind="parse")
def parse_gc_report(text: str) -> dict:
    out = {}
    try:
        for part in text.split("|")[1:]:
            key, val = part.split("=")
            if key.startswith("row"):
                comp, v = val.split(":")
                if v == "n/a" and active("zd_lavender_swallow"):
                    raise ValueError(f"row {key}: no value for {comp}")
                continue
            out[key] = float(val)
    except ValueError:
        return {}
    return out


@trajdebug.step(kind="llm")
def summarize_gc(base_url: str, profile: dict) -> dict:
    return chat_json(base_url, "Grade this chromatogram. Answer JSON.",
                     {"ask": "gc_summary", "linalool": profile.get("linalool", 0)})


@trajdebug.step(kind="agent")
def quality_lab(base_url: str, batch: str) -> dict:
    report = request_gc(batch)
    profile = parse_gc_report(report)
    grade = summarize_gc(base_url, profile)
    return {"profile": profile, "grade": grade["grade"]}


@trajdebug.step(kind="other")
def compute_yield(oil_ml: float, dry: dict) -> dict:
    grams = dry["dry_kg"] * 1000
    denom = dry["dry_kg"] if active("zd_lavender_unit") else grams
    return {"oil_ml": oil_ml, "yield_pct": round(oil_ml / denom * 100, 3)}


@trajdebug.step(kind="llm")
def draft_label(base_url: str, batch: dict, log: dict, yld: dict) -> dict:
    return chat_json(base_url, "Write the lot label. Answer JSON.",
                     {"ask": "label", "batch": batch["batch"], "variety": batch["variety"],
                      "cut": log["cut"], "oil_ml": yld["oil_ml"]})


@trajdebug.step(kind="tool")
def register_lot(lot: dict) -> dict:
    if not 0.5 <= lot["yield_pct"] <= 3.5:
        raise ValueError(f"HTTP 422 from lot registry: yield_pct {lot['yield_pct']} outside 0.5-3.5 for {lot['variety']}")
    if abs(lot["distilled_kg"] - lot["dry_kg"]) > 1.0:
        raise ValueError(f"HTTP 422 from lot registry: mass balance: distilled {lot['distilled_kg']} kg vs dry intake {lot['dry_kg']} kg")
    expected_dry = round(lot["fresh_kg"] * (1 - lot["lab_moisture_pct"] / 100), 1)
    if abs(expected_dry - lot["dry_kg"]) > 1.0:
        raise ValueError(f"HTTP 422 from lot registry: dry_kg {lot['dry_kg']} does not match lab moisture {lot['lab_moisture_pct']}% (expected {expected_dry})")
    if "linalool" not in lot["profile"]:
        raise ValueError("HTTP 400 from lot registry: certificate.linalool is required")
    if lot["label"]["harvest_date"] != lot["cut"]:
        raise ValueError(f"HTTP 409 from lot registry: label harvest_date {lot['label']['harvest_date']} != field log cut {lot['cut']}")
    return {"registered": lot["batch"], "status": "accepted"}


LAB_MOISTURE = {k: float(v.split("moisture=")[1].rstrip("%")) for k, v in FIELD_LOGS.items()}


def record(batch: dict, path: Path, base_url: str) -> None:
    _flaky["n"] = 0
    try:
        with trajdebug.run(NAME, task=f"distil and register batch {batch['batch']}", path=str(path)) as run:
            with trajdebug.step("intake", kind="input") as s:
                s.output = dict(batch)
            text = fetch_field_log(batch["field"])
            log = parse_field_log(text)
            dry = dry_mass(log)
            plan = plan_charges(base_url, batch, dry)
            charges = schedule_charges(plan, dry)
            for ch in charges:
                still = load_still(ch)
                reading = read_condenser(still, batch["variety"])
                log_charge(reading)
            lab = quality_lab(base_url, batch["batch"])
            yld = compute_yield(run.state["oil_ml"], dry)
            label = draft_label(base_url, batch, log, yld)
            register_lot({"batch": batch["batch"], "variety": batch["variety"], "cut": log["cut"],
                          "fresh_kg": log["fresh_kg"], "lab_moisture_pct": LAB_MOISTURE[batch["field"]],
                          "dry_kg": dry["dry_kg"], "distilled_kg": round(sum(c["kg"] for c in charges), 1),
                          "yield_pct": yld["yield_pct"], "profile": lab["profile"], "label": label})
    except ValueError:
        pass
