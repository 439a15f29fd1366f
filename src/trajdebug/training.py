"""Fitting the learned ranker's trees (needs the ``train`` extra: scikit-learn).

`fit` turns labelled cases (each: the features of a run's ranked steps and
which of them are the root) into a `trajdebug.analysis.learned.Model`: by
default LambdaMART (Burges 2010, LightGBM's ``lambdarank``) started from the
hand ranking's order, else (``POINTWISE_PARAMS``) a pointwise gradient-boosted
classifier (Friedman 2001); either way the trees are exported to the
plain-Python format, so scoring needs nothing beyond the standard library.  Each case weighs 1 in all, split evenly between its root steps and
the others, so long runs do not dominate.

With a ``prior`` model, boosting continues from the prior's log-odds (a warm
start): the new trees fit what the prior gets wrong on the new cases, and the
result is the prior's trees plus the new ones, with the prior's calibration.
That is how ``trajdebug fit`` learns from a user's own labelled runs without
forgetting the shipped model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from trajdebug.analysis.learned import Model, Node


LabelledCase = tuple[Sequence[Mapping[str, float]], Sequence[int]]
"""One case: each ranked step's features, and 1 for the root step(s), else 0."""

POINTWISE_PARAMS: dict[str, Any] = {
    "n_estimators": 60,
    "learning_rate": 0.15,
    "max_depth": 3,
    "min_samples_leaf": 20,
    "subsample": 0.5,
}
"""The first shipped model's pointwise boosting hyper-parameters (scikit-learn), sized for a minute's CPU per fit."""

LAMBDARANK_PARAMS: dict[str, Any] = {
    "objective": "lambdarank",
    "n_estimators": 100,
    "learning_rate": 0.05,
    "num_leaves": 8,
    "min_child_samples": 20,
    "subsample": 0.8,
    "subsample_freq": 1,
    "colsample_bytree": 0.8,
    "lambdarank_truncation_level": 10,
    "offset": 4.0,
}
"""LambdaMART (Burges 2010) with LightGBM: trees fitted to the run's ranking rather than to each step alone.
``offset`` > 0 starts boosting from ``offset / hand rank`` (the hand ranker as the prior, shipped as one more tree)."""

PARAMS: dict[str, Any] = LAMBDARANK_PARAMS
"""Default hyper-parameters of `fit`: LambdaMART from the hand-rank prior beat the pointwise model left out by
suite and by route (docs/model-card.md); chosen on group-aware cross-validation only, never a held-out suite."""

WARM_PARAMS: dict[str, Any] = {
    "n_estimators": 20,
    "learning_rate": 0.1,
    "max_depth": 2,
    "min_samples_leaf": 3,
}
"""Boosting on top of a prior: few shallow trees (a user labels tens of runs, not thousands)."""


def vocabulary(cases: Sequence[LabelledCase]) -> list[str]:
    """Every feature name seen, sorted."""
    return sorted({name for rows, _ in cases for row in rows for name in row})


def matrix(cases: Sequence[LabelledCase], names: Sequence[str]) -> tuple[list[list[float]], list[int], list[float]]:
    """Rows, labels and weights (each case weighs 1)."""
    xs: list[list[float]] = []
    ys: list[int] = []
    ws: list[float] = []
    for rows, labels in cases:
        pos = max(sum(labels), 1)
        neg = max(len(labels) - sum(labels), 1)
        for row, y in zip(rows, labels, strict=True):
            xs.append([float(row.get(n, 0.0)) for n in names])
            ys.append(int(y))
            ws.append(0.5 / pos if y else 0.5 / neg)
    return xs, ys, ws


def _trees(gbm: Any, names: Sequence[str], scale: float = 1.0) -> list[tuple[tuple[str | None, float, int, int, float], ...]]:
    """The fitted trees with feature names in place of indices (leaf values times ``scale``)."""
    out = []
    for est in gbm.estimators_[:, 0]:
        t = est.tree_
        nodes = []
        for i in range(t.node_count):
            leaf = bool(t.children_left[i] < 0)
            nodes.append(
                (
                    None if leaf else names[int(t.feature[i])],
                    0.0 if leaf else round(float(t.threshold[i]), 6),
                    int(t.children_left[i]),
                    int(t.children_right[i]),
                    round(float(t.value[i][0][0]) * scale, 6) if leaf else 0.0,
                )
            )
        out.append(tuple(nodes))
    return out


def _named(model: Model) -> list[tuple[tuple[str | None, float, int, int, float], ...]]:
    return [
        tuple((None if f < 0 else model.feature_names[f], th, lo, hi, v) for f, th, lo, hi, v in tree)
        for tree in model.trees
    ]


def assemble(init: float, rate: float, named: Sequence[Sequence[tuple[str | None, float, int, int, float]]]) -> Model:
    """A `Model` from trees whose nodes name their features (only the features used are kept)."""
    used = sorted({n[0] for tree in named for n in tree if n[0] is not None})
    index = {name: i for i, name in enumerate(used)}
    trees: tuple[tuple[Node, ...], ...] = tuple(
        tuple((-1 if f is None else index[f], th, lo, hi, v) for f, th, lo, hi, v in tree) for tree in named
    )
    return Model(tuple(used), init, rate, trees)


class _PriorInit:
    """A scikit-learn ``init`` estimator whose log-odds are a prior model's (the warm start)."""

    def __init__(self, prior: Model, names: Sequence[str]) -> None:
        self.prior = prior
        self.names = list(names)

    def fit(self, x: Any, y: Any, sample_weight: Any = None) -> _PriorInit:
        return self

    def predict_proba(self, x: Any) -> Any:
        import numpy as np

        raw = [self.prior.raw(dict(zip(self.names, row, strict=True))) for row in x]
        p = np.clip(1.0 / (1.0 + np.exp(-np.asarray(raw, dtype=float))), 1e-6, 1 - 1e-6)
        return np.column_stack([1 - p, p])


def fit(
    cases: Sequence[LabelledCase],
    *,
    seed: int = 0,
    params: Mapping[str, Any] | None = None,
    prior: Model | None = None,
    weights: Sequence[float] | None = None,
) -> Model:
    """A model fitted on ``cases`` (uncalibrated; with ``prior``: the prior plus new trees, its calibration kept).

    ``weights``: one per case (default 1 each), e.g. so that every source of cases counts
    equally however many cases it has.
    """
    from sklearn.ensemble import GradientBoostingClassifier

    if weights is not None and len(weights) != len(cases):
        raise ValueError(f"{len(weights)} weights for {len(cases)} cases")
    if prior is None and dict(params or PARAMS).get("objective") == "lambdarank":
        return _fit_lambdarank(cases, seed, dict(params or PARAMS), weights)
    names = sorted(set(vocabulary(cases)) | set(prior.feature_names if prior else ()))
    xs, ys, ws = matrix(cases, names)
    if weights is not None:
        per_row = [w for (rows, _), w in zip(cases, weights, strict=True) for _ in rows]
        ws = [a * b for a, b in zip(ws, per_row, strict=True)]
    if prior is None:
        gbm = GradientBoostingClassifier(random_state=seed, **dict(params or PARAMS))
        gbm.fit(xs, ys, sample_weight=ws)
        p = float(gbm.init_.class_prior_[1])
        return assemble(math.log(p / (1 - p)), float(gbm.learning_rate), _trees(gbm, names))
    if len(set(ys)) < 2:
        return prior
    gbm = GradientBoostingClassifier(random_state=seed, init=_PriorInit(prior, names), **dict(params or WARM_PARAMS))
    gbm.fit(xs, ys, sample_weight=ws)
    # One rate for all trees: the new trees' leaves are rescaled to the prior's rate.
    scale = float(gbm.learning_rate) / prior.rate
    model = assemble(prior.init, prior.rate, [*_named(prior), *_trees(gbm, names, scale)])
    return replace(
        model, calibration=prior.calibration, platt=prior.platt, confident=prior.confident, likely=prior.likely,
        confident_references=prior.confident_references, platt_references=prior.platt_references, meta=prior.meta,
    )


OFFSET_RANKS = 20
"""The hand-rank prior distinguishes ranks 1..20; lower ranks share rank 21's value."""


def _offset(a: float, rank_inv: float) -> float:
    """The hand-rank prior of a step: ``a / rank`` (ranks past `OFFSET_RANKS` count as one more)."""
    rank = round(1 / rank_inv) if rank_inv > 0 else OFFSET_RANKS + 1
    return a / min(rank, OFFSET_RANKS + 1)


def _offset_tree(a: float) -> tuple[tuple[str | None, float, int, int, float], ...]:
    """`_offset` as one regression tree on ``hand_rank_inv`` (split halfway between 1/r and 1/(r+1))."""
    nodes: list[tuple[str | None, float, int, int, float]] = []
    for r in range(1, OFFSET_RANKS + 1):
        i = len(nodes)
        # Node i splits; its right child (i + 1) is rank r's leaf; its left child (i + 2) is the next split.
        nodes.append(("hand_rank_inv", (1 / r + 1 / (r + 1)) / 2, i + 2, i + 1, 0.0))
        nodes.append((None, 0.0, -1, -1, a / r))
    nodes.append((None, 0.0, -1, -1, a / (OFFSET_RANKS + 1)))
    return tuple(nodes)


def _lgb_trees(booster: Any, names: Sequence[str]) -> list[tuple[tuple[str | None, float, int, int, float], ...]]:
    """LightGBM's trees (``dump_model``) in the plain format: numeric ``<=`` splits, pre-order nodes."""
    out = []
    for info in booster.dump_model()["tree_info"]:
        nodes: list[Any] = []

        def walk(n: dict[str, Any], nodes: list[Any] = nodes) -> int:
            i = len(nodes)
            nodes.append(None)
            if "split_feature" not in n:
                nodes[i] = (None, 0.0, -1, -1, round(float(n.get("leaf_value", 0.0)), 9))
                return i
            if n["decision_type"] != "<=":
                raise ValueError(f"unsupported split {n['decision_type']!r}")
            lo, hi = walk(n["left_child"]), walk(n["right_child"])
            nodes[i] = (names[int(n["split_feature"])], float(n["threshold"]), lo, hi, 0.0)
            return i

        walk(info["tree_structure"])
        out.append(tuple(nodes))
    return out


def _fit_lambdarank(
    cases: Sequence[LabelledCase], seed: int, params: dict[str, Any], weights: Sequence[float] | None = None
) -> Model:
    """LambdaMART over the cases (one query per run), from the hand-rank prior when ``offset`` > 0.

    A case's weight scales every one of its rows' gradients (LightGBM's ranking objectives
    multiply each row's lambda by its weight), so it weighs the whole query.
    """
    import numpy as np

    names = vocabulary(cases)
    xs = np.asarray([[float(r.get(n, 0.0)) for n in names] for rows, _ in cases for r in rows])
    return fit_lambdarank_matrix(xs, names, [labels for _, labels in cases], seed, params, weights)


def fit_lambdarank_matrix(
    xs: Any, names: Sequence[str], labels: Sequence[Sequence[int]], seed: int, params: Mapping[str, Any],
    weights: Sequence[float] | None = None,
) -> Model:
    """`_fit_lambdarank` from the feature matrix already built: ``xs`` (a float array, one row per ranked step of
    each case in turn, one column per name of ``names``, a feature a step lacks 0.0) and each case's ``labels``.
    Cross-validation builds the whole corpus's matrix once and hands each fold its rows and its vocabulary's
    columns: the same numbers `_fit_lambdarank` builds, so the same model."""
    import lightgbm as lgb
    import numpy as np

    p = {k: v for k, v in params.items() if k != "offset"}
    a = float(params.get("offset", 0.0))
    ys = [int(y) for ls in labels for y in ls]
    col = list(names).index("hand_rank_inv") if "hand_rank_inv" in names else None
    hand = [float(v) for v in xs[:, col]] if col is not None else [0.0] * len(ys)
    init = [_offset(a, h) for h in hand] if a else None
    ranker = lgb.LGBMRanker(random_state=seed, verbose=-1, n_jobs=1, **p)
    sw = None if weights is None else [float(w) for ls, w in zip(labels, weights, strict=True) for _ in ls]
    ranker.fit(np.asarray(xs), np.asarray(ys), group=[len(ls) for ls in labels], init_score=init, sample_weight=sw)
    trees = _lgb_trees(ranker.booster_, names)
    return assemble(0.0, 1.0, [*trees, _offset_tree(a)] if a else trees)


__all__ = ["LAMBDARANK_PARAMS", "POINTWISE_PARAMS", "PARAMS", "WARM_PARAMS", "LabelledCase", "assemble", "fit", "fit_lambdarank_matrix", "matrix", "vocabulary"]
