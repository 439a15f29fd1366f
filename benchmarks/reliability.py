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


def _on_disk(target: Path) -> set[str]:
    from trajdebug.format import read_jsonl
    from trajdebug.store import Store

    if target.suffix == ".jsonl":
        runs = read_jsonl(target).runs
    else:
        with Store(target, readonly=True) as st:
            runs = st.read().runs
    return {s.step_id for r in runs for s in r.steps if s.name == "work"}


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
    disk = _on_disk(target)
    missing = [(sid, t) for sid, t in printed if sid not in disk]
    return {
        "printed": len(printed),
        "missing": len(missing),
        "window_s": killed - min(t for _, t in missing) if missing else 0.0,
        "missing_older_than_interval": sum(1 for _, t in missing if t < killed - CONFIG.flush_interval),
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
    from trajdebug.format import read_jsonl
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
        "load": load(100_000 if quick else 1_000_000, say),
        "memory": memory(100_000 if quick else 400_000, say),
        "locked": locked(2.0, say),
        "seeded": seeded(50, say),
    }
    data["seconds"] = time.perf_counter() - t0
    return data


def render_section(d: dict[str, Any]) -> list[str]:
    """The reliability section of docs/benchmarks.md."""
    ld, mem, lk = d["load"], d["memory"], d["locked"]
    lines = [
        "## 8. Reliability: what a crash loses, what load costs",
        "",
        f"Run {d['date']}{' (quick)' if d.get('quick') else ''} with `python -m benchmarks --only reliability` "
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
        "| sink | steps | kills | printed | missing | kills with a loss | median window | max window | older than the interval |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in d["sigkill"]:
        lines.append(
            f"| {r['sink']} | {r['pace']} | {r['trials']} | {r['printed']:,} | {r['missing']:,} | {r['trials_with_loss']} "
            f"| {r['median_window_s'] * 1000:.0f} ms | {r['max_window_s'] * 1000:.0f} ms | {r['missing_older_than_interval']:,} |"
        )
    lines += [
        "",
        "Paced like an agent waiting on tools, everything older than the flush interval survives. In a tight loop "
        "the agent produces steps faster than the writer thread encodes them (on one GIL), the queue fills up to "
        "`max_buffer`, and what waits there is what a kill loses: the window is the queue's backlog, not the flush "
        "interval. `trajdebug.configure(backpressure=\"block\")` bounds that backlog by making the agent wait.",
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
    return lines


__all__ = ["kill_trial", "load", "locked", "memory", "render_section", "run_reliability", "seeded", "sigkill"]
