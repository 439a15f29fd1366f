"""What ``trajdebug report`` costs beyond ``trajdebug analyze`` (issue 27 item 3: ≤ 1.2× on the same run).

``python -m benchmarks.report_cost [--steps 10001] [--shape state] [--rounds 5] [--before REF]``

Records one run of an agent shape (`benchmarks.agentshapes.record_shape`) to a JSONL file, then runs
``trajdebug analyze FILE --json`` and ``trajdebug report FILE -o x.html`` ``--rounds`` times each, every
command in a fresh process, interleaved (analyze, report, analyze at ``REF``, report at ``REF``, ...),
bytecode cached (one unmeasured run of each first).  Prints the median CPU (user + system of the child)
and wall seconds of each, and the report's ratio to the analysis of the same checkout (ratio of the
medians, and median of each round's ratio), as JSON.
``--before REF`` also measures the checkout at git ``REF`` (its ``src`` exported to a temporary
directory) in the same rounds.  ``--render N`` also times the report's own work with less noise: in one
fresh process per checkout, the run analyzed once, then ``write_report`` N times (CPU seconds each).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.startup import ROOT, _env


def record(path: Path, steps: int, shape: str) -> int:
    """Write one recorded run of ``shape`` with about ``steps`` steps to ``path``; its step count."""
    from benchmarks.agentshapes import record_shape
    from trajdebug.core.jsonl import write_jsonl

    run = record_shape(shape, steps)
    write_jsonl([run], path)
    return len(run.steps)


def measure(source: Path, out: Path, rounds: int = 5, before: Path | None = None) -> dict[str, Any]:
    """Median CPU and wall seconds of ``analyze --json`` and ``report -o`` (and at ``before``), and ratios."""
    cli = [sys.executable, "-m", "trajdebug"]
    commands = {"analyze": [*cli, "analyze", str(source), "--json"], "report": [*cli, "report", str(source), "-o", str(out)]}
    cases: dict[str, tuple[list[str], dict[str, str]]] = {}
    for label, src in (("", None), (" (before)", before)):
        if label and src is None:
            continue
        for name, cmd in commands.items():
            cases[name + label] = (cmd, _env(src))
    for cmd, env in cases.values():
        _quiet(cmd, env)  # writes the bytecode
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for _ in range(rounds):
        for name, (cmd, env) in cases.items():
            times[name].append(_quiet(cmd, env))
    res: dict[str, Any] = {}
    for name, ts in times.items():
        res[name] = {
            "cpu_s": round(statistics.median(t[1] for t in ts), 3),
            "wall_s": round(statistics.median(t[0] for t in ts), 3),
            "cpu_each": [round(t[1], 2) for t in ts],
        }
    for label in ("", " (before)"):
        if "report" + label in res:
            res["report / analyze" + label] = round(res["report" + label]["cpu_s"] / res["analyze" + label]["cpu_s"], 3)
            # The two ran back to back in each round: the median of the rounds' ratios drifts less with the load.
            pairs = zip(times["report" + label], times["analyze" + label], strict=True)
            res["report / analyze, paired" + label] = round(statistics.median(r[1] / a[1] for r, a in pairs), 3)
    return res


def render_cpu(source: Path, out: Path, times: int) -> list[float]:
    """CPU seconds of each of ``times`` ``write_report`` calls on one analysis of ``source`` (this process)."""
    from trajdebug.api import analyze_source
    from trajdebug.report.html import write_report

    analysis = analyze_source(str(source)).analyses[0]
    spent = []
    for _ in range(times):
        c = time.process_time()
        write_report(out, analysis)
        spent.append(round(time.process_time() - c, 3))
    return spent


def _render(source: Path, out: Path, times: int, src: Path | None) -> list[float]:
    cmd = [sys.executable, "-m", "benchmarks.report_cost", "--child-render", str(source), str(out), str(times)]
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(src), capture_output=True, text=True, check=True)
    spent: list[float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return spent


def _quiet(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one command, its output discarded (it would mix with the JSON printed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--steps", type=int, default=10_001)
    p.add_argument("--shape", default="state", choices=("state", "tools", "subagents"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--before", help="git ref also measured in the same rounds")
    p.add_argument("--source", type=Path, help="an existing run's JSONL file (default: record one)")
    p.add_argument("--render", type=int, default=0, help="also time write_report N times in one process")
    p.add_argument("--child-render", nargs=3, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child_render:
        print(json.dumps(render_cpu(Path(a.child_render[0]), Path(a.child_render[1]), int(a.child_render[2]))))
        return
    with tempfile.TemporaryDirectory(prefix="trajdebug-report-cost-") as tmp:
        source = a.source or Path(tmp) / "run.jsonl"
        steps = record(source, a.steps, a.shape) if a.source is None else None
        src = None
        if a.before:
            archive = subprocess.run(["git", "archive", a.before, "src"], cwd=ROOT, capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            src = Path(tmp) / "src"
        res = measure(source, Path(tmp) / "report.html", a.rounds, src) if a.rounds else {}
        for label, where in (("", None), (" (before)", src)):
            if a.render and (where is not None or not label):
                each = _render(source, Path(tmp) / "render.html", a.render, where)
                res["write_report" + label] = {"cpu_s": statistics.median(each), "cpu_each": each}
        print(json.dumps({"steps": steps, "shape": a.shape, "rounds": a.rounds, **res}, indent=1))


if __name__ == "__main__":
    main()


__all__ = ["measure", "record", "render_cpu"]
