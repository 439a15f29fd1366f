"""Expectation first: the outline of a correct solution, and the first step that departs from it.

The published attribution methods that work best do not ask a model "which
step is wrong?" cold: they first have it plan how the task should have been
solved, then judge the steps against that plan.  This pass does the first
half from the **task alone** (the model does not see the run, so the plan is
not anchored on what the agent did): an `Outline` of steps and the key values
each should produce.  The verdict question then carries the outline, and the
model marks, per shortlisted step, whether its output departs from it.

The **first departing step** in run order is evidence (the signal
``judge:expectation``), not the answer: it feeds the combination like any
verdict does, and it never removes a deterministic candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajdebug.judge.client import JudgeError
from trajdebug.judge.prompts import OUTLINE_SCHEMA, Redaction, clean, expectation_messages
from trajdebug.judge.structured import Session


SIGNAL = "judge:expectation"
"""The signal on the first shortlisted step whose output departs from the expected outline."""


@dataclass(frozen=True, slots=True)
class OutlineStep:
    """One step of the expected solution."""

    step: str
    """What should be done."""
    key_values: tuple[str, ...] = ()
    """The values it should produce, as far as the task determines them."""


@dataclass(frozen=True, slots=True)
class Outline:
    """The expected solution of a task, planned from the task alone."""

    steps: tuple[OutlineStep, ...]
    """Its steps, in order."""
    answer: str | None = None
    """The expected final answer, when the task determines it."""

    def to_dict(self) -> dict[str, Any]:
        """The outline as JSON data."""
        return {
            "steps": [{"step": s.step, "key_values": list(s.key_values)} for s in self.steps],
            "answer": self.answer,
        }

    @classmethod
    def from_answer(cls, value: Mapping[str, Any]) -> Outline:
        """The outline from a validated answer (`trajdebug.judge.prompts.OUTLINE_SCHEMA`), its text cleaned."""
        steps = tuple(
            OutlineStep(clean(s["step"], 300), tuple(clean(v, 120) for v in s.get("key_values", ())[:12]))
            for s in value["steps"][:15]
        )
        answer = value.get("answer")
        return cls(steps, clean(answer, 300) if isinstance(answer, str) and answer.strip() else None)


def expect(session: Session, task: str, red: Redaction, limit: int) -> Outline:
    """Ask for the expected solution outline of ``task``.

    Raises:
        JudgeError: the model could not answer (or the budget did not allow the question).
    """
    answer = session.ask("expectation", expectation_messages(task, red, limit), OUTLINE_SCHEMA)
    if not isinstance(answer, Mapping):
        raise JudgeError("expectation: the answer is not an object")
    return Outline.from_answer(answer)


def first_departure(order: Sequence[str], departs: Mapping[str, bool | None]) -> str | None:
    """The first label, in run order, the model marked as departing from the outline (None if none)."""
    return next((label for label in order if departs.get(label) is True), None)


__all__ = ["SIGNAL", "Outline", "OutlineStep", "expect", "first_departure"]
