"""Live OTLP export: spans reach a collector-compatible receiver on 127.0.0.1 with the export mapping,
survive a receiver restart, and the queue's bound is counted, never waited on by the agent."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

import trajdebug
from trajdebug.demo import run_demo
from trajdebug.integrations.otlp_exporter import OtlpExporter
from trajdebug.integrations.otlp_receiver import OtlpReceiver, decode_protobuf


@pytest.fixture
def receiver() -> OtlpReceiver:
    """A receiver listening on 127.0.0.1 for the test."""
    rx = OtlpReceiver().start()
    yield rx
    rx.stop()


def _steps(n: int, name: str = "agent") -> None:
    with trajdebug.run(name):
        for i in range(n):
            with trajdebug.step("fetch", kind="tool", input=f"q{i}") as s:
                s.output = {"row": i}


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_run_arrives_as_the_export_mapping_has_it(receiver: OtlpReceiver, tmp_path: Path, compression: str | None) -> None:
    """The demo's failed run, exported live, reads back from the receiver with the same steps, links,
    errors and lifecycle stages as the run in the store."""
    exporter = OtlpExporter(receiver.endpoint, compression=compression, interval=0.05)
    trajdebug.configure(sinks=(exporter,))
    recorded = run_demo("wrong-column", store=tmp_path / "demo.db", workdir=tmp_path)
    assert exporter.force_flush(10)
    [live] = receiver.runs().runs
    assert [s.step_id for s in recorded.steps] == [s.step_id for s in live.steps]
    assert [(s.name, s.kind, s.status, s.deps) for s in recorded.steps] == [(s.name, s.kind, s.status, s.deps) for s in live.steps]
    assert [(e.error_id, e.type, [c.stage for c in e.stages]) for e in recorded.errors] == [
        (e.error_id, e.type, [c.stage for c in e.stages]) for e in live.errors
    ]
    assert ("failure", recorded.failure_reason) == (live.outcome, live.failure_reason)
    assert {"application/x-protobuf"} == set(receiver.content_types)


def test_nothing_is_lost_across_a_receiver_restart(receiver: OtlpReceiver) -> None:
    """Spans recorded while the receiver is down are sent once it is back (within the queue's bound)."""
    exporter = OtlpExporter(receiver.endpoint, interval=0.02, backoff=0.02, max_backoff=0.1)
    trajdebug.configure(sinks=(exporter,))
    _steps(20)
    assert receiver.wait_for_spans(20)
    receiver.stop()
    for _ in range(5):
        _steps(20)
    trajdebug.flush(5)
    time.sleep(0.3)
    assert exporter.stats.retries > 0
    receiver.start()
    assert exporter.force_flush(10)
    assert 120 == receiver.span_count()
    assert 0 == exporter.stats.dropped_queue_full + exporter.stats.dropped_rejected


def test_the_batch_outlives_the_sdk_exporters_deadline(receiver: OtlpReceiver) -> None:
    """The SDK's exporter gives up after its timeout (0.3 s); the exporter's loop keeps the batch and hands it
    over again, so a collector down for longer than that still gets every span."""
    exporter = OtlpExporter(receiver.endpoint, timeout=0.3, interval=0.02, backoff=0.05, max_backoff=0.1)
    trajdebug.configure(sinks=(exporter,))
    receiver.stop()
    _steps(20)
    trajdebug.flush(5)
    time.sleep(1.5)
    tries_while_down = exporter.stats.retries
    receiver.start()
    assert exporter.force_flush(10)
    assert (20, 0) == (receiver.span_count(), exporter.stats.dropped_rejected + exporter.stats.dropped_at_shutdown)
    assert tries_while_down >= 3  # more than the SDK exporter's own two tries within its deadline


def test_a_full_queue_is_counted_in_the_runs_account(tmp_path: Path) -> None:
    """With the collector down and a queue of 10 spans, later records are refused and counted as
    export_dropped in the run's end record; the store keeps the whole run."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    exporter = OtlpExporter(f"http://127.0.0.1:{port}/v1/traces", max_queue=10, backoff=0.05)
    trajdebug.configure(sinks=(exporter,))
    with trajdebug.run("agent", store=tmp_path / "r.db") as r, trajdebug.step("agent", kind="agent"):
        for i in range(200):
            with trajdebug.step("fetch", kind="tool", input=f"q{i}"):
                pass
            if i % 50 == 0:
                r.flush()
    run = r.load()
    assert 201 == len(run.steps)
    lost = run.metadata["recorder"]["lost"]["export_dropped"]
    # The batch carrying the run's end is counted in the exporter's stats only (the end was built first).
    assert 0 < lost <= exporter.stats.dropped_queue_full
    exporter.shutdown(0.1)


def test_a_batch_the_collector_rejects_is_dropped_and_counted(receiver: OtlpReceiver) -> None:
    """A 400 is not retried: the batch is dropped and counted; a 503 is retried and then delivered."""
    exporter = OtlpExporter(receiver.endpoint, interval=0.01, backoff=0.01)
    trajdebug.configure(sinks=(exporter,))
    receiver.fail_next(1, 400)
    _steps(3)
    assert exporter.force_flush(5)
    assert 3 == exporter.stats.dropped_rejected
    receiver.fail_next(2, 503)
    _steps(3)
    assert exporter.force_flush(5)
    assert 3 == receiver.span_count() and exporter.stats.retries >= 2


def test_a_hanging_collector_does_not_hold_the_agent(tmp_path: Path) -> None:
    """A collector that accepts connections and never answers: the run's block ends at once, the store has it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    try:
        exporter = OtlpExporter(f"http://127.0.0.1:{server.getsockname()[1]}/v1/traces", timeout=30, interval=0.0)
        trajdebug.configure(sinks=(exporter,))
        t0 = time.perf_counter()
        with trajdebug.run("agent", store=tmp_path / "r.db") as r:
            for i in range(100):
                with trajdebug.step("fetch", kind="tool", input=f"q{i}"):
                    pass
        took = time.perf_counter() - t0
        # Held by the collector would mean the exporter's 30-s timeout; 10 s leaves a loaded machine room.
        assert took < 10.0
        assert 100 == len(r.load().steps)
        exporter.shutdown(0.1)
    finally:
        server.close()


def test_the_receiver_reads_what_the_opentelemetry_sdk_encodes() -> None:
    """Spans encoded by the OpenTelemetry SDK's own OTLP encoder decode to their ids and names."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    mem = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(mem))
    with tp.get_tracer("t").start_as_current_span("outer"), tp.get_tracer("t").start_as_current_span("inner"):
        pass
    finished = mem.get_finished_spans()
    env = decode_protobuf(encode_spans(finished).SerializeToString())
    got = {s["name"]: s for rs in env["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]}
    inner = next(s for s in finished if s.name == "inner")
    assert f"{inner.context.span_id:016x}" == got["inner"]["spanId"]
    assert got["outer"]["spanId"] == got["inner"]["parentSpanId"]


def test_the_receiver_refuses_what_it_cannot_read(receiver: OtlpReceiver) -> None:
    """Garbage protobuf is a 400, another content type a 415, another path a 404."""
    import urllib.error
    import urllib.request

    def post(path: str, ctype: str, body: bytes) -> int:
        req = urllib.request.Request(f"http://127.0.0.1:{receiver.port}{path}", data=body, headers={"Content-Type": ctype})
        try:
            with urllib.request.urlopen(req, timeout=5) as resp:
                return int(resp.status)
        except urllib.error.HTTPError as exc:
            return int(exc.code)

    assert 400 == post("/v1/traces", "application/x-protobuf", b"\xff\xff\xff")
    assert 415 == post("/v1/traces", "text/plain", b"x")
    assert 404 == post("/v1/logs", "application/json", b"{}")
    assert [] == receiver.envelopes


def _thirty_steps_then_fail(path: Path) -> None:
    with trajdebug.run("agent", path=path):
        for i in range(30):
            with trajdebug.step("fetch", kind="tool", input={"q": i}) as s:
                s.output = {"row": i}
        raise RuntimeError("wrong answer")


def test_the_exporter_takes_the_writers_lines_and_tail_sampling_holds_them(receiver: OtlpReceiver, tmp_path: Path) -> None:
    """The exporter gets the writer's encoded lines (takes_lines) beside a JSONL file: a successful run
    dropped by tail sampling sends no span and writes no line; a failed run sends every span, the same
    steps as the file holds."""
    exporter = OtlpExporter(receiver.endpoint, interval=0.02)
    trajdebug.configure(sinks=(exporter,), sample_rate=0.0, sample_buffer_bytes=2048)
    path = tmp_path / "runs.jsonl"
    with trajdebug.run("agent", path=path):
        for i in range(30):
            with trajdebug.step("fetch", kind="tool", input={"q": i}) as s:
                s.output = {"row": i}
    assert exporter.force_flush(5)
    assert 0 == receiver.span_count() and not path.exists()
    with pytest.raises(RuntimeError):
        _thirty_steps_then_fail(path)
    assert exporter.force_flush(5)
    [live] = receiver.runs().runs
    [stored] = trajdebug.load_runs(path)
    assert exporter.takes_lines is True
    assert ("failure", 30) == (live.outcome, len(live.steps))
    assert [(s.step_id, s.name) for s in stored.steps] == [(s.step_id, s.name) for s in live.steps]


def test_the_standard_otlp_settings_choose_the_collector(receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an endpoint the exporter reads OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and its headers from
    OTEL_EXPORTER_OTLP_HEADERS, as every OpenTelemetry exporter does."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k1")
    exporter = OtlpExporter(interval=0.01)
    trajdebug.configure(sinks=(exporter,))
    _steps(4)
    assert exporter.force_flush(5)
    assert (receiver.endpoint, 4) == (exporter.endpoint, receiver.span_count())
    assert {"k1"} == {h.get("x-api-key") for h in receiver.headers}


def test_json_is_refused_with_the_file_export_named() -> None:
    """Live export sends protobuf only; asking for JSON says where OTLP/JSON is written instead."""
    with pytest.raises(ValueError, match="export --to otlp"):
        OtlpExporter("http://127.0.0.1:4318/v1/traces", encoding="json")
