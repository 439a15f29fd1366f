"""The recording SDK: runs, steps, dependencies, errors, retries, propagation.

Everything here is re-exported at the top of the package (``trajdebug.run``,
``trajdebug.step``, ...).
"""

from __future__ import annotations

from typing import Any

from trajdebug.record.config import CONFIG, Config, configure
from trajdebug.record.env import environment_snapshot, uses_env
from trajdebug.record.propagation import ContextThreadPoolExecutor, extract, inject, wrap
from trajdebug.record.recorder import (
    RunHandle,
    StepHandle,
    current_run,
    current_step,
    run,
    step,
)
from trajdebug.record.retry import retry, retry_call
from trajdebug.record.sinks import JsonlSink, MemorySink, Sink, StoreSink
from trajdebug.record.state import RunState, reads, writes


def traced(value: Any, *, source: Any) -> Any:
    """Declare that ``value`` came from ``source`` (a step handle or id) across a boundary the
    recorder cannot see (a queue, a subprocess, the network); returns ``value``.

    When ``value`` later reaches a step's arguments, that step gets a ``declared``
    data edge from ``source``.
    """
    from trajdebug.record import recorder as rec

    run = rec.current_run()
    if run is None or not getattr(run, "_active", False):
        return value
    sid = source.id if hasattr(source, "id") else str(source)
    run._push(("trace", value, sid, 0))
    return value


class branch:
    """Steps started inside ``with trajdebug.branch(decision):`` get a ``control`` edge from the
    decision step (a handle or an id): the branch taken depends on it."""

    __slots__ = ("_id", "_token")

    def __init__(self, decision: Any) -> None:
        self._id = decision.id if hasattr(decision, "id") else str(decision)
        self._token: Any = None

    def __enter__(self) -> branch:
        from trajdebug.record import recorder as rec

        self._token = rec._BRANCH.set((*rec._BRANCH.get(), self._id))
        rec.scope_opened()
        return self

    def __exit__(self, *exc: Any) -> None:
        from trajdebug.record import recorder as rec

        rec._BRANCH.reset(self._token)
        rec.scope_closed()


__all__ = [
    "CONFIG",
    "Config",
    "ContextThreadPoolExecutor",
    "JsonlSink",
    "MemorySink",
    "RunHandle",
    "RunState",
    "Sink",
    "StepHandle",
    "StoreSink",
    "branch",
    "configure",
    "current_run",
    "current_step",
    "environment_snapshot",
    "extract",
    "inject",
    "reads",
    "retry",
    "retry_call",
    "run",
    "step",
    "traced",
    "uses_env",
    "wrap",
    "writes",
]
