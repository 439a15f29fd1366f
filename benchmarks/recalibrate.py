"""Recalibrate the shipped learned ranker on suites it never saw: ``python -m benchmarks.recalibrate`` (issue 23).

The shipped model's calibrator and ``confident`` threshold were fitted on the framework suites it was trained
on, each left out in turn (`benchmarks.train.blind`): nested there, ``confident`` was right 89.8 % of the time
at 19.7 % coverage.  On every fresh held-out pair scored since it was right 80 to 86 % of the time: on agents
no tree saw, the confidence is too sure.  The suites the model never trained on (the development suites
absent from its ``meta["cases"]``, which the model card lists as "Not in this model's data"; never a suite in
`benchmarks.corpus.HELD_OUT`) are honest out-of-sample data for its raw scores, as a fresh suite is.

1. Rows.  For each such suite, case and setting (alone, with references): the shipped trees' best candidate
   (`benchmarks.learning.learned_order`, the order `trajdebug.analysis.learned.rerank` gives) with what the
   Platt calibrator reads (`Model.calibrate`: its softmax probability, the run's ranked steps, its margin over
   the runner-up, its hand score, the setting) and whether it is the truth step.  The cases come from
   `benchmarks.corpus.suite` (`benchmarks.blind`'s loading, ``truth_step`` and settings), the recordings from
   ``--workdir`` (a suite missing there is generated into it); the rows are cached in ``--rows``.
2. The shipped calibrator on them: expected calibration error (10 equal-width bins, `benchmarks.train.ece`),
   and precision and coverage at ``confident``, by setting and by suite pair.
3. The candidate (`rescale`), evaluated nested, and the rule; ``--older FILE`` also measures both calibrators on
   the framework suites the trees were trained on (in sample for the trees), rows cached in FILE.

The rule, written before the refit was first run (2026-12-05, round 48):

- Ship iff, pooled and nested (each suite scored by the calibrator and thresholds fitted on the other suites'
  rows only; every row scored once, by a fit that never saw its suite): precision at ``confident`` >= 89.5 %;
  ECE <= 0.05; and that precision above the shipped calibrator's precision at ``confident`` on the same rows.
  Otherwise the shipped calibrator stays and the numbers are reported.
- Round 48's candidate, a Platt calibrator refitted on the shipped terms (``pnmh``: the logit of the best
  candidate's probability, log(1 + ranked steps), the margin, the hand score; `benchmarks.train.platt_fit`) with a
  ``confident`` threshold per setting (`fit`), missed it on zj to zzg and is still printed beside.
- The candidate since 2026-12-06 (round 50, on zj to zzo): `rescale`, the shipped calibrator rescaled per
  setting (an intercept and a slope on its log-odds for runs alone, another for runs with references: the model's
  ``platt`` and ``platt_references``), each setting's threshold the lowest confidence at which that setting's rows
  are right at least 90 % of the time over at least 20 (`benchmarks.train.threshold`; never ``confident`` when
  none is); ``likely`` stays 0.5.  It was chosen after several others were tried on the same nested rows
  (docs/model-card.md, "Recalibration on suites the model never saw"), so its nested precision is a little
  flattered; the next fresh pair is its test.
- 2026-12-06 (round 55), on every suite the trees never saw (zj to zzza, 3520 rows; zzp to zzza joined since round
  50): nested 298 of 333 = 89.49 % at 9.5 % coverage, ECE 0.037, above the shipped calibrator's precision, but under
  89.5 % by one run: not shipped (docs/model-card.md, "Choices"; numbers in benchmarks/recalibrate_results_round55.json).
  The conditions print with two decimals since, so a miss by a hair does not read as met.

Everything is deterministic (a logistic regression by L-BFGS, no sampling): the same rows give the same model.
``--ship`` writes the model when the rule holds (else it only reports); ``--results`` keeps the numbers
(docs/model-card.md, "Recalibration on suites the model never saw", is rendered from them).  A model already
recalibrated keeps its previous calibrator in ``meta["recalibrated"]["before"]``: that is the one measured as
shipped, so the script reproduces its decision.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from benchmarks import learning as L
from benchmarks.corpus import DEV_SUITES, HELD_OUT, Case
from benchmarks.recalibrate_card import RESULTS, pct
from benchmarks.train import LIKELY, ece, platt_fit, threshold
from trajdebug.analysis.learned import DEFAULT_PATH, Model, load_model, margins, model_from_dict


ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "benchmarks" / "recalibrate_rows.json"
"""The cached rows (`Row`), one per suite, case and setting."""
TERMS = "pnmh"
"""The refit calibrator's terms: the shipped one's (`benchmarks.train.BLIND_TERMS`)."""
SHIP_PRECISION = 0.895
"""Nested pooled precision at ``confident`` the refit must reach (the rule, above)."""
SHIP_ECE = 0.05
"""Nested pooled expected calibration error the refit may not exceed."""
COMMAND = "python -m benchmarks.recalibrate"


@dataclass(frozen=True, slots=True)
class Row:
    """One analysis of a suite the model never trained on: its best candidate, as the calibrator reads it."""

    suite: str
    case_id: str
    references: bool
    """Analysed with the agent's passing runs as references (else alone)."""
    p: float
    """The best candidate's softmax probability."""
    n: int
    """Ranked steps in the run."""
    margin: float
    """The best candidate's log-odds margin over the runner-up (`trajdebug.analysis.learned.margins`)."""
    hand: float
    """The hand ranker's score of the best candidate."""
    ok: bool
    """Whether the best candidate is the truth step."""


def unseen_suites(model: Model) -> list[str]:
    """The development framework suites ``model`` was never trained on (never a held-out one), in corpus order."""
    seen = set((model.meta or {}).get("cases", {}))
    return [s for s in DEV_SUITES if s in L.FRAMEWORK and s not in seen and s not in HELD_OUT]


def trained_suites(model: Model) -> list[str]:
    """The framework suites ``model``'s trees were trained on, in corpus order (its calibrator's in-sample check)."""
    seen = set((model.meta or {}).get("cases", {}))
    return [s for s in DEV_SUITES if s in L.FRAMEWORK and s in seen]


def row(case: Case, model: Model) -> Row:
    """The case's best candidate under ``model``'s trees, with the calibrator's inputs."""
    probs = L.probabilities(model, case)
    order = L.learned_order(probs)
    best = order[0] if order else 0
    return Row(
        suite=case.suite,
        case_id=case.case_id,
        references=case.with_references(),
        p=probs[best] if probs else 0.0,
        n=len(case.rows),
        margin=max(margins(probs), default=0.0),
        hand=float(case.rows[best].get("hand_score", 0.0)) if case.rows else 0.0,
        ok=bool(order) and case.labels()[best] == 1,
    )


def collect(suites: Sequence[str], workdir: Path, model: Model, progress: Callable[[str], None] = print) -> list[Row]:
    """Every case of ``suites``, alone and with references (`benchmarks.corpus.suite`), as rows."""
    from benchmarks.corpus import suite

    out: list[Row] = []
    for name in suites:
        rows = [row(c, model) for c in suite(name, workdir, progress)]
        progress(f"{name}: {len(rows)} rows, best candidate right {sum(r.ok for r in rows)}")
        out += rows
    return out


def save_rows(rows: Sequence[Row], path: Path) -> None:
    """Write the rows as one JSON list."""
    path.write_text("[\n" + ",\n".join(json.dumps(asdict(r)) for r in rows) + "\n]\n")


def load_rows(path: Path) -> list[Row]:
    """Read rows written by `save_rows`."""
    return [Row(**d) for d in json.loads(path.read_text())]


def confidence(model: Model, r: Row) -> float:
    """The calibrated confidence ``model`` gives the row's best candidate (as `trajdebug.analysis.learned.rerank`)."""
    return model.calibrate(r.p, r.n, r.margin, r.hand, r.references)


def _x(r: Row, terms: str) -> list[float]:
    p = min(max(r.p, 1e-9), 1 - 1e-9)
    x = {"p": math.log(p / (1 - p)), "n": math.log1p(r.n), "m": r.margin, "h": r.hand, "r": float(r.references)}
    return [x[t] for t in terms]


def fit(rows: Sequence[Row], terms: str = TERMS, split: bool = True) -> Model:
    """A calibrator (a `Model` without trees) fitted on ``rows``: Platt on ``terms`` and the ``confident``
    threshold(s) chosen on its confidences of the same rows, one per setting when ``split``."""
    m = Model((), 0.0, 1.0, (), platt=platt_fit([_x(r, terms) for r in rows], [int(r.ok) for r in rows], terms),
              likely=LIKELY)
    conf = [confidence(m, r) for r in rows]
    ok = [r.ok for r in rows]
    if not split:
        return replace(m, confident=threshold(conf, ok))
    th = {s: threshold([c for c, r in zip(conf, rows, strict=True) if r.references == s],
                       [r.ok for r in rows if r.references == s]) for s in (False, True)}
    return replace(m, confident=th[False], confident_references=th[True])


def _logit(c: float) -> float:
    c = min(max(c, 1e-12), 1 - 1e-12)
    return math.log(c / (1 - c))


def _composed(coef: Sequence[float], refs: bool, a: float, b: float) -> tuple[float, ...]:
    """Platt coefficients (`Model.platt`, five terms) reading ``sigmoid(a + b z)`` where ``z`` is what ``coef``
    reads for a run in setting ``refs``: its references term, constant within a setting, joins the intercept."""
    c = list(coef) + [0.0] * (6 - len(coef))
    return (a + b * (c[0] + (c[5] if refs else 0.0)), *(b * v for v in c[1:5]))


def rescale(rows: Sequence[Row], base: Model) -> Model:
    """``base``'s calibrator rescaled per setting on ``rows`` (the rule's candidate since 2026-12-06): for each
    setting, whether the best candidate was right regressed on ``base``'s log-odds (an intercept and a slope,
    `benchmarks.train.platt_fit`), composed into that setting's Platt coefficients (``platt`` alone,
    ``platt_references`` with references); each setting's ``confident`` threshold the lowest confidence at
    which the rescaled confidences of that setting's rows are right at least 90 % of the time over at least 20
    (`benchmarks.train.threshold`; never ``confident`` when none is).  Within a setting the order of ``base``'s
    confidences is kept: two parameters per setting only move and stretch them."""
    assert base.platt is not None
    out: dict[bool, tuple[float, ...]] = {}
    for refs in (False, True):
        part = [r for r in rows if r.references == refs]
        a, b = platt_fit([[_logit(confidence(base, r))] for r in part], [int(r.ok) for r in part], "p")[:2]
        coef = base.platt_references if refs and base.platt_references is not None else base.platt
        out[refs] = _composed(coef, refs, a, b)
    m = Model((), 0.0, 1.0, (), platt=out[False], platt_references=out[True], likely=LIKELY)
    th = {s: threshold([confidence(m, r) for r in rows if r.references == s], [r.ok for r in rows if r.references == s])
          for s in (False, True)}
    return replace(m, confident=th[False], confident_references=th[True])


Fit = Callable[[Sequence[Row]], Model]


def leave_one_suite_out(rows: Sequence[Row], fitter: Fit = fit) -> list[Model]:
    """Each row's calibrator, fitted by ``fitter`` on the other suites' rows only."""
    out: list[Model | None] = [None] * len(rows)
    for s in sorted({r.suite for r in rows}):
        m = fitter([r for r in rows if r.suite != s])
        for i, r in enumerate(rows):
            if r.suite == s:
                out[i] = m
    return [m for m in out if m is not None]


def measure(rows: Sequence[Row], models: Sequence[Model]) -> dict[str, Any]:
    """ECE and ``confident`` precision and coverage of each row scored by its model (pooled, by setting, by
    suite pair, by suite)."""
    conf = [confidence(m, r) for m, r in zip(models, rows, strict=True)]
    sure = [m.verdict(c, r.references) == "confident" for m, c, r in zip(models, conf, rows, strict=True)]

    def part(idx: Sequence[int]) -> dict[str, Any]:
        sel = [i for i in idx if sure[i]]
        right = sum(rows[i].ok for i in sel)
        return {"n": len(idx), "top1": sum(rows[i].ok for i in idx) / len(idx) if idx else math.nan,
                "ece": ece([conf[i] for i in idx], [rows[i].ok for i in idx])[0] if idx else math.nan,
                "confident": len(sel), "right": right, "precision": right / len(sel) if sel else math.nan,
                "coverage": len(sel) / len(idx) if idx else math.nan}

    everything = range(len(rows))
    suites = list(dict.fromkeys(r.suite for r in rows))
    pairs = [suites[i:i + 2] for i in range(0, len(suites), 2)]
    return {
        "pooled": part(everything),
        "by_setting": {name: part([i for i in everything if rows[i].references == refs])
                       for name, refs in (("alone", False), ("references", True))},
        "by_pair": {"/".join(p): part([i for i in everything if rows[i].suite in p]) for p in pairs},
        "by_suite": {s: part([i for i in everything if rows[i].suite == s]) for s in suites},
    }


def decide(shipped: dict[str, Any], nested: dict[str, Any]) -> tuple[bool, list[str]]:
    """The rule (module docstring): whether the refit ships, and each condition as met or missed."""
    prec, err, before = nested["pooled"]["precision"], nested["pooled"]["ece"], shipped["pooled"]["precision"]
    checks = [
        (prec >= SHIP_PRECISION, f"nested precision at `confident` {prec:.2%} >= {SHIP_PRECISION:.2%}"),
        (err <= SHIP_ECE, f"nested ECE {err:.3f} <= {SHIP_ECE}"),
        (prec > before, f"nested precision {prec:.2%} > the shipped calibrator's {before:.2%}"),
    ]
    return all(ok for ok, _ in checks), [f"{'met' if ok else 'MISSED'}: {text}" for ok, text in checks]


def shipped_calibrator(model: Model) -> Model:
    """The calibrator measured as shipped: the model's own, or the one a recalibration replaced."""
    before = ((model.meta or {}).get("recalibrated") or {}).get("before")
    if not before:
        return model
    refs = before.get("platt_references")
    return replace(model, platt=tuple(before["platt"]), confident=float(before["confident"]),
                   confident_references=before.get("confident_references"),
                   platt_references=None if not refs else tuple(refs))


def _thresholds(m: Model) -> dict[str, float | None]:
    return {"confident": round(m.confident, 6),
            "confident_references": None if m.confident_references is None else round(m.confident_references, 6)}


def _coefficients(m: Model) -> dict[str, Any]:
    return {"platt": list(m.platt or ()), "platt_references": None if m.platt_references is None else list(m.platt_references),
            **_thresholds(m)}


def evaluate(rows: Sequence[Row], model: Model, older: Sequence[Row] = ()) -> dict[str, Any]:
    """The shipped calibrator, the candidate (`rescale`) nested, the round-48 refit and its one-threshold
    variant beside (read, not eligible), the final fit, the decision, and (``older``) both calibrators on
    suites the trees were trained on."""
    base = shipped_calibrator(model)
    shipped = measure(rows, [base] * len(rows))
    nested = measure(rows, leave_one_suite_out(rows, lambda rs: rescale(rs, base)))
    refit = measure(rows, leave_one_suite_out(rows))
    one = measure(rows, leave_one_suite_out(rows, lambda rs: fit(rs, split=False)))
    ship, checks = decide(shipped, nested)
    final = rescale(rows, base)
    res: dict[str, Any] = {
        "suites": list(dict.fromkeys(r.suite for r in rows)), "rows": len(rows), "method": "rescale",
        "shipped": {**_coefficients(base), **shipped}, "nested": nested, "refit_nested": refit,
        "one_threshold_nested": one, "ship": ship, "checks": checks,
        "final": {**_coefficients(final), "in_sample": measure(rows, [final] * len(rows))},
    }
    if older:
        res["older"] = {"suites": list(dict.fromkeys(r.suite for r in older)), "shipped": measure(older, [base] * len(older)),
                        "final": measure(older, [final] * len(older))}
    return res


def recalibrated(model: Model, res: dict[str, Any]) -> Model:
    """``model`` with the final calibrator and thresholds of ``res`` (trees and features untouched)."""
    f = res["final"]
    meta = dict(model.meta or {})
    meta["recalibrated"] = {
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(), "command": COMMAND, "suites": res["suites"],
        "rows": res["rows"], "method": res.get("method", "refit"), "before": _coefficients(model),
    }
    refs = f.get("platt_references")
    return replace(model, platt=tuple(f["platt"]), platt_references=None if refs is None else tuple(refs),
                   confident=f["confident"], confident_references=f["confident_references"], meta=meta)


def _part_lines(v: dict[str, Any], by_pair: bool = True) -> list[str]:
    out = [f"  {'':<18} {'n':>5} {'top-1':>7} {'ECE':>6} {'confident':>10} {'right':>6} {'precision':>10} {'coverage':>9}"]
    parts = (("pooled", v["pooled"]), *v["by_setting"].items(), *(v["by_pair"].items() if by_pair else ()))
    for key, part in parts:
        out.append(f"  {key:<18} {part['n']:>5} {pct(part['top1']):>7} {part['ece']:>6.3f} {part['confident']:>10}"
                   f" {part['right']:>6} {pct(part['precision']):>10} {pct(part['coverage']):>9}")
    return out


def report(res: dict[str, Any]) -> list[str]:
    """The numbers as text lines."""
    out = [f"{res['rows']} rows, {len(res['suites'])} suites the model never trained on: {', '.join(res['suites'])}"]
    for name, label in (("shipped", "shipped calibrator"), ("nested", "the candidate, rescaled per setting, nested (leave one suite out)"),
                        ("refit_nested", "round 48's refit (Platt on pnmh, a threshold per setting), nested (read, not eligible)"),
                        ("one_threshold_nested", "round 48's refit with one threshold, nested (read, not eligible)")):
        v = res[name]
        out.append(f"\n{label}" + (f": thresholds {v['confident']} / {v['confident_references']}" if name == "shipped" else ""))
        out += _part_lines(v)
    f = res["final"]
    out += [f"\nfinal fit on every row: platt alone {[round(c, 4) for c in f['platt']]}, with references"
            f" {[round(c, 4) for c in f['platt_references']]}, confident {f['confident']} alone, {f['confident_references']}"
            f" with references (in-sample precision {pct(f['in_sample']['pooled']['precision'])}"
            f" at {pct(f['in_sample']['pooled']['coverage'])})"]
    if "older" in res:
        for name in ("shipped", "final"):
            out.append(f"\n{len(res['older']['suites'])} suites the trees were trained on, {name} calibrator (in sample)")
            out += _part_lines(res["older"][name], by_pair=False)
    return [*out, *res["checks"], f"decision: {'SHIP' if res['ship'] else 'keep the shipped calibrator'}"]


def _rows(path: Path, suites: Sequence[str], workdir: Path | None, model: Model) -> list[Row]:
    """The rows cached in ``path``, else computed from the recordings in ``workdir`` and cached."""
    if path.exists():
        return load_rows(path)
    if workdir is None:
        raise SystemExit(f"{path} is missing: --workdir DIR computes it")
    rows = collect(suites, workdir, model)
    save_rows(rows, path)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=Path, default=ROWS, help="the rows' cache: read when present, else computed and written")
    ap.add_argument("--workdir", type=Path, help="where the suites' recordings are (a missing suite is generated there)")
    ap.add_argument("--model", type=Path, default=DEFAULT_PATH)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--older", type=Path, help="also measure both calibrators (in sample) on the framework suites the trees"
                    " were trained on, their rows cached in this file")
    ap.add_argument("--ship", action="store_true", help="write the recalibrated model when the rule holds")
    args = ap.parse_args(argv)
    model = load_model(args.model)
    assert model is not None
    rows = _rows(args.rows, unseen_suites(model), args.workdir, model)
    older = _rows(args.older, trained_suites(model), args.workdir, model) if args.older else []
    res = evaluate(rows, model, older)
    args.results.write_text(json.dumps(res, indent=1) + "\n")
    print("\n".join(report(res)))
    if args.ship and res["ship"] and not (model.meta or {}).get("recalibrated"):
        new = recalibrated(model, res)
        args.model.write_text(json.dumps(new.to_dict(), separators=(",", ":")) + "\n")
        assert model_from_dict(json.loads(args.model.read_text())).trees == model.trees
        print(f"wrote {args.model}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
