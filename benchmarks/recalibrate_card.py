"""The model card's section on the recalibration (`benchmarks.recalibrate`), rendered from its saved results.

Apart from `benchmarks.recalibrate` so that the card (`benchmarks.model_card`, which `benchmarks.train` renders)
reads the results without importing the recalibration, which imports `benchmarks.train`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


RESULTS = Path(__file__).resolve().parent / "recalibrate_results.json"
"""The measured numbers and the decision (`benchmarks.recalibrate.evaluate`)."""


def pct(x: float) -> str:
    """A share as a percentage with one decimal ("-" when undefined)."""
    return "-" if math.isnan(x) else f"{100 * x:.1f} %"


def _cell(part: dict[str, Any]) -> str:
    if not part["confident"]:
        return "never | 0.0 %"
    return f"{part['right']} / {part['confident']} = {pct(part['precision'])} | {pct(part['coverage'])}"


def _table(rows: Sequence[tuple[str, dict[str, Any]]]) -> list[str]:
    out = ["| calibrator, setting | runs | top-1 | ECE | right / `confident` | coverage |", "|---|---:|---:|---:|---:|---:|"]
    for label, v in rows:
        for key, part in (("alone", v["by_setting"]["alone"]), ("with references", v["by_setting"]["references"]),
                          ("pooled", v["pooled"])):
            out.append(f"| {label}, {key} | {part['n']} | {pct(part['top1'])} | {part['ece']:.3f} | {_cell(part)} |")
    return out


def card_lines(res: dict[str, Any] | None) -> list[str]:
    """The model card's section on the recalibration (docs/model-card.md), from ``res`` (`evaluate`)."""
    if not res or "method" not in res:
        return []
    f, suites = res["final"], res["suites"]
    shipped = res["shipped"]
    out = [
        "### Recalibration on suites the model never saw (the shipped calibrator and thresholds)",
        "",
        "The calibrator and thresholds above were fitted on predictions of suites the trees were trained on, and were",
        f"too sure on fresh agents. The {len(suites)} framework suites absent from the model's data ({suites[0]} to"
        f" {suites[-1]}, {res['rows']} analyses: each case alone and with references) are out of sample for the trees,",
        "so the shipped calibrator is refitted there (`python -m benchmarks.recalibrate`, `rescale`): for each setting,",
        "whether the best candidate was right regressed on the previous calibrator's log-odds (an intercept and a slope,",
        "so within a setting the order of confidences, and every ranking, is unchanged), and each setting's `confident`",
        "threshold the lowest confidence at which that setting's rows are right at least 90 % of the time over at least",
        "20 runs, never `confident` when none is. Shipped:",
        f"`platt` {[round(c, 4) for c in f['platt']]} alone, `platt_references` {[round(c, 4) for c in f['platt_references']]};",
        ("`confident` never alone" if f["confident"] > 1 else f"`confident` >= {f['confident']:.3f} alone")
        + f", >= {f['confident_references']:.3f} with references.",
        "",
        "Nested: each suite scored by the calibrator and thresholds fitted on the other suites only (every row scored",
        "once, by a fit that never saw its suite), against the previous calibrator (one threshold,"
        f" {shipped['confident']}) on the same rows:",
        "",
        *_table([("previous", shipped), ("rescaled, nested", res["nested"]),
                 ("round 48's refit (Platt on pnmh, a threshold per setting), nested", res["refit_nested"])]),
        "",
        "A run alone is never `confident`: on these suites no confidence of a run alone was right 90 % of the time",
        "over 20 runs or more (the runs alone the previous calibrator was surest of: the top 20 right 75 %, the top 100",
        "77 %; a logistic calibrator over all 84 features of the best candidate reached 85 % at 3.7 % coverage, nested).",
        "The wrong `confident` runs alone had no mark the right ones lacked: each had an origin mark (as 93 % of the",
        "right ones), their margin over the runner-up was as large (3.2 against 3.1 log-odds), and they sat just above",
        "the threshold (ZZN/ZZO's three at 0.763 to 0.766 against 0.763). What would settle such a run is what the",
        "`unsure` text says: a passing run of the agent as a reference, `--judge`, or `--verify`.",
        "",
        "Chosen after trying, on the same nested rows, a full Platt refit on probability, steps, margin and hand score",
        "(with and without the setting as a term; one calibrator per setting), with the best candidate's signal count,",
        "suspicion, reference-grounded evidence or the runner-up's hand score as terms, thresholds with a Wilson lower",
        "bound, and the previous calibrator with only its thresholds re-chosen; rescaling was the one that met the rule",
        "(nested precision >= 89.5 %, ECE <= 0.05, above the previous calibrator's precision). Choosing among them on",
        "these rows flatters its nested precision a little: the next fresh pair is its test. Goals missed: precision",
        "at `confident` 90 % and coverage 30 %.",
    ]
    pairs = res["nested"]["by_pair"]
    out += ["", "By suite pair (both settings; the pairs as written, each scored once held out first):", "",
            "| suites | runs | previous right / `confident` | rescaled, nested |", "|---|---:|---:|---:|",
            *[f"| {k} | {v['n']} | {shipped['by_pair'][k]['right']} / {shipped['by_pair'][k]['confident']} |"
              f" {v['right']} / {v['confident']} |" for k, v in pairs.items()]]
    if "older" in res:
        o = res["older"]
        out += ["", f"On the {len(o['suites'])} framework suites the trees were trained on (in sample for the trees,"
                " so optimistic for both calibrators):", "",
                *_table([("previous", o["shipped"]), ("rescaled", o["final"])]), "",
                "There the trees' best candidate is right more often than on agents they never saw, so the rescaled",
                "calibrator reads low (its error there is that gap, not a miscalibration on fresh suites); `confident`",
                "is no less precise, on fewer runs, and never of a run alone."]
    return [*out, ""]


__all__ = ["RESULTS", "card_lines", "pct"]
