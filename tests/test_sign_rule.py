"""A sign a step sets by a rule of its input, as its other calls show, is no altered value."""

from __future__ import annotations

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


def _book(second_side: str) -> Run:
    """Two trades marked by one step (a sale booked negative), summed, and a recon check that fails."""
    steps = (
        step("t1", "read_ticket", "tool", 1, {"id": "T-1"}, {"side": "sell", "mwh": 4032}),
        step("m1", "mark_position", "other", 3, {"side": "sell", "mwh": 4032}, {"mwh": -4032}, "t1"),
        step("t2", "read_ticket", "tool", 5, {"id": "T-2"}, {"side": second_side, "mwh": 6720}),
        step("m2", "mark_position", "other", 7, {"side": second_side, "mwh": 6720}, {"mwh": 6720}, "t2"),
        step("a", "aggregate", "other", 9, {"positions": [-4032, 6720]}, {"net_mwh": 2688}, "m1", "m2"),
        step(
            "c",
            "recon_check",
            "tool",
            11,
            {"net_mwh": 2688},
            None,
            "a",
            status="error",
            error=ErrorInfo("ReconBreak", "book net 2,688 vs broker confirms -10,752"),
        ),
    )
    return Run("r", "trading", outcome="failure", steps=steps)


def _altered(run: Run) -> set[str]:
    loc = localize(run)
    return {c.step_id for c in loc.ranked_all if "lineage:altered" in c.signals}


def test_a_sign_the_step_flips_for_one_side_and_keeps_for_the_other_is_its_rule() -> None:
    """A sell booked negative where the same step keeps a buy positive follows its input: no altered value."""
    assert "m1" not in _altered(_book("buy"))


def test_a_sign_flipped_where_another_call_with_the_same_input_kept_it_is_still_altered() -> None:
    """Two sells, one negated and one not: nothing in the input tells them apart, so the flip stays suspect."""
    assert "m1" in _altered(_book("sell"))
