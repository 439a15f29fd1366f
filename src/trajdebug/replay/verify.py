"""Verification of root-cause candidates by counterfactual replay.

A candidate step is *verified* when replacing its output with a correct one
turns the failure into success and no correction further upstream already
does: it is where the failure starts, not a step that passed it on.  That is
Cleve & Zeller's cause transition ("Locating causes of program failures",
ICSE 2005): along a dependency chain, correcting a step fixes the run from the
defect onwards and not before it, so the earliest fixing step is found by
binary search (`trajdebug.replay.dd.earliest`).

Corrections come, in order of preference, from a user-supplied fixer, from
the same step in a recorded passing run of the same agent (`verify_analyses`,
what ``trajdebug analyze --verify`` runs, takes only one of the same input:
the same recorded entry arguments), or from a diagnoser's suggested
correction.  Each test is a `Trial`: one replay when the
replay is deterministic (every boundary call served), else K replays; a
mixed result is ``unresolved``, with the counts (the third outcome of delta
debugging).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from trajdebug.core.model import Run
from trajdebug.replay.cassette import canonical
from trajdebug.replay.dd import earliest
from trajdebug.replay.engine import ENTRY_KEY, Correction, Mode, ReplayError
from trajdebug.replay.verifier import Fixer, Status, Trial, Verifier, backward_slice


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
            named = [v]
        elif self.checks:
            top = self.checks[0]
            named = [c for c in self.checks if (c.status, c.reason) == (top.status, top.reason)]
            line = f"not verified by replay: {', '.join(c.label for c in named)} {top.status}: {top.reason}"
        else:
            return "not verified by replay: no candidates"
        # Candidates with the same verdict and reason are named together (a missing passing run
        # of the same input is one reason for all of them).
        groups: dict[tuple[str, str], list[str]] = {}
        for c in self.checks:
            if not any(c is n for n in named):
                groups.setdefault((c.status, c.reason), []).append(c.label)
        if groups:
            line += "\n  " + "; ".join(f"{', '.join(labels)} {st}: {why}" for (st, why), labels in groups.items())
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


def check_candidate(v: Verifier, step_id: str, suggested: Any = None) -> CandidateCheck:
    """Verify one candidate: does its correction flip the failure, and is it the earliest that does?"""
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


def verify_analyses(
    analyses: Sequence[Any],
    pool: Sequence[Run],
    *,
    entry: Callable[..., Any] | str,
    fixer: Callable[..., Any] | str | None = None,
    samples: int = 3,
    top: int = 3,
    store: Any = None,
) -> list[Verification | None]:
    """Verify each failed run's top candidates by replay; one `Verification` (or None) per analysis.

    Corrections come from the fixer, else from a passing run of the same agent
    *on the same input* in ``pool`` (a run recorded as the failing run's
    reference first, then the most recent passing run whose recorded entry
    arguments equal the failing run's), else from the diagnosers' suggestions.
    A passing run of another input took another path for another question: its
    outputs are no corrections of this run (its first model answer "fixes" any
    failure, and would refute the true cause downstream).  Without a passing run
    of the same input, a candidate no fixer or suggestion covers is
    ``unresolved``, its reason saying so, never refuted.

    Args:
        analyses: `trajdebug.analysis.Analysis` objects (``.run``, ``.root_causes``).
        pool: The runs of the source (passing runs are looked up there).
        entry: The agent's entry point, or ``"module:function"``.
        fixer: A fixer ``fixer(step, run) -> corrected output``, or ``"module:function"``.
        samples: Replays per patch with live calls.
        top: Candidates per run.
        store: Where to save the replays (a `trajdebug.Store` or a path), if anywhere.

    Raises:
        ValueError: ``entry`` or ``fixer`` is a spec that does not import.
    """
    from trajdebug.analysis import references
    from trajdebug.core.plugins import load_callable

    agent = load_callable(entry) if isinstance(entry, str) else entry
    fix = load_callable(fixer, "fixer") if isinstance(fixer, str) else fixer
    out: list[Verification | None] = []
    for a in analyses:
        run = a.run
        if run.outcome != "failure" or not a.root_causes:
            out.append(None)
            continue
        own = [r for r in pool if r.metadata.get("reference_for") == run.run_id and r.outcome == "success"]
        others = list(references(run, pool))
        key = entry_key(run)
        same = [r for r in others if key is not None and entry_key(r) == key]
        passing = (own or same)[:1]
        v = verify(agent, run, a.root_causes, passing=passing, fixer=fix, top=top, samples=samples, store=store)
        if not passing and others:
            v = _no_same_input(v, len(others))
        out.append(v)
    return out


def entry_key(run: Run) -> str | None:
    """A run's recorded entry arguments (metadata ``entry``) as one comparable string; None without them."""
    entry = run.metadata.get(ENTRY_KEY)
    if not isinstance(entry, Mapping):
        return None
    return canonical({"args": entry.get("args") or [], "kwargs": entry.get("kwargs") or {}})


def _no_same_input(v: Verification, others: int) -> Verification:
    """The verdicts when passing runs exist but none of the same input: each candidate that had no
    other correction says it could not be verified, and why."""
    why = (
        f"could not verify: no passing run of the same input ({others} passing run{'s' if others != 1 else ''}"
        " of other entry arguments; record a passing run of the same arguments, e.g. the fixed agent)"
    )
    checks = tuple(
        replace(c, reason=why) if c.status == "unresolved" and c.correction is None else c for c in v.checks
    )
    return replace(v, checks=checks)


__all__ = [
    "verify_analyses",
    "entry_key",
    "CandidateCheck",
    "Verification",
    "check_candidate",
    "verify",
]
