"""A physiotherapy clinic's treatment plans (otlp route): referral -> pathway -> protocol -> exercise planner
sub-agent -> memory -> insurer and billing route -> schedule -> letter -> validator."""

from __future__ import annotations

import datetime as dt
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kit  # noqa: E402
from openai import OpenAI  # noqa: E402

AGENT = "physio-plans"
ROUTE = "otlp"
DOMAIN = "physiotherapy clinic's treatment plans"
SHAPE = "OpenTelemetry spans (OpenInference): patient record, referral reading (LLM) and parse, pathway router, protocol retrieval, exercise planner sub-agent (dose LLM, parse, load calculator per exercise), plan memory write/read, insurer cover, billing router and tool, scheduler, letter (LLM) and parse, validator"

PATIENTS = {
    "PT-3301": {"name": "L. Haddad", "age": 34, "weight_kg": 72, "insurer": "Avia Health", "surgery": "ACL reconstruction", "surgery_date": "2026-09-14"},
    "PT-3302": {"name": "M. Fischer", "age": 58, "weight_kg": 81, "insurer": "Northgate", "surgery": None, "surgery_date": None},
    "PT-3303": {"name": "S. Oyelaran", "age": 46, "weight_kg": 64, "insurer": "Avia Health", "surgery": "rotator cuff repair", "surgery_date": "2026-08-30"},
    "PT-3304": {"name": "T. Brennan", "age": 29, "weight_kg": 88, "insurer": None, "surgery": None, "surgery_date": None},
    "PT-3305": {"name": "A. Lindahl", "age": 63, "weight_kg": 70, "insurer": "Northgate", "surgery": "total knee replacement", "surgery_date": "2026-09-02"},
    "PT-3306": {"name": "R. Castillo", "age": 41, "weight_kg": 77, "insurer": "Avia Health", "surgery": None, "surgery_date": None},
    "PT-3307": {"name": "J. Whitfield", "age": 52, "weight_kg": 92, "insurer": None, "surgery": "ankle ORIF", "surgery_date": "2026-08-21"},
    "PT-3308": {"name": "K. Nakamura", "age": 37, "weight_kg": 59, "insurer": "Northgate", "surgery": None, "surgery_date": None},
    "PT-3309": {"name": "E. Moreno", "age": 66, "weight_kg": 74, "insurer": "Avia Health", "surgery": "hip replacement", "surgery_date": "2026-09-08"},
}
REGION = {"PT-3301": ("left", "knee"), "PT-3302": ("right", "shoulder"), "PT-3303": ("right", "shoulder"),
          "PT-3304": ("lower", "back"), "PT-3305": ("right", "knee"), "PT-3306": ("left", "knee"),
          "PT-3307": ("left", "ankle"), "PT-3308": ("neck", "neck"), "PT-3309": ("left", "hip")}
PROTOCOLS = {
    "post_surgical": {"sessions": 12, "weeks": 6, "exercises": [("quad sets", 0.0), ("mini squats", 0.10), ("step-ups", 0.20), ("leg press", 0.30)]},
    "msk_standard": {"sessions": 6, "weeks": 6, "exercises": [("band rows", 0.05), ("wall slides", 0.0), ("bridges", 0.10), ("farmer carry", 0.25)]},
}
COVER = {"Avia Health": {"covered_sessions": 8, "rate": 52.0}, "Northgate": {"covered_sessions": 6, "rate": 48.0}}
SELF_PAY_RATE = 60.0
START = "2026-10-05"


def _referral(pid):
    p, (side, region) = PATIENTS[pid], REGION[pid]
    if p["surgery"]:
        text = f"{p['name']}, {p['age']}: {side} {region} rehab after {p['surgery']} on {p['surgery_date']}. Please start post-op physiotherapy."
    else:
        text = f"{p['name']}, {p['age']}: {side} {region} pain for 3 months, no surgery. Please assess and treat."
    return {"patient": pid, "text": text}


INPUTS = {f"physio_0{i}": _referral(f"PT-330{i}") for i in range(1, 6)}
REFS = [_referral(p) for p in ("PT-3306", "PT-3307", "PT-3308", "PT-3309")]
CASES = [
    {"case": "physio_01", "kind": "unit_error", "root": {"name": "load_calculator", "occurrence": 4},
     "failure": {"name": "validate_plan"},
     "description": "The load calculator returns the leg press load in pounds (47.6) under a kg label, above 30% of the patient's 72 kg."},
    {"case": "physio_02", "kind": "wrong_routing", "root": {"name": "route_billing"}, "failure": {"name": "validate_plan"},
     "description": "The billing router sends a Northgate-insured patient with 6 covered sessions down the self-pay path."},
    {"case": "physio_03", "kind": "bad_memory_write", "root": {"name": "save_plan_memory"}, "failure": {"name": "validate_plan"},
     "description": "The plan memory is written with the protocol's 6 weeks as its session count, and the scheduler books 6 of the 12 post-operative sessions."},
    {"case": "physio_04", "kind": "off_by_one", "root": {"name": "schedule_sessions"}, "failure": {"name": "validate_plan"},
     "description": "The scheduler counts sessions from 1 with an exclusive end and books 5 of the 6 sessions."},
    {"case": "physio_05", "kind": "hallucinated_value", "root": {"name": "draft_plan_letter"}, "failure": {"name": "validate_plan"},
     "description": "The plan letter tells the patient 10 sessions are covered by Northgate, which covers 6."},
]

MEMORY: dict = {}


def brain(inp):
    def read(req):
        text = kit.last_user(req)
        m = re.search(r"after (.+?) on (\d{4}-\d\d-\d\d)", text)
        side, region = re.search(r": (\w+) (\w+) ", text).groups()
        return json.dumps({"side": side, "region": region, "surgery": m.group(1) if m else None,
                           "surgery_date": m.group(2) if m else None})

    def dose(req):
        p = kit.json_in(kit.last_user(req))
        pct = int(round(p["max_pct"] * 100))
        return f"{p['exercise']}: 3 x 12 at {pct}% body weight" if pct else f"{p['exercise']}: 3 x 15, body weight only"

    def letter(req):
        p = kit.json_in(kit.last_user(req))
        covered = p["covered"] + 4 if kit.on("physio_05") else p["covered"]
        return (f"Dear {p['name']},\nYour plan has {p['sessions']} sessions, the first on {p['first']}.\n"
                f"Sessions covered by your insurer: {covered}.\nKind regards, the clinic")

    return kit.Brain({"read_referral": read, "dose": dose, "letter": letter})


def record(inp: dict, server, path: Path) -> None:
    server.use(brain(inp))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    ot = kit.Otel(AGENT)
    MEMORY.clear()
    try:
        with ot.span(AGENT, "AGENT", inp["text"], **{"agent.name": AGENT, "session.id": f"ref-{inp['patient']}"}) as top:
            top.output = _run(ot, client, server.model, inp)
    except ValueError:
        pass  # the validator's rejection ends the trace with an error status; it is exported
    ot.write(path)


def _run(ot, client, model, inp):
    pid = inp["patient"]
    with ot.span("intake", "CHAIN", inp) as s:
        s.output = {"patient": pid, "received": START}
    with ot.span("fetch_patient_record", "TOOL", {"patient": pid}) as s:
        patient = dict(PATIENTS[pid])
        s.output = patient
    answer = ot.llm(client, model, "read_referral", "read_referral",
                    "Read the referral: JSON with side, region, surgery and surgery_date (null when none).", inp["text"])
    with ot.span("parse_referral", "CHAIN", answer) as s:
        ref = json.loads(answer)
        s.output = ref
    with ot.span("route_pathway", "CHAIN", ref) as s:
        weeks = None
        if ref["surgery_date"]:
            weeks = (dt.date.fromisoformat(START) - dt.date.fromisoformat(ref["surgery_date"])).days // 7
        pathway = "post_surgical" if weeks is not None and weeks <= 26 else "msk_standard"
        s.output = {"pathway": pathway, "weeks_since_surgery": weeks}
    with ot.span("fetch_protocol", "RETRIEVER", {"pathway": pathway, "region": ref["region"]}) as s:
        proto = PROTOCOLS[pathway]
        protocol = {"pathway": pathway, "sessions": proto["sessions"], "weeks": proto["weeks"],
                    "exercises": [{"exercise": e, "max_pct": pct} for e, pct in proto["exercises"]]}
        s.output = protocol
    with ot.span("exercise_planner", "AGENT", {"exercises": protocol["exercises"]}, **{"agent.name": "exercise_planner"}) as planner:
        doses = []
        for k, ex in enumerate(protocol["exercises"]):
            text = ot.llm(client, model, "dose_exercise", "dose",
                          "Dose the exercise for this patient: 'NAME: sets x reps at P% body weight'.",
                          json.dumps({**ex, "age": patient["age"]}))
            with ot.span("parse_dose", "CHAIN", text) as s:
                m = re.search(r": (\d+) x (\d+)(?: at (\d+)% body weight)?", text)
                d = {"exercise": ex["exercise"], "sets": int(m.group(1)), "reps": int(m.group(2)),
                     "pct": int(m.group(3)) / 100 if m.group(3) else 0.0}
                s.output = d
            with ot.span("load_calculator", "TOOL", {"exercise": d["exercise"], "body_weight_kg": patient["weight_kg"], "pct": d["pct"]}) as s:
                load = round(patient["weight_kg"] * d["pct"], 1)
                if kit.on("physio_01") and k == 3:
                    load = round(load * 2.2046, 1)
                s.output = {"exercise": d["exercise"], "load": load, "unit": "kg"}
                doses.append({**d, "load_kg": s.output["load"]})
        planner.output = {"doses": doses}
    with ot.span("save_plan_memory", "TOOL", {"patient": pid, "pathway": pathway}) as s:
        sessions = protocol["weeks"] if kit.on("physio_03") else protocol["sessions"]
        MEMORY[pid] = {"pathway": pathway, "sessions": sessions, "doses": doses}
        s.output = {"saved": pid, **MEMORY[pid]}
    with ot.span("insurer_cover", "TOOL", {"patient": pid, "insurer": patient["insurer"]}) as s:
        cover = {"insurer": patient["insurer"], "status": "active" if patient["insurer"] else "none",
                 **(COVER.get(patient["insurer"]) or {"covered_sessions": 0, "rate": 0.0})}
        s.output = cover
    with ot.span("route_billing", "CHAIN", cover) as s:
        insured = cover["status"] == "active" and cover["covered_sessions"] > 0
        if kit.on("physio_02"):
            insured = insured and cover["insurer"] == "Avia Health"
        s.output = {"route": "insurer_preauth" if insured else "self_pay"}
        route = s.output["route"]
    if route == "insurer_preauth":
        with ot.span("insurer_preauth", "TOOL", {"insurer": cover["insurer"], "sessions": protocol["sessions"]}) as s:
            n = min(cover["covered_sessions"], protocol["sessions"])
            s.output = {"route": route, "covered": n, "rate": cover["rate"], "auth": f"PA-{pid[3:]}-{n:02d}"}
            billing = s.output
    else:
        with ot.span("self_pay_quote", "TOOL", {"sessions": protocol["sessions"]}) as s:
            s.output = {"route": route, "covered": 0, "rate": SELF_PAY_RATE, "quote": protocol["sessions"] * SELF_PAY_RATE}
            billing = s.output
    with ot.span("load_plan_memory", "TOOL", {"patient": pid}) as s:
        plan = dict(MEMORY[pid])
        s.output = plan
    with ot.span("schedule_sessions", "TOOL", {"start": START, "sessions": plan["sessions"], "weeks": protocol["weeks"]}) as s:
        n = plan["sessions"]
        every = max(1, (protocol["weeks"] * 7) // n)
        idx = range(1, n) if kit.on("physio_04") else range(n)
        dates = [(dt.date.fromisoformat(START) + dt.timedelta(days=i * every)).isoformat() for i in idx]
        s.output = {"dates": dates}
    text = ot.llm(client, model, "draft_plan_letter", "letter", "Write the patient's plan letter.",
                  json.dumps({"name": patient["name"], "sessions": len(dates), "first": dates[0], "covered": billing["covered"]}))
    with ot.span("parse_letter", "CHAIN", text) as s:
        s.output = {"sessions": int(re.search(r"has (\d+) sessions", text).group(1)),
                    "first": re.search(r"first on (\S+)\.", text).group(1),
                    "covered": int(re.search(r"insurer: (\d+)", text).group(1))}
        letter = s.output
    with ot.span("validate_plan", "CHAIN", {"patient": pid, "pathway": pathway, "billing": billing, "letter": letter}) as s:
        s.output = _validate(pid, patient, protocol, doses, cover, billing, dates, letter)
    return s.output


def _validate(pid, patient, protocol, doses, cover, billing, dates, letter):
    for d in doses:
        if d["load_kg"] > d["pct"] * patient["weight_kg"] + 0.05 or d["pct"] > 0.30:
            raise ValueError(f"{pid}: {d['exercise']} load {d['load_kg']} kg is above {int(d['pct'] * 100)}% of {patient['weight_kg']} kg body weight")
    if len(dates) != protocol["sessions"]:
        raise ValueError(f"{pid}: schedule has {len(dates)} sessions, {protocol['pathway']} protocol needs {protocol['sessions']}")
    if cover["status"] == "active" and cover["covered_sessions"] > 0 and billing["route"] != "insurer_preauth":
        raise ValueError(f"{pid}: insured with {cover['insurer']} ({cover['covered_sessions']} sessions covered) but billed as {billing['route']}")
    if letter["sessions"] != len(dates) or letter["first"] != dates[0] or letter["covered"] != billing["covered"]:
        raise ValueError(f"{pid}: letter states {letter['sessions']} sessions from {letter['first']}, {letter['covered']} covered; "
                         f"plan has {len(dates)} from {dates[0]}, {billing['covered']} covered")
    return {"patient": pid, "status": "plan ready", "sessions": len(dates)}
