"""How many labels of one agent until `trajdebug fit` beats the shipped model on that agent.

For each workflow of the fault-injection suite (one agent each), the "shipped"
model is fitted on every other corpus source (so the agent is new to it);
then, for n labelled runs of that agent drawn at random (seeded, three draws),
`trajdebug.training.fit` boosts on from it (the warm start `trajdebug fit`
uses) and both models rank the agent's other runs (never the labelled ones).
``python -m benchmarks.label_curve --corpus FILE`` prints top-1 per n.
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks import corpus as corpus_mod
from benchmarks import learning as L
from trajdebug import training


SIZES = (0, 2, 5, 10, 20, 40)
"""Labelled runs of the agent."""
DRAWS = 3
"""Random draws of the labelled runs per size."""


def _top1(model: Any, cases: list[corpus_mod.Case]) -> float:
    hits = 0
    for c in cases:
        order = L.learned_order(L.probabilities(model, c))
        hits += bool(order) and c.labels()[order[0]] == 1
    return hits / len(cases)


def curve(cases: list[corpus_mod.Case]) -> dict[str, dict[int, dict[str, float]]]:
    """Per workflow and size: mean top-1 of the prior and of the fitted model on the unlabelled runs."""
    prior = L.fit([c for c in cases if c.suite != "quality"])
    by_agent: dict[str, list[corpus_mod.Case]] = defaultdict(list)
    for c in cases:
        if c.suite == "quality":
            by_agent[c.agent].append(c)
    out: dict[str, dict[int, dict[str, float]]] = {}
    for agent, mine in sorted(by_agent.items()):
        out[agent] = {}
        for n in SIZES:
            p, f = [], []
            for d in range(DRAWS if n else 1):
                rng = random.Random(f"{L.SEED}/{agent}/{n}/{d}")
                picked = set(rng.sample(range(len(mine)), n))
                train = [mine[i] for i in sorted(picked)]
                test = [mine[i] for i in range(len(mine)) if i not in picked]
                fitted = training.fit([(c.rows, c.labels()) for c in train], seed=L.SEED, prior=prior) if n else prior
                p.append(_top1(prior, test))
                f.append(_top1(fitted, test))
            out[agent][n] = {"shipped": sum(p) / len(p), "fitted": sum(f) / len(f)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.label_curve", description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True, help="corpus cache written by benchmarks.train --corpus")
    ap.add_argument("--json", type=Path, help="write the curve here")
    args = ap.parse_args(argv)
    res = curve(corpus_mod.load(args.corpus))
    for agent, row in res.items():
        print(agent, "  ".join(f"n={n}: {v['shipped']:.2f}->{v['fitted']:.2f}" for n, v in row.items()))
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
