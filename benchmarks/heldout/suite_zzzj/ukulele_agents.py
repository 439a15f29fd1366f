"""Ukulele school: enrolment through the OpenAI Agents SDK (Chat Completions against the fake server).

Shape: front-desk agent (student lookup tool) hands off to the enrolment agent, which works through a
course search, a seat check, a size adviser, a loaner reservation and the enrolment tool (the school's
system, which rejects an enrolment it cannot honour and so ends the run).
"""
from __future__ import annotations

import ast
import asyncio
import json

from suitecommon import read_prompt

RUN_NAME = "ukulele-school-enrolment"
ROUTE = "openai_agents"
DOMAIN = "ukulele school"
SHAPE = "two agents with a hand-off; one tool per model turn (6-7 turns); enrolment tool raises on the school's rules"

ACTIVE = ""

STUDENTS = {
    "S-104": "Name: Maya Chen | Age: 9 | Level: beginner | Days: Tue, Thu",
    "S-221": "Name: Oliver Grant | Age: 12 | Level: improver | Days: Sat",
    "S-309": "Name: Aiko Tanaka | Age: 15 | Level: grade 3 | Days: Wed",
    "S-417": "Name: Ruben Alves | Age: 7 | Level: beginner | Days: Sat",
    "S-502": "Name: Nora Lindholm | Age: 10 | Level: improver | Days: Tue",
}
COURSES = [
    {"course": "UK-BEG-TUE", "level": "beginner", "day": "Tue", "min_age": 6, "size": "soprano", "seats": 12, "taken": 9},
    {"course": "UK-BEG-SAT", "level": "beginner", "day": "Sat", "min_age": 6, "size": "soprano", "seats": 12, "taken": 7},
    {"course": "UK-IMP-SAT", "level": "improver", "day": "Sat", "min_age": 10, "size": "concert", "seats": 10, "taken": 6},
    {"course": "UK-IMP-TUE", "level": "improver", "day": "Tue", "min_age": 10, "size": "concert", "seats": 10, "taken": 9},
    {"course": "UK-G3-WED", "level": "grade 3", "day": "Wed", "min_age": 12, "size": "tenor", "seats": 8, "taken": 5},
]
REGISTER_CACHE = {"S-221": "Name: Oliver Grant | Age: 11 | Level: beginner | Days: Sat"}
LOANERS = {"soprano": "L-12", "concert": "L-31", "tenor": "L-47"}

INPUTS = [
    {"student": "S-104", "request": "Please enrol S-104 in a beginner group class on Tuesday and lend a ukulele."},
    {"student": "S-221", "request": "Please enrol S-221 in an improver group class on Saturday and lend a ukulele."},
    {"student": "S-309", "request": "Please enrol S-309 in a grade 3 group class on Wednesday and lend a ukulele."},
    {"student": "S-417", "request": "Please enrol S-417 in a beginner group class on Saturday and lend a ukulele."},
    {"student": "S-502", "request": "Please enrol S-502 in an improver group class on Tuesday and lend a ukulele."},
]
CASES = [
    {"id": "uku_course_day", "input": 0, "switch": "day_ignored", "kind": "tool_ignores_argument",
     "root": ("list_courses", 1), "failure": ("enrol_student", 1),
     "description": "The course search ignores the requested day and offers the Saturday beginner group to a student free only on Tuesday and Thursday."},
    {"id": "uku_size_age", "input": 4, "switch": "size_boundary", "kind": "off_by_one",
     "root": ("size_advice", 1), "failure": ("enrol_student", 1),
     "description": "The size adviser starts concert size above age 10 instead of at 10, so a 10-year-old improver gets a soprano."},
    {"id": "uku_register_cache", "input": 1, "switch": "register_cache", "kind": "stale_data",
     "root": ("find_student", 1), "failure": ("enrol_student", 1),
     "description": "The student lookup answers from last year's register copy, where the student was still an 11-year-old beginner."},
    {"id": "uku_loaner_size", "input": 2, "switch": "loaner_soprano", "kind": "wrong_tool_args",
     "root": ("generation fake-model", 6), "failure": ("enrol_student", 1),
     "description": "The enrolment model reserves a soprano loaner although the size adviser answered tenor."},
    {"id": "uku_level_parse", "input": 3, "switch": "level_dropped", "kind": "lossy_parsing",
     "root": ("find_student", 1), "failure": ("enrol_student", 1),
     "description": "The student lookup drops the record's level field and guesses the level from the age band, so a 7-year-old beginner is matched to the improver group."},
]


def find_student_impl(student: str) -> dict:
    line = STUDENTS[student]
    if ACTIVE == "register_cache":
        line = REGISTER_CACHE.get(student, line)
    fields = dict(part.split(": ", 1) for part in line.split(" | "))
    record = {"student": student, "name": fields["Name"], "age": int(fields["Age"]), "level": fields["Level"],
              "days": fields["Days"].split(", ")}
    if ACTIVE == "level_dropped":
        record["level"] = "improver" if record["age"] >= 7 else "beginner"  # level read from age bands only
    return record


def list_courses_impl(level: str, day: str) -> list[dict]:
    hits = [c for c in COURSES if c["level"] == level]
    if ACTIVE != "day_ignored":
        hits = [c for c in hits if c["day"] == day]
    else:
        hits = sorted(hits, key=lambda c: c["day"] != "Sat")
    return [{k: c[k] for k in ("course", "level", "day", "min_age", "size")} for c in hits[:1]]


def check_seats_impl(course: str) -> dict:
    c = next(c for c in COURSES if c["course"] == course)
    return {"course": course, "free": c["seats"] - c["taken"]}


def size_advice_impl(age: int) -> dict:
    if age >= 14:
        return {"age": age, "size": "tenor"}
    concert = age > 10 if ACTIVE == "size_boundary" else age >= 10
    return {"age": age, "size": "concert" if concert else "soprano"}


def enrol_impl(student: str, course: str, loaner: str) -> dict:
    fields = dict(part.split(": ", 1) for part in STUDENTS[student].split(" | "))
    c = next(c for c in COURSES if c["course"] == course)
    size = next(s for s, lid in LOANERS.items() if lid == loaner)
    if c["day"] not in fields["Days"].split(", "):
        raise ValueError(f"{course} meets on {c['day']}; {student} can attend only on {fields['Days']}")
    if int(fields["Age"]) < c["min_age"]:
        raise ValueError(f"{course} starts at age {c['min_age']}; {student} is {fields['Age']}")
    if c["level"] != fields["Level"]:
        raise ValueError(f"{student} is on file as {fields['Level']}; {course} is a {c['level']} group")
    if c["seats"] - c["taken"] <= 0:
        raise ValueError(f"{course} is full ({c['taken']}/{c['seats']} seats taken)")
    if size != c["size"]:
        raise ValueError(f"loaner {loaner} is a {size}; {course} plays on {c['size']} ukuleles")
    return {"enrolled": student, "course": course, "loaner": loaner, "first_lesson": c["day"]}


def _outputs(request) -> dict:
    names, out = {}, {}
    for m in request.body["messages"]:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m["role"] == "tool":
            content = m["content"]
            try:
                value = ast.literal_eval(content)
            except (ValueError, SyntaxError):
                value = content
            out.setdefault(names.get(m["tool_call_id"], "?"), []).append(value)
    return out


def policy(request):
    from trajdebug.testing import Reply, tool_call

    system, _ = read_prompt(request)
    user = [m for m in request.body["messages"] if m["role"] == "user"][0]["content"]
    req = json.loads(user)
    got = _outputs(request)
    if system.startswith("You are the front desk"):
        if "find_student" not in got:
            return Reply(tool_calls=(tool_call("find_student", {"student": req["student"]}),))
        return Reply(tool_calls=(tool_call("transfer_to_enrolment_desk", {}),))
    if system.startswith("You are the enrolment desk"):
        student = got["find_student"][0]
        wanted_day = next(d for d in ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat") if d in req["request"].replace("Tuesday", "Tue").replace("Saturday", "Sat").replace("Wednesday", "Wed"))
        if "list_courses" not in got:
            return Reply(tool_calls=(tool_call("list_courses", {"level": student["level"], "day": wanted_day}),))
        course = got["list_courses"][0][0]
        if "check_seats" not in got:
            return Reply(tool_calls=(tool_call("check_seats", {"course": course["course"]}),))
        if "size_advice" not in got:
            return Reply(tool_calls=(tool_call("size_advice", {"age": student["age"]}),))
        if "reserve_loaner" not in got:
            size = got["size_advice"][0]["size"]
            if ACTIVE == "loaner_soprano":
                size = "soprano"
            return Reply(tool_calls=(tool_call("reserve_loaner", {"size": size}),))
        if "enrol_student" not in got:
            return Reply(tool_calls=(tool_call("enrol_student", {"student": student["student"], "course": course["course"],
                                                                  "loaner": got["reserve_loaner"][0]["loaner"]}),))
        done = got["enrol_student"][0]
        return f"{student['name']} is enrolled in {done['course']} with loaner {done['loaner']}; first lesson on {done['first_lesson']}."
    raise ValueError(f"no answer for {system[:40]}")


def build(model):
    from agents import Agent, function_tool, handoff

    @function_tool
    def find_student(student: str) -> dict:
        """Student record from the school's register."""
        return find_student_impl(student)

    @function_tool
    def list_courses(level: str, day: str) -> list:
        """Group courses for a level on a weekday."""
        return list_courses_impl(level, day)

    @function_tool
    def check_seats(course: str) -> dict:
        """Free seats in a course."""
        return check_seats_impl(course)

    @function_tool
    def size_advice(age: int) -> dict:
        """Ukulele size for a student's age."""
        return size_advice_impl(age)

    @function_tool
    def reserve_loaner(size: str) -> dict:
        """Reserve a loaner ukulele of a size."""
        return {"size": size, "loaner": LOANERS[size]}

    @function_tool(failure_error_function=None)
    def enrol_student(student: str, course: str, loaner: str) -> dict:
        """Enrol the student in the school's system."""
        return enrol_impl(student, course, loaner)

    desk = Agent(name="enrolment_desk", model=model,
                 instructions="You are the enrolment desk: find a course, check seats, advise a size, reserve a loaner, enrol.",
                 tools=[list_courses, check_seats, size_advice, reserve_loaner, enrol_student])
    front = Agent(name="front_desk", model=model, instructions="You are the front desk of the ukulele school: look the student up, then hand over.",
                  tools=[find_student], handoffs=[handoff(desk)])
    return front


def record(server, inp: dict, path: str) -> None:
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    server.use(policy)
    processor = TrajdebugProcessor(path=path, name=RUN_NAME, task=f"enrolment {inp['student']}")

    async def go():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            model = OpenAIChatCompletionsModel(model=server.model, openai_client=client)
            await Runner.run(build(model), json.dumps(inp), run_config=RunConfig(workflow_name=RUN_NAME))
        finally:
            await client.close()

    set_trace_processors([processor])
    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])
