"""Flight school lesson rota (sdk route): plans a week of lessons, books instructors and aircraft, writes briefs."""
from __future__ import annotations

import json

import trajdebug

import _rt
import kit

NAME, ROUTE, DOMAIN = "flight-school-rota", "sdk", "a flight school's lesson rota"
SHAPE = "fetch roster/instructors/fleet, LLM draft, parse, per-lesson pick/book/save loop, briefing sub-agent, totals, validator"

_NAMES = ["Ada Moreno", "Ben Okafor", "Cleo Park", "Dev Raman", "Edda Lund", "Finn Abbas", "Gita Sol", "Hugo Brandt",
          "Iris Chen", "Jon Varga", "Kemi Ade", "Luca Ferri", "Maya Holt", "Nils Berg", "Omar Said"]
_LESSONS = {1: ("circuits dual", 60), 2: ("stalls and spins dual", 75), 3: ("first solo", 45), 4: ("instrument approach dual", 90)}
INSTRUCTORS = [{"name": "Capt. Reyes", "ratings": ["FI", "IRI"]}, {"name": "Sam Doyle", "ratings": ["FI"]},
               {"name": "Tara Quinn", "ratings": ["FI", "IRI"]}, {"name": "Vic Holm", "ratings": ["FI"]}]
FLEET = [{"reg": "G-BXKA", "type": "C152", "hours_to_check": 4.5}, {"reg": "G-OPAL", "type": "PA28", "hours_to_check": 3.0}]


def _week(i: int) -> dict:
    students = []
    for k in range(5):
        stage = 1 + (i + k * 3) % 4
        students.append({"id": f"ST-{100 + i * 10 + k}", "name": _NAMES[(i * 3 + k) % len(_NAMES)], "stage": stage,
                         "dual_hours": 4 + (i * 7 + k * 5) % 19})
    return {"week": f"2025-W{14 + i}", "students": students}


INPUTS = [_week(i) for i in range(5)]
CASES = [
    {"id": "fr_c1", "input": 0, "fault_kind": "unit_error", "root": "book_aircraft", "occ": 2,
     "failure": "validate_rota", "description": "book_aircraft records the second lesson's block time in minutes instead of hours, so the aircraft's hours exceed its check limit."},
    {"id": "fr_c2", "input": 1, "fault_kind": "bad_memory_write", "root": "save_booking", "occ": 3,
     "failure": "validate_rota", "description": "save_booking stores the third lesson under the previous lesson's aircraft registration, overbooking one aircraft."},
    {"id": "fr_c3", "input": 2, "fault_kind": "wrong_routing", "root": "pick_instructor", "occ": 4,
     "failure": "validate_rota", "description": "pick_instructor sends the fourth lesson, an instrument approach, to an instructor without an IRI rating."},
    {"id": "fr_c4", "input": 3, "fault_kind": "hallucinated_value", "root": "write_briefs", "occ": 1,
     "failure": "validate_rota", "description": "The briefing model gives one student a lesson type that the rota never booked."},
    {"id": "fr_c5", "input": 4, "fault_kind": "plan_error", "root": "draft_rota", "occ": 1,
     "failure": "validate_rota", "description": "The rota model plans lessons for only four of the five students."},
]


def _plan(week: dict) -> list[dict]:
    days = ["Mon", "Tue", "Wed", "Thu", "Fri"]
    return [{"student": s["id"], "lesson": _LESSONS[s["stage"]][0], "minutes": _LESSONS[s["stage"]][1], "day": days[k]}
            for k, s in enumerate(week["students"])]


def _policy(week: dict):
    plan = _plan(week)
    names = {s["id"]: s["name"] for s in week["students"]}

    def brain(request):
        text = _rt.last_user(request)
        if text.startswith("Draft the lesson rota"):
            out = plan[:-1] if kit.on("fr_c5") else plan
            return json.dumps({"lessons": out})
        if text.startswith("Write a one-line brief"):
            booked = json.loads(text.split("\n", 1)[1])
            briefs = []
            for j, b in enumerate(booked):
                lesson = b["lesson"]
                if kit.on("fr_c4") and j == 1:
                    lesson = "navigation cross-country solo"
                briefs.append(f"{b['student']} | {names.get(b['student'], '?')} | {lesson} | with {b['instructor']} in {b['reg']}")
            return "\n".join(briefs)
        return "OK"
    return brain


@trajdebug.step(kind="input")
def read_request(week: dict) -> dict:
    return {"week": week["week"], "student_ids": [s["id"] for s in week["students"]]}


@trajdebug.step(kind="tool")
def fetch_students(week_id: str, ids: list) -> list[dict]:
    return [dict(s) for s in _CURRENT["week"]["students"] if s["id"] in ids]


@trajdebug.step(kind="tool")
def fetch_instructors(week_id: str) -> list[dict]:
    return [dict(i, available=["Mon", "Tue", "Wed", "Thu", "Fri"]) for i in INSTRUCTORS]


@trajdebug.step(kind="tool")
def fetch_fleet(base: str) -> list[dict]:
    return [dict(a) for a in FLEET]


@trajdebug.step(kind="llm")
def draft_rota(client, students: list[dict]) -> str:
    return _rt.complete(client, "You plan flight school rotas. Answer JSON.",
                        "Draft the lesson rota for these students (lesson by stage: 1 circuits dual 60 min, 2 stalls and "
                        "spins dual 75 min, 3 first solo 45 min, 4 instrument approach dual 90 min):\n" + json.dumps(students))


@trajdebug.step(kind="parse")
def parse_rota(text: str) -> list[dict]:
    return [dict(x) for x in json.loads(text)["lessons"]]


@trajdebug.step(kind="condition")
def pick_instructor(lesson: dict, instructors: list[dict], index: int) -> dict:
    need = "IRI" if "instrument" in lesson["lesson"] else "FI"
    rated = [i for i in instructors if need in i["ratings"] and lesson["day"] in i["available"]]
    choice = rated[index % len(rated)]
    if kit.on("fr_c3") and index == 3:
        choice = instructors[1]
    return {"instructor": choice["name"], "ratings": choice["ratings"]}


@trajdebug.step(kind="tool")
def book_aircraft(lesson: dict, fleet: list[dict], index: int) -> dict:
    plane = fleet[index % len(fleet)]
    hours = lesson["minutes"] / 60
    if kit.on("fr_c1") and index == 1:
        hours = float(lesson["minutes"])
    return {"reg": plane["reg"], "day": lesson["day"], "block_hours": round(hours, 2), "slot": f"{lesson['day']} 09:00"}


@trajdebug.step(kind="state")
def save_booking(lesson: dict, who: dict, plane: dict, index: int) -> dict:
    run = trajdebug.current_run()
    reg = plane["reg"]
    if kit.on("fr_c2") and index == 2:
        reg = run.state["last_reg"]
    rec = {"student": lesson["student"], "lesson": lesson["lesson"], "instructor": who["instructor"],
           "reg": reg, "block_hours": plane["block_hours"], "day": lesson["day"]}
    run.state[f"booking:{lesson['student']}"] = rec
    run.state["last_reg"] = plane["reg"]
    run.state["booked"] = run.state.get("booked", []) + [lesson["student"]]
    return rec


@trajdebug.step(kind="llm")
def write_briefs(client, bookings: list[dict]) -> str:
    return _rt.complete(client, "You write lesson briefs.", "Write a one-line brief per booking:\n" + json.dumps(bookings))


@trajdebug.step(kind="parse")
def parse_briefs(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        sid, name, lesson, rest = [p.strip() for p in line.split("|")]
        out.append({"student": sid, "name": name, "lesson": lesson, "detail": rest})
    return out


@trajdebug.step(kind="agent")
def brief_pack(client, bookings: list[dict]) -> list[dict]:
    return parse_briefs(write_briefs(client, bookings))


@trajdebug.step(kind="other")
def aircraft_hours() -> dict:
    run = trajdebug.current_run()
    totals: dict = {}
    for sid in run.state["booked"]:
        b = run.state[f"booking:{sid}"]
        totals[b["reg"]] = round(totals.get(b["reg"], 0.0) + b["block_hours"], 2)
    return totals


@trajdebug.step(kind="condition")
def validate_rota(students: list[dict], bookings: list[dict], briefs: list[dict], hours: dict, fleet: list[dict]) -> dict:
    booked = {b["student"] for b in bookings}
    missing = [s["id"] for s in students if s["id"] not in booked]
    if missing:
        raise ValueError(f"students without a lesson this week: {', '.join(missing)}")
    limits = {a["reg"]: a["hours_to_check"] for a in fleet}
    for reg, h in hours.items():
        if h > limits[reg]:
            raise ValueError(f"{reg} booked for {h} h but only {limits[reg]} h remain before its 100-hour check")
    ratings = {i["name"]: i["ratings"] for i in INSTRUCTORS}
    for b in bookings:
        if "instrument" in b["lesson"] and "IRI" not in ratings[b["instructor"]]:
            raise ValueError(f"{b['student']}: {b['lesson']} with {b['instructor']}, who holds no IRI rating")
    by_student = {b["student"]: b["lesson"] for b in bookings}
    for br in briefs:
        if br["lesson"] != by_student.get(br["student"]):
            raise ValueError(f"brief for {br['student']} says '{br['lesson']}' but the rota books '{by_student.get(br['student'])}'")
    return {"ok": True, "lessons": len(bookings)}


_CURRENT: dict = {}


def record(inp: dict, path: str) -> None:
    _rt.SERVER.use(_policy(inp))
    _CURRENT["week"] = inp
    client = _rt.openai_client()

    def body(run):
        req = read_request(inp)
        students = fetch_students(req["week"], req["student_ids"])
        instructors = fetch_instructors(req["week"])
        fleet = fetch_fleet("EGBJ")
        lessons = parse_rota(draft_rota(client, students))
        bookings = []
        for i, lesson in enumerate(lessons):
            who = pick_instructor(lesson, instructors, i)
            plane = book_aircraft(lesson, fleet, i)
            bookings.append(save_booking(lesson, who, plane, i))
        briefs = brief_pack(client, bookings)
        hours = aircraft_hours()
        validate_rota(students, bookings, briefs, hours, fleet)

    _rt.sdk_run(NAME, f"lesson rota for {inp['week']}", body, path)
