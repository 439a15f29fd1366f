"""Spectrum ranking across runs: what failing runs have that passing runs don't.

Spectrum-based fault localization (Abreu, Zoeteweij and van Gemund, *On the
accuracy of spectrum-based fault localization*, 2007; Wong et al., *The
DStar method for effective software fault localization*, 2014) counts, for
each program element, the failing runs that executed it (``ef``), the
passing runs that did (``ep``), and the failing runs that did not (``nf``):

- Ochiai: ``ef / sqrt((ef + nf) · (ef + ep))``
- DStar (``*`` = 2): ``ef² / (ep + nf)`` (∞ when ``ep + nf = 0``: reported as ``ef² / 0.5``)

Here the elements are *step signatures* (agent, kind and normalized name of a
step that ran) and *predicates* over runs in the spirit of Liblit et al.
(*Scalable statistical bug isolation*, 2005): "tool X returned empty",
"step Y raised E", "step Y was retried", "step Y's output lacks key K",
"a value flowed from A to B".  Runs of different agents are never mixed (runs
are grouped by run name); when one agent runs several tasks, scores are
computed per task and averaged with the failing runs of each task as weights,
so a task that fails often cannot make its own steps look guilty.

Counting is streaming: each run contributes a set of feature strings to
per-stratum counters; nothing per run is kept.  "Lacks key K" is derived from
two counts ("ran Y" minus "Y's output had K") instead of being listed per run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from trajdebug.core.model import VALUE_DEP_KINDS, Run
from trajdebug.fleet.signature import normalize


MAX_TASKS = 200
"""Distinct tasks kept per agent; runs of further tasks share one stratum (bounded memory)."""

_OTHER_TASK = "<other tasks>"


def _empty(v: Any) -> bool:
    return v is None or (
        isinstance(v, (str, list, dict, tuple)) and not (v.strip() if isinstance(v, str) else v)
    )


def run_features(run: Run) -> set[str]:
    """The features of one run (step signatures and predicates), as strings.

    ``step:AGENT/KIND/NAME`` ran; ``raised:NAME:TYPE``; ``retried:NAME``;
    ``empty:NAME`` (a tool or retrieval step returned nothing); ``key:NAME:K``
    (its output had top-level key K; "lacks" is derived); ``flow:A>B`` (a
    value flowed from a step named A into one named B).
    """
    out: set[str] = set()
    names = {}
    for s in run.steps:
        name = normalize(s.name, limit=60)
        names[s.step_id] = name
        out.add(f"step:{s.agent or '-'}/{s.kind}/{name}")
        if s.error is not None:
            out.add(f"raised:{name}:{normalize(s.error.type, limit=40)}")
        if s.attempt > 1:
            out.add(f"retried:{name}")
        if s.kind in ("tool", "retrieval") and s.status == "ok" and _empty(s.output):
            out.add(f"empty:{name}")
        if isinstance(s.output, Mapping):
            for k in list(s.output)[:50]:
                out.add(f"key:{name}:{normalize(str(k), limit=40)}")
    for s in run.steps:
        for d in s.deps:
            if d.kind in VALUE_DEP_KINDS and d.run_id is None and d.step_id in names:
                out.add(f"flow:{names[d.step_id]}>{names[s.step_id]}")
    return out


def describe(feature: str) -> str:
    """A feature in words."""
    kind, _, rest = feature.partition(":")
    if kind == "step":
        agent, _, kn = rest.partition("/")
        k, _, name = kn.partition("/")
        return f"{name} ({k}{'' if agent == '-' else ', ' + agent}) ran"
    if kind == "raised":
        name, _, t = rest.partition(":")
        return f"{name} raised {t}"
    if kind == "retried":
        return f"{rest} was retried"
    if kind == "empty":
        return f"{rest} returned empty"
    if kind == "lacks":
        name, _, k = rest.partition(":")
        return f"{name}'s output lacks key {k!r}"
    if kind == "key":
        name, _, k = rest.partition(":")
        return f"{name}'s output has key {k!r}"
    if kind == "flow":
        a, _, b = rest.partition(">")
        return f"a value flowed from {a} to {b}"
    return feature


def ochiai(ef: float, ep: float, nf: float) -> float:
    """Ochiai's coefficient (Abreu et al. 2007)."""
    d = math.sqrt((ef + nf) * (ef + ep))
    return ef / d if d else 0.0


def dstar(ef: float, ep: float, nf: float, star: int = 2) -> float:
    """DStar (Wong et al. 2014); a zero denominator counts as 0.5 so that perfect predictors stay finite."""
    return ef**star / ((ep + nf) or 0.5)


@dataclass(slots=True)
class _Stratum:
    failing: int = 0
    passing: int = 0
    ef: Counter[str] = field(default_factory=Counter)
    ep: Counter[str] = field(default_factory=Counter)

    def add(self, failed: bool, features: Iterable[str]) -> None:
        if failed:
            self.failing += 1
            self.ef.update(features)
        else:
            self.passing += 1
            self.ep.update(features)

    def merge(self, other: _Stratum) -> None:
        self.failing += other.failing
        self.passing += other.passing
        self.ef.update(other.ef)
        self.ep.update(other.ep)

    def counts(self) -> dict[str, tuple[int, int]]:
        """``feature -> (ef, ep)``, with the derived ``lacks:`` predicates."""
        out = {f: (self.ef[f], self.ep[f]) for f in set(self.ef) | set(self.ep)}
        ran: dict[str, tuple[int, int]] = {}
        for f, c in out.items():
            if f.startswith("step:"):
                name = f[5:].partition("/")[2].partition("/")[2]
                prev = ran.get(name, (0, 0))
                # Runs that ran a step of this name under any agent or kind (an upper bound).
                ran[name] = (max(prev[0], c[0]), max(prev[1], c[1]))
        for f, (ef_key, ep_key) in list(out.items()):
            if not f.startswith("key:"):
                continue
            name, _, key = f[4:].partition(":")
            if name in ran:
                ef_ran, ep_ran = ran[name]
                out[f"lacks:{name}:{key}"] = (max(0, ef_ran - ef_key), max(0, ep_ran - ep_key))
        return {f: c for f, c in out.items() if not f.startswith("key:")}


@dataclass(frozen=True, slots=True)
class Suspect:
    """One ranked feature."""

    agent: str
    """The agent (run name) whose runs were compared."""
    feature: str
    """The feature (see `run_features`)."""
    description: str
    """The feature in words."""
    ochiai: float
    """Ochiai, averaged over the agent's tasks weighted by failing runs."""
    dstar: float
    """DStar (* = 2), averaged the same way."""
    ef: int
    """Failing runs that have it."""
    ep: int
    """Passing runs that have it."""
    failing: int
    """Failing runs of the agent (in the strata that have passing runs too)."""
    passing: int
    """Passing runs of the agent (in those strata)."""

    def to_dict(self) -> dict[str, Any]:
        """As JSON data."""
        return {
            "agent": self.agent,
            "feature": self.feature,
            "description": self.description,
            "ochiai": round(self.ochiai, 6),
            "dstar": round(self.dstar, 6),
            "ef": self.ef,
            "ep": self.ep,
            "failing": self.failing,
            "passing": self.passing,
        }


class Spectrum:
    """Per-agent, per-task feature counts over passing and failing runs."""

    def __init__(self) -> None:
        self.strata: dict[tuple[str, str], _Stratum] = {}
        self._tasks: dict[str, set[str]] = {}

    def add_run(self, run: Run, failed: bool) -> None:
        """Count one run (``failed``: its outcome is failure)."""
        self.add(run.name, run.metadata.get("task"), failed, run_features(run))

    def add(self, agent: str, task: Any, failed: bool, features: Iterable[str]) -> None:
        """Count one run given its features."""
        # The task as written: two tasks that differ only in a number are two tasks.
        key = str(task)[:200] if task is not None else "-"
        seen = self._tasks.setdefault(agent, set())
        if key not in seen and len(seen) >= MAX_TASKS:
            key = _OTHER_TASK
        seen.add(key)
        self.strata.setdefault((agent, key), _Stratum()).add(failed, features)

    def merge(self, other: Spectrum) -> None:
        """Fold another spectrum in."""
        for k, s in other.strata.items():
            self.strata.setdefault(k, _Stratum()).merge(s)
            self._tasks.setdefault(k[0], set()).add(k[1])

    def _strata_of(self, agent: str) -> list[_Stratum]:
        mine = [s for (a, _), s in self.strata.items() if a == agent]
        usable = [s for s in mine if s.failing and s.passing]
        # Stratify only when tasks repeat: strata of one or two runs each compare nothing.
        if len(mine) > 1 and (
            not usable
            or sum(s.failing + s.passing for s in usable) < 0.5 * sum(s.failing + s.passing for s in mine)
        ):
            whole = _Stratum()
            for s in mine:
                whole.merge(s)
            return [whole] if whole.failing and whole.passing else []
        return usable

    def rank(self, *, top: int = 5, min_ef: int = 2) -> list[Suspect]:
        """The most suspicious features of each agent, by Ochiai then DStar.

        Args:
            top: How many per agent.
            min_ef: Ignore features fewer failing runs have (noise).
        """
        out: list[Suspect] = []
        for agent in sorted({a for a, _ in self.strata}):
            strata = self._strata_of(agent)
            if not strata:
                continue
            weight = sum(s.failing for s in strata)
            failing = weight
            passing = sum(s.passing for s in strata)
            agg: dict[str, list[float]] = {}
            for s in strata:
                w = s.failing / weight
                for f, (ef, ep) in s.counts().items():
                    nf = s.failing - ef
                    a = agg.setdefault(f, [0.0, 0.0, 0, 0, 0.0])
                    a[0] += w * ochiai(ef, ep, nf)
                    a[1] += w * dstar(ef, ep, nf)
                    a[2] += ef
                    a[3] += ep
                    # How much more often failing runs of this task have it than passing ones.
                    a[4] += w * (ef / s.failing - ep / s.passing)
            # Only what failing runs have *more often* than passing ones of the same task: a
            # feature every run has, or one every passing run has (a step failing runs never
            # reached), scores well on Ochiai without telling failing runs apart.
            ranked = sorted(
                ((f, v) for f, v in agg.items() if v[2] >= min_ef and v[4] > 1e-9),
                key=lambda fv: (-fv[1][0], -fv[1][1], fv[0]),
            )[:top]
            out.extend(
                Suspect(agent, f, describe(f), v[0], v[1], int(v[2]), int(v[3]), failing, passing)
                for f, v in ranked
            )
        return out


__all__ = ["MAX_TASKS", "Spectrum", "Suspect", "describe", "dstar", "ochiai", "run_features"]
