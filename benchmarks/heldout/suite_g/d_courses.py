"""Course enrollment advisor (route d: trajdebug's recording SDK).

A student asks to register for next term's courses. The advisor reads the transcript, has a model propose
a plan, checks prerequisites, looks sections up, picks non-clashing sections, holds seats, estimates fees
net of financial aid, and submits the registration to the registrar, which validates everything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trajdebug

from .common import AgentSpec, Case, Req, active, brain, sdk_chat


AGENT = "course-enrollment-advisor"

TRANSCRIPTS = {
    "S-1041": "MATH110 | 4 cr | B+\nCS101 | 4 cr | A-\nPHYS101 | 4 cr | B\nENG105 | 3 cr | A",
    "S-2290": "MATH110 | 4 cr | A\nCHEM101 | 4 cr | B+\nBIO101 | 4 cr | A-",
    "S-3307": "CS101 | 4 cr | B\nMATH110 | 4 cr | C+\nCS201 | 4 cr | B-",
    "S-4412": "ECON101 | 3 cr | A\nMATH105 | 3 cr | B\nENG105 | 3 cr | B+",
    "S-5528": "PHYS101 | 4 cr | A\nMATH110 | 4 cr | A-\nMATH221 | 4 cr | B+",
}
PREREQS = {
    "MATH221": ["MATH110"],
    "CS201": ["CS101"],
    "CS310": ["CS201"],
    "PHYS150": ["PHYS101"],
    "CHEM201": ["CHEM101"],
    "ECON201": ["ECON101"],
    "STAT200": ["MATH105"],
    "MATH310": ["MATH221"],
}
SECTIONS = {  # course -> [(section, days, start hour, seats left)]
    "MATH221": [("01", "MWF", 9, 4), ("02", "TR", 11, 0), ("03", "MWF", 13, 7)],
    "CS201": [("01", "TR", 9, 3), ("02", "MWF", 13, 5)],
    "CS310": [("01", "MWF", 10, 6)],
    "PHYS150": [("01", "MWF", 13, 8), ("02", "TR", 14, 2)],
    "CHEM201": [("01", "TR", 9, 5)],
    "ECON201": [("01", "MWF", 11, 9), ("02", "TR", 9, 4)],
    "STAT200": [("01", "TR", 11, 6)],
    "ENG205": [("01", "TR", 15, 10)],
    "MATH310": [("01", "TR", 9, 2)],
    "MATH240": [("01", "TR", 13, 6)],
    "STAT210": [("01", "MWF", 9, 5), ("02", "TR", 13, 4)],
}
CREDITS = {
    "MATH221": 4,
    "CS201": 4,
    "CS310": 4,
    "PHYS150": 4,
    "CHEM201": 4,
    "ECON201": 3,
    "STAT200": 3,
    "ENG205": 3,
    "MATH310": 4,
    "MATH240": 3,
    "STAT210": 3,
}
AID = {"S-1041": 5200.0, "S-2290": 3900.0, "S-3307": 6100.0, "S-4412": 4800.0, "S-5528": 5000.0}
RATE_PER_CREDIT = 540.0
DEFERMENT_LIMIT = 2500.0


class RegistrationRefused(RuntimeError):
    """The registrar refused the registration."""


@brain("courses.advisor")
def _advisor(req: Req) -> str:
    ask = json.loads(req.user.split("REQUEST:", 1)[1])
    return json.dumps({"plan": ask["wanted"], "note": "balanced load, mornings preferred"})


@trajdebug.step(kind="tool")
def fetch_transcript(student: str) -> str:
    return TRANSCRIPTS[student]


@trajdebug.step(kind="parse")
def parse_transcript(text: str) -> list[dict]:
    rows = []
    for line in text.splitlines():
        code, credits, grade = (part.strip() for part in line.split("|"))
        rows.append({"course": code, "credits": int(credits.split()[0]), "grade": grade})
    return rows


@trajdebug.step(kind="condition")
def check_prereqs(plan: list[str], completed: list[str]) -> dict:
    lanes: dict[str, str] = {}
    for course in plan:
        need = PREREQS.get(course, [])
        ok = all(c in completed for c in need)
        if active("courses.prereq_route") and need and need[0].rstrip("0123456789") == course.rstrip("0123456789"):
            ok = True
        lanes[course] = "enroll" if ok else "petition"
    return lanes


@trajdebug.step(kind="tool")
def section_lookup(course: str) -> list[dict]:
    return [{"section": f"{course}-{s}", "days": d, "hour": h, "seats": n} for s, d, h, n in SECTIONS[course]]


@trajdebug.step(kind="other")
def pick_sections(options: dict) -> list[dict]:
    chosen: list[dict] = []
    for sections in options.values():
        free = [s for s in sections if s["seats"] > 0]
        for sec in free:
            held = chosen[: len(chosen) - 1] if active("courses.section_index") else chosen
            if all(not (sec["days"] == c["days"] and sec["hour"] == c["hour"]) for c in held):
                chosen.append(sec)
                break
    return chosen


@trajdebug.step(kind="state")
def hold_seats(chosen: list[dict]) -> dict:
    cart = trajdebug.current_run().state.setdefault("cart", {})
    for sec in chosen:
        key = sec["section"][:4] if active("courses.cart_key") else sec["section"].split("-")[0]
        cart[key] = sec["section"]
    trajdebug.current_run().state["cart"] = cart
    return {"cart": dict(cart)}


@trajdebug.step(kind="tool")
def fetch_aid(student: str, term: str) -> dict:
    try:
        if active("courses.aid_service"):
            raise TimeoutError("aid service did not answer within 2.0 s")
        return {"student": student, "term": term, "award": AID[student]}
    except TimeoutError:
        return {"student": student, "term": term, "award": 0.0}


@trajdebug.step(kind="other")
def fee_estimate(credits: int, aid: dict) -> dict:
    tuition = credits * RATE_PER_CREDIT
    return {"tuition": tuition, "aid": aid["award"], "balance": round(tuition - aid["award"], 2)}


@trajdebug.step(kind="tool")
def registrar_submit(student: str, requested: list[str], lanes: dict, cart: dict, chosen: list, fees: dict) -> dict:
    completed = [r["course"] for r in parse_cache[student]]
    for course in requested:
        if lanes[course] == "enroll" and not all(c in completed for c in PREREQS.get(course, [])):
            raise RegistrationRefused(f"{course}: prerequisite on record not met (registrar rule PR-4)")
    enrolled = [c for c in requested if lanes[c] == "enroll"]
    if len(cart) != len(enrolled):
        raise RegistrationRefused(f"seat holds ({len(cart)}) do not cover the courses to enroll ({len(enrolled)})")
    slots = [(s["days"], s["hour"]) for s in chosen]
    if len(set(slots)) != len(slots):
        raise RegistrationRefused("two held sections meet at the same time")
    if fees["balance"] > DEFERMENT_LIMIT:
        raise RegistrationRefused(f"account hold: balance due exceeds the deferment limit of {DEFERMENT_LIMIT:.2f}")
    return {"status": "registered", "sections": sorted(cart.values())}


parse_cache: dict[str, list[dict]] = {}


def agent(inp: dict) -> dict:
    with trajdebug.step("student_request", kind="input") as s:
        s.output = inp
    rows = parse_transcript(fetch_transcript(inp["student"]))
    parse_cache[inp["student"]] = rows
    completed = [r["course"] for r in rows]
    reply = sdk_chat(
        "advise_plan",
        "desk: courses.advisor. Propose a course plan for next term as JSON.",
        "REQUEST: " + json.dumps({"wanted": inp["courses"], "completed": completed}),
    )
    plan = json.loads(reply)["plan"]
    lanes = check_prereqs(plan, completed)
    enroll = [c for c in plan if lanes[c] == "enroll"]
    options = {c: section_lookup(c) for c in enroll}
    chosen = pick_sections(options)
    cart = hold_seats(chosen)["cart"]
    credits = sum(CREDITS[c] for c in enroll)
    fees = fee_estimate(credits, fetch_aid(inp["student"], "2027-spring"))
    result = registrar_submit(inp["student"], plan, lanes, cart, chosen, fees)
    with trajdebug.step("confirm_student", kind="output") as s:
        s.output = f"Registered: {', '.join(result['sections'])}"
    return result


def record(inp: dict, path: Path) -> None:
    try:
        with trajdebug.run(AGENT, task=f"register {inp['student']} for {', '.join(inp['courses'])}", path=str(path)):
            agent(inp)
    except RegistrationRefused:
        pass


def _in(student: str, *courses: str) -> dict[str, Any]:
    return {"student": student, "courses": list(courses)}


# fmt: off
SPEC = AgentSpec(
    agent=AGENT, route="d", domain="university course enrollment", record=record,
    summary="transcript tool + parse, model plan, prerequisite branch, section lookups, seat holds, aid, registrar",
    refs=[_in("S-2290", "CHEM201", "ENG205"), _in("S-4412", "ECON201", "STAT200"),
          _in("S-5528", "PHYS150", "MATH310"), _in("S-3307", "CS310", "ENG205")],
    cases=[
        Case("g_courses_prereq", "wrong_routing", "courses.prereq_route", _in("S-2290", "MATH221", "CS201", "ENG205"),
             "check_prereqs", '"CS201": "enroll"',
             "The prerequisite branch sends CS201 to enrollment although the student never took CS101."),
        Case("g_courses_section", "off_by_one", "courses.section_index", _in("S-1041", "MATH221", "STAT210"),
             "pick_sections", "STAT210-01",
             "The clash check stops one held section short, so a section meeting at the same time is picked."),
        Case("g_courses_cart", "bad_state_write", "courses.cart_key", _in("S-5528", "MATH310", "MATH240", "ENG205"),
             "hold_seats", lambda out: "MATH310" not in json.dumps(out) and "MATH240" in json.dumps(out),
             "The seat-hold write keys the cart by department, so the second MATH hold overwrites the first."),
        Case("g_courses_aid", "swallowed_error", "courses.aid_service", _in("S-3307", "CS310", "MATH221"),
             "fetch_aid", '"award": 0.0',
             "The aid lookup times out and the error is replaced silently by an award of zero."),
    ],
)
# fmt: on
