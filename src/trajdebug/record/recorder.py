"""The recording SDK: runs and steps.

Cost model (measured in ``benchmarks/``): entering and leaving a step is a
ContextVar set/reset, two clock reads, a counter and one deque append.  Inputs
and outputs that are not plain scalars are snapshotted with orjson at the
boundary, so later mutation by the agent cannot rewrite history.  Everything
else (building records, dependency tracking, redaction, I/O) happens on the
writer thread (`trajdebug.record.sinks.Writer`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar, overload

from trajdebug._encode import dumps
from trajdebug.model import Dependency
from trajdebug.record import config as _config
from trajdebug.record.config import CONFIG
from trajdebug.record.sinks import WRITER, Sink, make_sink


log = logging.getLogger("trajdebug")

F = TypeVar("F", bound=Callable[..., Any])

# The clock and the step counter are module globals so that
# `trajdebug.testing` can swap in deterministic ones.
_now: Callable[[], int] = time.time_ns
_next_seq: Callable[[], int] = itertools.count(1).__next__

_RUN: ContextVar[RunHandle | None] = ContextVar("trajdebug_run", default=None)
_STEP: ContextVar[StepHandle | RemoteParent | None] = ContextVar("trajdebug_step", default=None)
_BRANCH: ContextVar[tuple[str, ...]] = ContextVar("trajdebug_branch", default=())
_ATTEMPT: ContextVar[tuple[int, str | None, str | None] | None] = ContextVar("trajdebug_attempt", default=None)
_REPLAY: ContextVar[Any] = ContextVar("trajdebug_replay", default=None)
"""The active replay controller (`trajdebug.replay`), consulted by decorated steps.

A controller has ``before(handle) -> (served: bool, value)`` (it may raise a
recorded exception) and ``after(handle, value) -> None``; it decides, per
step, whether to serve the recorded response or let the function run live."""

_SCALARS = frozenset({str, int, float, bool, type(None)})


def _snap(value: Any) -> Any:
    """Freeze a value at the step boundary: scalars as they are, the rest as JSON bytes."""
    if type(value) in _SCALARS:
        return value
    try:
        return dumps(value)
    except Exception:  # noqa: BLE001 - a value never breaks recording
        return dumps(repr(value))


class RemoteParent:
    """A parent step in another thread or process (from `trajdebug.extract`)."""

    __slots__ = ("id",)

    def __init__(self, step_id: str) -> None:
        self.id = step_id


def _dep(d: Any, kind: str = "data") -> Dependency:
    if isinstance(d, Dependency):
        return d
    if isinstance(d, (StepHandle, RemoteParent)):
        return Dependency(step_id=d.id, kind=kind, origin="declared")  # type: ignore[arg-type]
    if isinstance(d, str):
        return Dependency(step_id=d, kind=kind, origin="declared")  # type: ignore[arg-type]
    raise TypeError(f"deps= takes step handles, step ids or Dependency objects, not {type(d).__name__}")


class StepHandle:
    """A step being recorded.  ``with trajdebug.step(...) as s`` gives you one.

    Set ``s.output`` (and ``s.input``) inside the block; call ``s.error(...)``
    to report an error without raising, ``s.fallback(...)`` when a degraded
    value replaces a failed one.  As a decorator the handle is a template:
    every call of the function records a fresh step.
    """

    __slots__ = (
        "_announced",
        "_child_errors",
        "_live_in",
        "_live_out",
        "_params",
        "_run",
        "_token",
        "agent",
        "attempt",
        "attrs",
        "branch",
        "deps",
        "err",
        "error_id",
        "input",
        "kind",
        "name",
        "output",
        "parent",
        "retry_of",
        "seq",
        "status",
        "t0",
        "t1",
    )

    def __init__(
        self,
        name: str | None = None,
        kind: str = "other",
        *,
        deps: Iterable[Any] = (),
        agent: str | None = None,
        input: Any = None,
        attempt: int | None = None,
        retry_of: Any = None,
        attributes: dict[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.kind = kind
        self.deps = tuple(_dep(d) for d in deps) if deps else ()
        self.agent = agent
        self.input = input
        self.attempt = attempt
        self.retry_of = retry_of.id if isinstance(retry_of, (StepHandle, RemoteParent)) else retry_of
        self.attrs = dict(attributes) if attributes else None
        self.output = None
        self.status = "ok"
        self.err: tuple[str, str, str | None] | None = None
        self.error_id: str | None = None
        self._run: RunHandle | None = None
        self._child_errors: list[str] | None = None
        self._live_in: Any = None
        self._live_out: Any = None
        self._params: tuple[list[str], str | None, bool] | None = None
        self._announced = False
        self.parent: StepHandle | RemoteParent | None = None
        self.seq = 0
        self.t0 = 0
        self.t1: int | None = None
        self.branch: tuple[str, ...] = ()
        self._token: Any = None

    # -- identity ------------------------------------------------------------

    @property
    def id(self) -> str:
        """The step id (16 hex digits), valid once the step has started."""
        return f"{_config._prefix}{self.seq:08x}"

    def __repr__(self) -> str:
        return f"<step {self.name!r} kind={self.kind} id={self.id if self.seq else '-'}>"

    # -- lifecycle -----------------------------------------------------------

    def _start(self, run: RunHandle) -> None:
        self._run = run
        parent = _STEP.get()
        if parent is not None and (type(parent) is RemoteParent or parent._run is run):  # type: ignore[union-attr]
            self.parent = parent
            if self.agent is None and type(parent) is StepHandle:
                self.agent = parent.agent
        self.branch = _BRANCH.get()
        att = _ATTEMPT.get()
        self.seq = _next_seq()
        if att is not None and self.attempt is None:
            # The first step started inside a retry attempt is that attempt.
            self.attempt, self.retry_of, reason = att
            _ATTEMPT.set(None)
            run._last_attempt = self.id
            if reason:
                self.set("retry_reason", reason)
        self._token = _STEP.set(self)
        self.t0 = _now()

    def _finish(self, exc: BaseException | None) -> None:
        self.t1 = _now()
        try:
            _STEP.reset(self._token)
        except ValueError:
            # Reset from another context (a generator resumed elsewhere): fall back to the parent.
            _STEP.set(self.parent)
        run = self._run
        if run is None:
            return
        if exc is not None:
            from trajdebug.record.errors import on_exception

            on_exception(run, self, exc)
        elif self.retry_of is not None:
            from trajdebug.record.errors import on_retry_success

            on_retry_success(run, self)
        inp, out = self.input, self.output
        self._live_in, self._live_out = inp, out
        self.input = _snap(inp)
        self.output = _snap(out)
        run._push(self)

    def __enter__(self) -> StepHandle:
        if not CONFIG.enabled:
            return self
        run = _RUN.get()
        if run is not None:
            if self.name is None:
                self.name = "step"
            self._start(run)
        return self

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if self._run is not None and self.t1 is None:
            try:
                self._finish(exc)
            except Exception:  # noqa: BLE001 - the recorder never breaks the agent
                self._run._internal_error("step exit")

    # -- user API inside a step ------------------------------------------------

    def set(self, key: str, value: Any) -> None:
        """Set a free attribute on the step (model name, tool call id, ...)."""
        if self.attrs is None:
            self.attrs = {}
        self.attrs[key] = value

    def uses(self, *deps: Any, kind: str = "data") -> None:
        """Declare dependencies found inside the step (step handles, ids or `Dependency`)."""
        self.deps = self.deps + tuple(_dep(d, kind) for d in deps)

    def error(self, message: str, *, type: str = "ReportedError", **attributes: Any) -> str | None:
        """Report an error without raising (a tool returned an error payload, a check failed).

        Returns:
            The new error's id (None when not recording).
        """
        if self._run is None:
            return None
        from trajdebug.record.errors import report_error

        return report_error(self._run, self, type, message, attributes)

    def fallback(self, value: Any, reason: str = "fallback value used") -> None:
        """Use a degraded value after an error: the error ends ``ignored``; ``value`` is the output."""
        self.output = value
        self.set("fallback", reason)
        if self._run is not None:
            from trajdebug.record.errors import on_fallback

            on_fallback(self._run, self, reason)

    # -- decorator ---------------------------------------------------------------

    @overload
    def __call__(self, fn: F) -> F: ...
    @overload
    def __call__(self, fn: Any) -> Any: ...
    def __call__(self, fn: Any) -> Any:
        """Decorate a function, coroutine function, generator or async generator."""
        return _decorate(self, fn)

    def _spawn(self) -> StepHandle:
        h = StepHandle.__new__(StepHandle)
        h.name, h.kind, h.deps, h.agent = self.name, self.kind, self.deps, self.agent
        h.input, h.attempt, h.retry_of = None, self.attempt, self.retry_of
        h.attrs = dict(self.attrs) if self.attrs else None
        h.output, h.status, h.err, h.error_id = None, "ok", None, None
        h._run, h._child_errors, h._live_in, h._live_out = None, None, None, None
        h._params, h._announced, h.parent, h.seq = None, False, None, 0
        h.t0, h.t1, h.branch, h._token = 0, None, (), None
        return h


def _param_spec(fn: Callable[..., Any]) -> tuple[list[str], str | None, bool]:
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return [], "args", False
    names: list[str] = []
    varargs = None
    skip_first = bool(params) and params[0].name in ("self", "cls")
    for i, p in enumerate(params):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind == p.VAR_POSITIONAL:
            varargs = p.name
    return names, varargs, skip_first


def _bind(spec: tuple[list[str], str | None, bool], args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    names, varargs, skip_first = spec
    if skip_first and args:
        args = args[1:]
        names = names[1:]
    inp = dict(zip(names, args))
    if len(args) > len(names) and varargs:
        inp[varargs] = args[len(names) :]
    if kwargs:
        inp.update(kwargs)
    return inp


def _decorate(tpl: StepHandle, fn: Any) -> Any:
    if tpl.name is None:
        tpl.name = getattr(fn, "__name__", "step")
    spec = _param_spec(fn)

    if inspect.isasyncgenfunction(fn):

        @functools.wraps(fn)
        async def agen_wrapper(*args: Any, **kwargs: Any) -> Any:
            run = _RUN.get() if CONFIG.enabled else None
            if run is None:
                async for item in fn(*args, **kwargs):
                    yield item
                return
            h = tpl._spawn()
            h.input = _bind(spec, args, kwargs)
            items: list[Any] = []
            h._start(run)
            agen = fn(*args, **kwargs)
            _STEP.reset(h._token)
            try:
                while True:
                    tok = _STEP.set(h)
                    try:
                        item = await agen.__anext__()
                    finally:
                        _STEP.reset(tok)
                    items.append(item)
                    yield item
            except StopAsyncIteration:
                pass
            except BaseException as exc:
                h.output = items
                h._token = _STEP.set(h)
                h._finish(exc)
                raise
            h.output = items
            h._token = _STEP.set(h)
            h._finish(None)

        return agen_wrapper

    if inspect.isgeneratorfunction(fn):

        @functools.wraps(fn)
        def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
            run = _RUN.get() if CONFIG.enabled else None
            if run is None:
                return (yield from fn(*args, **kwargs))
            h = tpl._spawn()
            h.input = _bind(spec, args, kwargs)
            items: list[Any] = []
            # The step is current only while the generator body runs, not
            # while the consumer holds a yielded item.
            h._start(run)
            gen = fn(*args, **kwargs)
            _STEP.reset(h._token)
            result = None
            sent: Any = None
            try:
                while True:
                    tok = _STEP.set(h)
                    try:
                        item = gen.send(sent)
                    finally:
                        _STEP.reset(tok)
                    items.append(item)
                    sent = yield item
            except StopIteration as stop:
                result = stop.value
            except GeneratorExit:
                gen.close()
                h.set("closed_early", True)
            except BaseException as exc:
                h.output = items
                h._token = _STEP.set(h)
                h._finish(exc)
                raise
            h.output = items if result is None else {"items": items, "return": result}
            h._token = _STEP.set(h)
            h._finish(None)
            return result

        return gen_wrapper

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            run = _RUN.get() if CONFIG.enabled else None
            if run is None:
                return await fn(*args, **kwargs)
            h = tpl._spawn()
            h.input = _bind(spec, args, kwargs)
            h._start(run)
            try:
                ctl = _REPLAY.get()
                if ctl is None:
                    out = await fn(*args, **kwargs)
                else:
                    served, out = ctl.before(h)
                    if not served:
                        out = await fn(*args, **kwargs)
                        ctl.after(h, out)
                h.output = out
            except BaseException as exc:
                h._finish(exc)
                raise
            h._finish(None)
            return out

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get() if CONFIG.enabled else None
        if run is None:
            return fn(*args, **kwargs)
        h = tpl._spawn()
        h.input = _bind(spec, args, kwargs)
        h._start(run)
        try:
            ctl = _REPLAY.get()
            if ctl is None:
                out = fn(*args, **kwargs)
            else:
                served, out = ctl.before(h)
                if not served:
                    out = fn(*args, **kwargs)
                    ctl.after(h, out)
            h.output = out
        except BaseException as exc:
            h._finish(exc)
            raise
        h._finish(None)
        return out

    return wrapper


def step(
    name: Any = None,
    /,
    kind: str = "other",
    *,
    deps: Iterable[Any] = (),
    agent: str | None = None,
    input: Any = None,
    attempt: int | None = None,
    retry_of: Any = None,
    attributes: dict[str, Any] | None = None,
) -> Any:
    """Record a step: a decorator (sync, async, generators) or a context manager.

    Example:
        ```python
        @trajdebug.step(kind="tool")
        def run_sql(query: str) -> list[dict]: ...

        with trajdebug.step("parse", kind="parse") as s:
            s.output = parse(text)
        ```

    Args:
        name: The step's name (default: the function's name), or the function to decorate.
        kind: ``llm``, ``tool``, ``parse``, ``condition``, ``retrieval``, ``state``, ``agent``,
            ``input``, ``output`` or ``other``.
        deps: Steps (handles or ids) whose outputs this step consumes, beyond those tracked.
        agent: The agent executing the step (inherited from the enclosing step).
        input: The step's input (context-manager form; the decorator binds the arguments).
        attempt: The attempt number, for hand-written retry loops.
        retry_of: The step (handle or id) this attempt retries.
        attributes: Free attributes.
    """
    if callable(name) and not isinstance(name, str):
        return _decorate(StepHandle(None, kind), name)
    if not CONFIG.enabled:
        return _NOOP_STEP
    return StepHandle(
        name,
        kind,
        deps=deps,
        agent=agent,
        input=input,
        attempt=attempt,
        retry_of=retry_of,
        attributes=attributes,
    )


def current_step() -> StepHandle | None:
    """The step being recorded in this context, or None."""
    s = _STEP.get()
    return s if type(s) is StepHandle else None


def current_run() -> RunHandle | None:
    """The run being recorded in this context, or None."""
    return _RUN.get()


class RunHandle:
    """A run being recorded; ``with trajdebug.run(...) as run`` gives you one."""

    def __init__(
        self,
        name: str,
        *,
        store: Any = None,
        path: str | Path | None = None,
        sinks: Iterable[Sink] = (),
        metadata: dict[str, Any] | None = None,
        continues: str | None = None,
        run_id: str | None = None,
        parent: str | None = None,
        joined: bool = False,
    ) -> None:
        self.name = name
        self.run_id = run_id or _config.new_run_id()
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.continues = continues
        self.outcome: str | None = None
        self.failure_reason: str | None = None
        self.dropped = 0
        self.sink_failures = 0
        self.internal_errors = 0
        self._warned = False
        self._joined = joined
        self._remote_parent = RemoteParent(parent) if parent else None
        self._queue: deque[Any] = deque()
        self._lock = threading.RLock()
        self._sinks: list[Sink] = list(sinks)
        if store is not None:
            self._sinks.append(make_sink(store))
        if path is not None:
            self._sinks.append(make_sink(path))
        if not self._sinks:
            default = CONFIG.path if CONFIG.path is not None else (CONFIG.store or _default_store())
            self._sinks.append(make_sink(default))
        self._errors: dict[str, Any] = {}
        self._errors_by_step: dict[str, list[str]] = {}
        self._retry_of: dict[str, str] = {}
        self._tracker: Any = None
        self._state: Any = None
        self._env_step: str | None = None
        self._last_attempt: str | None = None
        self._tokens: list[Any] = []
        self._active = False
        self.start_ns = 0
        self.end_ns: int | None = None

    # -- context -----------------------------------------------------------------

    def __enter__(self) -> RunHandle:
        if not CONFIG.enabled:
            return self
        try:
            self._begin()
        except Exception:  # noqa: BLE001
            self._internal_error("run start")
        return self

    def _begin(self) -> None:
        from trajdebug.record.tracking import Tracker

        self._tracker = Tracker(self)
        self.start_ns = _now()
        self._active = True
        WRITER.register(self)
        if not self._joined:
            from trajdebug.record.env import environment_snapshot

            env = environment_snapshot(self.metadata)
            self.metadata.setdefault("env", env)
            rec: dict[str, Any] = {
                "v": 1,
                "t": "run",
                "run_id": self.run_id,
                "name": self.name,
                "start_ns": self.start_ns,
                "metadata": self.metadata,
            }
            if self.continues:
                rec["continues"] = self.continues
            self._queue.append(rec)
        self._tokens.append((_RUN.set(self), _STEP.set(self._remote_parent)))

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if not self._active:
            return
        try:
            if exc is not None and isinstance(exc, Exception):
                from trajdebug.record.errors import on_run_exception

                on_run_exception(self, exc)
                if self.outcome is None:
                    self.outcome = "failure"
                    self.failure_reason = f"{type(exc).__name__}: {exc}"
            self.close()
        except Exception:  # noqa: BLE001
            self._internal_error("run end")
        finally:
            tok_run, tok_step = self._tokens.pop()
            try:
                _RUN.reset(tok_run)
                _STEP.reset(tok_step)
            except ValueError:
                _RUN.set(None)
                _STEP.set(None)

    def close(self) -> None:
        """End the run: write its end record, flush and close the sinks."""
        if not self._active:
            return
        self._active = False
        self.end_ns = _now()
        if not self._joined:
            outcome = self.outcome or "success"
            self.outcome = outcome
            if outcome == "failure":
                from trajdebug.record.errors import on_run_failure

                on_run_failure(self)
            self._queue.append(
                {
                    "v": 1,
                    "t": "end",
                    "run_id": self.run_id,
                    "end_ns": self.end_ns,
                    "outcome": outcome,
                    "failure_reason": self.failure_reason,
                }
            )
        self.drain()
        WRITER.unregister(self)
        for sink in self._sinks:
            try:
                sink.close()
            except Exception:  # noqa: BLE001
                self._sink_failed(sink)
        if self._tracker is not None:
            self._tracker.release()

    # -- outcome -------------------------------------------------------------------

    def fail(self, reason: str) -> None:
        """Mark the run failed (the agent gave a wrong answer, a check failed)."""
        self.outcome = "failure"
        self.failure_reason = reason

    def succeed(self) -> None:
        """Mark the run successful (the default when it ends without an exception)."""
        self.outcome = "success"
        self.failure_reason = None

    # -- state, environment ------------------------------------------------------------

    @property
    def state(self) -> Any:
        """Shared state: a dict whose writes and reads become ``state`` dependencies."""
        if self._state is None:
            from trajdebug.record.state import RunState

            self._state = RunState(self)
        return self._state

    def env_step_id(self) -> str | None:
        """The id of the run's ``environment`` step (created on first use)."""
        if self._env_step is None and self._active:
            from trajdebug.record.env import record_environment_step

            self._env_step = record_environment_step(self)
        return self._env_step

    # -- plumbing ------------------------------------------------------------------------

    def _push(self, item: Any) -> None:
        q = self._queue
        if len(q) >= CONFIG.max_buffer:
            self.dropped += 1
            self._warn_once(f"trajdebug: buffer full, dropping records of run {self.run_id}")
            return
        q.append(item)
        if len(q) > 4096:
            WRITER.wake()

    def _emit(self, record: dict[str, Any]) -> None:
        """Queue a ready-made record (error, stage, dep)."""
        record.setdefault("v", 1)
        record["run_id"] = self.run_id
        self._push(record)

    def drain(self) -> None:
        """Turn queued handles into records and write them to the sinks (writer thread, or at run end)."""
        with self._lock:
            q = self._queue
            if not q:
                return
            records: list[dict[str, Any]] = []
            tracker = self._tracker
            while q:
                item = q.popleft()
                try:
                    if type(item) is StepHandle:
                        records.extend(tracker.encode(item))
                    elif type(item) is tuple:
                        tracker.handle(item)
                    else:
                        records.append(item)
                except Exception:  # noqa: BLE001
                    self._internal_error("encode")
            if not records:
                return
            for sink in self._sinks:
                try:
                    sink.write(records)
                except Exception:  # noqa: BLE001
                    self._sink_failed(sink)

    def _sink_failed(self, sink: Any) -> None:
        self.sink_failures += 1
        self._warn_once(f"trajdebug: sink {type(sink).__name__} failed; records of run {self.run_id} were lost")

    def _internal_error(self, where: str) -> None:
        self.internal_errors += 1
        self._warn_once(f"trajdebug: internal error in {where}; the agent was not affected")
        log.debug("trajdebug internal error in %s", where, exc_info=True)

    def _warn_once(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning(message)

    @property
    def stats(self) -> dict[str, int]:
        """Counters of what went wrong inside the recorder (dropped records, sink failures)."""
        return {"dropped": self.dropped, "sink_failures": self.sink_failures, "internal_errors": self.internal_errors}

    def load(self) -> Any:
        """Read this run back from its first readable sink (a `trajdebug.model.Run`)."""
        from trajdebug.format import RunBuilder, read_jsonl
        from trajdebug.record.sinks import JsonlSink, MemorySink, StoreSink

        self.drain()
        for sink in self._sinks:
            if isinstance(sink, MemorySink):
                b = RunBuilder("memory")
                for r in sink.records:
                    if r.get("run_id") == self.run_id:
                        b.add(r)
                return b.runs()[0]
            if isinstance(sink, StoreSink):
                return sink.store.load_run(self.run_id)
            if isinstance(sink, JsonlSink):
                return next(r for r in read_jsonl(sink.path).runs if r.run_id == self.run_id)
        raise LookupError("this run has no readable sink")


def _default_store() -> Path:
    from trajdebug.store import default_store_path

    return default_store_path()


def run(
    name: str,
    *,
    store: Any = None,
    path: str | Path | None = None,
    sinks: Iterable[Sink] = (),
    metadata: dict[str, Any] | None = None,
    continues: str | None = None,
    task: str | None = None,
    agent: str | None = None,
    version: str | None = None,
) -> RunHandle:
    """Record a run: ``with trajdebug.run("name") as run: ...``.

    Args:
        name: The run's name.
        store: A store (path or `trajdebug.store.Store`) to write to.
        path: A JSONL file to append to.
        sinks: Extra sinks.
        metadata: Free metadata.
        continues: The run id this run continues (an earlier conversation turn).
        task: The task (recorded in metadata).
        agent: The agent's name (recorded in metadata).
        version: The agent's version (recorded in metadata).

    Without ``store``, ``path`` or ``sinks`` the run goes to the configured default:
    ``trajdebug.configure(path=...)`` or ``store=...``, else ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``.
    """
    md = dict(metadata or {})
    for key, value in (("task", task), ("agent", agent), ("version", version)):
        if value is not None:
            md[key] = value
    if not CONFIG.enabled:
        return _NoopRun(name)
    return RunHandle(name, store=store, path=path, sinks=sinks, metadata=md, continues=continues)


class _NoopRun(RunHandle):
    """What `run` returns when recording is off: nothing is opened or written."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.run_id = ""
        self.outcome = None
        self.failure_reason = None
        self._active = False
        self._state = None

    def __enter__(self) -> RunHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    @property
    def state(self) -> Any:
        if self._state is None:
            self._state = {}
        return self._state


class _NoopStep(StepHandle):
    """The shared handle `step` returns when recording is off: every method does nothing."""

    def __enter__(self) -> StepHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __setattr__(self, key: str, value: Any) -> None:
        # Writes such as ``s.output = ...`` are dropped so the shared handle keeps nothing alive.
        if not _NOOP_READY:
            object.__setattr__(self, key, value)

    def __call__(self, fn: Any) -> Any:
        return fn

    def set(self, key: str, value: Any) -> None:
        return None

    def uses(self, *deps: Any, kind: str = "data") -> None:
        return None

    def error(self, message: str, *, type: str = "ReportedError", **attributes: Any) -> str | None:
        return None

    def fallback(self, value: Any, reason: str = "fallback value used") -> None:
        return None


_NOOP_READY = False
_NOOP_STEP = _NoopStep("noop")
_NOOP_READY = True
