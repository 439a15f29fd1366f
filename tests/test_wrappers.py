"""Tests for `trajdebug.analysis._wrappers`: which model call wrote a wrapper's answer."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from trajdebug.analysis._wrappers import answered_inside
from trajdebug.core.model import Dependency, Run, Step


def _slice(steps: list[Step]) -> Any:
    run = Run(run_id="r1", name="greenhouse", start_ns=1, end_ns=100, outcome="failure", steps=tuple(steps))
    return SimpleNamespace(run=run, has_children=frozenset(s.parent_id for s in steps if s.parent_id))


_ANSWER = {"role": "assistant", "content": None, "tool_calls": [{"name": "vent", "arguments": {"bay": "B-4"}}]}


def _steps(model_start: int, model_end: int) -> list[Step]:
    node = Step("n", "greenhouse_node", kind="agent", start_ns=10, end_ns=60)
    wrapper = Step(
        "w",
        "call_climate_model",
        parent_id="n",
        input={"messages": [{"role": "user", "content": "too hot", "name": "climate_desk"}]},
        output={"messages": [{**_ANSWER, "name": "climate_desk"}]},
        start_ns=11,
        end_ns=50,
        deps=(Dependency("m", "data", "declared", 1.0),),
    )
    model = Step("m", "ChatModel", kind="llm", parent_id="n", output=_ANSWER, start_ns=model_start, end_ns=model_end)
    return [node, wrapper, model]


def test_a_wrapper_that_ran_a_model_call_recorded_beside_it_is_answered_by_that_call() -> None:
    """A code step that declares it took the answer of a model call run within its own span (recorded as its
    sibling) and returns that answer, stamped with a name it was given, only passed the model's answer on."""
    found = answered_inside(_slice(_steps(12, 49)))
    assert {w: s.step_id for w, s in found.items()} == {"w": "m"}


def test_a_model_call_outside_the_wrappers_span_did_not_answer_for_it() -> None:
    """A model call that ended after the code step did is no call the step made: its answer is the step's own."""
    found = answered_inside(_slice(_steps(12, 70)))
    assert "w" not in found
