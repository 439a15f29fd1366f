"""Pipe organ servicing (sdk route): plan a tuning visit rank by rank and file the work order."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trajdebug

from .common import Case, chat_completion, last_user_text, system_text
from .kit import active

AGENT = "organ-service-desk"
ROUTE = "sdk"
EXT = "jsonl"
BASE_URL = ""

INPUTS = {
    "stmary": {"organ": "ORG-0412", "church": "St Mary Abbots", "contract": "SC-114", "wind_inches": 3.2,
               "window": ["2026-03-09", "2026-03-10", "2026-03-11"]},
    "guildhall": {"organ": "ORG-0977", "church": "Guildhall Chapel", "contract": "SC-208", "wind_inches": 2.9,
                  "window": ["2026-04-20", "2026-04-21"]},
    "ref_abbey": {"organ": "ORG-0150", "church": "Tewkesbury Abbey", "contract": "SC-031", "wind_inches": 3.5,
                  "window": ["2026-05-04", "2026-05-05"]},
    "ref_school": {"organ": "ORG-0633", "church": "Radley School Hall", "contract": "SC-172", "wind_inches": 2.6,
                   "window": ["2026-06-15"]},
    "ref_chapel": {"organ": "ORG-0288", "church": "Keble Chapel", "contract": "SC-090", "wind_inches": 3.0,
                   "window": ["2026-02-02", "2026-02-03"]},
    "ref_town": {"organ": "ORG-0711", "church": "Leeds Town Hall", "contract": "SC-199", "wind_inches": 3.8,
                 "window": ["2026-07-07", "2026-07-08"]},
}

PROFILES = {
    "ORG-0412": ("Harrison", [("Open Diapason 8'", 61, [2, -3, 1], 0), ("Stopped Diapason 8'", 61, [7, 9, 4], 0),
                              ("Principal 4'", 61, [1, 1, -2], 0), ("Trompette 8'", 61, [12, 31, 18], 4)]),
    "ORG-0977": ("Willis", [("Open Diapason 8'", 61, [1, 0, -1], 0), ("Clarabella 8'", 56, [6, 8, 2], 0),
                            ("Fifteenth 2'", 61, [3, -2, 2], 0), ("Cornopean 8'", 56, [9, 22, 15], 3)]),
    "ORG-0150": ("Walker", [("Open Diapason 8'", 61, [1, 2, 0], 0), ("Dulciana 8'", 56, [8, 6, 7], 0),
                            ("Oboe 8'", 56, [4, 3, 2], 0)]),
    "ORG-0633": ("Harrison", [("Gedackt 8'", 56, [2, 1, 0], 0), ("Principal 4'", 56, [9, 7, 6], 0),
                              ("Tierce 1 3/5'", 56, [0, 1, 1], 0)]),
    "ORG-0288": ("Willis", [("Open Diapason 8'", 61, [0, 1, 1], 0), ("Gamba 8'", 61, [3, 2, 2], 0),
                            ("Tuba 8'", 61, [14, 19, 11], 5)]),
    "ORG-0711": ("Hill", [("Double Open 16'", 30, [2, 4, 1], 0), ("Principal 8'", 61, [6, 9, 3], 0),
                          ("Mixture IV", 244, [1, 0, 2], 0), ("Posaune 8'", 61, [11, 18, 9], 3)]),
}

PARTS = [
    {"sku": "PL-H-08", "builder": "Harrison", "item": "reed pouch leather, 8' reed chest", "text": "pouch leather releather reed chest Harrison"},
    {"sku": "PL-W-22", "builder": "Willis", "item": "reed pouch leather, 8' reed chest", "text": "pouch leather releather reed chest Willis"},
    {"sku": "PL-HL-05", "builder": "Hill", "item": "reed pouch leather, 8' reed chest", "text": "pouch leather releather reed chest Hill"},
    {"sku": "PL-WK-11", "builder": "Walker", "item": "reed pouch leather", "text": "pouch leather releather Walker"},
    {"sku": "TS-01", "builder": "any", "item": "tuning slides, assorted", "text": "tuning slides retune flue"},
]

TUNERS = [
    {"name": "R. Ashdown", "builders": ["Harrison", "Walker"], "free": ["2026-03-10", "2026-05-05", "2026-06-15", "2026-02-03"]},
    {"name": "M. Pelling", "builders": ["Willis", "Hill"], "free": ["2026-04-21", "2026-02-02", "2026-07-08"]},
]


class ServiceDeskError(Exception):
    """The diocesan service desk API refused the work order."""


# ---------------------------------------------------------------- the scripted model


def policy(request):
    sys_t, user = system_text(request), last_user_text(request)
    if "plan organ service visits" in sys_t:
        ranks = json.loads(user.split("RANKS:", 1)[1])
        reeds = [r for r in ranks if r["reed"]]
        flues = [r for r in ranks if not r["reed"]]
        return "PLAN: " + ";".join(r["name"] for r in flues + reeds)
    if "assess a rank" in sys_t:
        m = json.loads(user.split("MEASURED:", 1)[1])
        worst = max(abs(c) for c in m["cents"])
        action = "releather" if m["dead_notes"] >= 3 else "retune" if worst > 5 else "none"
        return f"ACTION: {action} (worst {worst} cents, {m['dead_notes']} dead notes)"
    if "assign a tuner" in sys_t:
        data = json.loads(user.split("DATA:", 1)[1])
        for t in data["tuners"]:
            if data["builder"] in t["builders"]:
                day = next(d for d in data["window"] if d in t["free"])
                return f"TUNER: {t['name']} on {day}"
        return "TUNER: none"
    if "write the work order" in sys_t:
        facts = json.loads(user.split("FACTS:", 1)[1])
        order = {"organ": facts["organ"], "contract": facts["contract"], "visit_date": facts["tuner_day"],
                 "tuner": facts["tuner"], "ranks": facts["findings"], "wind_pressure_mm": facts["wind_mm"],
                 "parts": facts["parts"], "labour_hours": facts["hours"]}
        if active("organ.hv_visit_date"):
            order["visit_date"] = "2026-03-14"
        return json.dumps(order)
    return "I cannot help with that."


# ---------------------------------------------------------------- steps


@trajdebug.step(kind="input")
def read_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def load_organ_profile(organ: str) -> dict:
    builder, ranks = PROFILES[organ]
    return {"organ": organ, "builder": builder, "wind_range_mm": [60, 100],
            "ranks": [{"name": n, "pipes": p, "reed": n.split()[0] in REEDS} for n, p, _, _ in ranks]}


REEDS = {"Trompette", "Cornopean", "Oboe", "Tuba", "Posaune"}


@trajdebug.step(kind="llm")
def plan_visit(profile: dict) -> str:
    text, usage = chat_completion(BASE_URL, "You plan organ service visits: order the ranks to tune, flues before reeds.",
                                  "RANKS:" + json.dumps(profile["ranks"]))
    trajdebug.current_step().usage(model="fake-model", **usage)
    return text


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list[str]:
    body = text.split("PLAN:", 1)[1].strip()
    if active("organ.lp_plan"):
        return [r.strip() for r in re.findall(r"([^;]+);", body)]
    return [r.strip() for r in body.split(";") if r.strip()]


@trajdebug.step(kind="tool")
def measure_rank(organ: str, rank: str) -> dict:
    for name, _, cents, dead in PROFILES[organ][1]:
        if name == rank:
            return {"rank": rank, "cents": cents, "dead_notes": dead, "a4_hz": 440.0}
    raise KeyError(rank)


@trajdebug.step(kind="llm")
def assess_rank(measured: dict) -> str:
    text, usage = chat_completion(BASE_URL, "You assess a rank of organ pipes and choose one action.",
                                  "MEASURED:" + json.dumps(measured))
    trajdebug.current_step().usage(model="fake-model", **usage)
    return text


@trajdebug.step(kind="state")
def record_finding(measured: dict, assessment: str) -> dict:
    action = assessment.split("ACTION:", 1)[1].split()[0]
    if active("organ.bmw_finding") and measured["dead_notes"] >= 3:
        action = "retune"
    finding = {"rank": measured["rank"], "worst_cents": max(abs(c) for c in measured["cents"]),
               "dead_notes": measured["dead_notes"], "action": action}
    run = trajdebug.current_run()
    run.state[f"finding:{measured['rank']}"] = finding
    run.state.setdefault("ranks_done", []).append(measured["rank"])
    return finding


@trajdebug.step(kind="tool")
def read_wind_gauge(organ: str, inches: float) -> dict:
    return {"organ": organ, "gauge": "manometer", "inches_wc": inches}


@trajdebug.step(kind="other")
def convert_wind(reading: dict) -> float:
    factor = 2.54 if active("organ.ue_wind") else 25.4
    return round(reading["inches_wc"] * factor, 1)


@trajdebug.step(kind="retrieval")
def search_parts(query: str, builder: str) -> list[dict]:
    words = set(query.lower().split())
    hits = [p for p in PARTS if p["builder"] in (builder, "any")]
    if active("organ.wret_parts"):
        hits = [p for p in PARTS if p["builder"] != builder]
    hits.sort(key=lambda p: -len(words & set(p["text"].lower().split())))
    return hits[:2]


@trajdebug.step(kind="tool")
def list_tuners(builder: str) -> list[dict]:
    return [dict(t) for t in TUNERS]


@trajdebug.step(kind="llm")
def pick_tuner(builder: str, window: list[str], tuners: list[dict]) -> str:
    text, usage = chat_completion(BASE_URL, "You assign a tuner to an organ visit.",
                                  "DATA:" + json.dumps({"builder": builder, "window": window, "tuners": tuners}))
    trajdebug.current_step().usage(model="fake-model", **usage)
    return text


@trajdebug.step(kind="agent")
def tuner_dispatch(builder: str, window: list[str]) -> dict:
    tuners = list_tuners(builder)
    answer = pick_tuner(builder, window, tuners)
    name, day = answer.split("TUNER:", 1)[1].strip().split(" on ")
    return {"tuner": name, "day": day}


@trajdebug.step(kind="other")
def estimate_labour(profile: dict, findings: list[dict]) -> float:
    pipes = {r["name"]: r["pipes"] for r in profile["ranks"]}
    per_hour = {"retune": 40, "releather": 6, "none": 400}
    return round(sum(pipes[f["rank"]] / per_hour[f["action"]] for f in findings), 1)


@trajdebug.step(kind="llm")
def compose_work_order(facts: dict) -> str:
    text, usage = chat_completion(BASE_URL, "You write the work order as JSON from the visit facts.",
                                  "FACTS:" + json.dumps(facts))
    trajdebug.current_step().usage(model="fake-model", **usage)
    return text


@trajdebug.step(kind="tool")
def submit_work_order(order_json: str, contract_ranks: list[str], window: list[str], builder: str) -> dict:
    order = json.loads(order_json)
    problems = []
    listed = [r["rank"] for r in order["ranks"]]
    if sorted(listed) != sorted(contract_ranks):
        problems.append({"field": "ranks", "detail": f"contract {order['contract']} covers {len(contract_ranks)} ranks, order lists {len(listed)}"})
    for r in order["ranks"]:
        if r["dead_notes"] >= 3 and r["action"] != "releather":
            problems.append({"field": "ranks.action", "detail": f"{r['rank']}: {r['dead_notes']} dead notes need releathering, got '{r['action']}'"})
    lo, hi = 60, 100
    if not lo <= order["wind_pressure_mm"] <= hi:
        problems.append({"field": "wind_pressure_mm", "detail": f"{order['wind_pressure_mm']} outside {lo}-{hi} mm for {order['organ']}"})
    for p in order["parts"]:
        if p["builder"] not in (builder, "any"):
            problems.append({"field": "parts", "detail": f"{p['sku']} is a {p['builder']} part; organ {order['organ']} is {builder}"})
    if order["visit_date"] not in window:
        problems.append({"field": "visit_date", "detail": f"{order['visit_date']} is outside the agreed window {window[0]}..{window[-1]}"})
    if problems:
        raise ServiceDeskError("HTTP 422 Unprocessable Entity: " + json.dumps({"error": "validation_failed", "problems": problems}))
    return {"status": 201, "work_order": f"WO-{order['organ'][-4:]}-{order['visit_date'].replace('-', '')}"}


# ---------------------------------------------------------------- the agent


def serve(request: dict) -> dict:
    req = read_request(request)
    profile = load_organ_profile(req["organ"])
    plan = parse_plan(plan_visit(profile))
    findings = []
    for rank in plan:
        measured = measure_rank(req["organ"], rank)
        findings.append(record_finding(measured, assess_rank(measured)))
    wind_mm = convert_wind(read_wind_gauge(req["organ"], req["wind_inches"]))
    parts = []
    if any(f["action"] == "releather" for f in findings):
        parts += search_parts("pouch leather releather reed chest", profile["builder"])[:1]
    if any(f["action"] == "retune" for f in findings):
        parts += [p for p in PARTS if p["sku"] == "TS-01"]
    tuner = tuner_dispatch(profile["builder"], req["window"])
    hours = estimate_labour(profile, findings)
    facts = {"organ": req["organ"], "contract": req["contract"], "tuner": tuner["tuner"], "tuner_day": tuner["day"],
             "findings": findings, "wind_mm": wind_mm, "parts": parts, "hours": hours}
    order = compose_work_order(facts)
    return submit_work_order(order, [r["name"] for r in profile["ranks"]], req["window"], profile["builder"])


def record(key: str, path: Path) -> None:
    request = INPUTS[key]
    try:
        with trajdebug.run(AGENT, path=str(path), task=f"service visit for {request['church']} ({request['organ']})"):
            serve(request)
    except ServiceDeskError:
        pass


REFS = ["ref_abbey", "ref_school", "ref_chapel", "ref_town"]


def _c(n, kind, fid, key, root, occ, desc, failure="submit_work_order"):
    return Case(f"zo_organ_{n}", AGENT, ROUTE, kind, fid, key, root, occ, failure, 1, desc)


CASES = [
    _c(1, "unit_error", "organ.ue_wind", "stmary", "convert_wind", 1,
       "convert_wind multiplies inches of water column by 2.54 instead of 25.4, so the order carries 8.1 mm wind pressure."),
    _c(2, "lossy_parsing", "organ.lp_plan", "guildhall", "parse_plan", 1,
       "parse_plan only keeps rank names followed by a semicolon, dropping the last rank (the reed) of the plan."),
    _c(3, "bad_memory_write", "organ.bmw_finding", "stmary", "record_finding", 4,
       "record_finding stores the Trompette rank's action as retune although the assessment said releather."),
    _c(4, "wrong_retrieval", "organ.wret_parts", "guildhall", "search_parts", 1,
       "search_parts returns pouch leather of other builders, so a Harrison part goes on a Willis organ's order."),
    _c(5, "hallucinated_value", "organ.hv_visit_date", "stmary", "compose_work_order", 1,
       "the work-order model writes a visit date of 2026-03-14 that no input holds, outside the agreed window."),
]
