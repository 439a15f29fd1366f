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
3. The refit, evaluated nested, and the rule.

The rule, written before the refit was first run (2026-12-05, round 48):

- The one candidate: a Platt calibrator on the shipped terms (``pnmh``: the logit of the best candidate's
  probability, log(1 + ranked steps), the margin, the hand score; `benchmarks.train.platt_fit`), and a
  ``confident`` threshold per setting (``confident`` alone, ``confident_references`` with references), each
  the lowest confidence at which that setting's rows, scored by the calibrator just fitted on them, are right
  at least 90 % of the time over at least 20 rows (`benchmarks.train.threshold`; never ``confident`` when
  none is); ``likely`` stays 0.5.  Nothing else is eligible: the one-threshold variant printed beside it is
  there to be read, not chosen.
- Nested: for each suite, the calibrator and both thresholds fitted on the other suites' rows score the
  suite's own rows; every row is scored once, by a fit that never saw its suite, and the rows are pooled.
- Ship (the calibrator and thresholds refitted on every such suite, into ``model.json``; its trees, and so
  every ranking, unchanged) iff, pooled and nested: precision at ``confident`` >= 89.5 %; ECE <= 0.05; and
  that precision above the shipped calibrator's precision at ``confident`` on the same rows.  Otherwise the
  shipped calibrator stays and the numbers are reported.

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
from benchmarks.train import LIKELY, ece, platt_fit, threshold
from trajdebug.analysis.learned import DEFAULT_PATH, Model, load_model, margins, model_from_dict


ROOT = Path(__file__).resolve().parent.parent
ROWS = ROOT / "benchmarks" / "recalibrate_rows.json"
"""The cached rows (`Row`), one per suite, case and setting."""
RESULTS = ROOT / "benchmarks" / "recalibrate_results.json"
"""The measured numbers and the decision."""
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
        (prec >= SHIP_PRECISION, f"nested precision at `confident` {prec:.1%} >= {SHIP_PRECISION:.1%}"),
        (err <= SHIP_ECE, f"nested ECE {err:.3f} <= {SHIP_ECE}"),
        (prec > before, f"nested precision {prec:.1%} > the shipped calibrator's {before:.1%}"),
    ]
    return all(ok for ok, _ in checks), [f"{'met' if ok else 'MISSED'}: {text}" for ok, text in checks]


def shipped_calibrator(model: Model) -> Model:
    """The calibrator measured as shipped: the model's own, or the one a recalibration replaced."""
    before = ((model.meta or {}).get("recalibrated") or {}).get("before")
    if not before:
        return model
    return replace(model, platt=tuple(before["platt"]), confident=float(before["confident"]),
                   confident_references=before.get("confident_references"))


def _thresholds(m: Model) -> dict[str, float | None]:
    return {"confident": round(m.confident, 6),
            "confident_references": None if m.confident_references is None else round(m.confident_references, 6)}


def evaluate(rows: Sequence[Row], model: Model) -> dict[str, Any]:
    """The shipped calibrator, the nested refit, the one-threshold variant beside, the final fit and the decision."""
    base = shipped_calibrator(model)
    shipped = measure(rows, [base] * len(rows))
    nested = measure(rows, leave_one_suite_out(rows))
    one = measure(rows, leave_one_suite_out(rows, lambda rs: fit(rs, split=False)))
    ship, checks = decide(shipped, nested)
    final = fit(rows)
    return {
        "suites": list(dict.fromkeys(r.suite for r in rows)), "rows": len(rows), "terms": TERMS,
        "shipped": {"platt": list(base.platt or ()), **_thresholds(base), **shipped},
        "nested": nested, "one_threshold_nested": one, "ship": ship, "checks": checks,
        "final": {"platt": list(final.platt or ()), **_thresholds(final), "in_sample": measure(rows, [final] * len(rows))},
    }


def recalibrated(model: Model, res: dict[str, Any]) -> Model:
    """``model`` with the final calibrator and thresholds of ``res`` (trees and features untouched)."""
    f = res["final"]
    meta = dict(model.meta or {})
    meta["recalibrated"] = {
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(), "command": COMMAND, "suites": res["suites"], "rows": res["rows"],
        "terms": res["terms"], "before": {"platt": list(model.platt or ()), **_thresholds(model)},
    }
    return replace(model, platt=tuple(f["platt"]), confident=f["confident"],
                   confident_references=f["confident_references"], meta=meta)


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f} %"


def report(res: dict[str, Any]) -> list[str]:
    """The numbers as text lines."""
    out = [f"{res['rows']} rows, {len(res['suites'])} suites the model never trained on: {', '.join(res['suites'])}"]
    for name, label in (("shipped", "shipped calibrator"), ("nested", "refit, nested (leave one suite out)"),
                        ("one_threshold_nested", "refit with one threshold, nested (read, not eligible)")):
        v = res[name]
        out.append(f"\n{label}" + (f": thresholds {v['confident']} / {v['confident_references']}" if name == "shipped" else ""))
        out.append(f"  {'':<18} {'n':>5} {'top-1':>7} {'ECE':>6} {'confident':>10} {'right':>6} {'precision':>10} {'coverage':>9}")
        for key, part in (("pooled", v["pooled"]), *v["by_setting"].items(), *v["by_pair"].items()):
            out.append(f"  {key:<18} {part['n']:>5} {_pct(part['top1']):>7} {part['ece']:>6.3f} {part['confident']:>10}"
                       f" {part['right']:>6} {_pct(part['precision']):>10} {_pct(part['coverage']):>9}")
    f = res["final"]
    out += [f"\nfinal fit on every row: platt {[round(c, 4) for c in f['platt']]}, confident {f['confident']}"
            f" alone, {f['confident_references']} with references (in-sample precision"
            f" {_pct(f['in_sample']['pooled']['precision'])} at {_pct(f['in_sample']['pooled']['coverage'])})",
            *res["checks"], f"decision: {'SHIP' if res['ship'] else 'keep the shipped calibrator'}"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=Path, default=ROWS, help="the rows' cache: read when present, else computed and written")
    ap.add_argument("--workdir", type=Path, help="where the suites' recordings are (a missing suite is generated there)")
    ap.add_argument("--model", type=Path, default=DEFAULT_PATH)
    ap.add_argument("--results", type=Path, default=RESULTS)
    ap.add_argument("--ship", action="store_true", help="write the recalibrated model when the rule holds")
    args = ap.parse_args(argv)
    model = load_model(args.model)
    assert model is not None
    if args.rows.exists():
        rows = load_rows(args.rows)
    else:
        if args.workdir is None:
            ap.error(f"{args.rows} is missing: --workdir DIR computes it")
        rows = collect(unseen_suites(model), args.workdir, model)
        save_rows(rows, args.rows)
    res = evaluate(rows, model)
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
