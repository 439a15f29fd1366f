"""Recording cost on agent-shaped payloads, beside the OpenTelemetry SDK (issue 27).

``python -m benchmarks.agentcost`` measures, each configuration in a fresh
process and the configurations interleaved round by round (the machine is
shared: ratios of medians of the same rounds, CPU time, not wall time):

- **payloads**: ``small`` (a 200-byte string in, a 200-byte string out) and
  ``chat`` (a list of chat messages of about 5 KB in, an assistant message
  with a tool call and usage out: `benchmarks.agentshapes.chat_messages` and
  `~benchmarks.agentshapes.assistant_message`); and, asked for with ``--payloads``,
  ``chat-grow``: conversations that grow by a turn each call, as an agent's do (the
  5 KB request, then a tool call and its result more per call, a new conversation
  every `GROW_TURNS` calls, about 11 KB on average), each call's answer its own;
- **recorders**: a decorated trajdebug step into a JSONL file or a store
  (``td-jsonl``, ``td-store``), and the OpenTelemetry SDK span with its
  ``BatchSpanProcessor``, the payloads set as JSON-string attributes (as
  OpenInference does), exported to an exporter that drops them
  (``otel-drop``) or through the SDK's own OTLP protobuf encoder
  (``encode_spans``) to a file (``otel-otlp``); and, when installed (``pip install -e '.[peers]'``),
  Pydantic's logfire as its docs instrument a function (``@logfire.instrument(extract_args=True,
  record_return=True)``), sending nothing, its spans dropped the same way (``logfire``).

Total CPU per step is the process's CPU time (every thread) from the run's
start until everything is written, divided by the steps; the agent's thread
is timed apart.  ``--write-doc`` replaces the section between the
``agentcost`` markers of docs/benchmarks.md with the table.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import run_scratch


ROOT = Path(__file__).resolve().parent.parent
RECORDERS = ("td-jsonl", "td-store", "otel-drop", "otel-otlp")
PEERS = tuple(p for p in ("logfire",) if importlib.util.find_spec(p) is not None)
"""Peers measured when they are installed (``pip install -e '.[peers]'``)."""
PAYLOADS = {"small": 20_000, "chat": 4_000}
"""Each payload and the steps one measurement records."""
MORE_PAYLOADS = {"chat-grow": 4_000}
"""Payloads measured when ``--payloads`` names them."""
GROW_TURNS = 20
"""Calls of one growing conversation (``chat-grow``) before the next starts."""


def _payload(kind: str) -> tuple[Any, Any]:
    from benchmarks.agentshapes import assistant_message, chat_messages

    if kind == "small":
        return "i" * 200, "o" * 200
    rng = random.Random(3)
    return chat_messages(1, rng), assistant_message(1, rng)


def _conversations() -> tuple[list[list[dict[str, Any]]], dict[int, Any]]:
    """``chat-grow``: the conversation of each call of a cycle (the request, then a turn more each call:
    the assistant's tool call and the tool's result), and the answer by conversation length."""
    from benchmarks.agentshapes import assistant_message, chat_messages

    rng = random.Random(3)
    msgs = chat_messages(1, rng)
    convs = []
    for t in range(GROW_TURNS):
        convs.append(list(msgs))
        call = assistant_message(t, rng)["choices"][0]["message"]
        result = {"role": "tool", "tool_call_id": f"call_{t}", "content": json.dumps(
            {"article": f"KB-{rng.randint(100, 999)}", "text": f"Refunds above the limit need approval (case {t}). " * 4}
        )}
        msgs = [*msgs, call, result]
    answers = {len(c): assistant_message(i, rng) for i, c in enumerate(convs)}
    return convs, answers


def _trajdebug(sink: str, payload: str, n: int) -> dict[str, Any]:
    import trajdebug

    if payload == "chat-grow":
        return _trajdebug_grow(sink, n)
    inp, out = _payload(payload)

    @trajdebug.step(kind="llm")
    def call(messages: Any) -> Any:
        return out

    tmp = Path(tempfile.mkdtemp(prefix="trajdebug-agentcost-"))
    trajdebug.configure(max_buffer=n + 1000, max_buffer_bytes=1 << 40, backlog_seconds=None)  # every step paid for
    kw: dict[str, Any] = {"path": tmp / "r.jsonl"} if sink == "jsonl" else {"store": tmp / "r.db"}
    warm: dict[str, Any] = {"path": tmp / "w.jsonl"} if sink == "jsonl" else {"store": tmp / "w.db"}
    with trajdebug.run("warm-up", **warm):
        for _ in range(min(n // 10, 1000)):
            call(inp)
    trajdebug.flush()
    gc.collect()
    p0 = time.process_time()
    with trajdebug.run("bench", **kw) as h:
        a0 = time.thread_time()
        for _ in range(n):
            call(inp)
        agent = time.thread_time() - a0
    trajdebug.flush()
    total = time.process_time() - p0
    return {"total_us": total / n * 1e6, "agent_us": agent / n * 1e6, "lost": h.losses["lost"]}


def _trajdebug_grow(sink: str, n: int) -> dict[str, Any]:
    """`_trajdebug` on growing conversations (``chat-grow``)."""
    import trajdebug

    convs, answers = _conversations()

    @trajdebug.step(kind="llm")
    def call(messages: Any) -> Any:
        return answers[len(messages)]

    tmp = Path(tempfile.mkdtemp(prefix="trajdebug-agentcost-"))
    trajdebug.configure(max_buffer=n + 1000, max_buffer_bytes=1 << 40, backlog_seconds=None)
    kw: dict[str, Any] = {"path": tmp / "r.jsonl"} if sink == "jsonl" else {"store": tmp / "r.db"}
    warm: dict[str, Any] = {"path": tmp / "w.jsonl"} if sink == "jsonl" else {"store": tmp / "w.db"}
    with trajdebug.run("warm-up", **warm):
        for i in range(min(n // 10, 1000)):
            call(convs[i % GROW_TURNS])
    trajdebug.flush()
    gc.collect()
    p0 = time.process_time()
    with trajdebug.run("bench", **kw) as h:
        a0 = time.thread_time()
        for i in range(n):
            call(convs[i % GROW_TURNS])
        agent = time.thread_time() - a0
    trajdebug.flush()
    total = time.process_time() - p0
    return {"total_us": total / n * 1e6, "agent_us": agent / n * 1e6, "lost": h.losses["lost"]}


class Exporter:
    """Drops the spans, or encodes them with the SDK's OTLP protobuf encoder and writes them to a file."""

    def __init__(self, path: str | None) -> None:
        self.count = 0
        self.fh = open(path, "wb") if path else None  # noqa: SIM115 (closed in shutdown)

    def export(self, spans: Any) -> Any:
        self.count += len(spans)
        if self.fh is not None:
            from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

            self.fh.write(encode_spans(spans).SerializeToString())
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        if self.fh is not None:
            self.fh.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _otel(export: str, payload: str, n: int) -> dict[str, Any]:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if payload == "chat-grow":
        convs, answers = _conversations()

        def loop(tracer: Any, k: int) -> None:
            for i in range(k):
                with tracer.start_as_current_span("call") as s:
                    msgs = convs[i % GROW_TURNS]
                    s.set_attribute("input.value", json.dumps(msgs))
                    s.set_attribute("output.value", json.dumps(answers[len(msgs)]))
    else:
        inp, out = _payload(payload)

        def loop(tracer: Any, k: int) -> None:
            for _ in range(k):
                with tracer.start_as_current_span("call") as s:
                    # What an instrumentation does with a payload: JSON text in an attribute.
                    s.set_attribute("input.value", inp if isinstance(inp, str) else json.dumps(inp))
                    s.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))

    tmp = tempfile.mkdtemp(prefix="trajdebug-agentcost-")
    result: dict[str, Any] = {}
    for i, k in enumerate((min(n // 10, 1000), n)):  # the first round warms up
        tp = TracerProvider()
        exporter = Exporter(os.path.join(tmp, f"spans{i}.pb") if export == "otlp" else None)
        tp.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=n + 1000))  # type: ignore[arg-type]
        tracer = tp.get_tracer("bench")
        gc.collect()
        p0 = time.process_time()
        a0 = time.thread_time()
        loop(tracer, k)
        agent = time.thread_time() - a0
        tp.force_flush()
        total = time.process_time() - p0
        tp.shutdown()
        result = {"total_us": total / k * 1e6, "agent_us": agent / k * 1e6, "lost": k - exporter.count}
    return result


def _logfire(payload: str, n: int) -> dict[str, Any]:
    """Pydantic's logfire, as its docs instrument a function (``@logfire.instrument``, arguments and return
    value recorded), sending nothing: its spans go through a `BatchSpanProcessor` to the dropping exporter."""
    import logfire
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    inp, out = _payload(payload)
    exporter = Exporter(None)
    logfire.configure(
        send_to_logfire=False,
        console=False,
        additional_span_processors=[BatchSpanProcessor(exporter, max_queue_size=n + 1000)],  # type: ignore[arg-type]
    )

    @logfire.instrument("call", extract_args=True, record_return=True)
    def call(messages: Any) -> Any:
        return out

    for _ in range(min(n // 10, 1000)):
        call(inp)
    logfire.force_flush()
    before = exporter.count
    gc.collect()
    p0 = time.process_time()
    a0 = time.thread_time()
    for _ in range(n):
        call(inp)
    agent = time.thread_time() - a0
    logfire.force_flush()
    total = time.process_time() - p0
    return {"total_us": total / n * 1e6, "agent_us": agent / n * 1e6, "lost": n - (exporter.count - before)}


def child(recorder: str, payload: str, n: int) -> dict[str, Any]:
    """One measurement, in this process."""
    if recorder == "logfire":
        return {"recorder": recorder, "payload": payload, "n": n, **_logfire(payload, n)}
    family, kind = recorder.split("-", 1)
    res = _trajdebug(kind, payload, n) if family == "td" else _otel(kind, payload, n)
    return {"recorder": recorder, "payload": payload, "n": n, **res}


def _run_child(recorder: str, payload: str, n: int) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("TRAJDEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), str(ROOT / "src"), env.get("PYTHONPATH", "")) if p
    )
    cmd = [sys.executable, "-m", "benchmarks.agentcost", "--child", recorder, payload, str(n)]
    proc = run_scratch(cmd, ROOT, env)  # a scratch TMPDIR, removed after the child
    if proc.returncode != 0:
        raise RuntimeError(f"agentcost {recorder} {payload} failed: {proc.stderr.strip()[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def measure(rounds: int = 3, scale: float = 1.0, payloads: dict[str, int] | None = None, peers: bool = True) -> dict[str, Any]:
    """Every recorder on every payload (default `PAYLOADS`), ``rounds`` times, interleaved; medians and
    ratios to OTel."""
    raw: dict[str, list[dict[str, Any]]] = {}
    payloads = PAYLOADS if payloads is None else payloads
    recorders = RECORDERS + (PEERS if peers else ())
    for _ in range(rounds):
        for payload, n in payloads.items():
            for rec in recorders:
                raw.setdefault(f"{rec}/{payload}", []).append(
                    _run_child(rec, payload, max(200, int(n * scale)))
                )
    med = {
        k: {m: statistics.median(r[m] for r in rows) for m in ("total_us", "agent_us")}
        | {"lost": max(r["lost"] for r in rows)}
        for k, rows in raw.items()
    }
    return {"rounds": rounds, "payloads": list(payloads), "recorders": list(recorders), "median": med, "raw": raw}


def markdown(d: dict[str, Any]) -> list[str]:
    """The section's table: median CPU per step and the ratios to the OTel SDK."""
    med = d["median"]
    out = [
        f"Medians of {d['rounds']} interleaved rounds, each configuration in a fresh process; CPU µs per step "
        "(total: every thread until written; agent: the recording thread). Ratios to the OTel SDK span of the same payload.",
        "",
        "| payload | recorder | total µs | agent µs | total / OTel + drop | total / OTel + OTLP to file | lost |",
        "|---|---|---|---|---|---|---|",
    ]
    for payload in d.get("payloads", PAYLOADS):
        drop, otlp = med[f"otel-drop/{payload}"]["total_us"], med[f"otel-otlp/{payload}"]["total_us"]
        for rec in d.get("recorders", RECORDERS + PEERS):
            m = med[f"{rec}/{payload}"]
            out.append(
                f"| {payload} | {rec} | {m['total_us']:.1f} | {m['agent_us']:.1f} | "
                f"{m['total_us'] / drop:.2f} | {m['total_us'] / otlp:.2f} | {m['lost']} |"
            )
    return out


_BEGIN, _END = "<!-- agentcost:begin -->", "<!-- agentcost:end -->"


def write_doc(lines: list[str], path: Path = ROOT / "docs" / "benchmarks.md") -> None:
    """Replace the text between the section's markers in ``path`` (the markers must be there)."""
    text = path.read_text()
    a, b = text.index(_BEGIN) + len(_BEGIN), text.index(_END)
    path.write_text(text[:a] + "\n" + "\n".join(lines) + "\n" + text[b:])


def _main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.agentcost")
    p.add_argument("--child", nargs=3, metavar=("RECORDER", "PAYLOAD", "N"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--scale", type=float, default=1.0, help="multiply the steps per measurement")
    p.add_argument("--write-doc", action="store_true")
    p.add_argument("--payloads", help="comma-separated payloads (default: small,chat; more: chat-grow)")
    p.add_argument("--no-peers", action="store_true", help="leave out the peers (logfire)")
    p.add_argument("--json", type=Path, help="also write the raw results here")
    a = p.parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child[0], a.child[1], int(a.child[2]))))
        return
    every = PAYLOADS | MORE_PAYLOADS
    payloads = {k: every[k] for k in a.payloads.split(",")} if a.payloads else None
    d = measure(a.rounds, a.scale, payloads, not a.no_peers)
    lines = markdown(d)
    print("\n".join(lines))
    if a.json:
        a.json.write_text(json.dumps(d, indent=1))
    if a.write_doc:
        write_doc(lines)


if __name__ == "__main__":
    _main()


__all__ = ["MORE_PAYLOADS", "PAYLOADS", "RECORDERS", "child", "markdown", "measure", "write_doc"]
