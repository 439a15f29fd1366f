"""Grading desk (OpenAI Agents SDK with handoffs, education and grading).

A coordinator hands each grading request to the quiz grader (scanned answer
sheets scored against the key) or the essay grader (rubric levels weighted into
points).  The gradebook checks every posted grade against the submission, the
assignment's maximum and the number of items graded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, function_tool

from sb.agkit import run_agent
from sb.fakellm import Conversation, Reply, call, say
from sb.harness import Case, failing, faulty, tick


AGENT = "grading-desk"
ROUTE = "openai-agents"
DOMAIN = "education and grading"

STUDENTS = {
    "S-10428": "Amara Chen",
    "S-10482": "Bo Lindgren",
    "S-20117": "Chidi Okeke",
    "S-20931": "Dana Kowalski",
    "S-31005": "Emil Sørensen",
    "S-31550": "Farah Haddad",
    "S-40012": "Gus Moreau",
}
ASSIGNMENTS = {
    "QZ-7": {"kind": "quiz", "questions": 20, "max_points": 20},
    "QZ-8": {"kind": "quiz", "questions": 12, "max_points": 12},
    "ESSAY-3": {"kind": "essay", "max_points": 100},
    "ESSAY-4": {"kind": "essay", "max_points": 50},
}
RUBRICS = {
    "ESSAY-3": [("thesis", 0.3), ("evidence", 0.3), ("structure", 0.2), ("mechanics", 0.2)],
    "ESSAY-4": [("argument", 0.5), ("sources", 0.3), ("style", 0.2)],
}


def _key(aid: str) -> list[str]:
    n = ASSIGNMENTS[aid]["questions"]
    return ["ABCD"[(i * 7 + len(aid)) % 4] for i in range(n)]


def _answers(sid: str, aid: str) -> list[str]:
    seed = int(sid[2:]) % 7
    return [("ABCD"[(ord(k) - 65 + 1) % 4] if (i + seed) % 5 == 0 else k) for i, k in enumerate(_key(aid))]


def _submission_id(sid: str, aid: str) -> str:
    return f"SUB-{aid.replace('-', '')}-{sid[2:]}"


def _essay_text(sid: str, aid: str) -> str:
    name = STUDENTS[sid]
    return f"{name}'s essay for {aid}: The industrial revolution reshaped labour ... ({300 + int(sid[2:]) % 200} words)"


@function_tool(failure_error_function=None)
def read_answer_sheet(student_id: str, assignment_id: str) -> str:
    """The scanned answer sheet (or uploaded text) of a student's submission, as raw text."""
    tick("read_answer_sheet")
    if ASSIGNMENTS[assignment_id]["kind"] == "quiz":
        raw = "\n".join(f"Q{i + 1},{a}" for i, a in enumerate(_answers(student_id, assignment_id)))
    else:
        raw = _essay_text(student_id, assignment_id)
    return json.dumps({"submission_id": _submission_id(student_id, assignment_id), "raw": raw})


@function_tool(failure_error_function=None)
def parse_scantron(raw: str) -> str:
    """Parse scanner output ('Qn,X' per line) into the list of marked answers in question order."""
    tick("parse_scantron")
    lines = raw.split("\n")
    if faulty("scantron_drops_last_line", "parse_scantron"):
        lines = lines[:-1]  # written for exports that end with a newline; this one does not
    answers = [ln.split(",", 1)[1].strip() for ln in lines if ln.startswith("Q") and "," in ln]
    return json.dumps({"answers": answers, "count": len(answers)})


@function_tool(failure_error_function=None)
def get_answer_key(assignment_id: str) -> str:
    """The answer key of a quiz (empty for assignments without one)."""
    tick("get_answer_key")
    key = _key(assignment_id) if ASSIGNMENTS[assignment_id]["kind"] == "quiz" else []
    return json.dumps({"assignment_id": assignment_id, "key": key})


@function_tool(failure_error_function=None)
def fetch_essay(student_id: str, assignment_id: str) -> str:
    """A student's essay submission."""
    tick("fetch_essay")
    return json.dumps(
        {
            "submission_id": _submission_id(student_id, assignment_id),
            "text": _essay_text(student_id, assignment_id),
        }
    )


@function_tool(failure_error_function=None)
def get_rubric(assignment_id: str) -> str:
    """The grading rubric of an essay: total points and criteria with their weights as fractions of the total."""
    tick("get_rubric")
    crit = RUBRICS[assignment_id]
    if faulty("rubric_weights_percent", "get_rubric"):
        rows = [{"name": n, "weight": round(w * 100)} for n, w in crit]  # new authoring tool stores percents
    else:
        rows = [{"name": n, "weight": w} for n, w in crit]
    return json.dumps(
        {
            "assignment_id": assignment_id,
            "total_points": ASSIGNMENTS[assignment_id]["max_points"],
            "criteria": rows,
        }
    )


@function_tool(failure_error_function=None)
def record_grade(
    student_id: str, assignment_id: str, submission_id: str, points: float, max_points: int, items_graded: int
) -> str:
    """Post a grade to the gradebook."""
    tick("record_grade")
    a = ASSIGNMENTS[assignment_id]
    owner = next((s for s in STUDENTS if _submission_id(s, assignment_id) == submission_id), None)
    problem = None
    if owner != student_id:
        problem = f"submission {submission_id} was handed in by {owner}, not by {student_id}"
    elif max_points != a["max_points"]:
        problem = f"{assignment_id} is out of {a['max_points']} points, not {max_points}"
    elif not 0 <= points <= a["max_points"]:
        problem = f"{points} points is outside 0..{a['max_points']} for {assignment_id}"
    elif items_graded != (a["questions"] if a["kind"] == "quiz" else len(RUBRICS[assignment_id])):
        problem = (
            f"only {items_graded} items were graded on {assignment_id}; partial grading cannot be posted"
        )
    if problem:
        failing("record_grade")
        raise ValueError(f"gradebook: {problem}")
    return json.dumps(
        {"posted": True, "student_id": student_id, "assignment_id": assignment_id, "points": points}
    )


def build(model: Any) -> Agent[Any]:
    quiz = Agent(
        name="quiz_grader",
        instructions="You grade quizzes: read the answer sheet, parse it, compare with the answer key, one point "
        "per correct answer, and record the grade.",
        tools=[read_answer_sheet, parse_scantron, get_answer_key, record_grade],
        model=model,
    )
    essay = Agent(
        name="essay_grader",
        instructions="You grade essays against the rubric: give each criterion a level from 0 to 4, points = "
        "total_points * sum(level/4 * weight), and record the grade.",
        tools=[fetch_essay, get_rubric, record_grade],
        model=model,
    )
    return Agent(
        name="grading_coordinator",
        instructions="You dispatch grading requests: quizzes (QZ-*) to the quiz grader, essays (ESSAY-*) to the "
        "essay grader.",
        handoffs=[quiz, essay],
        model=model,
    )


def _level(text: str, criterion: str) -> int:
    return 2 + (len(text) + len(criterion)) % 3


def policy(conv: Conversation) -> Reply:
    t = conv.task
    sid, aid = t["student_id"], t["assignment_id"]
    if "dispatch grading requests" in conv.system:
        to_quiz = aid.startswith("QZ")
        if conv.fault == "essay_to_quiz_grader":
            return call("transfer_to_quiz_grader", faulty=True)
        return call("transfer_to_quiz_grader" if to_quiz else "transfer_to_essay_grader")
    if "You grade quizzes" in conv.system:
        if conv.called("read_answer_sheet") == 0:
            if conv.fault == "misread_student_id":
                wrong = sid[:-2] + sid[-1] + sid[-2]
                return call("read_answer_sheet", faulty=True, student_id=wrong, assignment_id=aid)
            return call("read_answer_sheet", student_id=sid, assignment_id=aid)
        sheet = conv.result("read_answer_sheet")
        if conv.called("parse_scantron") == 0:
            return call("parse_scantron", raw=sheet["raw"])
        if conv.called("get_answer_key") == 0:
            return call("get_answer_key", assignment_id=aid)
        if conv.called("record_grade") == 0:
            answers, key = conv.result("parse_scantron")["answers"], conv.result("get_answer_key")["key"]
            points = sum(1 for a, k in zip(answers, key) if a == k)
            return call(
                "record_grade",
                student_id=sid,
                assignment_id=aid,
                submission_id=sheet["submission_id"],
                points=points,
                max_points=len(key),
                items_graded=len(answers),
            )
        r = conv.result("record_grade")
        return say(f"Posted {r['points']} for {sid} on {aid}.")
    if conv.called("fetch_essay") == 0:
        return call("fetch_essay", student_id=sid, assignment_id=aid)
    if conv.called("get_rubric") == 0:
        return call("get_rubric", assignment_id=aid)
    if conv.called("record_grade") == 0:
        essay, rubric = conv.result("fetch_essay"), conv.result("get_rubric")
        share = sum(_level(essay["text"], c["name"]) / 4 * c["weight"] for c in rubric["criteria"])
        return call(
            "record_grade",
            student_id=sid,
            assignment_id=aid,
            submission_id=essay["submission_id"],
            points=round(rubric["total_points"] * share, 1),
            max_points=rubric["total_points"],
            items_graded=len(rubric["criteria"]),
        )
    r = conv.result("record_grade")
    return say(f"Essay grade posted: {r['points']} points for {sid}.")


def run(task: dict[str, Any], path: Path) -> Any:
    text = f"Please grade {task['assignment_id']} for {STUDENTS[task['student_id']]} ({task['student_id']}) and post it."
    return run_agent(build, text, path, workflow="grading-desk", metadata={"course": "HIST-110"})


PASSING = [
    {"student_id": "S-20117", "assignment_id": "QZ-7"},
    {"student_id": "S-20931", "assignment_id": "ESSAY-3"},
    {"student_id": "S-31005", "assignment_id": "QZ-8"},
    {"student_id": "S-31550", "assignment_id": "ESSAY-4"},
    {"student_id": "S-40012", "assignment_id": "QZ-7"},
    {"student_id": "S-10482", "assignment_id": "ESSAY-4"},
]

CASES = [
    Case(
        id="grading-misread-student",
        task={"student_id": "S-10428", "assignment_id": "QZ-7"},
        fault="misread_student_id",
        fault_kind="wrong_tool_arguments",
        description="The quiz grader requests the answer sheet of S-10482 instead of S-10428 (digits swapped), "
        "scores it and posts the grade under the right student with the other student's submission id; the "
        "gradebook rejects the mismatch.",
        root="llm",
        evidence="S-10482",
        path=["llm", "read_answer_sheet", "llm", "record_grade"],
        failure="record_grade",
    ),
    Case(
        id="grading-scantron-last-line",
        task={"student_id": "S-20931", "assignment_id": "QZ-8"},
        fault="scantron_drops_last_line",
        fault_kind="lossy_parsing",
        description="parse_scantron discards the last line, assuming a trailing newline the scanner export does "
        "not have: 11 answers for a 12-question quiz. The grader scores what it got and the gradebook refuses a "
        "partially graded sheet.",
        root="parse_scantron",
        evidence='"count": 11',
        path=["parse_scantron", "llm", "record_grade"],
        failure="record_grade",
    ),
    Case(
        id="grading-essay-to-quiz-grader",
        task={"student_id": "S-31005", "assignment_id": "ESSAY-3"},
        fault="essay_to_quiz_grader",
        fault_kind="wrong_routing",
        description="The coordinator hands an essay to the quiz grader. The essay parses to no answers and has no "
        "key, so the grader posts 0 out of 0, which the gradebook rejects for a 100-point essay.",
        root="llm",
        evidence="transfer_to_quiz_grader",
        path=["llm", "get_answer_key", "llm", "record_grade"],
        failure="record_grade",
    ),
    Case(
        id="grading-rubric-percent-weights",
        task={"student_id": "S-10428", "assignment_id": "ESSAY-4"},
        fault="rubric_weights_percent",
        fault_kind="unit_scale_error",
        description="get_rubric returns weights as percents (50, 30, 20) where fractions are expected; the essay "
        "grader's weighted total comes out a hundred times too large and the gradebook rejects it.",
        root="get_rubric",
        evidence='"weight": 50',
        path=["get_rubric", "llm", "record_grade"],
        failure="record_grade",
    ),
]
