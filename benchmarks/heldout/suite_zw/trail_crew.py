"""Mountain bike trail maintenance: a crew planner recorded with the trajdebug SDK."""

from __future__ import annotations

import json
import re

import trajdebug
from openai import OpenAI

from .common import Case, last_user_json
from .kit import active

NAME = "trail-crew-planner"
ROUTE = "sdk"
DOMAIN = "mountain bike trail maintenance"
EXT = "jsonl"
SHAPE = ("order -> survey tool -> parse loop per segment -> weather -> LLM task plan -> parse -> "
         "materials sub-agent (price + record loop) -> standards retrieval -> hours -> submit work order")

_SEG_NOTES = {
    "ridge": [("RL-1", "drainage: 3 water bars, 40 m section"), ("RL-2", "rut 0.3 m deep over 120 ft"),
              ("RL-3", "root exposure over 25 m"), ("RL-4", "washout over 60 ft, grade 14%"),
              ("RL-5", "berm collapse over 18 m")],
    "quarry": [("QH-1", "rut 0.2 m deep over 30 m"), ("QH-2", "drainage: 2 water bars, 15 m section"),
               ("QH-3", "washout over 90 ft, grade 11%"), ("QH-4", "root exposure over 12 m")],
    "beech": [("BW-1", "berm collapse over 10 m"), ("BW-2", "rut 0.25 m deep over 50 ft"),
              ("BW-3", "drainage: 1 water bars, 8 m section")],
    "fox": [("FX-1", "washout over 40 ft, grade 9%"), ("FX-2", "root exposure over 20 m"),
            ("FX-3", "rut 0.1 m deep over 22 m"), ("FX-4", "drainage: 2 water bars, 12 m section")],
    "heron": [("HN-1", "rut 0.3 m deep over 80 ft"), ("HN-2", "berm collapse over 14 m"),
              ("HN-3", "root exposure over 9 m")],
    "slate": [("SL-1", "drainage: 4 water bars, 30 m section"), ("SL-2", "washout over 70 ft, grade 12%"),
              ("SL-3", "rut 0.2 m deep over 40 ft"), ("SL-4", "berm collapse over 16 m"),
              ("SL-5", "root exposure over 11 m")],
}
INPUTS = {
    "ridge": {"trail": "Ridge Loop", "work_date": "2026-12-07", "budget_hours": 90},
    "quarry": {"trail": "Quarry Hill", "work_date": "2026-12-09", "budget_hours": 70},
    "beech": {"trail": "Beechwood Flow", "work_date": "2026-12-10", "budget_hours": 50},
    "fox": {"trail": "Fox Gully", "work_date": "2026-12-11", "budget_hours": 60},
    "heron": {"trail": "Heron Descent", "work_date": "2026-12-14", "budget_hours": 40},
    "slate": {"trail": "Slate Switchbacks", "work_date": "2026-12-15", "budget_hours": 90},
}
REFS = ["beech", "fox", "heron", "slate"]

CASES = [
    Case("zw_trail_feet", "unit_error", "ridge", "parse_survey_note", 2, "parse", "submit_work_order", 1,
         "The survey-note parser keeps a length given in feet as metres, so the aggregate order for RL-2 is sized "
         "for 120 m instead of 36.6 m."),
    Case("zw_trail_forecast", "stale_data", "ridge", "lookup_weather", 1, "tool", "submit_work_order", 1,
         "The weather tool serves a cached forecast issued weeks before the work date, which the work-order "
         "service refuses."),
    Case("zw_trail_ledger", "bad_memory_write", "quarry", "record_material", 2, "state", "submit_work_order", 1,
         "The materials recorder files the second line under the first segment's id, overwriting it and "
         "leaving QH-2 without materials."),
    Case("zw_trail_segment", "hallucinated_value", "quarry", "plan_tasks", 1, "llm", "submit_work_order", 1,
         "The planning model adds a segment QH-7 that the survey never listed."),
    Case("zw_trail_standard", "wrong_retrieval", "ridge", "retrieve_trail_standard", 1, "retrieval",
         "submit_work_order", 1,
         "The standards search returns the footpath standard (grade limit 18%) instead of the bike-trail one, "
         "so the 14% washout on RL-4 is left without a reroute."),
]

RATES_T_PER_M = {"rut": 0.10, "washout": 0.20, "berm": 0.15, "root": 0.05, "drainage": 0.02}
HOURS_PER_M = {"rut": 0.25, "washout": 0.5, "berm": 0.4, "root": 0.2, "drainage": 0.3}


class WorkOrderRejected(RuntimeError):
    pass


def _policy(req):
    body = req.body or {}
    data = last_user_json(body)
    if data.get("request") == "plan":
        tasks = []
        for seg in data["segments"]:
            action = {"rut": "regrade and armour", "washout": "rebuild tread", "berm": "rebuild berm",
                      "root": "cap roots", "drainage": "install water bars"}[seg["issue"]]
            tasks.append({"segment": seg["id"], "action": action, "issue": seg["issue"], "length_m": seg["length_m"]})
        if active("zw_trail_segment"):
            tasks.append({"segment": "QH-7", "action": "rebuild berm", "issue": "berm", "length_m": 14.0})
        return json.dumps({"tasks": tasks, "crew": 4})
    if data.get("request") == "summary":
        return f"Work order for {data['trail']}: {data['n']} tasks, {data['hours']} crew hours."
    return "{}"


def _trail_db(inp_id):
    return {seg: note for seg, note in _SEG_NOTES[inp_id]}


@trajdebug.step(kind="input")
def load_work_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_trail_survey(trail: str, inp_id: str) -> dict:
    return {"trail": trail, "notes": [{"segment": s, "note": n} for s, n in _SEG_NOTES[inp_id]]}


@trajdebug.step(kind="parse")
def parse_survey_note(item: dict) -> dict:
    note = item["note"]
    issue = note.split(":")[0].split()[0]
    value, unit = _length(note)
    length = float(value)
    if unit == "ft" and not active("zw_trail_feet"):
        length = round(length * 0.3048, 1)
    grade = re.search(r"grade (\d+)%", note)
    return {"id": item["segment"], "issue": issue, "length_m": length, "grade_pct": int(grade.group(1)) if grade else None}


_GATEWAY = {"calls": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def lookup_weather(trail: str, date: str) -> dict:
    _GATEWAY["calls"] += 1
    if trail in ("Quarry Hill", "Fox Gully") and _GATEWAY["calls"] == 1:
        raise ConnectionError("met service gateway timed out")
    if active("zw_trail_forecast"):
        return {"trail": trail, "issued": "2026-11-02", "valid_for": date, "rain_mm": 1.0}
    return {"trail": trail, "issued": _day_before(date), "valid_for": date, "rain_mm": 3.5}


def _length(note: str) -> tuple:
    m = re.search(r"over ([\d.]+) (m|ft)", note) or re.search(r"([\d.]+) (m|ft) section", note)
    return m.group(1), m.group(2)


def _day_before(date: str) -> str:
    y, m, d = date.split("-")
    return f"{y}-{m}-{int(d) - 1:02d}"


@trajdebug.step(kind="llm")
def plan_tasks(client: OpenAI, segments: list, weather: dict) -> str:
    msg = json.dumps({"request": "plan", "segments": segments, "rain_mm": weather["rain_mm"]})
    r = client.chat.completions.create(model="trail-planner", messages=[
        {"role": "system", "content": "You plan trail maintenance tasks. Answer JSON."},
        {"role": "user", "content": msg}])
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> list:
    return json.loads(text)["tasks"]


@trajdebug.step(kind="tool")
def price_material(issue: str, length_m: float) -> dict:
    tonnes = round(RATES_T_PER_M[issue] * length_m, 2)
    return {"material": "crushed aggregate" if issue != "drainage" else "timber bars", "tonnes": tonnes,
            "cost_gbp": round(tonnes * 42.0, 2)}


@trajdebug.step(kind="state")
def record_material(segment: str, line: dict, order_no: int) -> None:
    ledger = trajdebug.current_run().state.setdefault("materials", {})
    key = segment
    if order_no == 2 and active("zw_trail_ledger"):
        key = next(iter(ledger))
    ledger[key] = line


@trajdebug.step(kind="agent")
def materials_agent(tasks: list) -> dict:
    for i, t in enumerate(tasks, 1):
        line = price_material(t["issue"], t["length_m"])
        record_material(t["segment"], line, i)
    return dict(trajdebug.current_run().state["materials"])


@trajdebug.step(kind="retrieval")
def retrieve_trail_standard(query: str) -> list:
    docs = [{"doc": "Bike trail standard BT-3", "max_sustained_grade_pct": 10, "use": "mountain bike"},
            {"doc": "Footpath standard FP-1", "max_sustained_grade_pct": 18, "use": "walkers"}]
    if active("zw_trail_standard"):
        return docs[1:]
    return docs[:1]


@trajdebug.step(kind="other")
def estimate_hours(tasks: list) -> dict:
    hours = 0.0
    for t in tasks:
        hours += HOURS_PER_M[t["issue"]] * t["length_m"]
    return {"crew_hours": round(hours, 1)}


@trajdebug.step(kind="condition")
def crew_is_enough(crew: int, hours: float, budget: float) -> bool:
    return hours / max(crew, 1) <= budget


@trajdebug.step(kind="llm")
def summarise_order(client: OpenAI, trail: str, n: int, hours: float) -> str:
    r = client.chat.completions.create(model="trail-planner", messages=[
        {"role": "user", "content": json.dumps({"request": "summary", "trail": trail, "n": n, "hours": hours})}])
    return r.choices[0].message.content


def _validate(order: dict, inp_id: str) -> None:
    db = _trail_db(inp_id)
    issued, date = order["forecast"]["issued"], order["work_date"]
    if issued < _day_before(_day_before(_day_before(date))):
        raise WorkOrderRejected(f"422 Unprocessable Entity: forecast issued {issued} is more than 72 h before "
                                f"work date {date}; attach a current forecast")
    for t in order["tasks"]:
        if t["segment"] not in db:
            raise WorkOrderRejected(f"404 Not Found: segment {t['segment']} is not on trail {order['trail']}")
    for seg in db:
        if seg not in order["materials"]:
            raise WorkOrderRejected(f"422 Unprocessable Entity: segment {seg} has a task but no materials line")
    for seg, line in order["materials"].items():
        note = db[seg]
        n = _length(note)
        metres = float(n[0]) * (0.3048 if n[1] == "ft" else 1.0)
        if line["tonnes"] > 0.2 * metres + 0.05:
            raise WorkOrderRejected(f"422 Unprocessable Entity: {seg}: {line['tonnes']} t aggregate for a "
                                    f"{metres:.1f} m section exceeds 0.2 t/m")
    for seg, note in db.items():
        g = re.search(r"grade (\d+)%", note)
        if g and int(g.group(1)) > 10 and seg not in order["reroutes"]:
            raise WorkOrderRejected(f"409 Conflict: {seg} sustained grade {g.group(1)}% exceeds the bike-trail "
                                    "limit of 10%; a reroute task is required")


@trajdebug.step(kind="tool")
def submit_work_order(order: dict, inp_id: str) -> dict:
    _validate(order, inp_id)
    return {"status": 201, "work_order": f"WO-{order['trail'][:3].upper()}-{len(order['tasks'])}"}


def record(inp_id: str, path: str, server) -> None:
    server.use(_policy)
    _GATEWAY["calls"] = 0
    client = OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    req = dict(INPUTS[inp_id])
    try:
        with trajdebug.run(NAME, path=path, task=f"plan maintenance for {req['trail']}") as run:
            request = load_work_request(req)
            survey = fetch_trail_survey(request["trail"], inp_id)
            segments = [parse_survey_note(item) for item in survey["notes"]]
            weather = lookup_weather(request["trail"], request["work_date"])
            tasks = parse_plan(plan_tasks(client, segments, weather))
            materials = materials_agent(tasks)
            if not crew_is_enough(4, sum(HOURS_PER_M[t["issue"]] * t["length_m"] for t in tasks), request["budget_hours"]):
                run.state["crew"] = 6
            est = estimate_hours(tasks)
            summary = summarise_order(client, request["trail"], len(tasks), est["crew_hours"])
            standard = retrieve_trail_standard("sustained grade limit for mountain bike trails")
            limit = standard[0]["max_sustained_grade_pct"]
            est["reroutes"] = [seg["id"] for seg in segments if seg["grade_pct"] and seg["grade_pct"] > limit]
            order = {"trail": request["trail"], "work_date": request["work_date"], "forecast": weather,
                     "tasks": tasks, "materials": materials, "reroutes": est["reroutes"],
                     "crew_hours": est["crew_hours"], "summary": summary}
            submit_work_order(order, inp_id)
            run.state["submitted"] = True
    except WorkOrderRejected:
        pass
