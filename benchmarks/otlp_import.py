"""`import --from otlp` on foreign OpenTelemetry SDK output, beside the parse floor (issue 27 item 4).

``python -m benchmarks.otlp_import --sizes 50 500 [--cache DIR] [--equal-to REF]``

- **The file** is what an instrumented agent really exports, not trajdebug's own export: the real
  ``opentelemetry-sdk`` records agent traces (OpenInference agent, LLM and tool spans with flattened
  messages and tool calls, GenAI sub-agents with ``gen_ai.*`` attributes, exception events, nested,
  8 traces in flight at once so a trace's spans spread over several lines), and each batch of 512
  ended spans is encoded by the SDK's own OTLP encoder (``encode_spans``), turned into JSON by
  protobuf's ``json_format`` with the ids in hex (the OTLP/JSON spec, as the collector's file exporter
  writes them) and written as one ``{"resourceSpans": [...]}`` per line.  About 1 KB per span.
  Generated once per size into the cache directory (never the repository); ``--keep`` keeps them.
- **Floor**: ``orjson.loads`` of every line with the collector off (CPU of the process).
- **Read**: every run of `trajdebug.sources.formats.otlp.iter_otlp` (CPU).
- **Import**: ``trajdebug import FILE --from otlp -o out.jsonl`` in a child process: its CPU (user +
  system) and peak resident set.
- Three interleaved rounds (floor, read, import, floor, ...); the ratios are of medians.
- ``--before REF``: the checkout at git ``REF`` is read and imported in the same rounds.
- ``--equal-to REF``: the runs read by the checkout at git ``REF`` (its ``src`` exported to a
  temporary directory) are compared with this checkout's, as a digest of their JSONL: a speed change
  must import exactly what it imported before.  No golden file: the comparison is made in the run.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parent.parent
BATCH = 512
"""Spans per exported batch, the BatchSpanProcessor's default (one line each)."""
IN_FLIGHT = 8
"""Traces recorded at once, their spans interleaved (a busy service)."""


# -- the foreign file -------------------------------------------------------------------------


def _hex_ids(node: Any) -> None:
    """protobuf JSON writes ids (bytes) in base64; the OTLP/JSON spec (and the collector) in hex."""
    if isinstance(node, dict):
        for k in ("traceId", "spanId", "parentSpanId"):
            v = node.get(k)
            if isinstance(v, str) and v:
                node[k] = base64.b64decode(v).hex()
        for v in node.values():
            _hex_ids(v)
    elif isinstance(node, list):
        for v in node:
            _hex_ids(v)


class _LinesExporter:
    """A span exporter writing each batch as one OTLP/JSON line (the SDK's encoder, then json_format)."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.pending, self.bytes, self.spans = fh, [], 0, 0

    def add(self, span: Any) -> None:
        self.pending.append(span)
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        import orjson
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        if not self.pending:
            return
        doc = MessageToDict(encode_spans(self.pending))
        _hex_ids(doc)
        line = orjson.dumps(doc) + b"\n"
        self.fh.write(line)
        self.bytes += len(line)
        self.spans += len(self.pending)
        self.pending = []


_WORDS = [
    "order",
    "refund",
    "invoice",
    "customer",
    "account",
    "shipping",
    "address",
    "weather",
    "forecast",
    "search",
    "result",
    "database",
    "query",
    "update",
    "balance",
    "ticket",
    "priority",
    "status",
    "pending",
    "approved",
    "rejected",
    "summary",
    "report",
    "draft",
    "email",
]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _agent_trace(tracer: Any, rng: random.Random, n: int) -> Any:
    """One agent run as a generator: each ``next`` records one more span (so traces interleave)."""
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    root = tracer.start_span(
        "agent.run",
        attributes={
            "openinference.span.kind": "AGENT",
            "agent.name": "support",
            "session.id": f"session-{n % 97}",
            "input.value": json.dumps({"request": _text(rng, 30), "user": f"u{n}"}),
            "input.mime_type": "application/json",
        },
    )
    ctx = trace.set_span_in_context(root)
    history = [("system", "You are a support agent. " + _text(rng, 10)), ("user", _text(rng, 25))]
    for turn in range(rng.randint(4, 9)):
        llm = tracer.start_span("ChatCompletion", context=ctx)
        call_id, tool = f"call_{n}_{turn}", rng.choice(("lookup_order", "search_kb", "refund"))
        args = json.dumps({"order_id": f"o-{rng.randint(1, 9999)}", "query": _text(rng, 6)})
        attrs: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "llm.model_name": "gpt-4o-mini",
            "llm.provider": "openai",
            "llm.invocation_parameters": json.dumps({"temperature": 0.2, "max_tokens": 512}),
            "llm.token_count.prompt": rng.randint(200, 3000),
            "llm.token_count.completion": rng.randint(10, 300),
            "llm.token_count.total": rng.randint(300, 3300),
        }
        for i, (role, content) in enumerate(history[-3:]):
            attrs[f"llm.input_messages.{i}.message.role"] = role
            attrs[f"llm.input_messages.{i}.message.content"] = content
        attrs["llm.output_messages.0.message.role"] = "assistant"
        attrs["llm.output_messages.0.message.tool_calls.0.tool_call.id"] = call_id
        attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.name"] = tool
        attrs["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"] = args
        llm.set_attributes(attrs)
        llm.end()
        yield
        span = tracer.start_span(tool, context=ctx)
        result = _text(rng, 25)
        span.set_attributes(
            {
                "openinference.span.kind": "TOOL",
                "tool.name": tool,
                "input.value": args,
                "input.mime_type": "application/json",
                "output.value": result,
                **({"tool.id": call_id} if rng.random() < 0.7 else {}),  # not every instrumentation knows it
            }
        )
        if rng.random() < 0.08:
            try:
                raise TimeoutError(f"{tool} timed out after 30s")
            except TimeoutError as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, f"Error running tool (non-fatal): {exc}"))
        span.end()
        yield
        history += [("tool", result), ("assistant", _text(rng, 15))]
        if rng.random() < 0.25:
            yield from _sub_agent(tracer, rng, ctx)
    root.set_attribute("output.value", _text(rng, 30))
    root.end()
    yield


def _sub_agent(tracer: Any, rng: random.Random, ctx: Any) -> Any:
    """A sub-agent in the GenAI convention: ``invoke_agent`` with ``chat`` children."""
    from opentelemetry import trace

    agent = tracer.start_span(
        "invoke_agent researcher",
        context=ctx,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "researcher"},
    )
    sub = trace.set_span_in_context(agent)
    for _ in range(rng.randint(1, 3)):
        chat = tracer.start_span("chat gpt-4o", context=sub)
        chat.set_attributes(
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": "openai",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.response.model": "gpt-4o-2024-08-06",
                "gen_ai.usage.input_tokens": rng.randint(100, 2000),
                "gen_ai.usage.output_tokens": rng.randint(10, 400),
                "gen_ai.response.finish_reasons": ["stop"],
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": _text(rng, 40)}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": _text(rng, 40)}]}]
                ),
            }
        )
        chat.end()
        yield
    agent.end()
    yield


def make_file(path: Path, mb: float, seed: int = 27) -> dict[str, Any]:
    """Record agent traces with the OpenTelemetry SDK until the OTLP/JSON Lines file holds ``mb`` MB."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider

    rng = random.Random(seed)
    with path.open("wb") as fh:
        out = _LinesExporter(fh)

        class Collect(SpanProcessor):
            def on_end(self, span: Any) -> None:
                out.add(span)

        provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
        provider.add_span_processor(Collect())
        tracer = provider.get_tracer("openinference.instrumentation.openai", "0.1.66")
        n, traces = 0, 0
        live = [_agent_trace(tracer, rng, n := n + 1) for _ in range(IN_FLIGHT)]
        while out.bytes < mb * 1e6:
            k = rng.randrange(len(live))
            if next(live[k], StopIteration) is StopIteration:
                traces += 1
                live[k] = _agent_trace(tracer, rng, n := n + 1)
        for g in live:  # finish the traces in flight: the file holds whole traces only
            for _ in g:
                pass
            traces += 1
        out.flush()
    return {"bytes": path.stat().st_size, "spans": out.spans, "traces": traces}


# -- the measurements (each in a child process) ----------------------------------------------


def _floor(path: str) -> dict[str, Any]:
    """CPU of ``orjson.loads`` of every line, collector off."""
    import gc

    import orjson

    gc.disable()
    c = time.process_time()
    with open(path, "rb") as fh:
        for line in fh:
            orjson.loads(line)
    return {"cpu": time.process_time() - c}


def _read(path: str, digest: str = "") -> dict[str, Any]:
    """CPU of reading every run (`iter_otlp`); with ``digest``, a hash of their JSONL (not timed)."""
    import io

    from trajdebug.core.jsonl import FormatError, write_jsonl
    from trajdebug.sources.formats.otlp import iter_otlp

    problems: list[FormatError] = []
    h = hashlib.sha256()
    c = time.process_time()
    steps = runs = 0
    for r in iter_otlp(path, problems):
        runs += 1
        steps += len(r.steps)
        if digest:
            t = time.process_time()
            buf = io.StringIO()
            write_jsonl([r], buf, redact=False)
            h.update(buf.getvalue().encode())
            c += time.process_time() - t
    cpu = time.process_time() - c
    h.update(json.dumps([str(p) for p in problems]).encode())
    return {"cpu": cpu, "runs": runs, "steps": steps, "problems": len(problems), "digest": h.hexdigest()}


def _env(src: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRAJDEBUG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached after the first round, as installed
    paths = [str(src)] if src else []
    env["PYTHONPATH"] = os.pathsep.join(p for p in (*paths, str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _child(*args: str, src: Path | None = None) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.otlp_import", "--child", *args]
    proc = subprocess.run(
        cmd, cwd=ROOT, env=_env(src), capture_output=True, text=True, timeout=7200, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"child {args} failed: {proc.stderr.strip()[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _import(path: Path, tmp: Path, src: Path | None = None) -> dict[str, Any]:
    """CPU and peak resident set of ``trajdebug import`` in a child process of its own."""
    out = tmp / "out.jsonl"
    cmd = [sys.executable, "-m", "trajdebug", "import", str(path), "--from", "otlp", "-o", str(out)]
    probe = (
        "import resource,subprocess,sys\n"
        "subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(u.ru_utime + u.ru_stime, u.ru_maxrss)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe, *cmd],
        cwd=ROOT,
        env=_env(src),
        capture_output=True,
        text=True,
        check=True,
    )
    cpu, peak_kb = res.stdout.split()
    out.unlink(missing_ok=True)
    return {"cpu": float(cpu), "peak_mib": int(peak_kb) / 1024}


def measure(path: Path, rounds: int = 3, base: Path | None = None) -> dict[str, Any]:
    """Floor, read and import, ``rounds`` interleaved rounds; medians and their ratios.  With ``base``
    (another checkout's ``src``), its read and import are measured in the same rounds (``before``)."""
    runs: dict[str, dict[str, list[float]]] = {}
    info: dict[str, Any] = {}
    versions = {"after": None, **({"before": base} if base else {})}
    with tempfile.TemporaryDirectory(prefix="trajdebug-bench-") as tmp:
        for _ in range(rounds):
            runs.setdefault("floor", {}).setdefault("cpu", []).append(_child("floor", str(path))["cpu"])
            for name, src in versions.items():
                r = _child("read", str(path), src=src)
                i = _import(path, Path(tmp), src)
                row = runs.setdefault(name, {})
                for k, v in (("read_cpu", r["cpu"]), ("import_cpu", i["cpu"]), ("peak_mib", i["peak_mib"])):
                    row.setdefault(k, []).append(v)
                info = {k: r[k] for k in ("runs", "steps", "problems")}
    mb = path.stat().st_size / 1e6
    f = statistics.median(runs.pop("floor")["cpu"])
    out: dict[str, Any] = {"mb": mb, **info, "floor_cpu_s": f, "floor_mb_s": mb / f}
    for name, row in runs.items():
        rd, im = statistics.median(row["read_cpu"]), statistics.median(row["import_cpu"])
        out[name] = {
            "read_cpu_s": rd, "import_cpu_s": im, "read_ratio": f / rd, "import_ratio": f / im,
            "read_mb_s": mb / rd, "import_mb_s": mb / im, "peak_mib": max(row["peak_mib"]), "all": row,
        }  # fmt: skip
    return out


def _export_src(ref: str, into: Path) -> Path:
    """The ``src`` folder of git ``ref``, written under ``into``."""
    archive = subprocess.run(["git", "archive", ref, "src"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "src"


def equal_to(ref: str, path: Path) -> dict[str, Any]:
    """Whether the checkout at git ``ref`` and this one read the same runs from ``path``."""
    with tempfile.TemporaryDirectory(prefix="trajdebug-ref-") as tmp:
        before = _child("read", str(path), "digest", src=_export_src(ref, Path(tmp)))
    after = _child("read", str(path), "digest")
    return {"ref": ref, "before": before, "after": after, "equal": before["digest"] == after["digest"]}


def _main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--child", nargs="+")
    p.add_argument("--sizes", nargs="+", type=float, default=[50.0, 500.0], help="file sizes, MB")
    p.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "trajdebug-otlp-sdk"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--equal-to", help="git ref whose import must read the same runs")
    p.add_argument("--keep", action="store_true", help="keep the generated files in --cache")
    p.add_argument("--before", help="git ref also measured in the same rounds (before -> after)")
    a = p.parse_args(argv)
    if a.child:
        name, *args = a.child
        fn = {"floor": _floor, "read": _read, "make": lambda path, mb: make_file(Path(path), float(mb))}[name]
        print(json.dumps(fn(*args)))
        return
    cache = Path(a.cache)
    cache.mkdir(parents=True, exist_ok=True)
    try:
        for mb in a.sizes:
            path = cache / f"sdk-{mb:g}mb.jsonl"
            if not path.exists():
                t = time.perf_counter()
                made = _child("make", str(path), str(mb))
                print(f"generated {path}: {made} in {time.perf_counter() - t:.0f} s", file=sys.stderr)
            if a.equal_to:
                print(json.dumps({"mb": mb, **equal_to(a.equal_to, path)}), flush=True)
            with tempfile.TemporaryDirectory(prefix="trajdebug-ref-") as ref:
                base = _export_src(a.before, Path(ref)) if a.before else None
                print(json.dumps(measure(path, a.rounds, base)), flush=True)
    finally:
        if not a.keep:
            shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _main()


__all__ = ["equal_to", "make_file", "measure"]
