"""``import trajdebug`` against ``python -c pass`` (issue 27 item 6): wall and CPU, ratios of medians.

``python -m benchmarks.startup [--runs 21] [--before REF]``

Each command runs ``--runs`` times in a fresh process, the commands interleaved (pass, import,
import at ``REF``, pass, ...), with bytecode cached (one unmeasured run of each first, with
``PYTHONDONTWRITEBYTECODE`` unset); the medians of wall and CPU time (user + system of the child)
and their ratios to ``python -c pass`` are printed as JSON.  ``--before REF`` also measures the
checkout at git ``REF`` (its ``src`` exported to a temporary directory) in the same rounds.

``first step recorded`` is a whole agent's start, so that a cost deferred from the import shows
where it went: import, decorate a function at import time, open ``trajdebug.run(path=...)`` (a
JSONL file), call the function once, leave the run (its records written) and exit.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


ROOT = Path(__file__).resolve().parent.parent


def _env(src: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TRAJDEBUG", None)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(src), env.get("PYTHONPATH", "")) if p)
    return env


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, env=env, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


FIRST_STEP = """\
import trajdebug

@trajdebug.step(kind="tool")
def search(query):
    return {"hits": [query]}

with trajdebug.run("startup", path=%r):
    search("q")
"""
"""An agent's start up to its first step written (``%r``: the JSONL file)."""


def measure(runs: int = 21, before: Path | None = None, out_dir: Path | None = None) -> dict[str, Any]:
    """Median wall and CPU milliseconds of each command, and the ratios to ``python -c pass``
    (``out_dir``: where the first-step runs write; a temporary directory when None)."""
    with tempfile.TemporaryDirectory(prefix="trajdebug-startup-") as tmp:
        return _measure(runs, before, Path(out_dir or tmp))


def _measure(runs: int, before: Path | None, out_dir: Path) -> dict[str, Any]:
    first = FIRST_STEP % str(out_dir / "first.jsonl")
    cases = {
        "python -c pass": ([sys.executable, "-c", "pass"], _env(None)),
        "import trajdebug": ([sys.executable, "-c", "import trajdebug"], _env(None)),
        "first step recorded": ([sys.executable, "-c", first], _env(None)),
    }
    if before is not None:
        cases["import trajdebug (before)"] = ([sys.executable, "-c", "import trajdebug"], _env(before))
        cases["first step recorded (before)"] = ([sys.executable, "-c", first], _env(before))
    for cmd, env in cases.values():
        _timed(cmd, env)  # writes the bytecode
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in cases}
    for _ in range(runs):
        for name, (cmd, env) in cases.items():
            times[name].append(_timed(cmd, env))
    out: dict[str, Any] = {}
    for name, ts in times.items():
        out[name] = {
            "wall_ms": statistics.median(t[0] for t in ts) * 1e3,
            "cpu_ms": statistics.median(t[1] for t in ts) * 1e3,
        }
    base = out["python -c pass"]
    for row in out.values():
        row["wall_ratio"] = row["wall_ms"] / base["wall_ms"]
        row["cpu_ratio"] = row["cpu_ms"] / base["cpu_ms"]
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--runs", type=int, default=21)
    p.add_argument("--before", help="git ref also measured in the same rounds")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="trajdebug-ref-") as tmp:
        src = None
        if a.before:
            archive = subprocess.run(
                ["git", "archive", a.before, "src"], cwd=ROOT, capture_output=True, check=True
            )
            subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
            src = Path(tmp) / "src"
        print(json.dumps(measure(a.runs, src), indent=1))


if __name__ == "__main__":
    main()


__all__ = ["measure"]
