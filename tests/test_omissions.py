"""Tests of what is, and is not, an omission (`trajdebug.analysis._omissions`)."""

from __future__ import annotations

import json

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


def _booking(arg: str) -> Run:
    """A clerk model shown a job (its move date and the day the record was created) that reserves a truck for
    the creation day under argument ``arg``; the booking desk refuses the mismatch."""
    job = {"job": "PM-5", "date": "2026-12-11", "created": "2026-12-01"}
    return Run(
        "r",
        "movers",
        outcome="failure",
        steps=(
            step("j", "lookup_job", "tool", 1, {"job_id": "PM-5"}, job),
            step(
                "m",
                "clerk_model",
                "llm",
                3,
                {"messages": [{"role": "system", "content": "Reserve a truck."},
                              {"role": "user", "content": json.dumps(job)}]},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "name": "reserve_truck", "arguments": {arg: "2026-12-01"}}]},
                "j",
            ),
            step("t", "reserve_truck", "tool", 5, {"date": "2026-12-01"}, {"truck": "T-3", "date": "2026-12-01"}, "m"),
            step(
                "b",
                "confirm_booking",
                "tool",
                7,
                {"job": "PM-5", "truck_date": "2026-12-01"},
                None,
                "t",
                "j",
                status="error",
                error=ErrorInfo("Refused", "truck held for 2026-12-01, move is booked for 2026-12-11"),
            ),
        ),
    )


def _clerk_reasons(run: Run) -> list[str]:
    loc = localize(run)
    return [r for c in loc.ranked_all if c.step_id == "m" for r in c.reasons]


def test_a_value_put_under_the_field_its_rival_was_given_under_is_read_as_the_wrong_field() -> None:
    """A model that put the creation date where it was given the move date read the wrong field: its loss of the
    move date counts in full (it ranks first), and its sentence says so."""
    loc = localize(_booking("date"))
    assert loc.candidates[0].step_id == "m"
    assert any("given under another field" in r for r in _clerk_reasons(_booking("date")))


def test_a_value_under_a_field_neither_was_given_under_is_a_choice_between_given_values() -> None:
    """A model that filled an argument named like neither field (``day``) chose between the given dates: a
    choice, as before, not the wrong field read."""
    reasons = _clerk_reasons(_booking("day"))
    assert any("a choice between given values" in r for r in reasons)
    assert not any("given under another field" in r for r in reasons)
