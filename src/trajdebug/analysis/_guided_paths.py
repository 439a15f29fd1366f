"""Paths over the guided search's slice: the path from a root to the failure, and what a correct answer clears.

The search's nodes are the failure's slice, indexed, with each node's consumers (``kids``).  The path shown
for a root (`failure_path`) is the analysis's own when it ends at the failure, so ``analyze`` and ``--ask``
print the same one, else the shortest one through no step answered correct (`dependency_path`); the mass a
step clears when answered correct is its subtree of post-dominators toward the focus (`post_dominated`).
The search's node sets are bit sets (`_bits`, `_popcount`).  Graph walks, kept apart from the terms of the
search (`_guided_result.py`) and the search itself (`_guided.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from trajdebug.analysis._guided_result import every_candidate


if TYPE_CHECKING:
    from trajdebug.analysis._pipeline import Analysis


def failure_path(
    analysis: Analysis,
    ids: Sequence[str],
    kids: Sequence[Sequence[int]],
    verdict: Callable[[int], bool | None],
    root: str,
    failure: str,
) -> tuple[str, ...]:
    """The path from ``root`` to ``failure`` to show: the one the analysis gives the root as a candidate when it
    ends at that failure and runs through no step answered correct (so ``analyze`` and the guided search print
    the same path), else `dependency_path`.  ``verdict``: the answer that stands for a node (None: none).

    The search's own edges let a step reach the failing container that encloses it in one hop, which is
    true but hides the steps the failure actually came through.  A step answered correct passed on no wrong
    value: a path through it is not how the root's value reached the failure (nu24 was shown size_face's path
    through the choose_panel it had just answered right)."""
    index = {sid: i for i, sid in enumerate(ids)}
    for c in every_candidate(analysis.localization):
        if c.step_id == root and c.run_id is None:
            cleared = any(s in index and verdict(index[s]) is True for s in c.path[1:])
            if len(c.path) > 1 and c.path[-1] == failure and not cleared:
                return c.path
            break
    return dependency_path(ids, kids, verdict, root, failure)


def dependency_path(
    ids: Sequence[str], kids: Sequence[Sequence[int]], verdict: Callable[[int], bool | None], root: str, failure: str
) -> tuple[str, ...]:
    """The path from ``root`` forward to ``failure`` over the search's nodes (``kids``: the recorded edges
    inside the search and those an audit added), breadth first, through wrong-marked steps where there is a
    choice and never through a step answered correct (``verdict`` True: it passed no wrong value on); just
    the root when none leads there."""
    index = {sid: i for i, sid in enumerate(ids)}
    if root not in index:
        return ()
    prev: dict[str, str | None] = {root: None}
    frontier = [root]
    while frontier and failure not in prev:
        nxt: list[str] = []
        for sid in frontier:
            after = [ids[k] for k in kids[index[sid]] if ids[k] not in prev and verdict(k) is not True]
            after.sort(key=lambda c: (verdict(index[c]) is not False, index[c]))
            for c in after:
                if c not in prev:
                    prev[c] = sid
                    nxt.append(c)
        frontier = nxt
    if failure not in prev:
        return (root,)
    out: list[str] = []
    at: str | None = failure
    while at is not None:
        out.append(at)
        at = prev[at]
    return tuple(reversed(out))


def _bits(bits: int) -> list[int]:
    """The members of a bit set, lowest first."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def _popcount(bits: int) -> int:
    return bin(bits).count("1")


def post_dominated(kids: Sequence[Sequence[int]], mass: Sequence[float], cand: Sequence[int], focus: int) -> dict[int, float]:
    """The mass each candidate (``cand``, node indices) clears when answered correct: the steps whose every
    path to the focus runs through it (the candidate's subtree in the post-dominator tree toward the focus;
    Cooper, Harvey & Kennedy's iterative dominators, one pass since the slice is a DAG in topological
    order).  ``kids``: each node's consumers; ``mass``: each node's prior."""
    if focus not in cand:
        return {}
    order = sorted(cand, reverse=True)  # consumers before producers: the focus first
    po = {v: k for k, v in enumerate(order)}
    idom: dict[int, int] = {focus: focus}
    for v in order[1:]:
        new: int | None = None
        for c in kids[v]:
            if c not in idom:
                continue
            if new is None:
                new = c
                continue
            a, b = c, new
            while a != b:
                while po[a] > po[b]:
                    a = idom[a]
                while po[b] > po[a]:
                    b = idom[b]
            new = a
        if new is not None:
            idom[v] = new
    sub = dict.fromkeys(order, 0.0)
    for v in reversed(order):
        sub[v] += mass[v]
        if v != focus and v in idom:
            sub[idom[v]] += sub[v]
    return sub


__all__ = [
    "failure_path",
    "dependency_path",
    "post_dominated",
]
