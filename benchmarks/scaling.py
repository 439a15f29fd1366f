"""Speed where users pay for it (issue 14): analysis end to end, ``show``, ``import``, CLI start-up.

Every measurement runs in a fresh subprocess (``python -m benchmarks.scaling --child ...``), so no
memo or import of one size warms the next, and reports wall time and the process's CPU time (on a
shared machine CPU time is the steadier of the two).

- **Analysis**: the realistic recorded run of `benchmarks.agentrun` (a tool-heavy agent, about 6
  steps per ticket, recorded with the SDK) at several sizes, written to trajdebug JSONL; then
  ``load_runs`` (load) and `trajdebug.analyze_source` (total), with the time of each stage taken by
  wrapping the stage functions the pipeline calls: content inference (`infer_dependencies`,
  structural edges, thinning), lineage (value lineage and value edges), and localization (detection,
  named edges, graph, error lifecycle, diagnosers, ranking: the rest).  The growth exponent of a stage
  is the least-squares slope of log(time) on log(steps); 1 is linear.  Memory: the peak of what the
  analysis allocates beyond the loaded run (tracemalloc), per step, in a process of its own.
- **show**: ``trajdebug show FILE`` of the 10,000-step run (and with ``--all``).
- **import**: an OTLP/JSON Lines file of foreign spans (trajdebug's export of recorded workflow
  runs, stripped of its own attributes, one trace per line) generated at the sizes asked for;
  ``orjson.loads`` of every line (the parse floor), reading the runs (`iter_otlp`), and
  ``trajdebug import FILE -o out.jsonl`` with its peak resident set.
- **start-up**: ``trajdebug --help`` and ``import trajdebug``, best of 15.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parent.parent
STAGES = ("load", "inference", "lineage", "localize", "total")
"""The stages of an analysis, as the table shows them (``localize`` is the rest of the total)."""


def _python() -> list[str]:
    return [sys.executable]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("TRAJDEBUG", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _child(*args: str) -> dict[str, Any]:
    cmd = [*_python(), "-m", "benchmarks.scaling", "--child", *args]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=3600, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"scaling child {args} failed: {proc.stderr.strip()[-2000:]}")
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _timed(cmd: Sequence[str]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak resident KB of a command run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, after.ru_maxrss


def exponent(sizes: Sequence[float], times: Sequence[float]) -> float:
    """The least-squares slope of log(time) on log(size): 1 for linear growth, 2 for quadratic."""
    pts = [(math.log(n), math.log(t)) for n, t in zip(sizes, times) if n > 0 and t > 0]
    if len(pts) < 2:
        return math.nan
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else math.nan


# -- children ---------------------------------------------------------------------------


def _floor(path: Path) -> tuple[float, float]:
    """The plain load-and-traverse floor: ``orjson.loads`` of every line, then one backward BFS over the
    recorded dependencies (and parents) from the last step (wall and CPU seconds)."""
    import collections

    import orjson

    w, c = time.perf_counter(), time.process_time()
    deps: dict[str, list[str]] = {}
    last = None
    with open(path, "rb") as fh:
        for line in fh:
            rec = orjson.loads(line)
            sid = rec.get("step_id") if isinstance(rec, dict) else None
            if sid is None:
                continue
            ds = [d.get("step_id") for d in rec.get("deps") or () if isinstance(d, dict)]
            deps[sid] = [d for d in (*ds, rec.get("parent_id")) if d]
            last = sid
    seen = {last}
    todo = collections.deque([last])
    while todo:
        for d in deps.get(todo.popleft(), ()):  # type: ignore[arg-type]
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return time.perf_counter() - w, time.process_time() - c


def _analysis_child(n: int, shape: str = "agentrun") -> dict[str, Any]:
    from benchmarks.agentrun import record
    from benchmarks.agentshapes import record_shape
    from trajdebug.analysis import _pipeline
    from trajdebug.api import _load, analyze_source
    from trajdebug.core.jsonl import write_jsonl

    spent: dict[str, list[float]] = {}

    def run_stages(state: Any, stages: Any) -> Any:
        # Each named stage timed (`trajdebug.analysis._pipeline.STAGES`), in the order the analysis runs them.
        for stage in stages:
            w, c = time.perf_counter(), time.process_time()
            state = stage(state)
            acc = spent.setdefault(stage.__name__, [0.0, 0.0])
            acc[0] += time.perf_counter() - w
            acc[1] += time.process_time() - c
        return state

    _pipeline.run_stages = run_stages  # type: ignore[assignment]
    with tempfile.TemporaryDirectory(prefix="trajdebug-bench-") as tmp:
        path = Path(tmp) / "run.jsonl"
        write_jsonl([record(n) if shape == "agentrun" else record_shape(shape, n)], path)
        size = path.stat().st_size
        floor = _floor(path)
        w, c = time.perf_counter(), time.process_time()
        runs = _load(path, None)  # as analyze_source loads a source (collector paused)
        load = (time.perf_counter() - w, time.process_time() - c)
    steps = len(runs[0].steps)
    w, c = time.perf_counter(), time.process_time()
    res = analyze_source(str(path), runs=runs)
    total = (time.perf_counter() - w, time.process_time() - c)
    # The table's columns: edge inference, value lineage, and the rest of the analysis (localize).
    inf, lin = spent.get("infer_edges", [0.0, 0.0]), spent.get("trace_values", [0.0, 0.0])
    return {
        "shape": shape,
        "size": n,
        "steps": steps,
        "file_bytes": size,
        "floor": {"wall": floor[0], "cpu": floor[1]},
        "wall": {
            "load": load[0],
            "inference": inf[0],
            "lineage": lin[0],
            "localize": total[0] - inf[0] - lin[0],
            "total": total[0],
        },
        "cpu": {
            "load": load[1],
            "inference": inf[1],
            "lineage": lin[1],
            "localize": total[1] - inf[1] - lin[1],
            "total": total[1],
        },
        "top": res.analyses[0].root_causes[0].step_id if res.analyses[0].root_causes else None,
        "stages_cpu": {k: v[1] for k, v in spent.items()},
    }


def _memory_child(n: int) -> dict[str, Any]:
    """Peak memory the analysis allocates beyond the loaded run (tracemalloc; a process of its own, memos cold)."""
    import gc
    import tracemalloc

    from benchmarks.agentrun import record
    from trajdebug.api import analyze_source
    from trajdebug.core.jsonl import write_jsonl
    from trajdebug.sources.load import load_runs

    with tempfile.TemporaryDirectory(prefix="trajdebug-bench-") as tmp:
        path = Path(tmp) / "run.jsonl"
        write_jsonl([record(n)], path)
        size = path.stat().st_size
        gc.collect()
        tracemalloc.start()
        runs = load_runs(path)
        loaded = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        analyze_source(str(path), runs=runs)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    steps = len(runs[0].steps)
    return {"size": n, "steps": steps, "file_bytes": size, "run_bytes": loaded, "peak_bytes": peak - loaded}


def _write_show_file(n: int, path: str) -> dict[str, Any]:
    from benchmarks.agentrun import record
    from trajdebug.core.jsonl import write_jsonl

    run = record(n)
    write_jsonl([run], path)
    return {"steps": len(run.steps)}


def _otlp_file(mb: float, path: str) -> dict[str, Any]:
    """Write an OTLP/JSON Lines file of about ``mb`` MB: foreign spans, one trace per line."""
    from benchmarks._common import recorded_runs, strip_own
    from trajdebug.core.codec import dumps
    from trajdebug.sources.formats.export import export_otlp

    lines = [dumps(strip_own(export_otlp([r]))) for r in recorded_runs(12)]
    ids = [json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"].encode() for line in lines]
    size, traces = 0, 0
    with open(path, "wb") as fh:
        while size < mb * 1e6:
            k = traces % len(lines)
            line = lines[k].replace(ids[k], f"{traces + 1:032x}".encode()) + b"\n"
            fh.write(line)
            size += len(line)
            traces += 1
    return {"bytes": size, "traces": traces}


def _parse_child(path: str) -> dict[str, Any]:
    """orjson.loads of every line (GC on, as a program runs it), then reading the runs."""
    import orjson

    from trajdebug.core.jsonl import FormatError
    from trajdebug.sources.formats.otlp import iter_otlp

    w, c = time.perf_counter(), time.process_time()
    with open(path, "rb") as fh:
        for line in fh:
            orjson.loads(line)
    parse = (time.perf_counter() - w, time.process_time() - c)
    problems: list[FormatError] = []
    w, c = time.perf_counter(), time.process_time()
    steps = sum(len(r.steps) for r in iter_otlp(path, problems))
    read = (time.perf_counter() - w, time.process_time() - c)
    return {"parse": parse, "read": read, "steps": steps, "problems": len(problems)}


CHILDREN: dict[str, Callable[..., dict[str, Any]]] = {
    "analysis": lambda n, shape="agentrun": _analysis_child(int(n), shape),
    "memory": lambda n: _memory_child(int(n)),
    "show-file": lambda n, path: _write_show_file(int(n), path),
    "otlp-file": lambda mb, path: _otlp_file(float(mb), path),
    "parse": _parse_child,
}


# -- the section --------------------------------------------------------------------------


def analysis_growth(sizes: Sequence[int], memory_sizes: Sequence[int] = ()) -> dict[str, Any]:
    """End-to-end analysis of the recorded agent run at each size, each stage's growth exponent, and the
    memory the analysis allocates at ``memory_sizes`` (traced allocations slow it: measured apart)."""
    rows = [_child("analysis", str(n)) for n in sizes]
    steps = [r["steps"] for r in rows]
    return {
        "rows": rows,
        "memory": [_child("memory", str(n)) for n in memory_sizes],
        "exponents": {
            clock: {st: exponent(steps, [r[clock][st] for r in rows]) for st in STAGES} for clock in ("wall", "cpu")
        },
    }


def show_cost(n: int) -> dict[str, Any]:
    """``trajdebug show`` of an ``n``-size recorded run: by default (capped) and with ``--all``."""
    exe = [*_python(), "-m", "trajdebug"]
    with tempfile.TemporaryDirectory(prefix="trajdebug-bench-") as tmp:
        path = str(Path(tmp) / "run.jsonl")
        steps = _child("show-file", str(n), path)["steps"]
        rows = []
        for args in ([], ["--all"]):
            best = min((_timed([*exe, "show", path, *args]) for _ in range(3)), key=lambda t: t[1])
            rows.append({"args": " ".join(["show", "FILE", *args]), "wall": best[0], "cpu": best[1]})
    return {"steps": steps, "rows": rows}


def import_cost(sizes_mb: Sequence[float]) -> list[dict[str, Any]]:
    """OTLP import of generated JSON Lines files: parse floor, reading, and the whole command's memory."""
    out = []
    for mb in sizes_mb:
        with tempfile.TemporaryDirectory(prefix="trajdebug-bench-") as tmp:
            path = str(Path(tmp) / "spans.jsonl")
            made = _child("otlp-file", str(mb), path)
            parsed = _child("parse", path)
            cmd = [*_python(), "-m", "trajdebug", "import", path, "--from", "otlp", "-o", str(Path(tmp) / "out.jsonl")]
            probe = [*_python(), "-c", "import resource,subprocess,sys; subprocess.run(sys.argv[1:], check=True, "
                     "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                     "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)", *cmd]  # fmt: skip
            t0 = time.perf_counter()
            peak_kb = int(subprocess.run(probe, cwd=ROOT, env=_env(), capture_output=True, text=True, check=True).stdout)
            wall = time.perf_counter() - t0
            out.append(
                {
                    "mb": made["bytes"] / 1e6,
                    "traces": made["traces"],
                    "steps": parsed["steps"],
                    "parse_s": parsed["parse"][0],
                    "read_s": parsed["read"][0],
                    "read_cpu_s": parsed["read"][1],
                    "import_s": wall,
                    "import_peak_mb": peak_kb / 1024,
                }
            )
    return out


def startup() -> list[dict[str, Any]]:
    """CPU and wall time of starting the command line and of importing the package (best of 15)."""
    rows = []
    for label, cmd in (
        ("python -c pass", [*_python(), "-c", "pass"]),
        ("import trajdebug", [*_python(), "-c", "import trajdebug"]),
        ("trajdebug --help", [*_python(), "-m", "trajdebug", "--help"]),
    ):
        runs = [_timed(cmd) for _ in range(15)]
        rows.append({"what": label, "wall": min(r[0] for r in runs), "cpu": min(r[1] for r in runs)})
    return rows


def run_scaling(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """The issue-14 measurements (``quick``: fewer sizes and a smaller import file)."""
    say = progress or (lambda s: None)
    sizes = (1_000, 3_000, 10_000) if quick else (1_000, 3_000, 10_000, 30_000, 100_000)
    say(f"speed: analysis end to end at {', '.join(f'{n:,}' for n in sizes)}")
    res: dict[str, Any] = {"analysis": analysis_growth(sizes, sizes[:3])}
    say("speed: show")
    res["show"] = show_cost(15_000)
    say("speed: import")
    res["import"] = import_cost((70, 140) if quick else (100, 1000))
    say("speed: start-up")
    res["startup"] = startup()
    return res


def _main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description="One scaling measurement, in its own process.")
    p.add_argument("--child", nargs="+", required=True)
    a = p.parse_args(argv)
    name, *args = a.child
    print(json.dumps(CHILDREN[name](*args)))


if __name__ == "__main__":
    _main()


__all__ = ["STAGES", "analysis_growth", "exponent", "import_cost", "run_scaling", "show_cost", "startup"]
