"""Carrying the run across threads, executors and processes.

Threads started by hand and ``ThreadPoolExecutor`` workers do not inherit
context variables (asyncio tasks do), so steps recorded there would lose
their run and parent.  `wrap` and `ContextThreadPoolExecutor` bind the
caller's context.  (A step that still ends up without a context joins the
active run, marked ``context_lost``: see `trajdebug.record.context.orphan_run`.)

Across processes and services, `inject` writes the run and the parent step
into a W3C ``traceparent`` header, and `extract` in the callee joins that run:
its steps and errors land in the same run, under the calling step.

Where the callee writes is its own business, never the caller's: headers
carry no paths, and `extract` ignores a ``trajdebug-sink`` header unless the
callee allows that target explicitly (``allow_sinks``).  A child process the
agent starts itself gets the sink through its environment instead
(``inject(env=True)`` sets ``TRAJDEBUG_SINK``, which the child reads from its
own ``os.environ``, like ``TRAJDEBUG_STORE``).  A callee in the same process
(a thread joined by headers) writes through the caller's sinks.
"""

from __future__ import annotations

import contextvars
import fnmatch
import functools
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from trajdebug.record import context as _ctx
from trajdebug.record import recorder as rec
from trajdebug.record.config import CONFIG
from trajdebug.record.context import _STEP
from trajdebug.record.runs import RunHandle, _NoopRun
from trajdebug.record.sinks import JsonlSink, Sink, StoreSink


T = TypeVar("T")
log = logging.getLogger("trajdebug")

TRACEPARENT = "traceparent"
SINK_HEADER = "trajdebug-sink"
SINK_ENV = "TRAJDEBUG_SINK"
_TP = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$")
_HEX32 = re.compile(r"^[0-9a-f]{32}$")


def wrap(fn: Callable[..., T]) -> Callable[..., T]:
    """Bind ``fn`` to the current context (run and step) for another thread."""
    ctx = contextvars.copy_context()

    @functools.wraps(fn)
    def bound(*args: Any, **kwargs: Any) -> T:
        return ctx.run(fn, *args, **kwargs)

    return bound


class ContextThreadPoolExecutor(ThreadPoolExecutor):
    """A ``ThreadPoolExecutor`` whose tasks run in the submitter's context (run, parent step)."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        ctx = contextvars.copy_context()
        return super().submit(ctx.run, fn, *args, **kwargs)


def root_span_id(run_id: str) -> str:
    """The span id `inject` sends when no step is current: the run's own root (never all zeros).

    W3C Trace Context forbids an all-zero parent id; `extract` reads this id back
    as "no parent step".
    """
    low = run_id[16:32] if len(run_id) >= 32 else ""
    return low if re.fullmatch(r"[0-9a-f]{16}", low) and low != "0" * 16 else "0000000000000001"


def _trace_id(run_id: str) -> str:
    if _HEX32.match(run_id) and run_id != "0" * 32:
        return run_id
    import hashlib

    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def _sink_target(run: RunHandle) -> str | None:
    for sink in run._sinks:
        if isinstance(sink, StoreSink):
            return f"sqlite:{Path(sink.path).resolve()}"
        if isinstance(sink, JsonlSink):
            return f"jsonl:{sink.path.resolve()}"
    return None


def inject(headers: MutableMapping[str, str] | None = None, *, env: bool = False) -> MutableMapping[str, str]:
    """Write the current run and step into ``headers`` (for a sub-agent elsewhere) and return them.

    ``traceparent`` is ``00-<run id>-<step id>-01`` (W3C Trace Context); with no
    current step the parent is the run's root id (`root_span_id`), never zeros.
    Headers never carry a local path.  With ``env=True`` the names are
    environment variables (``TRACEPARENT``) and, for a child process the agent
    starts itself, ``TRAJDEBUG_SINK`` names the store or file to write to.
    Outside a recorded run ``headers`` is returned unchanged.

    Example:
        ```python
        env = {**os.environ, **trajdebug.inject(env=True)}
        subprocess.run([sys.executable, "sub_agent.py"], env=env)
        # in sub_agent.py:
        with trajdebug.extract(os.environ):
            ...
        ```

    Args:
        headers: The mapping to write into (a new dict by default).
        env: Use environment-variable names, and add the sink for a child process.
    """
    headers = {} if headers is None else headers
    run = rec.current_run()
    if run is None or not getattr(run, "_active", False):
        return headers
    step = _STEP.get()
    step_id = step.id if step is not None else ""
    if not re.fullmatch(r"[0-9a-f]{16}", step_id) or step_id == "0" * 16:
        step_id = root_span_id(run.run_id)
    headers[TRACEPARENT.upper() if env else TRACEPARENT] = f"00-{_trace_id(run.run_id)}-{step_id}-01"
    if env:
        target = _sink_target(run)
        if target is not None:
            headers[SINK_ENV] = target
    return headers


def _env_name(header: str) -> str:
    return header.upper().replace("-", "_")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by name, also under its environment-variable spelling (any case, ``_`` for ``-``)."""
    value = headers.get(name)
    if value is not None:
        return value
    want = _env_name(name)
    for key, value in headers.items():
        if isinstance(key, str) and _env_name(key) == want:
            return value
    return None


def _allowed(target: str, patterns: Sequence[str]) -> bool:
    _, _, path = target.partition(":")
    if not path:
        return False
    resolved = str(Path(path).resolve())
    return any(fnmatch.fnmatchcase(resolved, str(Path(p).expanduser())) for p in patterns)


class _Borrowed:
    """A sink of the caller's run, shared by a callee joined in the same process (never closed by it)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.path = getattr(sink, "path", None)
        self.takes_lines = getattr(sink, "takes_lines", False) is True

    def write(self, records: Sequence[Mapping[str, Any]]) -> int | None:
        return self.sink.write(records)

    def close(self) -> None:
        return None


@contextmanager
def extract(
    headers: Mapping[str, str], *, name: str = "sub-agent", allow_sinks: Iterable[str] = ()
) -> Iterator[RunHandle]:
    """Join the run described by ``headers`` (from `inject`) for the duration of the block.

    Steps recorded inside become children of the injecting step, in the same
    run.  ``headers`` may be HTTP-style headers or an environment
    (``os.environ``): names match in any case, with ``_`` for ``-``.  An
    exception leaving the block is recorded as its error *propagating* to the
    calling step (the caller decides whether the run fails), and is re-raised.

    Without a ``traceparent``, or with one that is not valid W3C Trace Context
    (logged as a warning, never raised: the header comes from the caller), the
    block runs unrecorded.

    Where the steps go: the caller's own sinks when the caller's run is active in
    this process; else ``TRAJDEBUG_SINK`` from this process's environment (set by
    ``inject(env=True)`` for a child process); else a ``trajdebug-sink`` header,
    only if its target matches one of ``allow_sinks`` (fnmatch patterns of
    resolved paths: an explicit opt-in, since headers come from the caller);
    else this process's default store.
    """
    tp = _header(headers, TRACEPARENT)
    if tp is None or not CONFIG.enabled:
        yield _NoopRun(name)
        return
    m = _TP.match(str(tp).strip().lower())
    if m is None or m.group(1) == "ff" or m.group(2) == "0" * 32 or m.group(3) == "0" * 16:
        log.warning(
            "trajdebug: ignoring a malformed %s header %r (expected 00-<32 hex>-<16 hex>-<2 hex>, not zeros);"
            " the block runs unrecorded",
            TRACEPARENT,
            str(tp)[:100],
        )
        yield _NoopRun(name)
        return
    run_id, parent = m.group(2), m.group(3)
    kwargs: dict[str, Any] = {}
    local = next((r for r in list(_ctx.ACTIVE) if r.run_id == run_id and not r._joined), None)
    if local is not None:
        kwargs["sinks"] = [_Borrowed(s) for s in local._sinks]
    else:
        target = os.environ.get(SINK_ENV) or ""
        if not target and allow_sinks:
            offered = _header(headers, SINK_HEADER) or ""
            if _allowed(offered, list(allow_sinks)):
                target = offered
            elif offered:
                log.warning("trajdebug: ignoring %s %r: not in allow_sinks", SINK_HEADER, offered[:200])
        kind, _, path = target.partition(":")
        if kind == "sqlite" and path:
            kwargs["store"] = path
        elif kind == "jsonl" and path:
            kwargs["path"] = path
    handle = RunHandle(
        name,
        run_id=run_id,
        parent=None if parent == root_span_id(run_id) else parent,
        joined=True,
        **kwargs,
    )
    with handle:
        yield handle


__all__ = [
    "SINK_ENV",
    "SINK_HEADER",
    "TRACEPARENT",
    "ContextThreadPoolExecutor",
    "extract",
    "inject",
    "root_span_id",
    "wrap",
]
