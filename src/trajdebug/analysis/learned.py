"""The learned ranker: a gradient-boosted model over step features, evaluated in plain Python.

The model is a JSON file (``model.json`` beside this module is the shipped
one; ``python -m benchmarks.train`` rebuilds it, docs/model-card.md describes
it): regression trees (LambdaMART, Burges 2010, or a pointwise gradient-boosted
classifier, Friedman 2001) whose summed output scores how likely a ranked step is
the root cause.  Within one run the log-odds are normalized by a softmax (one root per
failure), then mapped through an isotonic calibration fitted on held-out
cross-validation folds (isotonic, Zadrozny & Elkan 2002, or Platt scaling on the
probability, the number of ranked steps and the margin over the runner-up, Platt 1999: whichever
erred less out of fold), so a candidate's ``confidence`` reads as the probability that it is the root.

The verdict of an analysis comes from its best candidate's confidence:
``confident`` at or above the model's ``confident`` threshold (chosen, like the
calibration, on the blind suites each scored by a model that never saw it, for
precision >= 90 % over at least 20 cases; above 1, so never, when no threshold is), ``likely`` at or above ``likely``, else ``unsure``.
A run analysed with references (passing runs of its agent) may have its own ``confident`` threshold
(``confident_references``): with references the best candidate is right far more often than alone at the
same confidence, so one threshold was too sure of a run alone (docs/model-card.md, "Calibration"); and its own
Platt coefficients (``platt_references``), both refitted on suites the trees never saw (`benchmarks.recalibrate`).  No runtime dependency: scoring is a tree walk.
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from trajdebug.analysis._localize import Candidate
from trajdebug.analysis.features import Key, features
from trajdebug.core.graph import DependencyGraph


if TYPE_CHECKING:
    from trajdebug.analysis._pipeline import Analysis


Verdict = Literal["confident", "likely", "unsure"]
"""How sure the ranker is of its best candidate."""

AnalysisVerdict = Literal["confident", "likely", "unsure", "proved"]
"""An analysis's verdict (`trajdebug.analysis.Analysis.verdict`): the ranker's `Verdict`, or ``proved`` when a
person's answers prove the root (`trajdebug.analysis.person_proof`; the ranker's own is then
``ranker_verdict``)."""

DEFAULT_PATH = Path(__file__).resolve().parent / "model.json"
"""The shipped model."""

Node = tuple[int, float, int, int, float]
"""One tree node: ``(feature index or -1 for a leaf, threshold, left child, right child, leaf value)``."""


@dataclass(frozen=True, slots=True)
class Model:
    """A gradient-boosted tree ensemble with its calibration and verdict thresholds."""

    feature_names: tuple[str, ...]
    """The features the trees index (others are ignored; a missing one reads 0)."""
    init: float
    """The ensemble's starting log-odds."""
    rate: float
    """The learning rate each tree's output is scaled by."""
    trees: tuple[tuple[Node, ...], ...]
    """The trees, root node first."""
    calibration: tuple[tuple[float, ...], tuple[float, ...]] = ((0.0, 1.0), (0.0, 1.0))
    """Isotonic calibration as increasing ``(x, y)`` knots, linearly interpolated."""
    confident: float = 0.9
    """Best-candidate confidence at or above which the verdict is ``confident``."""
    likely: float = 0.5
    """Best-candidate confidence at or above which the verdict is ``likely``."""
    meta: Mapping[str, Any] | None = None
    """What the model was trained on (free data, kept from the file)."""
    platt: tuple[float, ...] | None = None
    """Platt scaling ``(a, b, c[, d[, e[, f]]])``: ``sigmoid(a + b logit(p) + c log(1 + n) + d margin + e hand
    + f references)`` for a run of ``n`` ranked steps, ``margin`` the log-ratio of the step's probability to the
    best other step's, ``hand`` the hand ranker's score of the step, ``references`` 1 when the run was analysed
    with references (0 alone); used instead of the isotonic knots when set.  The margin
    term (since 2026-12-02) is what separates a clear winner from a near tie: the softmax alone reads 0.5
    for both 0.5/0.1/... and 0.5/0.45/...  The hand score (since 2026-12-03) is how much evidence stands
    behind the step whatever the trees make of it: on a suite the trees never saw, a best candidate with
    little evidence is often wrong however far ahead it is."""
    confident_references: float | None = None
    """The ``confident`` threshold of a run analysed with references (None: `confident`, as for a run alone)."""
    platt_references: tuple[float, ...] | None = None
    """The Platt coefficients of a run analysed with references (None: `platt` for both settings).  Since
    2026-12-06 (issue 23) each setting has its own: refitted on suites the trees never saw, a run alone and a
    run with references at the same `platt` score were right at different rates (docs/model-card.md,
    "Recalibration on suites the model never saw")."""

    def raw(self, f: Mapping[str, float]) -> float:
        """The ensemble's log-odds for one feature mapping."""
        return self._walk([float(f.get(name, 0.0)) for name in self.feature_names])

    def raw_all(self, rows: Sequence[Mapping[str, float]]) -> list[float]:
        """`raw` of each feature mapping, each distinct path through the trees walked once.

        A tree compares a feature with its thresholds only, so two rows whose every feature lies between the
        same two thresholds of that feature (`Splits`) take the same path through every tree and score the
        same, bit for bit.  A long run's steps fall in a few hundred such cells (10,000 steps of one agent
        shape: 700 to 2,300), and walking the hundred trees was a third of the learned ranking's cost.
        A row holding NaN (which no threshold orders) is walked on its own, as is every row of a model with a
        NaN threshold.
        """
        cut = splits(self)
        if cut is None:
            return [self.raw(f) for f in rows]
        seen: dict[tuple[int, ...], float] = {}
        out: list[float] = []
        names = self.feature_names
        for f in rows:
            get = f.get
            x = [float(get(name, 0.0)) for name in names]
            if any(map(math.isnan, x)):
                out.append(self._walk(x))
                continue
            cell = cut.cell(x)
            hit = seen.get(cell)
            if hit is None:
                hit = seen[cell] = self._walk(x)
            out.append(hit)
        return out

    def _walk(self, x: Sequence[float]) -> float:
        total = self.init
        for tree in self.trees:
            i = 0
            while True:
                feat, thr, left, right, value = tree[i]
                if feat < 0:
                    total += self.rate * value
                    break
                i = left if x[feat] <= thr else right
        return total

    def calibrate(self, p: float, n: int = 1, margin: float = 0.0, hand: float = 0.0, references: bool = False) -> float:
        """The calibrated probability of a normalized score ``p`` among ``n`` ranked steps, ``margin``
        (log-odds) ahead of the best other step (negative when behind it), of hand-ranker score ``hand``,
        in a run analysed with ``references`` or alone."""
        coef = self.platt_references if references and self.platt_references is not None else self.platt
        if coef is not None:
            a, b, c, *rest = coef
            q = min(max(p, 1e-9), 1 - 1e-9)
            extra = sum(w * x for w, x in zip(rest, (margin, hand, float(references)), strict=False))
            z = a + b * math.log(q / (1 - q)) + c * math.log1p(n) + extra
            return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))
        xs, ys = self.calibration
        if p <= xs[0]:
            return ys[0]
        if p >= xs[-1]:
            return ys[-1]
        j = bisect.bisect_right(xs, p)
        x0, x1, y0, y1 = xs[j - 1], xs[j], ys[j - 1], ys[j]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (p - x0) / (x1 - x0)

    def verdict(self, confidence: float | None, references: bool = False) -> Verdict:
        """The verdict for a best candidate of this confidence, in a run analysed with ``references`` or alone."""
        likely, sure = self.thresholds(references)
        if confidence is None or confidence < likely:
            return "unsure"
        return "confident" if confidence >= sure else "likely"

    def thresholds(self, references: bool = False) -> tuple[float, float]:
        """The confidences at which the verdict turns ``likely`` and ``confident``, in a run analysed with
        ``references`` or alone (the two settings' ``confident`` may differ; above 1: never)."""
        sure = self.confident_references if references and self.confident_references is not None else self.confident
        return self.likely, sure

    def to_dict(self) -> dict[str, Any]:
        """The model as JSON data (the file format `load_model` reads)."""
        return {
            "format": "trajdebug-gbm/1",
            "features": list(self.feature_names),
            "init": self.init,
            "rate": self.rate,
            "trees": [[list(n) for n in t] for t in self.trees],
            "calibration": {"x": list(self.calibration[0]), "y": list(self.calibration[1])},
            "platt": None if self.platt is None else list(self.platt),
            **({} if self.platt_references is None else {"platt_references": list(self.platt_references)}),
            "thresholds": {"confident": self.confident, "likely": self.likely,
                           **({} if self.confident_references is None else {"confident_references": self.confident_references})},
            "meta": dict(self.meta or {}),
        }


def model_from_dict(data: Mapping[str, Any]) -> Model:
    """A model from its JSON data."""
    cal = data.get("calibration") or {"x": [0.0, 1.0], "y": [0.0, 1.0]}
    th = data.get("thresholds") or {}
    return Model(
        tuple(str(n) for n in data["features"]),
        float(data["init"]),
        float(data["rate"]),
        tuple(tuple((int(n[0]), float(n[1]), int(n[2]), int(n[3]), float(n[4])) for n in t) for t in data["trees"]),
        (tuple(float(v) for v in cal["x"]), tuple(float(v) for v in cal["y"])),
        float(th.get("confident", 0.9)),
        float(th.get("likely", 0.5)),
        data.get("meta"),
        None if not data.get("platt") else tuple(float(v) for v in data["platt"]),
        None if th.get("confident_references") is None else float(th["confident_references"]),
        None if not data.get("platt_references") else tuple(float(v) for v in data["platt_references"]),
    )


@dataclass(frozen=True, slots=True)
class Splits:
    """A model's thresholds, per feature sorted: where a row's value of each feature lies among them."""

    used: tuple[int, ...]
    """The features some tree compares (the others never change a path)."""
    cuts: tuple[tuple[float, ...], ...]
    """Each used feature's thresholds, ascending."""

    def cell(self, x: Sequence[float]) -> tuple[int, ...]:
        """The row's cell: per used feature, how many of its thresholds lie below the value (``x <= t`` of a
        threshold ``t`` holds exactly when this count is at most ``t``'s index)."""
        return tuple(map(bisect.bisect_left, self.cuts, [x[i] for i in self.used]))  # (cuts and used pair up)


_SPLITS: dict[int, tuple[Model, Splits | None]] = {}


def splits(model: Model) -> Splits | None:
    """The model's `Splits` (kept per model object: a model is read-only); None when a threshold is NaN."""
    hit = _SPLITS.get(id(model))
    if hit is not None and hit[0] is model:
        return hit[1]
    by_feature: dict[int, set[float]] = {}
    for tree in model.trees:
        for feat, thr, _, _, _ in tree:
            if feat >= 0:
                by_feature.setdefault(feat, set()).add(thr)
    used = tuple(sorted(by_feature))
    nan = any(t != t for ts in by_feature.values() for t in ts)
    found = None if nan else Splits(used, tuple(tuple(sorted(by_feature[i])) for i in used))
    if len(_SPLITS) >= 16:  # (models made one after another in training: keep the few in use)
        _SPLITS.clear()
    _SPLITS[id(model)] = (model, found)
    return found


_CACHE: dict[str, Model] = {}


def load_model(spec: Model | str | Path | None = "default") -> Model | None:
    """The model named by ``spec``: a `Model`, ``"default"`` (the shipped one), a path, or None."""
    if spec is None or isinstance(spec, Model):
        return spec
    path = DEFAULT_PATH if spec == "default" else Path(spec)
    key = str(path.resolve())
    if key not in _CACHE:
        _CACHE[key] = model_from_dict(json.loads(path.read_text(encoding="utf-8")))
    return _CACHE[key]


def softmax(raw: Sequence[float]) -> list[float]:
    """Normalized probabilities of log-odds within one run (one root per failure)."""
    if not raw:
        return []
    top = max(raw)
    exps = [math.exp(r - top) for r in raw]
    total = sum(exps)
    return [e / total for e in exps]


MARGIN_CAP = 20.0
"""Margins beyond this many log-odds (and a lone ranked step's) read as this: past it nothing changes."""


def margins(probs: Sequence[float]) -> list[float]:
    """Each step's log-ratio of its probability to the best other step's, within +-`MARGIN_CAP`."""
    if len(probs) < 2:
        return [MARGIN_CAP] * len(probs)
    order = sorted(range(len(probs)), key=lambda i: -probs[i])
    first, second = probs[order[0]], probs[order[1]]
    out = []
    for i, p in enumerate(probs):
        other = second if i == order[0] else first
        m = math.log(max(p, 1e-300) / max(other, 1e-300))
        out.append(max(-MARGIN_CAP, min(MARGIN_CAP, m)))
    return out


def _scored(
    analysis: Analysis, model: Model, graph: DependencyGraph | None = None
) -> tuple[dict[Key, float], dict[Key, float]]:
    """Each ranked step's softmax probability (the order) and calibrated probability (the confidence)."""
    feats = features(analysis, graph)
    keys = list(feats)
    probs = softmax(model.raw_all([feats[k] for k in keys]))
    ms = margins(probs)
    refs = bool(analysis.references)
    conf = {
        k: model.calibrate(p, len(keys), m, feats[k].get("hand_score", 0.0), refs)
        for k, p, m in zip(keys, probs, ms, strict=True)
    }
    return dict(zip(keys, probs, strict=True)), conf


def scores(analysis: Analysis, model: Model) -> dict[Key, float]:
    """Each ranked step's calibrated probability of being the root cause."""
    return _scored(analysis, model)[1]


SAME_INPUT = "reference:same-input"
"""The reference signal that compares the step with a passing run given the same input (the others compare it
with passing runs of other inputs)."""


ELSEWHERE_NOTE = (
    "its evidence is only how passing runs of other inputs went (no finding about this run alone, no passing run "
    "of the same input): the verdict is at most likely"
)
"""The reason a best candidate demoted by `elsewhere_only` carries."""


def evidence_signals(c: Candidate) -> set[str]:
    """The evidence signals that found something wrong with a candidate (its ``evidence:<signal>`` features above
    0; a sound finding is no such signal; `Candidate.signals` also names the marks of value lineage)."""
    return {k.split(":", 1)[1] for k, v in c.features.items() if k.startswith("evidence:") and v > 0}


def elsewhere_only(cands: Sequence[Candidate]) -> bool:
    """True when the best candidate's evidence is only comparisons with passing runs of other inputs (``reference:``
    signals, never ``reference:same-input``; no finding about this run alone) and either that is one signal or
    the runner-up stands faulty on its own evidence.

    Passing runs of other inputs say that a step's output is unlike theirs: so is the output of every step that
    read or relayed a wrong value made upstream, and of a step given an input unlike theirs.  One such
    comparison, or such comparisons beside a runner-up faulty in its own right, do not single the step out: the
    verdict is at most ``likely`` (2026-12-07, round 58: of the ``confident`` verdicts with references on the 92
    development suites, 70 had such a best candidate, 14 of them wrong, 20 % against 6 % of the others;
    docs/analysis.md, "The learned ranker")."""
    if not cands:
        return False
    found = evidence_signals(cands[0])
    if not found or SAME_INPUT in found or not all(s.startswith("reference:") for s in found):
        return False
    return len(found) == 1 or (len(cands) > 1 and cands[1].features.get("faulty", 0.0) > 0)


def _key(c: Candidate) -> Key:
    return (c.run_id, c.step_id)


def _with_share(c: Candidate, confidence: float | None, share: float) -> Candidate:
    """`dataclasses.replace` of a candidate's confidence and share, field by field: every ranked step is one, and
    `replace`'s generic walk over the fields was a twentieth of the learned ranking."""
    return Candidate(
        c.step_id, c.score, c.reasons, c.path, c.inferred, c.root, c.correction, c.run_id, c.signals, c.features,
        confidence, share,
    )


def rerank(
    analysis: Analysis,
    model: Model | str | Path | None = "default",
    top: int | None = None,
    graph: DependencyGraph | None = None,
) -> Analysis:
    """The analysis re-ordered by the model: candidates by its probability, the ranking likewise, a verdict.

    The order is the trees' (the softmax probability, as trained and cross-validated), not the calibrated
    confidence's: a calibrator reading the hand score is fitted to say how sure to be of the best candidate,
    not to re-rank the others.  Ties (and steps the model scores equally) keep the hand ranker's order.  With
    nothing ranked (nothing failed) there is no verdict.
    ``top`` keeps that many candidates (None: as many as the analysis had); ``graph``: the analyzed run's
    dependency graph, when the caller holds it (`trajdebug.analysis.features.features`).
    """
    m = load_model(model)
    if m is None:
        return analysis
    loc = analysis.localization
    prob, conf = _scored(analysis, m, graph)
    order = {k: i for i, k in enumerate(conf)}
    pool = loc.ranked_all or loc.candidates
    cands = sorted(pool, key=lambda c: (-prob.get(_key(c), 0.0), order.get(_key(c), 0)))
    cands = [_with_share(c, conf.get(_key(c)), prob.get(_key(c), 0.0)) for c in cands]
    ranking = tuple(dict.fromkeys(sid for _, sid in sorted(prob, key=lambda k: (-prob[k], order[k]))))
    placed = set(ranking)
    rest = tuple(s for s in loc.ranking if s not in placed)
    keep = len(loc.candidates) if top is None else top
    best = cands[0].confidence if cands else None
    verdict = m.verdict(best, bool(analysis.references)) if cands else None
    if verdict == "confident" and elsewhere_only(cands):
        verdict = "likely"
        cands[0] = replace(cands[0], reasons=(*cands[0].reasons, ELSEWHERE_NOTE))
    note = loc.yardstick.get(cands[0].step_id) if cands else None
    if note is not None:  # its lead is a structural bet, not evidence (`Localization.yardstick`)
        verdict = "unsure"
        cands[0] = replace(cands[0], reasons=(*cands[0].reasons, note))
    return replace(
        analysis,
        localization=replace(
            loc, candidates=cands[:keep], ranking=ranking + rest, ranked_all=tuple(cands), method="trajdebug+learned"
        ),
        verdict=verdict,
        verdict_thresholds=m.thresholds(bool(analysis.references)) if cands else None,
    )


__all__ = ["AnalysisVerdict", "DEFAULT_PATH", "ELSEWHERE_NOTE", "MARGIN_CAP", "Model", "SAME_INPUT", "Splits", "Verdict", "elsewhere_only", "evidence_signals", "load_model", "margins", "model_from_dict", "rerank", "scores", "softmax", "splits"]
