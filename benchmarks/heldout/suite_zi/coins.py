"""Coin grading submissions (sdk route): grade each coin against references, then slab and register the batch."""
from __future__ import annotations

import json
import re

from .common import Case, last_user, run_sdk
from .kit import active

AGENT, ROUTE, DOMAIN, EXT = "coin-grading-desk", "sdk", "coin grading submissions", "jsonl"
SHAPE = "per coin: record, reference images, grade (llm), parse grade, ledger write -> population report -> encapsulation sub-agent (fees, slabs) -> registry submit"

COINS = {
    "C-11": {"type": "Peace dollar", "year": 1927, "mint": "S", "flags": [], "grade": "MS-64"},
    "C-12": {"type": "Morgan dollar", "year": 1881, "mint": "CC", "flags": ["cleaned"], "grade": "VF-30 details (cleaned)"},
    "C-13": {"type": "Walking Liberty half", "year": 1943, "mint": "D", "flags": [], "grade": "MS-65"},
    "C-14": {"type": "Buffalo nickel", "year": 1937, "mint": "P", "flags": [], "grade": "AU-58"},
    "C-15": {"type": "Mercury dime", "year": 1942, "mint": "P", "flags": [], "grade": "MS-66"},
    "C-16": {"type": "Indian cent", "year": 1909, "mint": "S", "flags": ["scratched"], "grade": "F-12 details (scratched)"},
    "C-17": {"type": "Standing Liberty quarter", "year": 1926, "mint": "D", "flags": [], "grade": "XF-45"},
    "C-18": {"type": "Barber dime", "year": 1899, "mint": "O", "flags": [], "grade": "VG-10"},
}
POP = {"C-13": "POP-1943D-WLH-65", "C-15": "POP-1942P-MD-66", "C-11": "POP-1927S-PD-64"}
SLAB_FEE = {"economy": 28.0, "standard": 45.0}

INPUTS = {
    "estate": {"submitter": "Hollins Estate", "tier": "standard", "coins": ["C-12", "C-11", "C-13", "C-14"]},
    "dealer": {"submitter": "Marlow Numismatics", "tier": "economy", "coins": ["C-15", "C-16", "C-17", "C-18"]},
}
REFS = [
    {"submitter": "J. Okafor", "tier": "economy", "coins": ["C-14", "C-18"]},
    {"submitter": "Copperline Coins", "tier": "standard", "coins": ["C-11", "C-17", "C-16"]},
    {"submitter": "R. Lindqvist", "tier": "standard", "coins": ["C-13", "C-15", "C-12"]},
    {"submitter": "Bay Area Coin Club", "tier": "economy", "coins": ["C-18", "C-14", "C-17", "C-11", "C-15"]},
]

CASES = [
    Case("coins_parse", "lossy_parsing", "estate", "parse_grade", 1, "parse", "submit_to_registry", 1,
         "The grade parser drops the 'details (cleaned)' qualifier, so a problem coin is registered as a straight grade."),
    Case("coins_refs", "wrong_retrieval", "estate", "search_reference_images", 2, "retrieval", "submit_to_registry", 1,
         "The reference image search returns the set for another year of the same type, which the grade then cites."),
    Case("coins_pop", "swallowed_error", "estate", "check_population_report", 1, "other", "submit_to_registry", 1,
         "A population-report timeout is caught and replaced by an empty census, leaving a high grade without its census reference."),
    Case("coins_drift", "format_drift", "dealer", "grade_coin", 3, "llm", "submit_to_registry", 1,
         "The grader answers the third coin in prose ('Extremely Fine 45') instead of the SCALE-NN form, and the lenient parser misreads the scale."),
    Case("coins_slabs", "truncated_result", "dealer", "reserve_slabs", 1, "tool", "submit_to_registry", 1,
         "The slab reservation returns one serial fewer than requested, leaving the last coin without a slab."),
]


def policy(req):
    system, user = last_user(req)
    data = json.loads(user)
    if system.startswith("You are a coin grader"):
        cid = data["coin"]["id"]
        if active("coins_drift") and cid == "C-17":
            return "Extremely Fine 45"
        return COINS[cid]["grade"]
    if system.startswith("You choose slab"):
        return "standard" if data["tier"] == "standard" else "economy"
    return "ok"


def _parse_grade(text: str) -> dict:
    m = re.match(r"^([A-Z]{1,2})-(\d+)(.*)$", text.strip())
    if m:
        details = m.group(3).strip()
        if active("coins_parse"):
            details = ""
        return {"scale": m.group(1), "grade": int(m.group(2)), "details": details or None}
    words = text.split()
    return {"scale": words[0][:2].upper(), "grade": int(words[-1]), "details": None}


def _population(cid: str) -> dict:
    if active("coins_pop"):
        raise TimeoutError("population service did not answer within 5 s")
    return {"census_ref": POP.get(cid)}


def _submit(payload: dict) -> dict:
    errs = []
    for c in payload["coins"]:
        rec = COINS[c["id"]]
        if c["scale"] not in ("MS", "AU", "XF", "VF", "F", "VG", "G"):
            errs.append(f"{c['id']}: unknown grading scale '{c['scale']}'")
        if rec["flags"] and not c["details"]:
            errs.append(f"{c['id']}: conservation flag '{rec['flags'][0]}' on file but the grade carries no details")
        if c["reference_set"] != f"{rec['type']} {rec['year']}":
            errs.append(f"{c['id']}: reference set '{c['reference_set']}' does not match {rec['year']} {rec['type']}")
        if c["scale"] == "MS" and c["grade"] >= 65 and not c["census_ref"]:
            errs.append(f"{c['id']}: census_ref is required for MS-65 and above")
        if not c.get("slab"):
            errs.append(f"{c['id']}: no slab serial")
    if errs:
        raise ValueError("registry rejected submission: " + "; ".join(errs))
    return {"accepted": len(payload["coins"]), "batch": f"GR-{len(payload['coins'])}{payload['tier'][0].upper()}"}


def flow(ctx, inp):
    sub = ctx.step("read_submission", "input", inp, lambda: dict(inp))
    ledger = []
    for n, cid in enumerate(sub["coins"], 1):
        rec = ctx.step("fetch_coin_record", "tool", {"coin": cid}, lambda: dict(COINS[cid], id=cid, grade=None))
        year = rec["year"] - 6 if (active("coins_refs") and n == 2) else rec["year"]
        refs = ctx.step("search_reference_images", "retrieval", {"type": rec["type"], "year": rec["year"]},
                        lambda: {"reference_set": f"{rec['type']} {year}", "images": [f"{rec['type'][:3]}-{year}-{k}.jpg" for k in (1, 2, 3)]})
        text = ctx.llm("grade_coin", "You are a coin grader. Answer the grade as SCALE-NN.",
                       {"coin": {"id": cid, "type": rec["type"], "year": rec["year"], "mint": rec["mint"]}, "references": refs})
        g = ctx.step("parse_grade", "parse", {"text": text}, lambda: _parse_grade(text))

        def log():
            ledger.append({"id": cid, **g, "reference_set": refs["reference_set"]})
            return {"ledger_size": len(ledger)}
        ctx.step("log_grade", "state", {"coin": cid, "grade": g}, log)

    def pop():
        out = {}
        try:
            for e in ledger:
                out[e["id"]] = _population(e["id"])["census_ref"]
        except TimeoutError:
            out = {}
        return out
    census = ctx.step("check_population_report", "other", {"coins": [e["id"] for e in ledger]}, pop)
    with ctx.agent("encapsulation_desk", {"coins": len(ledger), "tier": sub["tier"]}):
        slab = ctx.llm("choose_slab_line", "You choose slab lines. Answer economy or standard.", {"tier": sub["tier"], "coins": len(ledger)})
        fees = ctx.step("compute_fees", "other", {"line": slab, "coins": len(ledger)},
                        lambda: {"per_coin": SLAB_FEE[slab], "total": SLAB_FEE[slab] * len(ledger)})
        n = len(ledger) - 1 if active("coins_slabs") else len(ledger)
        serials = ctx.step("reserve_slabs", "tool", {"count": len(ledger), "line": slab},
                           lambda: [f"S{slab[0].upper()}-{7001 + k}" for k in range(n)])
    coins = [dict(e, census_ref=census.get(e["id"]), slab=serials[k] if k < len(serials) else None) for k, e in enumerate(ledger)]
    payload = {"submitter": sub["submitter"], "tier": sub["tier"], "fees": fees["total"], "coins": coins}
    return ctx.step("submit_to_registry", "tool", payload, lambda: _submit(payload))


def record(server, inp, path):
    run_sdk(AGENT, flow, server, inp, path, task=f"grade and register {len(inp['coins'])} coins for {inp['submitter']}")
