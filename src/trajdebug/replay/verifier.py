"""The verifier: one failing run, its agent, and trials of corrected outputs by replay.

A `Verifier` holds what every trial of one failing run needs (the agent's entry
point and arguments, the recorded run, corrections from a passing run or a
fixer); `Verifier.trial` patches some steps and replays, once when the replay
is deterministic (every boundary call served) and K times otherwise.  The
verdicts built on trials live in `trajdebug.replay.verify`; the search for the
earliest fixing step in `trajdebug.replay.dd`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from trajdebug.core.model import Run, Step
from trajdebug.replay.cassette import STATE_VALUES_ATTR, canonical, fingerprint, step_paths
from trajdebug.replay.engine import (
    Correction,
    Mode,
    ReplayResult,
    as_correction,
    entry_arguments,
    replay,
)


Status = Literal["verified", "refuted", "unresolved"]
"""A candidate's verdict."""

TrialOutcome = Literal["pass", "fail", "unresolved"]
"""A patch's effect over its replays: the failure is gone, stays, or it depends."""

Fixer = Callable[[Step, Run], Any]
"""A user-supplied fixer: ``fixer(step, run)`` returns the step's corrected output
(or a `Correction`), or None when it has none."""


@dataclass(frozen=True, slots=True)
class Trial:
    """The replays of one patch."""

    patch: frozenset[str]
    """The patched step ids."""
    replays: tuple[ReplayResult, ...]
    """The replays run."""
    problem: str | None = None
    """Why the trial could not be decided (a patch never reached, the budget), or None."""

    @property
    def passed(self) -> int:
        """Replays in which the failure was gone."""
        return sum(1 for r in self.replays if r.passed)

    @property
    def failed(self) -> int:
        """Replays in which the run still failed."""
        return len(self.replays) - self.passed

    @property
    def outcome(self) -> TrialOutcome:
        """``pass`` or ``fail`` when every replay agrees, else ``unresolved``."""
        if self.problem is not None or not self.replays:
            return "unresolved"
        if self.passed == len(self.replays):
            return "pass"
        if self.failed == len(self.replays):
            return "fail"
        return "unresolved"

    @property
    def majority(self) -> TrialOutcome:
        """What most replays said (``unresolved`` on a tie)."""
        if self.passed > self.failed:
            return "pass"
        if self.failed > self.passed:
            return "fail"
        return "unresolved"

    def to_dict(self) -> dict[str, Any]:
        """The trial as JSON data."""
        first = self.replays[0] if self.replays else None
        return {
            "patch": sorted(self.patch),
            "outcome": self.outcome,
            "replays": len(self.replays),
            "passed": self.passed,
            "failed": self.failed,
            "majority": self.majority,
            "problem": self.problem,
            "replay_run_ids": [r.run.run_id for r in self.replays],
            "live_calls": len(first.live_calls) if first else 0,
            "served": first.served if first else 0,
            "rerun": first.rerun if first else 0,
            "first_divergence": first.first_divergence.to_dict()
            if first and first.first_divergence
            else None,
        }


class _PassingIndex:
    """A passing run's steps by name path and call order, and by name path and request."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.paths = step_paths(run)
        self.by_key = {key: sid for sid, key in self.paths.items()}
        self.by_request: dict[tuple[tuple[str, ...], str], list[str]] = {}
        for s in run.steps:
            self.by_request.setdefault((self.paths[s.step_id][0], fingerprint(s.input)), []).append(s.step_id)

    def same(self, key: tuple[tuple[str, ...], int], request: str) -> str | None:
        """The step matching ``key``: at the same call order when its request is the same,
        else the one with the same path and request nearest in call order (concurrent
        calls start in any order), else at the same call order."""
        at = self.by_key.get(key)
        if at is not None and fingerprint(self.run.step(at).input) == request:
            return at
        same = self.by_request.get((key[0], request))
        if same:
            return min(same, key=lambda sid: abs(self.paths[sid][1] - key[1]))
        return at


class Verifier:
    """Runs and caches the replays of one failing run under different patches.

    Args:
        agent: The entry point to re-execute.
        run: The failing run.
        corrections: Corrected outputs by step id (more are found with `correction_for`).
        passing: Passing runs of the same agent (corrections, extra recorded calls).
        fixer: A user-supplied fixer.
        samples: Replays per patch when a replay has live calls (K).
        mode: The replay mode.
        store: Where to save the first replay of each patch.
        args: The entry point's positional arguments (default: recorded).
        kwargs: Its keyword arguments (default: recorded).
        oracle: ``oracle(run) -> True`` when a run passes.
        max_replays: Replay budget; a trial beyond it is ``unresolved``.
    """

    def __init__(
        self,
        agent: Callable[..., Any],
        run: Run,
        *,
        corrections: Mapping[str, Any] | None = None,
        passing: Sequence[Run] = (),
        fixer: Fixer | None = None,
        samples: int = 3,
        mode: Mode = "recorded",
        store: Any = None,
        args: Sequence[Any] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        oracle: Callable[[Run], bool] | None = None,
        max_replays: int = 60,
    ) -> None:
        self.agent = agent
        self.run = run
        self.steps = run.step_map()
        self.passing = list(passing)
        self.fixer = fixer
        self.samples = max(1, samples)
        self.mode: Mode = mode
        self.store = store
        if args is None and kwargs is None:
            self.args, self.kwargs = entry_arguments(run)
        else:
            self.args, self.kwargs = list(args or ()), dict(kwargs or {})
        self.oracle = oracle
        self.max_replays = max_replays
        self.replays = 0
        self._given = {sid: as_correction(v) for sid, v in (corrections or {}).items()}
        self._found: dict[str, Correction | None] = {}
        self._trials: dict[frozenset[str], Trial] = {}
        self._keys = step_paths(run)
        self._passing_index = [_PassingIndex(p) for p in self.passing]

    # -- corrections -----------------------------------------------------------

    def correction_for(self, step_id: str, suggested: Any = None) -> Correction | None:
        """The correction to try for a step: fixer, passing run, then diagnoser; None if none differs."""
        if step_id in self._given:
            return self._given[step_id]
        if step_id in self._found:
            return self._found[step_id]
        step = self.steps[step_id]
        options: list[Correction] = []
        if self.fixer is not None:
            fixed = self.fixer(step, self.run)
            if fixed is not None:
                c = as_correction(fixed)
                options.append(c if isinstance(fixed, Correction) else Correction(c.output, source="fixer"))
        options.extend(self._from_passing(step_id))
        if suggested is not None:
            options.append(Correction(suggested, source="diagnoser"))
        found = next((c for c in options if _differs(c, step)), None)
        self._found[step_id] = found
        return found

    def _from_passing(self, step_id: str) -> list[Correction]:
        key = self._keys[step_id]
        request = fingerprint(self.steps[step_id].input)
        out = []
        for index in self._passing_index:
            sid = index.same(key, request)
            if sid is None:
                continue
            p = index.run
            s = p.step(sid)
            if not _returned(s, p):
                continue
            out.append(
                Correction(s.output, s.attributes.get(STATE_VALUES_ATTR), "passing-run", f"{p.run_id}/{sid}")
            )
        return out

    # -- trials ----------------------------------------------------------------------

    def trial(self, step_ids: Iterable[str], corrections: Mapping[str, Correction] | None = None) -> Trial:
        """Replay the run with these steps corrected (cached per set of steps)."""
        ids = frozenset(step_ids)
        cached = self._trials.get(ids)
        if cached is not None:
            return cached
        patch: dict[str, Correction] = {}
        for sid in sorted(ids):
            c = (corrections or {}).get(sid) or self.correction_for(sid)
            if c is None:
                t = Trial(ids, (), f"no correction for {sid}")
                self._trials[ids] = t
                return t
            patch[sid] = c
        results: list[ReplayResult] = []
        problem: str | None = None
        while len(results) < self.samples:
            if self.replays >= self.max_replays:
                problem = f"replay budget of {self.max_replays} exhausted"
                break
            self.replays += 1
            r = replay(
                self.agent,
                self.run,
                patch,
                mode=self.mode,
                store=self.store if not results else None,
                args=self.args,
                kwargs=self.kwargs,
                passing=self.passing,
                oracle=self.oracle,
            )
            results.append(r)
            if not r.complete:
                missed = sorted(set(patch) - r.applied)
                problem = (
                    r.stopped or f"the re-execution never reached {', '.join(missed)} (not a decorated step?)"
                )
                break
            if r.deterministic:
                break  # every boundary call was served: a second replay would be identical
        t = Trial(ids, tuple(results), problem)
        self._trials[ids] = t
        return t

    def flips(self, step_id: str) -> bool:
        """True when correcting this one step turns the failure into success in every replay."""
        return self.trial([step_id]).outcome == "pass"


def _returned(step: Step, run: Run) -> bool:
    """Whether the step returned its output: it ended ok, or its only error was one it
    reported and went on from (a warning, a handled fallback), not one it raised."""
    if step.status == "ok":
        return True
    if step.error is None:
        return False
    reported = {e.error_id for e in run.errors if e.attributes.get("reported")}
    return step.error.error_id in reported


def _differs(c: Correction, step: Step) -> bool:
    if canonical(c.output) != canonical(step.output) or step.status != "ok":
        return True
    if c.state is None:
        return False
    recorded = step.attributes.get(STATE_VALUES_ATTR)
    return recorded is None or canonical(c.state) != canonical(recorded)


def backward_slice(run: Run, step_id: str) -> set[str]:
    """The steps whose outputs could have reached this step (itself included)."""
    from trajdebug.analysis import DependencyGraph

    return DependencyGraph(run).backward_slice([step_id])


__all__ = ["Fixer", "Status", "Trial", "TrialOutcome", "Verifier", "backward_slice"]
