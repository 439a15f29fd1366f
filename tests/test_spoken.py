"""Tests of what a failure's message speaks of beyond its values (`trajdebug.analysis._spoken`)."""

from __future__ import annotations

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


def _stalls(message: str) -> Run:
    """A market's stall booking: a planner lists the steps (``licence`` among them), a check is handed the
    plan and answers its verdict only, the licence lookup answers an expired licence, and the booking service
    refuses the licence it was handed, naming the argument by its key."""
    steps = (
        step("p", "plan_booking", "other", 1, {"stall": "S-4"}, {"steps": ["pitch", "licence", "pay"]}),
        step("c", "check_pitch", "condition", 3, {"stall": "S-4", "steps": ["pitch", "licence", "pay"]},
             {"stall": "S-4", "ok": True}, "p"),
        step("l", "find_licence", "retrieval", 5, {"stall": "S-4"}, {"licence": "LIC-S-4-2024", "ends": "2024-12-31"}),
        step("b", "book_stall", "tool", 7, {"stall": "S-4", "licence": "LIC-S-4-2024", "pitch_ok": True}, None,
             "c", "l", status="error", error=ErrorInfo("Refused", message)),
    )
    return Run("r", "market", outcome="failure", steps=steps)


def test_a_word_naming_an_argument_of_the_failing_step_is_no_value_an_earlier_step_lost() -> None:
    """A refusal ``{"error": "licence", ...}`` names the ``licence`` argument it was handed: the check that was
    given the word in a plan's step list and answered its verdict lost nothing the failure expects."""
    loc = localize(_stalls('HTTP 403: {"error": "licence", "detail": "LIC-S-4-2024 ended on 2024-12-31"}'))
    by_id = {c.step_id: c for c in loc.ranked_all}
    assert not any("'licence'" in r and "did not pass it on" in r for r in by_id["c"].reasons)
    assert loc.ranked_all[0].step_id == "l"
