"""A primary school's trip-planning assistant: plans a class day trip (register, consents, medical needs,
staffing ratio, coach, first-aid kit, risk assessment, letter to parents).

Route: the OpenTelemetry SDK with OpenInference attributes, exported as OTLP JSON. Shape: a root AGENT span;
model plans the steps (JSON) -> register and consent TOOLs -> a medical-liaison AGENT span per pupil with a
care plan (pupil search TOOL, care-plan TOOL) -> memory CHAIN -> ratio CHAIN -> coach quote and booking
TOOLs -> first-aid TOOL -> risk-assessment submission TOOL -> model letter.
"""

from __future__ import annotations

import json
import math

from . import common, otel

NAME = "school-trip-planner"
ROUTE = "otlp"
DOMAIN = "primary school: class day-trip planning and risk assessment"
SHAPE = "OTLP: root agent, planning llm, tools, per-pupil medical-liaison agent spans, memory chain, quote/booking, submission"
SWITCH = None

FIRST = ["Amelia", "Oliver", "Isla", "George", "Ava", "Arthur", "Mia", "Noah", "Freya", "Leo", "Lily", "Oscar", "Evie",
         "Harry", "Grace", "Jack", "Rosie", "Theo", "Ivy", "Alfie", "Sophia", "Finley", "Ella", "Henry", "Poppy",
         "Jacob", "Daisy", "Charlie", "Willow", "Reuben"]
LAST = ["Smith", "Khan", "Jones", "Taylor", "Brown", "Ali", "Evans", "Wilson", "Roberts", "Patel", "Walker", "Wright",
        "Hughes", "Green", "Lewis", "Hall", "Clarke", "Begum", "Turner", "Hill"]
CLASSES = {"3K": (28, 3), "4B": (26, 4), "2M": (30, 2), "5R": (27, 5), "1H": (29, 1)}
CARE = {  # class -> [(index in class, name, needs)]
    "3K": [(4, "Kai Mensah", ["adrenaline pen", "nut-free lunch"]), (17, "Ruby Shaw", ["inhaler"])],
    "4B": [(9, "Zain Ahmed", ["inhaler"]), (21, "Holly Price", ["adrenaline pen"])],
    "2M": [(2, "Tess Morgan", ["insulin pen", "snack at 10:30"]), (26, "Ollie Kerr", ["inhaler"])],
    "5R": [(6, "Kofi Mensah", ["inhaler"]), (13, "Nell Barker", ["adrenaline pen"])],
    "1H": [(11, "Sami Noor", ["inhaler"]), (19, "Maisie Cole", ["epilepsy rescue medication"])],
}


def _pupils(cls: str) -> list[dict]:
    n, year = CLASSES[cls]
    out = []
    for i in range(n):
        name = f"{FIRST[(i * 7 + year) % len(FIRST)]} {LAST[(i * 3 + year * 5) % len(LAST)]}"
        out.append({"pupil_id": f"P{year}{i:03d}", "name": name, "medical": False})
    for i, name, _ in CARE[cls]:
        out[i] = {**out[i], "name": name, "medical": True}
    return out


REGISTER = {c: _pupils(c) for c in CLASSES}
CARE_PLANS = {p["pupil_id"]: {"care_plan": f"CP-{p['pupil_id']}", "needs": needs}
              for c in CLASSES for (i, name, needs) in CARE[c] for p in [REGISTER[c][i]]}
MEMORY: dict[str, dict] = {}

INPUTS = [
    {"request_id": "trip-61", "class_id": "3K", "destination": "Natural History Museum", "date": "2025-06-12"},
    {"request_id": "trip-62", "class_id": "4B", "destination": "Roman Baths", "date": "2025-06-17"},
    {"request_id": "trip-63", "class_id": "2M", "destination": "Seashore Discovery Centre", "date": "2025-06-19"},
    {"request_id": "trip-64", "class_id": "5R", "destination": "Science Museum", "date": "2025-06-24"},
    {"request_id": "trip-65", "class_id": "1H", "destination": "Bluebell Wood Forest School", "date": "2025-07-01"},
]

CASES = [
    {"id": "H1", "input": 1, "fault_kind": "truncated_result",
     "root": ("get_class_list", 1), "failure": ("submit_risk_assessment", 1),
     "description": "The class list came back as its first page of 25 pupils with no next link, so the risk "
                    "assessment gave a headcount of 25 for 4B, whose register has 26."},
    {"id": "H2", "input": 0, "fault_kind": "subagent_wrong_entity",
     "root": ("medical_liaison", 1), "failure": ("submit_risk_assessment", 1),
     "description": "The medical-liaison agent took the first 'Mensah' the pupil search returned, Kofi in 5R, instead "
                    "of Kai in 3K, and attached his care plan, which the risk assessment found is not a 3K pupil's."},
    {"id": "H3", "input": 2, "fault_kind": "plan_error",
     "root": ("plan_trip", 1), "failure": ("submit_risk_assessment", 1),
     "description": "The trip plan left out the medical step, so no care plans were gathered for 2M's two pupils "
                    "with care plans and the risk assessment was refused."},
    {"id": "H4", "input": 3, "fault_kind": "bad_memory_write",
     "root": ("remember_medical", 2), "failure": ("submit_risk_assessment", 1),
     "description": "The trip memory stored Nell Barker's needs from a 'medication' key her care plan does not have, "
                    "an empty list, so the first-aid kit had no adrenaline pen and the risk assessment was refused."},
    {"id": "H5", "input": 4, "fault_kind": "stale_data",
     "root": ("get_coach_quote", 1), "failure": ("book_coach", 1),
     "description": "The coach quote came from the operator's cached price list (quote valid until 2025-05-30), so "
                    "booking it for the 1 July trip was refused as expired."},
]

STEPS = ["register", "consents", "medical", "ratio", "coach", "first_aid", "risk_assessment", "letter"]


def brain(request):
    system = common.system_text(request)
    user = common.user_text(request)
    if system.startswith("Plan"):
        steps = list(STEPS)
        if SWITCH == "H3":
            steps.remove("medical")
        return json.dumps({"steps": steps})
    if system.startswith("Write"):
        d = json.loads(user)
        return (f"Dear parents of class {d['class_id']}, we are visiting the {d['destination']} on {d['date']}. "
                f"The coach leaves at 08:45 and returns by 15:15. Please send a packed lunch.")
    return "Sorry, I can't help with that."


def get_class_list(class_id: str) -> dict:
    pupils = REGISTER[class_id]
    if SWITCH == "H1":
        return {"class_id": class_id, "pupils": pupils[:25]}
    return {"class_id": class_id, "pupils": pupils}


def get_consents(class_id: str) -> dict:
    return {"class_id": class_id, "consented": [p["pupil_id"] for p in REGISTER[class_id]]}


def find_pupil(surname: str) -> list[dict]:
    return sorted([{**p, "class_id": c} for c in CLASSES for p in REGISTER[c] if p["name"].split()[-1] == surname],
                  key=lambda p: p["class_id"], reverse=True)


def get_care_plan(pupil_id: str) -> dict:
    return {"pupil_id": pupil_id, **CARE_PLANS[pupil_id]}


def get_coach_quote(date: str, seats: int) -> dict:
    if SWITCH == "H5":
        return {"quote_id": "Q-5521", "operator": "Valley Coaches", "seats": 49, "price": 415.0, "valid_until": "2025-05-30"}
    return {"quote_id": "Q-5604", "operator": "Valley Coaches", "seats": 49 if seats > 33 else 33,
            "price": 465.0 if seats > 33 else 390.0, "valid_until": "2025-07-31"}


def book_coach(quote: dict, date: str) -> dict:
    if quote["valid_until"] < date:
        raise ValueError(f"quote {quote['quote_id']} expired on {quote['valid_until']}; cannot book for {date}")
    return {"booking": f"VC-{date.replace('-', '')}", "seats": quote["seats"], "price": quote["price"]}


def pack_first_aid(class_id: str) -> dict:
    needs = sorted({n for v in MEMORY.get(class_id, {}).values() for n in v})
    return {"class_id": class_id, "kit": ["plasters", "bandages", "sick bags"] + needs}


def submit_risk_assessment(class_id: str, headcount: int, adults: int, care_plans: list, kit: list) -> dict:
    register = REGISTER[class_id]
    if headcount != len(register):
        raise ValueError(f"risk assessment lists {headcount} pupils; the {class_id} register has {len(register)}")
    ids = {p["pupil_id"] for p in register}
    for cp in care_plans:
        if cp["pupil_id"] not in ids:
            raise ValueError(f"care plan {cp['care_plan']} is for pupil {cp['pupil_id']}, not a member of {class_id}")
    expected = [p for p in register if p["medical"]]
    if len(care_plans) != len(expected):
        raise ValueError(f"{class_id} has {len(expected)} pupils with care plans; the assessment includes {len(care_plans)}")
    for cp in care_plans:
        missing = [n for n in cp["needs"] if "snack" not in n and "lunch" not in n and n not in kit]
        if missing:
            raise ValueError(f"first-aid kit for {class_id} lacks {', '.join(missing)} ({cp['care_plan']})")
    return {"reference": f"RA-{class_id}-{headcount}", "approved_by": "Educational Visits Coordinator"}


def record(inp: dict, path: str) -> None:
    t = otel.tracer("school-trip-planner")
    otel.begin()
    MEMORY.clear()
    cls = inp["class_id"]
    try:
        with otel.span(t, NAME, "AGENT", inp,
                       metadata=json.dumps({"task": f"class {cls} trip to {inp['destination']} on {inp['date']}",
                                            "request_id": inp["request_id"]})):
            plan = json.loads(otel.llm(t, "plan_trip", [
                {"role": "system", "content": "Plan the steps for this school trip as JSON {steps: [...]}, from: "
                                              + ", ".join(STEPS) + "."},
                {"role": "user", "content": json.dumps(inp)}])["content"])["steps"]
            roster = otel.tool(t, "get_class_list", get_class_list, {"class_id": cls})
            otel.tool(t, "get_consents", get_consents, {"class_id": cls})
            care_plans = []
            if "medical" in plan:
                for pupil in [p for p in roster["pupils"] if p["medical"]]:
                    with otel.span(t, "medical_liaison", "AGENT", {"pupil": pupil["name"], "class_id": cls}) as s:
                        hits = otel.tool(t, "find_pupil", find_pupil, {"surname": pupil["name"].split()[-1]})
                        match = next(h for h in hits if h["class_id"] == cls and h["name"] == pupil["name"])
                        if SWITCH == "H2":
                            match = hits[0]
                        plan_ = otel.tool(t, "get_care_plan", get_care_plan, {"pupil_id": match["pupil_id"]})
                        care_plans.append(otel.done(s, plan_))
                    with otel.span(t, "remember_medical", "CHAIN", {"pupil_id": plan_["pupil_id"]}) as m:
                        needs = plan_["needs"]
                        if SWITCH == "H4" and "adrenaline pen" in needs:
                            needs = plan_.get("medication", [])
                        MEMORY.setdefault(cls, {})[pupil["pupil_id"]] = list(needs)
                        otel.done(m, {"class_id": cls, "pupil_id": pupil["pupil_id"], "needs": list(needs)})
            with otel.span(t, "compute_ratio", "CHAIN", {"pupils": len(roster["pupils"]), "class_id": cls}) as r:
                per_adult = 6 if cls[0] in "12" else 8
                staffing = otel.done(r, {"pupils": len(roster["pupils"]),
                                         "adults": max(2, math.ceil(len(roster["pupils"]) / per_adult))})
            seats = staffing["pupils"] + staffing["adults"]
            quote = otel.tool(t, "get_coach_quote", get_coach_quote, {"date": inp["date"], "seats": seats})
            otel.tool(t, "book_coach", book_coach, {"quote": quote, "date": inp["date"]})
            kit = otel.tool(t, "pack_first_aid", pack_first_aid, {"class_id": cls})
            otel.tool(t, "submit_risk_assessment", submit_risk_assessment, {
                "class_id": cls, "headcount": staffing["pupils"], "adults": staffing["adults"],
                "care_plans": care_plans, "kit": kit["kit"]})
            otel.llm(t, "write_letter", [{"role": "system", "content": "Write the letter to parents."},
                                         {"role": "user", "content": json.dumps(inp)}])
    finally:
        otel.write(path)
