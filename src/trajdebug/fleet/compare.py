"""Regression between two run sets: failure rates with confidence, groups that came and went, changed steps.

Two sets are two lists of sources, or one list split by a metadata key
(``version``: set A holds the runs whose version is ``a``, B those whose
version is ``b``).  `compare` reports:

- the failure rate and the critical-failure rate of each set with Wilson score
  intervals (Wilson 1927; the interval that stays inside [0, 1] and behaves at
  small counts, which the normal approximation does not);
- failure groups that are new in B, gone from A, or grew: a group grew when the
  lower bound of its rate in B exceeds the upper bound of its rate in A;
- steps whose output changed for the same input: the same step name and agent
  given the same input (by content hash) always returned one output in A and
  returns others in B;
- the evaluation metric a CI job gates on: critical failures per run in each set,
  and whether B's critical-failure rate is significantly worse.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajdebug.core.codec import dumps
from trajdebug.core.model import Run
from trajdebug.fleet.engine import (
    Aggregate,
    FleetReport,
    Unit,
    UnitResult,
    close_stores,
    execute,
    process_unit,
    reference_pool,
    units,
)
from trajdebug.fleet.groups import Group


MAX_IO_KEYS = 200_000
"""Distinct (step, input) pairs remembered per set (bounded memory)."""

_Z = 1.959963984540054  # the 97.5th percentile of the standard normal: 95 % intervals


def wilson(k: int, n: int, z: float = _Z) -> tuple[float, float]:
    """The Wilson score interval of a proportion ``k / n`` (95 % by default); ``(0, 1)`` when ``n`` is 0."""
    if n <= 0:
        return (0.0, 1.0)
    p = k / n
    denom = 1 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, center - half), min(1.0, center + half))


@dataclass(frozen=True, slots=True)
class Rate:
    """A proportion with its interval."""

    k: int
    """Runs counted."""
    n: int
    """Runs in the set."""

    @property
    def value(self) -> float:
        """``k / n`` (0 for an empty set)."""
        return self.k / self.n if self.n else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """The 95 % Wilson interval."""
        return wilson(self.k, self.n)

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        lo, hi = self.interval
        return {
            "k": self.k,
            "n": self.n,
            "rate": round(self.value, 6),
            "low": round(lo, 6),
            "high": round(hi, 6),
        }


def _digest(v: Any) -> str:
    return hashlib.blake2b(dumps(v), digest_size=8).hexdigest()


@dataclass(slots=True)
class _Side:
    result: UnitResult = field(default_factory=UnitResult)
    io: dict[tuple[str, str, str], set[str]] = field(default_factory=dict)
    examples: dict[tuple[str, str, str], Any] = field(default_factory=dict)


def _compare_unit(
    unit: Unit, by: str | None, a: str | None, b: str | None, refs: Mapping[str, Sequence[Run]] | None = None
) -> dict[str, _Side]:
    """Process a unit for both sides: findings, and the outputs of each (step, input)."""
    sides: dict[str, _Side] = {}
    side_of = unit_side = unit.tag if by is None else None
    for run in _runs_of(unit):
        if by is not None:
            v = run.metadata.get(by)
            side_of = "a" if v is not None and str(v) == a else "b" if v is not None and str(v) == b else None
        if side_of is None:
            continue
        one = Unit("runs", unit.path, runs=(run,))
        s = sides.setdefault(side_of, _Side())
        r = process_unit(one, None, refs)
        s.result.runs += r.runs
        s.result.findings.extend(r.findings)
        s.result.problems.extend(r.problems)
        s.result.spectrum.merge(r.spectrum)
        for step in run.steps:
            if step.status != "ok" or step.kind == "agent":
                continue
            key = (run.name, step.agent or "-", step.name, _digest(step.input))
            k3 = (key[0] + "/" + key[1], key[2], key[3])
            s.io.setdefault(k3, set()).add(_digest(step.output))
            s.examples.setdefault(k3, step.input)
        side_of = unit_side
    return sides


def _runs_of(unit: Unit) -> Any:
    from trajdebug.fleet.units import _load, _skip

    return (r for r in _load(unit) if not _skip(r.metadata))


@dataclass(slots=True)
class Comparison:
    """What changed between set A and set B."""

    a: FleetReport
    """Set A's fleet report."""
    b: FleetReport
    """Set B's fleet report."""
    labels: tuple[str, str]
    """What A and B are (sources, or ``version=1.0``)."""
    changed_steps: list[dict[str, Any]]
    """Steps whose output changed for the same input (agent, step, input, outputs seen in A and B)."""
    seconds: float = 0.0
    """Wall time."""

    def failure_rate(self, side: str) -> Rate:
        """Failed runs over runs of set ``a`` or ``b``."""
        r = self.a if side == "a" else self.b
        return Rate(r.groups.failed, r.runs)

    def critical_rate(self, side: str) -> Rate:
        """Critically failed runs over runs of set ``a`` or ``b``."""
        r = self.a if side == "a" else self.b
        return Rate(sum(g.critical for g in r.groups.groups.values()), r.runs)

    def groups(self) -> list[dict[str, Any]]:
        """Every group of either set with its rates and its change: ``new``, ``gone``, ``grew``, ``shrank``, ``same``."""
        out: list[dict[str, Any]] = []
        ga, gb = self.a.groups.groups, self.b.groups.groups
        for gid in sorted(set(ga) | set(gb)):
            g: Group = gb.get(gid) or ga[gid]
            ra = Rate(ga[gid].count if gid in ga else 0, self.a.runs)
            rb = Rate(gb[gid].count if gid in gb else 0, self.b.runs)
            if ra.k == 0:
                change = "new"
            elif rb.k == 0:
                change = "gone"
            elif rb.interval[0] > ra.interval[1]:
                change = "grew"
            elif rb.interval[1] < ra.interval[0]:
                change = "shrank"
            else:
                change = "same"
            out.append(
                {"group_id": gid, "title": g.title(), "change": change, "a": ra.to_dict(), "b": rb.to_dict()}
            )
        order = {"new": 0, "grew": 1, "gone": 2, "shrank": 3, "same": 4}
        out.sort(key=lambda d: (order[d["change"]], -d["b"]["k"], d["group_id"]))
        return out

    def metric(self) -> dict[str, Any]:
        """The CI metric: critical failures per run in A and B, and whether B regressed significantly."""
        ca, cb = self.critical_rate("a"), self.critical_rate("b")
        return {
            "name": "critical_failures_per_run",
            "a": round(ca.value, 6),
            "b": round(cb.value, 6),
            "delta": round(cb.value - ca.value, 6),
            "regressed": cb.interval[0] > ca.interval[1],
        }

    def to_dict(self) -> dict[str, Any]:
        """As JSON data (the ``trajdebug compare --json`` document)."""
        return {
            "a": {
                "label": self.labels[0],
                "runs": self.a.runs,
                "failure_rate": self.failure_rate("a").to_dict(),
                "critical_rate": self.critical_rate("a").to_dict(),
            },
            "b": {
                "label": self.labels[1],
                "runs": self.b.runs,
                "failure_rate": self.failure_rate("b").to_dict(),
                "critical_rate": self.critical_rate("b").to_dict(),
            },
            "groups": self.groups(),
            "changed_steps": self.changed_steps,
            "metric": self.metric(),
            "problems": self.a.problems + self.b.problems,
            "seconds": round(self.seconds, 3),
        }


def _changed(a: _Side, b: _Side, limit: int = 50) -> list[dict[str, Any]]:
    out = []
    for key, outs_b in b.io.items():
        outs_a = a.io.get(key)
        # Only steps that were deterministic in A (one output for this input): a step whose
        # output varies anyway (a live tool, a sampled model) says nothing by varying in B.
        if outs_a and len(outs_a) == 1 and not (outs_b & outs_a):
            agent, step, _ = key
            out.append(
                {
                    "agent": agent,
                    "step": step,
                    "input": b.examples.get(key),
                    "outputs_a": len(outs_a),
                    "outputs_b": len(outs_b),
                }
            )
    out.sort(key=lambda d: (d["agent"], d["step"], str(d["input"])))
    return out[:limit]


def compare(
    set_a: Sequence[str | Path],
    set_b: Sequence[str | Path] = (),
    *,
    by: str | None = None,
    a: str | None = None,
    b: str | None = None,
    workers: int | None = None,
    progress: Any = None,
) -> Comparison:
    """Compare two run sets.

    Args:
        set_a: Sources of set A (or of both sets, with ``by``).
        set_b: Sources of set B (empty with ``by``).
        by: Split the sources by this metadata key instead (``version``).
        a: The value of ``by`` that makes set A.
        b: The value of ``by`` that makes set B.
        workers: Processes (default: the usable cores).
        progress: Called as ``progress(units_done, units)`` after each unit of work.

    Raises:
        ValueError: ``by`` without both values, or neither ``set_b`` nor ``by``.
        SourceError: a source does not exist.
    """
    t0 = time.perf_counter()
    if by is not None and (a is None or b is None):
        raise ValueError(f"split by {by!r} needs both values (a and b)")
    if by is None and not set_b:
        raise ValueError("compare needs set B, or a metadata key to split by")
    if by is None:
        wa, ra, pa = units(set_a)
        wb, rb, pb = units(set_b)
        work = [_tag(u, "a") for u in wa] + [_tag(u, "b") for u in wb]
        replays, problems = ra + rb, pa + pb
        labels = (", ".join(map(str, set_a)), ", ".join(map(str, set_b)))
    else:
        work, replays, problems = units(set_a)
        labels = (f"{by}={a}", f"{by}={b}")
    aggs = {"a": Aggregate(replays), "b": Aggregate(replays)}
    sides = {"a": _Side(), "b": _Side()}

    def consume(result: Mapping[str, _Side]) -> None:
        for name, s in result.items():
            aggs[name].add(s.result)
            mine = sides[name]
            for key, outs in s.io.items():
                if key in mine.io:
                    if len(mine.io[key]) < 8:
                        mine.io[key] |= outs
                elif len(mine.io) < MAX_IO_KEYS:
                    mine.io[key] = set(outs)
                    mine.examples[key] = s.examples.get(key)

    try:
        refs = reference_pool([*set_a, *(set_b or ())])
        n = execute(work, _compare_unit, consume, workers=workers, args=(by, a, b, refs), progress=progress)
    finally:
        close_stores()
    secs = time.perf_counter() - t0
    ra_, rb_ = (aggs[k].report([labels[i]], secs, n) for i, k in enumerate(("a", "b")))
    ra_.problems[:0] = problems
    return Comparison(ra_, rb_, labels, _changed(sides["a"], sides["b"]), secs)


def _tag(u: Unit, side: str) -> Unit:
    from dataclasses import replace

    return replace(u, tag=side)


__all__ = ["MAX_IO_KEYS", "Comparison", "Rate", "compare", "wilson"]
