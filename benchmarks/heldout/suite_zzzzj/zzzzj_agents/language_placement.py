"""A language school's placement desk: places a new adult learner in a CEFR-levelled evening or day class.

Route: the OpenAI Agents SDK (Chat Completions model on the fake server), traced by trajdebug's tracing
processor (JSONL). Shape: a coordinator agent in a tool loop (application, parallel note-save and test
answers, written scoring, a speaking-assessor agent run as a tool with its own tool, notes read back, class
search, enrolment) and a final answer.
"""

from __future__ import annotations

import json
import re

from agents import Agent, function_tool
from trajdebug.testing import Reply, tool_call

from . import common

NAME = "language-placement-desk"
ROUTE = "openai_agents"
DOMAIN = "adult language school: CEFR placement and class enrolment"
SHAPE = "Agents SDK: coordinator tool loop, parallel tool calls, memory tool write/read, agent-as-tool with its own tool, enrolment"
SWITCH = None

APPLICANTS = {
    "AP-1034": {"name": "Marta Kowalczyk", "language": "English", "availability": "weekday evenings", "goal": "work"},
    "AP-1043": {"name": "Hiroshi Tanaka", "language": "English", "availability": "weekday mornings", "goal": "study"},
    "AP-1051": {"name": "Lucia Ferreira", "language": "English", "availability": "saturday mornings", "goal": "travel"},
    "AP-1062": {"name": "Omar Haddad", "language": "English", "availability": "weekday evenings", "goal": "citizenship"},
    "AP-1078": {"name": "Ana Popescu", "language": "English", "availability": "weekday mornings", "goal": "work"},
    "AP-1087": {"name": "Yusuf Demir", "language": "English", "availability": "saturday mornings", "goal": "study"},
}
WRITTEN = {"AP-1034": 58, "AP-1043": 52, "AP-1051": 34, "AP-1062": 47, "AP-1078": 69, "AP-1087": 73}
SPEAKING = {"AP-1034": "B1", "AP-1043": "B1", "AP-1051": "A2", "AP-1062": "B1", "AP-1078": "B2", "AP-1087": "B2"}
CLASSES = [
    {"class_id": "A2-SAT-1", "level": "A2", "schedule": "saturday mornings", "meets": "Sat 09:30"},
    {"class_id": "B1-EVE-2", "level": "B1", "schedule": "weekday evenings", "meets": "Tue/Thu 18:30"},
    {"class_id": "B1-DAY-1", "level": "B1", "schedule": "weekday mornings", "meets": "Mon/Wed 10:00"},
    {"class_id": "B2-DAY-3", "level": "B2", "schedule": "weekday mornings", "meets": "Tue/Fri 10:00"},
    {"class_id": "B2-SAT-1", "level": "B2", "schedule": "saturday mornings", "meets": "Sat 11:30"},
    {"class_id": "C1-DAY-1", "level": "C1", "schedule": "weekday mornings", "meets": "Mon/Thu 09:30"},
]
NOTES: dict[str, dict] = {}

INPUTS = [
    {"request_id": "pl-901", "text": "New applicant AP-1034 finished the placement test. Please place and enrol her."},
    {"request_id": "pl-902", "text": "Place applicant AP-1043 (test done today) in a class and enrol him."},
    {"request_id": "pl-903", "text": "AP-1051 has done the written and speaking tests - please place and enrol."},
    {"request_id": "pl-904", "text": "Could you place and enrol AP-1062? Placement test completed."},
    {"request_id": "pl-905", "text": "Applicant AP-1078: placement test finished, please find her class and enrol."},
]

CASES = [
    {"id": "E1", "input": 2, "fault_kind": "hallucinated_value",
     "root": ("generation fake-model", 8), "failure": ("enrol_in_class", 1),
     "description": "Asked to enrol Lucia Ferreira, the coordinator model sent class A2-SAT-2, a class id no search "
                    "result held (the search found A2-SAT-1), and enrolment refused it."},
    {"id": "E2", "input": 0, "fault_kind": "subagent_wrong_entity",
     "root": ("generation fake-model", 4), "failure": ("enrol_in_class", 1),
     "description": "The speaking-assessor agent fetched the interview notes of AP-1043 instead of AP-1034 (digits "
                    "swapped), so enrolment found the speaking report belongs to another applicant."},
    {"id": "E3", "input": 3, "fault_kind": "wrong_tool_args",
     "root": ("generation fake-model", 7), "failure": ("enrol_in_class", 1),
     "description": "The coordinator searched classes with schedule 'weekday mornings' although the notes it had just "
                    "read say weekday evenings, and enrolment refused a class the applicant cannot attend."},
    {"id": "E4", "input": 4, "fault_kind": "format_drift",
     "root": ("generation fake-model", 5), "failure": ("find_class", 1),
     "description": "The speaking assessor answered its level as 'upper-intermediate' instead of a CEFR code (B2), "
                    "and the class search rejected the level it was passed."},
    {"id": "E5", "input": 1, "fault_kind": "bad_memory_write",
     "root": ("save_note", 1), "failure": ("enrol_in_class", 1),
     "description": "The note tool stored the applicant's availability as 'weekday' (first word only) instead of "
                    "'weekday mornings', so the class search matched the B1 evening class, which he cannot attend."},
]

LEVELS = ["A1", "A2", "B1", "B2", "C1"]


def _written_level(score: int) -> str:
    return "C1" if score >= 80 else "B2" if score >= 65 else "B1" if score >= 45 else "A2" if score >= 30 else "A1"


def brain(request):
    system = common.system_text(request)
    log = common.tool_log(request)
    user = common.user_text(request)
    if system.startswith("You are the speaking assessor"):
        aid = re.search(r"AP-\d{4}", user).group(0)
        notes = common.result_of(log, "get_interview_notes")
        if notes is None:
            if SWITCH == "E2":
                aid = aid[:-2] + aid[-1] + aid[-2]
            return Reply(tool_calls=(tool_call("get_interview_notes", {"applicant_id": aid}),))
        level = notes["band"]
        if SWITCH == "E4":
            level = {"B2": "upper-intermediate", "B1": "intermediate"}.get(level, level)
        return json.dumps({"ref": notes["ref"], "level": level})
    aid = re.search(r"AP-\d{4}", user).group(0)
    app = common.result_of(log, "get_application")
    if app is None:
        return Reply(tool_calls=(tool_call("get_application", {"applicant_id": aid}),))
    if common.result_of(log, "save_note") is None:
        return Reply(tool_calls=(
            tool_call("save_note", {"applicant_id": aid, "key": "availability", "value": app["availability"]}),
            tool_call("score_written_test", {"applicant_id": aid}),
        ))
    written = common.result_of(log, "score_written_test")
    speaking = common.result_of(log, "speaking_assessor")
    if speaking is None:
        return Reply(tool_calls=(tool_call("speaking_assessor", {"input": f"Assess the speaking interview of {aid}."}),))
    if isinstance(speaking, str):
        speaking = json.loads(speaking)
    notes = common.result_of(log, "read_notes")
    if notes is None:
        return Reply(tool_calls=(tool_call("read_notes", {"applicant_id": aid}),))
    level = speaking["level"]
    if level in LEVELS and LEVELS.index(written["level"]) < LEVELS.index(level):
        level = written["level"]  # place at the lower of the two
    found = common.result_of(log, "find_class")
    if found is None:
        schedule = notes["availability"]
        if SWITCH == "E3":
            schedule = "weekday mornings"
        return Reply(tool_calls=(tool_call("find_class", {"level": level, "schedule": schedule}),))
    enrolled = common.result_of(log, "enrol_in_class")
    if enrolled is None:
        class_id = found[0]["class_id"]
        if SWITCH == "E1":
            class_id = class_id[:-1] + str(int(class_id[-1]) + 1)
        return Reply(tool_calls=(tool_call("enrol_in_class", {"applicant_id": aid, "class_id": class_id,
                                                               "speaking_ref": speaking["ref"]}),))
    return f"{app['name']} is enrolled in {enrolled['class_id']} ({enrolled['meets']}), level {enrolled['level']}."


@function_tool(failure_error_function=None)
def get_application(applicant_id: str) -> dict:
    """The applicant's application form."""
    return {"applicant_id": applicant_id, **APPLICANTS[applicant_id]}


@function_tool(failure_error_function=None)
def save_note(applicant_id: str, key: str, value: str) -> dict:
    """Save a note about the applicant for later steps."""
    if SWITCH == "E5":
        value = value.split()[0]
    NOTES.setdefault(applicant_id, {})[key] = value
    return {"applicant_id": applicant_id, "saved": {key: value}}


@function_tool(failure_error_function=None)
def read_notes(applicant_id: str) -> dict:
    """Notes saved about the applicant."""
    return dict(NOTES.get(applicant_id, {}))


@function_tool(failure_error_function=None)
def score_written_test(applicant_id: str) -> dict:
    """Score the written placement test (grammar, reading, listening)."""
    score = WRITTEN[applicant_id]
    return {"applicant_id": applicant_id, "score": score, "level": _written_level(score)}


@function_tool(failure_error_function=None)
def get_interview_notes(applicant_id: str) -> dict:
    """The speaking interview notes and band of an applicant."""
    return {"ref": f"SA-{applicant_id[3:]}", "applicant_id": applicant_id, "band": SPEAKING[applicant_id],
            "interviewer": "D. Walsh"}


@function_tool(failure_error_function=None)
def find_class(level: str, schedule: str) -> list:
    """Open classes at a CEFR level whose schedule matches."""
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is not a CEFR level (A1-C1)")
    hits = [c for c in CLASSES if c["level"] == level and (c["schedule"] == schedule or c["schedule"].startswith(schedule))]
    return hits or [c for c in CLASSES if c["level"] == level]


@function_tool(failure_error_function=None)
def enrol_in_class(applicant_id: str, class_id: str, speaking_ref: str) -> dict:
    """Enrol the applicant in a class."""
    cls = next((c for c in CLASSES if c["class_id"] == class_id), None)
    if cls is None:
        raise LookupError(f"no open class {class_id}")
    if speaking_ref != f"SA-{applicant_id[3:]}":
        raise ValueError(f"speaking report {speaking_ref} belongs to another applicant, not {applicant_id}")
    if cls["schedule"] != APPLICANTS[applicant_id]["availability"]:
        raise ValueError(f"{applicant_id} is available {APPLICANTS[applicant_id]['availability']}; "
                         f"{class_id} meets {cls['meets']}")
    return {"applicant_id": applicant_id, **cls, "status": "enrolled"}


def build() -> Agent:
    model = common.agents_model()
    assessor = Agent(name="speaking_assessor", model=model, tools=[get_interview_notes],
                     instructions="You are the speaking assessor. Read the interview notes and answer JSON {ref, level}.")
    return Agent(name="placement_coordinator", model=model,
                 instructions="You place new learners. Use the tools: application, notes, written score, the speaking "
                              "assessor, class search, enrolment.",
                 tools=[get_application, save_note, read_notes, score_written_test,
                        assessor.as_tool(tool_name="speaking_assessor", tool_description="Assess the speaking interview."),
                        find_class, enrol_in_class])


def record(inp: dict, path: str) -> None:
    NOTES.clear()
    common.run_agents_sdk(build(), inp["text"], path, NAME, inp["text"], {"request_id": inp["request_id"]})
