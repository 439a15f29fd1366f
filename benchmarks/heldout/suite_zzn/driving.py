"""Driving school: builds a learner's lesson plan up to the practical test (langgraph route)."""
from __future__ import annotations

import json
import operator
from typing import Annotated, TypedDict

import kit
from common import block, last_user, parse_block
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.output_parsers import JsonOutputParser
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph

from trajdebug.integrations.langchain import TrajdebugTracer

NAME = "driving-lesson-plans"
ROUTE = "langgraph"
DOMAIN = "a driving school's lesson plans"
SHAPE = "StateGraph: load_profile (fetch_learner tool), plan (llm + JsonOutputParser), per-week loop schedule_week (find_slots, book_car tools), lesson_writer sub-graph per week (draft_notes llm, tidy_notes), validate_plan"

LEARNERS = {
    "L-07": {"name": "Sam Cole", "transmission": "automatic", "hours": 14},
    "L-70": {"name": "Priya Shah", "transmission": "manual", "hours": 9},
    "L-12": {"name": "Tariq Noon", "transmission": "manual", "hours": 20},
    "L-21": {"name": "Hana Ito", "transmission": "automatic", "hours": 6},
    "L-33": {"name": "Owen Pugh", "transmission": "manual", "hours": 11},
    "L-44": {"name": "Zoe Marsh", "transmission": "automatic", "hours": 17},
}
CACHE = {"L-07": {"name": "Sam Cole", "transmission": "manual", "hours": 14, "cached": "2026-01-20"}}
CARS = {"manual": ["MAN-1", "MAN-3"], "automatic": ["AUTO-2", "AUTO-5"]}
TOPICS = ["roundabouts", "dual_carriageway", "parking", "country_roads", "independent_driving", "mock_test"]
MANDATORY = ["roundabouts", "dual_carriageway", "parking", "independent_driving"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"]


CASES = [
    {"id": "zzn_drive_01", "kind": "plan_error", "input": {"learner": "L-12", "weeks": 4, "start_week": 23},
     "root": ("ChatOpenAI", 1), "failure": ("validate_plan", 1),
     "desc": "The planning model schedules the mock test in week 3 and parking after it, so the plan reaches the mock test with parking not yet taught."},
    {"id": "zzn_drive_02", "kind": "truncated_result", "input": {"learner": "L-21", "weeks": 4, "start_week": 24},
     "root": ("find_slots", 4), "failure": ("validate_plan", 1),
     "desc": "find_slots for week 4 returns only the first page of the instructor's diary (one slot), so that week gets one lesson instead of two."},
    {"id": "zzn_drive_03", "kind": "swallowed_error", "input": {"learner": "L-33", "weeks": 4, "start_week": 25},
     "root": ("book_car", 4), "failure": ("validate_plan", 1),
     "desc": "book_car catches the fleet system's CarUnavailable for week 4 and returns a pending booking with no car instead of trying the other car."},
    {"id": "zzn_drive_04", "kind": "stale_data", "input": {"learner": "L-07", "weeks": 4, "start_week": 26},
     "root": ("fetch_learner", 1), "failure": ("validate_plan", 1),
     "desc": "fetch_learner serves Sam Cole's January profile (manual), from before he switched to an automatic, so every lesson gets a manual car."},
    {"id": "zzn_drive_05", "kind": "subagent_wrong_entity", "input": {"learner": "L-07", "weeks": 4, "start_week": 27},
     "root": ("ChatOpenAI", 3), "failure": ("validate_plan", 1),
     "desc": "The lesson-writer sub-agent writes week 2's notes for Priya Shah (L-70) instead of Sam Cole (L-07)."},
]
REFS = [{"learner": "L-70", "weeks": 4, "start_week": 20}, {"learner": "L-44", "weeks": 4, "start_week": 21},
        {"learner": "L-12", "weeks": 4, "start_week": 22}, {"learner": "L-21", "weeks": 4, "start_week": 19}]


def brain(request):
    title, p = parse_block(last_user(request))
    if title == "PLAN":
        weeks = [["roundabouts", "parking"], ["dual_carriageway", "country_roads"],
                 ["independent_driving", "parking"], ["independent_driving", "mock_test"]]
        if kit.on("zzn_drive_01"):
            weeks = [["roundabouts", "dual_carriageway"], ["country_roads", "independent_driving"],
                     ["mock_test", "country_roads"], ["parking", "independent_driving"]]
        return json.dumps({"learner": p["learner"], "weeks": weeks[: p["weeks"]]})
    if title == "NOTES":
        who, lid = p["learner_name"], p["learner"]
        if kit.on("zzn_drive_05") and p["week"] == 2:
            who, lid = LEARNERS["L-70"]["name"], "L-70"
        return json.dumps({"learner": lid, "to": who, "notes": f"Week {p['week']}: " + ", ".join(p["topics"])})
    raise ValueError(title)


@tool
def fetch_learner(learner: str) -> dict:
    """Learner profile from the booking system."""
    if kit.on("zzn_drive_04") and learner in CACHE:
        return {"id": learner, **CACHE[learner]}
    return {"id": learner, **LEARNERS[learner], "as_of": "2026-06-01"}


@tool
def find_slots(learner: str, week: int) -> list:
    """Free instructor slots in a week."""
    slots = [f"W{week}-{d}-{h}" for d, h in [("Mon", 10), ("Wed", 14), ("Fri", 9)]]
    if kit.on("zzn_drive_02") and week == 4:
        slots = slots[:1]
    return slots


class CarUnavailable(Exception):
    pass


@tool
def book_car(transmission: str, week: int) -> dict:
    """Book a dual-control car for a week's lessons."""
    cars = CARS[transmission]
    try:
        if week == 4 and kit.on("zzn_drive_03"):
            raise CarUnavailable(f"{cars[0]} in for service")
        return {"car": cars[week % 2], "status": "booked"}
    except CarUnavailable:
        return {"car": None, "status": "pending"}


class S(TypedDict, total=False):
    request: dict
    profile: dict
    plan: dict
    week: int
    weeks: Annotated[list, operator.add]
    notes: Annotated[list, operator.add]
    lesson_in: dict


class W(TypedDict, total=False):
    lesson_in: dict
    draft: dict
    notes: list


def build(llm):
    parser = JsonOutputParser()

    def load_profile(s: S) -> dict:
        return {"profile": fetch_learner.invoke({"learner": s["request"]["learner"]}), "week": 1}

    def plan(s: S) -> dict:
        msgs = [SystemMessage("Plan weekly driving lessons up to the practical test."),
                HumanMessage(block("PLAN", learner=s["profile"]["id"], hours=s["profile"]["hours"],
                                   weeks=s["request"]["weeks"], topics=TOPICS))]
        return {"plan": (llm | parser).invoke(msgs)}

    def schedule_week(s: S) -> dict:
        w = s["week"]
        slots = find_slots.invoke({"learner": s["profile"]["id"], "week": w})
        car = book_car.invoke({"transmission": s["profile"]["transmission"], "week": w})
        topics = s["plan"]["weeks"][w - 1]
        lessons = [{"slot": slot, "topic": t, "car": car["car"]} for slot, t in zip(slots, topics)]
        return {"weeks": [{"week": w, "lessons": lessons}],
                "lesson_in": {"learner": s["profile"]["id"], "learner_name": s["profile"]["name"], "week": w,
                              "topics": [ls["topic"] for ls in lessons]}}

    def draft_notes(s: W) -> dict:
        return {"draft": (llm | parser).invoke([HumanMessage(block("NOTES", **s["lesson_in"]))])}

    def tidy_notes(s: W) -> dict:
        d = s["draft"]
        return {"notes": [{"week": s["lesson_in"]["week"], "learner": d["learner"], "to": d["to"], "text": d["notes"]}]}

    sub = StateGraph(W)
    sub.add_node("draft_notes", draft_notes)
    sub.add_node("tidy_notes", tidy_notes)
    sub.add_edge(START, "draft_notes")
    sub.add_edge("draft_notes", "tidy_notes")
    sub.add_edge("tidy_notes", END)
    writer = sub.compile()

    def lesson_writer(s: S) -> dict:
        out = writer.invoke({"lesson_in": s["lesson_in"]})
        return {"notes": out["notes"], "week": s["week"] + 1}

    def next_week(s: S) -> str:
        return "schedule_week" if s["week"] <= s["request"]["weeks"] else "validate_plan"

    def validate_plan(s: S) -> dict:
        lid = s["request"]["learner"]
        truth = LEARNERS[lid]
        taught = []
        for wk in s["weeks"]:
            if len(wk["lessons"]) != 2:
                raise ValueError(f"week {wk['week']} has {len(wk['lessons'])} lesson(s); the plan needs 2")
            for ls in wk["lessons"]:
                if ls["car"] is None:
                    raise ValueError(f"lesson {ls['slot']} has no dual-control car booked")
                if ls["car"] not in CARS[truth["transmission"]]:
                    raise ValueError(f"lesson {ls['slot']} uses car {ls['car']}, but {lid} learns in an {truth['transmission']}")
                if ls["topic"] == "mock_test":
                    missing = [t for t in MANDATORY if t not in taught]
                    if missing:
                        raise ValueError(f"mock test in week {wk['week']} before {missing} were taught")
                taught.append(ls["topic"])
        for n in s["notes"]:
            if n["learner"] != lid:
                raise ValueError(f"week {n['week']} notes are for {n['to']} ({n['learner']}), not {truth['name']} ({lid})")
        return {}

    g = StateGraph(S)
    for name, fn in [("load_profile", load_profile), ("plan", plan), ("schedule_week", schedule_week),
                     ("lesson_writer", lesson_writer), ("validate_plan", validate_plan)]:
        g.add_node(name, fn)
    g.add_edge(START, "load_profile")
    g.add_edge("load_profile", "plan")
    g.add_edge("plan", "schedule_week")
    g.add_edge("schedule_week", "lesson_writer")
    g.add_conditional_edges("lesson_writer", next_week, ["schedule_week", "validate_plan"])
    g.add_edge("validate_plan", END)
    return g.compile()


def record(inp, path, server):
    server.use(brain)
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model="fake-model", max_retries=0)
    tracer = TrajdebugTracer(path=str(path), name=NAME, task=f"plan {inp['weeks']} weeks of lessons for {inp['learner']}")
    build(llm).invoke({"request": inp}, config={"callbacks": [tracer], "recursion_limit": 80})
