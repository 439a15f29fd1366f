"""timetable-builder: places a batch of requested lessons into a secondary school's weekly timetable.  A
model plans the batch (which department desk staffs each lesson, on which day), code repairs and parses
the plan, then for every lesson the agent fetches the department's roster for the day, finds a room and
places the lesson; the grid is assembled, validated, published to the school's MIS and a model drafts
the staff notice.  The `openai` client is instrumented with OpenInference; tools and code are OTel
spans; exported as OTLP JSON."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

from openai import OpenAI
from otel_route import Telemetry
from suite_common import FAULT, Agent, Case, Loc, messages_of, system_text

from trajdebug.testing import FakeModelServer


NAME = "timetable-builder"
MODEL = "gpt-4.1-mini"

DEPARTMENT = {"Physics": "Science", "Chemistry": "Science", "Biology": "Science", "Maths": "Mathematics",
              "Computing": "Mathematics", "French": "Languages", "German": "Languages", "Music": "Arts",
              "Art": "Arts", "Food Technology": "Technology", "Design": "Technology", "PE": "PE"}

TEACHERS = [
    {"id": "T-SC1", "name": "Dr Harlow", "dept": "Science", "subjects": ["Physics", "Chemistry"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 4},
    {"id": "T-SC2", "name": "Mr Benning", "dept": "Science", "subjects": ["Chemistry", "Biology"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 3},
    {"id": "T-SC3", "name": "Ms Varga", "dept": "Science", "subjects": ["Physics"], "days": ["Mon", "Tue", "Wed", "Thu"], "free": 2},
    {"id": "T-MA1", "name": "Mr Osei", "dept": "Mathematics", "subjects": ["Maths"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 3},
    {"id": "T-MA2", "name": "Ms Lund", "dept": "Mathematics", "subjects": ["Maths", "Computing"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 2},
    {"id": "T-LA1", "name": "Mme Perrin", "dept": "Languages", "subjects": ["French"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 3},
    {"id": "T-LA2", "name": "Herr Vogt", "dept": "Languages", "subjects": ["German"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 2},
    {"id": "T-AR1", "name": "Ms Okafor", "dept": "Arts", "subjects": ["Music"], "days": ["Mon", "Tue", "Wed", "Thu"], "free": 5},
    {"id": "T-AR2", "name": "Mr Reyes", "dept": "Arts", "subjects": ["Art", "Music"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 2},
    {"id": "T-TE1", "name": "Mrs Daly", "dept": "Technology", "subjects": ["Food Technology", "Design"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 3},
    {"id": "T-PE1", "name": "Mr Kowalski", "dept": "PE", "subjects": ["PE"], "days": ["Mon", "Tue", "Wed", "Thu", "Fri"], "free": 4},
]
# the roster service's cache, filled last term (Ms Okafor went part-time, Mon-Thu, this term)
LAST_TERM_DAYS = {"T-AR1": ["Mon", "Tue", "Wed", "Thu", "Fri"]}

ROOM_TYPE = {"Physics": "physics lab", "Chemistry": "chemistry lab", "Biology": "chemistry lab",
             "Food Technology": "kitchen", "Design": "workshop", "Music": "music room", "Art": "art studio",
             "Computing": "computer room", "PE": "sports hall", "Maths": "classroom", "French": "classroom",
             "German": "classroom"}
ROOMS = [
    {"room": "LAB-1", "type": "physics lab", "capacity": 30}, {"room": "LAB-4", "type": "physics lab", "capacity": 36},
    {"room": "LAB-2", "type": "chemistry lab", "capacity": 24}, {"room": "LAB-3", "type": "chemistry lab", "capacity": 32},
    {"room": "KIT-1", "type": "kitchen", "capacity": 20}, {"room": "KIT-2", "type": "kitchen", "capacity": 28},
    {"room": "WS-1", "type": "workshop", "capacity": 24}, {"room": "MUS-1", "type": "music room", "capacity": 30},
    {"room": "ART-1", "type": "art studio", "capacity": 28}, {"room": "ICT-1", "type": "computer room", "capacity": 30},
    {"room": "GYM", "type": "sports hall", "capacity": 60}, {"room": "R-104", "type": "classroom", "capacity": 32},
]

REQUESTS = {
    "TT-301": [("9A", "Biology", 1, "Tue", 22), ("10A", "Chemistry", 2, "Wed", 30), ("11B", "Maths", 1, "Thu", 27)],
    "TT-302": [("8C", "Music", 1, "Fri", 26), ("9C", "French", 1, "Mon", 25), ("10B", "Physics", 2, "Tue", 29)],
    "TT-303": [("10C", "Food Technology", 2, "Thu", 26), ("8A", "German", 1, "Wed", 24), ("11A", "Computing", 1, "Mon", 30)],
    "TT-304": [("9B", "Physics", 2, "Mon", 28), ("8B", "Art", 1, "Tue", 25), ("11C", "Chemistry", 2, "Fri", 22)],
    "TT-401": [("7A", "Maths", 1, "Mon", 30), ("7B", "Music", 1, "Wed", 28), ("9A", "Chemistry", 2, "Thu", 24)],
    "TT-402": [("10A", "Physics", 2, "Tue", 30), ("8C", "French", 1, "Fri", 26), ("11B", "Food Technology", 2, "Wed", 18)],
    "TT-403": [("9C", "Art", 1, "Mon", 27), ("10B", "Computing", 1, "Thu", 29), ("8A", "PE", 2, "Fri", 24)],
    "TT-404": [("7C", "Music", 1, "Fri", 29), ("11A", "Biology", 2, "Mon", 31), ("9B", "German", 1, "Tue", 23)],
    "TT-405": [("8B", "Design", 2, "Wed", 22), ("10C", "Maths", 1, "Thu", 26), ("11C", "Physics", 2, "Mon", 28)],
}


class TimetableInvalid(RuntimeError):
    pass


class PublishRefused(RuntimeError):
    pass


# -- the fake model server's brain --------------------------------------------------------------


def brain(request: Any) -> str:
    msgs = messages_of(request)
    system = system_text(msgs)
    user = msgs[-1]["content"]
    if "department desk" in system:
        reqs = json.loads(user.split("Lesson requests:", 1)[1])
        lines = []
        for r in reqs:
            dept = DEPARTMENT[r["subject"]]
            if FAULT.on("food_to_science") and r["subject"] == "Food Technology":
                dept = "Science"  # "food science" read as a science lesson
            lines.append("  " + json.dumps({"class": r["class"], "subject": r["subject"], "department": dept,
                                             "periods": r["periods"], "day": r["day"]}) + ",")
        return "Here is the plan for this batch:\n[\n" + "\n".join(lines) + "\n]\nLet me know if anything should move."
    if "staff notice" in system:
        grid = json.loads(user.split("Placements:", 1)[1])
        rows = "; ".join(f"{p['class']} {p['subject']} {p['day']} P{'-'.join(map(str, p['periods']))} with "
                         f"{p['teacher_name']} in {p['room']}" for p in grid)
        return f"Timetable changes from next week: {rows}. Please check your personal timetable in the MIS."
    return "Sorry, I can only help with timetabling."


# -- the agent --------------------------------------------------------------------------------


def build(tel: Telemetry, client: OpenAI):
    @tel.tool
    def load_requirements(request_id: str) -> list[dict[str, Any]]:
        return [{"class": c, "subject": s, "periods": p, "day": d, "class_size": n} for c, s, p, d, n in REQUESTS[request_id]]

    @tel.chain
    def parse_plan(text: str) -> list[dict[str, Any]]:
        body = text[text.index("["): text.rindex("]") + 1]
        try:
            return json.loads(body)
        except json.JSONDecodeError:
            if FAULT.on("truncate_repair"):
                # written for answers cut off by the token limit: the last object is taken to be incomplete
                repaired = body[: body.rindex("{")].rstrip().rstrip(",") + "\n]"
            else:
                repaired = re.sub(r",\s*([\]}])", r"\1", body)  # drop trailing commas
            return json.loads(repaired)

    @tel.tool
    def department_roster(department: str, day: str) -> list[dict[str, Any]]:
        out = []
        for t in TEACHERS:
            days = LAST_TERM_DAYS.get(t["id"], t["days"]) if FAULT.on("cached_roster") else t["days"]
            if t["dept"] == department and day in days:
                out.append({"id": t["id"], "name": t["name"], "subjects": t["subjects"], "free_periods": t["free"]})
        return out

    @tel.tool
    def room_lookup(subject: str, min_capacity: int, day: str) -> dict[str, Any]:
        rooms = sorted((r for r in ROOMS if r["type"] == ROOM_TYPE[subject]), key=lambda r: r["capacity"])
        if not FAULT.on("room_any_size"):
            rooms = [r for r in rooms if r["capacity"] >= min_capacity]
        return dict(rooms[0])

    @tel.chain
    def place_lesson(entry: dict[str, Any], roster: list[dict[str, Any]], room: dict[str, Any]) -> dict[str, Any]:
        # a teacher of the subject if the desk has one free, else whoever has most time (the head swaps later)
        teaching = [t for t in roster if entry["subject"] in t["subjects"]] or roster
        teacher = max(teaching, key=lambda t: t["free_periods"])
        periods = [3, 4] if entry["periods"] == 2 else [5]
        return {"class": entry["class"], "subject": entry["subject"], "day": entry["day"], "periods": periods,
                "teacher": teacher["id"], "teacher_name": teacher["name"], "room": room["room"],
                "room_capacity": room["capacity"]}

    @tel.chain
    def assemble_grid(plan: list[dict[str, Any]], placements: list[dict[str, Any]]) -> dict[str, Any]:
        return {"term": "2025-T3", "lessons": placements, "planned": len(plan)}

    @tel.chain
    def validate_grid(grid: dict[str, Any], requirements: list[dict[str, Any]]) -> dict[str, Any]:
        placed = {(p["class"], p["subject"]): p for p in grid["lessons"]}
        for r in requirements:
            p = placed.get((r["class"], r["subject"]))
            if p is None or len(p["periods"]) != r["periods"]:
                raise TimetableInvalid("Timetable validation failed: not every requested lesson has been scheduled")
            if p["room_capacity"] < r["class_size"]:
                raise TimetableInvalid("Timetable validation failed: a room is booked above its fire-safety occupancy")
        return {"lessons": len(placed), "valid": True}

    @tel.tool
    def publish_timetable(grid: dict[str, Any]) -> dict[str, Any]:
        hr = {t["id"]: t for t in TEACHERS}  # the MIS checks staff records as of today
        for p in grid["lessons"]:
            t = hr[p["teacher"]]
            if p["subject"] not in t["subjects"]:
                raise PublishRefused("MIS refused to publish: a lesson is assigned to a teacher without the subject qualification")
            if p["day"] not in t["days"]:
                raise PublishRefused("MIS refused to publish: a teacher is timetabled on a day outside their contract")
        return {"published": len(grid["lessons"]), "version": "2025-T3.v14"}

    def chat(system: str, user: str) -> str:
        r = client.chat.completions.create(model=MODEL, temperature=0, messages=[
            {"role": "system", "content": system}, {"role": "user", "content": user}])
        return r.choices[0].message.content

    def build_batch(request_id: str) -> None:
        with tel.span(NAME, "AGENT", input=f"Schedule timetable change request {request_id}", agent__name=NAME) as root:
            reqs = load_requirements(request_id=request_id)
            plan_text = chat("You plan a timetable batch: for each lesson request choose the department desk that "
                             "staffs it and keep the requested day. Answer with a JSON list.",
                             f"Lesson requests: {json.dumps(reqs)}")
            plan = parse_plan(text=plan_text)
            sizes = {(r["class"], r["subject"]): r["class_size"] for r in reqs}
            placements = []
            for entry in plan:
                roster = department_roster(department=entry["department"], day=entry["day"])
                room = room_lookup(subject=entry["subject"], min_capacity=sizes[(entry["class"], entry["subject"])],
                                   day=entry["day"])
                placements.append(place_lesson(entry=entry, roster=roster, room=room))
            grid = assemble_grid(plan=plan, placements=placements)
            validate_grid(grid=grid, requirements=reqs)
            published = publish_timetable(grid=grid)
            notice = chat("Draft a short staff notice for these timetable changes.",
                          f"Placements: {json.dumps(grid['lessons'])}")
            root.output({"published": published, "notice": notice})

    return build_batch


@contextmanager
def session():
    with FakeModelServer(brain, model=MODEL) as server, Telemetry(NAME) as tel:
        client = OpenAI(base_url=server.base_url, api_key="sk-fake-not-used", max_retries=0)
        run = build(tel, client)

        def record(request_id: str, path: str) -> BaseException | None:
            return tel.record(lambda: run(request_id), path, (TimetableInvalid, PublishRefused))

        yield record


AGENT = Agent(
    name=NAME,
    route="otlp",
    domain="school timetabling",
    summary="load the lesson requests, a model plans the batch (department desk and day per lesson), repair "
    "and parse the plan, per lesson: department roster, room lookup, place; assemble, validate, publish to "
    "the MIS, a model drafts the staff notice",
    features=["loop over lessons", "JSON repair"],
    passing=["TT-401", "TT-402", "TT-403", "TT-404", "TT-405"],
    session=session,
    cases=[
        Case(
            "d-tt-room-capacity",
            "TT-301",
            "room_any_size",
            "tool_ignores_argument",
            "The room lookup ignores min_capacity and returns the smallest chemistry lab (LAB-2, 24 seats) for "
            "10A's 30 pupils; the lesson is placed there and grid validation fails on fire-safety occupancy.",
            [Loc("room_lookup", 2, "LAB-2"), Loc("place_lesson", 2), Loc("assemble_grid"), Loc("validate_grid")],
        ),
        Case(
            "d-tt-cached-roster",
            "TT-302",
            "cached_roster",
            "stale_data",
            "The roster service answers from last term's cache, where Ms Okafor still works Fridays; she is "
            "placed on Friday for 8C Music and the MIS refuses to publish (she is now contracted Mon-Thu).",
            [Loc("department_roster", 1, "Okafor"), Loc("place_lesson", 1), Loc("assemble_grid"),
             Loc("publish_timetable")],
        ),
        Case(
            "d-tt-food-science",
            "TT-303",
            "food_to_science",
            "wrong_routing",
            "The planning model sends 10C's Food Technology lesson to the Science desk; the Science roster is "
            "used, Dr Harlow is placed and the MIS refuses the lesson for lack of the subject qualification.",
            [Loc("ChatCompletion", 1, "\\\"department\\\": \\\"Science\\\""), Loc("parse_plan"),
             Loc("department_roster", 1), Loc("place_lesson", 1), Loc("assemble_grid"), Loc("publish_timetable")],
        ),
        Case(
            "d-tt-json-repair",
            "TT-304",
            "truncate_repair",
            "lossy_parsing",
            "The plan's JSON has trailing commas; the repair (written for answers cut off by the token limit) "
            "treats the last object as incomplete and silently drops the final entry (11C Chemistry); it is never placed and validation finds the batch incomplete.",
            [Loc("parse_plan", 1), Loc("assemble_grid"), Loc("validate_grid")],
        ),
    ],
)
