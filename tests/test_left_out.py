"""Items a step left out of a list it was given, where they make up the gap the failure states."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


_ITEMS = [
    {"date": "11-03", "kind": "taxi", "amount": 38.0},
    {"date": "11-04", "kind": "meal", "amount": 27.5},
    {"date": "11-04", "kind": "meal", "amount": 64.0},
    {"date": "11-05", "kind": "train", "amount": 54.9},
]


def _run(kept: list[dict[str, Any]], message: str) -> Run:
    total = round(sum(i["amount"] for i in kept), 2)
    return Run(
        "r",
        "claims",
        outcome="failure",
        steps=(
            step("p", "parse_lines", "parse", 1, {"text": "..."}, _ITEMS),
            step("d", "dedupe", "other", 3, {"items": _ITEMS}, kept, "p"),
            step("t", "add_up", "other", 5, {"items": kept}, {"total": total}, "d"),
            step(
                "w",
                "decide",
                "tool",
                7,
                {"total": total},
                None,
                "t",
                status="error",
                error=ErrorInfo("Mismatch", message),
            ),
        ),
    )


def test_items_left_out_that_make_up_the_stated_gap_point_at_the_step_that_dropped_them() -> None:
    """A step that returned its list minus an item whose amount is the gap between the two totals the failure states ranks first."""
    kept = [i for i in _ITEMS if i["amount"] != 64.0]
    loc = localize(_run(kept, "paid 120.40 but the statement says 184.40"))
    top = loc.candidates[0]
    assert top.step_id == "d"
    assert "lineage:dropped" in top.signals
    assert any("64" in r and "120.40" in r for r in top.reasons)


def test_items_left_out_that_make_up_no_stated_gap_say_nothing() -> None:
    """A filter whose left-out items add up to no gap the failure states gets no such evidence."""
    kept = [i for i in _ITEMS if i["amount"] != 64.0]
    loc = localize(_run(kept, "paid 120.40 but the statement says 999.99"))
    assert all("lineage:dropped" not in c.signals for c in loc.ranked_all if c.step_id == "d")


def _parsed(head: int, message: str) -> Run:
    text = "Order SB-1: farm Glenroy; ewes 1,240 + rams 35; start 2026-12-14"
    return Run(
        "r",
        "contracts",
        outcome="failure",
        steps=(
            step("m", "model", "llm", 1, {"messages": [{"role": "user", "content": text}]}, {"role": "assistant", "content": text}),
            step("p", "parse_order", "other", 3, text, {"order": "SB-1", "head": head}, "m"),
            step("c", "quote", "other", 5, {"head": head}, {"head": head, "rate": 4.1}, "p"),
            step("s", "submit", "tool", 7, {"head": head, "rate": 4.1}, None, "c", status="error",
                 error=ErrorInfo("Mismatch", message)),
        ),
    )


def test_a_part_of_a_written_amount_left_out_points_at_the_parse_that_kept_the_first_part() -> None:
    """A parse that read ``1,240 + 35`` in its text as 1240, where the failure states 1275 against 1240, ranks first
    for leaving out the 35; the model that handed the whole text on, both parts in it, does not."""
    loc = localize(_parsed(1240, "register shows 1275 head, contract states 1240"))
    top = loc.candidates[0]
    assert top.step_id == "p"
    assert any("35" in r and "1275" in r for r in top.reasons)
    assert all("lineage:dropped" not in c.signals for c in loc.ranked_all if c.step_id == "m")


def test_a_part_left_out_that_is_no_stated_gap_says_nothing() -> None:
    """The same parse, where the failure states numbers 35 apart from neither part of the text, gets no such finding."""
    loc = localize(_parsed(1240, "register shows 1300 head, contract states 1265"))
    assert all("left out the" not in r for c in loc.ranked_all if c.step_id == "p" for r in c.reasons)


def _planner_run(plan: str, message: str) -> Run:
    stops = ["Yentna", "Finger Lake", "Rainy Pass", "Rohn"]
    return Run(
        "r",
        "resupply",
        outcome="failure",
        steps=(
            step("l", "list_stops", "tool", 1, {"route": "south"}, {"route": "south", "stops": stops}),
            step("e", "read_entry", "other", 2, {"team": "T-8"}, {"team": "T-8", "dogs": 14, "musher": "A. Koenig"}),
            step(
                "m",
                "plan_drops",
                "llm",
                3,
                {"messages": [{"role": "user", "content": json.dumps({"team": "T-8", "stops": stops})}]},
                {"role": "assistant", "content": plan},
                "l",
                "e",
            ),
            step("s", "stage", "tool", 5, {"team": "T-8", "plan": plan}, {"team": "T-8", "bags": 3}, "m"),
            step(
                "f",
                "signoff",
                "tool",
                7,
                {"team": "T-8", "bags": 3},
                None,
                "s",
                status="error",
                error=ErrorInfo("Refused", message),
            ),
        ),
    )


def test_a_list_item_the_failure_says_is_missing_points_at_the_step_that_left_it_out() -> None:
    """A planner given four stops that passed on three, leaving out the one the failure says has no drop, ranks first."""
    loc = localize(_planner_run("DROPS: Yentna > Finger Lake > Rohn", "team T-8 has no drop at Rainy Pass"))
    top = loc.candidates[0]
    assert top.step_id == "m"
    assert any("'Rainy Pass'" in r and "3 of the 4" in r for r in top.reasons)


def test_a_name_the_step_passed_on_or_a_name_in_no_list_is_no_item_left_out() -> None:
    """A planner that kept every stop, or a failure naming a value no step was given in a list, says nothing of this kind."""
    kept = localize(_planner_run("DROPS: Yentna > Finger Lake > Rainy Pass > Rohn", "team T-8 has no drop at Rainy Pass"))
    musher = localize(_planner_run("DROPS: Yentna > Finger Lake > Rohn", "team T-8 has no musher A. Koenig"))
    for loc in (kept, musher):
        assert not any("items of a list it was given" in r for c in loc.ranked_all for r in c.reasons)
