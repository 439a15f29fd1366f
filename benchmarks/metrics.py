"""Localization metrics: top-k, MRR, EXAM (average tie), search cost, and their aggregates.

Conventions (stated in the generated report too):

* **Rank** is the 1-based position of the ground-truth step in a method's
  candidate list; None when the list does not contain it (*not found*).
* **top-k** is the share of cases whose rank is at most k; **MRR** the mean of
  1/rank, with 0 for not found.
* **EXAM** (Wong et al.) is the share of the run's steps a developer reads,
  walking the ranking, up to and including the root cause.  Ties are
  resolved by their *average* position (the expected cost): a candidate
  sharing its score with others sits in the middle of that tie group.  A
  root cause the list misses sits in the middle of the unranked rest, which
  the developer is assumed to read in random order: position
  ``len(candidates) + (steps - len(candidates) + 1) / 2``.
* **Steps examined** is the method's own count of steps it diagnosed
  (``Localization.stats.steps_examined``); the **linear backward scan** cost
  of a case is the number of steps from the (latest) failing step back to
  the root cause, inclusive, in time order: what reading the log backwards
  costs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


def rank_of(candidates: Sequence[object], truth: object) -> int | None:
    """The 1-based position of ``truth`` among ``candidates``, or None when absent."""
    if truth is None:
        return None
    for i, c in enumerate(candidates, 1):
        if c == truth:
            return i
    return None


def exam_position(candidates: Sequence[str], scores: Sequence[float], truth: str | None, steps: int) -> float:
    """The expected number of steps read, walking the ranking, up to and including ``truth``.

    Args:
        candidates: Ranked step ids, best first.
        scores: Their scores (equal scores form a tie group).
        truth: The ground-truth step id.
        steps: The number of steps in the run.

    Raises:
        ValueError: ``scores`` and ``candidates`` differ in length, or ``steps`` is smaller than the list.
    """
    if len(scores) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but {len(scores)} scores")
    n = len(candidates)
    if steps < n:
        raise ValueError(f"a run of {steps} steps cannot have {n} distinct candidates")
    r = rank_of(candidates, truth)
    if r is None:
        return n + (steps - n + 1) / 2
    s = scores[r - 1]
    above = sum(1 for x in scores if x > s)
    ties = sum(1 for x in scores if x == s)
    return above + (ties + 1) / 2


def exam(candidates: Sequence[str], scores: Sequence[float], truth: str | None, steps: int) -> float:
    """EXAM score: `exam_position` as a fraction of the run's steps (0 < EXAM <= 1)."""
    return exam_position(candidates, scores, truth, steps) / max(steps, 1)


def top_k(ranks: Iterable[int | None], k: int) -> float:
    """The share of ranks that are at most ``k`` (None counts as a miss); NaN for no ranks."""
    rs = list(ranks)
    if not rs:
        return math.nan
    return sum(1 for r in rs if r is not None and r <= k) / len(rs)


def mrr(ranks: Iterable[int | None]) -> float:
    """Mean reciprocal rank (None counts as 0); NaN for no ranks."""
    rs = list(ranks)
    if not rs:
        return math.nan
    return sum(1.0 / r for r in rs if r is not None) / len(rs)


@dataclass(frozen=True, slots=True)
class Outcome:
    """One method's result on one case."""

    method: str
    """The localization method."""
    rank: int | None
    """Rank of the ground truth (None: not found)."""
    exam: float
    """EXAM score (fraction of the run's steps, average tie)."""
    examined: int
    """Steps the method diagnosed."""
    linear: int
    """Cost of the linear backward scan to the root on this case."""
    seconds: float
    """Wall time of the method on this case."""


@dataclass(frozen=True, slots=True)
class Summary:
    """Aggregate metrics of one method over a set of cases."""

    method: str
    """The localization method."""
    cases: int
    """Number of cases."""
    top1: float
    """Share ranked first."""
    top3: float
    """Share ranked in the top 3."""
    mrr: float
    """Mean reciprocal rank."""
    exam: float
    """Mean EXAM score."""
    examined: float
    """Mean steps diagnosed."""
    linear: float
    """Mean linear-backward-scan cost."""
    ms: float
    """Mean wall time per run, in milliseconds."""

    @property
    def examined_ratio(self) -> float:
        """Mean steps diagnosed over mean linear-scan cost."""
        return self.examined / self.linear if self.linear else math.nan


def summarize(method: str, outcomes: Sequence[Outcome]) -> Summary:
    """Aggregate one method's outcomes."""
    ranks = [o.rank for o in outcomes]
    mean = statistics.fmean if outcomes else (lambda xs: math.nan)
    return Summary(
        method=method,
        cases=len(outcomes),
        top1=top_k(ranks, 1),
        top3=top_k(ranks, 3),
        mrr=mrr(ranks),
        exam=mean([o.exam for o in outcomes]),
        examined=mean([float(o.examined) for o in outcomes]),
        linear=mean([float(o.linear) for o in outcomes]),
        ms=mean([o.seconds * 1000 for o in outcomes]),
    )


__all__ = ["Outcome", "Summary", "exam", "exam_position", "mrr", "rank_of", "summarize", "top_k"]
