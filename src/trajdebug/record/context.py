"""The recorder's context: which run and step are current, the clock, the step counter.

The bottom of the recording SDK: every other module of `trajdebug.record`
may import this one, and it imports none of them, so the step handle
(`trajdebug.record.steps`), the run handle (`trajdebug.record.runs`),
the error lifecycle (`trajdebug.record.exceptions`) and the decorator
(`trajdebug.record.decorate`) share state without importing each other in a
circle.

It also keeps the process-wide list of active runs.  A step started in a
thread that did not inherit the caller's context (a plain
``ThreadPoolExecutor`` worker, ``loop.run_in_executor``) finds no run in its
context variables; rather than dropping it silently, the recorder attaches it
to the one active run (or, when several are active, to the most recent one),
marks it and counts it (`orphan_run`).
"""

from __future__ import annotations

import itertools
import time
from _thread import allocate_lock
from contextvars import ContextVar


# This module is on `import trajdebug`'s path: `typing` (and the `Protocol` below) are for the type
# checker only, and the lock is `threading.Lock` itself without importing `threading`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Protocol

    from trajdebug.record.runs import RunHandle
    from trajdebug.record.steps import StepHandle

    class ReplayControl(Protocol):
        """**Protocol:** what a decorated step asks the active replay (`trajdebug.replay`)."""

        def before(self, handle: StepHandle) -> tuple[bool, Any]:
            """Whether the recorded response is served for this call, and the response (it may raise)."""

        def after(self, handle: StepHandle, value: Any) -> None:
            """The call ran live and returned ``value``."""


_RUN: ContextVar[RunHandle | None] = ContextVar("trajdebug_run", default=None)
"""The run being recorded in this context (a `trajdebug.record.runs.RunHandle`)."""
_STEP: ContextVar[StepHandle | RemoteParent | None] = ContextVar("trajdebug_step", default=None)
"""The step being recorded in this context (a step handle or a `RemoteParent`)."""
_BRANCH: ContextVar[tuple[str, ...]] = ContextVar("trajdebug_branch", default=())
"""The decision steps of the `trajdebug.branch` scopes open in this context."""
_ATTEMPT: ContextVar[tuple[int, str | None, str | None] | None] = ContextVar("trajdebug_attempt", default=None)
"""The retry attempt about to start: (number, the attempt it retries, why)."""
_REPLAY: ContextVar[ReplayControl | None] = ContextVar("trajdebug_replay", default=None)
"""The active replay controller (`trajdebug.replay`), consulted by decorated steps:
``before(handle) -> (served, value)`` (it may raise a recorded exception) and
``after(handle, value)``; it decides, per step, whether to serve the recorded
response or let the function run live."""
_HOST: ContextVar[tuple[RunHandle, bool] | None] = ContextVar("trajdebug_host", default=None)
"""The run `trajdebug.replay` records or replays an entry point into, as ``(run handle, whether a
joining run names it)``: a ``trajdebug.run(...)`` the entry point opens joins it (`trajdebug.record.runs`)."""

# The clock and the step counter.  `trajdebug.record.steps` keeps
# module-global aliases of both for its hot path; `trajdebug.testing.deterministic`
# swaps the two together.
_now: Callable[[], int] = time.time_ns
_next_seq: Callable[[], int] = itertools.count(1).__next__


def now() -> int:
    """The recorder's clock (nanoseconds since the epoch)."""
    return _now()


class RemoteParent:
    """A parent step in another thread or process (from `trajdebug.extract`)."""

    __slots__ = ("id",)

    _run: None = None
    """A remote parent belongs to no run of this process (a step handle's ``_run`` is its run)."""

    def __init__(self, step_id: str) -> None:
        self.id = step_id


# -- active runs (for steps that lost their context) --------------------------------

ACTIVE: list[RunHandle] = []
"""The runs being recorded in this process, oldest first (empty most of the time)."""
_active_lock = allocate_lock()


def run_started(run: RunHandle) -> None:
    """A run began recording in this process."""
    with _active_lock:
        ACTIVE.append(run)


def run_ended(run: RunHandle) -> None:
    """A run stopped recording in this process."""
    with _active_lock:
        try:
            ACTIVE.remove(run)
        except ValueError:
            pass


def orphan_run() -> tuple[RunHandle, bool | None] | None:
    """The run a step without a run in its context should join, and whether that choice was ambiguous.

    A step whose context holds no run but whose enclosing step (in the same
    context) belongs to an active run joins that run, unmarked (``None``: the
    context was not lost, it merely lacks the run variable).  Otherwise, with
    exactly one active run in the process, that run (``False``: unambiguous);
    with several, the most recently started one (``True``: ambiguous).  None
    when no run is active.
    """
    if not ACTIVE:
        return None
    parent = _STEP.get()
    run: RunHandle | None = getattr(parent, "_run", None)
    if run is not None and getattr(run, "_active", False):
        return run, None
    with _active_lock:
        if not ACTIVE:
            return None
        return ACTIVE[-1], len(ACTIVE) > 1


__all__ = [
    "ACTIVE",
    "RemoteParent",
    "now",
    "orphan_run",
    "run_ended",
    "run_started",
]
