"""Ambulance crew shift swaps (sdk route): find a cover for a requested shift swap and file it."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import trajdebug

from . import kit
from .common import Agent, Case, ChatClient, last_user_json

ROSTERS = {
    ("Northgate", "2026-W11"): """crew;role;date;start;end
P-2231;paramedic;2026-03-09;07:00;19:00
E-118;emt;2026-03-09;07:00;19:00
P-3390;paramedic;2026-03-09;07:00;19:00
P-3390;paramedic;2026-03-13;22:00;10:00
P-4471;paramedic;2026-03-10;07:00;19:00
P-4471;paramedic;2026-03-11;07:00;19:00
P-4471;paramedic;2026-03-12;08:00;14:00
P-1107;paramedic;2026-03-09;07:00;19:00
P-1107;paramedic;2026-03-10;07:00;19:00
P-1107;paramedic;2026-03-11;07:00;19:00
P-1107;paramedic;2026-03-12;07:00;11:00""",
    ("Northgate", "2026-W12"): """crew;role;date;start;end
P-3390;paramedic;2026-03-16;07:00;19:00
E-118;emt;2026-03-17;07:00;19:00
E-118;emt;2026-03-18;07:00;19:00
P-4471;paramedic;2026-03-17;07:00;19:00
P-4471;paramedic;2026-03-18;07:00;19:00
P-4471;paramedic;2026-03-20;11:00;23:00
P-2231;paramedic;2026-03-16;07:00;19:00
P-2231;paramedic;2026-03-17;07:00;19:00
P-2231;paramedic;2026-03-18;07:00;19:00
P-2231;paramedic;2026-03-19;07:00;15:00
P-1107;paramedic;2026-03-16;07:00;19:00""",
}
LEAVE = {"P-3390": [{"type": "annual", "from": "2026-03-20", "to": "2026-03-22"}]}
GATEWAY_FLAKY = {"P-3390"}
POLICIES = [
    {"doc": "PTS-OPS-4", "title": "Patient transport service: shift exchange rules",
     "min_rest_h": 11, "max_week_h": 48, "vehicle_roles": {}},
    {"doc": "EMS-OPS-12", "title": "Emergency crews: shift swap rules (A&E response)",
     "min_rest_h": 11, "max_week_h": 48,
     "vehicle_roles": {"RRV-3": ["paramedic"], "AMB-7": ["paramedic", "emt"], "AMB-2": ["paramedic", "emt"]}},
]
_CALLS: dict[str, int] = {}  # calls per crew member in the current run


class RosterAPIError(Exception):
    """An error answer of the rostering service."""


def _shift(date: str, start: str, end: str) -> tuple[datetime, datetime]:
    s = datetime.fromisoformat(f"{date}T{start}")
    e = datetime.fromisoformat(f"{date}T{end}")
    if e <= s:
        e += timedelta(days=1)
    return s, e


def _true_rows(station: str, week: str) -> list[dict[str, Any]]:
    rows = []
    for line in ROSTERS[(station, week)].splitlines()[1:]:
        crew, role, date, start, end = line.split(";")
        s, e = _shift(date, start, end)
        rows.append({"crew": crew, "role": role, "start": s, "end": e})
    return rows


# ---- steps -------------------------------------------------------------------------------------------


@trajdebug.step(kind="input")
def load_request(request: dict) -> dict:
    return dict(request)


@trajdebug.step(kind="tool")
def fetch_roster(station: str, week: str) -> str:
    return ROSTERS[(station, week)]


@trajdebug.step(kind="parse")
def parse_roster(text: str) -> list[dict]:
    lines = text.strip().splitlines()
    header = lines[0].split(";")
    rows = [dict(zip(header, line.split(";"))) for line in lines[1:]]
    if kit.active("amb.lossy_parsing"):
        latest: dict[str, dict] = {}
        for r in rows:
            latest[r["crew"]] = r  # one row per crew member
        rows = list(latest.values())
    return rows


@trajdebug.step(kind="other")
def summarize_hours(rows: list[dict]) -> list[dict]:
    out: dict[str, dict] = {}
    for r in rows:
        s, e = _shift(r["date"], r["start"], r["end"])
        d = out.setdefault(r["crew"], {"crew": r["crew"], "role": r["role"], "hours": 0.0, "shifts": []})
        d["hours"] += (e - s).total_seconds() / 3600
        d["shifts"].append({"start": s.isoformat(timespec="minutes"), "end": e.isoformat(timespec="minutes")})
    return list(out.values())


@trajdebug.step(kind="retrieval")
def retrieve_policy(query: str) -> dict:
    words = set(query.lower().split())
    scored = sorted(POLICIES, key=lambda d: -len(words & set(d["title"].lower().replace(":", "").split())))
    if kit.active("amb.wrong_retrieval"):
        scored = [d for d in POLICIES if d["doc"].startswith("PTS")]
    return dict(scored[0])


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_leave(crew: str, date: str) -> dict:
    _CALLS[crew] = _CALLS.get(crew, 0) + 1
    try:
        if crew in GATEWAY_FLAKY and _CALLS[crew] == 1:
            raise ConnectionError("HR leave gateway answered 503 Service Unavailable")
    except ConnectionError:
        if kit.active("amb.swallowed_error"):
            return {"crew": crew, "leave": []}
        raise
    return {"crew": crew, "leave": LEAVE.get(crew, [])}


@trajdebug.step(kind="other")
def compute_rest_gap(shifts: list[dict], start: str) -> float:
    begin = datetime.fromisoformat(start)
    ends = [datetime.fromisoformat(s["end"]) for s in shifts if datetime.fromisoformat(s["end"]) <= begin]
    if not ends:
        return 999.0
    minutes = (begin - max(ends)).total_seconds() / 60
    if kit.active("amb.unit_error"):
        return round(minutes, 1)
    return round(minutes / 60, 1)


@trajdebug.step(kind="other")
def check_weekly_hours(hours: float, added: float, limit: float) -> dict:
    return {"total": hours + added, "within": hours + added <= limit}


@trajdebug.step(kind="condition")
def select_candidate(checked: list[dict]) -> dict:
    for c in checked:
        if c["eligible"]:
            return c
    return {"crew": None, "eligible": False}


@trajdebug.step(kind="state")
def remember_choice(checked: list[dict], chosen: dict, request: dict) -> dict:
    pick = checked[-1] if kit.active("amb.bad_memory_write") else chosen
    record = {"request_id": request["request_id"], "shift": request["shift"]["id"], "cover": pick["crew"],
              "role": pick["role"], "weekly_hours": pick["hours_after"]}
    trajdebug.current_run().state["swap"] = record
    return record


@trajdebug.step(kind="tool")
def lookup_contact(crew: str) -> dict:
    return {"crew": crew, "sms": "+44 7700 900" + "".join(c for c in crew if c.isdigit())[-3:].rjust(3, "0")}


@trajdebug.step(kind="tool")
def submit_swap(request: dict) -> dict:
    swap = trajdebug.current_run().state["swap"]
    submission = {"swap_id": request["request_id"], "station": request["station"], "shift_id": swap["shift"],
                  "from_crew": request["requester"], "to_crew": swap["cover"], "vehicle": request["shift"]["vehicle"]}
    rows = _true_rows(request["station"], request["week"])
    crew = submission["to_crew"]
    mine = [r for r in rows if r["crew"] == crew]
    role = mine[0]["role"] if mine else "unknown"
    sh = request["shift"]
    start, end = _shift(sh["date"], sh["start"], "00:00")
    start = datetime.fromisoformat(f"{sh['date']}T{sh['start']}")
    end = start + timedelta(hours=sh["hours"])
    rules = POLICIES[1]
    problems = []
    allowed = rules["vehicle_roles"].get(sh["vehicle"])
    if allowed and role not in allowed:
        problems.append(f"vehicle {sh['vehicle']} requires role {' or '.join(allowed)}; {crew} is registered as {role}")
    for lv in LEAVE.get(crew, []):
        if lv["from"] <= sh["date"] <= lv["to"]:
            problems.append(f"{crew} is on {lv['type']} leave on {sh['date']}")
    ends = [r["end"] for r in mine if r["end"] <= start]
    if ends and (start - max(ends)).total_seconds() / 3600 < rules["min_rest_h"]:
        gap = (start - max(ends)).total_seconds() / 3600
        problems.append(f"rest period {gap:.1f} h before shift {sh['id']} is below the {rules['min_rest_h']} h minimum")
    hours = sum((r["end"] - r["start"]).total_seconds() / 3600 for r in mine) + sh["hours"]
    if hours > rules["max_week_h"]:
        problems.append(f"weekly hours {hours:.1f} for {crew} exceed the {rules['max_week_h']} h limit")
    if problems:
        raise RosterAPIError("HTTP 409 Conflict: " + json.dumps({"error": "swap_rejected", "swap_id":
                             submission["swap_id"], "details": problems}))
    return {"status": "accepted", "swap_id": submission["swap_id"], "cover": crew, "ends": end.isoformat()}


# ---- the model ---------------------------------------------------------------------------------------


def policy(request: Any) -> str:
    p = last_user_json(request.body)
    if p.get("task") == "rank":
        allowed = p["rules"]["vehicle_roles"].get(p["shift"]["vehicle"])
        pool = [c for c in p["crew"] if c["crew"] != p["requester"] and (not allowed or c["role"] in allowed)]
        pool.sort(key=lambda c: (c["hours"], c["crew"]))
        return json.dumps({"ranked": [c["crew"] for c in pool], "reason": "fewest rostered hours first"})
    if p.get("task") == "notice":
        return (f"Hi {p['crew']}, you are covering shift {p['shift']} on {p['date']} "
                f"({p['vehicle']}) for {p['requester']}. Reply YES to confirm.")
    return "{}"


def record(request: dict, out: Path, base_url: str) -> None:
    out.unlink(missing_ok=True)
    _CALLS.clear()
    llm = ChatClient(base_url)
    try:
        with trajdebug.run("ambulance-shift-swaps", path=str(out), task=f"swap {request['request_id']}"):
            req = load_request(request)
            text = fetch_roster(req["station"], req["week"])
            rows = parse_roster(text)
            crew = summarize_hours(rows)
            rules = retrieve_policy("emergency crews shift swap rules response")
            payload = {"task": "rank", "shift": req["shift"], "requester": req["requester"], "rules": rules,
                       "crew": [{k: c[k] for k in ("crew", "role", "hours")} for c in crew]}
            with trajdebug.step("propose_candidates", kind="llm", input={"messages": payload}) as s:
                answer = llm.ask("Rank crew members who can cover the shift. Answer JSON.", payload)
                s.output = answer
            ranked = json.loads(answer)["ranked"]
            by_id = {c["crew"]: c for c in crew}
            start = f"{req['shift']['date']}T{req['shift']['start']}"
            checked = []
            for cid in ranked:
                c = by_id[cid]
                leave = fetch_leave(cid, req["shift"]["date"])
                on_leave = any(lv["from"] <= req["shift"]["date"] <= lv["to"] for lv in leave["leave"])
                gap = compute_rest_gap(c["shifts"], start)
                week = check_weekly_hours(c["hours"], float(req["shift"]["hours"]), rules["max_week_h"])
                checked.append({"crew": cid, "role": c["role"], "rest_h": gap, "hours_after": week["total"],
                                "eligible": (not on_leave) and gap >= rules["min_rest_h"] and week["within"]})
            chosen = select_candidate(checked)
            with trajdebug.step("notify_crew", kind="agent", input={"crew": chosen["crew"]}) as sub:
                contact = lookup_contact(chosen["crew"])
                np = {"task": "notice", "crew": contact["crew"], "shift": req["shift"]["id"],
                      "date": req["shift"]["date"], "vehicle": req["shift"]["vehicle"], "requester": req["requester"]}
                with trajdebug.step("draft_notice", kind="llm", input={"messages": np}) as d:
                    d.output = llm.ask("Write a short SMS to the covering crew member.", np)
                sub.output = {"sms": contact["sms"], "text": d.output}
            remember_choice(checked, chosen, req)
            submit_swap(req)
    except RosterAPIError:
        pass


def _req(rid: str, requester: str, week: str, sid: str, date: str, start: str, vehicle: str) -> dict:
    return {"request_id": rid, "requester": requester, "station": "Northgate", "week": week,
            "shift": {"id": sid, "date": date, "start": start, "hours": 12, "vehicle": vehicle}}


INPUTS = {
    "A": _req("SW-5012", "P-2231", "2026-W11", "N-14", "2026-03-14", "19:00", "RRV-3"),
    "B": _req("SW-5090", "P-1107", "2026-W12", "D-21", "2026-03-21", "07:00", "AMB-7"),
    "C": _req("SW-5031", "P-4471", "2026-W11", "D-15", "2026-03-15", "07:00", "AMB-2"),
    "D": _req("SW-5102", "E-118", "2026-W12", "N-19", "2026-03-19", "19:00", "RRV-3"),
    "E": _req("SW-5040", "P-3390", "2026-W11", "D-15", "2026-03-15", "07:00", "RRV-3"),
    "F": _req("SW-5117", "P-2231", "2026-W12", "D-23", "2026-03-23", "07:00", "AMB-7"),
}

AGENT = Agent(
    name="ambulance_swaps", module="ambulance_swaps.py", route="sdk", domain="ambulance crew shift swaps",
    shape="roster fetch -> parse -> policy retrieval -> LLM ranking -> per-candidate leave/rest/hours loop "
          "(with retries) -> selection -> notify sub-agent -> state -> submit swap",
    inputs=INPUTS, refs=("C", "D", "E", "F"), policy=policy, record=record,
    cases=(
        Case("zze_amb_01", "amb.unit_error", "unit_error", "A", ("compute_rest_gap", 1, "other"),
             ("submit_swap", 1), "The rest gap is returned in minutes while the check compares it with hours."),
        Case("zze_amb_02", "amb.lossy_parsing", "lossy_parsing", "A", ("parse_roster", 1, "parse"),
             ("submit_swap", 1), "The roster parser keeps only one shift row per crew member."),
        Case("zze_amb_03", "amb.wrong_retrieval", "wrong_retrieval", "A", ("retrieve_policy", 1, "retrieval"),
             ("submit_swap", 1), "The patient transport rules are retrieved instead of the emergency crew rules."),
        Case("zze_amb_04", "amb.bad_memory_write", "bad_memory_write", "B", ("remember_choice", 1, "state"),
             ("submit_swap", 1), "The swap record stores the last checked crew member, not the selected one."),
        Case("zze_amb_05", "amb.swallowed_error", "swallowed_error", "B", ("fetch_leave", 1, "tool"),
             ("submit_swap", 1), "The leave lookup hides a gateway 503 and reports no leave."),
    ),
)
