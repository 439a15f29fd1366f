"""Error lifecycles as `logging` records with one set of fields, for log pipelines.

(Named ``errorlog`` rather than ``logging`` so that it never shadows the
standard module.)

Every record carries the unified fields (`FIELDS`): ``timestamp`` (ISO 8601,
UTC), ``trace_id`` (the run id), ``step_id``, ``error_id``,
``parent_error_id``, ``stage``, ``severity``, ``message`` and ``agent_id``.
They are attributes of the `logging.LogRecord` (``message`` as
``error_message``, since ``message`` is reserved by `logging`) and, all
together under their own names, the dict ``record.trajdebug``; `JsonFormatter`
writes exactly that dict as one JSON line.  Levels follow severity: WARN ->
WARNING, ERROR -> ERROR, CRITICAL -> CRITICAL.

Two ways in:

* `emit_errors` logs the final state of each error of a finished run (or of an
  `ErrorReport`), with the severity the lifecycle analysis assigned.
* `LiveErrorLog` (``with LiveErrorLog(logger):``) logs each lifecycle
  transition while the agent runs, from the recorder itself.  Severity is not
  known yet at run time, so a live record's severity is provisional: ``ERROR``
  for ``failed``, ``WARN`` for everything else.

The logger is ``trajdebug.errors`` unless you pass one.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from trajdebug.core.lifecycle import ErrorReport
    from trajdebug.core.model import Run


FIELDS: tuple[str, ...] = (
    "timestamp",
    "trace_id",
    "step_id",
    "error_id",
    "parent_error_id",
    "stage",
    "severity",
    "message",
    "agent_id",
)
"""The unified fields, in the order `JsonFormatter` writes them."""

LEVELS: dict[str, int] = {"WARN": logging.WARNING, "ERROR": logging.ERROR, "CRITICAL": logging.CRITICAL}
"""Logging level of each severity."""

LOGGER_NAME = "trajdebug.errors"


def _iso(time_ns: int) -> str:
    return (
        datetime.fromtimestamp(time_ns / 1e9, tz=UTC)
        .isoformat(timespec="microseconds")
        .replace("+00:00", "Z")
    )


def _log(logger: logging.Logger, fields: dict[str, Any], time_ns: int) -> bool:
    level = LEVELS.get(str(fields["severity"]), logging.ERROR)
    if not logger.isEnabledFor(level):
        return False
    text = f"{fields['severity']} {fields['stage']} {fields['error_id']} at step {fields['step_id']}: {fields['message']}"
    extra = {k: v for k, v in fields.items() if k != "message"}
    extra["error_message"] = fields["message"]
    extra["trajdebug"] = dict(fields)
    record = logger.makeRecord(logger.name, level, "(trajdebug)", 0, text, (), None, extra=extra)
    if time_ns:
        # The record's time is the error's time, not the time it was logged.
        record.created = time_ns / 1e9
        record.msecs = (time_ns // 1_000_000) % 1000
    logger.handle(record)
    return True


def error_fields(report: ErrorReport, run: Run | None = None) -> list[dict[str, Any]]:
    """The unified fields of each error of a report (final stage, analysed severity), in occurrence order."""
    steps = run.step_map() if run is not None else {}
    out: list[dict[str, Any]] = []
    for e in report.errors:
        last = e.stages[-1].time_ns if e.stages else e.time_ns
        step = steps.get(e.step_id)
        agent = e.agent if e.agent is not None else (step.agent if step is not None else None)
        out.append(
            {
                "timestamp": _iso(last or e.time_ns),
                "trace_id": report.run_id,
                "step_id": e.step_id,
                "error_id": e.error_id,
                "parent_error_id": e.parent_error_id,
                "stage": e.stage,
                "severity": e.severity,
                "message": f"{e.type}: {e.message}",
                "agent_id": agent,
                "_time_ns": last or e.time_ns,
            }
        )
    return out


def emit_errors(
    run_or_report: Run | ErrorReport, logger: logging.Logger | None = None, *, run: Run | None = None
) -> int:
    """Log the final state of every error of a run, one record each, at the level of its severity.

    Args:
        run_or_report: A run (analysed here) or an `ErrorReport`.
        logger: Where to log (default: the ``trajdebug.errors`` logger).
        run: The run of a report, for agent ids (optional).

    Returns:
        How many records were logged (records below the logger's level are not).
    """
    from trajdebug.core.model import Run

    if isinstance(run_or_report, Run):
        # The lifecycle analysis lives in the core, below the recorder; imported here,
        # only when asked to, so that recording never pays for loading it.
        from trajdebug.core.lifecycle import analyze_errors

        run = run_or_report
        report = analyze_errors(run)
    else:
        report = run_or_report
    log = logger or logging.getLogger(LOGGER_NAME)
    n = 0
    for fields in error_fields(report, run):
        t = fields.pop("_time_ns")
        n += _log(log, fields, t)
    return n


class JsonFormatter(logging.Formatter):
    """Format records carrying trajdebug's unified fields as one JSON object per line.

    Records without them (other loggers) are written with the same keys, filled
    from the record itself, so one handler can serve a whole application.
    """

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "trajdebug", None)
        if not isinstance(fields, Mapping):
            fields = {
                "timestamp": _iso(int(record.created * 1e9)),
                "trace_id": None,
                "step_id": None,
                "error_id": None,
                "parent_error_id": None,
                "stage": None,
                "severity": {"WARNING": "WARN"}.get(record.levelname, record.levelname),
                "message": record.getMessage(),
                "agent_id": None,
            }
        return json.dumps({k: fields.get(k) for k in FIELDS}, ensure_ascii=False, default=str)


# -- live ------------------------------------------------------------------------------

_listeners: list[Callable[[Mapping[str, Any]], None]] = []
_lock = threading.Lock()


def _notify(record: Mapping[str, Any], step_agent: str | None) -> None:
    """Called by the recorder for every error and stage record (only when a listener is active)."""
    for fn in list(_listeners):
        try:
            fn({**record, "agent_id": step_agent})
        except Exception:  # logging never breaks the agent
            logging.getLogger("trajdebug").debug("trajdebug: live error listener failed", exc_info=True)


def live_active() -> bool:
    """Whether any live listener is registered (the recorder skips the work otherwise)."""
    return bool(_listeners)


class LiveErrorLog:
    """Log each error lifecycle transition as it happens (a context manager, or `start`/`stop`).

    Example:
        ```python
        logging.basicConfig(level=logging.WARNING)
        with trajdebug.record.errorlog.LiveErrorLog():
            with trajdebug.run("agent"):
                ...
        ```
    """

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.logger = logger or logging.getLogger(LOGGER_NAME)
        self._messages: dict[str, tuple[str, str | None, str | None]] = {}

    def _on(self, rec: Mapping[str, Any]) -> None:
        eid = str(rec.get("error_id"))
        if rec.get("t") == "error":
            self._messages[eid] = (
                f"{rec.get('type')}: {rec.get('message')}",
                rec.get("parent_error_id"),
                rec.get("agent_id"),
            )
            return
        message, parent, agent = self._messages.get(eid, ("", None, None))
        stage = str(rec.get("stage"))
        reason = rec.get("reason")
        t = int(rec.get("time_ns") or 0)
        fields = {
            "timestamp": _iso(t) if t else None,
            "trace_id": rec.get("run_id"),
            "step_id": rec.get("step_id"),
            "error_id": eid,
            "parent_error_id": parent,
            "stage": stage,
            "severity": "ERROR" if stage == "failed" else "WARN",
            "message": message + (f" ({reason})" if reason else ""),
            "agent_id": rec.get("agent_id") or agent,
        }
        _log(self.logger, fields, t)
        if stage in ("recovered", "ignored", "failed"):
            self._messages.pop(eid, None)

    def start(self) -> LiveErrorLog:
        """Begin logging transitions."""
        with _lock:
            _listeners.append(self._on)
        return self

    def stop(self) -> None:
        """Stop logging transitions."""
        with _lock:
            if self._on in _listeners:
                _listeners.remove(self._on)

    def __enter__(self) -> LiveErrorLog:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


__all__ = [
    "FIELDS",
    "LEVELS",
    "LOGGER_NAME",
    "JsonFormatter",
    "LiveErrorLog",
    "emit_errors",
    "error_fields",
    "live_active",
]
