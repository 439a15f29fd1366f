"""Live export to the observability stack: runs as OTLP traces, sent to a collector while they run.

`OtlpExporter` is a sink (`trajdebug.record.Sink`): the recorder's writer
thread hands it each batch of records (already redacted, summarized when
summary mode is on) as the JSON lines it encoded once (``takes_lines``: the
writer thread neither decodes nor copies them for the exporter), and the
exporter's own thread decodes them and turns them into spans with the mapping of
``trajdebug export --to otlp`` (`trajdebug.sources.formats.export`: a run is a trace,
a step a span, dependencies span links, an error an ``exception`` event, each
lifecycle stage a ``trajdebug.error.<stage>`` event on the step where it
happened), as the OpenTelemetry SDK's ``ReadableSpan``.  The sending is the
SDK's ``OTLPSpanExporter`` (``opentelemetry-exporter-otlp-proto-http``, the
``otlp`` extra): protobuf over HTTP, the standard ``OTEL_EXPORTER_OTLP_*``
settings (endpoint, headers, timeout, compression, TLS certificates), and its
own retries with backoff within its ``timeout``.

What it promises:

- **Never breaks or stalls the agent.**  The agent's threads never call it; the
  writer thread only appends to its queue.  Converting, sending, waiting and
  retrying happen on the exporter's thread.
- **Batches** of at most ``max_batch`` spans, sent at least every
  ``interval`` seconds while spans wait.
- **Retries until delivered**: the SDK's exporter gives up after its own
  deadline (``timeout``); when the last try was a refused connection, a
  timeout, or a status 408, 429, 502, 503 or 504, this loop keeps the batch
  and hands it over again after an exponential backoff (``backoff`` seconds,
  doubled up to ``max_backoff``, with jitter), for as long as it takes: a
  collector that restarts loses nothing.  Another status (400: the collector
  cannot read it) drops the batch, counted and logged once.
- **A bounded queue**: at most ``max_queue`` records and spans wait (records
  are turned into spans on the exporter's thread, so the writer thread only
  appends).  A batch of records that would overflow it is refused whole and
  counted in the run's account (``recorder.lost.export_dropped``; the batch
  that carries the run's end is counted in `stats` only) and in `stats`.
- Spans of steps that failed, and of top-level steps, wait for the run's end
  (their error's later stages become their events, and the run's outcome
  rides on the trace's root); the others leave as soon as they are written.

Example:
    ```python
    from trajdebug.integrations.otlp_exporter import OtlpExporter

    trajdebug.configure(sinks=(OtlpExporter("http://127.0.0.1:4318/v1/traces"),))
    ```
"""

from __future__ import annotations

import atexit
import functools
import logging
import random
import threading
import time
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.core.codec import loads
from trajdebug.core.model import ErrorEvent, Run, StageChange
from trajdebug.core.schema import Problems, decode_step
from trajdebug.sources.formats.export import resource_attributes, stage_event, step_span
from trajdebug.sources.formats.otlp_json import attributes as decode_attributes


log = logging.getLogger("trajdebug")

RETRYABLE = frozenset({408, 429, 502, 503, 504})
"""Statuses after which a batch is handed over again (the OTLP/HTTP specification's list)."""


@dataclass(slots=True)
class ExportStats:
    """What the exporter did so far."""

    spans_sent: int = 0
    """Spans the collector accepted."""
    batches_sent: int = 0
    """Requests the collector accepted."""
    retries: int = 0
    """Requests sent again after a failure (the SDK exporter's own retries and this loop's)."""
    dropped_queue_full: int = 0
    """Records refused because the queue was full."""
    dropped_rejected: int = 0
    """Spans in batches the collector rejected for good (a status that is not retryable), or that could
    not be encoded."""
    dropped_at_shutdown: int = 0
    """Spans still queued when `OtlpExporter.shutdown` gave up."""
    late_events: int = 0
    """Stage events whose step's span had left already (kept on no span)."""
    last_error: str | None = None
    """The last failure, as one line."""


@dataclass(slots=True)
class _RunState:
    """What the exporter keeps of one run while it is being exported."""

    run_id: str
    name: str = "run"
    start_ns: int = 0
    metadata: dict[str, Any] = field(default_factory=dict)
    continues: str | None = None
    errors: dict[str, ErrorEvent] = field(default_factory=dict)
    events: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    held: list[Any] = field(default_factory=list)
    sent: set[str] = field(default_factory=set)
    outcome: str = "incomplete"
    failure_reason: str | None = None
    end_ns: int | None = None
    resource: Any = None
    """The run's OpenTelemetry ``Resource``, rebuilt when its identity, metadata or outcome changes."""

    def run(self) -> Run:
        return Run(
            self.run_id,
            self.name,
            start_ns=self.start_ns,
            end_ns=self.end_ns,
            outcome=self.outcome,  # type: ignore[arg-type]
            failure_reason=self.failure_reason,
            metadata=self.metadata,
            continues=self.continues,
        )


def _context(trace_id: str, span_id: str) -> Any:
    from opentelemetry.trace import SpanContext, TraceFlags

    return SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def readable_span(span: Mapping[str, Any], resource: Any, scope: Any) -> Any:
    """One span of the export mapping (OTLP/JSON, `trajdebug.sources.formats.export.step_span`) as the OpenTelemetry
    SDK's ``ReadableSpan``: the mapping stays in one place, and the SDK's encoder writes what it says."""
    from opentelemetry.sdk.trace import Event, ReadableSpan
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode

    trace, parent, status = span["traceId"], span.get("parentSpanId"), span.get("status") or {}
    return ReadableSpan(
        name=span["name"],
        context=_context(trace, span["spanId"]),
        parent=_context(trace, parent) if parent else None,
        resource=resource,
        attributes=decode_attributes(span.get("attributes")),
        events=[Event(e["name"], decode_attributes(e.get("attributes")), int(e["timeUnixNano"])) for e in span.get("events", ())],
        links=[Link(_context(k["traceId"], k["spanId"]), decode_attributes(k.get("attributes"))) for k in span.get("links", ())],
        # OTLP numbers span kinds from 1 (INTERNAL), the API from 0.
        kind=SpanKind(int(span.get("kind", 1)) - 1),
        status=Status(StatusCode.ERROR, status.get("message")) if status.get("code") == 2 else Status(StatusCode.UNSET),
        start_time=int(span["startTimeUnixNano"]),
        end_time=int(span["endTimeUnixNano"]),
        instrumentation_scope=scope,
    )


def _watching_session(exporter: OtlpExporter) -> Any:
    """A ``requests.Session`` that tells the exporter each try's outcome: the SDK's exporter answers only
    success or failure, and this loop must know whether the last failure was worth another try."""
    import requests

    class Session(requests.Session):
        def send(self, request: Any, **kwargs: Any) -> Any:
            exporter._tries += 1
            if exporter._tries > 1:
                exporter.stats.retries += 1
            try:
                response = super().send(request, **kwargs)
            except Exception as exc:
                exporter._last = (None, f"{type(exc).__name__}: {exc}")
                raise
            exporter._last = (int(response.status_code), f"HTTP {response.status_code}")
            return response

    return Session()


class OtlpExporter:
    """A sink that exports runs live to an OTLP/HTTP collector (see the module docstring).

    Args:
        endpoint: The collector's traces URL; None reads ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``http://localhost:4318/v1/traces`` without either).
        encoding: ``protobuf``, the only one (the SDK's exporter sends protobuf; see docs/production.md).
        headers: Extra request headers (an API key for a hosted backend); None reads ``OTEL_EXPORTER_OTLP_HEADERS``.
        max_queue: Records and spans that may wait at most.
        max_batch: Spans per request at most.
        interval: Seconds a span waits at most before its batch is sent (while the collector answers).
        timeout: Seconds the SDK's exporter may spend on one batch, its own retries included; None reads
            ``OTEL_EXPORTER_OTLP_TIMEOUT`` (10 s).
        backoff: This loop's first delay before it hands a batch over again, doubled each time up to ``max_backoff``.
        max_backoff: The longest delay between two hand-overs.
        compression: ``gzip``, ``deflate`` or None (None reads ``OTEL_EXPORTER_OTLP_COMPRESSION``).
        service_name: The ``service.name`` of the traces (else the run's metadata ``service.name``, else
            ``trajdebug``).
        **otlp: Passed to ``OTLPSpanExporter`` (``certificate_file``, ``client_key_file``,
            ``client_certificate_file``).
    """

    loss_kind = "export_dropped"
    """How the run's account counts records this sink refused (`trajdebug.record.writer.Slot`)."""
    takes_lines = True
    """The writer hands over its encoded lines; they are decoded on the exporter's thread."""

    def __init__(
        self,
        endpoint: str | None = None,
        *,
        encoding: str = "protobuf",
        headers: Mapping[str, str] | None = None,
        max_queue: int = 20_000,
        max_batch: int = 512,
        interval: float = 0.5,
        timeout: float | None = None,
        backoff: float = 0.1,
        max_backoff: float = 5.0,
        compression: str | None = None,
        service_name: str | None = None,
        **otlp: Any,
    ) -> None:
        if encoding != "protobuf":
            raise ValueError(
                f"OtlpExporter(encoding={encoding!r}): only 'protobuf' is sent live (every OTLP/HTTP collector takes it); "
                "for OTLP/JSON files use `trajdebug export --to otlp`"
            )
        try:
            from opentelemetry.exporter.otlp.proto.http import Compression
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.util.instrumentation import InstrumentationScope
        except ImportError as exc:
            raise ImportError("OtlpExporter needs opentelemetry-exporter-otlp-proto-http (pip install 'trajdebug[otlp]')") from exc
        self._tries = 0
        self._last: tuple[int | None, str] = (None, "")
        self._otlp = OTLPSpanExporter(
            endpoint,
            headers=dict(headers) if headers is not None else None,
            timeout=timeout,
            compression=Compression(compression) if compression is not None else None,
            session=_watching_session(self),
            **otlp,
        )
        self._scope = InstrumentationScope("trajdebug", _version())
        self.endpoint = self._otlp._endpoint if isinstance(getattr(self._otlp, "_endpoint", None), str) else str(endpoint)
        self.encoding = encoding
        self.max_queue = max_queue
        self.max_batch = max_batch
        self.interval = interval
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.service_name = service_name
        self.stats = ExportStats()
        self._runs: dict[str, _RunState] = {}
        self._queue: deque[tuple[str, list[dict[str, Any]], Any]] = deque()
        self._inbox: deque[list[Mapping[str, Any] | bytes]] = deque()
        self._queued = 0
        """Records waiting to be converted plus spans waiting to be sent."""
        self._in_flight = 0
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._warned: set[str] = set()
        _EXPORTERS.add(self)

    # -- the sink (writer thread) -------------------------------------------------------------

    def write(self, records: Sequence[Mapping[str, Any] | bytes]) -> int:
        """Queue a batch of records, as mappings or JSON lines (the exporter's thread decodes them and turns
        them into spans); returns how many were refused (the queue is full: the whole batch is refused and
        counted)."""
        n = len(records)
        if not n:
            return 0
        with self._cond:
            if self._stopping or self._queued + n > self.max_queue:
                self.stats.dropped_queue_full += n
                self._warn("full", f"trajdebug: OTLP export queue full ({self.max_queue}; {self.endpoint} down?): records dropped, counted")
                return n
            self._inbox.append(list(records))
            self._queued += n
            self._ensure()
            self._cond.notify()
        return 0

    def _convert(self, batches: list[list[Mapping[str, Any] | bytes]]) -> list[tuple[str, dict[str, Any], Any]]:
        """Exporter thread: records (or their JSON lines) to spans (the run's state kept between batches)."""
        spans: list[tuple[str, dict[str, Any], Any]] = []
        for records in batches:
            for rec in records:
                try:
                    spans.extend(self._on_record(loads(rec) if rec.__class__ is bytes else rec))  # type: ignore[arg-type]
                except Exception as exc:  # noqa: BLE001 - one odd record costs its span, not the batch
                    self._warn("record", f"trajdebug: a record could not be exported ({type(exc).__name__}: {exc})")
        return spans

    def close(self) -> None:
        """A run's sinks close: nothing to release (the exporter serves every run; see `shutdown`)."""
        with self._cond:
            self._cond.notify()

    def _append(self, run_id: str, span: dict[str, Any], resource: Any) -> None:
        if self._queue and self._queue[-1][0] == run_id and self._queue[-1][2] is resource:
            self._queue[-1][1].append(span)
        else:
            self._queue.append((run_id, [span], resource))

    def _resource(self, state: _RunState) -> Any:
        # Built once per change of the run's identity, metadata or outcome (shared by its spans).
        if state.resource is not None:
            return state.resource
        from opentelemetry.sdk.resources import Resource

        attrs = decode_attributes(resource_attributes(state.run()))
        if self.service_name is not None:
            attrs = {"service.name": self.service_name, **{k: v for k, v in attrs.items() if k != "service.name"}}
        state.resource = Resource(attrs)
        return state.resource

    def _on_record(self, rec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], Any]]:
        t = rec.get("t")
        run_id = str(rec.get("run_id"))
        state = self._runs.get(run_id)
        if state is None:
            state = self._runs[run_id] = _RunState(run_id)
        if t == "run":
            state.name = str(rec.get("name") or "run")
            state.start_ns = int(rec.get("start_ns") or 0)
            md = rec.get("metadata")
            state.metadata = dict(md) if isinstance(md, Mapping) else {}
            state.continues = rec.get("continues") if isinstance(rec.get("continues"), str) else None
            state.resource = None
        elif t == "meta":
            md = rec.get("metadata")
            if isinstance(md, Mapping):
                state.metadata.update(md)
                state.resource = None
        elif t == "error":
            eid = str(rec.get("error_id"))
            attrs = rec.get("attributes")
            state.errors[eid] = ErrorEvent(
                eid,
                str(rec.get("step_id")),
                str(rec.get("type")),
                str(rec.get("message")),
                rec.get("parent_error_id") if isinstance(rec.get("parent_error_id"), str) else None,
                attempt=int(rec.get("attempt") or 1),
                attributes=dict(attrs) if isinstance(attrs, Mapping) else {},
            )
        elif t == "stage":
            err = state.errors.get(str(rec.get("error_id")))
            if err is not None:
                sid = rec.get("step_id") if isinstance(rec.get("step_id"), str) else None
                change = StageChange(rec.get("stage"), sid, int(rec.get("time_ns") or 0), rec.get("reason"))  # type: ignore[arg-type]
                at = sid if sid is not None else err.step_id
                if at in state.sent:
                    self.stats.late_events += 1
                else:
                    state.events.setdefault(at, []).append(stage_event(err, change))
        elif t == "step":
            step = decode_step(str(rec.get("step_id")), rec, Problems())
            if step.status == "error" or step.parent_id is None:
                state.held.append(step)
                return []
            state.sent.add(step.step_id)
            return [(run_id, step_span(state.run(), step, state.events.pop(step.step_id, [])), self._resource(state))]
        elif t == "end":
            state.outcome = str(rec.get("outcome") or "success")
            state.failure_reason = rec.get("failure_reason") if isinstance(rec.get("failure_reason"), str) else None
            state.end_ns = rec.get("end_ns") if isinstance(rec.get("end_ns"), int) else None
            state.resource = None
            return self._release(state)
        return []

    def _release(self, state: _RunState) -> list[tuple[str, dict[str, Any], Any]]:
        """The run ended: its held spans leave, with every event that waited for them."""
        run = state.run()
        resource = self._resource(state)
        out = [(state.run_id, step_span(run, s, state.events.pop(s.step_id, [])), resource) for s in state.held]
        self.stats.late_events += sum(len(v) for v in state.events.values())
        del self._runs[state.run_id]
        return out

    # -- the exporter's thread ---------------------------------------------------------------

    def _ensure(self) -> None:
        # Caller holds the condition.
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name="trajdebug-otlp", daemon=True)
            self._thread.start()

    def _take(self) -> list[tuple[str, list[dict[str, Any]], Any]]:
        # Caller holds the condition: up to max_batch spans, grouped by run.
        out: list[tuple[str, list[dict[str, Any]], Any]] = []
        n = 0
        while self._queue and n < self.max_batch:
            run_id, spans, resource = self._queue[0]
            room = self.max_batch - n
            if len(spans) <= room:
                self._queue.popleft()
                out.append((run_id, spans, resource))
                n += len(spans)
            else:
                out.append((run_id, spans[:room], resource))
                del spans[:room]
                n += room
        self._in_flight = n
        return out

    def _loop(self) -> None:
        first_wait: float | None = None
        while True:
            with self._cond:
                while not self._queue and not self._inbox and not self._stopping:
                    self._cond.wait()
                    first_wait = None
                batches = list(self._inbox)
                self._inbox.clear()
            if batches:
                spans = self._convert(batches)
                with self._cond:
                    for run_id, span, resource in spans:
                        self._append(run_id, span, resource)
                    self._queued += len(spans) - sum(len(b) for b in batches)
                    self._cond.notify_all()
            with self._cond:
                if not self._queue:
                    if self._stopping and not self._inbox:
                        return
                    continue
                if first_wait is None:
                    first_wait = time.monotonic()
                left = first_wait + self.interval - time.monotonic()
                if self._queued < self.max_batch and left > 0 and not self._stopping and not self._urgent:
                    if not self._inbox:
                        self._cond.wait(left)
                    continue
                batch = self._take()
                if not self._queue:
                    self._urgent = False
            first_wait = None
            try:
                sent = self._send_until_done(batch)
            except Exception as exc:  # noqa: BLE001 - the exporter's thread never dies for one batch
                sent = False
                self.stats.dropped_rejected += self._in_flight
                self._warn("encode", f"trajdebug: a batch could not be exported ({type(exc).__name__}: {exc}); dropped, counted")
            with self._cond:
                self._queued -= self._in_flight
                self._in_flight = 0
                if sent:
                    self._cond.notify_all()

    def _send_until_done(self, batch: list[tuple[str, list[dict[str, Any]], Any]]) -> bool:
        """Hand the batch to the SDK's exporter until the collector takes it, refuses it for good, or shutdown's
        deadline passes (the SDK's exporter retries within its own deadline; this loop outlasts it)."""
        from opentelemetry.sdk.trace.export import SpanExportResult

        spans = [readable_span(span, resource, self._scope) for _, group, resource in batch for span in group]
        n, delay, self._tries = len(spans), self.backoff, 0
        while True:
            tries, self._last = self._tries, (None, "not sent")
            if self._otlp.export(spans) is SpanExportResult.SUCCESS:
                self.stats.spans_sent += n
                self.stats.batches_sent += 1
                return True
            status, why = self._last
            self.stats.last_error = why
            with self._cond:
                if self._stopping and self._deadline is not None and time.monotonic() >= self._deadline:
                    self.stats.dropped_at_shutdown += n
                    return False
            # No try at all: the SDK could not encode the batch or found it too large; another status: for good.
            if self._tries == tries or (status is not None and status not in RETRYABLE):
                self.stats.dropped_rejected += n
                self._warn(f"status{status}", f"trajdebug: {self.endpoint} rejected {n} spans ({why}); dropped, counted")
                return False
            self._warn("retry", f"trajdebug: cannot export to {self.endpoint} ({why}); retrying in the background")
            with self._cond:
                end = time.monotonic() + delay * (0.5 + random.random())
                if self._stopping and self._deadline is not None:
                    end = min(end, self._deadline)
                while time.monotonic() < end:
                    self._cond.wait(end - time.monotonic())
            delay = min(delay * 2, self.max_backoff)

    _deadline: float | None = None
    _urgent = False
    _shut = False

    def _warn(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            log.warning("%s", message)

    # -- lifecycle -------------------------------------------------------------------------

    def pending(self) -> int:
        """Spans queued or being sent."""
        with self._cond:
            return self._queued

    def force_flush(self, timeout: float = 10.0) -> bool:
        """Send what is queued now and wait for it, at most ``timeout`` seconds; True when nothing is left."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._urgent = True
            self._cond.notify_all()
            while self._queued and time.monotonic() < deadline:
                if self._thread is None or not self._thread.is_alive():
                    self._ensure()
                self._cond.notify_all()
                self._cond.wait(min(0.05, max(0.0, deadline - time.monotonic())))
            return self._queued == 0

    def shutdown(self, timeout: float = 5.0) -> bool:
        """Flush (at most ``timeout`` seconds), then stop the thread; spans left are counted as dropped."""
        ok = self.force_flush(timeout)
        with self._cond:
            self._stopping = True
            self._deadline = time.monotonic()
            self.stats.dropped_at_shutdown += self._queued - self._in_flight
            self._queue.clear()
            self._inbox.clear()
            self._queued = self._in_flight
            self._cond.notify_all()
            first, self._shut = not self._shut, True
        if first:  # ends the SDK exporter's retry wait at once; the batch it held is counted by the exporter's thread
            self._otlp.shutdown()  # type: ignore[no-untyped-call]
        return ok


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("trajdebug")
    except PackageNotFoundError:  # pragma: no cover - an uninstalled checkout
        return "0"


_EXPORTERS: weakref.WeakSet[OtlpExporter] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    # atexit runs the latest registered first, so this runs before the recorder's own exit flush:
    # flush the recorder here, then send what it handed to the exporters.
    try:
        from trajdebug.record.config import CONFIG
        from trajdebug.record.writer import flush

        flush(CONFIG.exit_timeout)
        for exporter in list(_EXPORTERS):
            exporter.shutdown(CONFIG.exit_timeout)
    except Exception:
        log.debug("trajdebug: OTLP export at exit failed", exc_info=True)


__all__ = ["RETRYABLE", "ExportStats", "OtlpExporter", "readable_span"]
