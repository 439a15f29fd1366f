"""Recording exceptions as errors: each exception counted once, its path, its cause, its end.

The recorder's side of the error lifecycle: it drives the one state machine
(`trajdebug.core.lifecycle.machine`) that the lifecycle analysis
(`trajdebug.core.lifecycle.analyze`) replays on the finished run.  Rules:

* An exception leaving a step for the first time is one error event
  (``occurred``).  The same exception object leaving an *enclosing* step is
  that error *propagating*: a ``propagated`` stage on each enclosing step,
  never a new error (observability tools show N red spans for it; we show one
  error and its path).  "Enclosing" is checked: the same exception object
  raised again in an unrelated step (a cached exception instance, a re-raise
  of a saved error in a later attempt) is a new error whose parent is the
  first one.
* An exception raised ``from`` a recorded one, or while handling it
  (``__cause__`` / ``__context__``), is a new error whose parent is the cause.
* When an attempt that retries failed attempts succeeds, their open errors end
  ``recovered``; ``s.fallback(...)`` ends the error being handled ``ignored``
  (recording it first if it never left a step); an exception that escapes the
  run ends ``failed``, and one that leaves a sub-agent that joined the run from
  elsewhere (`trajdebug.extract`) is ``propagated`` to the calling step.

Each recorded exception carries a small tag (`_Tag`): the run and error it
belongs to, the last step it left (to tell propagation from a re-raise) and
the last retry attempt it left (so `trajdebug.retry` knows which step was the
failed attempt without a run-global "last attempt", which concurrent asyncio
tasks would race on).

This code runs only on the error path, never for a step that succeeds.
"""

from __future__ import annotations

import sys
import traceback
from typing import Any

from trajdebug.core.lifecycle.machine import OCCURRED, advance, is_open
from trajdebug.core.model import Stage
from trajdebug.core.schema import error_record, stage_record
from trajdebug.record import context as _ctx
from trajdebug.record import errorlog as _live
from trajdebug.record.config import CONFIG, id_prefix


# The handles are duck-typed here: the step handle's module imports this one,
# so importing it back (even for type checking) would close a cycle.
StepHandle = Any
"""A `trajdebug.record.steps.StepHandle`."""
RunHandle = Any
"""A `trajdebug.record.runs.RunHandle`."""

_ATTR = "__trajdebug_error__"
_counter = iter(range(1, 1 << 62))
_MAX_HOPS = 10_000


class _Tag:
    """What the recorder knows about a recorded exception object."""

    __slots__ = ("attempt", "error_id", "last", "run_id")

    def __init__(self, run_id: str, error_id: str) -> None:
        self.run_id = run_id
        """The run the error belongs to."""
        self.error_id = error_id
        """The error event."""
        self.last: Any = None
        """The last step handle the exception left."""
        self.attempt: Any = None
        """The last step handle it left that was a retry attempt (``attempt`` set)."""


def new_error_id() -> str:
    return f"e{id_prefix()}{next(_counter):07x}"


MAX_MESSAGE = 64 * 1024
"""Characters of an exception's message kept (the agent's thread never prints more)."""

_BIG_ITEMS = 256
"""An exception argument with more items than this is printed bounded (`reprlib`), never whole."""

_PLAIN_STR = (BaseException.__str__, KeyError.__str__)


def _big(v: Any) -> bool:
    t = type(v)
    if t is str or t is bytes:
        return len(v) > MAX_MESSAGE
    return t in (list, tuple, dict, set, frozenset) and len(v) > _BIG_ITEMS


def is_big(exc: BaseException) -> bool:
    """An exception whose arguments would take long to print (a 5-million-item list, a 50 MB
    string): its message is printed bounded by size (`safe_str`), whatever it holds."""
    try:
        return type(exc).__str__ in _PLAIN_STR and any(_big(a) for a in exc.args)
    except Exception:  # noqa: BLE001 - hostile args
        return False


def safe_str(exc: BaseException) -> str:
    """``str(exc)`` bounded by size, or a placeholder when the exception's ``__str__`` itself fails.

    An exception with the built-in ``__str__`` whose arguments are large is printed with
    `reprlib` (at most a few hundred items, a string cut to `MAX_MESSAGE`), so the agent's thread
    spends time on its size, not its content: ``ValueError(<a 5-million-item list>)`` costs
    microseconds, not seconds.
    """
    try:
        if is_big(exc):
            import reprlib

            r = reprlib.Repr()
            r.maxlist = r.maxtuple = r.maxdict = r.maxset = r.maxfrozenset = _BIG_ITEMS
            r.maxstring = r.maxother = MAX_MESSAGE
            r.maxlevel = 4

            def one(a: Any) -> str:
                if type(a) is str and type(exc).__str__ is BaseException.__str__:
                    return a if len(a) <= MAX_MESSAGE else f"{a[:MAX_MESSAGE]}… [{len(a)} characters, truncated]"
                n = f" [{len(a):,} items]" if not isinstance(a, (str, bytes)) and hasattr(a, "__len__") else ""
                return r.repr(a) + n

            args = exc.args
            return one(args[0]) if len(args) == 1 else "(" + ", ".join(one(a) for a in args) + ")"
        text = str(exc)
        return text if len(text) <= MAX_MESSAGE else f"{text[:MAX_MESSAGE]}… [{len(text)} characters, truncated]"
    except Exception:  # noqa: BLE001 - the step that raised it is exactly the one to keep
        return f"<unprintable {type(exc).__name__}>"


def _traceback(exc: BaseException, message: str) -> str:
    """The exception's traceback (its last 8,000 characters), bounded by size like its message: an
    exception (or one it chains) whose arguments are large gets its frames and the bounded message."""
    chain, seen = False, 0
    cur: BaseException | None = exc
    while cur is not None and seen < 4:
        if is_big(cur):
            chain = True
            break
        cur = cur.__cause__ or cur.__context__
        seen += 1
    if chain:
        frames = "".join(traceback.format_tb(exc.__traceback__, limit=12))
        return f"Traceback (most recent call last):\n{frames}{type(exc).__name__}: {message}\n"[-8000:]
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=12))[-8000:]


def _tag(exc: BaseException) -> _Tag | None:
    try:
        tag = getattr(exc, _ATTR, None)
    except Exception:  # noqa: BLE001 - an exception whose __getattribute__ raises: no tag
        return None
    return tag if type(tag) is _Tag else None


def _set_tag(exc: BaseException, tag: _Tag) -> None:
    try:
        setattr(exc, _ATTR, tag)
    except Exception:  # noqa: BLE001 - no __dict__, or a __setattr__ that raises: identity is lost, the error still counts
        pass


def attempt_step(exc: BaseException, run_id: str, attempt: int, retry_of: str | None) -> str | None:
    """The id of the retry attempt step this exception left, if it is that attempt.

    Used by `trajdebug.retry` to chain attempts: the attempt must carry the
    attempt number and ``retry_of`` the wrapper gave it, so a stale tag from an
    unrelated step is never taken for it.
    """
    tag = _tag(exc)
    if tag is None or tag.run_id != run_id or tag.attempt is None:
        return None
    h = tag.attempt
    if h.attempt == attempt and h.retry_of == retry_of:
        return str(h.id)
    return None


def _encloses(h: StepHandle, inner: Any) -> bool:
    """Whether ``h`` is ``inner`` or one of its enclosing steps."""
    cur, hops = inner, 0
    while cur is not None and hops < _MAX_HOPS:
        if cur is h:
            return True
        cur = getattr(cur, "parent", None)
        hops += 1
    return False


def _find_cause(run: RunHandle, exc: BaseException) -> str | None:
    """The recorded error this exception was raised from or while handling."""
    seen = 0
    try:
        cur: BaseException | None = exc.__cause__ or exc.__context__
        while cur is not None and seen < 32:
            tag = _tag(cur)
            if tag is not None and tag.run_id == run.run_id:
                return tag.error_id
            cur = cur.__cause__ or cur.__context__
            seen += 1
    except Exception:  # noqa: BLE001 - an exception whose attributes raise: no known cause
        return None
    return None


def _is_open(run: RunHandle, error_id: str) -> bool:
    return is_open(run._errors.get(error_id))


def _stage(run: RunHandle, error_id: str, stage: Stage, step_id: str | None, reason: str | None = None) -> None:
    # ``run._errors`` holds each error's state in the machine (error id -> stage).
    run._errors[error_id] = advance(run._errors.get(error_id), stage)
    rec = stage_record(run.run_id, error_id, stage, step_id, _ctx.now(), reason)
    run._push(rec)
    if _live._listeners:
        _live._notify(rec, None)


def _on_step(run: RunHandle, h: StepHandle, eid: str) -> None:
    """Index the error under the step it left (and the step's retry link)."""
    run._errors_by_step.setdefault(h.id, []).append(eid)
    if h.retry_of is not None:
        run._retry_of[h.id] = h.retry_of
    parent = h.parent
    if parent is not None and parent.__class__ is not _ctx.RemoteParent:
        if parent._child_errors is None:
            parent._child_errors = []
        parent._child_errors.append(eid)


def _new_error(
    run: RunHandle,
    h: StepHandle,
    type_name: str,
    message: str,
    parent: str | None,
    attributes: dict[str, Any] | None = None,
) -> str:
    eid = new_error_id()
    rec = error_record(run.run_id, eid, h.id, type_name, message, parent, h.attempt or 1, attributes)
    run._push(rec)
    if _live._listeners:
        _live._notify(rec, h.agent)
    _stage(run, eid, OCCURRED, h.id)
    return eid


def _record_exception(
    run: RunHandle, h: StepHandle, exc: BaseException, attributes: dict[str, Any] | None
) -> str:
    """Record ``exc`` as a new error at ``h`` (its cause found through the exception chain)."""
    old = _tag(exc)
    attrs = dict(attributes or {})
    try:
        carried = getattr(exc, "__trajdebug_attributes__", None)
    except Exception:  # noqa: BLE001 - a hostile __getattribute__ carries nothing
        carried = None
    if type(carried) is dict:
        # Standard fields a tool call attached (`trajdebug.record.timeouts.tag`): timeout, transport, status.
        attrs.update(carried)
    if old is not None and old.run_id == run.run_id:
        # The same object raised again outside the steps it already left.
        parent: str | None = old.error_id
        attrs["reraised"] = True
    else:
        parent = _find_cause(run, exc)
    eid = _new_error(run, h, type(exc).__name__, safe_str(exc), parent, attrs)
    _set_tag(exc, _Tag(run.run_id, eid))
    return eid


def on_exception(run: RunHandle, h: StepHandle, exc: BaseException) -> None:
    """A step ends with an exception: record the error once, or its propagation."""
    h.status = "error"
    message = safe_str(exc)
    if not isinstance(exc, Exception):
        # KeyboardInterrupt, SystemExit, CancelledError, GeneratorExit: the step
        # was interrupted; that is not an error of the agent.
        h.err = (type(exc).__name__, message, None)
        h.set("interrupted", type(exc).__name__)
        return
    tb = None
    if CONFIG.capture_tracebacks:
        try:
            tb = _traceback(exc, message)
        except Exception:  # noqa: BLE001 - a hostile exception costs its traceback, not its step
            tb = None
    tag = _tag(exc)
    if tag is not None and tag.run_id == run.run_id and tag.last is not None and _encloses(h, tag.last):
        eid = tag.error_id
        _stage(run, eid, "propagated", h.id)
    else:
        eid = _record_exception(run, h, exc, None)
        tag = _tag(exc)
    if tag is not None:
        tag.last = h
        if h.attempt is not None:
            tag.attempt = h
    _on_step(run, h, eid)
    h.error_id = eid
    h.err = (type(exc).__name__, message, tb)


def report_error(
    run: RunHandle, h: StepHandle, type_name: str, message: str, attributes: dict[str, Any]
) -> str:
    """``s.error(...)``: an error reported without raising."""
    attrs = dict(attributes)
    attrs["reported"] = True
    eid = _new_error(run, h, type_name, message, None, attrs)
    _on_step(run, h, eid)
    h.status = "error"
    h.error_id = eid
    h.err = (type_name, message, None)
    return eid


def on_retry_success(run: RunHandle, h: StepHandle) -> None:
    """An attempt succeeded: the open errors of the attempts it retries are recovered."""
    if h.status == "error":
        return
    reason = f"attempt {h.attempt or '?'} ({h.id}) succeeded"
    if h.attrs and h.attrs.get("retry_reason"):
        reason += f"; retried because: {h.attrs['retry_reason']}"
    prev: str | None = h.retry_of
    hops = 0
    seen: set[str] = set()
    while prev is not None and prev not in seen and hops < _MAX_HOPS:
        seen.add(prev)
        # Errors that propagated out of a failed attempt's children are indexed under it too.
        for eid in run._errors_by_step.get(prev, ()):
            if _is_open(run, eid):
                _stage(run, eid, "recovered", h.id, reason)
        prev = run._retry_of.get(prev)
        hops += 1


def on_fallback(run: RunHandle, h: StepHandle, reason: str) -> None:
    """``s.fallback(...)``: the error being handled (or the step's children's errors) is ignored.

    Which error: the exception being handled, if any (recorded here first when
    it never left a step, e.g. ``json.loads`` failing inside the step's own
    body); else the open errors of the step's children; else the error the
    step itself reported.
    """
    exc = sys.exc_info()[1]
    ids: list[str] = []
    if isinstance(exc, Exception):
        tag = _tag(exc)
        if tag is not None and tag.run_id == run.run_id:
            ids.append(tag.error_id)
        else:
            eid = _record_exception(run, h, exc, {"handled": True})
            new = _tag(exc)
            if new is not None:
                new.last = h
            run._errors_by_step.setdefault(h.id, []).append(eid)
            ids.append(eid)
    if not ids and h._child_errors:
        ids = list(h._child_errors)
    if not ids and h.error_id is not None:
        ids = [h.error_id]
    for eid in dict.fromkeys(ids):
        if _is_open(run, eid):
            _stage(run, eid, "ignored", h.id, reason)


def on_run_exception(run: RunHandle, exc: BaseException) -> None:
    """An exception leaves the run: its error ends ``failed`` (or, out of a joined sub-agent, propagates).

    An exception that was never recorded but was raised from (or while
    handling) a recorded one ends that one ``failed``: the chain reached the
    run's failure.
    """
    tag = _tag(exc)
    if tag is not None and tag.run_id == run.run_id:
        eid: str | None = tag.error_id
        reason = f"escaped the run: {type(exc).__name__}"
    else:
        eid = _find_cause(run, exc)
        reason = f"escaped the run as {type(exc).__name__}: {exc}"
    if eid is None:
        return
    if run._joined:
        # Leaving a sub-agent that joined from another thread or process is
        # not the run's end: the calling step decides what happens next.
        remote = run._remote_parent
        _stage(run, eid, "propagated", remote.id if remote is not None else None, "left the sub-agent")
        return
    _stage(run, eid, "failed", None, reason)


def on_run_failure(run: RunHandle) -> None:
    """The run ended as a failure; nothing to do at run time beyond the escaping exception.

    Which open errors reached the failure is decided by the lifecycle analysis,
    which sees the dependency graph.
    """
    return None
