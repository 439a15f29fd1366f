"""Abacus tutoring centre: enrols a student into a lesson package, picks a track, plans and books the weeks.

Route: a LangGraph StateGraph with ChatOpenAI against the fake server, recorded with TrajdebugTracer.
State lives in the graph's state; routing is a conditional edge on the placement node's answer.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any, TypedDict

from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

import suite_common as sc

RUN_NAME = "abacus-centre-enrolment"
ROUTE = "langgraph"
DOMAIN = "abacus tutoring centre's lessons"
SHAPE = "StateGraph: records lookup -> model intake -> parser -> placement -> branch to one of two track nodes (catalogue tool) -> model lesson plan -> calendar -> per-week room booking tool loop -> invoice -> enrolment check (18-25 steps)"
ACTIVE = None

INPUTS = [
    {"student_id": "S-51", "request": "Enrol Mia Okafor (S-51) in the 8-lesson package, Saturdays from 2027-01-09. Placement score 72."},
    {"student_id": "S-52", "request": "Enrol Tom Berg (S-52) in the 6-lesson package, Wednesdays from 2027-01-13. Placement score 35."},
    {"student_id": "S-53", "request": "Enrol Lena Okafor (S-53) in the 10-lesson package, Mondays from 2027-01-11. Placement score 58."},
    {"student_id": "S-54", "request": "Enrol Ravi Nair (S-54) in the 4-lesson package, Fridays from 2027-01-15. Placement score 81."},
    {"student_id": "S-55", "request": "Enrol Ana Ruiz (S-55) in the 8-lesson package, Tuesdays from 2027-01-12. Placement score 44."},
]

RECORDS = {
    "S-51": {"name": "Mia Okafor", "surname": "Okafor", "age": 11, "passed": "I1", "notes": "Mia Okafor, age 11, strong on carries."},
    "S-52": {"name": "Tom Berg", "surname": "Berg", "age": 7, "passed": "none", "notes": "Tom Berg, age 7, first abacus."},
    "S-53": {"name": "Lena Okafor", "surname": "Okafor", "age": 9, "passed": "B3", "notes": "Lena Okafor, age 9, finger technique settled."},
    "S-54": {"name": "Ravi Nair", "surname": "Nair", "age": 13, "passed": "I4", "notes": "Ravi Nair, age 13, competition practice."},
    "S-55": {"name": "Ana Ruiz", "surname": "Ruiz", "age": 8, "passed": "B2", "notes": "Ana Ruiz, age 8, needs slower pace."},
}
CATALOGUE = {
    "beginner": [f"B{i}" for i in range(1, 11)],
    "intermediate": [f"I{i}" for i in range(1, 11)],
}
RATE_PER_HOUR = 28.0

CASES = [
    {"id": "zzzf_abacus_01", "input": 2, "switch": "sibling_notes", "fault_kind": "context_pollution",
     "root": ("load_history", 1), "failure": "enrolment_check",
     "description": "The history lookup gathers the notes of every student with the same surname, so the intake model reads the sibling's notes and states her age instead of the student's."},
    {"id": "zzzf_abacus_02", "input": 0, "switch": "band_edge", "fault_kind": "wrong_routing",
     "root": ("place_level", 1), "failure": "enrolment_check",
     "description": "Placement compares the score against the band for the next level up, so a student who passed I1 is sent down the beginner track."},
    {"id": "zzzf_abacus_03", "input": 4, "switch": "week_range", "fault_kind": "off_by_one",
     "root": ("plan_calendar", 1), "failure": "enrolment_check",
     "description": "The calendar counts lesson dates from the second week of the package, so one lesson of the eight is never dated or booked."},
    {"id": "zzzf_abacus_04", "input": 3, "switch": "minutes_text", "fault_kind": "format_drift",
     "root": ("ChatOpenAI", 2), "failure": "invoice",
     "description": "The lesson-plan model writes each lesson's length as a text such as '45 min' instead of a number of minutes, and the invoice cannot add it up."},
    {"id": "zzzf_abacus_05", "input": 1, "switch": "catalogue_page", "fault_kind": "truncated_result",
     "root": ("fetch_catalogue", 1), "failure": "enrolment_check",
     "description": "The catalogue tool returns only its first page of four modules, so a six-lesson plan has only four lessons."},
]


class Enrolment(TypedDict, total=False):
    request: str
    student_id: str
    history: str
    intake_reply: str
    student: dict
    track: str
    catalogue: list
    plan: list
    dates: list
    bookings: list
    invoice: dict


def policy(request):
    system = sc.system_of(request)
    user = sc.last_user(request)
    if system.startswith("Read the enrolment"):
        ages = re.findall(r"age (\d+)", user)
        age = int(ages[-1]) if ages else None
        lessons = int(re.search(r"(\d+)-lesson", user).group(1))
        day = re.search(r"(\w+)days from", user).group(1)
        start = re.search(r"from (\d{4}-\d{2}-\d{2})", user).group(1)
        score = int(re.search(r"score (\d+)", user).group(1))
        return json.dumps({"age": age, "lessons": lessons, "weekday": day, "start": start, "score": score})
    if system.startswith("Write a lesson plan"):
        data = json.loads(user)
        mins = 45 if data["age"] >= 10 else 30
        plan = [{"lesson": i + 1, "module": m, "minutes": f"{mins} min" if ACTIVE == "minutes_text" else mins}
                for i, m in enumerate(data["modules"][: data["lessons"]])]
        return json.dumps(plan)
    return "{}"


@tool
def fetch_catalogue(track: str) -> list:
    """Modules of a track, in teaching order."""
    mods = CATALOGUE[track]
    return mods[:4] if ACTIVE == "catalogue_page" else list(mods)


@tool
def reserve_room(date: str, minutes: int) -> dict:
    """Reserves a practice room for one lesson."""
    room = "Room " + "ABC"[dt.date.fromisoformat(date).toordinal() % 3]
    return {"date": date, "room": room, "minutes": minutes}


def build_graph(llm):
    def load_history(state: Enrolment) -> dict:
        sid = state["student_id"]
        rec = RECORDS[sid]
        if ACTIVE == "sibling_notes":
            notes = [r["notes"] for r in RECORDS.values() if r["surname"] == rec["surname"]]
            notes.sort(key=lambda n: n != rec["notes"])
        else:
            notes = [rec["notes"]]
        return {"history": "\n".join(notes)}

    def intake(state: Enrolment, config) -> dict:
        msgs = [("system", "Read the enrolment request and the student's notes; answer JSON with age, lessons, weekday, start, score."),
                ("user", f"Notes:\n{state['history']}\n\nRequest: {state['request']}")]
        return {"intake_reply": llm.invoke(msgs, config).content}

    def parse_intake(state: Enrolment) -> dict:
        data = json.loads(state["intake_reply"])
        return {"student": {"id": state["student_id"], **data}}

    def place_level(state: Enrolment) -> dict:
        score = state["student"]["score"]
        threshold = 75 if ACTIVE == "band_edge" else 55
        return {"track": "intermediate" if score >= threshold else "beginner"}

    def beginner_track(state: Enrolment, config) -> dict:
        return {"catalogue": fetch_catalogue.invoke({"track": "beginner"}, config)}

    def intermediate_track(state: Enrolment, config) -> dict:
        return {"catalogue": fetch_catalogue.invoke({"track": "intermediate"}, config)}

    def lesson_plan(state: Enrolment, config) -> dict:
        st = state["student"]
        passed = RECORDS[st["id"]]["passed"]
        mods = [m for m in state["catalogue"] if passed == "none" or m[0] != passed[0] or int(m[1:]) > int(passed[1:])]
        payload = json.dumps({"age": st["age"], "lessons": st["lessons"], "modules": mods})
        msgs = [("system", "Write a lesson plan: JSON list of lessons with lesson, module, minutes."), ("user", payload)]
        reply = llm.invoke(msgs, config).content
        return {"plan": json.loads(reply)}

    def plan_calendar(state: Enrolment) -> dict:
        st = state["student"]
        start = dt.date.fromisoformat(st["start"])
        first = 1 if ACTIVE == "week_range" else 0
        dates = [(start + dt.timedelta(weeks=w)).isoformat() for w in range(first, st["lessons"])]
        return {"dates": dates}

    def book_rooms(state: Enrolment, config) -> dict:
        out = []
        for date, lesson in zip(state["dates"], state["plan"]):
            out.append(reserve_room.invoke({"date": date, "minutes": lesson["minutes"] if isinstance(lesson["minutes"], int) else 45}, config))
        return {"bookings": out}

    def invoice(state: Enrolment) -> dict:
        minutes = sum(int(lesson["minutes"]) for lesson in state["plan"])
        return {"invoice": {"student": state["student"]["id"], "minutes": minutes,
                            "amount_eur": round(minutes / 60 * RATE_PER_HOUR, 2)}}

    def enrolment_check(state: Enrolment) -> dict:
        st = state["student"]
        rec = RECORDS[st["id"]]
        if st["age"] != rec["age"]:
            raise ValueError(f"intake gives {rec['name']} age {st['age']}, enrolment form says {rec['age']}")
        first = state["plan"][0]["module"]
        if rec["passed"] != "none" and first[0] != rec["passed"][0] and first < rec["passed"]:
            raise ValueError(f"{rec['name']} passed {rec['passed']} but the plan starts at {first}")
        if len(state["plan"]) != st["lessons"]:
            raise ValueError(f"{len(state['plan'])} lessons planned for a {st['lessons']}-lesson package")
        if len(state["bookings"]) != st["lessons"]:
            raise ValueError(f"{len(state['bookings'])} rooms booked for a {st['lessons']}-lesson package")
        return {}

    g = StateGraph(Enrolment)
    for fn in (load_history, intake, parse_intake, place_level, beginner_track, intermediate_track, lesson_plan,
               plan_calendar, book_rooms, invoice, enrolment_check):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "load_history")
    g.add_edge("load_history", "intake")
    g.add_edge("intake", "parse_intake")
    g.add_edge("parse_intake", "place_level")
    g.add_conditional_edges("place_level", lambda s: s["track"] + "_track", ["beginner_track", "intermediate_track"])
    g.add_edge("beginner_track", "lesson_plan")
    g.add_edge("intermediate_track", "lesson_plan")
    g.add_edge("lesson_plan", "plan_calendar")
    g.add_edge("plan_calendar", "book_rooms")
    g.add_edge("book_rooms", "invoice")
    g.add_edge("invoice", "enrolment_check")
    g.add_edge("enrolment_check", END)
    return g.compile()


def record(inp: dict, path: str) -> None:
    llm = sc.chat_model()
    tracer = TrajdebugTracer(path=path, name=RUN_NAME, task=f"enrol {inp['student_id']}")
    build_graph(llm).invoke({"request": inp["request"], "student_id": inp["student_id"]}, config={"callbacks": [tracer]})
