"""Tests of the field-value diagnosers: a search answering another kind than the run names, a model answering
a value none of the listed values of its field."""

from __future__ import annotations

import json
from typing import Any

from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.core.model import Run, Step


def _t(sid: str, name: str, kind: str, start: int, **kw: Any) -> Step:
    return Step(sid, name, kind, start_ns=start, end_ns=start + 1, **kw)  # type: ignore[arg-type]


def _ev(run: Run, step_id: str, diagnoser: str = "request-kind") -> list[Evidence]:
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
    return [e for e in ctx.verdict(step_id).evidence if e.diagnoser == diagnoser]


def _run(asked: str, answered_medium: str, *, record_medium: str = "print") -> Run:
    return Run(
        "r",
        "test",
        steps=(
            _t(
                "a",
                "get_record",
                "tool",
                1,
                input={"id": "W-1"},
                output=json.dumps({"id": "W-1", "medium": record_medium}),
            ),
            _t(
                "s",
                "search_rules",
                "retrieval",
                3,
                input={"query": asked},
                output=[
                    {
                        "page_content": "Oils: 150 lux or less.",
                        "metadata": {"rule": "R-4", "medium": answered_medium},
                    }
                ],
            ),
        ),
    )


def test_a_record_of_another_kind_than_the_query_names_is_flagged() -> None:
    """Asked for the rule for a print, answered a record whose medium is oil, where the run has medium=print:
    the search answered another kind than it was asked for."""
    [e] = _ev(_run("display rule for print", "oil"), "s")
    assert "'print'" in e.reason and "medium='oil'" in e.reason


def test_an_answer_holding_the_asked_kind_is_no_tell() -> None:
    """A record whose medium is the one the query names raises nothing."""
    assert _ev(_run("display rule for print", "print"), "s") == []


def test_a_query_naming_no_kind_of_the_run_is_no_tell() -> None:
    """When no earlier output gives the field the value the query names, the query's words are no kind:
    nothing is raised (a word of the query missing from the answer is too common a sight)."""
    assert _ev(_run("display rule for print", "oil", record_medium="drawing"), "s") == []


# -- unlisted ----------------------------------------------------------------------


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
    [e] = _ev(_model({"assignments": [{"job": "J-1", "machine": "M-07"}]}), "m", "unlisted-value")
    assert "machine='M-07'" in e.reason and "M-01" in e.reason


def test_a_listed_value_is_no_tell() -> None:
    """Picking one of the listed machines is the model's choice: nothing is raised."""
    assert _ev(_model({"assignments": [{"job": "J-2", "machine": "M-02"}]}), "m", "unlisted-value") == []


def test_a_word_a_sentence_or_a_field_given_no_list_is_no_tell() -> None:
    """A label without a digit (the model's own word), a sentence with a number (its own writing) and a field
    the prompt lists no values of raise nothing."""
    assert (
        _ev(
            _model({"assignments": [{"job": "J-1", "machine": "spare", "slot": "S-9"}]}),
            "m",
            "unlisted-value",
        )
        == []
    )
    assert (
        _ev(_model({"assignments": [{"job": "J-1", "machine": "M-01 or M-03"}]}), "m", "unlisted-value") == []
    )
