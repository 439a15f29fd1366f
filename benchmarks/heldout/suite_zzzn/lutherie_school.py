"""Lutherie evening school: front desk with hand-offs and a records sub-agent (route: openai_agents)."""
import ast
import asyncio
import json

from agents import (Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client)
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "lutherie-evening-enrolment"
ROUTE = "openai_agents"
DOMAIN = "lutherie evening school"
SHAPE = "front-desk agent hands off to enrolment or loan desk; enrolment calls a records clerk agent as a tool (its own tool calls), the catalogue, then enrols"
SWITCH = None
SERVER = None

STUDENTS = {"LS-201": {"name": "Ada Moreau", "done": ["Fretwork basics"]},
            "LS-202": {"name": "Ben Moreau", "done": []},
            "LS-203": {"name": "Cora Lindqvist", "done": ["Fretwork basics", "Neck carving"]},
            "LS-204": {"name": "Dev Anand", "done": ["Fretwork basics", "Neck carving", "French polishing"]},
            "LS-205": {"name": "Elin Brook", "done": []},
            "LS-206": {"name": "Fay Brook", "done": ["Fretwork basics"]}}
COURSES = [{"course": "Fretwork basics", "needs": None, "evening": "Monday"},
           {"course": "Neck carving", "needs": "Fretwork basics", "evening": "Tuesday"},
           {"course": "French polishing", "needs": "Neck carving", "evening": "Wednesday"},
           {"course": "Archtop voicing", "needs": "French polishing", "evening": "Thursday"}]
INPUTS = [
    {"task": "enrol Ada Moreau, spring 2027", "student": "Ada Moreau", "wants": "enrol in the next course", "term": "2027-SP"},
    {"task": "enrol Ben Moreau, spring 2027", "student": "Ben Moreau", "wants": "enrol in the next course", "term": "2027-SP"},
    {"task": "enrol Cora Lindqvist, autumn 2027", "student": "Cora Lindqvist", "wants": "enrol in the next course", "term": "2027-AU"},
    {"task": "enrol Dev Anand, autumn 2027", "student": "Dev Anand", "wants": "enrol in the next course", "term": "2027-AU"},
    {"task": "enrol Fay Brook, spring 2027", "student": "Fay Brook", "wants": "enrol in the next course", "term": "2027-SP"},
]
CASES = [
    dict(id="zn31", input=0, switch="handoff", kind="wrong_routing", root=("generation fake-model", 1), failure=None,
         desc="The front desk handed an enrolment request to the loan desk, which then tried to lend an instrument to a student with no course."),
    dict(id="zn32", input=4, switch="surname", kind="subagent_wrong_entity", root=("records clerk", 1), failure=None,
         desc="The records clerk looked the student up by surname and reported Elin Brook's record for Fay Brook."),
    dict(id="zn33", input=2, switch="skip", kind="plan_error", root=("generation fake-model", 7), failure=None,
         desc="The enrolment plan skipped French polishing and put the student straight into Archtop voicing."),
    dict(id="zn34", input=3, switch="term", kind="format_drift", root=("generation fake-model", 7), failure=None,
         desc="The enrolment call named the term as 'Autumn 2027' instead of the school's code 2027-AU."),
    dict(id="zn35", input=1, switch="cut", kind="truncated_result", root=("course_catalogue", 1), failure=None,
         desc="The course catalogue came back with only its last three courses, without Fretwork basics."),
]


def _tool_outputs(msgs):
    names, out = {}, []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m["tool_call_id"]), m["content"]))
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = [m for m in msgs if m.get("role") == "user"]
    done = _tool_outputs(msgs)
    if system.startswith("Front desk"):
        target = "transfer_to_loan_desk" if SWITCH == "handoff" else "transfer_to_enrolment"
        if not done:
            return Reply(tool_calls=(tool_call(target, {}),))
        return "Passed on."
    done = [(n, c) for n, c in done if n and not n.startswith("transfer_to")]
    if system.startswith("Records clerk"):
        name = user[-1]["content"]
        if not done:
            query = name.split()[-1] if SWITCH == "surname" else name
            return Reply(tool_calls=(tool_call("find_student", {"name": query}),))
        if len(done) == 1:
            found = ast.literal_eval(done[0][1])
            return Reply(tool_calls=(tool_call("transcript", {"student_id": found["student_id"]}),))
        return done[1][1]
    request_ = json.loads(user[0]["content"])
    if system.startswith("Loan desk"):
        if not done:
            return Reply(tool_calls=(tool_call("issue_loan", {"student": request_["student"], "instrument": "workshop bench kit"}),))
        return "Loan issued."
    # enrolment
    names = [n for n, _ in done]
    if "student_records" not in names:
        return Reply(tool_calls=(tool_call("student_records", {"input": request_["student"]}),))
    if "course_catalogue" not in names:
        return Reply(tool_calls=(tool_call("course_catalogue", {"term": request_["term"]}),))
    if "enrol" not in names:
        record = ast.literal_eval(dict(done)["student_records"])
        catalogue = ast.literal_eval(dict(done)["course_catalogue"])
        pick = next(c for c in catalogue if c["course"] not in record["done"])
        if SWITCH == "skip":
            pick = [c for c in catalogue if c["course"] not in record["done"]][1]
        term = request_["term"]
        if SWITCH == "term":
            term = {"AU": "Autumn", "SP": "Spring"}[term[-2:]] + " " + term[:4]
        return Reply(tool_calls=(tool_call("enrol", {"student_id": record["student_id"], "course": pick["course"],
                                                     "term": term}),))
    return "Enrolled: " + dict(done)["enrol"]


@function_tool
def find_student(name: str) -> dict:
    """Find a student by name."""
    for sid, s in STUDENTS.items():
        if name in s["name"]:
            return {"student_id": sid, "name": s["name"]}
    return {"student_id": None, "name": name}


@function_tool
def transcript(student_id: str) -> dict:
    """Courses a student has completed."""
    return {"student_id": student_id, "name": STUDENTS[student_id]["name"], "done": STUDENTS[student_id]["done"]}


@function_tool
def course_catalogue(term: str) -> list:
    """Courses offered in a term, in teaching order."""
    courses = [dict(c) for c in COURSES]
    return courses[1:] if SWITCH == "cut" else courses


def enrol(student_id: str, course: str, term: str) -> dict:
    """Enrol a student in a course for a term."""
    if term not in ("2027-SP", "2027-AU"):
        raise ValueError(f"registry: unknown term code {term!r}")
    want = next(i for i in INPUTS if i["term"] == term and STUDENTS_BY_NAME[i["student"]] == student_id) \
        if any(STUDENTS_BY_NAME[i["student"]] == student_id and i["term"] == term for i in INPUTS) else None
    if want is None:
        raise ValueError(f"registry: no application from {student_id} for {term}")
    needs = next(c["needs"] for c in COURSES if c["course"] == course)
    if needs and needs not in STUDENTS[student_id]["done"]:
        raise ValueError(f"registry: {course} needs {needs}, not completed by {student_id}")
    if course in STUDENTS[student_id]["done"]:
        raise ValueError(f"registry: {student_id} already completed {course}")
    return {"student_id": student_id, "course": course, "term": term}


def issue_loan(student: str, instrument: str) -> dict:
    """Lend a workshop instrument kit to an enrolled student."""
    raise ValueError(f"loan register: {student} holds no enrolment this term; kits go to enrolled students only")


STUDENTS_BY_NAME = {s["name"]: sid for sid, s in STUDENTS.items()}


_LOOP = {}


def _loop():
    """One event loop and one client for all runs, so the HTTP pool never outlives its loop."""
    if _LOOP.get("url") != SERVER.base_url:
        _LOOP.update(url=SERVER.base_url, loop=asyncio.new_event_loop(),
                     client=AsyncOpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0))
    return _LOOP["loop"]


def run_one(inp, path):
    loop = _loop()
    set_default_openai_client(_LOOP["client"])
    set_default_openai_api("chat_completions")
    processor = TrajdebugProcessor(path=path, task=inp["task"])
    set_trace_processors([processor])
    clerk = Agent(name="records clerk", instructions="Records clerk: find the student and report their transcript.",
                  model=SERVER.model, tools=[find_student, transcript])
    enrolment = Agent(name="enrolment", instructions="Enrolment: check records and the catalogue, then enrol.",
                      model=SERVER.model,
                      tools=[clerk.as_tool(tool_name="student_records", tool_description="Look up a student's record."),
                             course_catalogue, function_tool(enrol, failure_error_function=None)])
    loan = Agent(name="loan desk", instructions="Loan desk: lend instrument kits.", model=SERVER.model,
                 tools=[function_tool(issue_loan, failure_error_function=None)])
    desk = Agent(name="front desk", instructions="Front desk: pass each request to the right desk.",
                 model=SERVER.model, handoffs=[enrolment, loan])
    message = json.dumps({k: inp[k] for k in ("student", "wants", "term")})
    try:
        with processor.fail_on_raise():
            loop.run_until_complete(Runner.run(desk, message, run_config=RunConfig(workflow_name=NAME)))
    except Exception:
        pass
    finally:
        set_trace_processors([])
