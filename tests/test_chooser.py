"""Routing functions: a step answering the name of the step it chose hands its input on to it."""

from __future__ import annotations

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


def _permit(chosen_gets_overlay: bool) -> Run:
    """A parsed application routed to a review node, which asks the zoning lookup; the permit is refused."""
    state = {"parcel": "P-12", "zone": "R-1", "overlay": "CZ-2"}
    review_in = dict(state) if chosen_gets_overlay else {"parcel": "P-12", "zone": "R-1"}
    steps = (
        step("p", "parse_application", "other", 1, "parcel P-12 zone R-1 overlay CZ-2", state),
        step("r", "route", "other", 3, state, "residential_review", "p"),
        step("v", "residential_review", "agent", 5, review_in, {"setback_ft": 10}, "r"),
        step("z", "zoning_lookup", "tool", 6, {"parcel": "P-12"}, {"setback_ft": 10}, "p", parent_id="v"),
        step(
            "i",
            "issue_permit",
            "tool",
            9,
            {"parcel": "P-12", "setback_ft": 10},
            None,
            "z",
            "v",
            status="error",
            error=ErrorInfo("ValueError", "the application lies in CZ-2; a 10 ft setback is not valid there"),
        ),
    )
    return Run("r", "permits", outcome="failure", steps=steps)


def _router_dropped(run: Run) -> bool:
    loc = localize(run)
    return any(c.step_id == "r" and "lineage:dropped" in c.signals for c in loc.ranked_all)


def test_a_router_whose_chosen_node_was_given_the_value_lost_nothing() -> None:
    """``route`` answering ``residential_review``, which was handed the same state with the overlay, did not drop the overlay."""
    assert not _router_dropped(_permit(chosen_gets_overlay=True))


def test_a_router_whose_chosen_node_lacks_the_value_is_still_a_dropper() -> None:
    """When the node it chose was not handed the overlay, the value was lost on the router's way: the finding stays."""
    assert _router_dropped(_permit(chosen_gets_overlay=False))


def _ended(next_gets_overlay: bool) -> Run:
    """A desk node's router answers an end sentinel naming no step; the graph's next node, outside the desk, is handed the state."""
    state = {"parcel": "P-12", "zone": "R-1", "overlay": "CZ-2"}
    review_in = dict(state) if next_gets_overlay else {"parcel": "P-12", "zone": "R-1"}
    steps = (
        step("p", "parse_application", "other", 1, "parcel P-12 zone R-1 overlay CZ-2", state),
        step("d", "desk", "agent", 2, state, {"note": "done"}, "p"),
        step("r", "route", "other", 3, state, "__end__", "p", parent_id="d"),
        step("v", "review", "other", 5, review_in, {"setback_ft": 10}, "r"),
        step(
            "i",
            "issue_permit",
            "tool",
            9,
            {"parcel": "P-12", "setback_ft": 10},
            None,
            "v",
            status="error",
            error=ErrorInfo("ValueError", "the application lies in CZ-2; a 10 ft setback is not valid there"),
        ),
    )
    return Run("r", "permits", outcome="failure", steps=steps)


def test_a_router_ending_its_node_hands_the_state_to_the_next_node() -> None:
    """``route`` answering ``__end__`` (no step's name) lost nothing when the next node outside its own was handed the overlay."""
    assert not _router_dropped(_ended(next_gets_overlay=True))


def test_a_router_ending_its_node_is_still_a_dropper_when_the_next_node_lacks_the_value() -> None:
    """When the node that ran next was not handed the overlay, the end sentinel's router keeps the finding."""
    assert _router_dropped(_ended(next_gets_overlay=False))
