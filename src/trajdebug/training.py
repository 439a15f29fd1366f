"""Fitting the learned ranker's trees (needs the ``train`` extra: scikit-learn).

`fit` turns labelled cases (each: the features of a run's ranked steps and
which of them are the root) into a `trajdebug.analysis.learned.Model`: a
pointwise gradient-boosted classifier (Friedman 2001) whose trees are exported
to the plain-Python format, so scoring needs nothing beyond the standard
library.  Each case weighs 1 in all, split evenly between its root steps and
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

PARAMS: dict[str, Any] = {
    "n_estimators": 60,
    "learning_rate": 0.15,
    "max_depth": 3,
    "min_samples_leaf": 20,
    "subsample": 0.5,
}
"""Default boosting hyper-parameters: fixed before any cross-validation, sized for a minute's CPU per fit."""

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
) -> Model:
    """A model fitted on ``cases`` (uncalibrated; with ``prior``: the prior plus new trees, its calibration kept)."""
    from sklearn.ensemble import GradientBoostingClassifier

    names = sorted(set(vocabulary(cases)) | set(prior.feature_names if prior else ()))
    xs, ys, ws = matrix(cases, names)
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
    return replace(model, calibration=prior.calibration, confident=prior.confident, likely=prior.likely, meta=prior.meta)


__all__ = ["PARAMS", "WARM_PARAMS", "LabelledCase", "assemble", "fit", "matrix", "vocabulary"]
