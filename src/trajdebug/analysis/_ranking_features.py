"""The features of a ranked step: every value the ranking used about it, by name (what a learned model reads).

`Ranking` (`_ranking.py`) combines the evidence sources' findings into one score per step; a learned ranker
reads the terms of that combination, and the step's place in the run and on the slice, rather than the score
alone.  `step_features` reads them off a finished ranking (it computes nothing the ranking did not), for each
candidate `trajdebug.analysis._localize` lists.  The public features of an analysis, built on these, are
`trajdebug.analysis.features`.
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from trajdebug.analysis._weights import FrozenMap, _matches
from trajdebug.core.model import VALUE_DEP_KINDS


if TYPE_CHECKING:
    from trajdebug.analysis._ranking import Ranking


def step_features(r: Ranking, sid: str) -> FrozenMap:
    """Every value the ranking used about a step, by name (what a learned model reads).

    Its kind (``kind:<kind>`` = 1), position in the run (index / length),
    depth on the slice (hops to the failure; -1 off the slice) and distance
    to the failure (positions / length), fan-in and fan-out, whether its
    agent differs from the step before it; each signal's strongest evidence
    (``evidence:<signal>``, ``sound:<signal>``); and the combination's
    terms: suspicion, blame, reach, prior, factor and its parts, score,
    structural root.
    """
    step = r.g.steps[sid]
    n = max(len(r.run.steps), 1)
    pos = r.g.position(sid)
    v = r.verdict(sid)
    out: dict[str, float] = {f"kind:{step.kind}": 1.0, "position": pos / n}
    out["on_slice"] = float(sid in r.dist)
    out["depth"] = float(r.dist.get(sid, -1))
    if not r.fail_positions:
        r.fail_positions = sorted(r.g.position(f) for f in r.fail_ids)
    i = bisect.bisect_left(r.fail_positions, pos)
    out["distance"] = (r.fail_positions[i] - pos if i < len(r.fail_positions) else n) / n
    kids = r.g.children(sid)
    out["fan_in"] = float(len(r.g.parents(sid)))
    out["fan_out"] = float(len(kids))
    prev = r.run.steps[pos - 1] if 0 < pos <= len(r.run.steps) else None
    out["agent_change"] = float(prev is not None and prev.agent != step.agent)
    for e in v.evidence:
        name = ("sound:" if e.sound else "evidence:") + e.diagnoser
        out[name] = max(out.get(name, 0.0), e.suspicion)
    blame = r.blame.get(sid, 0.0)
    out["suspicion"] = v.suspicion
    out["faulty"] = float(v.faulty)
    out["blame"] = blame
    out["reach"] = blame ** r.w["proximity"] if blame > 0 else r.w["detached"]
    out["symptom"] = float(sid in r.symptoms)
    out["prior"] = r.prior(sid)
    out["thin"] = r.thin.get(sid, (0.0, ""))[0]
    out["elsewhere"] = float(sid in r.elsewhere)
    out["shared"] = float(sid in r.shared)
    out["focus"] = float(bool(r.families) and _matches(step, r.families))
    cons = [c for c, d in kids if d.kind in VALUE_DEP_KINDS] if r.good else []
    out["verified_consumers"] = sum(c in r.good for c in cons) / len(cons) if cons and r.good else 0.0
    out["factor"] = r.factor(sid)
    out["score"] = r.scores.get(sid, 0.0)
    out["root"] = float(sid in r.roots)
    out["relay"] = float(sid in r.upstream)
    return FrozenMap(out)


__all__ = ["step_features"]
