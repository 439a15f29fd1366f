"""The model card's rule for making the learned ranker the default, and its comparison with the first model."""

from __future__ import annotations

from typing import Any

from benchmarks.model_card import beats_hand, learned_section


def _res(loso: float, loro: float, hand: float = 0.6) -> dict[str, Any]:
    row = {"n": 10.0, "learned_top3": 0.8, "hand_top1": hand, "hand_top3": 0.7, "first_top1": 0.1, "first_top3": 0.2}
    cal = {"ece": 0.04, "raw_ece": 0.1, "confident": 0.8, "likely": 0.5, "precision_confident": 0.9,
           "coverage_confident": 0.4, "precision_likely": 0.7, "coverage_likely": 0.8, "method": "platt"}
    return {
        "loso": {"all": {**row, "learned_top1": loso}},
        "loro": {"all": {**row, "learned_top1": loro}},
        "kfold": {"all": {**row, "learned_top1": 0.7}},
        "calibration": cal,
    }


def test_the_model_is_the_default_only_when_it_beats_the_hand_ranking_left_out_by_suite_and_by_route() -> None:
    """Beating the hand ranking on one of the two cross-validations is not enough."""
    assert beats_hand(_res(0.65, 0.61))
    assert not beats_hand(_res(0.65, 0.6))
    assert not beats_hand(_res(0.59, 0.7))


def test_the_benchmarks_section_says_whether_it_is_the_default_and_shows_the_first_model_when_compared() -> None:
    """The section says "Not the default" when it loses, and a row for the first model's recipe when measured."""
    res = _res(0.55, 0.7)
    text = "\n".join(learned_section(res))
    assert "Not the default" in text and "first model's recipe" not in text
    prev = {cv: {"learned_top1": 0.5, "learned_top3": 0.6} for cv in ("loso", "loro", "kfold")}
    res["previous"] = {**prev, "calibration": {"ece": 0.05, "precision_confident": 0.9, "coverage_confident": 0.1}}
    text = "\n".join(learned_section(_res(0.7, 0.7) | {"previous": res["previous"]}))
    assert "The default of `analyze`" in text and "| first model's recipe | 50.0 % / 60.0 %" in text
