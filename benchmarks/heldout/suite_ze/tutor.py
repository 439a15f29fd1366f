"""Tutoring agency matcher (recording SDK): reads a family's brief, searches tutors, vets them, books a match."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug

from .common import Case, chat, role_and_payload
from .kit import active

NAME = "tutor-matcher"
ROUTE = "sdk"
DOMAIN = "tutoring agency matching"
SHAPE = "brief llm -> parse -> student file -> tutor search -> availability loop (retry) -> vetting sub-agent -> plan llm -> rate card -> create match"

BRIEFS = {
    "maya": {"student": "S-301", "text": "Maya (S-301) needs A-level maths, 2 sessions a week, Mon or Thu after 17:00, max 90 GBP a week."},
    "leo": {"student": "S-118", "text": "Leo (S-118), GCSE chemistry, 1 session a week, Tue after 16:00, budget 50 GBP a week."},
    "ines": {"student": "S-402", "text": "Ines (S-402): GCSE maths, 1 session a week, Wed after 16:00, budget 40 GBP a week."},
    "tom": {"student": "S-077", "text": "Tom (S-077) A-level physics twice a week, Mon or Thu after 17:00, 100 GBP a week max."},
    "ada": {"student": "S-219", "text": "Ada (S-219) GCSE physics, 1 session a week, Tue after 16:00, 50 GBP a week."},
    "kai": {"student": "S-350", "text": "Kai (S-350), A-level chemistry, 1 session a week, Wed after 16:00, max 50 GBP."},
}
STUDENTS = {
    "S-301": {"days": ["Mon", "Thu"], "after": "17:00", "notes": "prefers worked examples"},
    "S-118": {"days": ["Tue"], "after": "16:00", "notes": "exam in May"},
    "S-402": {"days": ["Wed"], "after": "16:00", "notes": ""},
    "S-077": {"days": ["Mon", "Thu"], "after": "17:00", "notes": "mechanics focus"},
    "S-219": {"days": ["Tue"], "after": "16:00", "notes": ""},
    "S-350": {"days": ["Wed"], "after": "16:00", "notes": "organic chemistry"},
    "S-990": {"days": ["Wed"], "after": "15:00", "notes": "previous enquiry, closed"},
}
TUTORS = [
    {"id": "T-11", "subject": "maths", "levels": ["GCSE"], "rate": 30.0},
    {"id": "T-12", "subject": "maths", "levels": ["GCSE", "A-level"], "rate": 42.0},
    {"id": "T-13", "subject": "maths", "levels": ["A-level"], "rate": 44.0},
    {"id": "T-21", "subject": "chemistry", "levels": ["GCSE"], "rate": 38.0},
    {"id": "T-22", "subject": "chemistry", "levels": ["GCSE", "A-level"], "rate": 46.0},
    {"id": "T-31", "subject": "physics", "levels": ["GCSE", "A-level"], "rate": 40.0},
    {"id": "T-32", "subject": "physics", "levels": ["A-level"], "rate": 48.0},
]
OLD_RATES = {"T-11": 28.0, "T-12": 38.0, "T-13": 40.0, "T-21": 34.0, "T-22": 42.0, "T-31": 36.0, "T-32": 44.0}
FREE = {"T-11": ["Wed 16:00", "Mon 17:00"], "T-12": ["Mon 17:30", "Thu 18:00"], "T-13": ["Thu 17:00"], "T-21": ["Tue 16:30"],
        "T-22": ["Tue 17:00", "Wed 16:00"], "T-31": ["Tue 16:00", "Mon 17:00", "Thu 17:00"], "T-32": ["Mon 18:00"]}

CASES = [
    Case("ze_tutor_1", "tutor_level", "wrong_retrieval", "maya", ("search_tutors", 1), ("create_match", 1),
         "The tutor search answers from the GCSE index for an A-level brief, so the chosen tutor is not certified for the level."),
    Case("ze_tutor_2", "tutor_rates", "stale_data", "leo", ("get_rate_card", 1), ("create_match", 1),
         "The rate card comes from last year's cached sheet, and the match API rejects the quoted hourly rate."),
    Case("ze_tutor_3", "tutor_swallow", "swallowed_error", "leo", ("get_availability", 2), ("create_match", 1),
         "An availability lookup times out and the handler returns a default open calendar, so the match books a slot the tutor does not have."),
    Case("ze_tutor_4", "tutor_context", "context_pollution", "maya", ("assemble_context", 1), ("create_match", 1),
         "The planner's context is built with a closed enquiry's student file, so the plan uses that student's days."),
    Case("ze_tutor_5", "tutor_plan", "plan_error", "maya", ("plan_sessions", 1), ("create_match", 1),
         "The session planner schedules three sessions a week for a two-session brief, and the weekly cost goes over the family's cap."),
]
REF_INPUTS = ["ines", "tom", "ada", "kai"]


def policy(request: Any) -> str:
    role, p = role_and_payload(request)
    if role == "brief":
        t = p["text"]
        subject = next(s for s in ("maths", "chemistry", "physics") if s in t)
        level = "A-level" if "A-level" in t else "GCSE"
        per_week = 2 if ("2 sessions" in t or "twice" in t) else 1
        cap = float(t.split(" GBP")[0].split()[-1])
        return f"subject: {subject}\nlevel: {level}\nsessions_per_week: {per_week}\nweekly_cap_gbp: {cap}"
    if role == "vet":
        ok = p["tutor"]["subject"] == p["subject"] and bool(p["free"])
        return json.dumps({"tutor": p["tutor"]["id"], "suitable": ok, "reason": "subject, level and hours fit" if ok else "no fit"})
    if role == "plan":
        ctx = p["context"]
        days = ctx["student"]["days"]
        slots = [s for s in p["tutor_free"] if s.split()[0] in days]
        n = p["sessions_per_week"] + (1 if active("tutor_plan") else 0)
        chosen = (slots * 3)[:n] if slots else [f"{d} {ctx['student']['after']}" for d in days * 3][:n]
        return json.dumps({"tutor": p["tutor"], "slots": chosen, "sessions_per_week": n})
    return "{}"


class MatchRejected(RuntimeError):
    pass


def _llm(name: str, system: str, payload: Any) -> str:
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload, sort_keys=True)}]
    with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
        text = chat("tutor-llm", system, payload)
        s.output = {"role": "assistant", "content": text}
    return text


@trajdebug.step(kind="parse")
def parse_brief(answer: str) -> dict:
    out = {}
    for line in answer.splitlines():
        k, v = line.split(":", 1)
        out[k.strip()] = v.strip()
    return {"subject": out["subject"], "level": out["level"], "sessions_per_week": int(out["sessions_per_week"]), "weekly_cap_gbp": float(out["weekly_cap_gbp"])}


@trajdebug.step(kind="tool")
def fetch_student_file(student: str) -> dict:
    return {"student": student, **STUDENTS[student]}


@trajdebug.step(kind="state")
def remember_student(file: dict) -> None:
    trajdebug.current_run().state["student"] = file


@trajdebug.step(kind="retrieval")
def search_tutors(query: dict) -> list[dict]:
    level = query["level"]
    hits = [t for t in TUTORS if t["subject"] == query["subject"] and level in t["levels"]]
    if active("tutor_level"):
        hits = [t for t in TUTORS if t["subject"] == query["subject"] and t["levels"] == ["GCSE"]]
    return sorted(hits, key=lambda t: (level not in t["levels"], -len(t["levels"]), t["id"]))[:3]


_CALLS = {"n": 0}


@trajdebug.retry(attempts=2, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def get_availability(tutor: str, days: list[str]) -> dict:
    _CALLS["n"] += 1
    if _CALLS["n"] == 1:
        raise ConnectionError("calendar gateway reset the connection")
    free = FREE[tutor]
    if active("tutor_swallow") and _CALLS["n"] == 2:
        try:
            raise TimeoutError(f"calendar for {tutor} timed out after 5 s")
        except TimeoutError:
            free = [f"{d} 18:30" for d in days]
    return {"tutor": tutor, "free": [s for s in free if s.split()[0] in days]}


@trajdebug.step(kind="agent")
def vetting_agent(tutor: dict, brief: dict, free: list[str]) -> dict:
    text = _llm("vet_tutor", "ROLE: vet\nDecide whether the tutor suits the brief. Answer JSON.", {"tutor": tutor, "subject": brief["subject"], "level": brief["level"], "free": free})
    with trajdebug.step("read_verdict", kind="parse", input=text) as s:
        verdict = json.loads(text)
        s.output = verdict
    return verdict


@trajdebug.step(kind="other")
def assemble_context(student_id: str) -> dict:
    state = trajdebug.current_run().state
    student = state["student"]
    if active("tutor_context"):
        student = {"student": "S-990", **STUDENTS["S-990"]}
    return {"student": student, "history": ["enquiry received", "tutors vetted"]}


@trajdebug.step(kind="tool")
def get_rate_card(tutor: str) -> dict:
    rate = next(t["rate"] for t in TUTORS if t["id"] == tutor)
    if active("tutor_rates"):
        return {"tutor": tutor, "rate_gbp_h": OLD_RATES[tutor], "sheet": "rates-2025-09.csv"}
    return {"tutor": tutor, "rate_gbp_h": rate, "sheet": "rates-2026-09.csv"}


@trajdebug.step(kind="tool")
def create_match(offer: dict) -> dict:
    t = next(x for x in TUTORS if x["id"] == offer["tutor"])
    student = STUDENTS[offer["student"]]
    if offer["level"] not in t["levels"]:
        raise MatchRejected(f"POST /matches: 422 {{\"detail\": \"tutor {t['id']} holds no {offer['level']} {offer['subject']} certification\"}}")
    if abs(offer["rate_gbp_h"] - t["rate"]) > 0.001:
        raise MatchRejected(f"POST /matches: 409 {{\"detail\": \"rate {offer['rate_gbp_h']:.2f} GBP/h differs from tutor {t['id']}'s current rate {t['rate']:.2f}\"}}")
    for slot in offer["slots"]:
        if slot.split()[0] not in student["days"]:
            raise MatchRejected(f"POST /matches: 422 {{\"detail\": \"slot {slot} is outside the student's available days {student['days']}\"}}")
        if slot not in FREE[t["id"]]:
            raise MatchRejected(f"POST /matches: 409 {{\"detail\": \"tutor {t['id']} is not free at {slot}\"}}")
    weekly = offer["rate_gbp_h"] * len(offer["slots"])
    if weekly > offer["weekly_cap_gbp"]:
        raise MatchRejected(f"POST /matches: 422 {{\"detail\": \"weekly cost {weekly:.2f} GBP exceeds the cap of {offer['weekly_cap_gbp']:.2f} GBP\"}}")
    return {"match": f"M-{offer['student'][2:]}-{t['id'][2:]}", "status": "created"}


def record(main_input: str, path: Path) -> None:
    brief_in = BRIEFS[main_input]
    _CALLS["n"] = 0
    try:
        with trajdebug.run(NAME, path=str(path), task="match a tutor to a family's brief") as run:
            with trajdebug.step("receive_brief", kind="input") as s:
                s.output = brief_in
            brief = parse_brief(_llm("read_brief", "ROLE: brief\nRead the family's brief; answer key: value lines.", {"text": brief_in["text"]}))
            file = fetch_student_file(brief_in["student"])
            remember_student(file)
            candidates = search_tutors({"subject": brief["subject"], "level": brief["level"], "text": brief_in["text"]})
            suitable = []
            for t in candidates:
                avail = get_availability(t["id"], file["days"])
                verdict = vetting_agent(t, brief, avail["free"])
                if verdict["suitable"]:
                    suitable.append((t, avail))
            with trajdebug.step("shortlist", kind="state") as s:
                run.state["shortlist"] = [t["id"] for t, _ in suitable]
                s.output = run.state["shortlist"]
            tutor, avail = suitable[0]
            ctx = assemble_context(brief_in["student"])
            plan = json.loads(_llm("plan_sessions", "ROLE: plan\nPlan weekly sessions for the chosen tutor. Answer JSON.", {"context": ctx, "tutor": tutor["id"], "tutor_free": avail["free"], "sessions_per_week": brief["sessions_per_week"]}))
            card = get_rate_card(tutor["id"])
            offer = {"student": brief_in["student"], "tutor": tutor["id"], "subject": brief["subject"], "level": brief["level"],
                     "slots": plan["slots"], "rate_gbp_h": card["rate_gbp_h"], "weekly_cap_gbp": brief["weekly_cap_gbp"], "plan": plan}
            match = create_match(offer)
            with trajdebug.step("notify_family", kind="output") as s:
                s.output = f"Matched with tutor {tutor['id']} ({match['match']}): {', '.join(plan['slots'])}"
    except MatchRejected:
        pass
