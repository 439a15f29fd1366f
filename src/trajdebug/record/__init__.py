"""The recording SDK: runs, steps, dependencies, errors, retries, propagation.

Everything here is re-exported at the top of the package (``trajdebug.run``,
``trajdebug.step``, ...).

Layout (each module imports only those above it in this list, so there is
no import cycle): ``config``, ``context`` (context variables, the active
runs), ``errorlog``, ``errors``, ``decorate``, ``recorder`` (steps),
``edges``, ``retry``, ``contracts``, ``state``, ``env``, ``tracking``
(writer-side encoding), ``sinks``, ``writer`` (the background thread),
``runs`` (runs), ``propagation``; production recording: ``rollout``, ``sampling``,
``summary``, ``payloads``, ``timeouts``, ``hooks``.
"""

from __future__ import annotations

from trajdebug.record.config import CONFIG, Config, configure
from trajdebug.record.edges import branch, traced
from trajdebug.record.env import environment_snapshot, uses_env
from trajdebug.record.expectations import expect
from trajdebug.record.hooks import CriticalError, Hook, on_critical
from trajdebug.record.propagation import ContextThreadPoolExecutor, extract, inject, wrap
from trajdebug.record.recorder import RecorderWarning, StepHandle, StopRun, current_run, current_step, step
from trajdebug.record.retry import retry, retry_call
from trajdebug.record.runs import RunHandle, run
from trajdebug.record.sinks import JsonlSink, MemorySink, Sink, StoreSink
from trajdebug.record.state import RunState, reads, writes
from trajdebug.record.timeouts import ToolTimeout
from trajdebug.record.writer import flush
from trajdebug.schema import KindWarning


__all__ = [
    "CONFIG",
    "Config",
    "ContextThreadPoolExecutor",
    "CriticalError",
    "Hook",
    "JsonlSink",
    "KindWarning",
    "MemorySink",
    "RecorderWarning",
    "RunHandle",
    "RunState",
    "Sink",
    "StepHandle",
    "StopRun",
    "StoreSink",
    "ToolTimeout",
    "branch",
    "configure",
    "current_run",
    "current_step",
    "environment_snapshot",
    "expect",
    "extract",
    "flush",
    "inject",
    "on_critical",
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
