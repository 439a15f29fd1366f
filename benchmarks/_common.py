"""What several benchmark sections share: the machine they ran on, and clean recorded runs.

Kept apart from the sections (and from `benchmarks.report`, which renders them) so
that no section imports another one, or the report, for a helper.
"""

from __future__ import annotations

import os
import platform
import sys
from datetime import UTC, datetime
from typing import Any


def machine() -> dict[str, Any]:
    """The machine and software the numbers come from."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal"):
                    mem = round(int(line.split()[1]) / 1024 / 1024, 1)
                    break
    except OSError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    pkgs = {}
    for p in ("trajdebug", "opentelemetry-sdk", "orjson"):
        try:
            pkgs[p] = version(p)
        except PackageNotFoundError:
            pkgs[p] = "not installed"
    import sqlite3

    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem,
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "sqlite": sqlite3.sqlite_version,
        "packages": pkgs,
    }


def recorded_runs(count: int) -> list[Any]:
    """``count`` clean runs of the benchmark workflows, in turn (with earlier conversation turns)."""
    from benchmarks.faults import Case
    from benchmarks.workflows import WORKFLOWS

    names = list(WORKFLOWS)
    runs = []
    for i in range(count):
        res = WORKFLOWS[names[i % len(names)]].run(Case(names[i % len(names)], None, 1000 + i))
        runs.extend([*res.previous, res.run])
    return runs


def strip_own(obj: Any) -> Any:
    """Drop trajdebug's own attributes from an OTLP document (it then reads as a foreign trace)."""
    if isinstance(obj, dict):
        if "key" in obj and str(obj.get("key", "")).startswith("trajdebug."):
            return None
        return {k: strip_own(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [x for x in (strip_own(v) for v in obj) if x is not None]
    return obj


__all__ = ["machine", "recorded_runs", "strip_own"]


def run_scratch(cmd: list[str], cwd: Any, env: dict[str, str], timeout: float = 900) -> Any:
    """Run a measurement child with its own scratch folder (its ``TMPDIR``), removed when it exits.

    The children write hundreds of megabytes of runs into ``tempfile`` folders and exit without
    removing them (their recorders flush at exit, after any cleanup of their own could run); the
    parent removes the whole scratch folder once the child is gone.
    """
    import shutil
    import subprocess
    import tempfile

    scratch = tempfile.mkdtemp(prefix="trajdebug-bench-")
    try:
        return subprocess.run(
            cmd, cwd=cwd, env={**env, "TMPDIR": scratch}, capture_output=True, text=True, timeout=timeout, check=False
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
