"""Theremin school enrolment (openai_agents route): a desk agent with tools and a lesson-planner sub-agent run as a tool."""
import asyncio
import json

from agents import Agent, RunConfig, Runner, function_tool, set_default_openai_api, set_default_openai_client
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor
from trajdebug.testing import Reply, tool_call

NAME = "theremin-school"
SHORT = "ther"
ROUTE = "openai_agents"
DOMAIN = "theremin school"
SHAPE = "Agents SDK: desk agent -> student record tool -> lesson-planner sub-agent as a tool (its own model turns, parallel level + repertoire + calendar tools) -> booking tool -> instrument rental -> answer"
ACTIVE = None

STUDENTS = {
    "S-104": {"name": "Ada Lovelace", "grade": 2, "age": 31, "owns_instrument": False},
    "S-105": {"name": "Ada Lovett", "grade": 6, "age": 44, "owns_instrument": True},
    "S-107": {"name": "Leon Termen", "grade": 1, "age": 14, "owns_instrument": False},
    "S-110": {"name": "Clara Rockmore", "grade": 5, "age": 27, "owns_instrument": True},
    "S-112": {"name": "Samuel Hoffman", "grade": 3, "age": 52, "owns_instrument": False},
    "S-115": {"name": "Lydia Kavina", "grade": 4, "age": 16, "owns_instrument": True},
}
BY_NAME = {v["name"]: k for k, v in STUDENTS.items()}
CONSENT = {"S-115": "signed 2026-09-20"}
SYLLABUS = {
    "theremin": {1: ["Twinkle on the pitch antenna", "Long tones in A"], 2: ["Ave Maria (Schubert)", "Vocalise study 1"],
                 3: ["The Swan (Saint-Saens)", "Portamento etudes"], 4: ["Vocalise (Rachmaninoff)", "Air on the G string"],
                 5: ["Clair de lune", "Hebrew Melody"], 6: ["Concerto (Fuleihan) mvt 1", "Spellbound suite"]},
    "ondes Martenot": {1: ["Ruban exercises"], 2: ["Touche studies"], 3: ["Messiaen fete des belles eaux"], 4: ["Jolivet etude"],
                       5: ["Turangalila part"], 6: ["Trinite"]},
}
CALENDAR = {("Ms Petrova", 12): ["2027-03-23 17:00", "2027-03-24 18:00", "2027-03-26 16:00"],
            ("Ms Petrova", 3): ["2027-01-19 17:00", "2027-01-21 18:00"],
            ("Mr Moog", 14): ["2027-04-06 10:00", "2027-04-07 11:00", "2027-04-09 15:00"],
            ("Mr Moog", 3): ["2027-01-18 10:00"],
            ("Ms Kavina", 20): ["2027-05-18 19:00", "2027-05-20 19:00"],
            ("Ms Kavina", 3): ["2027-01-20 19:00"]}

INPUTS = [
    {"student": "S-104", "teacher": "Ms Petrova", "week": 12, "text": "Enrol Ada Lovelace (S-104) with Ms Petrova from week 12."},
    {"student": "S-107", "teacher": "Mr Moog", "week": 14, "text": "Leon Termen (S-107) wants lessons with Mr Moog starting week 14."},
    {"student": "S-110", "teacher": "Ms Kavina", "week": 20, "text": "Book Clara Rockmore (S-110) with Ms Kavina in week 20."},
    {"student": "S-112", "teacher": "Ms Petrova", "week": 12, "text": "Samuel Hoffman (S-112) would like Ms Petrova, week 12."},
    {"student": "S-115", "teacher": "Mr Moog", "week": 14, "text": "Lydia Kavina (S-115) asks for Mr Moog from week 14."},
]

CASES = [
    {"input": 0, "switch": "similar_name", "kind": "subagent_wrong_entity", "root": ("generation fake-model", 3), "failure": ("book_lessons", 1),
     "description": "The lesson-planner sub-agent looks up the grade of Ada Lovett (S-105, grade 6) while planning for Ada Lovelace (S-104, grade 2)."},
    {"input": 3, "switch": "next_syllabus", "kind": "wrong_retrieval", "root": ("repertoire_lookup", 1), "failure": ("book_lessons", 1),
     "description": "The repertoire lookup answers from the ondes Martenot syllabus for a theremin student."},
    {"input": 2, "switch": "this_week", "kind": "tool_ignores_argument", "root": ("teacher_slots", 1), "failure": ("book_lessons", 1),
     "description": "The teacher calendar returns this week's slots (week 3) whatever week it is asked for, here week 20."},
    {"input": 1, "switch": "consent_default", "kind": "swallowed_error", "root": ("find_student", 1), "failure": ("book_lessons", 1),
     "description": "The student lookup hits a timeout on the guardian register for S-107 and reports the guardian consent as on file, though none is signed."},
    {"input": 4, "switch": "pieces_text", "kind": "format_drift", "root": ("generation fake-model", 5), "failure": ("book_lessons", 1),
     "description": "The lesson-planner sub-agent's closing answer gives the pieces as one comma-joined text instead of a list."},
]


@function_tool(failure_error_function=None)
def find_student(student_id: str) -> dict:
    """Student record, with the guardian consent status for minors."""
    s = dict(STUDENTS[student_id], student_id=student_id)
    if s["age"] < 18:
        try:
            if student_id == "S-107" and ACTIVE == "consent_default":
                raise TimeoutError("guardian register did not answer")
            s["guardian_consent"] = CONSENT.get(student_id, "missing")
        except TimeoutError:
            s["guardian_consent"] = "on file"
    return s


@function_tool(failure_error_function=None)
def student_grade(name: str) -> dict:
    """Grade of a student by name."""
    sid = BY_NAME[name]
    return {"name": name, "student_id": sid, "grade": STUDENTS[sid]["grade"]}


@function_tool(failure_error_function=None)
def repertoire_lookup(grade: int, instrument: str) -> dict:
    """Pieces of the syllabus for a grade."""
    book = "ondes Martenot" if ACTIVE == "next_syllabus" else instrument
    return {"instrument": instrument, "grade": grade, "pieces": SYLLABUS[book][grade]}


@function_tool(failure_error_function=None)
def teacher_slots(teacher: str, week: int) -> dict:
    """Free lesson slots of a teacher in a week of the year."""
    w = 3 if ACTIVE == "this_week" else week
    return {"teacher": teacher, "week": week, "slots": CALENDAR[(teacher, w)]}


@function_tool(failure_error_function=None)
def book_lessons(student_id: str, teacher: str, week: int, plan_json: str) -> dict:
    """Book the planned lessons; the school office checks the plan against its registers."""
    plan = json.loads(plan_json)
    if not isinstance(plan.get("pieces"), list):
        raise TypeError(f"booking form: pieces must be a list of titles, got {type(plan.get('pieces')).__name__}")
    s = STUDENTS[student_id]
    if s["age"] < 18 and student_id not in CONSENT:
        raise PermissionError(f"{student_id} is {s['age']}: no signed guardian consent in the register")
    allowed = SYLLABUS["theremin"][s["grade"]]
    for p in plan["pieces"]:
        if p not in allowed:
            raise ValueError(f"{p!r} is not in the grade {s['grade']} theremin syllabus for {student_id}")
    free = CALENDAR[(teacher, week)]
    for slot in plan["slots"]:
        if slot not in free:
            raise ValueError(f"{teacher} has no free slot {slot} in week {week}")
    return {"student_id": student_id, "booked": len(plan["slots"]), "fee_eur": 45.0 * len(plan["slots"])}


@function_tool(failure_error_function=None)
def rent_instrument(student_id: str) -> dict:
    """Rent a school Etherwave to a student."""
    return {"student_id": student_id, "instrument": "Moog Etherwave #" + student_id[-2:], "eur_per_month": 30.0}


def _done(msgs):
    names, out = {}, {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            try:
                out[names[m["tool_call_id"]]] = json.loads(m["content"])
            except ValueError:
                import ast
                out[names[m["tool_call_id"]]] = ast.literal_eval(m["content"])
    return out


def policy(request):
    msgs = request.body["messages"]
    system = msgs[0]["content"]
    user = next(m["content"] for m in msgs if m["role"] == "user")
    done = _done(msgs)
    if system.startswith("You plan"):
        ask = json.loads(user)
        if "student_grade" not in done:
            name = "Ada Lovett" if ACTIVE == "similar_name" else ask["name"]
            return Reply(tool_calls=(tool_call("student_grade", {"name": name}), tool_call("teacher_slots", {"teacher": ask["teacher"], "week": ask["week"]})))
        if "repertoire_lookup" not in done:
            return Reply(tool_calls=(tool_call("repertoire_lookup", {"grade": done["student_grade"]["grade"], "instrument": "theremin"}),))
        pieces = done["repertoire_lookup"]["pieces"]
        plan = {"pieces": ", ".join(pieces) if ACTIVE == "pieces_text" else pieces, "slots": done["teacher_slots"]["slots"][:2]}
        return json.dumps(plan)
    ask = next(i for i in INPUTS if i["text"] == user)
    if "find_student" not in done:
        return Reply(tool_calls=(tool_call("find_student", {"student_id": ask["student"]}),))
    st = done["find_student"]
    if "lesson_planner" not in done:
        if st.get("guardian_consent") == "missing":
            return f"{ask['student']} needs a signed guardian consent before enrolment."
        return Reply(tool_calls=(tool_call("lesson_planner", {"input": json.dumps({"name": st["name"], "teacher": ask["teacher"], "week": ask["week"]})}),))
    if "book_lessons" not in done:
        return Reply(tool_calls=(tool_call("book_lessons", {"student_id": ask["student"], "teacher": ask["teacher"], "week": ask["week"],
                                                            "plan_json": json.dumps(done["lesson_planner"])}),))
    if not st["owns_instrument"] and "rent_instrument" not in done:
        return Reply(tool_calls=(tool_call("rent_instrument", {"student_id": ask["student"]}),))
    b = done["book_lessons"]
    return f"{st['name']} is booked for {b['booked']} lessons with {ask['teacher']} ({b['fee_eur']} EUR)."


def record(inp, ctx, path):
    client = AsyncOpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("chat_completions")
    planner = Agent(name="lesson_planner", instructions="You plan theremin lessons: grade, repertoire and slots. Answer JSON.",
                    model="fake-model", tools=[student_grade, repertoire_lookup, teacher_slots])
    desk = Agent(name="enrolment_desk", instructions="You enrol students at the theremin school.", model="fake-model",
                 tools=[find_student, planner.as_tool("lesson_planner", "Plan a student's first lessons.", failure_error_function=None),
                        book_lessons, rent_instrument])
    set_trace_processors([TrajdebugProcessor(path=path, name=NAME, task=inp["text"])])
    try:
        asyncio.run(_go(desk, inp["text"], client))
    except Exception:
        pass
    finally:
        set_trace_processors([])


async def _go(agent, text, client):
    try:
        await Runner.run(agent, text, run_config=RunConfig(workflow_name=NAME))
    finally:
        await client.close()
