"""The recording SDK: runs, steps, dependencies, errors, retries, propagation.

Everything here is re-exported at the top of the package (``trajdebug.run``,
``trajdebug.step``, ...).
"""

from __future__ import annotations

from trajdebug.record.config import CONFIG, Config, configure
from trajdebug.record.edges import branch, traced
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
