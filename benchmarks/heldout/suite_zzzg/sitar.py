"""Sitar school enrolments: an OpenAI Agents SDK front desk that hands students off to a teaching desk.

Shape: front_desk (tool lookup_student) -> hand-off to beginners_desk or advanced_desk -> list_classes ->
enrol_student -> send_welcome_pack (the school's calendar invite, raises on what it cannot read); the
enrolment system itself refuses a class that does not fit the student (raises).
"""

from __future__ import annotations

import asyncio
import json
import re

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "sitar-enrolments"
ROUTE = "openai_agents"
DOMAIN = "sitar school's enrolments"
SHAPE = "hand-off, 19-20 steps: triage agent + lookup tool -> hand-off to one of two desks -> list, enrol and welcome-pack tools; the enrolment system or the calendar raises"
SWITCH = None

REGISTRY = {
    "ST-0412": {"name": "Meera Kulkarni", "grade": 2, "free_days": ["Tuesday", "Saturday"]},
    "ST-0388": {"name": "Tom Aske", "grade": 5, "free_days": ["Wednesday"]},
    "ST-0457": {"name": "Lena Vogt", "grade": 4, "free_days": ["Thursday", "Sunday"]},
    "ST-0501": {"name": "Arjun Pillai", "grade": 1, "free_days": ["Monday", "Thursday"]},
    "ST-0299": {"name": "Sadia Rahman", "grade": 6, "free_days": ["Saturday"]},
}
LAST_TERM = {"ST-0457": 3}
CLASSES = [
    {"class_id": "SIT-B1", "level": "beginner", "grades": [1, 3], "weekday": "Monday", "start": "17:00"},
    {"class_id": "SIT-B2", "level": "beginner", "grades": [1, 3], "weekday": "Tuesday", "start": "18:30"},
    {"class_id": "SIT-B3", "level": "beginner", "grades": [1, 3], "weekday": "Thursday", "start": "16:45"},
    {"class_id": "SIT-B5", "level": "beginner", "grades": [1, 3], "weekday": "Wednesday", "start": "17:30"},
    {"class_id": "SIT-B4", "level": "beginner", "grades": [1, 3], "weekday": "Saturday", "start": "10:00"},
    {"class_id": "SIT-A1", "level": "advanced", "grades": [4, 8], "weekday": "Monday", "start": "19:00"},
    {"class_id": "SIT-A2", "level": "advanced", "grades": [4, 8], "weekday": "Wednesday", "start": "18:30"},
    {"class_id": "SIT-A3", "level": "advanced", "grades": [4, 8], "weekday": "Thursday", "start": "19:15"},
    {"class_id": "SIT-A4", "level": "advanced", "grades": [4, 8], "weekday": "Saturday", "start": "11:30"},
]

INPUTS = [
    {"student_id": "ST-0412", "message": "Hello, I'm Meera (student ST-0412). Could I join a weekly sitar class?"},
    {"student_id": "ST-0388", "message": "Tom Aske here, ST-0388. I'd like to carry on with sitar this term."},
    {"student_id": "ST-0457", "message": "Hi, Lena Vogt, student number ST-0457, please enrol me for this term."},
    {"student_id": "ST-0501", "message": "I'm Arjun, ST-0501, a complete beginner. Which class can I join?"},
    {"student_id": "ST-0299", "message": "Sadia Rahman (ST-0299) asking for a place in a class this term."},
]

CASES = [
    {"id": "zzzg_sit_01", "input": 1, "switch": 1, "kind": "wrong_routing",
     "root": ("generation fake-model", 2), "failure": ("enrol_student", 1),
     "description": "The front desk hands Tom Aske, a grade 5 student, to the beginners desk, which enrols "
                    "him in a grade 1-3 class."},
    {"id": "zzzg_sit_02", "input": 0, "switch": 2, "kind": "tool_ignores_argument",
     "root": ("list_classes", 1), "failure": ("enrol_student", 1),
     "description": "The class listing ignores the weekday it is asked for and lists every beginners "
                    "class, so Meera is put in the Monday class though she is free only on Tuesdays and "
                    "Saturdays."},
    {"id": "zzzg_sit_03", "input": 2, "switch": 3, "kind": "stale_data",
     "root": ("lookup_student", 1), "failure": ("enrol_student", 1),
     "description": "The student lookup answers from last term's registry export, grade 3, though Lena "
                    "Vogt passed grade 4 since, so she is routed to the beginners desk."},
    {"id": "zzzg_sit_04", "input": 4, "switch": 4, "kind": "format_drift",
     "root": ("generation fake-model", 4), "failure": ("send_welcome_pack", 1),
     "description": "The advanced desk writes the class time as '11.30am' instead of 24-hour '11:30', "
                    "and the welcome pack's calendar invite cannot read it."},
    {"id": "zzzg_sit_05", "input": 3, "switch": 5, "kind": "hallucinated_value",
     "root": ("generation fake-model", 3), "failure": ("enrol_student", 1),
     "description": "The beginners desk asks for Wednesday classes, a day Arjun never gave (he is free on "
                    "Mondays and Thursdays)."},
]

TIME = re.compile(r"^\d{2}:\d{2}$")


class EnrolmentRefused(Exception):
    pass


# ---------------------------------------------------------------- model policy

def _results(messages: list) -> list:
    names = {}
    out = []
    for m in messages:
        for call in m.get("tool_calls") or ():
            names[call["id"]] = call["function"]["name"]
        if m["role"] == "tool":
            out.append((names.get(m["tool_call_id"]), m["content"]))
    return out


def policy(request):
    messages = request.body["messages"]
    system = messages[0]["content"]
    results = _results(messages)
    user = next(m["content"] for m in messages if m["role"] == "user")
    sid = re.search(r"ST-\d{4}", user).group(0)
    record = next((json.loads(c) for n, c in results if n == "lookup_student"), None)
    if system.startswith("You are the front desk"):
        if record is None:
            return Reply(tool_calls=(tool_call("lookup_student", {"student_id": sid}),))
        desk = "advanced_desk" if record["grade"] >= 4 else "beginners_desk"
        if SWITCH == 1:
            desk = "beginners_desk"
        return Reply(tool_calls=(tool_call(f"transfer_to_{desk}", {}),))
    level = "advanced" if "advanced" in system else "beginner"
    listed = next((json.loads(c) for n, c in results if n == "list_classes"), None)
    enrolled = next((json.loads(c) for n, c in results if n == "enrol_student"), None)
    sent = next((c for n, c in results if n == "send_welcome_pack"), None)
    if listed is None:
        day = record["free_days"][0]
        if SWITCH == 5:
            day = "Wednesday"
        return Reply(tool_calls=(tool_call("list_classes", {"level": level, "weekday": day}),))
    if enrolled is None:
        pick = listed["classes"][0]
        start = pick["start"]
        if SWITCH == 4:
            h, m = start.split(":")
            start = f"{int(h) % 12 or 12}.{m}{'am' if int(h) < 12 else 'pm'}"
        return Reply(tool_calls=(tool_call("enrol_student", {"student_id": sid, "class_id": pick["class_id"],
                                                              "start_time": start}),))
    if sent is None:
        return Reply(tool_calls=(tool_call("send_welcome_pack", {"student_id": sid, "class_id": enrolled["class_id"],
                                                                  "start_time": enrolled["start_time"]}),))
    return f"{record['name']} is enrolled in {enrolled['class_id']} on {enrolled['weekday']}s at {enrolled['start_time']}."


# ---------------------------------------------------------------- tools

@function_tool(failure_error_function=None)
def lookup_student(student_id: str) -> str:
    """The student's record: name, grade passed and the weekdays they are free."""
    rec = dict(REGISTRY[student_id])
    if SWITCH == 3:
        rec["grade"] = LAST_TERM.get(student_id, rec["grade"])
    return json.dumps({"student_id": student_id, **rec})


@function_tool(failure_error_function=None)
def list_classes(level: str, weekday: str) -> str:
    """Classes of a level on a weekday, with their start times."""
    found = [c for c in CLASSES if c["level"] == level and (SWITCH == 2 or c["weekday"] == weekday)]
    return json.dumps({"level": level, "weekday": weekday, "classes": found})


@function_tool(failure_error_function=None)
def enrol_student(student_id: str, class_id: str, start_time: str) -> str:
    """Enrol a student in a class (the school's enrolment system)."""
    cls = next((c for c in CLASSES if c["class_id"] == class_id), None)
    if cls is None:
        raise EnrolmentRefused(f"no class {class_id}")
    student = REGISTRY[student_id]
    lo, hi = cls["grades"]
    if not lo <= student["grade"] <= hi:
        raise EnrolmentRefused(f"{student['name']} has passed grade {student['grade']}; {class_id} is for "
                               f"grades {lo}-{hi}")
    if cls["weekday"] not in student["free_days"]:
        raise EnrolmentRefused(f"{student['name']} is not free on {cls['weekday']}s ({class_id}); free on "
                               f"{' and '.join(student['free_days'])}")
    return json.dumps({"student_id": student_id, "class_id": class_id, "weekday": cls["weekday"],
                       "start_time": start_time, "status": "enrolled"})


@function_tool(failure_error_function=None)
def send_welcome_pack(student_id: str, class_id: str, start_time: str) -> str:
    """E-mail the welcome pack with a weekly calendar invite for the class."""
    if not TIME.match(start_time):
        raise ValueError(f"calendar invite needs a 24-hour HH:MM start time, got {start_time!r}")
    return json.dumps({"student_id": student_id, "class_id": class_id, "invite": f"weekly at {start_time}"})


def agents_for(model: str) -> Agent:
    desk_tools = [list_classes, enrol_student, send_welcome_pack]
    beginners = Agent(name="beginners_desk", model=model, tools=desk_tools,
                      instructions="You are the beginners desk (grades 1-3). List classes on a day the student "
                                   "is free, enrol them, send the welcome pack.")
    advanced = Agent(name="advanced_desk", model=model, tools=desk_tools,
                     instructions="You are the advanced desk (grades 4-8). List classes on a day the student "
                                  "is free, enrol them, send the welcome pack.")
    return Agent(name="front_desk", model=model, tools=[lookup_student], handoffs=[beginners, advanced],
                 instructions="You are the front desk. Look the student up, then hand them to the desk for "
                              "their grade.")


def record(inp: dict, path: str, server) -> None:
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("chat_completions")
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=f"enrol student {inp['student_id']}")])
    async def go():
        try:
            await Runner.run(agents_for(server.model), inp["message"], run_config=RunConfig(workflow_name=NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
