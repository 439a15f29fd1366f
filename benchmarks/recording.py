"""Recording cost: the total CPU a recorded step costs, side by side with the OpenTelemetry SDK.

``python -m benchmarks --only recording`` runs it (``--only speed`` too).  Every
configuration runs in its own subprocess (``python -m benchmarks.recording
CASE``), so OpenTelemetry providers and trajdebug's settings never mix:

1. **Total CPU per step.**  A loop of N steps with a 200-byte input and a
   200-byte output (the context manager, or a decorated function called with a
   200-byte argument) into a real sink: a JSONL file or an SQLite store.  The
   process's CPU time (every thread: the agent's, the writer's) from before the
   run starts until everything is written (`trajdebug.flush`), divided by N;
   the agent's thread separately (``time.thread_time`` around the loop).  The
   queue is sized so that nothing drops (every step is paid for; the child
   checks the count on disk).  The OpenTelemetry SDK's span with its
   ``BatchSpanProcessor`` and an exporter that drops the spans is measured the
   same way: process CPU until ``force_flush`` returns.  Each case runs R
   times in one process, each into a fresh file; min and median of the repeats.
2. **A tight loop at the default settings.**  The same loop with the default
   queue (``max_buffer``, back-pressure ``drop``): how many steps dropped.
3. **Sustained 100,000 steps per second.**  The agent records 100 steps each
   millisecond and sleeps until the next (an agent waiting on its tools), for
   three seconds at the default settings: steps dropped, the writer's CPU per
   step (process CPU minus the agent thread's), the longest queue seen.
4. **What each part costs** (`components`): the hot path's pieces and the
   writer's, each timed in a loop in one process.

CPU times, not wall times: the 2-core machine is shared with other processes,
which inflates wall time but not (much) the CPU a process itself spends.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from benchmarks._common import run_scratch


ROOT = Path(__file__).resolve().parent.parent

IN, OUT = "i" * 200, "o" * 200
"""The 200-byte input and output of every recorded step (perf-anchors.md §1)."""

ENGLISH = (
    "The quarterly revenue report shows the token budget for the key accounts in EMEA; pass the summary "
    "to the next step and confirm with the billing service before the deadline: 10:30 on Friday, then "
    "book the remaining items."
)[:200]
"""200 bytes of ordinary English with the words a naive redaction hint fires on ("token", "key", "pass")."""


# -- children --------------------------------------------------------------------------------


def _bodies(form: str) -> Callable[[int], None]:
    import trajdebug

    step = trajdebug.step

    def cm(k: int) -> None:
        for _ in range(k):
            with step("x", kind="tool", input=IN) as s:
                s.output = OUT

    @trajdebug.step(kind="tool")
    def tool(query: str) -> str:
        return OUT

    def deco(k: int) -> None:
        for _ in range(k):
            tool(IN)

    return {"cm": cm, "deco": deco}[form]


def _steps_on_disk(target: Path, run_id: str, n_hint: int = 0) -> int:
    import trajdebug
    from trajdebug.store import Store

    if target.suffix == ".jsonl":
        return sum(len(r.steps) for r in trajdebug.read_jsonl(target).runs if r.run_id == run_id)
    if n_hint > 1_000_000:
        # Millions of steps (a paced minute): the count the store keeps of each run's step lines, not the run
        # loaded whole (minutes and gigabytes for a count).
        import sqlite3

        with closing(sqlite3.connect(f"file:{target}?mode=ro", uri=True)) as conn:
            row = conn.execute("SELECT steps FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return int(row[0]) if row else 0
    with Store(target, readonly=True) as st:
        return len(st.load_run(run_id).steps)


def child_total(form: str, sink: str, n: int, repeats: int) -> dict[str, Any]:
    """Total and agent-thread CPU per step of one recording form into one sink (nothing dropped)."""
    import trajdebug

    body = _bodies(form)
    tmp = Path(tempfile.mkdtemp(prefix="trajdebug-rec-"))
    ext = ".jsonl" if sink == "jsonl" else ".db"

    def target(i: int) -> dict[str, Any]:
        p = tmp / f"r{i}{ext}"
        return {"path": p} if sink == "jsonl" else {"store": p}

    trajdebug.configure(max_buffer=n + 1000, max_buffer_bytes=1 << 40, backlog_seconds=None)
    with trajdebug.run("warm-up", **target(99)):
        body(max(n // 20, 1000))
    trajdebug.flush()
    totals, agents, walls, sizes = [], [], [], []
    dropped = 0
    for i in range(repeats):
        gc.collect()
        w0, p0 = time.perf_counter(), time.process_time()
        with trajdebug.run("bench", **target(i)) as h:
            a0 = time.thread_time()
            body(n)
            agents.append((time.thread_time() - a0) / n * 1e6)
        trajdebug.flush()
        totals.append((time.process_time() - p0) / n * 1e6)
        walls.append((time.perf_counter() - w0) / n * 1e6)
        dropped += h.losses["lost"]
        p = tmp / f"r{i}{ext}"
        sizes.append(sum(f.stat().st_size for f in tmp.glob(f"r{i}{ext}*")) / n)
        if i == 0:
            on_disk = _steps_on_disk(p, h.run_id)
            if on_disk != n:
                raise RuntimeError(f"{p}: {on_disk} of {n} steps on disk")
    # The same loop at the default settings: what a tight loop loses.
    trajdebug.configure(max_buffer=100_000, max_buffer_bytes=64 * 1024 * 1024, backlog_seconds=0.1)
    with trajdebug.run("defaults", **target(98)) as h:
        body(n)
    default_dropped = h.losses["dropped"]
    return {
        "case": f"{form}-{sink}",
        "n": n,
        "repeats": repeats,
        "total_us": min(totals),
        "total_median_us": statistics.median(totals),
        "agent_us": min(agents),
        "agent_median_us": statistics.median(agents),
        "wall_us": statistics.median(walls),
        "bytes_per_step": statistics.median(sizes),
        "dropped": dropped,
        "default_dropped": default_dropped,
    }


def child_otel(n: int, repeats: int) -> dict[str, Any]:
    """The OpenTelemetry SDK: a span with two 200-byte attributes, BatchSpanProcessor, a dropping exporter."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    class DropExporter:
        """Counts and drops spans."""

        def __init__(self) -> None:
            self.count = 0

        def export(self, spans: Any) -> Any:
            self.count += len(spans)
            return SpanExportResult.SUCCESS

        def shutdown(self) -> None:
            pass

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return True

    def loop(tracer: Any, k: int) -> None:
        for _ in range(k):
            with tracer.start_as_current_span("x") as s:
                s.set_attribute("input.value", IN)
                s.set_attribute("output.value", OUT)

    totals, agents, walls, exported = [], [], [], []
    for i in range(repeats + 1):
        tp = TracerProvider()
        exporter = DropExporter()
        tp.add_span_processor(BatchSpanProcessor(exporter))  # type: ignore[arg-type]
        tracer = tp.get_tracer("bench")
        gc.collect()
        w0, p0 = time.perf_counter(), time.process_time()
        a0 = time.thread_time()
        loop(tracer, n if i else max(n // 20, 1000))
        a1 = time.thread_time()
        tp.force_flush()
        p1, w1 = time.process_time(), time.perf_counter()
        tp.shutdown()
        if i:  # the first round warms up
            totals.append((p1 - p0) / n * 1e6)
            agents.append((a1 - a0) / n * 1e6)
            walls.append((w1 - w0) / n * 1e6)
            exported.append(exporter.count)
    return {
        "case": "otel-batch",
        "n": n,
        "repeats": repeats,
        "total_us": min(totals),
        "total_median_us": statistics.median(totals),
        "agent_us": min(agents),
        "agent_median_us": statistics.median(agents),
        "wall_us": statistics.median(walls),
        "exported": min(exported),
    }


def child_paced(form: str, sink: str, rate: int, seconds: float) -> dict[str, Any]:
    """``rate`` steps per second for ``seconds``, in bursts each millisecond, at the default settings."""
    import trajdebug

    body = _bodies(form)
    tmp = Path(tempfile.mkdtemp(prefix="trajdebug-paced-"))
    p = tmp / ("r.jsonl" if sink == "jsonl" else "r.db")
    tgt: dict[str, Any] = {"path": p} if sink == "jsonl" else {"store": p}
    with trajdebug.run("warm-up", **tgt):
        body(1000)
    trajdebug.flush()
    per_tick = max(rate // 1000, 1)
    ticks = int(seconds * 1000)
    longest = 0
    samples: list[int] = []  # the queue's length once a second: a steady rate keeps it flat
    gc.collect()
    p0 = time.process_time()
    agent = 0.0
    with trajdebug.run("paced", **tgt) as h:
        start = time.perf_counter()
        for t in range(ticks):
            a0 = time.thread_time()
            body(per_tick)
            agent += time.thread_time() - a0
            q = len(h._queue)
            longest = max(longest, q)
            if t % 1000 == 999:
                samples.append(q)
            wait = start + (t + 1) / 1000 - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
        elapsed = time.perf_counter() - start
    trajdebug.flush()
    total = time.process_time() - p0
    n = per_tick * ticks
    return {
        "case": f"paced-{form}-{sink}",
        "steps": n,
        "rate": n / elapsed,
        "dropped": h.losses["dropped"],
        "lost": h.losses["lost"],
        "on_disk": _steps_on_disk(p, h.run_id, n),
        "total_us": total / n * 1e6,
        "agent_us": agent / n * 1e6,
        "writer_us": (total - agent) / n * 1e6,
        "longest_queue": longest,
        "queue_each_second": samples,
        "queue_grew": _grew(samples, rate),
    }


def _grew(samples: list[int], rate: int) -> bool:
    """Whether the queue grew over the run: the mean of its last third above the mean of its first third by
    more than a tenth of a second of steps (a backlog the writer did not catch up with).  A writer that keeps
    up holds the queue near the size of a few bursts however long the run."""
    if len(samples) < 3:
        return False
    k = len(samples) // 3
    return sum(samples[-k:]) / k > sum(samples[:k]) / k + rate / 10


def _per_call(fn: Callable[[], Any], n: int, repeats: int = 5) -> float:
    """Microseconds per call of ``fn`` (min over the repeats; GC on)."""
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.perf_counter_ns() - t0) / n / 1000)
    return best


def child_components(n: int) -> list[dict[str, Any]]:
    """What each part of recording a step costs, timed piece by piece in one process."""
    import trajdebug
    from trajdebug.core import redaction
    from trajdebug.core.codec import dumps
    from trajdebug.record import tracking
    from trajdebug.record.sinks import JsonlSink, StoreSink
    from trajdebug.record.writer import WRITER

    rows: list[dict[str, Any]] = []

    def row(part: str, where: str, us: float, note: str = "") -> None:
        rows.append({"part": part, "where": where, "us": us, "note": note})

    class Drop:
        def write(self, records: Any) -> None:
            pass

        def close(self) -> None:
            pass

    # The agent's thread: the writer is held off, so only the hot path runs (its queue is large enough).
    trajdebug.configure(max_buffer=10 * n + 1000, max_buffer_bytes=1 << 40, backlog_seconds=None)
    step = trajdebug.step

    def cm() -> None:
        with step("x", kind="tool", input=IN) as s:
            s.output = OUT

    @trajdebug.step(kind="tool")
    def tool(query: str) -> str:
        return OUT

    doc = {"query": IN, "filters": ["region", "year"], "limit": 10}

    @trajdebug.step(kind="tool")
    def tool_dict(request: dict[str, Any]) -> str:
        return OUT

    def plain(query: str) -> str:
        return OUT

    cases: list[tuple[str, Callable[[], Any], str]] = [
        ("a plain function call (reference)", lambda: plain(IN), ""),
        ("`with trajdebug.step(...)`: 200-B input and output", cm, ""),
        ("`@trajdebug.step` call, one 200-B argument", lambda: tool(IN), ""),
        ("`@trajdebug.step` call, a dict argument (snapshotted)", lambda: tool_dict(doc), "one orjson pass"),
    ]
    for label, fn, note in cases:
        with trajdebug.run("agent", sinks=[Drop()]), WRITER._cond:
            us = _per_call(fn, n)
        trajdebug.flush()
        row(label, "agent", us, note)
    gc.disable()
    with trajdebug.run("agent", sinks=[Drop()]), WRITER._cond:
        us = _per_call(cm, n)
    gc.enable()
    trajdebug.flush()
    row("`with trajdebug.step(...)`, GC off", "agent", us, "what the collector costs, by difference")

    # The writer's side, piece by piece.
    red = redaction.Redactor()
    for label, text in (("200 B of `i`", IN), ("200 B of English", ENGLISH)):
        row(f"redaction check of a string: {label}", "writer", _per_call(lambda t=text: red.text(t), n))
    snap = dumps(doc)
    row("redaction check of a dict snapshot (JSON bytes)", "writer", _per_call(lambda: red.needed(snap), n))
    with trajdebug.run("enc", sinks=[Drop()]) as h, WRITER._cond:
        for _ in range(n):
            cm()
        handles = list(h._queue)
        tracker = tracking.Tracker(h.run_id, h._acct)
        steps = [x for x in handles if x.__class__.__name__ == "StepHandle"]
        gc.collect()
        t0 = time.perf_counter_ns()
        recs = [tracker.encode_safe(s) for s in steps]
        enc_us = (time.perf_counter_ns() - t0) / len(steps) / 1000
        h._queue.clear()
    row("a step's record built (tracking, redaction, fields)", "writer", enc_us)
    flat = [r for rs in recs for r in rs]
    t0 = time.perf_counter_ns()
    lines = [dumps(r) for r in flat]
    row("a step's record encoded to JSON bytes", "writer", (time.perf_counter_ns() - t0) / len(flat) / 1000)
    tmp = Path(tempfile.mkdtemp(prefix="trajdebug-parts-"))
    for label, sink in (("JSONL file", JsonlSink(tmp / "p.jsonl")), ("SQLite store", StoreSink(tmp / "p.db"))):
        batches = [flat[i : i + 2048] for i in range(0, len(flat), 2048)]
        sink.write(batches[0][:10])
        gc.collect()
        t0 = time.perf_counter_ns()
        for b in batches:
            sink.write(b)
        row(f"a step's record written: {label} (batches of 2,048)", "writer", (time.perf_counter_ns() - t0) / len(flat) / 1000)
        sink.close()
    del lines
    return rows


CASES: dict[str, Callable[[argparse.Namespace], Any]] = {
    **{
        f"{form}-{sink}": (lambda a, f=form, s=sink: child_total(f, s, a.n, a.repeats))
        for form in ("cm", "deco")
        for sink in ("jsonl", "store")
    },
    "otel-batch": lambda a: child_otel(a.n, a.repeats),
    **{
        f"paced-{form}-{sink}": (lambda a, f=form, s=sink: child_paced(f, s, a.rate, a.seconds))
        for form in ("cm", "deco")
        for sink in ("jsonl", "store")
    },
    "components": lambda a: child_components(a.n // 4),
}
"""The subprocess configurations by name."""


def run_case(name: str, n: int, repeats: int, seconds: float = 3.0) -> Any:
    """Run one configuration in a fresh interpreter and return its result.

    Raises:
        RuntimeError: the child failed (its stderr is in the message).
    """
    env = dict(os.environ)
    env.pop("TRAJDEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "benchmarks.recording", name, "--n", str(n), "--repeats", str(repeats)]
    cmd += ["--seconds", str(seconds)]
    proc = run_scratch(cmd, ROOT, env)  # a scratch TMPDIR, removed after the child
    if proc.returncode != 0:
        raise RuntimeError(f"recording case {name!r} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_recording(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run every recording measurement (``quick``: fewer steps and repeats)."""
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    n, rep, secs = (50_000, 3, 2.0) if quick else (200_000, 5, 3.0)
    from benchmarks._common import machine

    out: dict[str, Any] = {"quick": quick, "n": n, "repeats": rep, "date": machine()["date"]}
    out["total"] = []
    for name in ("cm-jsonl", "cm-store", "deco-jsonl", "deco-store", "otel-batch"):
        say(f"recording: {name}")
        out["total"].append(run_case(name, n, rep))
    out["paced"] = []
    for name in ("paced-cm-jsonl", "paced-cm-store", "paced-deco-jsonl", "paced-deco-store"):
        say(f"recording: {name}")
        out["paced"].append(run_case(name, n, rep, secs))
    say("recording: components")
    out["components"] = run_case("components", n, rep)
    out["seconds"] = time.perf_counter() - t0
    out["before"] = BEFORE
    return out


def _main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="One recording-cost configuration, in its own process.")
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--n", type=int, default=200_000)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rate", type=int, default=100_000, help="steps per second of the paced cases")
    a = p.parse_args(argv)
    print(json.dumps(CASES[a.case](a)))


if __name__ == "__main__":
    _main()




BEFORE = {
    "commit": "4add415",
    "total_us": {"cm-jsonl": 7.1, "cm-store": 11.3, "deco-jsonl": 11.9, "deco-store": 15.8, "otel-batch": 15.2},
}
"""Total CPU per step before the chunked store, the single encode and the lazy decorator (measured with this
module on main at that commit, 100,000 steps, 3 repeats, min)."""


# -- the document's section --------------------------------------------------------------------

GOALS = {"total_us": 3.0, "total_max_us": 3.5, "agent_us": 1.5, "otel_factor": 8.0, "rate": 100_000}
"""Issue 14's goals for recording: total CPU per step, its ceiling, the agent's thread, the margin to the
OpenTelemetry SDK's total, the sustained rate without drops."""

_FORMS = {"cm": "`with trajdebug.step(...)`", "deco": "`@trajdebug.step` call"}
_SINKS = {"jsonl": "JSONL file", "store": "SQLite store"}


def _label(case: str) -> str:
    if case == "otel-batch":
        return "OpenTelemetry SDK span, BatchSpanProcessor, dropping exporter"
    form, sink = case.split("-")[-2:]
    return f"{_FORMS[form]} → {_SINKS[sink]}"


def _otel(d: dict[str, Any]) -> dict[str, Any] | None:
    return next((r for r in d["total"] if r["case"] == "otel-batch"), None)


def _ours(d: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for r in d["total"] if r["case"] != "otel-batch"]


def goal_rows(d: dict[str, Any]) -> list[list[str]]:
    """Rows of the goals table (goal, target, measured, status) for recording."""
    ours, otel = _ours(d), _otel(d)
    if not ours:
        return []
    worst = max(r["total_us"] for r in ours)
    agent = max(r["agent_us"] for r in ours)
    rows = [
        ["recording: total CPU per step (worst of the four)", f"≤ {GOALS['total_us']:g} µs", f"{worst:.2f} µs", _met(worst <= GOALS["total_us"])],
        ["recording: agent thread per step (worst of the four)", f"≤ {GOALS['agent_us']:g} µs", f"{agent:.2f} µs", _met(agent <= GOALS["agent_us"])],
    ]
    if otel:
        factor = otel["total_us"] / worst
        rows.append(["recording: below the OTel SDK's total CPU", f"≥ {GOALS['otel_factor']:g}×", f"{factor:.1f}×", _met(factor >= GOALS["otel_factor"])])
    paced = d.get("paced") or []
    if paced:
        dropped = sum(r["dropped"] for r in paced)
        rows.append(["recording: drops at 100,000 steps/s sustained", "none", f"{dropped:,}", _met(dropped == 0)])
    return rows


def _met(ok: bool) -> str:
    return "met" if ok else "**missed**"


def missed(d: dict[str, Any]) -> list[str]:
    """Paragraphs of "Goals missed, and why" for recording (empty when every goal is met)."""
    ours, otel = _ours(d), _otel(d)
    if not ours:
        return []
    out = []
    worst = max(ours, key=lambda r: r["total_us"])
    if worst["total_us"] > GOALS["total_us"] or (otel and otel["total_us"] / worst["total_us"] < GOALS["otel_factor"]):
        parts = {r["part"]: r["us"] for r in d.get("components", [])}
        enc = parts.get("a step's record built (tracking, redaction, fields)")
        sql = parts.get("a step's record written: SQLite store (batches of 2,048)")
        out.append(
            f"- **Recording: total CPU per step** is {worst['total_us']:.2f} µs at worst ({_label(worst['case'])}; "
            f"goal ≤ {GOALS['total_us']:g} µs"
            + (f", {otel['total_us'] / worst['total_us']:.1f}× below the OTel SDK's {otel['total_us']:.1f} µs; goal ≥ {GOALS['otel_factor']:g}×" if otel else "")
            + "). What remains is CPython's own cost of the work each step needs: on the agent's thread a "
            "step object, two context-variable operations, two clock reads and a queue append; on the "
            "writer's, the record (a dict of eleven fields, "
            + (f"{enc:.2f} µs with tracking and redaction" if enc else "tracking and redaction")
            + "), its JSON (orjson) and the bytes written"
            + (f" ({sql:.2f} µs per record into SQLite, which writes each page twice: log, then file)" if sql else "")
            + ". Every further cut needs a native encoder for the record or a store that skips the write-ahead log."
        )
    return out


def render_section(d: dict[str, Any]) -> list[str]:
    """The recording section of docs/benchmarks.md."""
    ours, otel = _ours(d), _otel(d)
    out = [
        "### Recording: total CPU per step",
        "",
        f"Run {d['date']}{' (quick mode)' if d.get('quick') else ''} with `python -m benchmarks --only recording` "
        f"({d['seconds']:.0f} s; also part of `--only speed`); `benchmarks/recording.py` describes the method. "
        f"Each case in its own process: {d['n']:,} steps with a 200-byte input and a 200-byte output, {d['repeats']} "
        "repeats, each into a fresh file; **total** is the process's CPU time (every thread) from before the run "
        "starts until everything is on disk, per step; **agent** is the agent's thread alone. The queue is sized so "
        "that nothing drops (every step is paid for). Same machine, same run, for the OpenTelemetry SDK.",
        "",
        "| recording | total µs (min) | total µs (median) | agent µs (min) | bytes on disk per step | tight loop, default queue: dropped |",
        "|---|---|---|---|---|---|",
    ]
    for r in ours:
        out.append(
            f"| {_label(r['case'])} | **{r['total_us']:.2f}** | {r['total_median_us']:.2f} | {r['agent_us']:.2f} | "
            f"{r['bytes_per_step']:.0f} | {r['default_dropped']:,} of {r['n']:,} |"
        )
    if otel:
        out.append(
            f"| {_label('otel-batch')} | **{otel['total_us']:.2f}** | {otel['total_median_us']:.2f} | "
            f"{otel['agent_us']:.2f} | – | {otel['n'] - otel['exported']:,} of {otel['n']:,} not exported |"
        )
        worst = max(r["total_us"] for r in ours)
        out += ["", f"The OpenTelemetry SDK spends {otel['total_us'] / worst:.1f}× the CPU of trajdebug's costliest case."]
    paced = d.get("paced") or []
    if paced:
        out += [
            "",
            "**Sustained 100,000 steps per second** (100 steps each millisecond, then sleep; default settings: "
            "`max_buffer` 100,000, back-pressure `drop`), 3 s:",
            "",
            "| recording | steps | rate reached | dropped | on disk | writer µs per step | agent µs per step | longest queue |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in paced:
            out.append(
                f"| {_label(r['case'])} | {r['steps']:,} | {r['rate']:,.0f}/s | {r['dropped']:,} | {r['on_disk']:,} | "
                f"{r['writer_us']:.2f} | {r['agent_us']:.2f} | {r['longest_queue']:,} |"
            )
    comps = d.get("components") or []
    if comps:
        out += [
            "",
            "**What each part costs** (`components`: each part timed alone in a loop, GC on; µs per step):",
            "",
            "| part | thread | µs | note |",
            "|---|---|---|---|",
        ]
        out += [f"| {c['part']} | {c['where']} | {c['us']:.3f} | {c['note']} |" for c in comps]
    before = d.get("before")
    if before:
        out += [
            "",
            "Before this layout and encoder (commit " + before["commit"] + ", same method): "
            + "; ".join(f"{_label(k)} {v:.1f} µs" for k, v in before["total_us"].items())
            + ".",
        ]
    out.append("")
    return out


__all__ = [
    "BEFORE",
    "CASES",
    "ENGLISH",
    "GOALS",
    "IN",
    "OUT",
    "child_components",
    "goal_rows",
    "missed",
    "render_section",
    "run_case",
    "run_recording",
]
