"""docs/model-card.md: the learned ranker's data card, rendered from `benchmarks.train`'s results."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from benchmarks.corpus import HELD_OUT
from trajdebug.analysis.learned import Model


SOURCES = [
    ("quality", "fault-injection suite (benchmarks/quality.py, 6 workflows x their faults x 15 seeds)",
     "recording SDK", "this repository"),
    ("tau", "AgentRx annotated tau-bench failures (../shared/data/agentrx-tau)", "message-log importer",
     "see the data set's README"),
    ("whowhen", "Who&When Algorithm-Generated logs (../shared/data/who-and-when-ag)", "transcript importer", "MIT"),
    *[
        (name, f"development blind suite (benchmarks/heldout/{name}), alone and with references{note}",
         "as generated", "this repository")
        for name, note in (
            ("suite_dev", ""), ("suite_a", ""), ("suite_d", ""),
            ("suite_b", "; scored once held out, trained on since 2026-12-02"),
            ("suite_c", "; scored once held out, trained on since 2026-12-02"),
            ("suite_e", "; scored once held out, trained on since 2026-12-02"),
            ("suite_f", "; scored once held out, trained on since 2026-12-02"),
            ("suite_g", "; scored once held out, trained on since 2026-12-02"),
            ("suite_h", "; scored once held out, its misses studied and trained on since 2026-12-02"),
            ("suite_i", "; scored once held out, its misses studied and trained on since 2026-12-02"),
            ("suite_j", "; scored once held out, its misses studied and trained on since 2026-12-02"),
            ("suite_k", "; scored once held out, its misses studied and trained on since 2026-12-03"),
            ("suite_l", "; scored once held out, its misses studied and trained on since 2026-12-03"),
            ("suite_m", "; scored once held out, its misses studied and trained on since 2026-12-03"),
            ("suite_n", "; scored once held out, its misses studied and trained on since 2026-12-03"),
            ("suite_o", "; scored once held out, its misses studied and trained on since 2026-12-03"),
            ("suite_p", "; scored once held out, trained on since 2026-12-03"),
            ("suite_q", "; scored once held out, trained on since 2026-12-03 (its misses left unstudied: the hand ranker's carry check)"),
            ("suite_r", "; scored once held out, trained on from the first retraining after 2026-12-03 15:23 UTC"),
            ("suite_s", "; scored once held out, trained on from the first retraining after 2026-12-03 15:24 UTC"),
            ("suite_t", "; scored once held out, trained on from the first retraining after 2026-12-03 16:10 UTC (its misses left unstudied: a carry check)"),
            ("suite_u", "; scored once held out, trained on from the first retraining after 2026-12-03 17:39 UTC"),
            ("suite_v", "; scored once held out, trained on from the first retraining after 2026-12-03 17:39 UTC"),
            ("suite_w", "; scored once held out, trained on from the first retraining after 2026-12-03 17:40 UTC"),
            ("suite_x", "; scored once held out, trained on from the first retraining after 2026-12-04 15:27 UTC"),
            ("suite_y", "; scored once held out, trained on from the first retraining after 2026-12-04 15:27 UTC"),
            ("suite_z", "; scored once held out, trained on from the first retraining after 2026-12-04 16:48 UTC"),
            ("suite_za", "; scored once held out, trained on from the first retraining after 2026-12-04 16:49 UTC"),
            ("suite_zb", "; scored once held out, trained on from the first retraining after 2026-12-04 17:09 UTC"),
            ("suite_zc", "; scored once held out, trained on from the first retraining after 2026-12-04 17:10 UTC"),
            ("suite_zd", "; scored once held out, trained on from the first retraining after 2026-12-04 18:16 UTC"),
            ("suite_ze", "; scored once held out, trained on from the first retraining after 2026-12-04 18:18 UTC"),
            ("suite_zf", "; scored once held out, trained on from the first retraining after 2026-12-04 20:17 UTC"),
            ("suite_zg", "; scored once held out, trained on from the first retraining after 2026-12-04 20:18 UTC"),
            ("suite_zh", "; scored once held out, trained on from the first retraining after 2026-12-04 20:51 UTC"),
            ("suite_zi", "; scored once held out, trained on from the first retraining after 2026-12-04 20:51 UTC"),
            ("suite_zj", "; scored once held out, trained on from the first retraining after 2026-12-04 22:45 UTC"),
            ("suite_zk", "; scored once held out, trained on from the first retraining after 2026-12-04 22:45 UTC"),
            ("suite_zl", "; scored once held out, trained on from the first retraining after 2026-12-04 23:25 UTC"),
            ("suite_zm", "; scored once held out, trained on from the first retraining after 2026-12-04 23:26 UTC"),
            ("suite_zn", "; scored once held out, trained on from the first retraining after 2026-12-05 01:22 UTC"),
            ("suite_zo", "; scored once held out, trained on from the first retraining after 2026-12-05 01:23 UTC"),
            ("suite_zp", "; scored once held out, trained on from the first retraining after 2026-12-05 02:13 UTC"),
            ("suite_zq", "; scored once held out, trained on from the first retraining after 2026-12-05 02:14 UTC"),
            ("suite_zr", "; scored once held out, trained on from the first retraining after 2026-12-05 04:26 UTC"),
            ("suite_zs", "; scored once held out, trained on from the first retraining after 2026-12-05 04:26 UTC"),
            ("suite_zt", "; scored once held out, trained on from the first retraining after 2026-12-05 05:43 UTC"),
            ("suite_zu", "; scored once held out, trained on from the first retraining after 2026-12-05 05:43 UTC"),
            ("suite_zv", "; scored once held out, trained on from the first retraining after 2026-12-05 07:37 UTC"),
            ("suite_zw", "; scored once held out, trained on from the first retraining after 2026-12-05 07:37 UTC"),
            ("suite_zx", "; scored once held out, trained on from the first retraining after 2026-12-05 08:25 UTC"),
            ("suite_zy", "; scored once held out, trained on from the first retraining after 2026-12-05 08:25 UTC"),
            ("suite_zz", "; scored once held out, trained on from the first retraining after 2026-12-05 10:29 UTC"),
            ("suite_zza", "; scored once held out, trained on from the first retraining after 2026-12-05 10:29 UTC"),
            ("suite_zzb", "; scored once held out, trained on from the first retraining after 2026-12-05 11:11 UTC"),
            ("suite_zzc", "; scored once held out, trained on from the first retraining after 2026-12-05 11:12 UTC"),
            ("suite_zzd", "; scored once held out, trained on from the first retraining after 2026-12-05 13:19 UTC"),
            ("suite_zze", "; scored once held out, trained on from the first retraining after 2026-12-05 13:20 UTC"),
            ("suite_zzf", "; scored once held out, trained on from the first retraining after 2026-12-05 21:25 UTC"),
            ("suite_zzg", "; scored once held out, trained on from the first retraining after 2026-12-05 21:25 UTC"),
            ("suite_zzh", "; scored once held out, trained on from the first retraining after 2026-12-05 23:04 UTC"),
            ("suite_zzi", "; scored once held out, trained on from the first retraining after 2026-12-05 23:04 UTC"),
            ("suite_zzj", "; scored once held out, trained on from the first retraining after 2026-12-05 23:49 UTC"),
            ("suite_zzk", "; scored once held out, trained on from the first retraining after 2026-12-05 23:51 UTC"),
            ("suite_zzl", "; scored once held out, trained on from the first retraining after 2026-12-06 01:48 UTC"),
            ("suite_zzm", "; scored once held out, trained on from the first retraining after 2026-12-06 01:49 UTC"),
            ("suite_zzn", "; scored once held out, trained on from the first retraining after 2026-12-06 02:36 UTC"),
            ("suite_zzo", "; scored once held out, trained on from the first retraining after 2026-12-06 02:37 UTC"),
            ("suite_zzp", "; scored once held out, trained on from the first retraining after 2026-12-06 04:08 UTC"),
            ("suite_zzq", "; scored once held out, trained on from the first retraining after 2026-12-06 04:08 UTC"),
            ("suite_zzr", "; scored once held out, trained on from the first retraining after 2026-12-06 05:12 UTC"),
            ("suite_zzs", "; scored once held out, trained on from the first retraining after 2026-12-06 05:13 UTC"),
            ("suite_zzt", "; scored once held out, trained on from the first retraining after 2026-12-06 07:50 UTC"),
            ("suite_zzu", "; scored once held out, trained on from the first retraining after 2026-12-06 07:51 UTC"),
            ("suite_zzv", "; scored once held out, trained on from the first retraining after 2026-12-06 10:36 UTC"),
            ("suite_zzw", "; scored once held out, trained on from the first retraining after 2026-12-06 10:36 UTC"),
            ("suite_zzx", "; scored once held out, trained on from the first retraining after 2026-12-06 13:18 UTC"),
            ("suite_zzy", "; scored once held out, trained on from the first retraining after 2026-12-06 13:18 UTC"),
            ("suite_zzz", "; scored once held out, trained on from the first retraining after 2026-12-06 16:03 UTC"),
            ("suite_zzza", "; scored once held out, trained on from the first retraining after 2026-12-06 16:03 UTC"),
            ("suite_zzzb", "; scored once held out, trained on from the first retraining after 2026-12-06 18:18 UTC"),
            ("suite_zzzc", "; scored once held out, trained on from the first retraining after 2026-12-06 18:18 UTC"),
            ("suite_zzzd", "; scored once held out, trained on from the first retraining after 2026-12-06 18:55 UTC"),
            ("suite_zzze", "; scored once held out, trained on from the first retraining after 2026-12-06 18:56 UTC"),
            ("suite_zzzf", "; scored once held out, trained on from the first retraining after 2026-12-06 20:50 UTC"),
            ("suite_zzzg", "; scored once held out, trained on from the first retraining after 2026-12-06 20:51 UTC"),
            ("suite_zzzh", "; scored once held out, trained on from the first retraining after 2026-12-06 22:04 UTC"),
            ("suite_zzzi", "; scored once held out, trained on from the first retraining after 2026-12-06 22:04 UTC"),
            ("suite_zzzj", "; scored once held out, trained on from the first retraining after 2026-12-07 00:03 UTC"),
            ("suite_zzzk", "; scored once held out, trained on from the first retraining after 2026-12-07 00:03 UTC"),
            ("suite_zzzl", "; scored once held out, trained on from the first retraining after 2026-12-07 00:56 UTC"),
            ("suite_zzzm", "; scored once held out, trained on from the first retraining after 2026-12-07 00:56 UTC"),
            ("suite_zzzn", "; scored once held out, trained on from the first retraining after 2026-12-07 02:31 UTC"),
            ("suite_zzzo", "; scored once held out, trained on from the first retraining after 2026-12-07 02:31 UTC"),
            ("suite_zzzp", "; scored once held out, trained on from the first retraining after 2026-12-07 04:00 UTC"),
            ("suite_zzzq", "; scored once held out, trained on from the first retraining after 2026-12-07 04:00 UTC"),
            ("suite_zzzr", "; scored once held out, trained on from the first retraining after 2026-12-07 06:01 UTC"),
            ("suite_zzzs", "; scored once held out, trained on from the first retraining after 2026-12-07 06:02 UTC"),
            ("suite_zzzt", "; scored once held out, trained on from the first retraining after 2026-12-07 07:09 UTC"),
            ("suite_zzzu", "; scored once held out, trained on from the first retraining after 2026-12-07 07:10 UTC"),
            ("suite_zzzv", "; scored once held out, trained on from the first retraining after 2026-12-07 08:41 UTC"),
            ("suite_zzzw", "; scored once held out, trained on from the first retraining after 2026-12-07 08:42 UTC"),
        )
    ],
]


def _p(x: float) -> str:
    return "-" if x != x else f"{100 * x:.0f} %"


def _p1(x: float) -> str:
    return "-" if x != x else f"{100 * x:.1f} %"


def _table(rows: Mapping[str, Mapping[str, float]], label: str) -> list[str]:
    out = [f"| {label} | cases | learned top-1 | hand top-1 | learned top-3 | hand top-3 | first step top-1 |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for g, v in rows.items():
        out.append(f"| {g} | {int(v['n'])} | {_p(v['learned_top1'])} | {_p(v['hand_top1'])} | "
                   f"{_p(v['learned_top3'])} | {_p(v['hand_top3'])} | {_p(v['first_top1'])} |")
    return out


def framework_lines(res: Mapping[str, Any]) -> list[str]:
    """Leave one suite out on the framework suites: learned against hand, per suite, pooled and averaged."""
    rows = res.get("loso_framework")
    if not rows:
        return []
    suites = {g: v for g, v in rows.items() if g != "all"}
    out = ["| held-out suite | cases | learned top-1 | hand top-1 | learned - hand | won / lost | learned top-3 | hand top-3 |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def line(name: str, v: Mapping[str, float], paired: str) -> str:
        lt1, ht1 = v["learned_top1"], v["hand_top1"]
        return (f"| {name} | {int(v['n'])} | {_p1(lt1)} | {_p1(ht1)} | {100 * (lt1 - ht1):+.1f} | {paired} |"
                f" {_p1(v['learned_top3'])} | {_p1(v['hand_top3'])} |")

    def wl(v: Mapping[str, float]) -> str:
        return f"{int(v.get('won', 0))} / {int(v.get('lost', 0))}"

    for g, v in suites.items():
        out.append(line(g, v, wl(v)))
    a = rows["all"]
    out.append(line("all (pooled)", a, wl(a)))
    k = max(len(suites), 1)
    mean = {m: sum(v[m] for v in suites.values()) / k for m in ("learned_top1", "hand_top1", "learned_top3", "hand_top3")}
    out.append(line("mean of suites", {**mean, "n": a["n"]}, "-"))
    return [*out, "", "*won / lost*: cases the learned ranking has right at top-1 and the hand ranking not, and the reverse."]


def _tells(rows: Mapping[str, Mapping[str, float]] | None) -> list[str]:
    """The no-tells check: trained on injected faults alone, scored on the written sources."""
    if not rows:
        return []
    out = [
        "## No tells: trained on injected faults alone",
        "",
        "A model trained only on the fault-injection suite, scored on every source nobody injected into,",
        "beside a random order (chance) and the hand ranking. Below chance would mean it learned the",
        "injection's shape instead of the fault.",
        "",
        "| source | cases | learned top-1 | chance top-1 | hand top-1 |", "|---|---:|---:|---:|---:|"]
    for g, v in rows.items():
        out.append(f"| {g} | {int(v['n'])} | {_p(v['learned_top1'])} | {_p(v['chance_top1'])} | {_p(v['hand_top1'])} |")
    return [*out, ""]


def _weighting(meta: Mapping[str, Any]) -> list[str]:
    """How much each source weighs in training, and which features the model may not read."""
    out = []
    balance, cap, drop = float(meta.get("balance") or 0.0), meta.get("cap"), meta.get("drop") or []
    if balance:
        out.append(f"A case weighs 1 / (cases of its source) ^ {balance:g}"
                   + (" (every source alike, however many cases it has)" if balance == 1 else "") + ".")
    if balance and meta.get("group") == "route":
        out.append("Cases are counted by recording route, not by source: the suites of one route share its weight.")
    if cap:
        out.append(f"A source of more than {cap} cases weighs as much as {cap} cases in all.")
    for source, times in (meta.get("boost") or {}).items():
        out.append(f"A case of {source} weighs {times:g} times that (\"Choices\").")
    if drop:
        out.append("Features never read (they key on where a case came from): " + ", ".join(f"`{d}*`" for d in drop) + ".")
    return out


def _calibration_goals(cal: Mapping[str, Any]) -> list[str]:
    """The calibration goals (ECE <= 0.05; at `confident` precision >= 90 % with coverage >= 30 %), met or missed."""
    missed = []
    if cal["ece"] > 0.05:
        missed.append(f"expected calibration error {cal['ece']:.3f} > 0.05")
    if cal.get("confident", 0.0) > 1.0:
        missed.append(f"no threshold reaches 90 % precision on {MIN_SUPPORT} or more cases, so the verdict is never"
                      " `confident` (coverage 0 %)")
    elif cal["precision_confident"] < TARGET_PRECISION:
        missed.append(f"precision at `confident` {_p(cal['precision_confident'])} < 90 %")
    elif cal["coverage_confident"] < 0.30:
        missed.append(f"coverage at `confident` {_p(cal['coverage_confident'])} < 30 %")
    if not missed:
        return ["- goals met: ECE <= 0.05; at `confident`, precision >= 90 % with coverage >= 30 %", ""]
    return ["- goals missed: " + "; ".join(missed), ""]


TARGET_PRECISION = 0.9
"""Precision the ``confident`` threshold is chosen for (as `benchmarks.train.TARGET_PRECISION`)."""
MIN_SUPPORT = 20
"""Fewest cases a ``confident`` threshold must select (as `benchmarks.train.MIN_SUPPORT`)."""


REJECTED = [
    "Tried on 2026-12-02 on the same out-of-fold predictions and not shipped: a logistic calibrator over the best"
    " candidate's own features beside the margin (at 90 % precision its coverage rose to 24 % with five folds, but its"
    " ECE was 0.24, and 0.37 with the suite left out: it learns which suite a case comes from, the fault-injection"
    " suite's best candidate being right 82 % of the time against 60 % over all); isotonic with ten calibration folds"
    " instead of five (ECE 0.078).",
    "On 2026-12-03 (framework suites left out): the calibrators above reached 86 % precision at 3 % coverage;"
    " refitted there, probability, steps and margin 88 % at 11 %; with the best candidate's hand score, 88 % at 21 %"
    " (shipped; 91 % with each suite's calibrator also refitted without it)."
    "",
]
"""Calibrators tried on the 2026-12-02 corpus and not kept, with why."""


def _threshold(t: float) -> str:
    return "none" if t > 1.0 else f"{t:.3f}"

CALIBRATORS = {
    "blind": "Platt on probability, steps, margin and hand score, fitted on the framework suites left out",
    "isotonic": "isotonic on the softmax probability",
    "platt": "Platt on the probability and the run's ranked steps",
    "platt_margin": "Platt on the probability, the ranked steps and the margin over the runner-up",
    "margin": "Platt on the margin over the runner-up alone",
}
"""The calibrators `benchmarks.train` compares, as the card names them."""


def _calibration_variants(cal: Mapping[str, Any]) -> list[str]:
    """Each calibrator's cross-fitted error and its `confident` precision/coverage, in-sample and nested."""
    variants = cal.get("variants")
    if not variants:
        return []
    out = [
        "| calibrator | ECE | ECE, suite left out | `confident` threshold | precision | coverage |"
        " nested precision | nested coverage |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, v in variants.items():
        mark = " (shipped)" if name == cal["method"] else ""
        out.append(
            f"| {CALIBRATORS.get(name, name)}{mark} | {v['ece']:.3f} | {v.get('ece_by_suite', float('nan')):.3f} |"
            f" {_threshold(v['confident'])} |"
            f" {_p(v['precision_confident'])} | {_p(v['coverage_confident'])} |"
            f" {_p(v['nested_precision'])} | {_p(v['nested_coverage'])} |"
        )
    return [*out, ""]


def _blind_lines(b: Mapping[str, Any] | None) -> list[str]:
    """The shipped calibration's check, suite by suite: each scored at the threshold chosen without it."""
    if not b:
        return []
    head = (f"Where the verdict is used, a suite no model saw: the {int(b['n'])} framework-suite cases (learned top-1"
            f" {_p(b['top1'])}), each suite's `confident` threshold chosen on the others: precision"
            f" {_p(b['nested_precision'])} at coverage {_p(b['nested_coverage'])} (in-sample"
            f" {_p(b['precision_confident'])} at {_p(b['coverage_confident'])}).")
    rows = [f"| {s} | {v['n']} | {v['confident']} | {v['right']} |" for s, v in b["by_suite"].items()]
    return [head, "", *_setting_lines(b.get("by_setting")), "| suite | cases | `confident` | right |", "|---|---:|---:|---:|",
            *rows, ""]


def _recalibration_summary() -> list[str]:
    """One paragraph on the shipped recalibration (docs/benchmarks.md), when its results are saved."""
    from benchmarks.recalibrate_card import RESULTS

    if not RESULTS.exists():
        return []
    res = json.loads(RESULTS.read_text())
    if "method" not in res or not res.get("ship"):
        return []
    n, b = res["nested"], res["shipped"]
    return [
        f"Those were the training-time calibrator's numbers. Shipped since 2026-12-06: it rescaled per setting on the {len(res['suites'])}",
        "suites the trees never saw (`python -m benchmarks.recalibrate`); there, each suite scored by a fit that never saw it,",
        f"`confident` is {_p1(n['pooled']['precision'])} precise at {_p1(n['pooled']['coverage'])} coverage (with references"
        f" {_p1(n['by_setting']['references']['precision'])} at {_p1(n['by_setting']['references']['coverage'])}; never of a run alone),"
        f" error **{n['pooled']['ece']:.3f}**, against the training-time calibrator's {_p1(b['pooled']['precision'])} at"
        f" {_p1(b['pooled']['coverage'])}, error {b['pooled']['ece']:.3f}, on the same runs (docs/model-card.md, \"Calibration\").",
    ]


def _recalibration() -> list[str]:
    """The recalibration on suites the model never saw (`benchmarks.recalibrate`), when its results are saved."""
    from benchmarks.recalibrate_card import RESULTS, card_lines

    return card_lines(json.loads(RESULTS.read_text())) if RESULTS.exists() else []


def _setting_lines(by: Mapping[str, Any] | None) -> list[str]:
    """`confident` per setting (a run alone, with references): one threshold against one per setting."""
    if not by:
        return []

    def row(label: str, v: Mapping[str, Any], both: bool = False) -> str:
        t = "each its own" if both else f"{v['confident']:.3f}"
        return (f"| {label} | {v['n']} | {_p(v['top1'])} | {t} | {v['ece']:.3f} | {_p(v['precision'])}, "
                f"{_p(v['coverage'])} | {v['nested_right']} / {v['nested_confident']} = {_p1(v['nested_precision'])} |"
                f" {_p1(v['nested_coverage'])} |")

    one, two = by["one"], by["split"]
    verdict = (
        "Kept: it is at least 90 % precise nested in each setting and covers no fewer runs pooled, so a run analysed"
        " with references has its own threshold (`Model.confident_references`)."
        if by["kept"]
        else "Not kept (it must be at least 90 % precise nested in each setting and cover no fewer runs pooled):"
        " one threshold for both settings."
    )
    return [
        "By setting (the verdict knows whether a run was analysed with references): the shipped calibrator with one",
        f"threshold, against a calibrator that also reads the setting (terms `{by['split_terms']}`) with a threshold per setting,",
        "each chosen for 90 % precision over at least 20 cases; nested, each suite at the thresholds chosen on the others.",
        verdict,
        "",
        "| rule, setting | cases | learned top-1 | threshold | ECE | precision, coverage | nested right / `confident` | nested coverage |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        *(row(f"one threshold, {k}", one[k]) for k in ("alone", "references", "pooled")),
        *(row(f"a threshold per setting, {k}", two[k], k == "pooled") for k in ("alone", "references", "pooled")),
        "",
    ]


def _model_lines(meta: Mapping[str, Any], model: Model) -> list[str]:
    """What kind of model was fitted, with which parameters."""
    params = dict(meta["params"])
    size = f"{len(model.trees)} trees over {len(model.feature_names)} features (docs/analysis.md, \"Features\")."
    if params.get("objective") == "lambdarank":
        offset = float(params.get("offset", 0.0))
        return [
            f"LambdaMART (Burges 2010; LightGBM `LGBMRanker`, objective `lambdarank`, seed {meta['seed']},",
            f"parameters `{params}`): {size} Each failed run is one query; the trees are fitted to the",
            "order of its ranked steps (the truth steps first), not to each step alone.",
            *(
                [
                    f"Boosting starts from the hand ranking: a step's initial score is {offset:g} / (its hand rank),",
                    "shipped as the last tree, so the model departs from the hand order only where the data says so.",
                ]
                if offset
                else []
            ),
            *_weighting(meta),
            "A step's scores are normalized by a softmax over the run's ranked steps and calibrated on",
            "out-of-fold predictions (isotonic or Platt, whichever erred less).",
        ]
    return [
        f"Pointwise gradient-boosted trees (scikit-learn `GradientBoostingClassifier`, seed {meta['seed']},",
        f"parameters `{params}`): {size} A step's log-odds are normalized by a softmax over the run's ranked",
        "steps and calibrated on out-of-fold predictions (isotonic or Platt, whichever erred less).",
        "Each case weighs 1 in training, split evenly between its truth steps and the others.",
    ]


def render(res: Mapping[str, Any], meta: Mapping[str, Any], model: Model) -> str:
    """The model card as Markdown."""
    cal = res["calibration"]
    lines = [
        "# Model card: the learned ranker",
        "",
        "Generated by `python -m benchmarks.train` (do not edit by hand). The model ships as",
        "`src/trajdebug/analysis/model.json` and is evaluated in plain Python (`trajdebug.analysis.learned`);",
        ("it is the default of `analyze` and `trajdebug analyze` (`model=None` / `--model none`: the hand ranking)."
         if is_default() else
         "it is used when `analyze(..., model=\"default\")` or `trajdebug analyze --model default|FILE`."),
        "",
        "## Model",
        "",
        *_model_lines(meta, model),
        "",
        "## Data",
        "",
        "| source | what | route | licence | cases |",
        "|---|---|---|---|---:|",
    ]
    waiting = [name for name, *_ in SOURCES if not meta["cases"].get(name)]
    for name, what, route, lic in SOURCES:
        if meta["cases"].get(name):
            lines.append(f"| {name} | {what} | {route} | {lic} | {meta['cases'][name]} |")
    lines += [
        "",
        # A source the corpus now reads but this model was not fitted on (a retraining that did not ship).
        *([f"Not in this model's data: {', '.join(waiting)} (development suites since; they join with the next"
           " retraining that ships, \"Choices\")."] if waiting else []),
        f"{meta['steps']} ranked steps in all. Never used: the suites in `benchmarks.corpus.HELD_OUT`",
        f"(refused by the corpus: {', '.join(sorted(HELD_OUT)) + ', written blind' if HELD_OUT else 'none now'}). A case is a failed run whose root-cause step is known; each",
        "blind-suite case counts twice (alone, and with its agent's passing runs as references).",
        "Who&When's truth is the step of its `mistake_step` message; tau's is every step of the annotated",
        "root-cause message (so tau top-k here counts steps, not messages as benchmarks/tau.py does).",
        "",
        "## Cross-validation (every case scored by a model that never saw its fold)",
        "",
        "Leave one suite out (the model trained on the other suites):",
        "",
        *_table(res["loso"], "held-out suite"),
        "",
        *(
            [
                "The same, on the framework suites only (the blind suites written on LangGraph, the OpenAI Agents",
                "SDK, OpenInference/OTLP and the SDK): the number that predicts a fresh blind suite, and the one",
                "every recipe choice below was judged on (never a held-out suite).",
                "",
                *framework_lines(res),
                "",
            ]
            if res.get("loso_framework")
            else []
        ),
        "Leave one recording route out:",
        "",
        *_table(res["loro"], "held-out route"),
        "",
        "Five folds by agent (all cases of one agent or Who&When task in one fold):",
        "",
        *_table(res["kfold"], "suite"),
        "",
        "Per fault kind (five folds by agent):",
        "",
        *_table(res["kfold_fault"], "fault kind"),
        "",
        "## Calibration (framework suites left out one at a time, cross-fitted by suite)",
        "",
        *(["The shipped calibrator and `confident` thresholds are the recalibration's on the suites the model never saw",
           f"({(model.meta or {})['recalibrated']['date']}, \"Recalibration on suites the model never saw\" below); the numbers"
           " from here to there are those of the calibrator fitted at training, which it replaced.", ""]
          if (model.meta or {}).get("recalibrated") else []),
        f"- expected calibration error of the best candidate's confidence (10 equal-width bins):"
        f" {cal['ece']:.3f} with {CALIBRATORS.get(cal['method'], cal['method'])} (five folds by agent, for comparison: isotonic {cal['isotonic_ece']:.3f},"
        f" Platt on the probability and the run's ranked steps {cal['platt_ece']:.3f},"
        + (f" with the margin too {cal['platt_margin_ece']:.3f}," if "platt_margin_ece" in cal else "")
        + f" uncalibrated softmax {cal['raw_ece']:.3f})",
        (
            f"- `confident`: no threshold (none reaches 90 % precision on {MIN_SUPPORT} or more cases)"
            if cal["confident"] > 1.0
            else f"- `confident` (confidence >= {cal['confident']:.3f}"
            + (f" alone, >= {cal['confident_references']:.3f} with references" if cal.get("confident_references") else "")
            + f"): precision {_p(cal['precision_confident'])}, coverage {_p(cal['coverage_confident'])}"
        ),
        f"- `likely` (confidence >= {cal['likely']:.2f}): precision {_p(cal['precision_likely'])},"
        f" coverage {_p(cal['coverage_likely'])}; below it, `unsure`",
        *_calibration_goals(cal),
        f"The `confident` threshold is the lowest confidence at which the out-of-fold precision reaches 90 % over at least {MIN_SUPPORT} cases",
        ("(none: the verdict is never `confident`);" if cal["confident"] > 1.0 else f"({cal['confident']:.3f});"),
        "it is chosen on the same out-of-fold predictions it is reported on, so its precision is",
        "optimistic: \"nested\" chooses each fold's threshold on the other folds and scores it on",
        "the one left, the honest reading of the choice.",
        "",
        *_blind_lines(cal.get("blind")),
        *_recalibration(),
        "Five folds by agent, every calibrator (the comparison; until 2026-12-03 the lowest error shipped):\n",
        *_calibration_variants(cal),
        *REJECTED,
        "![reliability diagram](reliability.png)",
        "",
        *_previous(res),
        '## Choices',
        '',
        "2026-12-07, 05:26 UTC (round 59; the third try at the same decision): the shipped recipe refitted on a corpus rebuilt",
        "entirely under main's analysis of 882174fb (7737 cases: quality, tau, Who&When and the development suites up to ZZZI,",
        "each blind case alone and with references), Who&When's boost 4.65 from the corpus's composition alone (its share of",
        "the training weight 6.02 %, the shipped model's). The training rule written before the run",
        "(benchmarks/train_rule_round59.md, round 57's nine conditions) held on all nine, three by a hair: over all 3873 first",
        "against the shipped model's 3866 (hand 3743); zzf to zzzi 1064 against 1028; by suite 50.1 against the hand ranking's",
        "48.4, by route 49.7 against 48.4; framework suites left out 50.0 against 47.7; Who&When five folds 35.7; ECE 0.049;",
        "`confident` nested 89.90 %; on ZZZJ to ZZZQ (neither model trained on them; 640 cases) 276 against 272 (hand 266).",
        "The fault-injection suite fell (left out 320 against the shipped model's stored 450; hand 351). **NOT shipped**: the",
        "calibration the shipped model carries was never the training one. Round 48/50's recalibration rule",
        "(`python -m benchmarks.recalibrate`), run for the new trees on the suites they never saw (ZZZJ to ZZZQ, 640 rows),",
        "failed: rescaled per setting, nested, `confident` right 53 of 65 (81.54 %; bound 89.5 %) at 10.2 %, ECE 0.048, below",
        "the training calibrator's 83.9 % on the same rows. The training calibrator (one threshold, 0.762, for both settings)",
        "is `confident` of runs alone, right 15 of 18 (83.3 %) there, which round 50 ruled out; the shipped model on the same",
        "rows: top-1 35.6 % alone / 49.4 % with references (new trees 36.2 % / 50.0 %), `confident` 69 of 80 (86.3 %), never",
        "alone. So the model of 2026-12-04 stays. Numbers: benchmarks/train_results_round59.json, train_against_round59.txt,",
        "recalibrate_results_round59.json, recalibrate_round59.txt. Two --ask tests whose scripted answerer answered a group",
        "of like steps by its first step alone were fixed on the way (they passed on the old model by the order the group",
        "was listed in).",
        "",
        "2026-12-06, 23:33 UTC (round 57; the 7417 cases of round 56): the shipped recipe refitted with one change, Who&When's",
        'boost 2 -> 4.45, and NOT shipped, by the rule written before the run (benchmarks/train_rule_round57.md, committed 22:09',
        'UTC). Round 56 had refitted the unchanged recipe on every development source (zj to zzze, 48 suites the shipped trees',
        'never saw, joining) and failed two of its eight conditions: Who&When five folds 22.2 % (bound 30) and ECE 0.052 (bound',
        "0.05); over all 3708 first against the shipped model's 3689 (benchmarks/train_rule_round56.md, train_against_round56.txt).",
        "This round's change was motivated by that failure and decided from the corpora's composition alone: at boost 2",
        "Who&When's share of the training weight (`Recipe.weights`) was 6.02 % of the shipped model's 3577 cases and 2.80 % of",
        "the 7417; 4.45 gives it 6.02 % again. The rule: round 56's eight conditions and a ninth, on ZZZF to ZZZI (320 cases",
        'neither model trained on) the final model ranks at least as many first as the shipped one. Every case scored by a',
        "model that never saw its suite (as round 56): over all 3697 against the shipped model's 3689 (hand ranking 3573):",
        'holds; the framework suites 3353 against 3212 (hand 3192), the fault-injection suite 314 against 450 (hand 351),',
        'Who&When 21 against 18, tau 9 against 9; on zzf to zzze 896 against 851 (hand 832): holds; on the 48 suites the',
        "shipped trees never saw 1750 against 1678. By suite 49.8 against the hand ranking's 48.2 (won 279 / lost 155) and by",
        'route 49.5 against 48.2 (won 257 / lost 157): hold; the recording SDK route 53.6 against 53.5; the fault-injection',
        'suite left out 58.1 against 65.0. Ship conditions: framework suites left out 49.9 against 47.5 (won 276 / lost 115):',
        'holds; Who&When five folds 29.4 (37 of 126; 38 would be 30.2): fails; ECE 0.055: fails; `confident` 90.0 % at',
        '17.7 % (nested 89.84 %): holds. On ZZZF to ZZZI, alone and with references pooled, the final model 151 first against',
        "the shipped model's 153 (hand 149; ZZZF 35/35, ZZZG 44/44, ZZZH 42/40, ZZZI 30/34): fails. So the model of",
        '2026-12-04 stays. Against round 56 the boost moved Who&When five folds from 22.2 to 29.4 (left out by suite 21 of',
        '126 both times) at 11 fewer first over all (3708 -> 3697) and ECE 0.052 -> 0.055. Command: `python -m',
        'benchmarks.train --corpus FILE --boost whowhen=4.45`, then `--against-shipped FILE --fresh FILE2`; numbers in',
        'benchmarks/train_results_round57.json and train_against_round57.txt.',
        "",
        "2026-12-06 (round 55, issue 23): the recalibration rerun on every framework suite the trees never saw (zj to zzza,",
        "3520 analyses on the analysis of round 55; zzp to zzza, 960, joined since round 50), and NOT shipped, by the rule",
        "of round 48 (`python -m benchmarks.recalibrate`; numbers in benchmarks/recalibrate_results_round55.json). The",
        "candidate (`rescale`), nested by suite: `confident` right 298 of 333 = 89.49 % at 9.5 % coverage (with references",
        "18.9 %, alone never), ECE 0.037; it beats the previous calibrator on the same rows (the one of 2026-12-04: 509 of",
        "603 = 84.4 % at 17.1 %, ECE 0.094; the shipped one of round 50: 333 of 375 = 88.8 % at 10.7 %, ECE 0.040) and its",
        "ECE is met, but it is under 89.5 % by one run (299 would be 89.8 %): the calibrator of round 50 stays. On the 960",
        "new analyses, out of sample for it, the shipped calibrator is right 79 of 94 times at `confident` (84.0 % at 9.8 %;",
        "ECE 0.041, alone 0.042, with references 0.047): by pair ZZP/ZZQ 16 of 19, ZZR/ZZS 16 of 16, ZZT/ZZU 13 of 15,",
        "ZZV/ZZW 14 of 17, ZZX/ZZY 9 of 10, ZZZ/ZZZA 11 of 17; the candidate, nested, 70 of 80 there (87.5 %; ZZZ/ZZZA 11 of",
        "16). On zj to zzo, where round 50 fitted it, the shipped calibrator reads 254 of 281 (90.4 %) on today's analyses.",
        "Pairs where the candidate's `confident` is under 80 % precise, nested: ZZF/ZZG 15 of 19, ZZH/ZZI 4 of 6, ZZL/ZZM 13",
        "of 17, ZZZ/ZZZA 11 of 16. Goals missed: precision at `confident` 90 % and coverage 30 %.",
        "",
        "2026-12-06 (round 50, issue 23): the calibrator and `confident` thresholds refitted on the 32 framework suites",
        "the trees never saw (zj to zzo, 2560 analyses), and shipped (trees, features and every ranking unchanged): the",
        "previous calibrator rescaled per setting (`benchmarks.recalibrate`, `rescale`), each setting's threshold chosen",
        "for 90 % precision over 20 runs. Nested by suite, `confident` 89.6 % precise at 10.9 % coverage, ECE 0.044",
        "(before, on the same rows: 85.7 % at 17.2 %, ECE 0.110); a run alone is never `confident` (before: 77.6 % at",
        "7.7 %); with references 89.6 % at 21.7 % (before 88.0 % at 26.8 %). The rule of round 48 (nested precision >=",
        "89.5 %, ECE <= 0.05, above the previous precision) holds; the goals (90 %, coverage 30 %) do not. Calibration,",
        "\"Recalibration on suites the model never saw\", has the method and the tables.",
        "",
        "2026-12-05, 21:46 UTC (round 48, issue 23): the shipped model's calibrator refitted on the 24 framework suites it",
        "never trained on (zj to zzg, 1920 analyses; its trees' best candidate right 46.6 %), and NOT shipped, by the rule",
        "written before the run (`benchmarks.recalibrate`): a Platt calibrator on the shipped terms with a `confident`",
        "threshold per setting, each suite scored by the calibrator and thresholds fitted on the other 23, must be at least",
        "89.5 % precise at `confident` pooled, with ECE <= 0.05, and more precise than the shipped calibrator on the same",
        "rows. The shipped calibrator there: ECE 0.096 (mean confidence 0.55 against 46.6 % right; the 0.5 to 0.7 bins right",
        "37 to 42 %), `confident` 87.1 % precise at 19.0 % (alone 80.2 % at 8.4 %, with references 89.0 % at 29.5 %). The",
        "refit, nested: ECE 0.053, `confident` 88.5 % at 8.6 % (alone never: no threshold reaches 90 % over 20 runs; with",
        "references 88.5 % at 17.2 %); with one threshold (read, not eligible) 88.0 % at 6.5 %. It beats the shipped",
        "precision but misses 89.5 % and the ECE, and halves the coverage: the calibrator of 2026-12-04 stays. Command:",
        "`python -m benchmarks.recalibrate --workdir DIR`; numbers in benchmarks/recalibrate_results.json.",
        "",
        "2026-12-05, 12:30 UTC (round 47, the second and last recipe of the round; the same 5177 cases): the shipped recipe",
        'counted by recording route instead of by suite (`group="route"`, the candidate named on 2026-12-04; nothing else',
        "changed, seed 20261204), NOT shipped, by round 47's rule (below) decided before the run, plus a margin decided before",
        "it: as the second recipe tried after the first failed, it must rank at least 26 more first than the shipped model",
        "over all (0.5 % of the cases: a margin against having chosen among two). Counted by route the four framework routes",
        "weigh 20, 20, 20 and 17 % of training, the fault-injection suite 8 %, Who&When 13 %, tau 3 % (by suite the",
        "framework suites weighed 90.7 %). Over all 5177 it ranked 2749 first against the shipped model's 2763 (hand ranking",
        "2756; counted by suite, 2736): fails, and the margin (-14 against +26); the framework suites 2312 against 2286 (by",
        "suite 2333), the fault-injection suite 411 against 450 (by suite 375), Who&When 18 against 18, tau 8 against 9. On",
        "zr to zzc 436 against 438: fails (the older half zf to zq 482 against 468). By suite 53.1 against the hand ranking's",
        "53.2 (won 77 / lost 84) and by route 52.7 against 53.2 (won 59 / lost 89): fails; the recording SDK route 60.7",
        "against 63.5 (won 27, lost 75); the fault-injection suite left out 76.1 against 85.0 (won 0, lost 48: wrong state",
        "value 30, stale fact 15, truncated output 3). Ship conditions hold: framework suites left out 51.6 against 50.6 (won",
        "75 / lost 31); Who&When five folds 39.7; ECE 0.043; `confident` 90.2 % at 18.4 % (nested 89.9 %). So the model of",
        "2026-12-04 stays: counting by route gives back Who&When (39.7 five folds, 28.6 by suite) and part of the",
        "fault-injection suite (76.1 left out, 69.4 by suite), but ranks fewer first than the shipped model over all and on",
        "the twelve newest suites, and still loses to the hand ranking by suite and by route.",
        "",
        "2026-12-05, 12:05 UTC (round 47; 5177 cases, every source rebuilt under the analysis of 1f67ded: suites zr to",
        "zzc, 960 cases, would have joined): the shipped recipe and seed refitted, not re-chosen, and NOT shipped, by the",
        "rule decided before the run: every case scored by a model that never saw its suite (the shipped model: its",
        "round-42 leave-one-suite-out predictions on corpus_42's 3577 cases, its plain predictions on zj to zzc; the",
        "retrained recipe: left out by suite); ship iff the retrained model ranks at least as many first over all AND on",
        "the newer half of the 24 newest framework suites (zr to zzc), beats the hand ranking by suite and by route, and",
        "meets every ship condition. Over all 5177 it ranked 2736 first against the shipped model's 2763 (hand ranking",
        "2756): fails; the framework suites 2333 against 2286 (hand 2268), the fault-injection suite 375 against 450 (hand",
        "459), Who&When 19 against 18, tau 9 against 9. On zr to zzc 443 against 438 (hand 427; the older half zf to zq 492",
        "against 468): holds. By suite 52.9 against the hand ranking's 53.2 (won 131 / lost 151) and by route 53.1 against",
        "53.2 (won 128 / lost 136): fails; the recording SDK route 60.9 against 63.5 (won 48, lost 93); the fault-injection",
        "suite left out 69.4 against 85.0 (won 0, lost 84: wrong state value 40, bad tool arguments 24, stale fact 15,",
        "truncated output 5; 79.3 in round 44, 83.3 in round 42). Ship conditions: framework suites left out 52.1 against",
        "50.6 (won 130 / lost 65); Who&When five folds 28.6, under the bound of 30: fails; ECE 0.045; `confident` 90.0 % at",
        "22.1 % (nested 89.9 %). The old rules, beside: round 44's newer half (zj to zq) 325 against 314 (it would hold);",
        "round 43's (corpus_42's cases only) 1968 first against the shipped run's 2011, by route 53.1 against 55.4 (fails).",
        "So the model of 2026-12-04 stays: the retrained one gains on the framework suites (+47 cases, +5 on the twelve",
        "newest) but loses the recording SDK route, the fault-injection suite left out most of all, and Who&When.",
        "",
        "2026-12-05, 03:25 UTC (round 44; 4217 cases, every source rebuilt under the analysis of bf3c496: suites zn, zo, zp",
        "and zq, 320 cases, would have joined): the shipped recipe and seed refitted, not re-chosen, and NOT shipped, by the",
        "rule decided before the run: every case scored by a model that never saw its suite",
        "(the shipped model: its round-42 leave-one-suite-out predictions on corpus_42's 3577 cases, its plain predictions on",
        "zj to zq; the retrained recipe: left out by suite); ship iff the retrained model ranks at least as many first over all",
        "AND on the newer half of the 16 newest framework suites (zj to zq), beats the hand ranking by suite and by route, and",
        "meets every ship condition. Over all 4217 it ranked 2327 first against the shipped model's 2317 (hand ranking 2319);",
        "on zj to zq 305 against 306 (hand 300; the older half zb to zi 320 against 287): fails by one case. By suite 55.2",
        "against the hand ranking's 55.0 (won 82 / lost 74); by route 54.9 against 55.0 (won 95 / lost 98): fails, the",
        "recording SDK route 63.8 against 66.7 (won 27, lost 69; the fault-injection suite left out 79.3 against 85.2).",
        "Ship conditions held: framework suites left out 53.1 against 52.0 (won 81 / lost 40); Who&When five folds 34.1;",
        "ECE 0.049; `confident` 90.0 % at 21.1 % (nested 89.9 %). The old rule (corpus_42's cases only), beside: 2022",
        "first against the shipped run's 2011 (it would have passed that half, by route not). So the model of 2026-12-04",
        "stays: its gain is on the older suites (zb to zi, +33), none on the eight newest (-1).",
        "",
        "2026-12-05, 00:15 UTC (round 43; 3897 cases: suites zj, zk, zl and zm, 320 cases, would have joined): the shipped",
        "recipe and seed refitted, not re-chosen, and NOT shipped, by the rule decided before the run (the retrained model",
        "must beat the hand ranking by suite and by route, be no worse than the shipped one on the same cases, and meet every",
        "ship condition). It beat the hand ranking (by suite 55.8 against 54.9, won 91 / lost 56; by route 55.2 against 54.9,",
        "won 88 / lost 77; framework suites left out 53.3 against 51.6, won 90 / lost 37; Who&When five folds 37.3; ECE",
        "0.046; `confident` 90.1 % at 20.4 %, nested 89.7 %), and on the four new suites left out it ranked 176 of 320 first",
        "against the shipped model's 174 (it never saw them); but on the 3577 cases both were measured on, left out by suite",
        "it ranked 2000 first against the shipped run's 2011 (55.9 against 56.2), and by route 55.2 against 55.4 over all.",
        "The fault-injection suite left out fell to 81.9 (83.3); the recording SDK route 65.1 against the hand ranking's",
        "67.6 (won 26, lost 60). Eleven cases of 3577 is within what a seed moves, but the rule is no worse, so the model",
        "of 2026-12-04 stays. `confident` by setting, the same run: one threshold 84.2 % at 9.1 % alone and 91.3 % at",
        "31.5 % with references (nested); a threshold per setting 85.1 % at 4.2 % alone, 89.9 % at 33.9 % with references,",
        "pooled coverage 19.1 % against 20.3 %: not kept (table above, for the shipped model: not kept either). Alone, even",
        "the surest 5 % of runs are right 89 % of the time (with references the surest 30 %: 92 %); the best candidate is",
        "right 46 % of the time alone against 61 %: the alone setting needs a better first guess, not another threshold.",
        "",
        "2026-12-04, 21:35 UTC (3577 cases; suites zf, zg, zh and zi joined): L2 regularisation (`reg_lambda` 10,",
        "`learning.L2`) confirmed on a second seed (20261204, the model's and the five folds'), as decided before the",
        "run: it becomes the recipe if it beats the hand ranking by suite, by route and on the framework suites left",
        "out, with every ship condition. By suite 56.2 against 55.1; by route 55.4 against 55.1 (won 65, lost 55: a",
        "win by 10 cases of 3577, within what a seed moves); framework suites left out 53.2 against 51.5 (won 74,",
        "lost 24); Who&When five folds 37.3; fault-injection five folds 85.0, left out 83.3; ECE 0.043; `confident`",
        "90.1 % at 19.7 % (nested 89.8 %). The recipe without it, same run: 56.1, 55.2 (won 80, lost 76), 53.5",
        "(93 / 35), Who&When 36.5, fault-injection left out 81.1, ECE 0.045, `confident` 90.0 % at 22.6 %.",
        "By route the model still loses the recording SDK (66.6 against 68.3, won 20, lost 43) and tau (31.0 against",
        "37.9) and wins on OTLP (50.6 against 47.0) and LangGraph (47.0 against 45.6). It passed, so it is the default",
        "of `analyze` (`model=None` / `--model none`: the hand ranking); the corpus, `trajdebug fit` and the benchmarks",
        "that measure the hand ranking (on cases the model is trained on) ask for the hand ranking by name.",
        "",
        "2026-12-04, 19:20 UTC (3257 cases; suites zd and ze joined): the text lengths dropped (`learning.TEXT_LENGTHS`:",
        "`output_log`, `input_log`). Why the model lost with a route left out: with the recording SDK left out it won",
        "60.1 against 58.1 on that route's blind suites but lost the fault-injection suite 68.9 against 85.0, and",
        "output length demoted the root most in the lost cases (summed contribution -101): a route's tell (the Agents",
        "SDK's agent spans have no output, 45 % of its non-root steps against 9-12 % elsewhere). Without the lengths,",
        "same folds and seed: by route 56.0 against the hand ranking's 56.0 (54.1 with them); framework suites left",
        "out 54.1 against 52.1 (won 76, lost 24); fault-injection left out 84.8 (78.1 with them); Who&When five folds",
        "36.5; ECE 0.043; `confident` 90.1 % at 22.0 % (nested 89.8 %). A tie by route is no win: not the default.",
        "Tried and not shipped: the same with L2 regularisation (`reg_lambda` 10): by route 56.7, but chosen on that",
        "rule's own number after the tie, and it costs the framework suites (53.5) and coverage (18.8 %).",
        "A calibrator with more terms (hand rank, the hand ranker's lead, agreement) lowered ECE to 0.025-0.028 but",
        "held `confident` at 90 % with 20-23 % coverage: coverage is limited by the ranking's top-1, not the calibrator.",
        "",
        "2026-12-04, 17:20 UTC (3097 cases; suites z, za, zb and zc joined): the same recipe refitted, not re-chosen.",
        "Framework suites left out 54.6 against the hand ranking's 52.8 (won 61, lost 19); by route 55.5 against 56.7;",
        "Who&When five folds 38.9; fault-injection five folds 85.0, left out 78.1 (80.9 before); ECE 0.042;",
        "`confident` 90.1 % at 22.7 % (nested 89.5 % at 22.6 %).",
        "",
        "2026-12-04 (2777 cases; suites r to y joined): with 26 framework suites of 29 sources, the recipe of the",
        "round before (balance 0.5) had Who&When's five folds at 28 % on r to w and 33.3 % with x and y (the issue's",
        "bound: 30 %). Each recipe on the same folds and seed (`python -m benchmarks.train_variants --corpus FILE",
        "--routes`, or `--screen`: five folds only). Top-1 in %; calibration as shipped (framework suites left out):",
        "",
        "| variant | framework suites left out (hand 54.1) | won / lost | by route (hand 58.2) | Who&When five folds | fault-injection five folds / left out | ECE | `confident` precision, coverage (nested) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
        "| balance 0.5 (the round before's) | 56.1 | 58 / 17 | 54.2 | 33.3 | 85.0 / 80.6 | 0.046 | 90 %, 22 % (89 %, 22 %) |",
        "| **balance 0.5, Who&When x2 (shipped)** | 55.9 | 47 / 11 | 55.1 | 38.1 | 85.0 / 80.9 | 0.045 | 90 %, 21 % (89 %, 22 %) |",
        "| balance 0.5, Who&When x1.5 (screen) | - | - | - | 37.3 | 85.0 | - | - |",
        "| balance 0.5, Who&When x3 (screen) | - | - | - | 40.5 | 82.2 | - | - |",
        "| balance 0.5, counted by route (screen) | - | - | - | 41.3 | 85.0 | - | - |",
        "| balance 1 (screen) | - | - | - | 32.5 | 85.0 | - | - |",
        "",
        "Shipped: Who&When's cases weigh twice the balance-0.5 weight. On the framework suites left out it is",
        "4 cases of 2082 under the round before's recipe (seeds alone move this 1 to 3 points) and 1.8 points over",
        "the hand ranking; Who&When five folds +4.8 points (6 of 126 cases), by route +0.9, calibration alike.",
        "Three times costs the fault-injection suite (82.2); counting by route (every route, transcript",
        "included, weighs 1 / sqrt(its cases)) screened best on Who&When but was not cross-validated on the",
        "framework suites in this round's time: the next candidate.",
        "",
        "2026-12-02:",
        "",
        'The round of 1337 cases (suites b, c, e, f and g joined the training data): each recipe scored by',
        '`python -m benchmarks.train_variants --corpus FILE` on the framework suites left out one at a time (the',
        'number that predicts a fresh blind suite), beside Who&When and the fault-injection suite, whose',
        "cross-validated top-1 may not fall more than 3 points below the last card's (Who&When five folds 38 %,",
        'fault-injection 85 % left out and in five folds). Two seeds where a recipe was a contender: the seeds',
        'alone move a number by 1 to 3 points. Top-1 in %:',
        '',
        '| variant | framework suites left out, top-1 (seed 20261202 / 7) | Who&When five folds | fault-injection five folds | fault-injection left out |',
        '|---|---:|---:|---:|---:|',
        "| today's recipe (no weights) | 48.3 / 47.2 | 35.7 / 38.9 | 85.0 / 81.7 | 80.7 / 80.4 |",
        '| **balance 0.5 (shipped)** | 48.4 / 48.8 | 34.9 / 34.9 | 82.2 / 82.2 | 81.5 / 79.8 |',
        '| balance 1 (every source alike) | 49.2 / 48.9 | 30.9 / 27.8 | 82.2 / 81.8 | 82.0 / 82.2 |',
        '| balance 1, offset 2 | 49.2 / 51.4 | 31.8 / 30.2 | 85.0 / 85.0 | 82.0 / 81.5 |',
        '| balance 0.5, offset 2 | 48.8 / 49.1 | 32.5 / 30.9 | 85.0 / 85.0 | 81.5 / 82.0 |',
        '| offset 2 | 47.5 | 32.5 | 82.4 | 79.8 |',
        '| cap 150 cases a source | 48.3 | 33.3 | 82.2 | 80.7 |',
        '| balance 1, no evidence names | 49.2 | 34.1 | 84.3 | 80.6 |',
        '| no evidence names | 48.1 | 32.5 | 83.2 | 79.8 |',
        '| no `ranker:*` | 47.2 | 34.1 | 82.2 | 79.8 |',
        '| balance 1, no `ranker:*` | 47.7 | 34.1 | 81.8 | 80.4 |',
        '| balance 1, structure only | 47.2 | 32.5 | 82.2 | 80.0 |',
        '| 50 trees of 4 leaves | 47.3 | 16.7 | 85.0 | 82.2 |',
        '| balance 1, 50 trees of 4 leaves | 47.3 | 13.5 | 85.0 | 85.0 |',
        '| balance 1, L2 10, 50 a leaf | 48.0 | 30.9 | 85.0 | 85.0 |',
        '| balance 1, 16 leaves | 48.0 | 30.9 | 82.0 | 79.4 |',
        '| balance 1, 200 trees | 48.4 | 34.9 | 78.3 | 78.9 |',
        '| balance 1, 50 a leaf | 48.8 | 26.2 | 83.5 | 81.3 |',
        '| run-relative features | 48.3 | 34.9 | 82.2 | 79.8 |',
        '| run-relative, balance 0.5 | 49.2 | 33.3 | 82.2 | 82.2 |',
        '| run-relative, balance 1 | 48.0 | 30.2 | 84.8 | 79.8 |',
        '| run-relative, no evidence names | 48.6 | 32.5 | 82.2 | 79.8 |',
        '| run-relative, balance 1, no evidence names | 49.1 | 34.9 | 83.5 | 82.2 |',
        '| hand ranking | 47.2 | 11.1 | 85.0 | 85.0 |',
        '',
        "Shipped: balance 0.5 (a case weighs 1 / sqrt(cases of its source)). It is ahead of today's recipe on",
        'the framework suites at both seeds, but by less than the seeds move it (+0.1, +1.6). Who&When five',
        'folds is 34.9 % (44 of 126) at both seeds, 3.1 points under the bound: one case too few. Left out',
        "whole, the fault-injection suite falls 3.5 to 5.2 points under the last card's 85 %. Most recipes",
        "fall there now, today's as well (80.7, 80.4): more framework data pulls the model toward the",
        "frameworks; only the most regularized (balance 1 with 50 trees of 4 leaves, or with L2 10 and 50",
        "a leaf) keep 85.0, and they lose Who&When (13.5, 30.9) and the framework suites (47.3, 48.0).",
        "Balance 1 with offset 2 is best on the framework suites (49.2, 51.4; +2.0 and +4.2 over",
        'the hand ranking). It keeps the fault-injection suite (85.0 in five folds), but it costs Who&When',
        '6 to 8 points, so it is not shipped. Fewer or shallower trees lost Who&When outright (13 to 17 %).',
        "Features that travel did not help in these variants. Leaving out the names that key on a suite's",
        'own step kinds and diagnosers (`kind:*`, `fam:*`, `src:*`, `ranker:evidence:*`, `ranker:sound:*`),',
        'or every `ranker:*` feature, left the framework number where it was or lowered it. The run-relative',
        'features (order among the ranked steps; the first ranked step of a new speaker, of a model call, of',
        "suspicious evidence) were within the seeds' noise too.",
        '',
        'The round before (931 cases), judged on leave-one-suite-out and leave-one-route-out top-1 only:',
        "LambdaMART over pointwise boosting (+2.4 and +4.6 points, both with the `ranker:*` features); the hand-rank prior",
        "(offset 4 over none: +4.6, +8.3; offsets 2, 3 and 6 lower on both); not kept: monotone constraints on the hand",
        "score (-1.5, -0.2), per-run normalised evidence (+0.4, +0.3: noise, and the calibration error rose to 0.068),",
        "at least 50 steps a leaf (-0.4, -1.9), 200 trees at half the rate (-1.3, -1.8); 50 trees of 4 leaves (+1.0, +0.2),",
        "50 trees (+0.9, +0.3) and L2 10 on the leaves (+0.8, +0.5) gained 2 to 9 cases of 931 but lost the calibration",
        "goal (ECE 0.107, 0.055, 0.071) and Who&When five-fold top-1 (16 %, 30 %, 35 % against 38 %).",
        "",
        *_tells(res.get("tells")),
        "## Limits",
        "",
        "- The features see structure and the hand ranker's verdict, not content: the model cannot find a",
        "  root the hand ranker's evidence and the run's shape both miss.",
        "- Only ranked steps (the failure's backward slice) are scored: a root off the slice stays unranked.",
        "- The fault-injection suite is still the biggest source (540 of 3097 cases; 7 % of the training",
        "  weight after balance 0.5, against 17 % unweighted; Who&When 7 %); the blind suites are outsiders' agents on four",
        "  frameworks. On other agents and frameworks, trust the verdict less.",
        "",
    ]
    return "\n".join(lines)


START, END = "<!-- learned-ranker -->", "<!-- /learned-ranker -->"
"""Markers around the section in docs/benchmarks.md (`python -m benchmarks.train` replaces it in place)."""

RESULTS = Path(__file__).resolve().parent / "train_results.json"


def learned_section(res: Mapping[str, Any] | None = None) -> list[str]:
    """The learned ranker's section of docs/benchmarks.md (from benchmarks/train_results.json; empty without it)."""
    if res is None:
        if not RESULTS.exists():
            return []
        res = json.loads(RESULTS.read_text())
    cal = res["calibration"]
    lo, ro = res["loso"]["all"], res["loro"]["all"]
    fw = (res.get("loso_framework") or {}).get("all")
    ww = res["kfold"].get("whowhen", {})
    return [
        START,
        "## The learned ranker (cross-validated; `python -m benchmarks.train`)",
        "",
        "A boosted-tree ranker over the features of every ranked step (docs/analysis.md, \"Features\"),",
        "trained on the fault-injection suite, tau, Who&When Algorithm-Generated and the development blind",
        "suites, b to j included since 2026-12-02, k to q since 2026-12-03, r to zi from the first retraining after their scoring, zj to zzzw with the next one that ships (never a suite in `benchmarks.corpus.HELD_OUT`, the held-out ones). Every number is on cases the scoring model never saw;",
        "the hand ranking and \"always the first step\" are scored on the same cases. Full tables, per fault",
        "kind, and the data card: docs/model-card.md.",
        "",
        "| cross-validation | cases | learned top-1 | hand top-1 | learned top-3 | hand top-3 |",
        "|---|---:|---:|---:|---:|---:|",
        f"| leave one suite out | {int(lo['n'])} | {_p(lo['learned_top1'])} | {_p(lo['hand_top1'])} |"
        f" {_p(lo['learned_top3'])} | {_p(lo['hand_top3'])} |",
        *(
            [
                f"| leave one suite out, framework suites only | {int(fw['n'])} | {_p(fw['learned_top1'])} |"
                f" {_p(fw['hand_top1'])} | {_p(fw['learned_top3'])} | {_p(fw['hand_top3'])} |"
            ]
            if fw
            else []
        ),
        f"| leave one recording route out | {int(ro['n'])} | {_p(ro['learned_top1'])} | {_p(ro['hand_top1'])} |"
        f" {_p(ro['learned_top3'])} | {_p(ro['hand_top3'])} |",
        *(
            [
                f"| Who&When AG, five folds (decisive step) | {int(ww['n'])} | {_p(ww['learned_top1'])} |"
                f" {_p(ww['hand_top1'])} | {_p(ww['learned_top3'])} | {_p(ww['hand_top3'])} |"
            ]
            if ww
            else []
        ),
        "",
        f"Who&When AG, always the first step: {_p(ww.get('first_top1', float('nan')))}.",
        "",
        *_heldout(res.get("heldout")),
        *_default_lines(res),
        *_previous(res),
        "Calibration of the best candidate's confidence (framework suites left out one at a time, cross-fitted"
        f" {CALIBRATORS.get(cal.get('method', 'isotonic'), cal.get('method'))}):",
        f"expected calibration error **{cal['ece']:.3f}** (goal <= 0.05; the softmax before calibration, five folds:",
        f"{cal['raw_ece']:.3f}); "
        + (
            f"no `confident` threshold: no confidence reaches 90 % precision on {MIN_SUPPORT} or more cases, so the"
            " verdict is never `confident` (goal >= 90 % at >= 30 % coverage);"
            if cal.get("confident", 0.0) > 1.0
            else f"at `confident` (confidence >= {cal['confident']:.2f}) precision **{_p(cal['precision_confident'])}**"
            f" with coverage **{_p(cal['coverage_confident'])}** (goal >= 90 % at >= 30 %);"
        ),
        f"at `likely` (>= {cal['likely']:.2f}) precision {_p(cal['precision_likely'])}, coverage {_p(cal['coverage_likely'])}.",
        *(
            [
                "The `confident` threshold chosen without the fold it is scored on (nested): precision",
                f"{_p(cal['nested_precision'])} at coverage {_p(cal['nested_coverage'])}. Every calibrator tried: docs/model-card.md.",
            ]
            if "nested_precision" in cal
            else []
        ),
        *_recalibration_summary(),
        "",
        "![reliability diagram of the learned ranker](reliability.png)",
        "",
        *_curve_lines(),
        END,
        "",
    ]


CURVE = Path(__file__).resolve().parent / "label_curve_results.json"


def _previous(res: Mapping[str, Any]) -> list[str]:
    """This model against the first shipped one's recipe on the same folds (``--compare``), when measured."""
    prev = res.get("previous")
    if not prev:
        return []
    cal, pc = res["calibration"], prev["calibration"]
    ww, pww = res["kfold"].get("whowhen", {}), prev.get("whowhen") or {}
    head = "| | leave one suite out top-1 / top-3 | leave one route out | five folds by agent | Who&When AG (five folds) | ECE | at `confident`: precision, coverage |"
    out = [
        "Against the first shipped model's recipe (pointwise boosting, `training.POINTWISE_PARAMS`, without the",
        "`ranker:*` features), cross-validated on the same cases and folds (`python -m benchmarks.train --compare`):",
        "",
        head,
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r, w, c in (("this model", res, ww, cal), ("first model's recipe", prev, pww, pc)):
        # The full results keep per-group tables (their pooled row is "all"); --compare keeps only the pooled row.
        lo, ro, k5 = (r[cv].get("all", r[cv]) for cv in ("loso", "loro", "kfold"))
        out.append(
            f"| {name} | {_p1(lo['learned_top1'])} / {_p1(lo['learned_top3'])} | {_p1(ro['learned_top1'])} / {_p1(ro['learned_top3'])}"
            f" | {_p1(k5['learned_top1'])} / {_p1(k5['learned_top3'])} | {_p(w.get('learned_top1', float('nan')))}"
            f" | {c['ece']:.3f} | {_p(c['precision_confident'])}, {_p(c['coverage_confident'])} |"
        )
    lo = res["loso"]["all"]
    ro, k5 = res["loro"]["all"], res["kfold"]["all"]
    out.append(
        f"| hand ranking | {_p1(lo['hand_top1'])} / {_p1(lo['hand_top3'])} | {_p1(ro['hand_top1'])} / {_p1(ro['hand_top3'])}"
        f" | {_p1(k5['hand_top1'])} / {_p1(k5['hand_top3'])} | {_p(ww.get('hand_top1', float('nan')))} | - | - |"
    )
    return [*out, ""]


def beats_hand(res: Mapping[str, Any]) -> bool:
    """The learned ranker beats the hand ranking on top-1 left out by suite AND by route."""
    return all(res[cv]["all"]["learned_top1"] > res[cv]["all"]["hand_top1"] for cv in ("loso", "loro"))


def is_default() -> bool:
    """Whether `analyze` uses the model unless told otherwise (read from its signature, so the docs cannot drift)."""
    import inspect

    from trajdebug.analysis._pipeline import analyze

    return inspect.signature(analyze).parameters["model"].default is not None


def _default_lines(res: Mapping[str, Any]) -> list[str]:
    """Whether the model is the default of `analyze`, and the numbers that decide it."""
    lo, ro, k5 = res["loso"]["all"], res["loro"]["all"], res["kfold"]["all"]
    why = (
        f"left out by suite, top-1 {_p1(lo['learned_top1'])} against the hand ranking's {_p1(lo['hand_top1'])};"
        f" left out by recording route, {_p1(ro['learned_top1'])} against {_p1(ro['hand_top1'])}"
    )
    beats = "It beats" if beats_hand(res) else "It does not beat"
    head = (
        [f"{beats} the hand ranking on whole suites and whole routes left out ({why}).",
         "It is the default of `analyze`; `model=None` / `--model none` gives the hand ranking."]
        if is_default()
        else [f"{beats} the hand ranking on whole suites and whole routes left out ({why}).",
              "Not the default: `analyze` keeps the hand ranking and the model is behind `model=\"default\"` /",
              "`--model default`."]
    )
    return [
        *head,
        f"In distribution (five folds by agent) top-1 is {_p(k5['learned_top1'])} against {_p(k5['hand_top1'])}"
        f" and top-3 {_p(k5['learned_top3'])} against {_p(k5['hand_top3'])}; per suite: docs/model-card.md.",
        "The hand ranking was developed on these same suites, so its numbers here are in sample; the model's are not.",
        "",
    ]


def _curve_lines() -> list[str]:
    """How many labels of one agent `trajdebug fit` needs (benchmarks/label_curve.py), when measured."""
    if not CURVE.exists():
        return []
    data = json.loads(CURVE.read_text())
    sizes = sorted({int(n) for row in data.values() for n in row})
    out = [
        "Learning from one's own labels (`python -m benchmarks.label_curve`, measured with the first, pointwise",
        "model; not re-run since): for each fault-suite workflow,",
        "a model trained without the fault suite stands for the shipped one; `trajdebug fit` boosts on from it",
        "with n labelled runs of that workflow (three seeded draws), and both rank the workflow's other runs.",
        "Top-1, shipped -> fitted:",
        "",
        "| workflow | " + " | ".join(f"n={n}" for n in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for agent, row in data.items():
        cells = [f"{100 * row[str(n)]['shipped']:.0f} -> {100 * row[str(n)]['fitted']:.0f}" for n in sizes]
        out.append(f"| {agent} | " + " | ".join(cells) + " |")
    return [*out, ""]


def _heldout(data: Mapping[str, Any] | None) -> list[str]:
    """Suites b, c, e pooled, scored once with and without an earlier model while still held out (a results key
    ``heldout`` kept by hand; a retrain drops it, as b, c and e are training data since 2026-12-02)."""
    if not data:
        return []
    out = [
        "Suites b, c, e pooled, scored once while held out, before they became training data (rounded per suite):",
        "",
        "| setting | cases | learned top-1 | hand top-1 | learned top-3 | hand top-3 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for setting, d in data.items():
        lm, hd = d["default"], d["hand"]
        out.append(
            f"| {setting} | {lm['n']} | {_p(lm['top1'])} | {_p(hd['top1'])} | {_p(lm['top3'])} | {_p(hd['top3'])} |"
        )
    return [*out, ""]


def splice(doc: str, section: list[str]) -> str:
    """``doc`` with its learned-ranker section replaced by ``section`` (appended when it has none)."""
    text = "\n".join(section)
    if START in doc and END in doc:
        a, b = doc.index(START), doc.index(END) + len(END)
        return doc[:a] + text.rstrip("\n") + doc[b:]
    return doc.rstrip("\n") + "\n\n" + text


__all__ = ["beats_hand", "framework_lines", "is_default", "learned_section", "render", "splice"]
