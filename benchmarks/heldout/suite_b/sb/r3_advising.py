"""Registration advisor (openai client + OpenInference, OTLP JSON; education).

The advisor reads a student's transcript and degree requirements, works out
the courses the student can take next, keeps them in the advising notes
(memory), reads the notes back when it plans the term, looks up sections for
the term and registers the student.  Registration enforces the term, the
prerequisites, repeats and the full-time credit minimum.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind

from sb import otkit
from sb.fakellm import Conversation, Reply, call, say
from sb.harness import Case, failing, faulty, tick


AGENT = "registration-advisor"
ROUTE = "otlp"
DOMAIN = "education"
TR = otkit.tracer("registration-advisor")

REQUIREMENTS = {
    "CS-BS": [
        ("CS-101", []),
        ("CS-110", ["CS-101"]),
        ("MATH-140", []),
        ("CS-210", ["CS-110"]),
        ("CS-220", ["CS-110"]),
        ("MATH-240", ["MATH-140"]),
        ("CS-310", ["CS-210", "MATH-240"]),
        ("CS-320", ["CS-220"]),
        ("CS-330", ["CS-210"]),
        ("STAT-200", ["MATH-140"]),
        ("CS-410", ["CS-310"]),
        ("CS-420", ["CS-320"]),
    ],
    "DS-BS": [
        ("CS-101", []),
        ("MATH-140", []),
        ("STAT-200", ["MATH-140"]),
        ("CS-110", ["CS-101"]),
        ("DS-210", ["STAT-200", "CS-110"]),
        ("MATH-240", ["MATH-140"]),
        ("DS-310", ["DS-210"]),
        ("STAT-300", ["STAT-200", "MATH-240"]),
        ("DS-320", ["DS-210"]),
        ("DS-410", ["DS-310", "STAT-300"]),
        ("DS-150", ["CS-101"]),
        ("COMM-120", []),
    ],
}
STUDENTS = {
    "ST-501": {
        "program": "CS-BS",
        "earlier": ["CS-101", "CS-110", "MATH-140"],
        "spring": ["CS-210", "MATH-240"],
    },
    "ST-502": {"program": "DS-BS", "earlier": ["CS-101", "MATH-140"], "spring": ["STAT-200", "CS-110"]},
    "ST-503": {"program": "CS-BS", "earlier": ["CS-101"], "spring": ["CS-110", "MATH-140"]},
    "ST-504": {
        "program": "DS-BS",
        "earlier": ["CS-101", "MATH-140", "STAT-200", "CS-110"],
        "spring": ["DS-210", "MATH-240"],
    },
    "ST-505": {
        "program": "CS-BS",
        "earlier": ["CS-101", "CS-110", "MATH-140", "CS-210"],
        "spring": ["CS-220", "MATH-240"],
    },
    "ST-506": {"program": "DS-BS", "earlier": ["CS-101"], "spring": ["MATH-140"]},
    "ST-507": {"program": "CS-BS", "earlier": [], "spring": ["CS-101", "MATH-140"]},
    "ST-508": {"program": "CS-BS", "earlier": ["CS-101", "MATH-140"], "spring": ["CS-110", "STAT-200"]},
    "ST-509": {
        "program": "DS-BS",
        "earlier": ["CS-101", "MATH-140", "CS-110"],
        "spring": ["STAT-200", "MATH-240"],
    },
}
CREDITS = 4
TERM = "2025FA"
NOTES: dict[str, list[str]] = {}
_ALL_COURSES = sorted({c for req in REQUIREMENTS.values() for c, _ in req})


def _sections(code: str) -> list[dict[str, str]]:
    # Listed in catalogue order: the spring offering comes first for some courses.
    fa = {"section_id": f"{code}-F01", "course": code, "term": "2025FA"}
    sp = {"section_id": f"{code}-S01", "course": code, "term": "2026SP"}
    return [sp, fa] if sum(map(ord, code)) % 2 else [fa, sp]


def get_transcript(student_id: str) -> dict[str, Any]:
    tick("get_transcript")
    s = STUDENTS[student_id]
    done = list(s["earlier"])
    if not faulty("transcript_snapshot", "get_transcript"):
        done += s["spring"]  # the snapshot predates spring grade posting
    return {"student_id": student_id, "program": s["program"], "completed": done}


def get_requirements(program: str) -> dict[str, Any]:
    tick("get_requirements")
    return {"program": program, "courses": [{"code": c, "prereqs": p} for c, p in REQUIREMENTS[program]]}


def save_notes(student_id: str, next_courses: list[str]) -> dict[str, Any]:
    tick("save_notes")
    stored = list(next_courses)
    if faulty("notes_field_truncates", "save_notes"):
        stored = stored[:2]  # the notes column holds 20 characters: 'CS-210,CS-220' fits, the rest is cut
    NOTES[student_id] = stored
    return {"saved": True, "student_id": student_id}


def load_notes(student_id: str) -> dict[str, Any]:
    tick("load_notes")
    return {"student_id": student_id, "next_courses": NOTES.get(student_id, [])}


def get_sections(courses: list[str], term: str) -> dict[str, Any]:
    tick("get_sections")
    any_term = faulty("sections_ignore_term", "get_sections")
    out = []
    for c in courses:
        rows = [s for s in _sections(c) if any_term or s["term"] == term]
        out.append(rows[0])
    return {"term": term, "sections": out}


def enroll(student_id: str, term: str, section_ids: list[str]) -> dict[str, Any]:
    tick("enroll")
    s = STUDENTS[student_id]
    done = set(s["earlier"]) | set(s["spring"])
    prereqs = dict(REQUIREMENTS[s["program"]])
    for sid in section_ids:
        code, sec = sid.rsplit("-", 1)
        if (sec.startswith("F") and term != "2025FA") or (sec.startswith("S") and term != "2026SP"):
            failing("enroll")
            raise ValueError(f"section {sid} does not run in {term}")
        if code in done:
            failing("enroll")
            raise ValueError(f"{student_id} already passed {code}; repeats need a dean's waiver")
        missing = [p for p in prereqs.get(code, []) if p not in done]
        if missing:
            failing("enroll")
            raise ValueError(f"{student_id} lacks {', '.join(missing)} for {code}")
    credits = CREDITS * len(section_ids)
    if not 12 <= credits <= 18:
        failing("enroll")
        raise ValueError(f"{credits} credits is outside the full-time load of 12-18 for {term}")
    return {"student_id": student_id, "term": term, "registered": section_ids, "credits": credits}


def _schema(name: str, desc: str, params: dict[str, str]) -> dict[str, Any]:
    return otkit.tool_schema(name, desc, params)


TOOLS = {
    "get_transcript": (
        get_transcript,
        _schema("get_transcript", "Program and completed courses.", {"student_id": "str"}),
    ),
    "get_requirements": (
        get_requirements,
        _schema("get_requirements", "Courses of a degree program with prerequisites.", {"program": "str"}),
    ),
    "save_notes": (
        save_notes,
        _schema(
            "save_notes",
            "Save the courses a student should take next to the advising notes.",
            {"student_id": "str", "next_courses": "list"},
        ),
    ),
    "load_notes": (
        load_notes,
        _schema("load_notes", "Read the advising notes of a student.", {"student_id": "str"}),
    ),
    "get_sections": (
        get_sections,
        _schema("get_sections", "Sections of courses in a term.", {"courses": "list", "term": "str"}),
    ),
    "enroll": (
        enroll,
        _schema(
            "enroll",
            "Register a student in sections.",
            {"student_id": "str", "term": "str", "section_ids": "list"},
        ),
    ),
}
SYSTEM = (
    "You are a registration advisor. Determine the next four eligible courses from the transcript and program "
    "requirements (prerequisites completed, not yet taken), save them to the advising notes, then plan the term "
    "from the notes: find the sections for the term and register the student."
)


def policy(conv: Conversation) -> Reply:
    t = conv.task
    sid = t["student_id"]
    if conv.called("get_transcript") == 0:
        return call("get_transcript", student_id=sid)
    tr = conv.result("get_transcript")
    if conv.called("get_requirements") == 0:
        return call("get_requirements", program=tr["program"])
    if conv.called("save_notes") == 0:
        done = set(tr["completed"])
        eligible = [
            c["code"]
            for c in conv.result("get_requirements")["courses"]
            if c["code"] not in done and all(p in done for p in c["prereqs"])
        ]
        return call("save_notes", student_id=sid, next_courses=eligible[:4])
    if conv.called("load_notes") == 0:
        return call("load_notes", student_id=sid)
    if conv.called("get_sections") == 0:
        return call("get_sections", courses=conv.result("load_notes")["next_courses"], term=t["term"])
    if conv.called("enroll") == 0:
        secs = [s["section_id"] for s in conv.result("get_sections")["sections"]]
        return call("enroll", student_id=sid, term=t["term"], section_ids=secs)
    r = conv.result("enroll")
    return say(f"Registered {sid} for {r['credits']} credits in {r['term']}: {', '.join(r['registered'])}.")


def run(task: dict[str, Any], path: Path) -> Any:
    NOTES.clear()
    text = f"Please register {task['student_id']} for {task['term']}. {task.get('note', '')}".strip()
    with otkit.span(
        TR, "registration-advisor", Kind.AGENT, text, **{"agent.name": "registration-advisor"}
    ) as out:
        answer = otkit.react(
            TR,
            otkit.client(),
            [{"role": "system", "content": SYSTEM}, {"role": "user", "content": text}],
            TOOLS,
        )
        out.value = answer
        return answer


PASSING = [{"student_id": s, "term": TERM} for s in ("ST-502", "ST-503", "ST-505", "ST-507", "ST-509")]

CASES = [
    Case(
        id="advising-notes-truncated",
        task={"student_id": "ST-501", "term": TERM, "note": "Full-time load please."},
        fault="notes_field_truncates",
        fault_kind="bad_memory_write",
        description="save_notes stores the four planned courses in a 20-character notes field and silently keeps only "
        "two. Planning reads the notes back, registers two sections (8 credits), and registration rejects a load "
        "below full time.",
        root="save_notes",
        evidence='"saved": true',
        path=["save_notes", "load_notes", "ChatCompletion", "enroll"],
        failure="enroll",
    ),
    Case(
        id="advising-sections-any-term",
        task={"student_id": "ST-504", "term": TERM},
        fault="sections_ignore_term",
        fault_kind="tool_ignores_argument",
        description="get_sections ignores the term and returns each course's first catalogue listing, which is the "
        "spring section for some courses; registering those for fall is refused.",
        root="get_sections",
        evidence="2026SP",
        path=["get_sections", "ChatCompletion", "enroll"],
        failure="enroll",
    ),
    Case(
        id="advising-transcript-snapshot",
        task={"student_id": "ST-508", "term": TERM},
        fault="transcript_snapshot",
        fault_kind="stale_data",
        description="get_transcript returns a snapshot from before spring grades were posted, so CS-110 and STAT-200 "
        "look untaken. The advisor plans them again, saves and reloads the plan, and registration refuses the "
        "repeat.",
        root="get_transcript",
        evidence='"completed": ["CS-101", "MATH-140"]',
        path=["get_transcript", "ChatCompletion", "save_notes", "load_notes", "ChatCompletion", "enroll"],
        failure="enroll",
    ),
    Case(
        id="advising-notes-truncated-b",
        task={"student_id": "ST-506", "term": TERM, "note": "She wants a normal semester."},
        fault="notes_field_truncates",
        fault_kind="bad_memory_write",
        description="Another student: the advising notes keep two of the four planned courses, and the 8-credit "
        "registration built from them is refused.",
        root="save_notes",
        evidence='"saved": true',
        path=["save_notes", "load_notes", "ChatCompletion", "enroll"],
        failure="enroll",
    ),
]
