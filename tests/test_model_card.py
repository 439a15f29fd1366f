"""The model card: whether the learned ranker beats the hand ranking, whether it is the default, the framework suites."""

from __future__ import annotations

from typing import Any

from benchmarks.model_card import beats_hand, framework_lines, is_default, learned_section


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


def test_the_benchmarks_section_says_whether_it_beats_the_hand_ranking_and_shows_the_first_model_when_compared() -> None:
    """"does not beat" when it loses, "beats" when it wins, and a row for the first model's recipe when measured."""
    res = _res(0.55, 0.7)
    text = "\n".join(learned_section(res))
    assert "It does not beat the hand ranking" in text and "first model's recipe" not in text
    prev = {cv: {"learned_top1": 0.5, "learned_top3": 0.6} for cv in ("loso", "loro", "kfold")}
    res["previous"] = {**prev, "calibration": {"ece": 0.05, "precision_confident": 0.9, "coverage_confident": 0.1}}
    text = "\n".join(learned_section(_res(0.7, 0.7) | {"previous": res["previous"]}))
    assert "It beats the hand ranking" in text and "| first model's recipe | 50.0 % / 60.0 %" in text


def test_the_section_says_the_default_as_analyze_has_it_however_the_numbers_fall() -> None:
    """Winning the cross-validations does not make the docs call the model the default: analyze's signature does."""
    text = "\n".join(learned_section(_res(0.9, 0.9)))
    assert ("It is the default of `analyze`" in text) == is_default()
    assert ("Not the default" in text) == (not is_default())


def test_the_framework_table_gives_each_suite_the_difference_and_the_paired_wins_and_losses() -> None:
    """Per framework suite: learned and hand top-1, their difference, won/lost cases; pooled and a mean of suites."""
    def row(n: float, lt1: float, ht1: float, won: int, lost: int) -> dict[str, float]:
        return {"n": n, "learned_top1": lt1, "hand_top1": ht1, "learned_top3": 0.9, "hand_top3": 0.8,
                "won": float(won), "lost": float(lost)}

    lines = framework_lines({"loso_framework": {
        "all": row(30, 0.5, 0.4, 4, 1), "suite_b": row(10, 0.6, 0.4, 3, 1), "suite_c": row(20, 0.45, 0.4, 1, 0)}})
    text = "\n".join(lines)
    assert "| suite_b | 10 | 60.0 % | 40.0 % | +20.0 | 3 / 1 |" in text
    assert "| all (pooled) | 30 | 50.0 % | 40.0 % | +10.0 | 4 / 1 |" in text
    assert "| mean of suites | 30 | 52.5 % | 40.0 % | +12.5 | - |" in text
    assert framework_lines({}) == []


def test_the_card_says_which_calibration_goal_is_missed() -> None:
    """Coverage at `confident` under 30 % is named as missed; all goals met says so."""
    from benchmarks.model_card import _calibration_goals

    cal = {"ece": 0.04, "precision_confident": 0.9, "coverage_confident": 0.23}
    assert "coverage at `confident` 23 % < 30 %" in _calibration_goals(cal)[0]
    assert "goals met" in _calibration_goals({**cal, "coverage_confident": 0.4})[0]


def test_the_card_lists_every_calibrator_with_its_nested_precision_and_marks_the_shipped_one() -> None:
    """Each calibrator tried is a row (error, error with the suite left out, in-sample and nested
    `confident` precision/coverage); the shipped one says so."""
    from benchmarks.model_card import _calibration_variants

    v = {"ece": 0.04, "ece_by_suite": 0.05, "confident": 0.87, "precision_confident": 0.91,
         "coverage_confident": 0.04, "nested_precision": 0.75, "nested_coverage": 0.06}
    cal = {"method": "margin", "variants": {"isotonic": {**v, "ece": 0.09}, "margin": v}}
    lines = _calibration_variants(cal)
    assert len([ln for ln in lines if ln.startswith("| ") and "calibrator" not in ln]) == 2
    assert any("margin over the runner-up alone (shipped) | 0.040 | 0.050 |" in ln and "75 %" in ln for ln in lines)
    assert _calibration_variants({"method": "platt"}) == []


def test_with_no_threshold_on_enough_cases_the_card_says_the_verdict_is_never_confident() -> None:
    """A threshold above 1 (none qualified) reads as "never `confident`", not as a precision of a dash."""
    from benchmarks.model_card import _calibration_goals

    cal = {"ece": 0.04, "confident": 1.01, "precision_confident": float("nan"), "coverage_confident": 0.0}
    [line, _] = _calibration_goals(cal)
    assert "never `confident`" in line and "0.04" not in line and "precision at" not in line


def test_the_card_gives_confident_per_setting_under_both_rules_and_whether_the_split_was_kept() -> None:
    """The calibration section shows, for a run alone and with references, the one threshold's and the per-setting
    thresholds' nested precision and coverage, and says which rule the model uses."""
    from benchmarks.model_card import _setting_lines

    def v(t: float, prec: float) -> dict[str, Any]:
        return {"n": 100, "top1": 0.5, "confident": t, "ece": 0.04, "precision": prec, "coverage": 0.2,
                "nested_right": 18, "nested_confident": 20, "nested_precision": prec, "nested_coverage": 0.2}

    by = {"one": {k: v(0.76, 0.9) for k in ("alone", "references", "pooled")},
          "split": {"alone": v(0.81, 0.91), "references": v(0.7, 0.92), "pooled": v(0.81, 0.915)},
          "split_terms": "pnmhr", "kept": True}
    text = "\n".join(_setting_lines(by))
    assert "| a threshold per setting, alone | 100 | 50 % | 0.810 |" in text
    assert "| a threshold per setting, pooled | 100 | 50 % | each its own |" in text
    assert "Kept" in text and "Model.confident_references" in text
    assert "Not kept" in "\n".join(_setting_lines({**by, "kept": False}))
