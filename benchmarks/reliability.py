"""The reliability benchmark: what a SIGKILL loses, what load costs, memory per step, a locked store.

``python -m benchmarks --only reliability`` runs it (``--quick``: fewer kills,
100,000 steps instead of 1,000,000).  Every measurement runs the recorder in a
child process (a real SIGKILL, a real resident set size), writing to real
SQLite stores and JSONL files:

1. **Loss window after SIGKILL.**  A child records steps into a sink and prints
   each step's id and the time it finished; the parent kills it at a random
   moment.  For each kill: the steps printed before the kill that are not on
   disk, how long before the kill the oldest of them finished (the loss
   window), and how many finished more than ``flush_interval`` before the kill
   yet are missing (the durability promise: none).  Paced (a 2 ms step, an agent
   waiting on tools) and in a tight loop (no pause at all).
2. **Drops under load.**  1,000,000 steps as fast as Python allows into a
   store: steps written, steps dropped (read from the run's end record),
   written + dropped against produced, the peak resident set, and the longest
   gap between two writes to the file while the loop ran (the writer writes at
   least every ``flush_interval`` under any load).
3. **Memory per step.**  400,000 steps with distinct 200-byte outputs, paced so
   that nothing drops: resident set growth per step over the first and the
   second half of the run (the identity-tracking registry fills up to
   ``track_budget_bytes``, then stays there).
4. **A locked store.**  Another process holds the store's write lock for two
   seconds while the agent records five runs of 100 steps: the longest the
   agent's thread was blocked in any recorder call (run start, step, run end),
   and the steps on disk once the lock is gone.
"""

from __future__ import annotations

import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parent.parent

_KILL_CHILD = textwrap.dedent(
    """
    import sys, time, trajdebug
    target, pace = sys.argv[1], float(sys.argv[2])
    sink = {"path": target} if target.endswith(".jsonl") else {"store": target}
    with trajdebug.run("killed", **sink):
        for i in range(10_000_000):
            with trajdebug.step("work", kind="tool", input={"i": i}) as s:
                s.output = {"i": i, "text": "x" * 100}
                if pace:
                    time.sleep(pace)
            print(s.id, time.monotonic(), flush=True)
    """
)

_LOAD_CHILD = textwrap.dedent(
    """
    import json, os, sys, threading, time, trajdebug
    target, n = sys.argv[1], int(sys.argv[2])
    gaps = []
    stop = threading.Event()

    def watch():
        # Every commit touches the write-ahead log: its modification time marks a write.
        last, last_t = 0, time.monotonic()
        while not stop.is_set():
            time.sleep(0.005)
            try:
                mtime = os.stat(target + "-wal").st_mtime_ns
            except FileNotFoundError:
                continue
            now = time.monotonic()
            if mtime != last:
                if last:
                    gaps.append(now - last_t)
                last, last_t = mtime, now

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    t0 = time.perf_counter()
    with trajdebug.run("load", store=target) as h:
        for i in range(n):
            with trajdebug.step("s", kind="tool") as s:
                s.output = i
        loop_s = time.perf_counter() - t0
        stop.set()
    total_s = time.perf_counter() - t0
    with open("/proc/self/status") as fh:
        hwm = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
    gaps.sort()
    pct = lambda q: gaps[min(len(gaps) - 1, int(q * len(gaps)))] if gaps else None
    print(json.dumps({"loop_s": loop_s, "total_s": total_s, "dropped": h.stats["dropped"], "lost": h.losses["lost"],
                      "peak_rss_kib": hwm, "max_write_gap_s": max(gaps) if gaps else None,
                      "p50_write_gap_s": pct(0.5), "p99_write_gap_s": pct(0.99), "writes": len(gaps) + 1,
                      "run_id": h.run_id}))
    """
)

_MEMORY_CHILD = textwrap.dedent(
    """
    import gc, json, sys, time, trajdebug
    target, n = sys.argv[1], int(sys.argv[2])

    def rss():
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS"))

    @trajdebug.step(kind="tool")
    def tool(i):
        return f"result {i:012d} " + "r" * 180

    trajdebug.configure(backlog_seconds=None)  # its bursts of 500 steps may queue: this measures memory, not drops
    with trajdebug.run("memory", store=target) as h:
        trajdebug.record.flush()
        start = rss()
        marks = []
        for i in range(n):
            tool(i)
            if i % 500 == 0:
                time.sleep(0.005)  # an agent's pace: the writer keeps up, nothing drops
            if (i + 1) % (n // 10) == 0:
                trajdebug.record.flush()
                gc.collect()
                marks.append(rss())
    print(json.dumps({"start_kib": start, "marks_kib": marks, "steps": n, "dropped": h.stats["dropped"]}))
    """
)

_LOCK_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("COMMIT")
    """
)

_LOCK_AGENT = textwrap.dedent(
    """
    import json, sys, time, trajdebug
    from trajdebug.store import Store
    target, warm = sys.argv[1], sys.argv[2]
    # The process's first run pays one-time costs (imports, the writer thread's start): measured apart.
    t = time.perf_counter()
    with trajdebug.run("warm-up", store=warm), trajdebug.step("s"):
        pass
    first_ms = (time.perf_counter() - t) * 1000
    worst, ids = 0.0, []
    for r in range(5):
        t = time.perf_counter()
        h = trajdebug.run("patient", store=target)
        h.__enter__()
        worst = max(worst, time.perf_counter() - t)
        for i in range(100):
            t = time.perf_counter()
            with trajdebug.step("s", kind="tool") as s:
                s.output = i
            worst = max(worst, time.perf_counter() - t)
        t = time.perf_counter()
        h.__exit__(None, None, None)
        worst = max(worst, time.perf_counter() - t)
        ids.append(h.run_id)
    exited = time.monotonic()
    ok = trajdebug.record.flush(30)
    with Store(target, readonly=True) as st:
        steps = sum(len(st.load_run(i).steps) for i in ids)
    print(json.dumps({"worst_block_ms": worst * 1000, "first_run_ms": first_ms, "exited_at": exited, "flushed": ok, "steps": steps}))
    """
)


_SEEDED_CHILD = textwrap.dedent(
    """
    import random, sys
    random.seed(0)
    import trajdebug
    random.seed(0)  # as an evaluation harness does before each episode
    with trajdebug.run("seeded", store=sys.argv[1], path=sys.argv[2]):
        for i in range(3):
            with trajdebug.step("s", kind="tool") as s:
                s.output = i
    """
)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRAJDEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT / "src"), str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _on_disk(target: Path) -> tuple[set[str], int]:
    """The step ids on disk, and the records counted as lost in what is read (the ledger's count of a
    killed process included; when the kill came before the first write, the ledger's count alone)."""
    from trajdebug.core import ledger
    from trajdebug.core.jsonl import read_jsonl
    from trajdebug.core.schema import lost_records
    from trajdebug.store import Store

    if not target.exists():
        return set(), sum(n for n, _ in ledger.unsettled(target).values())
    if target.suffix == ".jsonl":
        runs = read_jsonl(target).runs
    else:
        with Store(target, readonly=True) as st:
            runs = st.read().runs
    return {s.step_id for r in runs for s in r.steps if s.name == "work"}, sum(lost_records(r) for r in runs)


LOSS_WINDOW = 0.15
"""The promise under any load: finished steps older than this at the kill are on disk, or counted as
dropped in what is on disk."""


def kill_trial(target: Path, pace: float, after: float) -> dict[str, Any]:
    """One SIGKILL: start the child, kill it ``after`` seconds in, compare what it printed with the disk."""
    from trajdebug.record import CONFIG

    printed: list[tuple[str, float]] = []
    with subprocess.Popen(
        [sys.executable, "-c", _KILL_CHILD, str(target), str(pace)], stdout=subprocess.PIPE, text=True, env=_env()
    ) as proc:
        assert proc.stdout is not None
        first = proc.stdout.readline().split()
        printed.append((first[0], float(first[1])))
        deadline = time.monotonic() + after
        while time.monotonic() < deadline:
            parts = proc.stdout.readline().split()
            printed.append((parts[0], float(parts[1])))
        killed = time.monotonic()
        proc.send_signal(signal.SIGKILL)
        printed += [(ln.split()[0], float(ln.split()[1])) for ln in proc.stdout.read().splitlines() if len(ln.split()) == 2]
        proc.wait()
    no_file = not target.exists()
    disk, counted = _on_disk(target)
    missing = [(sid, t) for sid, t in printed if sid not in disk]
    older = sum(1 for _, t in missing if t < killed - LOSS_WINDOW)
    return {
        "no_file": no_file,
        # Every missing step counted (one step may finish after its id was printed: counted, not printed).
        "uncounted": max(0, len(missing) - counted),
        "overcounted": max(0, counted - len(missing) - 1),
        "printed": len(printed),
        "missing": len(missing),
        "window_s": killed - min(t for _, t in missing) if missing else 0.0,
        "missing_older_than_interval": sum(1 for _, t in missing if t < killed - CONFIG.flush_interval),
        "counted_dropped": counted,
        "older_than_window_uncounted": max(0, older - counted),
    }


def sigkill(trials: int, progress: Callable[[str], None]) -> list[dict[str, Any]]:
    """Kill trials for each sink, paced and in a tight loop."""
    rng = random.Random(2024)
    rows = []
    with tempfile.TemporaryDirectory(prefix="trajdebug-kill-") as tmp:
        for pace, label in ((0.002, "2 ms per step"), (0.0, "tight loop")):
            for suffix, sink in ((".jsonl", "JSONL"), (".db", "store")):
                progress(f"reliability: {trials} kills, {sink}, {label}")
                got = [
                    kill_trial(Path(tmp) / f"k{pace}{i}{suffix}", pace, rng.uniform(0.3, 1.2)) for i in range(trials)
                ]
                windows = [g["window_s"] for g in got]
                rows.append(
                    {
                        "sink": sink,
                        "pace": label,
                        "trials": trials,
                        "printed": sum(g["printed"] for g in got),
                        "missing": sum(g["missing"] for g in got),
                        "median_window_s": statistics.median(windows),
                        "max_window_s": max(windows),
                        "missing_older_than_interval": sum(g["missing_older_than_interval"] for g in got),
                        "trials_with_loss": sum(1 for g in got if g["missing"]),
                        "counted_dropped": sum(g["counted_dropped"] for g in got),
                        "trials_within_window": sum(1 for g in got if not g["older_than_window_uncounted"]),
                        "uncounted": sum(g["uncounted"] for g in got),
                        "overcounted": sum(g["overcounted"] for g in got),
                        "no_file": sum(1 for g in got if g["no_file"]),
                    }
                )
    return rows


def load(n: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """A tight loop of ``n`` steps into a store: written + dropped against produced, peak memory, write gaps."""
    from trajdebug.store import Store

    progress(f"reliability: {n:,} steps in a tight loop")
    with tempfile.TemporaryDirectory(prefix="trajdebug-load-") as tmp:
        db = Path(tmp) / "load.db"
        proc = subprocess.run(
            [sys.executable, "-c", _LOAD_CHILD, str(db), str(n)], capture_output=True, text=True, env=_env(), check=True, timeout=3600
        )
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        with Store(db, readonly=True) as st:
            run = st.load_run(out["run_id"])
        written = len(run.steps)
        account = run.metadata.get("recorder", {}).get("lost", {})
    return {
        "produced": n,
        "written": written,
        "dropped": int(account.get("dropped", 0)),
        "accounted": written + int(account.get("dropped", 0)) == n,
        "loop_s": out["loop_s"],
        "total_s": out["total_s"],
        "peak_rss_mib": out["peak_rss_kib"] / 1024,
        "max_write_gap_s": out["max_write_gap_s"],
        "p50_write_gap_s": out["p50_write_gap_s"],
        "p99_write_gap_s": out["p99_write_gap_s"],
        "writes": out["writes"],
    }


def memory(n: int, progress: Callable[[str], None]) -> dict[str, Any]:
    """Resident set growth per step over ``n`` paced steps with distinct outputs."""
    progress(f"reliability: memory over {n:,} steps")
    with tempfile.TemporaryDirectory(prefix="trajdebug-mem-") as tmp:
        proc = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, str(Path(tmp) / "m.db"), str(n)],
            capture_output=True, text=True, env=_env(), check=True, timeout=3600,
        )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    marks = out["marks_kib"]
    # Steady state: the second half of the run, once identity tracking has filled its budget.
    half = (marks[-1] - marks[len(marks) // 2 - 1]) * 1024
    return {
        "steps": n,
        "dropped": out["dropped"],
        "peak_growth_mib": (max(marks) - out["start_kib"]) / 1024,
        "first_half_bytes_per_step": (marks[len(marks) // 2 - 1] - out["start_kib"]) * 1024 / (n // 2),
        "second_half_bytes_per_step": half / (n - n // 2),
        "rss_mib": [m / 1024 for m in marks],
    }


def locked(hold_s: float, progress: Callable[[str], None]) -> dict[str, Any]:
    """The agent records while another process holds the store's write lock."""
    from trajdebug.store import Store

    progress("reliability: a store locked by another process")
    with tempfile.TemporaryDirectory(prefix="trajdebug-lock-") as tmp:
        db = Path(tmp) / "locked.db"
        Store(db).close()
        with subprocess.Popen([sys.executable, "-c", _LOCK_HOLDER, str(db), str(hold_s)], stdout=subprocess.PIPE, text=True, env=_env()) as holder:
            assert holder.stdout is not None
            holder.stdout.readline()
            locked_at = time.monotonic()
            agent = subprocess.run(
                [sys.executable, "-c", _LOCK_AGENT, str(db), str(Path(tmp) / "warm.db")],
                capture_output=True, text=True, env=_env(), check=True, timeout=120,
            )
            holder.wait()
    out = json.loads(agent.stdout.strip().splitlines()[-1])
    return {
        "hold_s": hold_s,
        "worst_block_ms": out["worst_block_ms"],
        "first_run_ms": out["first_run_ms"],
        "agent_done_while_locked": out["exited_at"] - locked_at < hold_s,
        "steps_on_disk": out["steps"],
        "flushed": out["flushed"],
    }


def seeded(n: int, progress: Callable[[str], None], parallel: int = 5) -> dict[str, Any]:
    """``n`` processes that call ``random.seed(0)`` record one run of 3 steps each into one store and one
    JSONL file (``parallel`` at a time): runs found in each, and how many were merged into another."""
    from trajdebug.core.jsonl import read_jsonl
    from trajdebug.store import Store

    progress(f"reliability: {n} processes that seed random")
    with tempfile.TemporaryDirectory(prefix="trajdebug-seeded-") as tmp:
        db, jl = Path(tmp) / "s.db", Path(tmp) / "r.jsonl"
        for start in range(0, n, parallel):
            procs = [
                subprocess.Popen([sys.executable, "-c", _SEEDED_CHILD, str(db), str(jl)], env=_env())
                for _ in range(min(parallel, n - start))
            ]
            for p in procs:
                p.wait(120)
        with Store(db, readonly=True) as st:
            in_store = st.read().runs
        in_file = read_jsonl(jl)
    return {
        "processes": n,
        "store_runs": len(in_store),
        "store_merged": n - len(in_store),
        "store_steps_max": max((len(r.steps) for r in in_store), default=0),
        "store_renamed": sum(1 for r in in_store if "renamed_from" in r.metadata.get("recorder", {})),
        "jsonl_runs": len(in_file.runs),
        "jsonl_merged": n - len(in_file.runs),
        "jsonl_split": sum(1 for p in in_file.problems if "starts again" in str(p)),
    }


_OTEL_KILL_CHILD = textwrap.dedent(
    """
    import json, os, sys, time
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class FileExporter(SpanExporter):
        # One line per span (its index), appended and handed to the OS at each export, as a file exporter does.
        def __init__(self, path):
            self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        def export(self, spans):
            os.write(self.fd, "".join(f"{s.attributes['i']}\\n" for s in spans).encode())
            return SpanExportResult.SUCCESS
        def shutdown(self):
            os.close(self.fd)

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(FileExporter(sys.argv[1])))  # the SDK's defaults
    tracer = provider.get_tracer("bench")
    for i in range(100_000_000):
        with tracer.start_as_current_span("work", attributes={"i": i}):
            pass
        if i % 500 == 0:
            print(i, time.monotonic(), flush=True)
    """
)


def otel_sigkill(trials: int, progress: Callable[[str], None]) -> dict[str, Any] | None:
    """The OpenTelemetry SDK's BatchSpanProcessor (its defaults: a 2,048-span queue, an export every 5 s)
    killed in a tight loop one to two seconds in, like `kill_trial` with marks every 500 spans: spans that
    ended more than 150 ms before the kill and are not on disk (the SDK counts its drops nowhere on disk)."""
    import importlib.util

    if importlib.util.find_spec("opentelemetry.sdk") is None:
        return None
    progress(f"reliability: {trials} kills of the OpenTelemetry SDK in a tight loop")
    rng = random.Random(7)
    out, uncounted = [], []
    with tempfile.TemporaryDirectory(prefix="trajdebug-otelkill-") as tmp:
        for k in range(trials):
            f = Path(tmp) / f"spans{k}.txt"
            with subprocess.Popen([sys.executable, "-c", _OTEL_KILL_CHILD, str(f)], stdout=subprocess.PIPE, text=True, env=_env()) as proc:
                assert proc.stdout is not None
                marks = []
                deadline = time.monotonic() + rng.uniform(1.0, 2.0)
                while time.monotonic() < deadline:
                    i, t = proc.stdout.readline().split()
                    marks.append((int(i), float(t)))
                killed = time.monotonic()
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            on_disk = {int(x) for x in f.read_text().split()} if f.exists() else set()
            due = max(i for i, t in marks if t < killed - LOSS_WINDOW)
            out.append(sum(1 for i in range(due + 1) if i not in on_disk))
            # Every span ended by the last mark and not on disk is lost uncounted: the SDK writes no count.
            last = max(i for i, _ in marks)
            uncounted.append(sum(1 for i in range(last + 1) if i not in on_disk))
    return {
        "trials": trials,
        "lost_older_than_window": out,
        "trials_within_window": sum(1 for n in out if n == 0),
        "lost_uncounted": uncounted,
    }


def proxies(progress: Callable[[str], None]) -> dict[str, Any]:
    """A lazy proxy (every attribute raises) as input, output, argument, return, error detail, run metadata;
    and exceptions whose __setattr__ raises: steps written of those recorded."""
    import trajdebug
    from trajdebug.core.jsonl import read_jsonl

    progress("reliability: lazy proxies and exceptions that refuse attributes")

    class Proxy:
        def __getattribute__(self, name: str) -> Any:
            raise RuntimeError("working outside of request context")

    class Frozen(Exception):
        def __setattr__(self, name: str, value: Any) -> None:
            raise RuntimeError("frozen")

    p = Proxy()

    @trajdebug.step(kind="tool")
    def tool(x: Any) -> Any:
        return p

    with tempfile.TemporaryDirectory(prefix="trajdebug-proxy-") as tmp:
        path = Path(tmp) / "r.jsonl"
        with trajdebug.run("proxies", path=path, metadata={"m": p}):
            with trajdebug.step("input", input=p):
                pass
            with trajdebug.step("output") as s:
                s.output = p
            tool(p)
            with trajdebug.step("detail") as s:
                s.error("bad", detail=p)
            try:
                with trajdebug.step("frozen"):
                    raise Frozen("x")
            except Frozen:
                pass
        run = read_jsonl(path).runs[0]
    return {"steps": 5, "written": len(run.steps), "run_record": run.name == "proxies"}


def foreign(progress: Callable[[str], None]) -> dict[str, Any]:
    """Damaged foreign files (one bad value each): good spans kept, problems named, no exception escaping."""
    from trajdebug.sources.formats import import_path

    progress("reliability: damaged foreign files")

    def span(i: int, attrs: Any = None, **extra: Any) -> dict[str, Any]:
        d = {"traceId": "0" * 31 + "1", "spanId": f"{i + 1:016x}", "name": f"s{i}", "startTimeUnixNano": str(1000 + i),
             "endTimeUnixNano": str(2000 + i), "attributes": attrs or [{"key": "a", "value": {"intValue": "5"}}]}
        d.update(extra)
        return d

    def env(spans: list[dict[str, Any]]) -> dict[str, Any]:
        return {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}

    good = [span(i) for i in range(8)]
    cases = {
        "intValue \"abc\"": env([*good, span(9, [{"key": "n", "value": {"intValue": "abc"}}])]),
        "bad doubleValue": env([*good, span(9, [{"key": "n", "value": {"doubleValue": "x1"}}])]),
        "malformed event list": env([*good, span(9, events=[{"name": "e"}, 5, "x"])]),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="trajdebug-foreign-") as tmp:
        for name, doc in cases.items():
            f = Path(tmp) / "f.json"
            f.write_text(json.dumps(doc))
            rows.append(_import_row(name, f, "otlp", 8, import_path))
        text = json.dumps(env(good))
        f = Path(tmp) / "cut.json"
        f.write_text(text[: text.index('"s7"')])
        rows.append(_import_row("truncated tail", f, "otlp", 7, import_path))
        msgs = [{"role": "user", "name": "u", "content": "hi"}, {"role": "assistant", "name": "a", "content": "ok"}]
        f = Path(tmp) / "t.json"
        f.write_text(json.dumps({"r1": msgs, "r2": {"messages": msgs}}))
        rows.append(_import_row("transcript, top level an object", f, "transcript", 4, import_path))
    return {"cases": rows}


def _import_row(name: str, f: Path, fmt: str, good: int, import_path: Any) -> dict[str, Any]:
    try:
        got = import_path(f, fmt)
        steps, problems, escaped = sum(len(r.steps) for r in got.runs), len(got.problems), None
    except Exception as exc:  # noqa: BLE001 - what the benchmark measures
        steps, problems, escaped = 0, 0, type(exc).__name__
    return {"case": name, "good": good, "good_lost": max(0, good - steps), "problems": problems, "escaped": escaped}


_HOSTILE_CHILD = textwrap.dedent(
    """
    import json, sys, time, trajdebug
    big = list(range(5_000_000)); bigd = {str(i): i for i in range(1_000_000)}; huge = "x" * 50_000_000
    deep = [0]
    for _ in range(10_000):
        deep = [deep]
    def boom(e):
        raise e
    cases = {
        "ValueError(<5M-item list>)": lambda s: boom(ValueError(big)),
        "output: a 5M-item list": lambda s: setattr(s, "output", big),
        "output: a 1M-key dict": lambda s: setattr(s, "output", bigd),
        "output: {'rows': <5M-item list>}": lambda s: setattr(s, "output", {"rows": big}),
        "output: {'a': {'b': [<5M-item list>, <1M-key dict>]}}": lambda s: setattr(s, "output", {"a": {"b": [big, bigd]}}),
        "output: 1,000 lists of 1,000 items": lambda s: setattr(s, "output", [big[:1000]] * 1000),
        "output: 1,000 strings of 60 KB": lambda s: setattr(s, "output", ["y" * 60_000] * 1000),
        "output: a list 10,000 levels deep": lambda s: setattr(s, "output", deep),
        "RuntimeError(<50 MB message>)": lambda s: boom(RuntimeError(huge)),
        "output: a 50 MB string": lambda s: setattr(s, "output", huge),
    }
    out, stall = {}, {}
    with trajdebug.run("hostile", path=sys.argv[1]):
        with trajdebug.step("warm"):
            pass
        time.sleep(0.5)
        for name, fn in cases.items():
            t = time.perf_counter()
            try:
                with trajdebug.step(name) as s:
                    fn(s)
            except Exception:
                pass
            out[name] = (time.perf_counter() - t) * 1000
            # Then the agent goes on: the longest it waits between two of its own ticks while the writer
            # encodes and writes the value (the writer shares the GIL) is also time the value held it.
            worst, last, end = 0.0, time.perf_counter(), time.perf_counter() + 0.3
            while last < end:
                time.sleep(0.0005)
                now = time.perf_counter()
                worst, last = max(worst, now - last), now
            stall[name] = worst * 1000
    print(json.dumps({"ms": out, "stall_ms": stall}))
    """
)


def hostile(progress: Callable[[str], None]) -> dict[str, Any]:
    """How long each hostile value holds the agent's thread in its step (a child process)."""
    progress("reliability: hostile values on the agent's thread")
    with tempfile.TemporaryDirectory(prefix="trajdebug-hostile-") as tmp:
        proc = subprocess.run([sys.executable, "-c", _HOSTILE_CHILD, str(Path(tmp) / "h.jsonl")],
                              capture_output=True, text=True, env=_env(), check=True, timeout=600)  # fmt: skip
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def leaks(progress: Callable[[str], None]) -> dict[str, Any]:
    """The 19 planted secret shapes of tests/test_leaks.py through every command that writes or renders a
    foreign transcript: secrets found in any file or output."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import test_leaks as planted  # the shapes and the transcript that plants them
    finally:
        sys.path.pop(0)
    progress("reliability: planted secrets through every command")
    found: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="trajdebug-leaks-") as tmp:
        src = planted._transcript(Path(tmp) / "t.json")
        out = Path(tmp) / "out"
        out.mkdir()
        commands = {
            "import (store)": ["import", str(src), "-o", str(out / "i.db")],
            "import (JSONL)": ["import", str(src), "-o", str(out / "i.jsonl")],
            "export (OTLP)": ["export", str(src), "-o", str(out / "spans.json")],
            "export (Parquet)": ["export", str(src), "--to", "parquet", "-o", str(out / "ds")],
            "report (HTML)": ["report", str(src), "-o", str(out / "r.html")],
            "show": ["show", str(src)],
            "show --json": ["show", str(src), "--json"],
        }
        env = {**_env(), "TRAJDEBUG_REDACT_PII": "email"}
        for name, args in commands.items():
            before = {f: f.stat().st_mtime_ns for f in out.rglob("*") if f.is_file()}
            got = subprocess.run([sys.executable, "-m", "trajdebug", *args], capture_output=True, env=env, timeout=300)
            blobs = [got.stdout, got.stderr] + [f.read_bytes() for f in out.rglob("*") if f.is_file() and before.get(f) != f.stat().st_mtime_ns]
            found[name] = len({s for b in blobs for s in planted._leaks(b)})
    return {"shapes": len(planted.SHAPES), "found": found}


def full_disk(progress: Callable[[str], None]) -> dict[str, Any] | None:
    """A 16 MiB tmpfs filled after step 21 and freed after step 201 of 300 (tests/test_writer.py's child)."""
    import shutil

    if shutil.which("unshare") is None:
        return None
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import test_writer
    finally:
        sys.path.pop(0)
    progress("reliability: a full disk, then freed")
    with tempfile.TemporaryDirectory(prefix="trajdebug-full-") as tmp:
        mnt, script = Path(tmp) / "mnt", Path(tmp) / "child.py"
        mnt.mkdir()
        script.write_text(test_writer.FULL_DISK_CHILD)
        proc = subprocess.run(
            ["unshare", "-rm", "sh", "-c", f'mount -t tmpfs -o size=16m tmpfs "{mnt}" && exec "{sys.executable}" "{script}" "{mnt}"'],
            capture_output=True, text=True, env=_env(), timeout=300,
        )  # fmt: skip
    if proc.returncode != 0:
        return None
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def locked_exit(progress: Callable[[str], None]) -> dict[str, Any]:
    """A process exits while another holds its store's write lock: records kept in the spill file."""
    import sqlite3

    from trajdebug.store import Store, spill_path

    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import test_writer
    finally:
        sys.path.pop(0)
    progress("reliability: a process exits while its store is locked")
    with tempfile.TemporaryDirectory(prefix="trajdebug-lockexit-") as tmp:
        db = Path(tmp) / "s.db"
        Store(db).close()
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        proc = subprocess.run([sys.executable, "-c", test_writer.LOCKED_EXIT_CHILD, str(db)], capture_output=True, text=True, env=_env(), timeout=120)
        spilled = spill_path(db).exists()
        with Store(db, readonly=True) as st:
            read_while_locked = sum(len(r.steps) for r in st.read().runs)
        holder.execute("COMMIT")
        holder.close()
        with Store(db) as st:
            merged = len(st.load_run(proc.stdout.strip()).steps)
    return {"steps": 50, "spilled": spilled, "read_while_locked": read_while_locked, "after_merge": merged}


def fixed_ports(progress: Callable[[str], None]) -> dict[str, Any]:
    """Fixed ports bound anywhere in the test tree (tests/test_ports.py's scan)."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import test_ports
    finally:
        sys.path.pop(0)
    progress("reliability: fixed ports in the tests")
    hits = [h for f in sorted((ROOT / "tests").rglob("*.py")) if f.name != "test_ports.py" for h in test_ports._fixed_ports(f.read_text())]
    return {"fixed_ports": len(hits)}


def attacks(progress: Callable[[str], None]) -> dict[str, Any]:
    """The rows of issue 24 besides the seeded processes and SIGKILL (each a few seconds)."""
    return {
        "proxies": proxies(progress),
        "foreign": foreign(progress),
        "leaks": leaks(progress),
        "full_disk": full_disk(progress),
        "locked_exit": locked_exit(progress),
        "hostile": hostile(progress),
        "fixed_ports": fixed_ports(progress),
    }


def run_reliability(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the section (``quick``: 5 kills per configuration, 100,000 steps under load)."""
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    from trajdebug.record import CONFIG

    data = {
        "quick": quick,
        "flush_interval_s": CONFIG.flush_interval,
        "max_buffer": CONFIG.max_buffer,
        "sigkill": sigkill(5 if quick else 20, say),
        "otel_sigkill": otel_sigkill(5, say),
        "load": load(100_000 if quick else 1_000_000, say),
        "memory": memory(100_000 if quick else 400_000, say),
        "locked": locked(2.0, say),
        "seeded": seeded(50, say),
        "attacks": attacks(say),
    }
    data["seconds"] = time.perf_counter() - t0
    return data


def render_section(d: dict[str, Any]) -> list[str]:
    """The reliability section of docs/benchmarks.md."""
    ld, mem, lk = d["load"], d["memory"], d["locked"]
    lines = [
        "## 8. Reliability: what a crash loses, what load costs",
        "",
        f"Run {d['date']}{' (quick)' if d.get('quick') else ''}{' on ' + d['machine'] if d.get('machine') else ''} "
        "with `python -m benchmarks --only reliability` "
        f"({d['seconds']:.0f} s); `benchmarks/reliability.py` describes the method. Settings: `flush_interval` "
        f"{d['flush_interval_s']} s, `max_buffer` {d['max_buffer']:,} records, back-pressure `drop`.",
        "",
        "### Loss window after SIGKILL",
        "",
        "A child records steps and prints each step's id once it has finished; it is killed at a random moment "
        "between 0.3 and 1.2 s in. *Missing*: printed steps not on disk. *Window*: how long before the kill the "
        "oldest missing step finished. *Older than the interval*: missing steps that finished more than "
        "`flush_interval` before the kill (the promise is none, while the writer keeps up).",
        "",
        "| sink | steps | kills | printed | missing | kills with a loss | median window | max window | older than the interval "
        "| counted as lost | **lost uncounted** | kills within 150 ms or counted |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d["sigkill"]:
        lines.append(
            f"| {r['sink']} | {r['pace']} | {r['trials']} | {r['printed']:,} | {r['missing']:,} | {r['trials_with_loss']} "
            f"| {r['median_window_s'] * 1000:.0f} ms | {r['max_window_s'] * 1000:.0f} ms | {r['missing_older_than_interval']:,} "
            f"| {r.get('counted_dropped', 0):,} | **{r.get('uncounted', '–')}** | {r.get('trials_within_window', '')} of {r['trials']} |"
        )
    over = sum(r.get("overcounted", 0) for r in d["sigkill"])
    early = sum(r.get("no_file", 0) for r in d["sigkill"])
    lines += [
        "",
        "*Counted as lost*: the run's account as read back (`recorder.lost`: drops written with a later batch, "
        "and `killed`, the finished steps the process's ledger says it handed to its writer and never settled; "
        "see [recording.md](recording.md#what-survives-a-sigkill)). *Lost uncounted*: missing steps beyond that "
        f"count, over all kills (the goal: 0). Counted beyond the missing steps: {over} in all. Kills before the "
        f"first write (no file yet; the ledger beside it alone holds the count): {early}.",
    ]
    ot = d.get("otel_sigkill")
    if ot:
        lines += [
            "",
            f"Beside it, the OpenTelemetry SDK's `BatchSpanProcessor` at its defaults (a 2,048-span queue, an export "
            f"every 5 s, drops counted in memory only) killed the same way in a tight loop: {ot['trials_within_window']} "
            f"of {ot['trials']} kills within 150 ms; spans that ended more than 150 ms before the kill and are not on "
            f"disk, per kill: {', '.join(f'{n:,}' for n in ot['lost_older_than_window'])}"
            + (
                f"; spans lost uncounted (ended before the kill, not on disk, counted nowhere), per kill: "
                f"{', '.join(f'{n:,}' for n in ot['lost_uncounted'])}."
                if "lost_uncounted" in ot
                else "."
            ),
        ]
    lines += [
        "",
        "Paced like an agent waiting on tools, everything older than the flush interval survives. In a tight loop "
        "the agent produces steps faster than the writer thread encodes them (on one GIL): the queue is then cut to "
        "what the writer drains in `backlog_seconds` (0.1 s), the rest is dropped and counted, and the count is on "
        "disk with the next batch, so a kill loses about 150 ms of finished steps or finds them counted. "
        "`trajdebug.configure(backpressure=\"block\")` makes the agent wait instead of dropping.",
        "",
        "### Drops under load",
        "",
        "| produced | written | dropped | written + dropped = produced | loop | until written | peak RSS |",
        "|---|---|---|---|---|---|---|",
        f"| {ld['produced']:,} | {ld['written']:,} | {ld['dropped']:,} ({ld['dropped'] / ld['produced']:.0%}) "
        f"| {'yes' if ld['accounted'] else '**no**'} | {ld['loop_s']:.1f} s | {ld['total_s']:.1f} s "
        f"| {ld['peak_rss_mib']:.0f} MiB |",
        "",
        f"Time between two writes to the store during the loop ({ld['writes']:,} writes): median "
        f"{(ld['p50_write_gap_s'] or 0) * 1000:.0f} ms, 99th percentile {(ld['p99_write_gap_s'] or 0) * 1000:.0f} ms, "
        f"longest {(ld['max_write_gap_s'] or 0) * 1000:.0f} ms (batches are bounded to a quarter of the flush "
        "interval; the longest gaps are the OS and the disk: a WAL checkpoint syncs the file). The writer shares "
        "the GIL with the agent's loop, so under this load it writes about a quarter of what the loop produces; "
        "an agent that waits on models and tools leaves it the time it needs.",
        "",
        "The drop count is in the run's end record (`recorder.lost.dropped`); `trajdebug runs` and `show` print "
        "it next to the outcome, so a lossy run never reads as plain success.",
        "",
        "### Memory per step",
        "",
        f"{mem['steps']:,} decorated steps with distinct ~200-byte outputs, paced so that nothing drops "
        f"({mem['dropped']} dropped), recorded into a store. The resident set grew "
        f"{mem['first_half_bytes_per_step']:.0f} bytes per step over the first half (identity tracking keeps "
        f"what steps produce, up to `track_budget_bytes`, 32 MiB), and **{mem['second_half_bytes_per_step']:.0f} "
        f"bytes per step** over the second half, once that budget is full: memory stays bounded however long "
        f"the run (peak growth {mem['peak_growth_mib']:.0f} MiB).",
        "",
        "### A locked store",
        "",
        f"Another process held the store's write lock for {lk['hold_s']:.0f} s while the agent recorded five runs "
        f"of 100 steps into it. The longest the agent's thread was blocked in a recorder call (run start, a "
        f"step, run end): **{lk['worst_block_ms']:.1f} ms**; the agent finished "
        f"{'while the lock was held' if lk['agent_done_while_locked'] else 'only after the lock was released'}; "
        f"{lk['steps_on_disk']} of 500 steps were on disk once the lock was gone. (The process's first run, into "
        f"another store, took {lk['first_run_ms']:.0f} ms from start to end: imports and the writer thread's start, "
        "once per process.)",
        "",
    ]
    sd = d.get("seeded")
    if sd:
        lines += [
            "### Agents that seed `random`",
            "",
            f"{sd['processes']} processes each call `random.seed(0)` (as evaluation harnesses do) and record a run of "
            "3 steps into one store and one JSONL file. Ids come from the OS (`os.urandom`), never from the "
            "generator the agent seeds; a run start under an id the store holds already gets a new id, and the "
            "JSONL reader reads a second run record of one id as a separate run.",
            "",
            "| sink | runs found | merged runs | largest run |",
            "|---|---|---|---|",
            f"| store | {sd['store_runs']} | **{sd['store_merged']}** | {sd['store_steps_max']} steps |",
            f"| JSONL | {sd['jsonl_runs']} | **{sd['jsonl_merged']}** | |",
            "",
        ]
    at = d.get("attacks")
    if at:
        lines += _render_attacks(at)
    return lines


def _render_attacks(at: dict[str, Any]) -> list[str]:
    """The rows of issue 24: proxies, damaged files, leaks, a full disk, a locked exit, hostile values, ports."""
    px, fd, le, lk, ho = at["proxies"], at["full_disk"], at["leaks"], at["locked_exit"], at["hostile"]["ms"]
    stall = at["hostile"].get("stall_ms", {})
    lines = [
        "### Under attack",
        "",
        "| attack | measured |",
        "|---|---|",
        f"| a lazy proxy (every attribute raises) as input, output, argument/return, error detail, run metadata; "
        f"an exception whose `__setattr__` raises | {px['written']} of {px['steps']} steps written, run record "
        f"{'kept' if px['run_record'] else '**lost**'} |",
    ]
    for c in at["foreign"]["cases"]:
        lines.append(
            f"| foreign file: {c['case']} | {c['good_lost']} of {c['good']} good spans/steps lost, {c['problems']} "
            f"problem(s) named, {'no exception' if c['escaped'] is None else '**' + c['escaped'] + '**'} |"
        )
    worst = max(le["found"].values()) if le["found"] else 0
    lines.append(
        f"| {le['shapes']} planted secret shapes through {', '.join(le['found'])} | "
        f"{'0 secrets in any output' if worst == 0 else f'**{worst} found**'} |"
    )
    if fd:
        lines.append(
            f"| a full disk (16 MiB tmpfs) from step 21 to step 201 of 300, then freed | store {fd['store'][0]}/300 "
            f"({fd['store'][1]}), JSONL {fd['jsonl'][0]}/300 ({fd['jsonl'][1]}), {fd['lost']} lost |"
        )
    lines.append(
        f"| a process exits while its store is locked | {lk['read_while_locked']} of {lk['steps']} steps read while "
        f"locked (spill file {'written' if lk['spilled'] else '**missing**'}), {lk['after_merge']} after the next writer merged it |"
    )
    for name, ms in ho.items():
        after = f"; then {stall[name]:.1f} ms at most between two of the agent's ticks" if name in stall else ""
        lines.append(f"| hostile value on the agent's thread: {name} | {ms:.1f} ms in its step{after} |")
    lines += [
        f"| fixed ports bound by the tests | {at['fixed_ports']['fixed_ports']} |",
        "",
    ]
    return lines


__all__ = ["kill_trial", "load", "locked", "memory", "attacks", "otel_sigkill", "render_section", "run_reliability", "seeded", "sigkill"]
