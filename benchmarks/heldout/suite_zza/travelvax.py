"""Travel vaccination clinic (OTLP/OpenInference spans): itinerary requirements, history, selection, dose-scheduler sub-agent, stock reservation, appointment booking."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

from .common import OtelRecorder, client, request_text
from .kit import active

AGENT = "travel-vaccine-planner"
ROUTE = "otlp"
DOMAIN = "travel vaccination clinic"
SHAPE = "OTLP: intake -> patient tool -> requirements retriever per country -> history tool -> selection -> hand-off -> scheduler sub-agent (LLM draft, parse) -> stock check + reservation (retry) loop -> appointment booking tool"

BOOKINGS = {
    "A": {"booking": "TV-3301", "patient": "P-101", "companion": "P-102", "countries": ["Kenya", "Niger"], "start": "2027-01-05", "depart": "2027-02-15"},
    "B": {"booking": "TV-3318", "patient": "P-201", "companion": "P-202", "countries": ["Nepal", "Vietnam"], "start": "2027-02-02", "depart": "2027-03-01"},
    "R1": {"booking": "TV-3210", "patient": "P-301", "companion": None, "countries": ["Peru"], "start": "2027-01-11", "depart": "2027-02-01"},
    "R2": {"booking": "TV-3244", "patient": "P-401", "companion": "P-402", "countries": ["Tanzania", "Kenya"], "start": "2027-01-04", "depart": "2027-01-30"},
    "R3": {"booking": "TV-3267", "patient": "P-501", "companion": None, "countries": ["Vietnam"], "start": "2027-02-08", "depart": "2027-03-10"},
    "R4": {"booking": "TV-3289", "patient": "P-601", "companion": None, "countries": ["Nepal", "Peru"], "start": "2027-01-18", "depart": "2027-02-28"},
}
INPUTS = BOOKINGS
REFS = ["R1", "R2", "R3", "R4"]
REQUIREMENTS = {
    "Niger": ["Yellow fever", "Meningococcal ACWY", "Typhoid"], "Nigeria": ["Yellow fever", "Typhoid"],
    "Kenya": ["Yellow fever", "Typhoid", "Hepatitis A"], "Peru": ["Hepatitis A", "Typhoid"], "Tanzania": ["Yellow fever", "Hepatitis A"],
    "Nepal": ["Hepatitis A", "Typhoid", "Rabies"], "Vietnam": ["Hepatitis A", "Typhoid", "Japanese encephalitis"],
}
HISTORY = {
    "P-101": [("MMR", "2002-01-01"), ("Tetanus", "2019-05-01"), ("Typhoid", "2021-01-10"), ("Hepatitis A", "2023-09-01"), ("Hepatitis A booster", "2024-03-02")],
    "P-201": [("MMR", "1999-04-01"), ("Tetanus", "2020-06-11")],
    "P-202": [("MMR", "2001-04-01"), ("Rabies", "2025-01-10")],
    "P-301": [("MMR", "2004-03-01")], "P-401": [("Yellow fever", "2018-02-01")], "P-501": [("Typhoid", "2025-05-05")],
    "P-601": [("Hepatitis A", "2022-01-01"), ("Hepatitis A booster", "2022-07-01")],
}
VALID_YEARS = {"Typhoid": 3, "Yellow fever": 99, "Hepatitis A": 99, "Rabies": 99, "MMR": 99, "Tetanus": 10}
DOSES = {"Rabies": [0, 7, 21], "Japanese encephalitis": [0, 7]}


def policy(request: Any) -> str:
    system, text = request_text(request)
    if "dose scheduler" in system:
        patient = re.search(r"PATIENT (P-\d+)", text).group(1)
        start = dt.date.fromisoformat(re.search(r"START (\d{4}-\d\d-\d\d)", text).group(1))
        vaccines = json.loads(re.search(r"VACCINES (\[.*?\])", text).group(1))
        fmt = "%d/%m/%Y" if active("travelvax_03") else "%Y-%m-%d"
        lines = [f"PATIENT {patient}"]
        for v in vaccines:
            for i, off in enumerate(DOSES.get(v, [0])):
                lines.append(f"{v} dose {i + 1}: {(start + dt.timedelta(days=off)).strftime(fmt)}")
        return "\n".join(lines)
    return ""


def _valid(history: list, vaccine: str, on: str) -> bool:
    for name, date in history:
        if name.startswith(vaccine) and int(on[:4]) - int(date[:4]) < VALID_YEARS.get(vaccine, 99):
            return True
    return False


def _read_date(s: str) -> str:
    for f in ("%Y-%m-%d", "%m/%d/%Y", "%d/%m/%Y"):
        try:
            return dt.datetime.strptime(s, f).date().isoformat()
        except ValueError:
            continue
    return s


_attempts: dict[str, int] = {}


def record(key: str, path: Path, base_url: str) -> None:
    b = BOOKINGS[key]
    _attempts.clear()
    rec = OtelRecorder("travel-clinic")
    llm = client(base_url)
    try:
        with rec.span(AGENT, "AGENT", {"booking": b["booking"]}, **{"agent.name": AGENT}) as root:
            with rec.span("intake_booking", "CHAIN", {"booking": b["booking"]}) as sp:
                bk = rec.out(sp, dict(b))
            with rec.span("fetch_patient_record", "TOOL", {"patient": bk["patient"]}, **{"tool.name": "fetch_patient_record"}) as sp:
                patient = rec.out(sp, {"patient": bk["patient"], "companion": bk["companion"], "allergies": [], "pregnant": False})
            required: list = []
            for country in bk["countries"]:
                with rec.span("country_requirements", "RETRIEVER", country) as sp:
                    keys = sorted(REQUIREMENTS, key=lambda k: (k != country, k))
                    if active("travelvax_05"):
                        keys = sorted(REQUIREMENTS, key=lambda k: (country not in k, -len(k)))
                    doc = rec.out(sp, {"documents": [{"country": keys[0], "vaccines": REQUIREMENTS[keys[0]]}]})["documents"][0]
                required += [v for v in doc["vaccines"] if v not in required]
            with rec.span("immunisation_history", "TOOL", {"patient": patient["patient"]}, **{"tool.name": "immunisation_history"}) as sp:
                records = [list(r) for r in HISTORY.get(patient["patient"], [])]
                if active("travelvax_02"):
                    records = records[:3]
                hist = rec.out(sp, {"patient": patient["patient"], "records": records})
            with rec.span("select_vaccines", "CHAIN", {"required": required, "history": hist["records"]}) as sp:
                needed = rec.out(sp, [v for v in required if not _valid(hist["records"], v, bk["depart"])])
            with rec.span("delegate_schedule", "CHAIN", {"booking": bk["booking"], "vaccines": needed}) as sp:
                who = bk["companion"] if (active("travelvax_01") and bk["companion"]) else patient["patient"]
                task = rec.out(sp, {"patient": who, "start": bk["start"], "vaccines": needed})
            with rec.span("dose_scheduler", "AGENT", task, **{"agent.name": "dose_scheduler"}) as sub:
                text = rec.llm("draft_schedule", llm, [
                    {"role": "system", "content": "You are the dose scheduler for a travel clinic. One line per dose."},
                    {"role": "user", "content": f"PATIENT {task['patient']} START {task['start']} VACCINES {json.dumps(task['vaccines'])}"},
                ], "dose_scheduler")
                with rec.span("parse_schedule", "CHAIN", text) as sp:
                    lines = text.splitlines()
                    doses = [{"vaccine": m.group(1), "dose": int(m.group(2)), "date": _read_date(m.group(3))}
                             for m in (re.match(r"(.+) dose (\d+): (\S+)", ln) for ln in lines[1:]) if m]
                    sched = rec.out(sp, {"patient": lines[0].split()[1], "doses": doses})
                rec.out(sub, sched)
            reserved = {}
            for v in sorted({d["vaccine"] for d in sched["doses"]}):
                with rec.span("stock_check", "TOOL", {"vaccine": v}, **{"tool.name": "stock_check"}) as sp:
                    rec.out(sp, {"vaccine": v, "in_stock": 12, "batch": f"B-{v[:3].upper()}-7"})
                with rec.span("reserve_stock", "CHAIN", {"vaccine": v, "booking": bk["booking"]}) as sp:
                    for _ in range(3):
                        try:
                            with rec.span("pharmacy_reserve", "TOOL", {"vaccine": v}, **{"tool.name": "pharmacy_reserve"}) as tsp:
                                _attempts[v] = _attempts.get(v, 0) + 1
                                if v == "Typhoid" and _attempts[v] == 1:
                                    raise ConnectionError("pharmacy system 503: ledger locked, retry")
                                reserved[v] = rec.out(tsp, f"R-{bk['booking'][3:]}-{v[:3].upper()}")
                            break
                        except ConnectionError:
                            if active("travelvax_04"):
                                reserved[v] = "queued"
                                break
                    rec.out(sp, {"vaccine": v, "reservation": reserved.get(v)})
            with rec.span("book_appointment", "TOOL", {"booking": bk["booking"], "schedule": sched, "reserved": reserved},
                          **{"tool.name": "book_appointment"}) as sp:
                if sched["patient"] != b["patient"]:
                    raise RuntimeError(f"clinic register 422: schedule drafted for {sched['patient']}, booking {b['booking']} is for {b['patient']}")
                for d in sched["doses"]:
                    if _valid(HISTORY.get(b["patient"], []), d["vaccine"], b["depart"]):
                        raise RuntimeError(f"vaccine register 409: {b['patient']} already holds a valid {d['vaccine']} course; dose on {d['date']} refused")
                    if not b["start"] <= d["date"] < b["depart"]:
                        raise RuntimeError(f"clinic calendar 422: {d['vaccine']} dose {d['dose']} on {d['date']} is outside {b['start']}..{b['depart']}")
                    if not str(reserved.get(d["vaccine"], "")).startswith("R-"):
                        raise RuntimeError(f"stock ledger 409: no reservation for {d['vaccine']} on booking {b['booking']}")
                for c in b["countries"]:
                    for v in REQUIREMENTS[c]:
                        if not _valid(HISTORY.get(b["patient"], []), v, b["depart"]) and v not in {d["vaccine"] for d in sched["doses"]}:
                            raise RuntimeError(f"clinic protocol 422: {v} is required for {c} and missing from booking {b['booking']}")
                rec.out(sp, {"appointment": f"AP-{b['booking'][3:]}", "status": "booked"})
            rec.out(root, {"appointment": f"AP-{b['booking'][3:]}"})
    except RuntimeError:
        pass
    rec.write(path)


CASES = [
    dict(case="travelvax_01", fault_kind="subagent_wrong_entity", input="B", root=("delegate_schedule", 1, "other"), failure=("book_appointment", 1),
         description="The hand-off to the dose scheduler names the travelling companion instead of the patient, and the booking finds a schedule for someone else."),
    dict(case="travelvax_02", fault_kind="truncated_result", input="A", root=("immunisation_history", 1, "tool"), failure=("book_appointment", 1),
         description="The immunisation history returns only its first three records, hiding a completed Hepatitis A course, and the register refuses the repeat dose."),
    dict(case="travelvax_03", fault_kind="format_drift", input="B", root=("draft_schedule", 1, "llm"), failure=("book_appointment", 1),
         description="The dose scheduler writes day/month dates, the schedule parser reads them month first, and the booking finds doses after departure."),
    dict(case="travelvax_04", fault_kind="swallowed_error", input="A", root=("reserve_stock", 2, "other"), failure=("book_appointment", 1),
         description="The stock reservation step catches the pharmacy ledger's busy error and marks the typhoid dose as queued instead of retrying, so the booking has no reservation."),
    dict(case="travelvax_05", fault_kind="wrong_retrieval", input="A", root=("country_requirements", 2, "retrieval"), failure=("book_appointment", 1),
         description="The requirements retriever prefers the longest country name containing the query and returns Nigeria's list for Niger, leaving out the meningococcal vaccine."),
]
