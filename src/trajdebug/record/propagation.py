"""Carrying the run across threads, executors and processes.

Threads started by hand and ``ThreadPoolExecutor`` workers do not inherit
context variables (asyncio tasks do), so steps recorded there would lose their
run and parent.  `wrap` and `ContextThreadPoolExecutor` bind the caller's
context.  Across processes, `inject` writes the run and the parent step into a
header dict in the W3C ``traceparent`` layout (plus where to write), and
`extract` in the child joins that run: its steps and errors land in the same
run, under the calling step.
"""

from __future__ import annotations

import contextvars
import functools
import re
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from trajdebug.record import recorder as rec
from trajdebug.record.config import CONFIG
from trajdebug.record.runs import RunHandle, _NoopRun


T = TypeVar("T")

TRACEPARENT = "traceparent"
SINK_HEADER = "trajdebug-sink"
_TP = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


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


def inject(headers: MutableMapping[str, str] | None = None, *, env: bool = False) -> MutableMapping[str, str]:
    """Write the current run and step into ``headers`` (for a sub-agent elsewhere) and return them.

    ``traceparent`` is ``00-<run id>-<step id>-01`` (W3C Trace Context layout);
    ``trajdebug-sink`` names the store or JSONL file the child should write to.
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
        env: Use environment-variable names (``TRACEPARENT``, ``TRAJDEBUG_SINK``).
    """
    headers = {} if headers is None else headers
    run = rec.current_run()
    if run is None or not getattr(run, "_active", False):
        return headers
    step = rec._STEP.get()
    step_id = step.id if step is not None else "0" * 16
    tp_key, sink_key = (TRACEPARENT.upper(), _env_name(SINK_HEADER)) if env else (TRACEPARENT, SINK_HEADER)
    headers[tp_key] = f"00-{run.run_id}-{step_id}-01"
    from trajdebug.record.sinks import JsonlSink, StoreSink

    for sink in run._sinks:
        if isinstance(sink, StoreSink):
            headers[sink_key] = f"sqlite:{Path(sink.store.path).resolve()}"
            break
        if isinstance(sink, JsonlSink):
            headers[sink_key] = f"jsonl:{sink.path.resolve()}"
            break
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


@contextmanager
def extract(headers: Mapping[str, str], *, name: str = "sub-agent") -> Iterator[RunHandle]:
    """Join the run described by ``headers`` (from `inject`) for the duration of the block.

    Steps recorded inside become children of the injecting step, in the same
    run.  Without valid headers the block runs unrecorded.  ``headers`` may
    be HTTP-style headers or an environment (``os.environ``): names match in
    any case, with ``_`` for ``-``.  An exception leaving the block is recorded
    as its error *propagating* to the calling step (the caller decides whether
    the run fails), and is re-raised.

    Without a ``trajdebug-sink`` entry (the parent records to memory only) the
    sub-agent writes to the default store of its own process.

    Raises:
        ValueError: ``traceparent`` is present but malformed.
    """
    tp = _header(headers, TRACEPARENT)
    if tp is None or not CONFIG.enabled:
        yield _NoopRun(name)
        return
    m = _TP.match(tp.strip().lower())
    if m is None:
        raise ValueError(f"malformed {TRACEPARENT} header {tp!r} (expected 00-<32 hex>-<16 hex>-<2 hex>)")
    run_id, parent = m.group(1), m.group(2)
    sink = _header(headers, SINK_HEADER) or ""
    kind, _, target = sink.partition(":")
    kwargs: dict[str, Any] = {}
    if kind == "sqlite":
        kwargs["store"] = target
    elif kind == "jsonl":
        kwargs["path"] = target
    handle = RunHandle(
        name,
        run_id=run_id,
        parent=None if parent == "0" * 16 else parent,
        joined=True,
        **kwargs,
    )
    with handle:
        yield handle
