"""Cobblestone paving estimator (recording SDK): survey a street, size the sett order, book a crew, submit."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import trajdebug

from . import common
from .common import Case
from .kit import active

AGENT = "cobble-estimator"
ROUTE = "sdk"
EXT = "jsonl"
DOMAIN = "cobblestone paving"
SHAPE = ("intake, model plan + parser, site survey, per-section measure + state writes, stone catalogue "
         "retrieval, quantities, supplier quote (retried), crew sub-agent (model + calendar loop), model "
         "order draft + parser, order validator, works-order submission")

STREETS: dict[str, dict[str, Any]] = {
    "mill_lane": {"street": "Mill Lane", "pattern": "stretcher bond", "stone": "granite sett 100x100",
                  "deadline_days": 9, "start": "2026-04-06",
                  "sections": [[42.0, 4.5], [38.5, 4.5], [12.0, 6.0], [9.5, 3.0]], "rev": 5},
    "cathedral_close": {"street": "Cathedral Close", "pattern": "fan", "stone": "basalt sett 90x90",
                        "deadline_days": 14, "start": "2026-05-11",
                        "sections": [[28.0, 5.0], [31.0, 5.2], [16.0, 4.0]], "rev": 3},
    "tanner_row": {"street": "Tanner Row", "pattern": "stretcher bond", "stone": "granite sett 100x100",
                   "deadline_days": 6, "start": "2026-03-02", "sections": [[30.0, 3.6], [22.0, 3.6]], "rev": 2},
    "quay_street": {"street": "Quay Street", "pattern": "herringbone", "stone": "porphyry sett 80x80",
                    "deadline_days": 10, "start": "2026-06-01",
                    "sections": [[25.0, 5.5], [25.0, 5.5], [14.0, 2.5]], "rev": 4},
    "bell_yard": {"street": "Bell Yard", "pattern": "fan", "stone": "basalt sett 90x90",
                  "deadline_days": 7, "start": "2026-07-13", "sections": [[18.0, 4.0], [20.0, 4.2]], "rev": 1},
    "hop_alley": {"street": "Hop Alley", "pattern": "stretcher bond", "stone": "granite sett 100x100",
                  "deadline_days": 5, "start": "2026-08-03", "sections": [[26.0, 2.8], [11.0, 2.8], [9.0, 2.8]],
                  "rev": 2},
}
REFS = ["tanner_row", "quay_street", "bell_yard", "hop_alley"]

CATALOGUE = [
    {"stone": "granite sett 100x100", "setts_per_m2": 82, "kg_per_sett": 2.7, "eur_per_t": 214.0},
    {"stone": "basalt sett 90x90", "setts_per_m2": 98, "kg_per_sett": 2.4, "eur_per_t": 236.0},
    {"stone": "porphyry sett 80x80", "setts_per_m2": 121, "kg_per_sett": 1.6, "eur_per_t": 251.0},
]
RATE_M2_PER_DAY = {"stretcher bond": 45.0, "fan": 30.0, "herringbone": 36.0}
BOOKED = {"2026-04-09"}  # a crew day already taken (the calendar answers "partial" there)
MAX_ORDER_T = 150.0

CASES = [
    Case("zq_cobble_units", "cobble-units", "unit_error", "mill_lane", ("compute_quantities", 1),
         ("ask_supplier_quote", 1), "The quantity step divides kilograms by 100 instead of 1000, so the quote "
         "request asks the quarry for ten times the tonnage and the quarry API rejects it."),
    Case("zq_cobble_phases", "cobble-phases", "lossy_parsing", "mill_lane", ("parse_plan", 1),
         ("validate_order", 1), "The plan parser keeps only phases written in plain words and drops "
         "'sharp-sand bedding 40 mm', so the order has no bedding layer and the validator refuses it."),
    Case("zq_cobble_areas", "cobble-areas", "bad_memory_write", "mill_lane", ("record_section", 4),
         ("validate_order", 1), "Recording the fourth section stores its area under the third section's id, "
         "overwriting it, so the order covers less than the surveyed area."),
    Case("zq_cobble_survey", "cobble-survey", "stale_data", "cathedral_close", ("fetch_site_survey", 1),
         ("submit_order", 1), "The survey tool answers from an older cached survey revision; the order is "
         "built on it and the works-order API refuses the superseded revision."),
    Case("zq_cobble_days", "cobble-days", "off_by_one", "cathedral_close", ("plan_crew_days", 1),
         ("validate_order", 1), "The crew planner builds its day list with range(1, n), one working day "
         "short, so the schedule cannot lay the whole area before the deadline."),
]

_CLIENT: Any = None


# -- the model --------------------------------------------------------------------------------------------


def policy(req: Any) -> Any:
    msgs = common.messages_of(req)
    system = common.system_of(msgs)
    user = common.text_of(msgs[-1].get("content"))
    if system.startswith("You plan street paving jobs"):
        return ("Plan for the job:\n1. survey existing surface; 2. excavate to 250 mm; 3. sharp-sand bedding "
                "40 mm; 4. lay setts; 5. point joints; 6. compact and clean")
    if system.startswith("You are the paving crew scheduler"):
        job = json.loads(user)
        rate = RATE_M2_PER_DAY[job["pattern"]]
        return json.dumps({"rate_m2_per_day": rate, "crew": "Crew North" if rate > 35 else "Crew Heritage",
                           "start": job["start"]})
    if system.startswith("You write sett supply orders"):
        facts = json.loads(user)
        lines = [{"item": facts["stone"], "setts": facts["setts"], "tonnes": facts["tonnes"]}]
        if facts.get("bedding_t"):
            lines.append({"item": "sharp sand bedding", "tonnes": facts["bedding_t"]})
        return json.dumps({"street": facts["street"], "survey_rev": facts["survey_rev"], "lines": lines,
                           "area_m2": facts["area_m2"], "crew_days": facts["crew_days"],
                           "quote": facts["quote_id"]})
    return "I cannot help with that."


def _chat(system: str, user: str) -> str:
    reply = _CLIENT.chat.completions.create(model=common.MODEL, temperature=0, messages=[
        {"role": "system", "content": system}, {"role": "user", "content": user}])
    trajdebug.current_step().usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                                   completion_tokens=reply.usage.completion_tokens)
    return reply.choices[0].message.content


# -- steps ------------------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def intake(request: dict) -> dict:
    return {k: v for k, v in request.items() if k not in ("sections", "rev")}


@trajdebug.step(kind="llm")
def plan_job(job: dict) -> str:
    return _chat("You plan street paving jobs. List the phases, numbered, separated by semicolons.",
                 f"Repave {job['street']} in {job['stone']}, {job['pattern']} pattern.")


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list[str]:
    body = text.split("\n", 1)[-1]
    items = [re.sub(r"^\d+\.\s*", "", p.strip()) for p in body.split(";")]
    if active("cobble-phases"):
        items = [p for p in items if re.fullmatch(r"[a-z]+( [a-z]+)*", p)]
    return [p for p in items if p]


@trajdebug.step(kind="tool")
def fetch_site_survey(street: str) -> dict:
    site = next(v for v in STREETS.values() if v["street"] == street)
    sections, rev = site["sections"], site["rev"]
    if active("cobble-survey"):
        sections, rev = [[28.0, 5.0], [31.0, 5.2]], rev - 2
    return {"street": street, "survey_rev": rev,
            "sections": [{"id": f"S{i + 1}", "length_m": a, "width_m": b} for i, (a, b) in enumerate(sections)]}


@trajdebug.step(kind="tool")
def measure_section(section: dict) -> dict:
    return {"id": section["id"], "area_m2": round(section["length_m"] * section["width_m"], 2)}


@trajdebug.step(kind="state")
def record_section(measured: dict, previous_id: str | None) -> None:
    key = measured["id"]
    if active("cobble-areas") and measured["id"] == "S4":
        key = previous_id
    trajdebug.current_run().state.setdefault("areas", {})[key] = measured["area_m2"]


@trajdebug.step(kind="retrieval")
def lookup_stone(query: str) -> list[dict]:
    words = set(query.split())
    return sorted(CATALOGUE, key=lambda d: -len(words & set(d["stone"].split())))[:2]


@trajdebug.step(kind="other")
def compute_quantities(phases: list[str], hits: list[dict]) -> dict:
    stone = hits[0]
    area = round(sum(trajdebug.current_run().state["areas"].values()), 2)
    setts = math.ceil(area * stone["setts_per_m2"] * 1.04)
    per_t = 100 if active("cobble-units") else 1000
    tonnes = round(setts * stone["kg_per_sett"] / per_t, 2)
    bedding = round(area * 0.04 * 1.6, 2) if any("bedding" in p for p in phases) else 0.0
    return {"stone": stone["stone"], "area_m2": area, "setts": setts, "tonnes": tonnes, "bedding_t": bedding,
            "eur_per_t": stone["eur_per_t"]}


_QUOTE_CALLS = {"n": 0}


class WorksOrderError(RuntimeError):
    pass


@trajdebug.retry(attempts=3, on=(ConnectionError,), reason="policy: retry quarry gateway drops")
@trajdebug.step(kind="tool")
def ask_supplier_quote(qty: dict) -> dict:
    _QUOTE_CALLS["n"] += 1
    if _QUOTE_CALLS["n"] == 1 and qty["stone"] != "granite sett 100x100":
        raise ConnectionError("quarry-orders gateway closed the connection")
    if qty["tonnes"] > MAX_ORDER_T:
        raise WorksOrderError(f"HTTP 422 from quarry-orders: {{\"error\": \"quantity_t {qty['tonnes']} exceeds "
                              f"per-order limit {MAX_ORDER_T}\", \"stone\": \"{qty['stone']}\"}}")
    total = round((qty["tonnes"] * qty["eur_per_t"]) + qty["bedding_t"] * 38.0, 2)
    return {"quote_id": f"Q-{int(qty['setts']) % 9973:04d}", "eur": total, "valid_days": 30}


@trajdebug.step(kind="llm")
def propose_schedule(job: dict, qty: dict) -> str:
    return _chat("You are the paving crew scheduler. Answer JSON: rate_m2_per_day, crew, start.",
                 json.dumps({"pattern": job["pattern"], "area_m2": qty["area_m2"], "start": job["start"]}))


@trajdebug.step(kind="other")
def plan_crew_days(proposal: dict, area: float) -> list[int]:
    n = math.ceil(area / proposal["rate_m2_per_day"])
    return list(range(1, n)) if active("cobble-days") else list(range(n))


@trajdebug.step(kind="tool")
def check_crew_calendar(crew: str, day: str) -> dict:
    return {"crew": crew, "day": day, "status": "partial" if day in BOOKED else "free"}


@trajdebug.step(kind="agent")
def crew_agent(job: dict, qty: dict) -> dict:
    import datetime as dt

    proposal = json.loads(propose_schedule(job, qty))
    offsets = plan_crew_days(proposal, qty["area_m2"])
    start = dt.date.fromisoformat(proposal["start"])
    days, shift = [], 0
    for _ in offsets:
        day = start + dt.timedelta(days=len(days) + shift)
        while day.weekday() >= 5:
            shift += 1
            day = start + dt.timedelta(days=len(days) + shift)
        answer = check_crew_calendar(proposal["crew"], day.isoformat())
        if answer["status"] != "free":
            shift += 1
        days.append(answer["day"])
    return {"crew": proposal["crew"], "days": days, "rate_m2_per_day": proposal["rate_m2_per_day"]}


@trajdebug.step(kind="llm")
def draft_order(facts: dict) -> str:
    return _chat("You write sett supply orders as JSON.", json.dumps(facts))


@trajdebug.step(kind="parse")
def parse_order(text: str) -> dict:
    return json.loads(text)


@trajdebug.step(kind="condition")
def validate_order(order: dict, survey: dict, crew: dict, job: dict) -> dict:
    surveyed = round(sum(s["length_m"] * s["width_m"] for s in survey["sections"]), 2)
    if order["area_m2"] + 0.5 < surveyed:
        raise ValueError(f"order covers {order['area_m2']} m2 but the survey of {order['street']} measures "
                         f"{surveyed} m2")
    if not any("bedding" in line["item"] for line in order["lines"]):
        raise ValueError(f"order for {order['street']} has no bedding line: setts on a compacted sub-base "
                         "need a sharp sand bed")
    need = math.ceil(order["area_m2"] / crew["rate_m2_per_day"])
    if order["crew_days"] < need:
        raise ValueError(f"schedule books {order['crew_days']} crew days but {order['area_m2']} m2 at "
                         f"{crew['rate_m2_per_day']} m2/day needs {need} (deadline {job['deadline_days']} days)")
    return {"ok": True}


@trajdebug.step(kind="tool")
def submit_order(order: dict) -> dict:
    site = next(v for v in STREETS.values() if v["street"] == order["street"])
    if order["survey_rev"] != site["rev"]:
        raise WorksOrderError(f"HTTP 409 from works-orders: {{\"error\": \"survey_rev {order['survey_rev']} "
                              f"superseded\", \"current_rev\": {site['rev']}, \"street\": \"{order['street']}\"}}")
    tonnes = sum(line["tonnes"] for line in order["lines"] if "sett" in line["item"])
    if tonnes > MAX_ORDER_T:
        raise WorksOrderError(f"HTTP 422 from works-orders: {{\"error\": \"quantity_t {tonnes} exceeds "
                              f"per-order limit {MAX_ORDER_T}\", \"quote\": \"{order['quote']}\"}}")
    return {"status": "accepted", "works_order": f"WO-{order['quote'][2:]}"}


# -- the agent ------------------------------------------------------------------------------------------------


def setup() -> None:
    global _CLIENT
    common.server().use(policy)
    _CLIENT = common.openai_client()
    _QUOTE_CALLS["n"] = 0


def record(key: str, path: Path) -> None:
    request = STREETS[key]
    _QUOTE_CALLS["n"] = 0
    with trajdebug.run(AGENT, task=f"repave {request['street']}", path=str(path)):
        job = intake(request)
        phases = parse_plan(plan_job(job))
        survey = fetch_site_survey(job["street"])
        previous = None
        for section in survey["sections"]:
            measured = measure_section(section)
            record_section(measured, previous)
            previous = measured["id"]
        hits = lookup_stone(job["stone"])
        qty = compute_quantities(phases, hits)
        quote = ask_supplier_quote(qty)
        crew = crew_agent(job, qty)
        facts = {"street": job["street"], "survey_rev": survey["survey_rev"], "stone": qty["stone"],
                 "setts": qty["setts"], "tonnes": qty["tonnes"], "bedding_t": qty["bedding_t"],
                 "area_m2": qty["area_m2"], "crew_days": len(crew["days"]), "quote_id": quote["quote_id"]}
        order = parse_order(draft_order(facts))
        validate_order(order, survey, crew, job)
        submit_order(order)
