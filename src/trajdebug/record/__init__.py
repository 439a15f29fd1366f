"""The recording SDK: runs, steps, dependencies, errors, retries, propagation.

Everything here is re-exported at the top of the package (``trajdebug.run``,
``trajdebug.step``, ...).

Layout (each module imports only those above it in this list, so there is
no import cycle): ``config``, ``context`` (context variables, the active
runs), ``errorlog``, ``exceptions``, ``decorate``, ``steps`` (the step
handle), ``recorder`` (``step()``), ``edges``, ``retry``, ``contracts``,
``state``, ``env``, ``sinks``, ``account`` (what a run lost), ``encoding``,
``registry`` and ``tracking`` (writer-side encoding: values, identity
tracking, a step's records), ``writer`` (the background thread),
``processors`` (summary mode, tail sampling), ``export`` (the writer's side of
a run), ``runs`` (the agent's side), ``propagation``; production recording:
``rollout``, ``sampling``, ``summary``, ``timeouts``, ``hooks``.

The recorder's three roles, as in the OpenTelemetry SDK: the run and its steps
(``runs``, ``steps``, ``recorder``), processors (``processors``), sinks (``sinks``).
"""

from __future__ import annotations


TYPE_CHECKING = False  # `typing` is for the type checker only: `import trajdebug` imports this package
if TYPE_CHECKING:
    from typing import Any

    from trajdebug.core.schema import KindWarning
    from trajdebug.record.config import CONFIG, Config, configure
    from trajdebug.record.edges import branch, traced
    from trajdebug.record.env import environment_snapshot, uses_env
    from trajdebug.record.expectations import expect
    from trajdebug.record.hooks import CriticalError, Hook, on_critical
    from trajdebug.record.propagation import ContextThreadPoolExecutor, extract, inject, wrap
    from trajdebug.record.recorder import (
        RecorderWarning,
        StepHandle,
        StopRun,
        current_run,
        current_step,
        step,
    )
    from trajdebug.record.retry import retry, retry_call
    from trajdebug.record.runs import RunHandle, run
    from trajdebug.record.sinks import JsonlSink, MemorySink, Sink, StoreSink
    from trajdebug.record.state import RunState, reads, writes
    from trajdebug.record.timeouts import ToolTimeout
    from trajdebug.record.writer import flush


_WHERE: dict[str, str] = {
    "CONFIG": "trajdebug.record.config",
    "Config": "trajdebug.record.config",
    "configure": "trajdebug.record.config",
    "branch": "trajdebug.record.edges",
    "traced": "trajdebug.record.edges",
    "environment_snapshot": "trajdebug.record.env",
    "uses_env": "trajdebug.record.env",
    "expect": "trajdebug.record.expectations",
    "CriticalError": "trajdebug.record.hooks",
    "Hook": "trajdebug.record.hooks",
    "on_critical": "trajdebug.record.hooks",
    "ContextThreadPoolExecutor": "trajdebug.record.propagation",
    "extract": "trajdebug.record.propagation",
    "inject": "trajdebug.record.propagation",
    "wrap": "trajdebug.record.propagation",
    "RecorderWarning": "trajdebug.record.recorder",
    "StepHandle": "trajdebug.record.recorder",
    "StopRun": "trajdebug.record.recorder",
    "current_run": "trajdebug.record.recorder",
    "current_step": "trajdebug.record.recorder",
    "step": "trajdebug.record.recorder",
    "retry": "trajdebug.record.retry",
    "retry_call": "trajdebug.record.retry",
    "RunHandle": "trajdebug.record.runs",
    "run": "trajdebug.record.runs",
    "JsonlSink": "trajdebug.record.sinks",
    "MemorySink": "trajdebug.record.sinks",
    "Sink": "trajdebug.record.sinks",
    "StoreSink": "trajdebug.record.sinks",
    "RunState": "trajdebug.record.state",
    "reads": "trajdebug.record.state",
    "writes": "trajdebug.record.state",
    "ToolTimeout": "trajdebug.record.timeouts",
    "flush": "trajdebug.record.writer",
    "KindWarning": "trajdebug.core.schema",
}
"""Each public name's module: imported on first use (PEP 562), so ``import trajdebug`` loads only the
modules the step handle and its decorator import (`trajdebug.record.recorder`); the first ``run()`` loads
the rest of the recorder."""


def _module(name: str) -> Any:
    """The module ``name``, imported now if it was not (``__import__``: `importlib` itself costs
    start-up, and ``from trajdebug.record import config`` comes through `__getattr__`)."""
    import sys

    __import__(name)
    return sys.modules[name]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        try:  # a submodule not imported yet (``trajdebug.record.writer``)
            return _module(f"{__name__}.{name}")
        except ModuleNotFoundError:
            pass
        raise AttributeError(f"module 'trajdebug.record' has no attribute {name!r}")
    value = getattr(_module(module), name)
    globals()[name] = value
    return value


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
