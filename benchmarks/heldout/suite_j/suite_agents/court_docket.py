"""Court docket scheduling (route: sdk): a motion filing becomes a hearing on a judge's calendar.

Extract the motion with the model, look the case up, read the judge's calendar (a flaky service,
retried), check every counsel's trial calendar, let the model pick a slot, write the docket entry,
notify counsel, book the courtroom, and check the docket against the booking.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import trajdebug

from ..harness import AgentSpec, Fault, active, extract_json, last_user, system_text
from ..routes import openai_client, sdk_chat


NAME = "court-docket-scheduler"

ROOMS = {"Hon. A. Delacroix": "Courtroom 4A", "Hon. M. Szabo": "Courtroom 6C"}
LIVE_SLOTS = {
    "Courtroom 4A": [("2026-03-10", "09:00", 120), ("2026-03-12", "13:30", 120), ("2026-03-16", "09:00", 180),
                     ("2026-03-17", "10:00", 120)],
    "Courtroom 6C": [("2026-03-09", "14:00", 90), ("2026-03-11", "09:00", 180), ("2026-03-13", "10:00", 120)],
}
# Booked by another matter after the replica's last sync.
TAKEN = {("Courtroom 4A", "2026-03-09", "09:00"): "24-CV-1187"}
BUSY = {"S. Novak": ("2026-03-09", 2, "25-CR-0031"), "R. Okafor": ("2026-03-09", 4, "25-CR-0117"),
        "M. Ferreira": ("2026-03-16", 1, "25-CV-0420")}


def filing(case_no: str, motion: str, hours: float, judge: str, counsel: list[str]) -> dict[str, Any]:
    return {"case_no": case_no, "motion": motion, "hours": hours, "judge": judge, "counsel": counsel,
            "earliest": "2026-03-09"}


INPUTS = [
    filing("23-CV-0412", "motion to compel discovery", 1.5, "Hon. A. Delacroix", ["J. Whitfield", "P. Ramanathan"]),
    filing("24-CV-0877", "motion for summary judgment", 2, "Hon. A. Delacroix", ["L. Moreau", "D. Haddad"]),
    filing("24-CV-1020", "motion in limine", 1, "Hon. M. Szabo", ["K. Osei", "B. Lindqvist", "A. Petrov"]),
    filing("22-CV-2291", "motion to dismiss", 1, "Hon. A. Delacroix", ["S. Novak", "T. Alvarez"]),
    filing("24-CV-0153", "motion for preliminary injunction", 2, "Hon. A. Delacroix", ["R. Okafor", "E. Brandt"]),
]
REFS = [
    filing("23-CV-1774", "motion to amend the complaint", 1, "Hon. M. Szabo", ["H. Tanaka", "M. Ferreira"]),
    filing("24-CV-0309", "motion for protective order", 1.5, "Hon. A. Delacroix", ["C. Adeyemi", "N. Kowalski"]),
    filing("21-CV-3310", "motion to strike", 0.5, "Hon. M. Szabo", ["G. Laurent", "I. Svensson"]),
    filing("24-CV-0588", "motion for sanctions", 2, "Hon. A. Delacroix", ["F. Mbeki", "O. Lindgren", "Y. Cho"]),
]
BY_CASE = {f["case_no"]: f for f in INPUTS + REFS}


class CalendarUnavailable(RuntimeError):
    pass


class BookingRejected(RuntimeError):
    pass


class CounselConflict(RuntimeError):
    pass


class DocketMismatch(AssertionError):
    pass


def policy(request: Any) -> str:
    system, user = system_text(request), last_user(request)
    if system.startswith("You read court filings"):
        case_no = re.search(r"\d\d-C[VR]-\d{4}", user).group(0)
        f = BY_CASE[case_no]
        hours = f["hours"]
        length = f"{hours:g} hours" if hours != 1 else "1 hour"
        return json.dumps({"case_no": case_no, "motion": f["motion"], "hearing_length": length,
                           "earliest_date": f["earliest"]})
    data = extract_json(user)
    for slot in data["slots"]:
        if slot["date"] >= data["earliest"] and slot["date"] not in data["blocked_dates"] \
                and slot["minutes"] >= data["hearing_minutes"]:
            room = "Courtroom 9B" if active("cd-room") else slot["room"]
            return json.dumps({"date": slot["date"], "start": slot["start"], "room": room,
                               "minutes": data["hearing_minutes"],
                               "note": "first open slot after the earliest date with all counsel free"})
    return json.dumps({"date": None, "note": "no open slot"})


@trajdebug.step(kind="input")
def intake_filing(item: dict[str, Any]) -> str:
    return (f"NOTICE OF MOTION. Case No. {item['case_no']}. Movant files a {item['motion']}, estimated hearing "
            f"length {item['hours']:g} hour(s), to be heard on or after {item['earliest']} before {item['judge']}.")


@trajdebug.step(kind="parse")
def parse_extraction(text: str) -> dict[str, Any]:
    raw = json.loads(text)
    amount, unit = raw["hearing_length"].split()
    minutes = float(amount)
    if unit.startswith("hour") and not active("cd-units"):
        minutes = minutes * 60
    return {"case_no": raw["case_no"], "motion": raw["motion"], "hearing_minutes": minutes,
            "earliest": raw["earliest_date"]}


@trajdebug.step(kind="tool")
def lookup_case(case_no: str) -> dict[str, Any]:
    f = BY_CASE[case_no]
    return {"case_no": case_no, "division": "Civil", "judge": f["judge"], "courtroom": ROOMS[f["judge"]],
            "counsel": list(f["counsel"]), "status": "open"}


@trajdebug.step(kind="tool")
def fetch_judge_calendar(judge: str, attempt: int) -> dict[str, Any]:
    room = ROOMS[judge]
    if attempt == 1:
        raise CalendarUnavailable("calendar service answered 503 Service Unavailable")
    slots = [{"date": d, "start": t, "room": room, "minutes": m} for d, t, m in LIVE_SLOTS[room]]
    as_of = "2026-03-02T07:15:00Z"
    if active("cd-replica"):
        # the read replica answered: its last sync predates later bookings
        as_of = "2026-02-20T07:15:00Z"
        slots = [{"date": d, "start": t, "room": r, "minutes": 180} for r, d, t in TAKEN if r == room] + slots
    return {"judge": judge, "as_of": as_of, "source": "calendar-replica-2", "slots": slots}


@trajdebug.step(kind="tool")
def check_counsel_availability(name: str) -> dict[str, Any]:
    if name in BUSY:
        start, days, matter = BUSY[name]
        return {"counsel": name, "trials": [{"matter": matter, "from": start, "days": days}]}
    return {"counsel": name, "trials": []}


def _day(date: str, plus: int) -> str:
    y, m, d = (int(x) for x in date.split("-"))
    return f"{y:04d}-{m:02d}-{d + plus:02d}"


@trajdebug.step(kind="other")
def merge_counsel_conflicts(reports: list[dict[str, Any]]) -> list[dict[str, Any]]:
    merged = []
    for rep in reports:
        blocked: list[str] = []
        for trial in rep["trials"]:
            span = trial["days"] - 1 if active("cd-conflict") else trial["days"]
            blocked += [_day(trial["from"], k) for k in range(span)]
        merged.append({"counsel": rep["counsel"], "blocked": blocked, "last_blocked": blocked[-1] if blocked else None})
    return merged


@trajdebug.step(kind="parse")
def parse_plan(text: str) -> dict[str, Any]:
    plan = json.loads(text)
    if not plan.get("date"):
        raise BookingRejected("no open slot before the end of the calendar window")
    return plan


@trajdebug.step(kind="state")
def save_docket_entry(case: dict[str, Any], motion: dict[str, Any], plan: dict[str, Any]) -> dict[str, Any]:
    date = motion["earliest"] if active("cd-docket") else plan["date"]
    entry = {"case_no": case["case_no"], "event": f"Hearing: {motion['motion']}", "hearing_date": date,
             "start": plan["start"], "room": plan["room"], "judge": case["judge"]}
    trajdebug.current_run().state["docket_entry"] = entry
    return entry


@trajdebug.step(kind="tool")
def notify_counsel(name: str, plan: dict[str, Any], case_no: str) -> dict[str, Any]:
    if name in BUSY:
        start, days, matter = BUSY[name]
        if start <= plan["date"] <= _day(start, days - 1):
            raise CounselConflict(f"e-filing refused notice to {name}: in trial in {matter} on {plan['date']}")
    return {"to": name, "case_no": case_no, "delivered": True, "hearing": f"{plan['date']} {plan['start']}"}


@trajdebug.step(kind="tool")
def book_courtroom(plan: dict[str, Any], case: dict[str, Any]) -> dict[str, Any]:
    room = plan["room"]
    if room not in LIVE_SLOTS:
        raise BookingRejected(f"facilities: no room named {room} in the {case['division']} Division")
    if (room, plan["date"], plan["start"]) in TAKEN:
        matter = TAKEN[(room, plan["date"], plan["start"])]
        raise BookingRejected(f"facilities: {room} on {plan['date']} {plan['start']} is held by {matter}")
    if plan["minutes"] < 15:
        raise BookingRejected(f"facilities: a {plan['minutes']:g}-minute booking is below the 15-minute minimum")
    return {"booking": f"FB-{case['case_no'][-4:]}-{plan['date'][-2:]}", "room": room, "date": plan["date"],
            "start": plan["start"], "minutes": plan["minutes"]}


@trajdebug.step(kind="condition")
def final_check(booking: dict[str, Any]) -> bool:
    entry = trajdebug.current_run().state["docket_entry"]
    if (entry["hearing_date"], entry["room"]) != (booking["date"], booking["room"]):
        raise DocketMismatch(f"docket entry {entry['hearing_date']} {entry['room']} does not match courtroom "
                             f"booking {booking['booking']} ({booking['date']} {booking['room']})")
    return True


@trajdebug.step(kind="output")
def issue_order(entry: dict[str, Any], booking: dict[str, Any]) -> str:
    return f"ORDER SETTING HEARING: {entry['case_no']}, {entry['event']}, {booking['date']} {booking['start']}, {booking['room']}."


def run(server: Any, item: dict[str, Any], path: Path) -> None:
    server.use(policy)
    client = openai_client(server)
    try:
        with trajdebug.run(NAME, path=str(path), task=f"schedule the {item['motion']} in {item['case_no']}"):
            text = intake_filing(item)
            extracted = sdk_chat(client, "extract_motion", [
                {"role": "system", "content": "You read court filings and answer JSON: case_no, motion, "
                                              "hearing_length, earliest_date."},
                {"role": "user", "content": text}])
            motion = parse_extraction(extracted)
            case = lookup_case(motion["case_no"])
            calendar = None
            for attempt in (1, 2, 3):
                try:
                    calendar = fetch_judge_calendar(case["judge"], attempt)
                    break
                except CalendarUnavailable:
                    continue
            reports = [check_counsel_availability(name) for name in case["counsel"]]
            conflicts = merge_counsel_conflicts(reports)
            blocked = sorted({d for c in conflicts for d in c["blocked"]})
            ask = {"case_no": case["case_no"], "hearing_minutes": motion["hearing_minutes"],
                   "earliest": motion["earliest"], "slots": calendar["slots"], "blocked_dates": blocked}
            answer = sdk_chat(client, "plan_hearing", [
                {"role": "system", "content": "You schedule hearings. Pick the first slot on or after the earliest "
                                              "date that no counsel is blocked on and that fits the hearing. "
                                              "Answer JSON: date, start, room, minutes."},
                {"role": "user", "content": "Scheduling request: " + json.dumps(ask)}])
            plan = parse_plan(answer)
            entry = save_docket_entry(case, motion, plan)
            for name in case["counsel"]:
                notify_counsel(name, plan, case["case_no"])
            booking = book_courtroom(plan, case)
            final_check(booking)
            issue_order(entry, booking)
    except (BookingRejected, CounselConflict, DocketMismatch):
        pass


SPEC = AgentSpec(
    name=NAME, route="sdk", domain="court docket scheduling", inputs=INPUTS, ref_inputs=REFS, run=run,
    faults=[
        Fault("cd-units", "unit_error", 0, "parse_extraction", '"hearing_minutes": 1.5',
              "hours read as minutes; the courtroom booking refuses 1.5 minutes"),
        Fault("cd-replica", "stale_data", 1, "fetch_judge_calendar", '"as_of": "2026-02-20T07:15:00Z"',
              "the retry after a 503 reads a lagging replica; a slot since taken is booked"),
        Fault("cd-room", "hallucinated_value", 2, "plan_hearing", "Courtroom 9B",
              "the model names a courtroom that does not exist"),
        Fault("cd-docket", "bad_memory_write", 3, "save_docket_entry", '"hearing_date": "2026-03-09"',
              "the docket entry keeps the requested date; the agent's final check catches it"),
        Fault("cd-conflict", "off_by_one", 4, "merge_counsel_conflicts", '"last_blocked": "2026-03-11"',
              "a trial's last day is left out; the model picks it; counsel's e-filing refuses"),
    ],
)
