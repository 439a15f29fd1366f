"""Tests of what is, and is not, an omission (`trajdebug.analysis._omissions`)."""

from __future__ import annotations

import json

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


def _booking(arg: str) -> Run:
    """A desk model shown a trip (its paddling date and the day the record was created) that reserves a kayak for
    the creation day under argument ``arg``; the trip desk refuses the mismatch."""
    trip = {"trip": "KT-8", "date": "2027-06-19", "created": "2027-06-04"}
    return Run(
        "r",
        "paddling",
        outcome="failure",
        steps=(
            step("j", "lookup_trip", "tool", 1, {"trip_id": "KT-8"}, trip),
            step(
                "m",
                "desk_model",
                "llm",
                3,
                {"messages": [{"role": "system", "content": "Reserve a kayak."},
                              {"role": "user", "content": json.dumps(trip)}]},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "name": "reserve_kayak", "arguments": {arg: "2027-06-04"}}]},
                "j",
            ),
            step("t", "reserve_kayak", "tool", 5, {"date": "2027-06-04"}, {"kayak": "K-3", "date": "2027-06-04"}, "m"),
            step(
                "b",
                "confirm_trip",
                "tool",
                7,
                {"trip": "KT-8", "kayak_date": "2027-06-04"},
                None,
                "t",
                "j",
                status="error",
                error=ErrorInfo("Refused", "kayak held for 2027-06-04, trip is booked for 2027-06-19"),
            ),
        ),
    )


def _desk_reasons(run: Run) -> list[str]:
    loc = localize(run)
    return [r for c in loc.ranked_all if c.step_id == "m" for r in c.reasons]


def test_a_value_put_under_the_field_its_rival_was_given_under_is_read_as_the_wrong_field() -> None:
    """A model that put the creation date where it was given the paddling date read the wrong field: its loss of the
    paddling date counts in full (it ranks first), and its sentence says so."""
    loc = localize(_booking("date"))
    assert loc.candidates[0].step_id == "m"
    assert any("given under another field" in r for r in _desk_reasons(_booking("date")))


def test_a_value_under_a_field_neither_was_given_under_is_a_choice_between_given_values() -> None:
    """A model that filled an argument named like neither field (``day``) chose between the given dates: a
    choice, as before, not the wrong field read."""
    reasons = _desk_reasons(_booking("day"))
    assert any("a choice between given values" in r for r in reasons)
    assert not any("given under another field" in r for r in reasons)


def _film_order(length: int) -> Run:
    """A greenhouse model shown a bench record (its length in metres and its tray count) that orders film of
    ``length`` metres; the film check refuses film shorter than the bench."""
    bench = {"bench": "GB-2", "length_m": 48, "trays": 7}
    return Run(
        "r",
        "greenhouse",
        outcome="failure",
        steps=(
            step("j", "lookup_bench", "tool", 1, {"bench_id": "GB-2"}, bench),
            step(
                "m",
                "film_model",
                "llm",
                3,
                {"messages": [{"role": "system", "content": "Order film for the bench."},
                              {"role": "user", "content": json.dumps(bench)}]},
                {"role": "assistant", "content": None,
                 "tool_calls": [{"id": "c1", "name": "order_film", "arguments": {"length_m": length}}]},
                "j",
            ),
            step("t", "order_film", "tool", 5, {"length_m": length}, {"order": f"F-{length}", "length_m": length}, "m"),
            step(
                "b",
                "check_film",
                "tool",
                7,
                {"bench": "GB-2", "order": f"F-{length}"},
                None,
                "t",
                "j",
                status="error",
                error=ErrorInfo("Refused", f"film F-{length} covers {length} m, bench is 48 m"),
            ),
        ),
    )


def test_a_number_put_under_the_field_its_rival_was_given_under_is_read_as_the_wrong_field() -> None:
    """A model given a bench's length_m=48 and trays=7 that ordered length_m=7 read the tray count as the length:
    the number it put there came from another field, so its loss of 48 counts in full and its sentence says so;
    a length it worked out itself (24, given under no field) is no misfiled number."""
    assert any("given under another field" in r for r in _desk_reasons(_film_order(7)))
    assert not any("given under another field" in r for r in _desk_reasons(_film_order(24)))
