"""The failures found, read together: an exception's repeats grouped, and the steps the failure cut short.

The detectors (`_detect.py`) report each sign of failure on its own, so one exception re-raised along its
propagation path (a sub-agent, the tool that ran it, its caller) is found once per step; `group_failures`
counts it once, under the step where it occurred.  And a step that ran beside the failing one and ended with
nothing after the error was raised was cancelled as the failure unwound (`cut_short`): its missing output is
the failure's effect, never its cause.  Both read the failures found, after detection.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._detect import Failure, detect
from trajdebug.core.model import Run, Step


def cut_short(step: Step, steps: Mapping[str, Step], failures: Iterable[Failure]) -> bool:
    """Whether a step returned nothing because the run's failure interrupted it, not by itself.

    A step that ran beside the failing one (parallel tool calls, asyncio tasks, threads) and ended, with no
    output and no error of its own, after the error that failed the run was raised was cancelled while the
    failure unwound: its missing output is the failure's effect, never its cause.  Only the steps enclosing
    the error run on after it in a sequential run, so those are left out.
    """
    if step.status != "ok" or step.end_ns is None or not content.is_empty(step.output):
        return False
    raised = [steps[f.step_id] for f in failures if f.step_id in steps]
    err = min((s for s in raised if s.status == "error" and s.end_ns is not None), key=lambda s: s.end_ns or 0, default=None)
    if err is None or step.end_ns <= (err.end_ns or 0) or step.step_id == err.step_id:
        return False
    parent = err.parent_id
    while parent is not None and parent in steps:
        if parent == step.step_id:
            return False  # it encloses the error: it ends after it in any run
        parent = steps[parent].parent_id
    return True


def cut_short_steps(run: Run, failures: Iterable[Failure] | None = None) -> frozenset[str]:
    """The steps of a run that `cut_short` reads as interrupted by its failure (``failures``: the
    detectors' findings, found here when not given), for the views that mark them (`trajdebug show`).

    A run where no step ended with an error has none: only a raised error cancels its siblings."""
    if not any(s.status == "error" for s in run.steps):
        return frozenset()
    steps = run.step_map()
    found = [f for f in (detect(run) if failures is None else failures) if f.step_id in steps]
    # `cut_short` reads only the first error to end among the failures: found once, not once per step.
    raised = [f for f in found if steps[f.step_id].status == "error" and steps[f.step_id].end_ns is not None]
    first = min(raised, key=lambda f: steps[f.step_id].end_ns or 0, default=None)
    if first is None:
        return frozenset()
    return frozenset(s.step_id for s in run.steps if cut_short(s, steps, (first,)))


@dataclass(frozen=True, slots=True)
class FailureGroup:
    """One failure with the failures that only repeat it: an exception counted once, with the steps it
    propagated through (a sub-agent, the tool that ran it, its caller each re-reporting it)."""

    failure: Failure
    """Where it occurred (the innermost step of the propagation)."""
    propagated: tuple[Failure, ...] = ()
    """The same exception re-reported further out, innermost first."""

    def to_dict(self, names: Mapping[str, str]) -> dict[str, Any]:
        """JSON data: the failure's own fields and name, its propagation path as steps with their message."""
        return {
            **self.failure.to_dict(),
            "name": names.get(self.failure.step_id),
            "propagated": [
                {"step_id": f.step_id, "name": names.get(f.step_id), "message": f.message} for f in self.propagated
            ],
        }


def group_failures(failures: Sequence[Failure], steps: Mapping[str, Step]) -> list[FailureGroup]:
    """The failures with each exception's propagations under the step where it occurred.

    Two step errors are one exception when their steps carry the same error id (the recorder and the
    importers give one id to an error along its propagation path), or, without ids, when one step
    encloses the other and its message repeats the inner one's (a wrapper re-raising what it caught).
    The groups keep the order of the failures where they occurred; every other failure stands alone."""
    errs = [f for f in failures if f.detector == "step-error" and f.step_id in steps]

    def key(f: Failure) -> tuple[int, int]:
        s = steps[f.step_id]
        return (s.end_ns if s.end_ns is not None else 1 << 62, -_depth(s, steps))

    head: dict[int, Failure] = {}  # id() of a failure -> the failure it repeats
    by_error: dict[str, Failure] = {}
    loose: list[Failure] = []
    for f in sorted(errs, key=key):  # the innermost (first ended) first: it is where the error occurred
        err = steps[f.step_id].error
        eid = err.error_id if err is not None else None
        if eid is None:
            loose.append(f)
        elif eid in by_error:
            head[id(f)] = by_error[eid]
        else:
            by_error[eid] = f
    if len(loose) <= MAX_LOOSE:
        for i, f in enumerate(loose):
            if id(f) not in head:
                for g in loose[i + 1 :]:
                    if id(g) not in head and _wraps(steps[g.step_id], steps[f.step_id], steps):
                        head[id(g)] = f
    under: dict[int, list[Failure]] = {}
    for g in sorted(errs, key=key):
        if id(g) in head:
            under.setdefault(id(head[id(g)]), []).append(g)
    return [FailureGroup(f, tuple(under.get(id(f), ()))) for f in failures if id(f) not in head]


MAX_LOOSE = 200
"""Step errors without ids past which `group_failures` stops pairing them (a quadratic check): each stands alone."""


def _depth(step: Step, steps: Mapping[str, Step]) -> int:
    depth, seen, cur = 0, {step.step_id}, step.parent_id
    while cur is not None and cur in steps and cur not in seen:
        seen.add(cur)
        depth, cur = depth + 1, steps[cur].parent_id
    return depth


def _wraps(outer: Step, inner: Step, steps: Mapping[str, Step]) -> bool:
    """Whether ``outer``'s error (no id) is ``inner``'s re-raised: ``outer`` encloses ``inner`` and its
    message contains the inner one's."""
    a, b = outer.error, inner.error
    if a is None or b is None or not b.message or b.message not in a.message:
        return False
    seen, cur = {inner.step_id}, inner.parent_id
    while cur is not None and cur in steps and cur not in seen:
        if cur == outer.step_id:
            return True
        seen.add(cur)
        cur = steps[cur].parent_id
    return False


__all__ = [
    "cut_short",
    "cut_short_steps",
    "FailureGroup",
    "group_failures",
    "MAX_LOOSE",
]
