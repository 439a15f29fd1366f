"""Tests of `request-kind`: a search answered with another kind than it asked for, a kind the run names."""

from __future__ import annotations

import json
from typing import Any

from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.core.model import Run, Step


def _t(sid: str, name: str, kind: str, start: int, **kw: Any) -> Step:
    return Step(sid, name, kind, start_ns=start, end_ns=start + 1, **kw)  # type: ignore[arg-type]


def _ev(run: Run, step_id: str) -> list[Evidence]:
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
    return [e for e in ctx.verdict(step_id).evidence if e.diagnoser == "request-kind"]


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
