"""Clinic appointment booker (LangGraph StateGraph pipeline, clinic scheduling).

A front-desk message is turned into a structured request by the model, parsed,
enriched with the patient's referral and preferences, matched against the
calendar, and the model picks a slot; the booking system enforces the clinic's
rules (referral, slot length, earliest date, in-person visits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from sb.fakellm import Conversation, Reply, say
from sb.harness import Case, failing, faulty, tick
from sb.lgkit import chat_model, invoke


AGENT = "clinic-booker"
ROUTE = "langgraph"
DOMAIN = "clinic scheduling"

VISIT_MINUTES = {
    "colonoscopy consult": 45,
    "post-op review": 30,
    "wound check": 15,
    "new patient assessment": 60,
    "medication review": 20,
    "physio follow-up": 30,
}
IN_PERSON = {"colonoscopy consult", "post-op review", "wound check", "physio follow-up"}

PATIENTS = {
    "P-1042": {"name": "Hana Ito", "referral_to": "Dr. Lindqvist", "not_before": "2025-07-01"},
    "P-2231": {"name": "Marcus Bell", "referral_to": "Dr. Okafor", "not_before": "2025-07-01"},
    "P-3307": {"name": "Ines Duarte", "referral_to": "Dr. Lindqvist", "not_before": "2025-07-28"},
    "P-4410": {"name": "Tomasz Nowak", "referral_to": "Dr. Haddad", "not_before": "2025-07-01"},
    "P-5128": {"name": "Aroha Ngata", "referral_to": "Dr. Okafor", "not_before": "2025-07-01"},
    "P-6093": {"name": "Leila Farouk", "referral_to": "Dr. Haddad", "not_before": "2025-07-21"},
    "P-7150": {"name": "Sven Aalto", "referral_to": "Dr. Lindqvist", "not_before": "2025-07-01"},
    "P-8802": {"name": "Grace Obi", "referral_to": "Dr. Okafor", "not_before": "2025-07-01"},
}
PREFERENCES = {
    "P-1042": "mornings if possible",
    "P-2231": "video visits preferred",
    "P-3307": "no Mondays",
    "P-4410": "afternoons",
    "P-5128": "video visits preferred",
    "P-6093": "none recorded",
    "P-7150": "needs step-free access",
    "P-8802": "none recorded",
}


def _calendar() -> dict[str, dict[str, Any]]:
    slots: dict[str, dict[str, Any]] = {}
    pattern = [
        (15, "in-person"),
        (30, "video"),
        (45, "in-person"),
        (20, "in-person"),
        (60, "video"),
        (30, "in-person"),
        (45, "video"),
        (60, "in-person"),
    ]
    times = ["08:30", "09:15", "10:00", "11:10", "13:00", "14:20", "15:30", "16:40"]
    for c, clinician in enumerate(["Dr. Lindqvist", "Dr. Okafor", "Dr. Haddad"]):
        for d, day in enumerate(
            ["2025-07-03", "2025-07-10", "2025-07-17", "2025-07-24", "2025-07-30", "2025-08-06"]
        ):
            for k in range(len(pattern)):
                i = (k + c + d) % len(pattern)
                sid = f"S-{c + 1}{d + 1}{k + 1:02d}"
                slots[sid] = {
                    "slot_id": sid,
                    "clinician": clinician,
                    "date": day,
                    "time": times[k],
                    "minutes": pattern[i][0],
                    "mode": pattern[i][1],
                }
    return slots


CALENDAR = _calendar()
_last_preferences: dict[str, str] = {}


@tool
def get_patient(patient_id: str) -> dict[str, Any]:
    """The patient's record: name, referral clinician and the earliest allowed date."""
    tick("get_patient")
    return {"patient_id": patient_id, **PATIENTS[patient_id]}


@tool
def find_slots(clinician: str, from_date: str, min_minutes: int) -> list[dict[str, Any]]:
    """Open calendar slots of a clinician from a date on, at least min_minutes long, earliest first."""
    tick("find_slots")
    ignore_clinician = faulty("slots_any_clinician", "find_slots")
    rows = [
        s
        for s in CALENDAR.values()
        if (ignore_clinician or s["clinician"] == clinician)
        and s["date"] >= from_date
        and s["minutes"] >= min_minutes
    ]
    rows.sort(key=lambda s: (s["date"], s["time"]))
    return rows[:8]


@tool
def book_appointment(patient_id: str, slot_id: str, visit_type: str) -> dict[str, Any]:
    """Book a calendar slot for a patient; the clinic's booking rules are enforced."""
    tick("book_appointment")
    p, s = PATIENTS[patient_id], CALENDAR[slot_id]
    need = VISIT_MINUTES[visit_type]
    problem = None
    if s["clinician"] != p["referral_to"]:
        problem = f"{p['name']} is referred to {p['referral_to']}; slot {slot_id} is with {s['clinician']}"
    elif s["minutes"] < need:
        problem = f"a {visit_type} takes {need} min but slot {slot_id} is only {s['minutes']} min"
    elif s["date"] < p["not_before"]:
        problem = (
            f"{visit_type} for {p['name']} cannot be scheduled before {p['not_before']} (slot is {s['date']})"
        )
    elif visit_type in IN_PERSON and s["mode"] != "in-person":
        problem = f"{visit_type} must be seen in person; {slot_id} is a {s['mode']} slot"
    if problem:
        failing("book_appointment")
        raise ValueError(f"booking rejected: {problem}")
    return {"confirmation": f"BK-{slot_id[2:]}-{patient_id[2:]}", **s, "patient_id": patient_id}


class BookingState(TypedDict, total=False):
    message: str
    extracted: str
    request: dict[str, Any]
    patient: dict[str, Any]
    preferences: str
    slots: list[dict[str, Any]]
    choice: str
    booking: dict[str, Any]


EXTRACT_SYSTEM = (
    "Turn the front-desk note into JSON with keys patient_id, clinician, visit_type, earliest_date "
    "(YYYY-MM-DD) and duration_min. Output only the JSON object."
)
CHOOSE_SYSTEM = (
    "You schedule clinic appointments. Given the request, the patient's preferences and the open slots, "
    'answer with JSON {"slot_id": ...} for the best slot. Honour stated preferences.'
)
LLM = chat_model("gpt-4o-mini")


def extract_request(state: BookingState, config: RunnableConfig) -> BookingState:
    msg = LLM.invoke([SystemMessage(EXTRACT_SYSTEM), HumanMessage(state["message"])], config)
    return {"extracted": str(msg.content)}


def parse_request(state: BookingState) -> BookingState:
    tick("parse_request")
    raw = json.loads(state["extracted"])
    req = {k: raw.get(k) for k in ("patient_id", "clinician", "visit_type", "earliest_date")}
    if faulty("duration_key_default", "parse_request"):
        req["duration_min"] = int(raw.get("duration", 15))  # old field name; the default hides the miss
    else:
        req["duration_min"] = int(raw.get("duration_min", raw.get("duration", 15)))
    return {"request": req}


def lookup_patient(state: BookingState, config: RunnableConfig) -> BookingState:
    return {"patient": get_patient.invoke({"patient_id": state["request"]["patient_id"]}, config)}


def load_preferences(state: BookingState) -> BookingState:
    tick("load_preferences")
    pid = state["request"]["patient_id"]
    if faulty("previous_caller_preferences", "load_preferences") and _last_preferences:
        prefs = _last_preferences["text"]  # the session cache still holds the previous caller's notes
    else:
        prefs = PREFERENCES[pid]
    return {"preferences": prefs}


def search_slots(state: BookingState, config: RunnableConfig) -> BookingState:
    req = state["request"]
    rows = find_slots.invoke(
        {
            "clinician": req["clinician"],
            "from_date": req["earliest_date"],
            "min_minutes": req["duration_min"],
        },
        config,
    )
    return {"slots": rows}


def choose_slot(state: BookingState, config: RunnableConfig) -> BookingState:
    prompt = (
        f"Request: {json.dumps(state['request'])}\nPatient preferences: {state['preferences']}\n"
        f"Open slots: {json.dumps(state['slots'])}"
    )
    msg = LLM.invoke([SystemMessage(CHOOSE_SYSTEM), HumanMessage(prompt)], config)
    return {"choice": str(msg.content)}


def book_slot(state: BookingState, config: RunnableConfig) -> BookingState:
    slot_id = json.loads(state["choice"])["slot_id"]
    booking = book_appointment.invoke(
        {
            "patient_id": state["request"]["patient_id"],
            "slot_id": slot_id,
            "visit_type": state["request"]["visit_type"],
        },
        config,
    )
    _last_preferences["text"] = state["preferences"]
    return {"booking": booking}


def _graph() -> Any:
    g = StateGraph(BookingState)
    for fn in (
        extract_request,
        parse_request,
        lookup_patient,
        load_preferences,
        search_slots,
        choose_slot,
        book_slot,
    ):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "extract_request")
    g.add_edge("extract_request", "parse_request")
    g.add_edge("parse_request", "lookup_patient")
    g.add_edge("lookup_patient", "load_preferences")
    g.add_edge("load_preferences", "search_slots")
    g.add_edge("search_slots", "choose_slot")
    g.add_edge("choose_slot", "book_slot")
    g.add_edge("book_slot", END)
    return g.compile()


APP = _graph()

_MONTHS = {"07": "July", "08": "August"}


def _note(task: dict[str, Any]) -> str:
    y, m, d = task["earliest"].split("-")
    return (
        f"Caller {PATIENTS[task['patient_id']]['name']} ({task['patient_id']}) needs a {task['visit_type']} "
        f"with {task['clinician']}, {task['duration']} minutes, any day from {int(d)} {_MONTHS[m]} {y} onwards."
    )


def policy(conv: Conversation) -> Reply:
    t = conv.task
    if "front-desk note" in conv.system:
        earliest = t["earliest"]
        wrong = conv.fault == "misread_day"
        if wrong:  # "30 July" read as the 3rd
            earliest = earliest[:8] + "0" + earliest[8]
        return say(
            json.dumps(
                {
                    "patient_id": t["patient_id"],
                    "clinician": t["clinician"],
                    "visit_type": t["visit_type"],
                    "earliest_date": earliest,
                    "duration_min": t["duration"],
                }
            ),
            faulty=wrong,
        )
    body = conv.user
    prefs = body.split("Patient preferences: ", 1)[1].split("\n", 1)[0]
    slots = json.loads(body.split("Open slots: ", 1)[1])
    want_video = "video" in prefs
    pick = next((s for s in slots if (s["mode"] == "video") == want_video), slots[0])
    return say(json.dumps({"slot_id": pick["slot_id"]}))


def run(task: dict[str, Any], path: Path) -> Any:
    if task.get("previous_caller"):
        # The desk handled another caller just before: the session cache holds that booking's notes.
        _last_preferences["text"] = PREFERENCES[task["previous_caller"]]
    else:
        _last_preferences.clear()
    return invoke(APP, {"message": _note(task)}, path, run_name="clinic-booking", tags=["front-desk"])


def _t(pid: str, visit: str, earliest: str, prev: str | None = None) -> dict[str, Any]:
    t = {
        "patient_id": pid,
        "clinician": PATIENTS[pid]["referral_to"],
        "visit_type": visit,
        "earliest": earliest,
        "duration": VISIT_MINUTES[visit],
    }
    if prev:
        t["previous_caller"] = prev
    return t


PASSING = [
    _t("P-1042", "medication review", "2025-07-03"),
    _t("P-2231", "new patient assessment", "2025-07-10"),
    _t("P-4410", "medication review", "2025-07-17"),
    _t("P-7150", "wound check", "2025-07-10"),
    _t("P-8802", "post-op review", "2025-07-24", prev="P-7150"),
    _t("P-6093", "medication review", "2025-07-24"),
]

CASES = [
    Case(
        id="clinic-duration-defaulted",
        task=_t("P-1042", "colonoscopy consult", "2025-07-24"),
        fault="duration_key_default",
        fault_kind="lossy_parsing",
        description="parse_request still reads the old 'duration' key; the model wrote 'duration_min', so the "
        "parser silently defaults the visit to 15 minutes. The slot search then offers short slots, the model "
        "picks a 15-minute one and the booking system rejects it for a 45-minute consult.",
        root="parse_request",
        evidence='"duration_min": 15',
        path=["parse_request", "find_slots", "llm", "book_appointment"],
        failure="book_appointment",
    ),
    Case(
        id="clinic-misread-start-day",
        task=_t("P-3307", "post-op review", "2025-07-30"),
        fault="misread_day",
        fault_kind="wrong_tool_arguments",
        description="Extracting the note, the model turns 'from 30 July' into 2025-07-03. The slot search starts "
        "at 3 July, the model books the earliest in-person slot, and the booking system refuses a post-op "
        "review before the patient's 28 July threshold.",
        root="llm",
        evidence="2025-07-03",
        path=["llm", "parse_request", "find_slots", "llm", "book_appointment"],
        failure="book_appointment",
    ),
    Case(
        id="clinic-slots-any-clinician",
        task=_t("P-4410", "physio follow-up", "2025-07-10"),
        fault="slots_any_clinician",
        fault_kind="tool_ignores_argument",
        description="find_slots drops its clinician filter and lists every clinician's openings; the model takes "
        "the earliest in-person slot, which is Dr. Okafor's, and booking fails because the referral is to "
        "Dr. Haddad.",
        root="find_slots",
        evidence="Dr. Okafor",
        path=["find_slots", "llm", "book_appointment"],
        failure="book_appointment",
    ),
    Case(
        id="clinic-previous-caller-notes",
        task=_t("P-7150", "post-op review", "2025-07-17", prev="P-5128"),
        fault="previous_caller_preferences",
        fault_kind="context_pollution",
        description="load_preferences serves the previous caller's cached note ('video visits preferred') instead "
        "of this patient's. The model honours it and picks a video slot, and booking refuses a post-op review "
        "that is not in person.",
        root="load_preferences",
        evidence="video visits preferred",
        path=["load_preferences", "llm", "book_appointment"],
        failure="book_appointment",
    ),
]
