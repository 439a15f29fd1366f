"""Explanations: why the chosen root erred, in the engineer's terms.

The ranking says *where*; the deterministic evidence says *what* (a value
that changed, an invariant broken).  The explanation says *why* the step went
wrong, in one of a few kinds an engineer acts on differently: an ambiguous
instruction (fix the prompt), conflicting context (fix what the step was
shown), stale data (fix the source or its cache), missing information, wrong
tool use, a faulty tool or data source, a reasoning error, a formatting error.

It is asked once per run, for the top of the final ranking, after the
verdicts: the model sees the step (redacted), the task, the failure and the
verdict that counts.  It is shown in the report as a reason of that root
cause (``why it erred (model): ...``) and under ``judge.explanation`` in the
JSON; it never changes the ranking.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trajdebug.judge.client import JudgeError
from trajdebug.judge.prompts import EXPLANATION_SCHEMA, Redaction, clean, explanation_messages
from trajdebug.judge.shortlist import Entry, Shortlist
from trajdebug.judge.structured import Session


SIGNAL = "judge:explanation"
"""The signal on the root cause the explanation is about."""


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why the chosen root erred."""

    step_id: str
    """The step explained."""
    run_id: str | None
    """The earlier turn holding it (None: the analyzed run)."""
    cause: str
    """The kind of cause (`trajdebug.judge.prompts.CAUSES`)."""
    text: str
    """The explanation, at most a few sentences (cleaned: one line, no control characters)."""

    def line(self) -> str:
        """The explanation as one reason line."""
        return f"why it erred (model): {self.cause}: {self.text}"

    def to_dict(self) -> dict[str, Any]:
        """The explanation as JSON data."""
        return {"step_id": self.step_id, "run_id": self.run_id, "cause": self.cause, "text": self.text}


def explain(
    session: Session,
    task: str,
    failure: str,
    entry: Entry,
    shortlist: Shortlist,
    verdict: str,
    red: Redaction,
    limit: int,
) -> Explanation:
    """Ask why ``entry``'s step erred.

    Args:
        session: The analysis's conversation with the model.
        task: The run's task.
        failure: How the run failed.
        entry: The chosen root (shortlisted).
        shortlist: The shortlist (for the labels of its path).
        verdict: The verdict that counts on it, in words.
        red: The redaction everything passes through.
        limit: Characters per input or output.

    Raises:
        JudgeError: the model could not answer (or the budget did not allow the question).
    """
    messages = explanation_messages(task, failure, entry, shortlist, verdict, red, limit)
    answer = session.ask("explanation", messages, EXPLANATION_SCHEMA)
    if not isinstance(answer, Mapping):
        raise JudgeError("explanation: the answer is not an object")
    return Explanation(entry.step.step_id, entry.run_id, str(answer["cause"]), clean(answer["explanation"], 600))


__all__ = ["SIGNAL", "Explanation", "explain"]
