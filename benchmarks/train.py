"""Rebuild the shipped learned ranker: ``python -m benchmarks.train`` (needs the ``train`` extra).

Steps, all seeded (`benchmarks.learning.SEED`):

1. the corpus (`benchmarks.corpus`): the fault-injection suite, tau, Who&When
   Algorithm-Generated, the development blind suites (b, c, e, f, g and h among
   them since 2026-12-02; suites i and j, studied since 2026-12-02, too; suites k and l, held out, never);
2. cross-validation: leave one suite out (reported on every suite, and on the
   framework suites alone: the number recipes are chosen on), leave one
   recording route out, and five folds by agent (Who&When scored only on folds
   it was not trained on); the hand ranking and "always the first step" scored
   on the same cases;
3. calibration: isotonic regression of the best candidate's softmax
   probability, or Platt scaling of it with the run's ranked steps (and the
   margin over the runner-up), on whether it was right, compared on the five
   folds' out-of-fold predictions; the shipped one (`BLIND_TERMS`, since
   2026-12-03) is fitted where the verdict is used: on the framework suites'
   leave-one-suite-out predictions (each scored by a model that never saw its
   suite, as a fresh blind suite is), its ``confident`` threshold chosen on
   them cross-fitted by suite and checked nested (each suite scored at the
   threshold and by the calibrator chosen without it);
4. the final model on every case, fitted with `benchmarks.learning.RECIPE`, written to
   ``src/trajdebug/analysis/model.json``, with docs/model-card.md and
   docs/reliability.png.
5. (since 2026-12-06) the shipped calibrator and ``confident`` thresholds are re-chosen where the trees never
   looked: ``python -m benchmarks.recalibrate --workdir DIR --ship`` on the framework suites absent from the
   model's data (zj to zzo for the model of 2026-12-04; rows cached in benchmarks/recalibrate_rows.json, results
   in benchmarks/recalibrate_results.json, rendered into the model card's "Calibration").  Right after a
   retraining on every suite there are none: step 3's calibrator ships until fresh suites accrue.

``--corpus FILE`` reuses (or writes, when missing) a corpus cache;
``--group route`` fits `benchmarks.learning.RECIPE` counting cases by recording route instead of by suite
(`Recipe.group`; every cross-validation and the final model);
``--out`` writes the model elsewhere; ``--render-only`` re-renders the docs
from benchmarks/train_results.json and the model without fitting;
``--compare --corpus FILE`` cross-validates the first shipped model's recipe
(pointwise boosting, no ``ranker:*`` features) on the same folds and adds it
to the results and the docs.
``--against-shipped FILE --corpus FILE`` (round 56, benchmarks/train_rule_round56.md) sets the retrained
recipe's leave-one-suite-out top-1 (the saved results) beside the shipped model's, every case scored by a model that
never saw its suite: the shipped model's stored leave-one-suite-out predictions (FILE: its train_results.json) on the
sources it was trained on, its plain predictions on the rest; it adds ``against_shipped`` to the results and prints
the rule's numbers and decision; ``--fresh FILE2`` (round 57, benchmarks/train_rule_round57.md) adds the final
model (``--out``) against the shipped one on cases of suites neither was trained on (their plain predictions).
``--boost SUITE=X`` weighs a source's cases X times for this run (`benchmarks.learning.Recipe.boost`).
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import corpus as corpus_mod
from benchmarks import learning as L
from benchmarks.corpus import Case
from trajdebug.analysis.learned import DEFAULT_PATH, Model, load_model, margins


ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "train_results.json"
"""Every cross-validation number, as the docs are rendered from."""
BINS = 10
"""Equal-width bins of the reliability diagram and the expected calibration error."""
TARGET_PRECISION = 0.9
"""Precision the ``confident`` threshold is chosen for."""
MIN_SUPPORT = 20
"""Fewest out-of-fold cases a ``confident`` threshold must select: above a lone case or two any
threshold reaches 90 % by luck (the 2026-12-02 retrain chose 0.973 on one case, right; nested, 54 %).
With 20 cases one wrong in ten is a 7-point standard error: a claim, not a coin."""
NEVER = 1.01
"""The ``confident`` threshold when none qualifies: above every confidence, so the verdict is never ``confident``."""
LIKELY = 0.5
"""The ``likely`` threshold: the best candidate is more probably right than wrong."""


def _isotonic(xs: Sequence[float], ys: Sequence[int]) -> Any:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    iso.fit(list(xs), list(ys))
    return iso


Fold = Callable[[dict[str, Any]], str]


def _fold(r: dict[str, Any]) -> str:
    return str(r["fold"])


def _suite(r: dict[str, Any]) -> str:
    return str(r["case"].suite)


def calibrate(rows: Sequence[dict[str, Any]], fold: Fold = _fold) -> list[float]:
    """Cross-fitted calibrated confidences of each row's best candidate (fold-wise isotonic)."""
    out = [0.0] * len(rows)
    for f in sorted({fold(r) for r in rows}):
        train = [r for r in rows if fold(r) != f]
        iso = _isotonic([r["top_p"] for r in train], [int(r["top_ok"]) for r in train])
        for i, r in enumerate(rows):
            if fold(r) == f:
                out[i] = float(iso.predict([r["top_p"]])[0])
    return out


def _margin(r: dict[str, Any]) -> float:
    """The best candidate's margin (log-odds) over the runner-up, as `trajdebug.analysis.learned.margins`."""
    return max(margins(r["probs"]), default=0.0)


PLATT = {"platt": "pn", "platt_margin": "pnm", "margin": "m"}
"""The Platt calibrators compared, by the terms they read: p, the logit of the softmax probability;
n, log(1 + ranked steps); m, the margin over the runner-up; h, the hand ranker's score of the best candidate;
r, whether the run was analysed with references (`SETTING_TERMS`)."""
BLIND_TERMS = "pnmh"
"""The shipped calibrator's terms.  The hand score is there because on a suite the trees never saw the
softmax is sure of best candidates with little evidence behind them: on the framework suites left out
one at a time (2026-12-03), probability, steps and margin reached 88 % precision at 11 % coverage nested,
with the hand score 91 % at 21 %."""


def _best(r: dict[str, Any]) -> int:
    """Index of the best candidate (highest probability, ties in the hand ranker's order)."""
    return L.learned_order(r["probs"])[0] if r["probs"] else 0


def _platt_x(r: dict[str, Any], terms: str) -> list[float]:
    p = min(max(r["top_p"], 1e-9), 1 - 1e-9)
    rows = r["case"].rows
    hand = float(rows[_best(r)].get("hand_score", 0.0)) if "h" in terms and rows else 0.0
    refs = float(r["case"].with_references()) if "r" in terms else 0.0
    x = {"p": math.log(p / (1 - p)), "n": math.log1p(len(rows)), "m": _margin(r), "h": hand, "r": refs}
    return [x[t] for t in terms]


def _platt(rows: Sequence[dict[str, Any]], terms: str = "pnm") -> tuple[float, ...]:
    """Platt coefficients ``(a, b, c, d[, e])`` of `Model.platt`; a term not read weighs 0 (``e``, the hand
    score's, only when read)."""
    return platt_fit([_platt_x(r, terms) for r in rows], [int(r["top_ok"]) for r in rows], terms)


def platt_fit(x: Sequence[Sequence[float]], y: Sequence[int], terms: str) -> tuple[float, ...]:
    """Platt coefficients of `Model.platt` from each case's ``terms`` (`PLATT`), in that order, and 1 when its best
    candidate was right (a logistic regression, lightly regularized)."""
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=100.0, max_iter=1000)
    lr.fit([list(v) for v in x], list(y))
    coef = dict(zip(terms, (float(c) for c in lr.coef_[0]), strict=True))
    order = "pnmhr" if "r" in terms else "pnmh" if "h" in terms else "pnm"
    return (float(lr.intercept_[0]), *(coef.get(t, 0.0) for t in order))


def calibrate_platt(rows: Sequence[dict[str, Any]], terms: str = "pnm", fold: Fold = _fold) -> list[float]:
    """Cross-fitted Platt-scaled confidences of each row's best candidate, reading ``terms`` (`PLATT`)."""
    out = [0.0] * len(rows)
    for f in sorted({fold(r) for r in rows}):
        m = Model((), 0.0, 1.0, (), platt=_platt([r for r in rows if fold(r) != f], terms))
        for i, r in enumerate(rows):
            if fold(r) == f:
                x = _platt_x(r, "h")[0] if "h" in terms else 0.0
                refs = "r" in terms and r["case"].with_references()
                out[i] = m.calibrate(r["top_p"], len(r["case"].rows), _margin(r), x, refs)
    return out


def ece(conf: Sequence[float], ok: Sequence[bool], bins: int = BINS) -> tuple[float, list[tuple[float, float, int]]]:
    """Expected calibration error (Naeini et al. 2015) and the bins: (mean confidence, accuracy, count)."""
    groups: dict[int, list[int]] = defaultdict(list)
    for i, c in enumerate(conf):
        groups[min(int(c * bins), bins - 1)].append(i)
    total, table = 0.0, []
    for b in sorted(groups):
        idx = groups[b]
        mc = sum(conf[i] for i in idx) / len(idx)
        acc = sum(1 for i in idx if ok[i]) / len(idx)
        total += len(idx) / len(conf) * abs(mc - acc)
        table.append((mc, acc, len(idx)))
    return total, table


def threshold(
    conf: Sequence[float], ok: Sequence[bool], target: float = TARGET_PRECISION, min_rows: int = MIN_SUPPORT
) -> float:
    """The lowest confidence at or above which the best candidate is right at least ``target`` of the time,
    over at least ``min_rows`` cases (`NEVER` when there is none)."""
    best, chosen, right, i = NEVER, 0, 0, 0
    pairs = sorted(zip(conf, ok, strict=True), key=lambda x: -x[0])
    # One pass from the top: the rows at or above each distinct confidence (ties enter together).
    while i < len(pairs):
        t = pairs[i][0]
        while i < len(pairs) and pairs[i][0] == t:
            chosen, right, i = chosen + 1, right + int(pairs[i][1]), i + 1
        if chosen >= min_rows and right / chosen >= target:
            best = t
    return best


def at(conf: Sequence[float], ok: Sequence[bool], t: float) -> tuple[float, float]:
    """Precision and coverage at confidence >= ``t``."""
    sel = [o for c, o in zip(conf, ok, strict=True) if c >= t]
    return (sum(sel) / len(sel) if sel else float("nan")), len(sel) / len(conf)


def nested(
    conf: Sequence[float], ok: Sequence[bool], folds: Sequence[str], min_rows: int = MIN_SUPPORT
) -> tuple[float, float]:
    """Precision and coverage at ``confident`` when each fold's threshold is chosen on the other folds.

    `threshold` picks the threshold on the very rows it then scores, which flatters
    the precision when few rows sit above it; this is the honest check of that choice.
    """
    right = chosen = 0
    for f in sorted(set(folds)):
        rest = [i for i, g in enumerate(folds) if g != f]
        t = threshold([conf[i] for i in rest], [ok[i] for i in rest], min_rows=min_rows)
        sel = [i for i, g in enumerate(folds) if g == f and conf[i] >= t]
        chosen += len(sel)
        right += sum(1 for i in sel if ok[i])
    return (right / chosen if chosen else float("nan")), chosen / len(conf)


def _calibrators(rows: Sequence[dict[str, Any]], fold: Fold) -> dict[str, list[float]]:
    return {"isotonic": calibrate(rows, fold), **{name: calibrate_platt(rows, t, fold) for name, t in PLATT.items()}}


def _calibration(k5: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Every calibrator, cross-fitted on the five folds by agent and, group-aware, by suite.

    Until 2026-12-03 the one of the lowest worse-of-the-two error shipped; now `blind` ships (fitted on
    the framework suites left out, where the verdict is used) and these are its comparison.
    """
    ok = [bool(r["top_ok"]) for r in k5]
    confs, by_suite = _calibrators(k5, _fold), _calibrators(k5, _suite)
    variants: dict[str, dict[str, float]] = {}
    for name, conf in confs.items():
        t = threshold(conf, ok)
        prec, cov = at(conf, ok, t)
        nprec, ncov = nested(conf, ok, [r["fold"] for r in k5])
        variants[name] = {"ece": ece(conf, ok)[0], "ece_by_suite": ece(by_suite[name], ok)[0], "confident": t,
                          "precision_confident": prec, "coverage_confident": cov,
                          "nested_precision": nprec, "nested_coverage": ncov}
    method = min(variants, key=lambda m: max(variants[m]["ece"], variants[m]["ece_by_suite"]))
    conf, v = confs[method], variants[method]
    lprec, lcov = at(conf, ok, LIKELY)
    return {
        "ece": v["ece"], "bins": ece(conf, ok)[1], "confident": v["confident"], "likely": LIKELY,
        "precision_confident": v["precision_confident"], "coverage_confident": v["coverage_confident"],
        "nested_precision": v["nested_precision"], "nested_coverage": v["nested_coverage"],
        "precision_likely": lprec, "coverage_likely": lcov,
        "raw_ece": ece([r["top_p"] for r in k5], ok)[0],
        "method": method, "isotonic_ece": variants["isotonic"]["ece"], "platt_ece": variants["platt"]["ece"],
        "platt_margin_ece": variants["platt_margin"]["ece"], "ece_by_suite": v["ece_by_suite"], "variants": variants,
    }


SETTING_TERMS = "pnmhr"
"""The calibrator tried with a threshold per setting (`blind`): the shipped terms and whether the run was
analysed with references (r).  Round 42 found the one threshold right 91 % of the time with references and
85 % alone (nested, framework suites left out): at one confidence a run alone is right less often."""
SETTINGS = {"alone": False, "references": True}
"""The two settings a run is analysed in (`Case.with_references`), as the verdict tells them apart."""


def _verdicts(rows: Sequence[dict[str, Any]], terms: str, split: bool) -> dict[str, Any]:
    """The verdict of calibrator ``terms`` cross-fitted by suite, with one ``confident`` threshold or (``split``)
    one per setting: chosen on every row, and nested (each suite at the threshold chosen on the others), per
    setting and pooled."""
    ok = [bool(r["top_ok"]) for r in rows]
    suites = [_suite(r) for r in rows]
    refs = [r["case"].with_references() for r in rows]
    conf = calibrate_platt(rows, terms, _suite)

    def thresholds(idx: Sequence[int]) -> dict[bool, float]:
        if not split:
            return dict.fromkeys((False, True), threshold([conf[i] for i in idx], [ok[i] for i in idx]))
        return {s: threshold([conf[i] for i in idx if refs[i] == s], [ok[i] for i in idx if refs[i] == s]) for s in (False, True)}

    nested_sel: list[int] = []
    per: dict[str, dict[str, int]] = {}
    for f in sorted(set(suites)):
        th = thresholds([i for i in range(len(rows)) if suites[i] != f])
        sel = [i for i in range(len(rows)) if suites[i] == f and conf[i] >= th[refs[i]]]
        nested_sel += sel
        per[f] = {"n": suites.count(f), "confident": len(sel), "right": sum(ok[i] for i in sel)}
    th = thresholds(range(len(rows)))
    settings: dict[str, dict[str, float]] = {}
    for name, want in (*SETTINGS.items(), ("pooled", None)):
        idx = [i for i in range(len(rows)) if want is None or refs[i] == want]
        sure = [i for i in idx if conf[i] >= th[refs[i]]]
        nsel = [i for i in nested_sel if want is None or refs[i] == want]
        settings[name] = {
            "n": len(idx), "top1": sum(ok[i] for i in idx) / max(len(idx), 1),
            "ece": ece([conf[i] for i in idx], [ok[i] for i in idx])[0] if idx else float("nan"),
            "confident": th[bool(want)], "precision": sum(ok[i] for i in sure) / len(sure) if sure else float("nan"),
            "coverage": len(sure) / max(len(idx), 1), "nested_right": sum(ok[i] for i in nsel), "nested_confident": len(nsel),
            "nested_precision": sum(ok[i] for i in nsel) / len(nsel) if nsel else float("nan"),
            "nested_coverage": len(nsel) / max(len(idx), 1),
        }
    pooled = settings["pooled"]
    lprec, lcov = at(conf, ok, LIKELY)
    return {"terms": terms, "split": split, "n": len(rows), "top1": sum(ok) / len(ok), "ece": ece(conf, ok)[0],
            "bins": ece(conf, ok)[1], "confident": th[False], "confident_references": th[True],
            "precision_confident": pooled["precision"], "coverage_confident": pooled["coverage"],
            "nested_precision": pooled["nested_precision"], "nested_coverage": pooled["nested_coverage"],
            "precision_likely": lprec, "coverage_likely": lcov, "by_suite": per, "settings": settings}


def blind(loso: Sequence[dict[str, Any]], terms: str = BLIND_TERMS) -> dict[str, Any]:
    """The shipped calibration, fitted and checked where the verdict is used: on the framework suites'
    leave-one-suite-out predictions, cross-fitted by suite (a suite's confidences by a calibrator fitted on
    the others), the ``confident`` threshold chosen on those and checked nested by suite.

    Since round 43 a threshold per setting (alone, with references) on a calibrator that reads the setting
    (`SETTING_TERMS`) replaces the one threshold iff, nested, it is at least `TARGET_PRECISION` precise in
    each setting and covers no fewer runs pooled; ``by_setting`` keeps both and the decision."""
    rows = [r for r in loso if r["case"].suite in L.FRAMEWORK]
    one = _verdicts(rows, terms, split=False)
    two = _verdicts(rows, SETTING_TERMS, split=True)
    keep = all(two["settings"][s]["nested_precision"] >= TARGET_PRECISION for s in SETTINGS) and (
        two["nested_coverage"] >= one["nested_coverage"]
    )
    chosen = two if keep else {**one, "confident_references": None}
    return {**chosen, "by_setting": {"one": one["settings"], "split": two["settings"], "split_terms": SETTING_TERMS,
                                     "kept": keep}}


def diagram(table: Sequence[tuple[float, float, int]], path: Path, title: str) -> None:
    """A reliability diagram (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4.5), dpi=100)
    ax.plot([0, 1], [0, 1], "--", color="grey", label="perfectly calibrated")
    ax.plot([m for m, _, _ in table], [a for _, a, _ in table], "o-", label="learned ranker (held out)")
    for m, a, n in table:
        ax.annotate(str(n), (m, a), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xlabel("confidence of the best candidate")
    ax.set_ylabel("share right")
    ax.set_title(title, fontsize=9)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def evaluate(cases: list[Case], progress: Any = print, recipe: L.Recipe | None = None) -> dict[str, Any]:
    """Every cross-validation the model card reports, of ``recipe`` (default `benchmarks.learning.RECIPE`)."""
    res: dict[str, Any] = {}
    loso = L.cross_validate(cases, L.by_suite, recipe=recipe, progress=progress)
    res["loso"] = L.table(loso, lambda r: r["case"].suite)
    res["loso_framework"] = L.table([r for r in loso if r["case"].suite in L.FRAMEWORK], lambda r: r["case"].suite)
    res["loso_fault"] = L.table(loso, lambda r: f"{r['case'].suite}/{r['case'].fault}")
    progress("cv: leave one suite out done")
    loro = L.cross_validate(cases, L.by_route, recipe=recipe, progress=progress)
    res["loro"] = L.table(loro, lambda r: r["case"].route)
    progress("cv: leave one route out done")
    k5 = L.cross_validate(cases, L.kfold(5), recipe=recipe, progress=progress)
    res["kfold"] = L.table(k5, lambda r: r["case"].suite)
    res["kfold_fault"] = L.table(k5, lambda r: r["case"].fault)
    progress("cv: five folds by agent done")
    cal, b = _calibration(k5), blind(loso)
    # The shipped verdict's numbers are the blind ones; the five folds' calibrators stay for comparison.
    shipped = ("ece", "bins", "confident", "confident_references", "precision_confident", "coverage_confident",
               "nested_precision", "nested_coverage", "precision_likely", "coverage_likely")
    res["calibration"] = {**cal, **{k: b[k] for k in shipped}, "method": "blind", "five_folds_method": cal["method"],
                          "blind": b}
    progress("calibration done")
    res["_oof"] = loso
    res["tells"] = L.tells(cases)
    return res


def compare(cases: list[Case], progress: Any = print) -> dict[str, Any]:
    """The first shipped model's recipe (pointwise, no ``ranker:*`` features) on the same cross-validations."""
    from trajdebug.training import POINTWISE_PARAMS

    old = L.without_ranker(cases)
    out: dict[str, Any] = {"params": POINTWISE_PARAMS}
    for name, split in (("loso", L.by_suite), ("loro", L.by_route), ("kfold", L.kfold(5))):
        rows = L.cross_validate(old, split, params=POINTWISE_PARAMS)
        out[name] = L.table(rows, lambda r: r["case"].suite)["all"]
        if name == "kfold":
            out["whowhen"] = L.table(rows, lambda r: r["case"].suite).get("whowhen")
            ok = [bool(r["top_ok"]) for r in rows]
            conf = calibrate_platt(rows)
            t = threshold(conf, ok)
            prec, cov = at(conf, ok, t)
            out["calibration"] = {"ece": ece(conf, ok)[0], "confident": t, "precision_confident": prec, "coverage_confident": cov}
        progress(f"compare: {name} done")
    return out


def _first(v: dict[str, float], who: str) -> int:
    """Cases ranked first in a `benchmarks.learning.table` row."""
    return round(v[f"{who}_top1"] * v["n"])


def plain_ok(case: Case, model: Model) -> bool:
    """Whether ``model``'s trees put a truth step first in ``case`` (its learned order, ties in the hand ranker's;
    `benchmarks.recalibrate.row`'s ``ok``, which imports this module)."""
    order = L.learned_order(L.probabilities(model, case))
    return bool(order) and case.labels()[order[0]] == 1


def fresh(cases: Sequence[Case], shipped: Model, retrained: Model) -> dict[str, dict[str, int]]:
    """Per suite of ``cases`` (suites neither model was trained on) and ``"all"``: cases, and those whose best
    candidate is right under the retrained model's trees, the shipped model's (`plain_ok`) and the
    hand ranking (round 57's ninth condition, benchmarks/train_rule_round57.md)."""
    per: dict[str, dict[str, int]] = {}
    for c in cases:
        v = per.setdefault(c.suite, {"n": 0, "retrained": 0, "shipped": 0, "hand": 0})
        v["n"] += 1
        v["retrained"] += plain_ok(c, retrained)
        v["shipped"] += plain_ok(c, shipped)
        v["hand"] += bool(c.rows) and c.labels()[0] == 1
    per["all"] = {k: sum(v[k] for v in per.values()) for k in ("n", "retrained", "shipped", "hand")}
    return per


def against_shipped(
    cases: Sequence[Case], res: dict[str, Any], stored: dict[str, Any], shipped: Model, newest: Sequence[str],
    fresh_cases: Sequence[Case] = (), retrained: Model | None = None,
) -> dict[str, Any]:
    """The retrained recipe against the shipped model, every case scored by a model that never saw its suite
    (benchmarks/train_rule_round56.md): per source, cases ranked first by the recipe left out by suite (``res``),
    by the hand ranking, and by the shipped model (its stored leave-one-suite-out row of ``stored`` where it was
    trained on the source, else its plain predictions, `plain_ok`); summed over all and over
    ``newest`` (those of the corpus); with ``fresh_cases``, the final ``retrained`` model against the shipped one on
    suites neither saw (round 57, `fresh`); and the rule's decision."""
    seen = set((shipped.meta or {}).get("cases", {}))
    by: dict[str, list[Case]] = defaultdict(list)
    for c in cases:
        by[c.suite].append(c)
    per: dict[str, dict[str, Any]] = {}
    for s, cs in by.items():
        new = res["loso"][s]
        if s in seen:
            old, how = _first(stored["loso"][s], "learned"), "stored"
            old_n = round(stored["loso"][s]["n"])
        else:
            old, how, old_n = sum(plain_ok(c, shipped) for c in cs), "plain", len(cs)
        per[s] = {"n": len(cs), "retrained": _first(new, "learned"), "hand": _first(new, "hand"), "shipped": old,
                  "shipped_n": old_n, "shipped_from": how}

    def total(names: Sequence[str]) -> dict[str, int]:
        return {k: sum(per[s][k] for s in names) for k in ("n", "retrained", "hand", "shipped", "shipped_n")}

    unseen = [s for s in per if s not in seen]
    newest = [s for s in newest if s in per]
    over, top = total(list(per)), total(newest)
    cal, fw = res["calibration"], res["loso_framework"]["all"]
    ww = res["kfold"].get("whowhen", {}).get("learned_top1", 0.0)
    checks = {
        "over_all": over["retrained"] >= over["shipped"],
        "newest": top["retrained"] >= top["shipped"],
        "by_suite": res["loso"]["all"]["learned_top1"] > res["loso"]["all"]["hand_top1"],
        "by_route": res["loro"]["all"]["learned_top1"] > res["loro"]["all"]["hand_top1"],
        "framework": fw["learned_top1"] > fw["hand_top1"],
        "whowhen": ww >= 0.30,
        "ece": cal["ece"] <= 0.05,
        "nested_precision": cal["nested_precision"] >= 0.895,
    }
    out: dict[str, Any] = {}
    if fresh_cases:
        assert retrained is not None, "fresh cases need the retrained model"
        out["fresh"] = fresh(fresh_cases, shipped, retrained)
        checks["fresh"] = out["fresh"]["all"]["retrained"] >= out["fresh"]["all"]["shipped"]
    return {"per_source": per, "all": over, "newest": top, "newest_suites": list(newest), "unseen": total(unseen),
            "seen": total([s for s in per if s in seen]), **out, "checks": checks, "ship": all(checks.values())}


def _against_lines(a: dict[str, Any], res: dict[str, Any]) -> list[str]:
    """The rule's numbers, as printed."""
    def part(name: str, t: dict[str, int]) -> str:
        return (f"{name}: {t['n']} cases; retrained {t['retrained']}, shipped {t['shipped']} (of {t['shipped_n']}),"
                f" hand {t['hand']}")

    lo, ro, fw = res["loso"]["all"], res["loro"]["all"], res["loso_framework"]["all"]
    cal = res["calibration"]
    out = [part("over all", a["all"]), part(f"newest ({a['newest_suites'][0]} to {a['newest_suites'][-1]})", a["newest"]),
           part("sources the shipped model was trained on", a["seen"]), part("suites it never saw", a["unseen"]),
           f"by suite {100 * lo['learned_top1']:.1f} against hand {100 * lo['hand_top1']:.1f} (won {lo['won']:.0f} / lost {lo['lost']:.0f})",
           f"by route {100 * ro['learned_top1']:.1f} against hand {100 * ro['hand_top1']:.1f} (won {ro['won']:.0f} / lost {ro['lost']:.0f})",
           f"framework suites left out {100 * fw['learned_top1']:.1f} against hand {100 * fw['hand_top1']:.1f} (won {fw['won']:.0f} / lost {fw['lost']:.0f})",
           f"Who&When five folds {100 * res['kfold'].get('whowhen', {}).get('learned_top1', 0.0):.1f}",
           f"ECE {cal['ece']:.3f}; confident {100 * cal['precision_confident']:.1f} % at {100 * cal['coverage_confident']:.1f} %"
           f" (nested {100 * cal['nested_precision']:.2f} % at {100 * cal['nested_coverage']:.1f} %)",
           *([] if "fresh" not in a else [
               f"fresh ({', '.join(s for s in a['fresh'] if s != 'all')}, neither model trained on them): "
               f"{a['fresh']['all']['n']} cases; retrained {a['fresh']['all']['retrained']}, shipped"
               f" {a['fresh']['all']['shipped']}, hand {a['fresh']['all']['hand']}"]),
           "checks: " + ", ".join(f"{k} {'holds' if v else 'FAILS'}" for k, v in a["checks"].items()),
           f"ship: {'yes' if a['ship'] else 'no'}"]
    for s, v in a.get("fresh", {}).items():
        if s != "all":
            out.append(f"  fresh {s}: n {v['n']}, retrained {v['retrained']}, shipped {v['shipped']}, hand {v['hand']}")
    for s, v in a["per_source"].items():
        out.append(f"  {s}: n {v['n']}, retrained {v['retrained']}, shipped {v['shipped']} ({v['shipped_from']}, of"
                   f" {v['shipped_n']}), hand {v['hand']}")
    return out


def final(
    cases: list[Case], oof: Sequence[dict[str, Any]], cal: dict[str, Any], meta: dict[str, Any], recipe: L.Recipe | None = None
) -> Model:
    """The model on every case (``recipe``, default `benchmarks.learning.RECIPE`), calibrated (`blind`) on the
    framework suites' leave-one-suite-out predictions."""
    from dataclasses import replace

    model = L.fit(cases, recipe=recipe)
    rows = [r for r in oof if r["case"].suite in L.FRAMEWORK]
    iso = _isotonic([r["top_p"] for r in rows], [int(r["top_ok"]) for r in rows])
    xs = tuple(round(float(x), 6) for x in iso.X_thresholds_)
    ys = tuple(round(float(y), 6) for y in iso.y_thresholds_)
    b = cal["blind"]
    refs = b.get("confident_references")
    return replace(model, calibration=(xs, ys), platt=_platt(rows, b["terms"]), confident=round(b["confident"], 6),
                   likely=cal["likely"], meta=meta, confident_references=None if refs is None else round(refs, 6))


def _render_docs(card: Path, res: dict[str, Any], model: Model | None) -> int:
    """docs/model-card.md and the section of docs/benchmarks.md, from the results and the model."""
    from benchmarks.model_card import learned_section, render, splice

    assert model is not None
    card.write_text(render(res, res["meta"], model))
    bench = card.parent / "benchmarks.md"
    if bench.exists():
        bench.write_text(splice(bench.read_text(), learned_section(res)))
    return 0


def recipe(group: str | None = None, boost: Sequence[str] = ()) -> L.Recipe:
    """`benchmarks.learning.RECIPE`, counting cases by ``group`` (``"suite"`` or ``"route"``) when given, with each
    ``SUITE=X`` of ``boost`` setting that source's `Recipe.boost` (the others' kept)."""
    from dataclasses import replace

    r = L.RECIPE if group is None else replace(L.RECIPE, group=group)
    if boost:
        more = dict(r.boost)
        for item in boost:
            name, _, x = item.partition("=")
            more[name] = float(x)
        r = replace(r, boost=tuple(more.items()))
    return r


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.train", description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, help="corpus cache (JSON lines): read when present, else written")
    ap.add_argument("--workdir", type=Path, help="where the blind suites are generated")
    ap.add_argument("--out", type=Path, default=DEFAULT_PATH)
    ap.add_argument("--card", type=Path, default=ROOT / "docs" / "model-card.md")
    ap.add_argument("--group", choices=("suite", "route"),
                    help="what the recipe's balance counts cases by (default: benchmarks.learning.RECIPE's)")
    ap.add_argument("--boost", action="append", default=[], metavar="SUITE=X",
                    help="weigh SUITE's cases X times (replaces benchmarks.learning.RECIPE's boost of it; round 57)")
    ap.add_argument("--render-only", action="store_true", help="re-render the docs from the saved results and model")
    ap.add_argument("--compare", action="store_true",
                    help="cross-validate the first model's recipe (pointwise, no ranker:* features) into the saved results")
    ap.add_argument("--against-shipped", type=Path, metavar="FILE",
                    help="the shipped model's train_results.json: set the saved results beside it (round 56's rule)")
    ap.add_argument("--shipped-model", type=Path, default=DEFAULT_PATH, help="the shipped model (--against-shipped)")
    ap.add_argument("--fresh", type=Path, metavar="FILE",
                    help="cases of suites neither model trained on: the final model (--out) against the shipped one"
                         " (--against-shipped; round 57's rule)")
    ap.add_argument("--newest-from", default="suite_zzf",
                    help="the first of the newest suites the rule compares apart (--against-shipped)")
    args = ap.parse_args(argv)
    if args.render_only:
        return _render_docs(args.card, json.loads(RESULTS.read_text()), load_model(args.out))
    if args.against_shipped:
        if args.corpus is None or not args.corpus.exists():
            ap.error("--against-shipped needs --corpus FILE (the corpus the results were measured on)")
        saved = json.loads(RESULTS.read_text())
        names = list(corpus_mod.DEV_SUITES)
        newest = [s for s in names[names.index(args.newest_from):] if s in L.FRAMEWORK]
        a = against_shipped(corpus_mod.load(args.corpus), saved, json.loads(args.against_shipped.read_text()),
                            load_model(args.shipped_model), newest,
                            corpus_mod.load(args.fresh) if args.fresh else (), load_model(args.out) if args.fresh else None)
        saved["against_shipped"] = a
        RESULTS.write_text(json.dumps(saved, indent=1) + "\n")
        print("\n".join(_against_lines(a, saved)))
        return 0
    if args.compare:
        if args.corpus is None or not args.corpus.exists():
            ap.error("--compare needs --corpus FILE (the corpus the results were measured on)")
        saved = json.loads(RESULTS.read_text())
        saved["previous"] = compare(corpus_mod.load(args.corpus))
        RESULTS.write_text(json.dumps(saved, indent=1) + "\n")
        return _render_docs(args.card, saved, load_model(args.out))
    if args.corpus is not None and args.corpus.exists():
        cases = corpus_mod.load(args.corpus)
    else:
        cases = corpus_mod.build(args.workdir or Path(tempfile.mkdtemp(prefix="trajdebug-train-")))
        if args.corpus is not None:
            corpus_mod.save(cases, args.corpus)
    r = recipe(args.group, args.boost)
    res = evaluate(cases, recipe=r)
    counts: dict[str, int] = defaultdict(int)
    for c in cases:
        counts[c.suite] += 1
    meta = {"seed": L.SEED, "params": dict(r.params), "balance": r.balance, "cap": r.cap, "drop": list(r.drop),
            "boost": dict(r.boost), "group": r.group, "cases": dict(counts), "steps": sum(len(c.rows) for c in cases)}
    model = final(cases, res.pop("_oof"), res["calibration"], meta, recipe=r)
    args.out.write_text(json.dumps(model.to_dict(), separators=(",", ":")) + "\n")
    diagram(res["calibration"]["bins"], args.card.parent / "reliability.png",
            f"Reliability, framework suites left out (ECE {res['calibration']['ece']:.3f})")
    RESULTS.write_text(json.dumps({**res, "meta": meta}, indent=1) + "\n")
    _render_docs(args.card, {**res, "meta": meta}, model)
    print(f"model: {args.out} ({args.out.stat().st_size // 1024} KB, {len(model.trees)} trees, {len(model.feature_names)} features)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
