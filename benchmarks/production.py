"""Recording in production: cost per step in each mode beside the OpenTelemetry SDK, sampling over 10,000
runs, live export across a collector restart and while it is down, timeouts, and what summary mode costs
the analysis.

``python -m benchmarks --only production`` runs it and rewrites its section of ``docs/benchmarks.md``;
``python -m benchmarks.production --child MODE`` is one cost configuration in its own interpreter (as in
`benchmarks.recording`, so settings and OpenTelemetry providers do not mix).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import math
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._common import run_scratch
from benchmarks.recording import IN, OUT, ROOT, _bodies
from benchmarks.recording import run_case as recording_case


MODES: dict[str, tuple[str, dict[str, Any]]] = {
    "full": ("full recording", {}),
    "summary": ("summary mode (every input, output and attribute summarized)", {"summary": True}),
    "tail-dropped": ("tail-sampled, run not kept (sample_rate=0, successful runs)", {"sample_rate": 0.0}),
    "head-out": ("head-sampled out (head_rate=0: the run records into nothing)", {"head_rate": 0.0}),
    "export-down": ("full + live OTLP exporter, collector down", {}),
}
"""The recording modes measured, with their settings."""

KEPT = frozenset({"full", "summary", "export-down"})
"""The modes whose runs reach the file (the others must leave nothing on disk)."""


class _DropSink:
    """Counts the lines it is given and keeps nothing (the runs of the timing benchmarks)."""

    takes_lines = True

    def __init__(self) -> None:
        self.count = 0

    def write(self, records: Any) -> None:
        self.count += len(records)

    def close(self) -> None:
        """Nothing to release."""


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


def _configure(mode: str, **extra: Any) -> Any:
    import trajdebug

    exporter = None
    settings = {**MODES[mode][1], **extra}
    if mode == "export-down":
        from trajdebug.integrations.otlp_exporter import OtlpExporter

        exporter = OtlpExporter(f"http://127.0.0.1:{_closed_port()}/v1/traces", max_queue=1 << 40)
        settings["sinks"] = (exporter,)
    trajdebug.configure(**settings)
    return exporter


def _converted(exporter: Any, timeout: float = 60.0) -> None:
    """Wait until the exporter's thread has turned every record handed to it into spans (its CPU is the
    mode's cost too); the spans then wait for a collector that is down."""
    deadline = time.monotonic() + timeout
    while exporter._inbox and time.monotonic() < deadline:
        time.sleep(0.005)


def _child(mode: str, n: int, repeats: int) -> dict[str, Any]:
    """One mode, measured as `benchmarks.recording` measures full recording: a loop of ``n`` steps with a
    200-byte input and output (context-manager form) into a JSONL file; the process's CPU (every thread)
    from before the run until everything is written, per step, and the agent's thread apart.  The queue
    is sized so that nothing drops; the file is checked (every step for a kept mode, nothing otherwise)."""
    import trajdebug

    body = _bodies("cm")
    tmp = Path(tempfile.mkdtemp(prefix="trajdebug-prod-"))
    exporter = _configure(mode, max_buffer=n + 1000, max_buffer_bytes=1 << 40)
    with trajdebug.run("warm-up", path=tmp / "warm.jsonl"):
        body(max(n // 20, 1000))
    trajdebug.flush()
    if exporter is not None:
        _converted(exporter)
    totals, agents, sizes = [], [], []
    lost = 0
    for i in range(repeats):
        gc.collect()
        p = tmp / f"r{i}.jsonl"
        p0 = time.process_time()
        with trajdebug.run("bench", path=p) as h:
            a0 = time.thread_time()
            body(n)
            agents.append((time.thread_time() - a0) / n * 1e6)
        trajdebug.flush()
        if exporter is not None:
            _converted(exporter)
        totals.append((time.process_time() - p0) / n * 1e6)
        lost += h.losses["lost"] + h.losses["dropped"]
        sizes.append(p.stat().st_size / n if p.exists() else 0.0)
        if i == 0:
            on_disk = sum(len(r.steps) for r in trajdebug.read_jsonl(p).runs) if p.exists() else 0
            if on_disk != (n if mode in KEPT else 0):
                raise RuntimeError(f"{mode}: {p}: {on_disk} of {n} steps on disk")
    out: dict[str, Any] = {
        "case": mode,
        "name": MODES[mode][0],
        "n": n,
        "repeats": repeats,
        "total_us": min(totals),
        "total_median_us": statistics.median(totals),
        "agent_us": min(agents),
        "agent_median_us": statistics.median(agents),
        "bytes_per_step": statistics.median(sizes),
        "lost": lost,
    }
    if exporter is not None:
        out["exporter"] = {"retries": exporter.stats.retries, "spans_queued": exporter.pending()}
    return out


def _latency_child(mode: str, n: int) -> dict[str, Any]:
    """Each step timed alone: the agent's wait per step, its tail, with the collector down or no exporter."""
    import trajdebug

    exporter = _configure("export-down") if mode == "export-down" else None
    times: list[int] = []
    clock = time.perf_counter_ns
    with trajdebug.run("latency", sinks=[_DropSink()]):
        for i in range(n):
            t0 = clock()
            with trajdebug.step("x", kind="tool", input=IN) as s:
                s.output = OUT
            times.append(clock() - t0)
            if i % 1000 == 999:
                time.sleep(0.01)  # let the writer and the exporter run, as they would while the agent waits on a model
    times.sort()

    def q(p: float) -> float:
        return times[min(len(times) - 1, int(p * len(times)))] / 1000

    out = {
        "mode": mode,
        "steps": n,
        "p50_us": q(0.5),
        "p99_us": q(0.99),
        "p999_us": q(0.999),
        "max_us": times[-1] / 1000,
        "over_1ms": sum(t > 1_000_000 for t in times),
    }
    if exporter is not None:
        out["exporter_retries"] = exporter.stats.retries
    return out


def run_child(name: str, n: int, repeats: int) -> dict[str, Any]:
    """Run one configuration in a fresh interpreter (``latency:MODE`` for the latency child)."""
    env = dict(os.environ)
    for k in ("TRAJDEBUG", "TRAJDEBUG_SUMMARY", "TRAJDEBUG_SAMPLE_RATE", "TRAJDEBUG_HEAD_RATE", "TRAJDEBUG_ROLLOUT"):
        env.pop(k, None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), str(ROOT / "src"), env.get("PYTHONPATH", "")) if p)
    cmd = [sys.executable, "-m", "benchmarks.production", "--child", name, "--n", str(n), "--repeats", str(repeats)]
    proc = run_scratch(cmd, ROOT, env)  # a scratch TMPDIR, removed after the child
    if proc.returncode != 0:
        raise RuntimeError(f"production child {name!r} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    data: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return data


# -- sampling ------------------------------------------------------------------------------


class _CountingSink:
    """Counts kept runs by outcome and by why they were kept."""

    def __init__(self) -> None:
        self.kept: dict[str, int] = {}
        self.why: dict[str, int] = {}

    def write(self, records: Any) -> None:
        for r in records:
            if r.get("t") == "end":
                self.kept[r["outcome"]] = self.kept.get(r["outcome"], 0) + 1
            elif r.get("t") == "meta" and "sampling" in r.get("metadata", {}):
                why = r["metadata"]["sampling"]["why"]
                self.why[why] = self.why.get(why, 0) + 1

    def close(self) -> None:
        """Nothing to release."""


def sampling_bench(runs: int, rate: float, fail_share: float = 0.3) -> dict[str, Any]:
    """Record ``runs`` real runs (three steps each, ``fail_share`` failing) under tail sampling at ``rate``."""
    import random

    import trajdebug

    trajdebug.configure(sample_rate=rate)
    sink = _CountingSink()
    rng = random.Random(17)
    failures = 0
    t0 = time.perf_counter()
    try:
        for i in range(runs):
            fail = rng.random() < fail_share
            failures += fail
            try:
                with trajdebug.run("sampled", sinks=[sink]):
                    for j in range(3):
                        with trajdebug.step("fetch", kind="tool", input=f"q{i}") as s:
                            s.output = {"row": j}
                    if fail:
                        raise RuntimeError("wrong answer")
            except RuntimeError:
                pass
        trajdebug.flush(30)
    finally:
        trajdebug.configure(sample_rate=1.0)
    dt = time.perf_counter() - t0
    successes = runs - failures
    kept_s = sink.kept.get("success", 0)
    sigma = math.sqrt(successes * rate * (1 - rate))
    return {
        "runs": runs,
        "rate": rate,
        "failures": failures,
        "failures_kept": sink.kept.get("failure", 0),
        "successes": successes,
        "successes_kept": kept_s,
        "expected": successes * rate,
        "sigma": sigma,
        "z": (kept_s - successes * rate) / sigma if sigma else 0.0,
        "why": sink.why,
        "seconds": dt,
    }


# -- live export ------------------------------------------------------------------------------


def export_restart_bench(runs: int = 120, steps: int = 10) -> dict[str, Any]:
    """Runs recorded while the collector goes down for a second and comes back: spans sent against steps."""
    import trajdebug
    from trajdebug.integrations.otlp_exporter import OtlpExporter
    from trajdebug.integrations.otlp_receiver import OtlpReceiver

    rx = OtlpReceiver().start()
    exporter = OtlpExporter(rx.endpoint, interval=0.05, backoff=0.05, max_backoff=0.5)
    trajdebug.configure(sinks=(exporter,))
    recorded = 0
    down_at = runs // 3
    t_down = 0.0
    try:
        for i in range(runs):
            if i == down_at:
                trajdebug.flush(5)
                rx.stop()
                t_down = time.perf_counter()
            if i == 2 * down_at:
                time.sleep(max(0.0, 1.0 - (time.perf_counter() - t_down)))
                rx.start()
            with trajdebug.run("exported", sinks=[_DropSink()]), trajdebug.step("agent", kind="agent"):
                for j in range(steps):
                    with trajdebug.step("fetch", kind="tool", input=f"q{i}.{j}") as s:
                        s.output = j
            recorded += steps + 1
        trajdebug.flush(10)
        exporter.force_flush(30)
        received = rx.span_count()
    finally:
        trajdebug.configure(sinks=())
        exporter.shutdown(1)
        rx.stop()
    st = exporter.stats
    return {
        "runs": runs,
        "spans_recorded": recorded,
        "spans_received": received,
        "retries": st.retries,
        "dropped": st.dropped_queue_full + st.dropped_rejected + st.dropped_at_shutdown,
        "requests": rx.requests,
    }


# -- timeouts ------------------------------------------------------------------------------------


def timeout_bench(bound: float = 0.1, calls: int = 20) -> dict[str, Any]:
    """How far past its bound a call returns control: sync, async, and from eight threads at once."""
    import trajdebug

    @trajdebug.step(kind="tool", timeout=bound)
    def slow_sync() -> None:
        time.sleep(bound * 20)

    @trajdebug.step(kind="tool", timeout=bound)
    async def slow_async() -> None:
        await asyncio.sleep(bound * 20)

    def one(fn: Callable[[], Any]) -> float:
        t0 = time.perf_counter()
        try:
            fn()
        except trajdebug.ToolTimeout:
            pass
        return time.perf_counter() - t0

    rows: dict[str, list[float]] = {"sync": [], "async": [], "threads": []}
    with trajdebug.run("timeouts", sinks=[_DropSink()]):
        for _ in range(calls):
            rows["sync"].append(one(slow_sync))
            rows["async"].append(one(lambda: asyncio.run(slow_async())))
        lock = threading.Lock()

        def worker() -> None:
            for _ in range(max(calls // 8, 2)):
                took = one(slow_sync)
                with lock:
                    rows["threads"].append(took)

        threads = [threading.Thread(target=trajdebug.wrap(worker)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return {
        "bound_s": bound,
        "rows": {
            k: {"calls": len(v), "median_over_pct": 100 * (statistics.median(v) / bound - 1), "max_over_pct": 100 * (max(v) / bound - 1)}
            for k, v in rows.items()
        },
    }


# -- what summary mode costs the analysis ----------------------------------------------------------


def summary_quality(seeds: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """The fault-injection suite recorded in full and in summary mode: top-1 and top-3 of trajdebug."""
    import trajdebug
    from benchmarks.quality import cases, run_case

    out: dict[str, Any] = {}
    all_cases = cases(seeds)
    for mode in ("full", "summary"):
        trajdebug.configure(summary=mode == "summary")
        ranks: list[int | None] = []
        try:
            for i, case in enumerate(all_cases, 1):
                rec = run_case(case, {})
                ranks.append(rec.outcomes["trajdebug"].rank)
                if i % 100 == 0:
                    progress(f"production: summary quality {mode} {i}/{len(all_cases)}")
        finally:
            trajdebug.configure(summary=())
        n = len(ranks)
        out[mode] = {
            "cases": n,
            "top1": sum(r == 1 for r in ranks) / n,
            "top3": sum(r is not None and r <= 3 for r in ranks) / n,
            "found": sum(r is not None for r in ranks) / n,
        }
    return out


def summary_blind(workdir: Path, progress: Callable[[str], None]) -> dict[str, Any]:
    """The blind suites analyzed as recorded and with every run summarized (`summarize_run`), both settings."""
    from benchmarks.blind import SETTINGS, _cases, _source, generate, truth_step
    from trajdebug.api import analyze_source
    from trajdebug.record.summary import summarize_run
    from trajdebug.sources.load import load_runs

    out: dict[str, Any] = {}
    for suite in ("suite_b", "suite_a", "suite_dev"):
        root = generate(suite, workdir, progress)
        stats: dict[str, dict[str, list[int | None]]] = {m: {s: [] for s in SETTINGS} for m in ("full", "summary")}
        for truth in _cases(root):
            for setting in SETTINGS:
                src = _source(root / truth["case_id"], "failed" if setting == "alone" else "with_refs")
                runs = load_runs(src)
                for mode in ("full", "summary"):
                    pool = runs if mode == "full" else [summarize_run(r) for r in runs]
                    try:
                        # The hand ranking: the learned model (the default since round 42) is trained on these cases.
                        [a] = analyze_source(src, truth["failed_run_id"], top=5, runs=pool, model=None).analyses
                    except Exception:  # noqa: BLE001 - a case the analysis cannot read counts as a miss
                        stats[mode][setting].append(None)
                        continue
                    sid = truth_step(a.run, truth["root"])
                    ranking = list(a.localization.ranking)
                    stats[mode][setting].append(ranking.index(sid) + 1 if sid in ranking else None)
        out[suite] = {
            mode: {
                s: {
                    "cases": len(r),
                    "top1": sum(x == 1 for x in r) / len(r) if r else 0.0,
                    "top3": sum(x is not None and x <= 3 for x in r) / len(r) if r else 0.0,
                }
                for s, r in by.items()
            }
            for mode, by in stats.items()
        }
        progress(f"production: summary on {suite} done")
    return out


# -- the section ------------------------------------------------------------------------------------


def run_production(*, quick: bool = False, progress: Callable[[str], None] | None = None, workdir: Path | None = None) -> dict[str, Any]:
    """Every measure of this section."""
    say = progress or (lambda s: None)
    n, rep = (20_000, 3) if quick else (100_000, 5)
    data: dict[str, Any] = {"cost": [], "latency": [], "load_before": os.getloadavg()[0], "cores": os.cpu_count()}
    say("production: cost per step")
    data["n"], data["repeats"] = n, rep
    data["cost"] = [run_child(mode, n, rep) for mode in MODES]
    otel = recording_case("otel-batch", n, rep)
    data["cost"].append({**otel, "name": "OpenTelemetry SDK span, BatchSpanProcessor, dropping exporter"})
    say("production: per-step latency, collector down")
    data["latency"] = [run_child(f"latency:{m}", 20_000 if quick else 50_000, 1) for m in ("full", "export-down")]
    say("production: sampling")
    data["sampling"] = sampling_bench(2_000 if quick else 10_000, 0.1)
    say("production: export across a collector restart")
    data["export"] = export_restart_bench(60 if quick else 120)
    say("production: timeouts")
    data["timeouts"] = timeout_bench(0.1, 10 if quick else 20)
    say("production: summary mode, fault suite")
    data["summary_quality"] = summary_quality(2 if quick else 5, say)
    say("production: summary mode, blind suites")
    data["summary_blind"] = summary_blind(workdir or Path(tempfile.mkdtemp(prefix="trajdebug-blind-")), say)
    data["load_after"] = os.getloadavg()[0]
    return data


def _pct(x: float) -> str:
    return f"{100 * x:.0f} %"


def render_section(data: dict[str, Any]) -> list[str]:
    """The section of docs/benchmarks.md."""
    out = [
        "## Recording in production",
        "",
        f"Measured {data.get('date', '?')} (`python -m benchmarks --only production`; settings and modes in "
        "[production.md](production.md)).",
        "",
    ]
    if "load_before" in data:
        out += [
            f"The machine's load average was {data['load_before']:.1f} when the section started and "
            f"{data.get('load_after', 0.0):.1f} when it ended, on {data.get('cores', '?')} cores: other jobs shared it, "
            "so the microsecond figures (and the tails of the timings) are noisier than the ratios between rows, "
            "which were measured side by side.",
            "",
        ]
    out += [
        "### Cost per step in each mode, beside the OpenTelemetry SDK",
        "",
        f"A loop of {data.get('n', 0):,} steps with a 200-byte input and output (`with trajdebug.step(...)`) into a "
        "JSONL file, each mode in its own interpreter, measured as the recording section measures full recording "
        "(`benchmarks/recording.py`): *total* is the process's CPU (the agent's thread, the writer's, the "
        "exporter's) from before the run until everything is written, per step; *agent* is the agent's thread "
        "alone.  The queue is sized so that nothing drops, and the file is checked: every step for a kept mode, "
        "nothing for a run sampled out.  The OpenTelemetry SDK row is a span with the same two 200-byte "
        f"attributes through its BatchSpanProcessor to an exporter that drops them.  Min of {data.get('repeats', 0)} "
        "repeats (median beside it).",
        "",
        "| configuration | total CPU µs/step | median | agent µs/step | bytes/step on disk | notes |",
        "|---|---:|---:|---:|---:|---|",
    ]
    otel = next((t for t in data.get("cost", []) if t.get("case") == "otel-batch"), None)
    for t in data.get("cost", []):
        notes = []
        if otel is not None and t is not otel and t["total_us"] > 0:
            notes.append(f"the OTel SDK costs {otel['total_us'] / t['total_us']:.1f}× this")
        if t.get("exporter"):
            notes.append(f"exporter: {t['exporter']['retries']} retries, {t['exporter']['spans_queued']:,} spans waiting")
        if t.get("lost"):
            notes.append(f"{t['lost']:,} records lost")
        size = f"{t['bytes_per_step']:.0f}" if "bytes_per_step" in t else "–"
        out.append(
            f"| {t['name']} | {t['total_us']:.2f} | {t['total_median_us']:.2f} | {t['agent_us']:.2f} | {size} | "
            f"{'; '.join(notes)} |"
        )
    lat = data.get("latency", [])
    if lat:
        out += [
            "",
            "### The agent's wait per step while the collector is down",
            "",
            "Each step timed alone (50,000 steps, a 10 ms pause every 1,000 so the background threads run); "
            "the exporter sends to a closed port and retries with backoff.",
            "",
            "| configuration | p50 µs | p99 µs | p99.9 µs | max µs | steps over 1 ms |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for r in lat:
            what = "full + exporter, collector down" if r["mode"] == "export-down" else "full, no exporter"
            out.append(
                f"| {what} | {r['p50_us']:.1f} | {r['p99_us']:.1f} | {r['p999_us']:.1f} | {r['max_us']:.0f} | {r['over_1ms']} |"
            )
    s = data.get("sampling")
    if s:
        out += [
            "",
            "### Tail sampling over real runs",
            "",
            f"{s['runs']:,} runs of three steps ({s['failures']:,} failing) at sample_rate {s['rate']}: "
            f"**{s['failures_kept']:,} of {s['failures']:,} failures kept**; {s['successes_kept']:,} of "
            f"{s['successes']:,} successes kept (expected {s['expected']:.0f} ± {s['sigma']:.0f}, "
            f"z = {s['z']:+.2f}); {s['seconds']:.1f} s in all.",
        ]
    e = data.get("export")
    if e:
        out += [
            "",
            "### Live export across a collector restart",
            "",
            f"{e['runs']} runs exported to the receiver, which is down for a second a third of the way in: "
            f"**{e['spans_received']:,} of {e['spans_recorded']:,} spans received**, {e['retries']} retries, "
            f"{e['dropped']} dropped, {e['requests']} requests.",
        ]
    tm = data.get("timeouts")
    if tm:
        out += ["", "### Timeouts", "", f"Bound {tm['bound_s']} s; how far past it the caller got control back.", "",
                "| form | calls | median over | max over |", "|---|---:|---:|---:|"]
        for k, v in tm["rows"].items():
            out.append(f"| {k} | {v['calls']} | {v['median_over_pct']:.1f} % | {v['max_over_pct']:.1f} % |")
    sq = data.get("summary_quality")
    if sq:
        out += [
            "",
            "### What summary mode costs the analysis",
            "",
            "The fault-injection suite recorded in full and in summary mode (every input, output and attribute a "
            "hash, a length and features; lineage on hashes of values; diagnosers that read content step aside):",
            "",
            "| recording | cases | top-1 | top-3 | found |",
            "|---|---:|---:|---:|---:|",
        ]
        for mode, v in sq.items():
            out.append(f"| {mode} | {v['cases']} | {_pct(v['top1'])} | {_pct(v['top3'])} | {_pct(v['found'])} |")
    sb = data.get("summary_blind")
    if sb:
        out += [
            "",
            "The blind suites, every run summarized after recording (`trajdebug.record.summary.summarize_run`, "
            "the same summaries the recorder writes):",
            "",
            "| suite | setting | top-1 full | top-1 summary | top-3 full | top-3 summary |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for suite, modes in sb.items():
            for setting in modes["full"]:
                f, m = modes["full"][setting], modes["summary"][setting]
                out.append(
                    f"| {suite} | {setting} | {_pct(f['top1'])} | {_pct(m['top1'])} | {_pct(f['top3'])} | {_pct(m['top3'])} |"
                )
    return [*out, ""]


def _main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="One production-benchmark configuration, in its own process.")
    p.add_argument("--child", required=True)
    p.add_argument("--n", type=int, default=20_000)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    gc.collect()
    if a.child.startswith("latency:"):
        print(json.dumps(_latency_child(a.child.split(":", 1)[1], a.n)))
        return
    print(json.dumps(_child(a.child, a.n, a.repeats)))


if __name__ == "__main__":
    _main()


__all__ = [
    "MODES",
    "export_restart_bench",
    "render_section",
    "run_child",
    "run_production",
    "sampling_bench",
    "summary_blind",
    "summary_quality",
    "timeout_bench",
]
