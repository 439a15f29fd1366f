"""Tests of `unlisted-value`: a model answering a field with none of the listed values of it it was given."""

from __future__ import annotations

import json
from typing import Any

from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.core.model import Run, Step


def _ev(run: Run, step_id: str) -> list[Evidence]:
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
    return [e for e in ctx.verdict(step_id).evidence if e.diagnoser == "unlisted-value"]


def _model(answer: dict[str, Any]) -> Run:
    listed = {
        "jobs": [{"job": "J-1"}, {"job": "J-2"}],
        "machines": [{"machine": "M-01"}, {"machine": "M-02"}],
    }
    prompt = {"messages": [{"role": "user", "content": "Assign: " + json.dumps(listed)}]}
    out = {"role": "assistant", "content": json.dumps(answer)}
    return Run("r", "test", steps=(Step("m", "plan", "llm", input=prompt, output=out, start_ns=1, end_ns=2),))


def test_a_value_outside_the_listed_values_of_its_field_is_flagged() -> None:
    """Given machines M-01 and M-02, a model answering machine M-07 (found nowhere upstream) made it up."""
    [e] = _ev(_model({"assignments": [{"job": "J-1", "machine": "M-07"}]}), "m")
    assert "machine='M-07'" in e.reason and "M-01" in e.reason


def test_a_listed_value_is_no_tell() -> None:
    """Picking one of the listed machines is the model's choice: nothing is raised."""
    assert _ev(_model({"assignments": [{"job": "J-2", "machine": "M-02"}]}), "m") == []


def test_a_word_a_sentence_or_a_field_given_no_list_is_no_tell() -> None:
    """A label without a digit (the model's own word), a sentence with a number (its own writing) and a field
    the prompt lists no values of raise nothing."""
    assert _ev(_model({"assignments": [{"job": "J-1", "machine": "spare", "slot": "S-9"}]}), "m") == []
    assert _ev(_model({"assignments": [{"job": "J-1", "machine": "M-01 or M-03"}]}), "m") == []
