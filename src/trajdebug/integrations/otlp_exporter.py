"""Live export to the observability stack: runs as OTLP traces, sent to a collector while they run.

`OtlpExporter` is a sink (`trajdebug.record.Sink`): the recorder's writer
thread hands it each batch of records (already redacted, summarized when
summary mode is on) as the JSON lines it encoded once (``takes_lines``: the
writer thread neither decodes nor copies them for the exporter), and the
exporter's own thread decodes them and turns them into spans with the mapping of
``trajdebug export --to otlp`` (`trajdebug.formats.export`: a run is a trace,
a step a span, dependencies span links, an error an ``exception`` event, each
lifecycle stage a ``trajdebug.error.<stage>`` event on the step where it
happened) and queues them; its own thread sends them to the collector over
OTLP/HTTP, as protobuf (``application/x-protobuf``, the collector's default)
or JSON (``application/json``).

What it promises:

- **Never breaks or stalls the agent.**  The agent's threads never call it; the
  writer thread only appends to its queue.  Sending, waiting and retrying
  happen on the exporter's thread.
- **Batches** of at most ``max_batch`` spans, sent at least every
  ``interval`` seconds while spans wait.
- **Retries with backoff**: a refused connection, a timeout, or a status 429,
  502, 503 or 504 keeps the batch and tries again after an exponential backoff
  (``backoff`` seconds, doubled up to ``max_backoff``, with jitter; a
  ``Retry-After`` is honoured), for as long as it takes: a collector that
  restarts loses nothing.  Another status (400: the collector cannot read it)
  drops the batch, counted and logged once.
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
import base64
import gzip
import json
import logging
import random
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug._encode import loads
from trajdebug.formats.export import resource_attributes, stage_event, step_span
from trajdebug.model import ErrorEvent, Run, StageChange
from trajdebug.schema import Problems, decode_step


log = logging.getLogger("trajdebug")

RETRYABLE = frozenset({408, 429, 502, 503, 504})
"""Statuses after which a batch is sent again (the OTLP/HTTP specification's list)."""

PROTOBUF = "application/x-protobuf"
JSON = "application/json"


@dataclass(slots=True)
class ExportStats:
    """What the exporter did so far."""

    spans_sent: int = 0
    """Spans the collector accepted."""
    batches_sent: int = 0
    """Requests the collector accepted."""
    retries: int = 0
    """Requests sent again after a failure."""
    dropped_queue_full: int = 0
    """Records refused because the queue was full."""
    dropped_rejected: int = 0
    """Spans in batches the collector rejected for good (a status that is not retryable)."""
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
    resource: dict[str, Any] | None = None

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


def _hex_to_b64(value: Any) -> Any:
    if isinstance(value, str) and value:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode()
        except ValueError:
            return value
    return value


def _proto_ids(obj: Any) -> Any:
    """OTLP/JSON writes ids in hex; protobuf's JSON mapping reads bytes as base64."""
    if isinstance(obj, dict):
        return {
            k: (_hex_to_b64(v) if k in ("traceId", "spanId", "parentSpanId") else _proto_ids(v)) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_proto_ids(v) for v in obj]
    return obj


def encode_protobuf(envelope: Mapping[str, Any]) -> bytes:
    """An OTLP/JSON envelope as an ``ExportTraceServiceRequest`` (protobuf bytes)."""
    from google.protobuf import json_format
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    msg = json_format.ParseDict(_proto_ids(envelope), ExportTraceServiceRequest(), ignore_unknown_fields=True)
    return bytes(msg.SerializeToString())


def _scope() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"name": "trajdebug", "version": version("trajdebug")}
    except PackageNotFoundError:  # pragma: no cover - an uninstalled checkout
        return {"name": "trajdebug", "version": "0"}


class OtlpExporter:
    """A sink that exports runs live to an OTLP/HTTP collector (see the module docstring).

    Args:
        endpoint: The collector's traces URL (``http://127.0.0.1:4318/v1/traces`` by default).
        encoding: ``protobuf`` or ``json``.
        headers: Extra request headers (an API key for a hosted backend).
        max_queue: Records and spans that may wait at most.
        max_batch: Spans per request at most.
        interval: Seconds a span waits at most before its batch is sent (while the collector answers).
        timeout: Seconds one request may take.
        backoff: The first retry's delay, doubled each time up to ``max_backoff``.
        max_backoff: The longest delay between two tries.
        compression: ``gzip`` or None.
        service_name: The ``service.name`` of the traces (else the run's metadata ``service.name``, else
            ``trajdebug``).
    """

    loss_kind = "export_dropped"
    """How the run's account counts records this sink refused (`trajdebug.record.writer.Slot`)."""
    takes_lines = True
    """The writer hands over its encoded lines; they are decoded on the exporter's thread."""

    def __init__(
        self,
        endpoint: str = "http://127.0.0.1:4318/v1/traces",
        *,
        encoding: str = "protobuf",
        headers: Mapping[str, str] | None = None,
        max_queue: int = 20_000,
        max_batch: int = 512,
        interval: float = 0.5,
        timeout: float = 10.0,
        backoff: float = 0.1,
        max_backoff: float = 5.0,
        compression: str | None = None,
        service_name: str | None = None,
    ) -> None:
        if encoding not in ("protobuf", "json"):
            raise ValueError(f"OtlpExporter(encoding={encoding!r}): expected 'protobuf' or 'json'")
        if compression not in (None, "gzip"):
            raise ValueError(f"OtlpExporter(compression={compression!r}): expected 'gzip' or None")
        if encoding == "protobuf":
            try:
                from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: F401
            except ImportError as exc:
                raise ImportError(
                    "OtlpExporter(encoding='protobuf') needs opentelemetry-proto (pip install 'trajdebug[otlp]'), "
                    "or use encoding='json'"
                ) from exc
        self.endpoint = endpoint
        self.path = endpoint
        self.encoding = encoding
        self.headers = dict(headers or {})
        self.max_queue = max_queue
        self.max_batch = max_batch
        self.interval = interval
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.compression = compression
        self.service_name = service_name
        self.stats = ExportStats()
        self._runs: dict[str, _RunState] = {}
        self._queue: deque[tuple[str, list[dict[str, Any]], dict[str, Any]]] = deque()
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

    def _convert(self, batches: list[list[Mapping[str, Any] | bytes]]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """Exporter thread: records (or their JSON lines) to spans (the run's state kept between batches)."""
        spans: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
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

    def _append(self, run_id: str, span: dict[str, Any], resource: dict[str, Any]) -> None:
        if self._queue and self._queue[-1][0] == run_id and self._queue[-1][2] is resource:
            self._queue[-1][1].append(span)
        else:
            self._queue.append((run_id, [span], resource))

    def _resource(self, state: _RunState) -> dict[str, Any]:
        # Built once per change of the run's identity, metadata or outcome (shared by its spans).
        if state.resource is not None:
            return state.resource
        run = state.run()
        attrs = resource_attributes(run)
        if self.service_name is not None:
            attrs = [a for a in attrs if a["key"] != "service.name"]
            attrs.insert(0, {"key": "service.name", "value": {"stringValue": self.service_name}})
        state.resource = {"attributes": attrs}
        return state.resource

    def _on_record(self, rec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
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

    def _release(self, state: _RunState) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
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

    def _take(self) -> list[tuple[str, list[dict[str, Any]], dict[str, Any]]]:
        # Caller holds the condition: up to max_batch spans, grouped by run.
        out: list[tuple[str, list[dict[str, Any]], dict[str, Any]]] = []
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

    def _send_until_done(self, batch: list[tuple[str, list[dict[str, Any]], dict[str, Any]]]) -> bool:
        envelope = {
            "resourceSpans": [
                {"resource": resource, "scopeSpans": [{"scope": _scope(), "spans": spans}]}
                for _, spans, resource in batch
            ]
        }
        n = sum(len(spans) for _, spans, _ in batch)
        body = encode_protobuf(envelope) if self.encoding == "protobuf" else json.dumps(envelope).encode()
        if self.compression == "gzip":
            body = gzip.compress(body)
        delay = self.backoff
        while True:
            status, retry_after, why = self._post(body)
            if status is not None and 200 <= status < 300:
                self.stats.spans_sent += n
                self.stats.batches_sent += 1
                return True
            retryable = status is None or status in RETRYABLE
            self.stats.last_error = why
            if not retryable:
                self.stats.dropped_rejected += n
                self._warn(f"status{status}", f"trajdebug: {self.endpoint} rejected {n} spans ({why}); dropped, counted")
                return False
            with self._cond:
                if self._stopping and self._deadline is not None and time.monotonic() >= self._deadline:
                    self.stats.dropped_at_shutdown += n
                    return False
            self.stats.retries += 1
            self._warn("retry", f"trajdebug: cannot export to {self.endpoint} ({why}); retrying in the background")
            wait = retry_after if retry_after is not None else delay * (0.5 + random.random())
            with self._cond:
                end = time.monotonic() + wait
                if self._stopping and self._deadline is not None:
                    end = min(end, self._deadline)
                while time.monotonic() < end:
                    self._cond.wait(end - time.monotonic())
            delay = min(delay * 2, self.max_backoff)

    _deadline: float | None = None
    _urgent = False

    def _post(self, body: bytes) -> tuple[int | None, float | None, str]:
        headers = {"Content-Type": PROTOBUF if self.encoding == "protobuf" else JSON, **self.headers}
        if self.compression == "gzip":
            headers["Content-Encoding"] = "gzip"
        req = urllib.request.Request(self.endpoint, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                resp.read()
                return int(resp.status), None, f"HTTP {resp.status}"
        except urllib.error.HTTPError as exc:
            after = exc.headers.get("Retry-After") if exc.headers is not None else None
            try:
                retry_after = min(float(after), self.max_backoff * 4) if after else None
            except ValueError:
                retry_after = None
            return int(exc.code), retry_after, f"HTTP {exc.code}"
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            return None, None, f"{type(exc).__name__}: {reason}"

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
        return ok


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


__all__ = ["JSON", "PROTOBUF", "RETRYABLE", "ExportStats", "OtlpExporter", "encode_protobuf"]
