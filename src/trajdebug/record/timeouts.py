"""Tool calls with a time bound, and the standard error a failed call records.

``@trajdebug.step(kind="tool", timeout=2.0)`` bounds every call of the
function: past the bound the caller gets a `ToolTimeout` (a `TimeoutError`),
recorded as one error event with the standard fields (`tool_error`): the kind
of failure, the target service, the endpoint, a summary of the request
(redacted, then summarized: hash, length, features, never the content), the
code, the bound and the time it took.  The bound holds whether or not the
call is recorded.

- A coroutine function is awaited under `asyncio.wait_for` (the task is
  cancelled at the bound).
- A plain function runs in a worker thread (daemon threads, reused; the
  caller's context variables go with it, so its own steps nest under this one)
  and the caller stops waiting at the bound.  Python cannot stop a thread: the
  call goes on in the background and its result is dropped, so a function
  whose resources must stay in the calling thread (a ``sqlite3`` connection
  made there) should use the context-manager form.
- The context-manager form (``with trajdebug.step("x", kind="tool",
  timeout=2.0)``) cannot interrupt its block: a block that overran is recorded
  with the same error (``overran: true``) by the writer thread, without
  raising.
- Generator functions are not bounded (a warning says so; the step is recorded).

The service is the step's ``service`` attribute (``attributes={"service":
"billing"}``), else the step's name; HTTP integrations
(`trajdebug.integrations.http`) fill in the host, the endpoint and the status.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import logging
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from trajdebug.core import redaction
from trajdebug.core.codec import to_jsonable
from trajdebug.record import context as _ctx
from trajdebug.record.config import CONFIG
from trajdebug.record.decorate import _param_spec, _unrecorded, bind, decorate


if TYPE_CHECKING:
    from trajdebug.record.decorate import Spawn, Spec
    from trajdebug.record.steps import StepHandle
    from trajdebug.record.summary import Policy


log = logging.getLogger("trajdebug")

_RUN = _ctx._RUN
_REPLAY = _ctx._REPLAY

ATTRIBUTES = "__trajdebug_attributes__"
"""Attribute of an exception whose dict the recorder adds to the error event's attributes."""

ERROR_KINDS = ("timeout", "transport", "status")
"""What went wrong with a call: it ran past its bound, the connection failed, the service answered with an error."""


class ToolTimeout(TimeoutError):
    """A bounded tool call ran past its bound (`trajdebug.step(..., timeout=...)`)."""

    def __init__(self, message: str, attributes: Mapping[str, Any]) -> None:
        super().__init__(message)
        setattr(self, ATTRIBUTES, dict(attributes))


@functools.lru_cache(maxsize=4)
def _policy(key: str | None, numbers: bool) -> Policy:
    # Imported here: the summary policy reads values with `trajdebug.core.values`, which `import trajdebug` need not load.
    from trajdebug.record.summary import Policy

    return Policy.compile(("*",), key, numbers)


def request_summary(value: Any) -> Any:
    """A request as the standard error carries it: redacted, then summarized (hash, length, features)."""
    data = to_jsonable(value, CONFIG.max_value_bytes)
    red = redaction.redactor() if CONFIG.redact else None
    if red is not None:
        data = red(data)
    return _policy(CONFIG.summary_key, CONFIG.summary_numbers).summarize(data)


def tool_error(
    kind: str,
    *,
    service: str | None,
    endpoint: str | None = None,
    request: Any = None,
    code: Any = None,
    timeout_s: float | None = None,
    elapsed_s: float | None = None,
) -> dict[str, Any]:
    """The standard fields of a failed tool call (an error event's attributes).

    Args:
        kind: One of `ERROR_KINDS`.
        service: The target service (a host, a tool's name).
        endpoint: What was called (``GET https://host/path``, a function).
        request: The request (summarized here: never stored as it is).
        code: The return code: an HTTP status, an errno name, ``timeout``.
        timeout_s: The bound, when there was one.
        elapsed_s: How long the call took.
    """
    out: dict[str, Any] = {"error.kind": kind, "service": service}
    if endpoint is not None:
        out["endpoint"] = endpoint
    if request is not None:
        try:
            out["request"] = request_summary(request)
        except Exception:  # noqa: BLE001 - a request that cannot be summarized costs only this field
            out["request"] = None
    out["code"] = code
    if timeout_s is not None:
        out["timeout_s"] = timeout_s
    if elapsed_s is not None:
        out["elapsed_s"] = round(elapsed_s, 6)
    return out


def tag(exc: BaseException, attributes: Mapping[str, Any]) -> BaseException:
    """Attach standard fields to an exception (the recorder adds them to its error event); returns it."""
    try:
        old = getattr(exc, ATTRIBUTES, None)
        setattr(exc, ATTRIBUTES, {**(old if isinstance(old, dict) else {}), **attributes})
    except (AttributeError, TypeError):
        pass
    return exc


# -- worker threads ----------------------------------------------------------------------


class _Workers:
    """Daemon threads that run bounded calls, reused; an idle one exits after a minute.

    A call past its bound keeps its thread until it returns (Python cannot stop
    it); new calls get another thread, so an abandoned call never delays another.
    """

    IDLE = 60.0

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._jobs: deque[Callable[[], None]] = deque()
        self.idle = 0
        self.abandoned = 0
        """Calls whose caller stopped waiting at the bound (they run on in the background)."""

    def submit(self, job: Callable[[], None]) -> None:
        """Run ``job`` on an idle worker, or on a new one."""
        with self._cond:
            if self.idle > len(self._jobs):
                self._jobs.append(job)
                self._cond.notify()
                return
        threading.Thread(target=self._loop, args=(job,), name="trajdebug-timeout", daemon=True).start()

    def _loop(self, job: Callable[[], None]) -> None:
        while True:
            job()
            with self._cond:
                self.idle += 1
                deadline = time.monotonic() + self.IDLE
                while not self._jobs:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        self.idle -= 1
                        return
                    self._cond.wait(left)
                job = self._jobs.popleft()
                self.idle -= 1


WORKERS = _Workers()


class _Call:
    """One call in a worker: its result or exception, and an event the caller waits on."""

    __slots__ = ("done", "error", "result")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None


def call_within(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], bound: float) -> tuple[bool, Any]:
    """Run ``fn`` in a worker thread, in a copy of the caller's context; wait at most ``bound`` seconds.

    Returns:
        ``(True, result)``, or ``(False, None)`` when the bound passed first.

    Raises:
        BaseException: whatever ``fn`` raised within the bound.
    """
    call = _Call()
    ctx = contextvars.copy_context()

    def job() -> None:
        try:
            call.result = ctx.run(fn, *args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            call.error = exc
        finally:
            call.done.set()

    WORKERS.submit(job)
    if not call.done.wait(bound):
        WORKERS.abandoned += 1
        return False, None
    if call.error is not None:
        raise call.error
    return True, call.result


def _timeout(h: StepHandle | None, name: str, bound: float, elapsed: float, request: Any) -> ToolTimeout:
    service = None
    attrs = getattr(h, "attrs", None) if h is not None else None
    if attrs and isinstance(attrs.get("service"), str):
        service = attrs["service"]
    fields = tool_error(
        "timeout",
        service=service or name,
        endpoint=name,
        request=request,
        code="timeout",
        timeout_s=bound,
        elapsed_s=elapsed,
    )
    return ToolTimeout(f"{name} did not return within {bound:g} s", fields)


# -- the decorator ---------------------------------------------------------------------------


def timed(tpl: StepHandle, fn: Any) -> Any:
    """Wrap ``fn`` so that each call records a step (as `trajdebug.record.decorate.decorate` does) and is
    bounded by ``tpl.timeout`` seconds (set: the step template asks for a bound only with one)."""
    bound = float(tpl.timeout or 0.0)
    if inspect.isgeneratorfunction(fn) or inspect.isasyncgenfunction(fn):
        warnings.warn(
            f"trajdebug: timeout= does not bound generator {getattr(fn, '__name__', fn)!r}; recorded without a bound",
            UserWarning,
            stacklevel=3,
        )
        return decorate(tpl, fn)
    # The request summary's policy is imported now, when a bound is declared, not when it first runs
    # out (the raise must not wait for an import); `import trajdebug` alone never loads it.
    import trajdebug.record.summary  # noqa: F401

    if tpl.name is None:
        tpl.name = getattr(fn, "__name__", "step")
    name = str(tpl.name)
    spec = _param_spec(fn)
    spawn = tpl._spawner(spec)

    if inspect.iscoroutinefunction(fn):
        return _timed_coroutine(fn, spawn, spec, name, bound)
    return _timed_function(fn, spawn, spec, name, bound)


def _timed_coroutine(fn: Any, spawn: Spawn, spec: Spec, name: str, bound: float) -> Any:
    """A coroutine function's wrapper: one step per awaited call, bounded by ``bound`` seconds."""

    async def bounded(args: tuple[Any, ...], kwargs: dict[str, Any], h: StepHandle | None) -> Any:
        t0 = time.perf_counter()
        try:
            import asyncio  # here, not at import: `import trajdebug` stays free of asyncio's 18 ms

            return await asyncio.wait_for(fn(*args, **kwargs), bound)
        except TimeoutError as exc:
            if time.perf_counter() - t0 < bound * 0.999:
                raise  # the function's own TimeoutError, not the bound
            raise _timeout(h, name, bound, time.perf_counter() - t0, bind(spec, args, kwargs)) from exc

    @functools.wraps(fn)
    async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get() if CONFIG.enabled else None
        if run is None and _unrecorded(run):
            return await bounded(args, kwargs, None)
        h = spawn(args, kwargs)
        h.__enter__()
        try:
            ctl = _REPLAY.get()
            if ctl is None:
                out = await bounded(args, kwargs, h)
            else:
                h.bound_input()
                served, out = ctl.before(h)
                if not served:
                    out = await bounded(args, kwargs, h)
                    ctl.after(h, out)
            h.output = out
        except BaseException as exc:
            h.__exit__(type(exc), exc, exc.__traceback__)
            raise
        h.__exit__(None, None, None)
        return out

    return async_wrapper


def _timed_function(fn: Any, spawn: Spawn, spec: Spec, name: str, bound: float) -> Any:
    """A plain function's wrapper: one step per call, bounded by ``bound`` seconds (`call_within`)."""

    def run_bounded(args: tuple[Any, ...], kwargs: dict[str, Any], h: StepHandle | None) -> Any:
        t0 = time.perf_counter()
        finished, out = call_within(fn, args, kwargs, bound)
        if not finished:
            raise _timeout(h, name, bound, time.perf_counter() - t0, bind(spec, args, kwargs))
        return out

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        run = _RUN.get() if CONFIG.enabled else None
        if run is None and _unrecorded(run):
            return run_bounded(args, kwargs, None)
        h = spawn(args, kwargs)
        h.__enter__()
        try:
            ctl = _REPLAY.get()
            if ctl is None:
                out = run_bounded(args, kwargs, h)
            else:
                h.bound_input()
                served, out = ctl.before(h)
                if not served:
                    out = run_bounded(args, kwargs, h)
                    ctl.after(h, out)
            h.output = out
        except BaseException as exc:
            h.__exit__(type(exc), exc, exc.__traceback__)
            raise
        h.__exit__(None, None, None)
        return out

    return wrapper


def overrun(h: StepHandle, attrs: Mapping[str, Any]) -> dict[str, Any] | None:
    """Writer thread: the standard fields of a context-manager step that ran past its ``timeout``, or None."""
    bound = attrs.get("timeout")
    if h.status == "error" or not isinstance(bound, (int, float)) or isinstance(bound, bool) or h.t1 is None:
        return None
    elapsed = (h.t1 - h.t0) / 1e9
    if elapsed <= bound:
        return None
    service = attrs.get("service") if isinstance(attrs.get("service"), str) else None
    fields = tool_error(
        "timeout", service=service or h.name, endpoint=h.name, code="timeout", timeout_s=float(bound), elapsed_s=elapsed
    )
    fields["overran"] = True
    return fields


__all__ = [
    "ATTRIBUTES",
    "ERROR_KINDS",
    "WORKERS",
    "ToolTimeout",
    "call_within",
    "overrun",
    "request_summary",
    "tag",
    "timed",
    "tool_error",
]
