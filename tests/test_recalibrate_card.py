"""benchmarks.recalibrate_card: the model card's section on the recalibration, from its saved results."""

from __future__ import annotations

import json

from benchmarks.recalibrate_card import RESULTS, card_lines, pct


def test_results_without_the_candidate_render_nothing() -> None:
    """Results of a recalibration that predates the per-setting candidate (no ``method``), or none, add no section."""
    assert card_lines(None) == [] and card_lines({"suites": ["suite_zj"], "rows": 80}) == []


def test_the_saved_results_say_a_run_alone_is_never_confident_and_give_the_nested_table() -> None:
    """The section names the command, says a run alone is never `confident` when its threshold is above 1, and
    tabulates the nested precision of each setting beside the previous calibrator's."""
    res = json.loads(RESULTS.read_text())
    text = "\n".join(card_lines(res))
    assert "python -m benchmarks.recalibrate" in text and "| rescaled, nested, with references |" in text
    assert ("`confident` never alone" in text) == (res["final"]["confident"] > 1)
    assert pct(res["nested"]["pooled"]["precision"]) in text


def test_a_share_reads_as_a_percentage_with_one_decimal() -> None:
    """0.896 reads 89.6 %; an undefined share reads as a dash."""
    assert pct(0.896) == "89.6 %" and pct(float("nan")) == "-"
