"""Chiropody practice: books a clinic session's appointments (sdk route)."""
from __future__ import annotations

import json

import kit
import trajdebug
from common import block, client, last_user, parse_block

NAME = "chiropody-appointments"
ROUTE = "sdk"
DOMAIN = "a chiropody practice's appointments"
SHAPE = "input; per patient: fetch_patient, assess_patient sub-agent (search_notes, triage llm, parse_triage), quote_treatment, save_booking; allocate_slots; confirm llm; validate_session"

REGISTRY = {
    "P-101": {"name": "Ada Moss", "diabetic": False, "consent_surgery": False},
    "P-102": {"name": "Ben Hale", "diabetic": True, "consent_surgery": False},
    "P-103": {"name": "Cara Lund", "diabetic": False, "consent_surgery": True},
    "P-104": {"name": "Dev Rao", "diabetic": False, "consent_surgery": False},
    "P-140": {"name": "Della Rao", "diabetic": False, "consent_surgery": True},
    "P-105": {"name": "Eve Shaw", "diabetic": True, "consent_surgery": False},
    "P-106": {"name": "Finn Roe", "diabetic": False, "consent_surgery": False},
    "P-107": {"name": "Gail Pike", "diabetic": False, "consent_surgery": True},
}
CACHED = {"P-102": {"name": "Ben Hale", "diabetic": False, "consent_surgery": False, "as_of": "2025-01-14"}}
NOTES = {
    "P-101": "Thickened nails both halluces. Plan: routine_care.",
    "P-102": "Dry skin, reduced sensation left foot. Plan: routine_care.",
    "P-103": "Ingrowing nail right hallux, recurrent. Plan: nail_surgery.",
    "P-104": "Heel pain on walking. Plan: biomechanics.",
    "P-140": "Ingrowing nail left hallux. Plan: nail_surgery.",
    "P-105": "Callus under 2nd metatarsal head. Plan: routine_care.",
    "P-106": "Verruca right sole. Plan: verruca_care.",
    "P-107": "Ingrowing nail left hallux. Plan: nail_surgery.",
}
TARIFF = {"routine_care": (30, 42.0), "diabetic_review": (45, 58.0), "nail_surgery": (60, 180.0),
          "biomechanics": (45, 75.0), "verruca_care": (30, 48.0)}

CASES = [
    {"id": "zzn_chiro_01", "kind": "wrong_retrieval", "input": {"day": "2026-03-10", "patients": ["P-104", "P-101", "P-106"]},
     "root": ("search_notes", 1), "failure": ("validate_session", 1),
     "desc": "The notes search for P-104 returns the notes of P-140 (Della Rao), so Dev Rao is triaged for nail surgery he has no consent for."},
    {"id": "zzn_chiro_02", "kind": "unit_error", "input": {"day": "2026-03-11", "patients": ["P-101", "P-104", "P-106"]},
     "root": ("quote_treatment", 3), "failure": ("validate_session", 1),
     "desc": "The tariff lookup for the third patient returns the verruca price in pence (4800) as pounds."},
    {"id": "zzn_chiro_03", "kind": "stale_data", "input": {"day": "2026-03-12", "patients": ["P-101", "P-103", "P-102"]},
     "root": ("fetch_patient", 3), "failure": ("validate_session", 1),
     "desc": "fetch_patient serves a cached January 2025 record of P-102 that predates the diabetes diagnosis, so he is booked for routine care."},
    {"id": "zzn_chiro_04", "kind": "bad_memory_write", "input": {"day": "2026-03-13", "patients": ["P-103", "P-104", "P-101"]},
     "root": ("save_booking", 2), "failure": ("validate_session", 1),
     "desc": "save_booking for P-104 keeps the minutes of the previous booking (60, nail surgery) instead of 45 for biomechanics."},
    {"id": "zzn_chiro_05", "kind": "off_by_one", "input": {"day": "2026-03-16", "patients": ["P-106", "P-105", "P-107"]},
     "root": ("allocate_slots", 1), "failure": ("validate_session", 1),
     "desc": "allocate_slots advances the clock by one 15-minute slot too few per appointment, so consecutive appointments overlap."},
]
REFS = [{"day": "2026-03-02", "patients": ["P-103", "P-105", "P-106"]},
        {"day": "2026-03-03", "patients": ["P-107", "P-101", "P-104"]},
        {"day": "2026-03-04", "patients": ["P-102", "P-106", "P-101"]},
        {"day": "2026-03-05", "patients": ["P-105", "P-104", "P-103"]}]


def brain(request):
    title, p = parse_block(last_user(request))
    if title == "TRIAGE":
        plan = p["notes"]["text"].split("Plan: ")[1].rstrip(".")
        if p["record"]["diabetic"] and plan == "routine_care":
            plan = "diabetic_review"
        return json.dumps({"treatment": plan, "urgency": "routine", "patient": p["record"]["id"]})
    if title == "CONFIRM":
        lines = [f"{b['patient']} {b['start']} {b['treatment']}" for b in p["bookings"]]
        return "Session confirmed: " + "; ".join(lines)
    raise ValueError(title)


@trajdebug.step(kind="input")
def read_request(req: dict) -> dict:
    return dict(req)


@trajdebug.step(kind="tool")
def fetch_patient(patient_id: str) -> dict:
    if patient_id in CACHED and kit.on("zzn_chiro_03"):
        rec = dict(CACHED[patient_id])
    else:
        rec = dict(REGISTRY[patient_id], as_of="2026-03-01")
    return {"id": patient_id, **rec}


@trajdebug.step(kind="retrieval")
def search_notes(patient_id: str, name: str) -> dict:
    key = patient_id
    if patient_id == "P-104" and kit.on("zzn_chiro_01"):
        key = "P-140"  # nearest match on surname and id digits
    return {"query": f"{name} {patient_id}", "text": NOTES[key], "score": 0.91}


@trajdebug.step(kind="llm")
def triage(messages: list) -> str:
    r = triage.cli.chat.completions.create(model="fake-model", messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="parse")
def parse_triage(text: str) -> dict:
    d = json.loads(text)
    return {"treatment": d["treatment"], "urgency": d["urgency"]}


@trajdebug.step(kind="agent")
def assess_patient(record: dict) -> dict:
    notes = search_notes(record["id"], record["name"])
    text = triage([{"role": "system", "content": "You triage chiropody patients."},
                   {"role": "user", "content": block("TRIAGE", record=record, notes=notes)}])
    return parse_triage(text)


@trajdebug.step(kind="tool")
def quote_treatment(treatment: str, position: int) -> dict:
    minutes, gbp = TARIFF[treatment]
    if position == 3 and kit.on("zzn_chiro_02"):
        gbp = gbp * 100
    return {"treatment": treatment, "minutes": minutes, "price_gbp": gbp}


@trajdebug.step(kind="state")
def save_booking(patient_id: str, plan: dict, quote: dict) -> dict:
    state = trajdebug.current_run().state
    minutes = quote["minutes"]
    if kit.on("zzn_chiro_04") and state.get("last_minutes"):
        minutes = state["last_minutes"]
    booking = {"patient": patient_id, "treatment": plan["treatment"], "minutes": minutes,
               "price_gbp": quote["price_gbp"]}
    state[f"booking:{patient_id}"] = booking
    state["last_minutes"] = minutes
    return booking


@trajdebug.step(kind="other")
def allocate_slots(patients: list) -> list:
    state = trajdebug.current_run().state
    cursor = 9 * 60
    out = []
    for pid in patients:
        b = dict(state[f"booking:{pid}"])
        b["start"] = f"{cursor // 60:02d}:{cursor % 60:02d}"
        out.append(b)
        slots = -(-b["minutes"] // 15)
        if kit.on("zzn_chiro_05"):
            slots -= 1
        cursor += slots * 15
    return out


@trajdebug.step(kind="llm")
def confirm(messages: list) -> str:
    r = confirm.cli.chat.completions.create(model="fake-model", messages=messages)
    return r.choices[0].message.content


@trajdebug.step(kind="condition")
def validate_session(req: dict, bookings: list) -> dict:
    seen = [b["patient"] for b in bookings]
    if sorted(seen) != sorted(req["patients"]):
        raise ValueError(f"session books {seen}, the request asked for {req['patients']}")
    prev_end = None
    for b in bookings:
        reg = REGISTRY[b["patient"]]
        minutes, gbp = TARIFF[b["treatment"]]
        if b["minutes"] != minutes:
            raise ValueError(f"{b['patient']} booked {b['treatment']} for {b['minutes']} min; the tariff says {minutes}")
        if abs(b["price_gbp"] - gbp) > 0.005:
            raise ValueError(f"{b['patient']} {b['treatment']} priced {b['price_gbp']:.2f} GBP; the tariff says {gbp:.2f}")
        if b["treatment"] == "nail_surgery" and not reg["consent_surgery"]:
            raise ValueError(f"{b['patient']} ({reg['name']}) booked for nail_surgery with no consent form on file")
        if reg["diabetic"] and b["treatment"] == "routine_care":
            raise ValueError(f"{b['patient']} ({reg['name']}) is diabetic but booked routine_care, not diabetic_review")
        h, m = map(int, b["start"].split(":"))
        start = h * 60 + m
        if prev_end is not None and start < prev_end:
            raise ValueError(f"{b['patient']} starts {b['start']}, before the previous appointment ends ({prev_end // 60:02d}:{prev_end % 60:02d})")
        prev_end = start + b["minutes"]
    return {"ok": True, "appointments": len(bookings)}


def record(inp, path, server):
    server.use(brain)
    triage.cli = confirm.cli = client(server)
    with trajdebug.run(NAME, path=str(path), task=f"book the chiropody session of {inp['day']}"):
        req = read_request(inp)
        for i, pid in enumerate(req["patients"], 1):
            rec = fetch_patient(pid)
            plan = assess_patient(rec)
            quote = quote_treatment(plan["treatment"], i)
            save_booking(pid, plan, quote)
        bookings = allocate_slots(req["patients"])
        confirm([{"role": "user", "content": block("CONFIRM", bookings=bookings)}])
        validate_session(req, bookings)
