"""Verification of root-cause candidates by counterfactual replay.

A candidate step is *verified* when replacing its output with a correct one
turns the failure into success and no correction further upstream already
does: it is where the failure starts, not a step that passed it on.  That is
Cleve & Zeller's cause transition ("Locating causes of program failures",
ICSE 2005): along a dependency chain, correcting a step fixes the run from the
defect onwards and not before it, so the earliest fixing step is found by
binary search (`trajdebug.replay.dd.earliest`).

Corrections come, in order of preference, from a user-supplied fixer, from
the same step in a recorded passing run of the same agent, or from a
diagnoser's suggested correction.  Each test is a `Trial`: one replay when the
replay is deterministic (every boundary call served), else K replays; a
mixed result is ``unresolved``, with the counts (the third outcome of delta
debugging).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from trajdebug.model import Run, Step
from trajdebug.replay.cassette import STATE_VALUES_ATTR, canonical, fingerprint, step_paths
from trajdebug.replay.engine import (
    Correction,
    Mode,
    ReplayError,
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


# -- verdicts ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CandidateCheck:
    """The verdict on one root-cause candidate."""

    step_id: str
    """The candidate step."""
    name: str
    """Its name."""
    status: Status
    """``verified``, ``refuted`` or ``unresolved``."""
    reason: str
    """Why, in words."""
    correction: Correction | None = None
    """The correction tried."""
    trial: Trial | None = None
    """The replays of the candidate's correction."""
    upstream: str | None = None
    """An earlier step whose correction already removes the failure (for a refuted victim)."""

    @property
    def label(self) -> str:
        """``name#last6`` as the terminal shows steps."""
        return f"{self.name}#{self.step_id[-6:]}"

    def to_dict(self) -> dict[str, Any]:
        """The check as JSON data."""
        return {
            "step_id": self.step_id,
            "name": self.name,
            "status": self.status,
            "reason": self.reason,
            "correction": self.correction.to_dict() if self.correction else None,
            "trial": self.trial.to_dict() if self.trial else None,
            "upstream": self.upstream,
        }


_SOURCE_WORDS = {
    "passing-run": "the output from a passing run",
    "fixer": "the fixer's correction",
    "diagnoser": "the diagnoser's suggested correction",
    "user": "the given correction",
}


@dataclass(frozen=True, slots=True)
class Verification:
    """The verdicts on a run's root-cause candidates."""

    run_id: str
    """The failing run."""
    checks: tuple[CandidateCheck, ...]
    """One verdict per candidate, in the candidates' order."""
    replays: int
    """Replays run in all."""
    problem: str | None = None
    """Why nothing could be verified (no entry point arguments, ...), or None."""
    passing_run: str | None = field(default=None)
    """The passing run corrections were taken from, if any."""

    @property
    def verified(self) -> CandidateCheck | None:
        """The first verified candidate, if any."""
        return next((c for c in self.checks if c.status == "verified"), None)

    def summary(self) -> str:
        """One or two lines for the terminal."""
        if self.problem is not None:
            return f"not verified by replay: {self.problem}"
        v = self.verified
        if v is not None and v.trial is not None and v.correction is not None:
            t = v.trial
            first = t.replays[0]
            n = len(t.replays)
            line = (
                f"verified by replay: patching {v.label} with {_SOURCE_WORDS.get(v.correction.source, 'a correction')} "
                f"turns the failure into success ({n} replay{'s' if n != 1 else ''}: {first.counts()})"
            )
        elif self.checks:
            top = self.checks[0]
            line = f"not verified by replay: {top.label} {top.status}: {top.reason}"
        else:
            return "not verified by replay: no candidates"
        others = [c for c in self.checks if c is not v]
        if others:
            line += "\n  " + "; ".join(f"{c.label} {c.status}: {c.reason}" for c in others)
        return line

    def to_dict(self) -> dict[str, Any]:
        """The verification as JSON data."""
        v = self.verified
        return {
            "run_id": self.run_id,
            "verified": v.step_id if v else None,
            "replays": self.replays,
            "problem": self.problem,
            "passing_run": self.passing_run,
            "candidates": [c.to_dict() for c in self.checks],
        }


def _label(run: Run, sid: str) -> str:
    try:
        return f"{run.step(sid).name}#{sid[-6:]}"
    except KeyError:
        return sid


def backward_slice(run: Run, step_id: str) -> set[str]:
    """The steps whose outputs could have reached this step (itself included)."""
    try:
        from trajdebug.analysis import DependencyGraph

        return DependencyGraph(run).backward_slice([step_id])
    except Exception:  # noqa: BLE001 - a malformed graph: fall back to a plain walk
        steps = run.step_map()
        seen = {step_id}
        stack = [step_id]
        while stack:
            s = steps.get(stack.pop())
            if s is None:
                continue
            ups = [d.step_id for d in s.deps] + [c.step_id for c in run.steps if c.parent_id == s.step_id]
            for u in ups:
                if u not in seen:
                    seen.add(u)
                    stack.append(u)
        return seen


def check_candidate(v: Verifier, step_id: str, suggested: Any = None) -> CandidateCheck:
    """Verify one candidate: does its correction flip the failure, and is it the earliest that does?"""
    from trajdebug.replay.dd import earliest

    run = v.run
    name = run.step(step_id).name
    corr = v.correction_for(step_id, suggested)
    if corr is None:
        if v.passing and any(v._from_passing(step_id)):
            return CandidateCheck(step_id, name, "refuted", "a passing run produced the same output here")
        return CandidateCheck(
            step_id, name, "unresolved", "no correction available (no fixer, passing run or suggestion)"
        )
    t = v.trial([step_id])
    if t.outcome == "unresolved":
        if t.problem is not None:
            return CandidateCheck(step_id, name, "unresolved", t.problem, corr, t)
        return CandidateCheck(
            step_id,
            name,
            "unresolved",
            f"nondeterministic: {t.passed} of {len(t.replays)} replays pass (majority: {t.majority})",
            corr,
            t,
        )
    if t.outcome == "fail":
        return CandidateCheck(step_id, name, "refuted", "correcting it leaves the run failing", corr, t)
    # It flips.  Cause transition: is there an earlier step on its backward
    # slice whose correction already flips the run?
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    upstream = [
        sid
        for sid in backward_slice(run, step_id)
        if sid != step_id and pos[sid] < pos[step_id] and v.correction_for(sid) is not None
    ]
    upstream.sort(key=pos.__getitem__)
    if upstream:
        found = earliest([*upstream, step_id], v.flips, known_last=True)
        if found.index is not None and found.index < len(upstream):
            up = upstream[found.index]
            return CandidateCheck(
                step_id,
                name,
                "refuted",
                f"correcting {_label(run, up)} upstream already removes the failure: this step passes it on",
                corr,
                t,
                upstream=up,
            )
    n = len(t.replays)
    return CandidateCheck(
        step_id,
        name,
        "verified",
        f"its correction turns the failure into success ({n} replay{'s' if n != 1 else ''})",
        corr,
        t,
    )


def verify(
    agent: Callable[..., Any],
    run: Run,
    candidates: Sequence[Any],
    *,
    passing: Sequence[Run] = (),
    fixer: Fixer | None = None,
    top: int = 3,
    samples: int = 3,
    mode: Mode = "recorded",
    store: Any = None,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    oracle: Callable[[Run], bool] | None = None,
    max_replays: int = 60,
) -> Verification:
    """Verify the top-k root-cause candidates of a failing run by replay.

    Args:
        agent: The run's entry point.
        run: The failing run.
        candidates: Step ids, or candidates with ``.step_id`` (and optionally ``.correction``).
        passing: Recorded passing runs of the same agent (a source of corrections).
        fixer: A user-supplied fixer (tried first).
        top: How many candidates to check.
        samples: Replays per patch when live calls make a replay nondeterministic (K).
        mode: The replay mode.
        store: Where to save the replayed runs.
        args: The entry point's positional arguments (default: recorded in the run).
        kwargs: Its keyword arguments (default: recorded).
        oracle: ``oracle(run) -> True`` when a run passes.
        max_replays: Replay budget for the whole verification.
    """
    ids: list[tuple[str, Any]] = []
    for c in list(candidates)[:top]:
        sid = c if isinstance(c, str) else c.step_id
        ids.append((sid, None if isinstance(c, str) else getattr(c, "correction", None)))
    try:
        v = Verifier(
            agent,
            run,
            passing=passing,
            fixer=fixer,
            samples=samples,
            mode=mode,
            store=store,
            args=args,
            kwargs=kwargs,
            oracle=oracle,
            max_replays=max_replays,
        )
    except ReplayError as exc:
        return Verification(run.run_id, (), 0, str(exc))
    checks = tuple(check_candidate(v, sid, suggested) for sid, suggested in ids if sid in v.steps)
    return Verification(run.run_id, checks, v.replays, None, passing[0].run_id if passing else None)


def verify_demo(
    run: Run, analysis: Any, *, store: Any = None, top: int = 3, samples: int = 1
) -> Verification:
    """Verify the demo run's root-cause candidates by replay (``trajdebug demo`` calls this).

    The corrections come from a passing run of the same agent: the demo agent
    run without its fault, recorded (into ``store`` too) with the values its
    state steps write.  The demo's LLM is a deterministic scripted stand-in, so
    one replay per patch decides (``samples=1``).

    Args:
        run: The failing demo run.
        analysis: Its analysis (``.root_causes``: candidates with ``.step_id``).
        store: Where to save the passing run and the replays.
        top: How many candidates to check.
        samples: Replays per patch with live calls.
    """
    from trajdebug.demo import QUESTION, demo_agent
    from trajdebug.replay.engine import ENTRY_KEY, record

    md = run.metadata
    entry = md.get(ENTRY_KEY)
    if isinstance(entry, Mapping) and isinstance(entry.get("kwargs"), Mapping):
        kwargs = dict(entry["kwargs"])
    else:
        db = md.get("sqlite_db")
        if not isinstance(db, str):
            return Verification(run.run_id, (), 0, "the run is not a demo run (no sqlite_db in its metadata)")
        fault = md.get("fault")
        kwargs = {
            "question": md.get("task") or QUESTION,
            "db": db,
            "fault": fault.get("name") if isinstance(fault, Mapping) else None,
        }
    passing = record(
        demo_agent,
        kwargs={**kwargs, "fault": None},
        name=run.name,
        store=store,
        metadata={"agent": md.get("agent"), "reference_for": run.run_id},
    )
    if passing.outcome != "success":
        return Verification(run.run_id, (), 0, "the demo agent without its fault did not pass")
    return verify(
        demo_agent,
        run,
        list(getattr(analysis, "root_causes", analysis)),
        passing=[passing],
        top=top,
        samples=samples,
        store=store,
        kwargs=kwargs,
    )


__all__ = [
    "CandidateCheck",
    "Fixer",
    "Status",
    "Trial",
    "TrialOutcome",
    "Verification",
    "Verifier",
    "backward_slice",
    "check_candidate",
    "verify",
    "verify_demo",
]
