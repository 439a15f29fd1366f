"""Recording errors: each exception counted once, its path, its cause, its end.

The runtime half of the error lifecycle (`trajdebug.analysis.lifecycle` is the
analysis half).  Rules:

* An exception leaving a step for the first time is one error event
  (``occurred``).  The same exception object leaving enclosing steps is that
  error *propagating*: a ``propagated`` stage on each enclosing step, never a
  new error (observability tools show N red spans for it; we show one error
  and its path).
* An exception raised ``from`` a recorded one, or while handling it
  (``__cause__`` / ``__context__``), is a new error whose parent is the cause.
* When an attempt that retries failed attempts succeeds, their errors end
  ``recovered``; ``s.fallback(...)`` ends them ``ignored``; an exception that
  escapes the run ends ``failed``.

This code runs only on the error path, never for a step that succeeds.
"""

from __future__ import annotations

import traceback
from typing import TYPE_CHECKING, Any

from trajdebug.record import recorder as _rec
from trajdebug.record.config import CONFIG, id_prefix


if TYPE_CHECKING:
    from trajdebug.record.recorder import RunHandle, StepHandle

_ATTR = "__trajdebug_error__"
_counter = iter(range(1, 1 << 62))


def _new_error_id() -> str:
    return f"e{id_prefix()}{next(_counter):07x}"


def _tag(exc: BaseException) -> tuple[str, str] | None:
    tag = getattr(exc, _ATTR, None)
    return tag if isinstance(tag, tuple) else None


def _find_cause(run: RunHandle, exc: BaseException) -> str | None:
    """The recorded error this exception was raised from or while handling."""
    seen = 0
    cur: BaseException | None = exc.__cause__ or exc.__context__
    while cur is not None and seen < 32:
        tag = _tag(cur)
        if tag is not None and tag[0] == run.run_id:
            return tag[1]
        cur = cur.__cause__ or cur.__context__
        seen += 1
    return None


def _stage(run: RunHandle, error_id: str, stage: str, step_id: str | None, reason: str | None = None) -> None:
    run._emit(
        {
            "t": "stage",
            "error_id": error_id,
            "stage": stage,
            "step_id": step_id,
            "time_ns": _rec._now(),
            "reason": reason,
        }
    )


def _new_error(
    run: RunHandle,
    h: StepHandle,
    type_name: str,
    message: str,
    parent: str | None,
    attributes: dict[str, Any] | None = None,
) -> str:
    eid = _new_error_id()
    step_id = h.id
    run._emit(
        {
            "t": "error",
            "error_id": eid,
            "step_id": step_id,
            "type": type_name,
            "message": message,
            "parent_error_id": parent,
            "attempt": h.attempt or 1,
            "attributes": attributes or {},
        }
    )
    _stage(run, eid, "occurred", step_id)
    run._errors_by_step.setdefault(step_id, []).append(eid)
    run._errors[eid] = step_id
    return eid


def _note_child_error(h: StepHandle, eid: str) -> None:
    parent = h.parent
    if parent is not None and type(parent) is _rec.StepHandle:
        if parent._child_errors is None:
            parent._child_errors = []
        parent._child_errors.append(eid)


def on_exception(run: RunHandle, h: StepHandle, exc: BaseException) -> None:
    """A step ends with an exception: record the error once, or its propagation."""
    h.status = "error"
    message = str(exc)
    if not isinstance(exc, Exception):
        # KeyboardInterrupt, SystemExit, CancelledError, GeneratorExit: the step
        # was interrupted; that is not an error of the agent.
        h.err = (type(exc).__name__, message, None)
        h.set("interrupted", type(exc).__name__)
        return
    tb = None
    if CONFIG.capture_tracebacks:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__, limit=12))[-8000:]
    tag = _tag(exc)
    if tag is not None and tag[0] == run.run_id:
        eid = tag[1]
        _stage(run, eid, "propagated", h.id)
        run._errors_by_step.setdefault(h.id, []).append(eid)
    else:
        parent = _find_cause(run, exc)
        eid = _new_error(run, h, type(exc).__name__, message, parent)
        try:
            setattr(exc, _ATTR, (run.run_id, eid))
        except (AttributeError, TypeError):
            pass  # an exception type without __dict__: identity is lost, the error still counts
    h.error_id = eid
    h.err = (type(exc).__name__, message, tb)
    _note_child_error(h, eid)
    if h.retry_of is not None:
        run._retry_of[h.id] = h.retry_of


def report_error(run: RunHandle, h: StepHandle, type_name: str, message: str, attributes: dict[str, Any]) -> str:
    """``s.error(...)``: an error reported without raising."""
    attrs = dict(attributes)
    attrs["reported"] = True
    eid = _new_error(run, h, type_name, message, None, attrs)
    h.status = "error"
    h.error_id = eid
    h.err = (type_name, message, None)
    _note_child_error(h, eid)
    return eid


def on_retry_success(run: RunHandle, h: StepHandle) -> None:
    """An attempt succeeded: the errors of the attempts it retries are recovered."""
    if h.status == "error":
        return
    reason = f"attempt {h.attempt or '?'} ({h.id}) succeeded"
    prev: str | None = h.retry_of
    hops = 0
    while prev is not None and hops < 1000:
        for eid in run._errors_by_step.get(prev, ()):
            _stage(run, eid, "recovered", h.id, reason)
        # Errors that propagated out of a failed attempt's children are its errors too.
        prev = run._retry_of.get(prev)
        hops += 1


def on_fallback(run: RunHandle, h: StepHandle, reason: str) -> None:
    """``s.fallback(...)``: the error being handled (or the step's children's errors) is ignored."""
    import sys

    exc = sys.exc_info()[1]
    ids: list[str] = []
    if exc is not None:
        tag = _tag(exc)
        if tag is not None and tag[0] == run.run_id:
            ids.append(tag[1])
    if not ids and h._child_errors:
        ids = list(h._child_errors)
    if not ids and h.error_id is not None:
        ids = [h.error_id]
    for eid in dict.fromkeys(ids):
        _stage(run, eid, "ignored", h.id, reason)


def on_run_exception(run: RunHandle, exc: BaseException) -> None:
    """An exception escapes the run: its error ends ``failed``."""
    tag = _tag(exc)
    if tag is not None and tag[0] == run.run_id:
        _stage(run, tag[1], "failed", None, f"escaped the run: {type(exc).__name__}")


def on_run_failure(run: RunHandle) -> None:
    """The run ended as a failure; nothing to do at run time beyond the escaping exception.

    Which open errors reached the failure is decided by the lifecycle analysis,
    which sees the dependency graph.
    """
    return None
