"""The error lifecycle as one state machine: an error, counted once, from ``occurred`` to its end.

Both floors above the core drive it: the recorder (`trajdebug.record.exceptions`) advances each
error while the agent runs, and the lifecycle analysis (`trajdebug.core.lifecycle.analyze`)
folds the recorded history of an error back into its state before adding the stages only
hindsight decides.  Keeping the transitions here is what makes the two agree: a live hook
(`trajdebug.on_critical`) and ``trajdebug errors`` on the finished run read the same stages.

The states (`trajdebug.core.model.Stage`)::

    occurred ──► propagated ──┬──► recovered   a later attempt of the failed operation succeeded
        │            ▲  │     ├──► ignored     the agent replaced the failure by a fallback
        │            └──┘     └──► failed      it escaped the run, or reached the run's failure
        └─────────────────────────► (any of the three ends, directly)

* One exception is one error: it enters ``occurred`` once, where it first left a step; the
  same exception object leaving an enclosing step is ``propagated``, never a new error.
* Retries are attempts, not new errors of a new operation: an attempt that succeeds ends the
  open errors of the attempts it retried ``recovered``.
* A terminal stage ends the error.  A later ``propagated`` is kept in the history (the path
  the exception took) but does not reopen it; a later terminal stage replaces the earlier
  one (a fallback value re-raised out of the run ends ``failed``), so the last end wins.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

from trajdebug.core.model import Stage, StageChange


OCCURRED: Stage = "occurred"
PROPAGATED: Stage = "propagated"
RECOVERED: Stage = "recovered"
IGNORED: Stage = "ignored"
FAILED: Stage = "failed"

TERMINAL: frozenset[str] = frozenset({RECOVERED, IGNORED, FAILED})
"""Stages that end an error's lifecycle."""


def advance(state: Stage | None, stage: Stage) -> Stage:
    """The error's state after it enters ``stage`` (``state`` None: the error is new).

    ``occurred`` starts an error and never moves an existing one back; ``propagated``
    moves an open error along its path and leaves an ended one as it was; a terminal
    stage always wins, the last one standing.
    """
    if stage in TERMINAL:
        return stage
    if state is None:
        return stage
    if stage == PROPAGATED and state not in TERMINAL:
        return PROPAGATED
    return state


def is_open(state: Stage | None) -> bool:
    """Whether an error in ``state`` has not ended (an error never seen counts as open)."""
    return state not in TERMINAL


@dataclass(frozen=True, slots=True)
class Folded:
    """An error's recorded history read back: where it is, where it went, where it was ended."""

    stage: Stage
    """The state after every recorded stage (`advance` over the history)."""
    path: tuple[str, ...]
    """The steps the exception left, its origin first (steps not in the run left out)."""
    ended: tuple[str, ...]
    """The steps where it was ``recovered`` or ``ignored``: a fallback whose value stood in for it, or a later
    attempt that answered (whose value the lifecycle analysis does not count as the error's)."""


def fold(origin: str, changes: Iterable[StageChange], steps: Collection[str]) -> Folded:
    """Read an error's recorded stages back into its state, its path and the steps that ended it.

    Args:
        origin: The step where the error occurred.
        changes: Its recorded stage changes, oldest first.
        steps: The ids of the run's steps (a stage at a step not in the run moves no path).
    """
    path = [origin] if origin in steps else []
    ended: list[str] = []
    state: Stage = OCCURRED
    for c in changes:
        state = advance(state, c.stage)
        sid = c.step_id
        if sid is None or sid not in steps:
            continue
        if c.stage == PROPAGATED:
            if sid not in path:
                path.append(sid)
        elif c.stage in TERMINAL and c.stage != FAILED:
            # A failure has no replacing value; recovered and ignored hand one on.
            ended.append(sid)
    return Folded(state, tuple(path), tuple(ended))


__all__ = [
    "FAILED",
    "IGNORED",
    "OCCURRED",
    "PROPAGATED",
    "RECOVERED",
    "TERMINAL",
    "Folded",
    "advance",
    "fold",
    "is_open",
]
