"""The "find the cause" panel of ``trajdebug serve``: the guided search in Python, answers stored with the run.

``GET /api/runs/{run_id}/ask`` returns the state of the search over the run's
stored answers: the next question (`trajdebug.report.question.question_to_dict`),
the result so far (``Guided.to_dict()``) and the answers.  ``POST`` to the
same URL with ``{"step_id": ..., "answer": "correct" | "wrong" | "unknown"}``
(or ``"erroneous"`` / ``"inadmissible"``, a wrong answer that says whether the
step's inputs were right, as the page's buttons do) stores the answer with the run (`trajdebug.answers.AnswerLog`, ``by="person"``)
and returns the new state, so the answers outlive the server.

A POST is accepted only as ``application/json`` (a form on another site cannot
send that without the browser asking first) and, when the browser names an
``Origin``, only from the server's own; the token rules of every other request
apply (`trajdebug.serve.app`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from trajdebug.analysis import Analysis, GuidedSearch
from trajdebug.answers import AnswerLog
from trajdebug.core.model import Answer
from trajdebug.core.schema import answer_to_dict
from trajdebug.report.question import question_for, question_to_dict
from trajdebug.sources.load import SourceError, load_runs
from trajdebug.store import Store, is_store


WORDS: dict[str, bool | None] = {"correct": True, "wrong": False, "unknown": None, "erroneous": False, "inadmissible": False}
"""The answers a POST may give: ``erroneous`` (wrong for the inputs it was given) and ``inadmissible`` (given a
wrong input) are wrong answers that say which (Naish's three-valued answers, `Answer.admissible`)."""
ADMISSIBLE: dict[str, bool] = {"erroneous": True, "inadmissible": False}

MAX_BODY = 16_384
"""The largest POST body read (an answer is a few dozen bytes)."""


class BadAnswer(ValueError):
    """A POST that is not an answer: the message says what is wrong, for a 400 response."""


def stored_answers(source: str | Path, run_id: str, fmt: str | None = None) -> tuple[Answer, ...]:
    """The answers stored with one run now (read from the source, not from a cache)."""
    path = Path(source)
    if fmt in (None, "store") and is_store(path):
        with Store(path, readonly=True) as store:
            return store.load_run(run_id).answers
    runs = load_runs(path, run_id=run_id, fmt=fmt)
    return runs[0].answers if runs else ()


def ask_state(analysis: Analysis, answers: tuple[Answer, ...]) -> dict[str, Any]:
    """The search over these answers: the next question (None when done), the result, the answers."""
    # Every answer is stored before the next request reads it back: no step is asked twice (`GuidedSearch` ``once``).
    search = GuidedSearch(analysis, answers, once=True)
    sid = search.next_question()
    asked = sum(1 for a in answers if a.by == "person")
    return {
        "run_id": analysis.run.run_id,
        "question": question_to_dict(question_for(analysis.run, sid, asked + 1)) if sid is not None else None,
        "guided": search.result().to_dict(),
        "answers": [answer_to_dict(a) for a in answers],
    }


def parse_answer(body: bytes, content_type: str, origin: str | None, host: str | None) -> Answer:
    """The answer a POST gives.

    Raises:
        BadAnswer: not JSON, from another origin, or no step / no known answer word.
    """
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise BadAnswer("an answer is posted as application/json")
    if origin and origin != "null" and urlsplit(origin).netloc != (host or ""):
        raise BadAnswer("answers are accepted from this server's own pages only")
    if len(body) > MAX_BODY:
        raise BadAnswer("the answer is too large")
    try:
        data = json.loads(body or b"null")
    except (ValueError, RecursionError):
        raise BadAnswer("the answer is not JSON") from None
    if not isinstance(data, dict):
        raise BadAnswer('an answer is an object: {"step_id": ..., "answer": "correct" | "wrong" | "unknown"}')
    sid, word = data.get("step_id"), data.get("answer")
    if not isinstance(sid, str) or not sid:
        raise BadAnswer("step_id: the step answered about is missing")
    if word not in WORDS:
        raise BadAnswer(f"answer: {str(word)[:40]!r} is not correct, wrong, erroneous, inadmissible or unknown")
    reason = data.get("reason")
    text = reason if isinstance(reason, str) and reason else None
    return Answer(sid, WORDS[word], "person", time.time_ns(), text, admissible=ADMISSIBLE.get(word))


def store_answer(source: str | Path, analysis: Analysis, answer: Answer, answers: Sequence[Answer] = ()) -> Answer:
    """Store a person's answer with the run; ``answers``, those stored before it, tell what it was asked as.

    Raises:
        BadAnswer: the run has no such step.
        SourceError: the source cannot be written.
    """
    run = analysis.run
    if answer.step_id not in {s.step_id for s in run.steps}:
        raise BadAnswer(f"step_id: run {run.run_id} has no step {answer.step_id[:40]!r}")
    # The question the page showed was worked out over the stored answers (`ask_state`): an answer to it is
    # stored with what it was asked as (an audit, a question), so the next request's search takes it so too.
    search = GuidedSearch(analysis, answers, once=True)
    search.next_question()
    return AnswerLog(source, run.run_id, known=[run.run_id]).save(search.stamp(answer))


__all__ = ["ADMISSIBLE", "MAX_BODY", "WORDS", "BadAnswer", "SourceError", "ask_state", "parse_answer", "store_answer", "stored_answers"]
