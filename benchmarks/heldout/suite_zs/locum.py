"""Locum doctor rota (recording SDK): fill a ward's open shifts with locum doctors and confirm the rota."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trajdebug
from openai import OpenAI

from .common import Case, ask, json_policy
from .kit import active

AGENT = "locum-rota-filler"
ROUTE = "sdk"
DOMAIN = "locum doctor rota"
SHAPE = "input, model triage, pool router, query build, locum search, credential checks loop, state shortlist, model assignment, rate card, rota confirm"

DOCTORS = [
    {"id": "D-102", "grade": "ST4", "specialty": "emergency_medicine", "gmc": "7012345", "leave": [], "framework": "HTN-A"},
    {"id": "D-118", "grade": "ST3", "specialty": "emergency_medicine", "gmc": "7023456", "leave": ["2026-12-15"], "framework": "HTN-A"},
    {"id": "D-097", "grade": "FY2", "specialty": "emergency_medicine", "gmc": "7034567", "leave": [], "framework": "HTN-A"},
    {"id": "D-311", "grade": "ST6", "specialty": "emergency_medicine", "gmc": "7045678", "leave": ["2026-12-14"], "framework": "HTN-A"},
    {"id": "D-130", "grade": "ST5", "specialty": "emergency_medicine", "gmc": "7013579", "leave": [], "framework": "HTN-A"},
    {"id": "D-140", "grade": "ST3", "specialty": "emergency_medicine", "gmc": "7024680", "leave": [], "framework": "HTN-A"},
    {"id": "D-430", "grade": "ST4", "specialty": "acute_medicine", "gmc": "7057913", "leave": [], "framework": "HTN-A"},
    {"id": "D-440", "grade": "ST6", "specialty": "acute_medicine", "gmc": "7068024", "leave": [], "framework": "HTN-A"},
    {"id": "D-415", "grade": "ST5", "specialty": "acute_medicine", "gmc": "7056789", "leave": [], "framework": "HTN-A"},
    {"id": "D-420", "grade": "ST3", "specialty": "acute_medicine", "gmc": "7067890", "leave": ["2026-12-20"], "framework": "HTN-A"},
    {"id": "D-521", "grade": "CT2", "specialty": "acute_medicine", "gmc": "7078901", "leave": [], "framework": "HTN-A"},
    {"id": "D-602", "grade": "ST4", "specialty": "paediatrics", "gmc": "7089012", "leave": [], "framework": "HTN-A"},
    {"id": "D-611", "grade": "ST7", "specialty": "paediatrics", "gmc": "7090123", "leave": ["2026-12-21"], "framework": "HTN-A"},
]
GRADES = ["FY1", "FY2", "CT1", "CT2", "ST3", "ST4", "ST5", "ST6", "ST7"]
RATES = {"emergency_medicine": "92.50", "acute_medicine": "84.00", "paediatrics": "88.75"}
INPUTS = {
    "A": {"ward": "ED Majors", "trust": "RX1", "min_grade": "ST3", "cap_gbp_h": 95.0,
          "shifts": [{"date": "2026-12-14", "start": "08:00", "hours": 12}, {"date": "2026-12-15", "start": "08:00", "hours": 12},
                     {"date": "2026-12-15", "start": "20:00", "hours": 12}]},
    "B": {"ward": "Acute Medical Unit", "trust": "RX1", "min_grade": "ST3", "cap_gbp_h": 90.0,
          "shifts": [{"date": "2026-12-20", "start": "09:00", "hours": 10}, {"date": "2026-12-21", "start": "09:00", "hours": 10},
                     {"date": "2026-12-20", "start": "21:00", "hours": 12}]},
}
REFS = [
    {"ward": "Paediatric ED", "trust": "RX1", "min_grade": "ST4", "cap_gbp_h": 95.0,
     "shifts": [{"date": "2026-12-22", "start": "08:00", "hours": 12}, {"date": "2026-12-23", "start": "08:00", "hours": 12}]},
    {"ward": "ED Resus", "trust": "RX1", "min_grade": "ST4", "cap_gbp_h": 100.0,
     "shifts": [{"date": "2026-12-16", "start": "08:00", "hours": 12}, {"date": "2026-12-17", "start": "20:00", "hours": 12}]},
    {"ward": "Acute Medical Unit", "trust": "RX1", "min_grade": "ST3", "cap_gbp_h": 90.0,
     "shifts": [{"date": "2026-12-18", "start": "09:00", "hours": 10}, {"date": "2026-12-19", "start": "09:00", "hours": 10}]},
    {"ward": "ED Majors", "trust": "RX1", "min_grade": "ST3", "cap_gbp_h": 95.0,
     "shifts": [{"date": "2026-12-10", "start": "08:00", "hours": 12}, {"date": "2026-12-11", "start": "08:00", "hours": 12}]},
]
CASES = [
    Case("zs_locum_1", "loc.query", "wrong_tool_args", "A", "build_search_query", 1, "other", "confirm_rota", 1,
         "The search query is built with the lowest trainee grade instead of the ward's minimum grade."),
    Case("zs_locum_2", "loc.leave", "tool_ignores_argument", "A", "search_locums", 1, "tool", "confirm_rota", 1,
         "The locum search ignores the dates it is given and returns doctors who are on leave."),
    Case("zs_locum_3", "loc.page", "truncated_result", "B", "search_locums", 1, "tool", "confirm_rota", 1,
         "The locum search returns only its first page, so one doctor is given shifts too close together."),
    Case("zs_locum_4", "loc.rate", "format_drift", "B", "fetch_rate_card", 1, "tool", "confirm_rota", 1,
         "The rate card answers rates with a decimal comma, which the rota API reads as a thousands separator."),
    Case("zs_locum_5", "loc.route", "wrong_routing", "A", "choose_supplier", 1, "condition", "confirm_rota", 1,
         "The supplier router sends the request to the secondary framework, which the trust has not approved."),
]


def _triage(p: dict) -> dict:
    ward = p["ward"].lower()
    spec = "paediatrics" if "paediatric" in ward else "emergency_medicine" if "ed " in ward + " " else "acute_medicine"
    return {"specialty": spec, "urgency": "high" if len(p["shifts"]) > 2 else "routine"}


def _assign(p: dict) -> dict:
    used: dict = {}
    out = []
    for shift in p["shifts"]:
        free = [c for c in p["candidates"] if shift["date"] not in c.get("leave_seen", [])]
        free.sort(key=lambda c: (used.get(c["id"], 0), c["id"]))
        pick = free[0]
        used[pick["id"]] = used.get(pick["id"], 0) + 1
        out.append({**shift, "doctor": pick["id"]})
    return {"assignments": out}


policy = json_policy({"triage": _triage, "assign": _assign})
_client: Any = None


@trajdebug.step(kind="input")
def read_request(req: dict) -> dict:
    return dict(req)


@trajdebug.step(kind="llm")
def triage_request(req: dict) -> dict:
    return ask(_client, AGENT, "triage", {"ward": req["ward"], "shifts": req["shifts"]})


@trajdebug.step(kind="condition")
def choose_supplier(triage: dict, trust: str) -> str:
    if active("loc.route"):
        return "HTN-B"
    return "HTN-A"


@trajdebug.step(kind="other")
def build_search_query(req: dict, triage: dict, framework: str) -> dict:
    grade = GRADES[0] if active("loc.query") else req["min_grade"]
    return {"specialty": triage["specialty"], "min_grade": grade, "dates": sorted({s["date"] for s in req["shifts"]}),
            "framework": framework}


@trajdebug.step(kind="tool")
def search_locums(query: dict) -> dict:
    rows = [d for d in DOCTORS if d["specialty"] == query["specialty"]
            and GRADES.index(d["grade"]) >= GRADES.index(query["min_grade"])]
    if not active("loc.leave"):
        rows = [d for d in rows if not set(d["leave"]) & set(query["dates"])]
    rows = [{"id": d["id"], "grade": d["grade"], "gmc": d["gmc"], "framework": query["framework"]} for d in rows]
    if active("loc.page"):
        return {"doctors": rows[:1], "page": 1}
    return {"doctors": rows, "page": 1}


@trajdebug.step(kind="tool")
def check_registration(gmc: str) -> dict:
    return {"gmc": gmc, "status": "registered", "licence_to_practise": True}


@trajdebug.step(kind="tool")
def fetch_ward_rules(ward: str, trust: str) -> dict:
    return {"ward": ward, "trust": trust, "min_rest_h": 11, "max_shift_h": 13, "induction": "e-learning module 4"}


@trajdebug.step(kind="tool")
def check_budget_code(ward: str, trust: str) -> dict:
    return {"ward": ward, "cost_centre": f"{trust}-{4400 + len(ward)}", "locum_budget_left_gbp": 18250.0}


@trajdebug.step(kind="tool")
def fetch_agency_terms(framework: str) -> dict:
    return {"framework": framework, "notice_h": 48, "cancellation_fee_pct": 25}


@trajdebug.step(kind="tool")
def check_dbs(gmc: str) -> dict:
    return {"gmc": gmc, "dbs": "enhanced", "update_service": True}


@trajdebug.step(kind="tool")
def fetch_rate_card(specialty: str, framework: str) -> dict:
    rate = RATES[specialty]
    if active("loc.rate"):
        rate = rate.replace(".", ",")
    return {"specialty": specialty, "framework": framework, "rate_gbp_h": rate, "currency": "GBP"}


@trajdebug.step(kind="state")
def shortlist(found: dict, checks: list) -> list:
    ok = {c["gmc"] for c in checks if c["licence_to_practise"]}
    keep = [d for d in found["doctors"] if d["gmc"] in ok]
    trajdebug.current_run().state["shortlist"] = keep
    return keep


@trajdebug.step(kind="llm")
def assign_shifts(req: dict, candidates: list) -> dict:
    return ask(_client, AGENT, "assign", {"shifts": req["shifts"], "candidates": candidates})


@trajdebug.step(kind="tool")
def confirm_rota(req: dict, plan: dict, card: dict) -> dict:
    rate = float(card["rate_gbp_h"].replace(",", ""))
    priced = {"lines": [{**a, "rate_gbp_h": rate, "framework": card["framework"]} for a in plan["assignments"]]}
    by_id = {d["id"]: d for d in DOCTORS}
    seen: dict = {}
    for line in priced["lines"]:
        doc = by_id[line["doctor"]]
        if line["framework"] != "HTN-A":
            raise RuntimeError(f"HTTP 403 supplier framework {line['framework']} is not approved for trust {req['trust']}")
        if GRADES.index(doc["grade"]) < GRADES.index(req["min_grade"]):
            raise RuntimeError(f"HTTP 422 {doc['id']} grade {doc['grade']} is below the minimum {req['min_grade']} for {req['ward']}")
        if line["date"] in doc["leave"]:
            raise RuntimeError(f"HTTP 409 {doc['id']} is on annual leave on {line['date']}")
        if line["rate_gbp_h"] > req["cap_gbp_h"]:
            raise RuntimeError(f"HTTP 422 rate {line['rate_gbp_h']:.2f} GBP/h exceeds the cap of {req['cap_gbp_h']:.2f} GBP/h")
        start = int(line["date"][-2:]) * 24 + int(line["start"][:2])
        for prev_start, prev_hours in seen.get(doc["id"], []):
            gap = abs(start - prev_start) - (prev_hours if start > prev_start else line["hours"])
            if gap < 11:
                raise RuntimeError(f"HTTP 409 {doc['id']} would have {gap} h rest between shifts (minimum 11 h)")
        seen.setdefault(doc["id"], []).append((start, line["hours"]))
    return {"status": "confirmed", "lines": len(priced["lines"])}


def record(inp: dict, dest: Path, server: Any) -> None:
    global _client
    _client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(AGENT, path=str(dest), task=f"cover {len(inp['shifts'])} shifts on {inp['ward']}"):
            req = read_request(inp)
            check_budget_code(req["ward"], req["trust"])
            tri = triage_request(req)
            fetch_ward_rules(req["ward"], req["trust"])
            framework = choose_supplier(tri, req["trust"])
            fetch_agency_terms(framework)
            with trajdebug.step("credential_checks", kind="agent") as sub:
                query = build_search_query(req, tri, framework)
                found = search_locums(query)
                checks = []
                for d in found["doctors"]:
                    checks.append(check_registration(d["gmc"]))
                    check_dbs(d["gmc"])
                sub.output = {"checked": len(checks)}
            cands = shortlist(found, checks)
            plan = assign_shifts(req, cands)
            card = fetch_rate_card(tri["specialty"], framework)
            confirm_rota(req, plan, card)
    except RuntimeError:
        pass
