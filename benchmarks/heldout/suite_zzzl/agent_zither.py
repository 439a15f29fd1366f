"""Zither school front desk: a LangGraph router graph, a retriever, and a per-student loop of seat registrations."""

from __future__ import annotations

import json

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "salzkammer-zither-desk"
ROUTE = "langgraph"
DOMAIN = "zither school"
SHAPE = "LangGraph router: model classifies the message, parse node, routing function to an enrolment or a lesson-move branch; enrolment = calendar tool, syllabus retriever, class assignment, graph loop of seat registrations (one node visit per student), welcome e-mail; 10-20 steps"
ON: set[str] = set()

STUDENTS = {
    "Mila Huber": {"age": 9, "grade": 0}, "Jonas Egger": {"age": 12, "grade": 2}, "Lena Moser": {"age": 15, "grade": 3},
    "Paul Gruber": {"age": 11, "grade": 0}, "Anna Wimmer": {"age": 34, "grade": 1}, "Felix Bauer": {"age": 10, "grade": 1},
    "Clara Steiner": {"age": 13, "grade": 2},
}
INPUTS = [
    {"message": "Please enrol Mila Huber and Paul Gruber in the Saturday beginners' zither class.", "students": ["Mila Huber", "Paul Gruber"], "intent": "enrol", "level": 0},
    {"message": "Jonas Egger and Clara Steiner want to join a grade 2 ensemble this spring.", "students": ["Jonas Egger", "Clara Steiner"], "intent": "enrol", "level": 2},
    {"message": "Can Anna Wimmer move her Thursday lesson to Friday?", "students": ["Anna Wimmer"], "intent": "move", "level": 1},
    {"message": "Enrol Felix Bauer, Anna Wimmer and Mila Huber? No - just Felix Bauer and Anna Wimmer in grade 1.", "students": ["Felix Bauer", "Anna Wimmer"], "intent": "enrol", "level": 1},
    {"message": "Lena Moser would like the grade 3 concert class.", "students": ["Lena Moser"], "intent": "enrol", "level": 3},
]
SYLLABI = {0: ("Beginners, Saturday 09:00, room A", "A"), 1: ("Grade 1, Wednesday 17:00, room B", "B"), 2: ("Grade 2 ensemble, Tuesday 18:00, room B", "B"), 3: ("Grade 3 concert class, Friday 18:30, room C", "C")}
ROOM_SEATS = {"A": 8, "B": 6, "C": 4}
LESSONS = {"Anna Wimmer": [{"day": "Thursday", "time": "16:00", "teacher": "Frau Pichler"}]}

CASES = [
    {"id": "zith-01", "input": 0, "switch": "a", "kind": "wrong_routing", "root": ("route_request", 1, "other"), "failure": ("move_lesson", 1),
     "description": "The router sends an enrolment request down the lesson-move branch, which finds no lessons to move for the new students."},
    {"id": "zith-02", "input": 3, "switch": "b", "kind": "wrong_retrieval", "root": ("SyllabusIndex", 1, "retrieval"), "failure": ("class_register", 1),
     "description": "The syllabus search for grade 1 returns the grade 3 concert class, so the register refuses the first student for being below the class's grade."},
    {"id": "zith-03", "input": 1, "switch": "c", "kind": "off_by_one", "root": ("assign_class", 1, "other"), "failure": ("class_register", 2),
     "description": "Seat numbers are handed out from the count of seats taken plus two instead of plus one, so the last student gets seat 7 in a six-seat room."},
    {"id": "zith-04", "input": 4, "switch": "d", "kind": "stale_data", "root": ("term_calendar", 1, "tool"), "failure": ("class_register", 1),
     "description": "The term calendar answers from last year's cache, giving the autumn 2026 term whose enrolment has closed, and the register refuses the seat."},
    {"id": "zith-05", "input": 1, "switch": "e", "kind": "hallucinated_value", "root": ("ChatOpenAI", 1, "llm"), "failure": ("class_register", 1),
     "description": "The model classifying the message states grade 4 for the request although the message asks for grade 2, so the syllabus search lands on the grade 3 concert class and the register refuses the first student."},
]


def policy(request):
    msgs = request.body["messages"]
    text = msgs[-1]["content"]
    inp = next(i for i in INPUTS if i["message"] == text)
    level = inp["level"]
    if "e" in ON:
        level = 4
    return json.dumps({"intent": inp["intent"], "students": inp["students"], "level": level})


class DeskState(TypedDict, total=False):
    message: str
    reply: str
    request: dict
    term: dict
    syllabus: list
    pending: list
    seated: list
    welcome: dict
    moved: dict


class SyllabusIndex(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        level = int(query.rsplit(" ", 1)[1])
        if "b" in ON:
            level = 3
        level = min(level, max(SYLLABI))  # the nearest syllabus the school teaches
        title, room = SYLLABI[level]
        return [Document(page_content=title, metadata={"grade": level, "room": room})]


@tool
def term_calendar(school_year: str) -> dict:
    """The term currently open for enrolment."""
    if "d" in ON:
        return {"term": "autumn 2026", "enrolment_open": True, "starts": "2026-09-14"}
    return {"term": "spring 2027", "enrolment_open": True, "starts": "2027-02-22"}


@tool
def class_register(student: str, course: str, grade: int, room: str, seat: int, term: str) -> dict:
    """Register a student on a seat in a class for a term."""
    if term != "spring 2027":
        raise PermissionError(f"register: enrolment for {term} is closed")
    if seat > ROOM_SEATS[room]:
        raise IndexError(f"register: room {room} has {ROOM_SEATS[room]} seats, no seat {seat}")
    on_file = STUDENTS[student]["grade"]
    if on_file < grade:
        raise ValueError(f"register: {student} holds grade {on_file}, {course} needs grade {grade}")
    return {"student": student, "course": course, "seat": seat}


@tool
def email_parent(students: list[str], course: str) -> dict:
    """Send the welcome pack."""
    return {"sent": len(students), "course": course}


@tool
def find_lessons(student: str) -> list:
    """A student's booked lessons."""
    return LESSONS.get(student, [])


@tool
def move_lesson(student: str, lessons: list, to_day: str) -> dict:
    """Move a student's lesson to another day."""
    if not lessons:
        raise LookupError(f"no booked lessons for {student} to move")
    return {"student": student, "from": lessons[0]["day"], "to": to_day}


def build(llm):
    retriever = SyllabusIndex()

    def classify(state: DeskState) -> dict:
        answer = llm.invoke([SystemMessage("Classify the front-desk message as JSON: intent, students, level."), HumanMessage(state["message"])])
        return {"reply": answer.content}

    def read_intent(state: DeskState) -> dict:
        return {"request": json.loads(state["reply"])}

    def route_request(state: DeskState) -> str:
        intent = state["request"]["intent"]
        if "a" in ON:
            intent = "move"
        return "term_dates" if intent == "enrol" else "lookup_lessons"

    def term_dates(state: DeskState) -> dict:
        return {"term": term_calendar.invoke({"school_year": "2026/27"})}

    def find_syllabus(state: DeskState) -> dict:
        docs = retriever.invoke(f"syllabus grade {state['request']['level']}")
        return {"syllabus": [{"title": d.page_content, **d.metadata} for d in docs]}

    def assign_class(state: DeskState) -> dict:
        course = state["syllabus"][0]
        taken = ROOM_SEATS[course["room"]] - len(state["request"]["students"])
        step = 2 if "c" in ON else 1
        pending = [{"student": s, "seat": taken + i + step, "course": course["title"], "grade": course["grade"], "room": course["room"]}
                   for i, s in enumerate(state["request"]["students"])]
        return {"pending": pending, "seated": []}

    def seat_student(state: DeskState) -> dict:
        nxt, rest = state["pending"][0], state["pending"][1:]
        done = class_register.invoke({**nxt, "term": state["term"]["term"]})
        return {"pending": rest, "seated": state["seated"] + [done]}

    def more_students(state: DeskState) -> str:
        return "seat_student" if state["pending"] else "send_welcome"

    def send_welcome(state: DeskState) -> dict:
        return {"welcome": email_parent.invoke({"students": [s["student"] for s in state["seated"]], "course": state["seated"][0]["course"]})}

    def lookup_lessons(state: DeskState) -> dict:
        student = state["request"]["students"][0]
        return {"moved": {"student": student, "lessons": find_lessons.invoke({"student": student})}}

    def confirm_move(state: DeskState) -> dict:
        m = state["moved"]
        return {"moved": move_lesson.invoke({"student": m["student"], "lessons": m["lessons"], "to_day": "Friday"})}

    g = StateGraph(DeskState)
    for fn in (classify, read_intent, term_dates, find_syllabus, assign_class, seat_student, send_welcome, lookup_lessons, confirm_move):
        g.add_node(fn.__name__, fn)
    g.add_edge(START, "classify")
    g.add_edge("classify", "read_intent")
    g.add_conditional_edges("read_intent", route_request, ["term_dates", "lookup_lessons"])
    g.add_edge("term_dates", "find_syllabus")
    g.add_edge("find_syllabus", "assign_class")
    g.add_edge("assign_class", "seat_student")
    g.add_conditional_edges("seat_student", more_students, ["seat_student", "send_welcome"])
    g.add_edge("send_welcome", END)
    g.add_edge("lookup_lessons", "confirm_move")
    g.add_edge("confirm_move", END)
    return g.compile()


def record(inp: dict, path, ctx) -> None:
    llm = ChatOpenAI(base_url=ctx.server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=inp["message"])
    try:
        build(llm).invoke({"message": inp["message"]}, config={"callbacks": [tracer]})
    except Exception:
        pass
