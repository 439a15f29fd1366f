"""The run's environment: a snapshot at start, and ``env`` edges for steps that read it.

An agent's behaviour depends on more than its inputs: the clock, random seeds,
model names, configuration in environment variables, package versions.  The
snapshot goes into the run's metadata; the first time a step declares that it
read part of the environment (`uses_env`), the run gets an ``environment``
step (kind ``input``) carrying the snapshot, and the step gets an ``env``
dependency on it, so the root-cause search can blame an environment change.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import platform
import sys
import time
from typing import TYPE_CHECKING, Any

from trajdebug.core.model import Dependency
from trajdebug.record import recorder as rec
from trajdebug.record import steps as _steps
from trajdebug.record.config import CONFIG


if TYPE_CHECKING:
    from trajdebug.record.runs import RunHandle


@functools.lru_cache(maxsize=8)
def _package_versions(names: tuple[str, ...]) -> dict[str, str]:
    # Read once per process: installed versions do not change under a running agent, and
    # reading package metadata is file-system work the agent's thread should not repeat.
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for n in names:
        try:
            out[n] = version(n)
        except PackageNotFoundError:
            continue
    return out


@functools.lru_cache(maxsize=1)
def _platform() -> str:
    # platform.platform() reads the interpreter's binary to find the C library: once per process.
    return platform.platform()


def environment_snapshot(metadata: dict[str, Any] | None = None, *, time_ns: int | None = None) -> dict[str, Any]:
    """Time, Python, platform, package versions, allowed environment variables, and the
    model names and seeds found in the run's metadata.

    The recorder takes it on the writer thread when it writes the run's first
    record (the parts that read files are read once per process).
    """
    md = metadata or {}
    env_vars = {
        k: v for k, v in os.environ.items() if any(fnmatch.fnmatchcase(k, pat) for pat in CONFIG.env_allow)
    }
    snap: dict[str, Any] = {
        "time_ns": time.time_ns() if time_ns is None else time_ns,
        "python": sys.version.split()[0],
        "platform": _platform(),
        "packages": dict(_package_versions(tuple(CONFIG.packages))),
        "env": env_vars,
    }
    for key in ("model", "models", "seed", "seeds", "config"):
        if key in md:
            snap[key] = md[key]
    return snap


def record_environment_step(run: RunHandle) -> str:
    """Create the run's ``environment`` step and return its id."""
    h = _steps.StepHandle("environment", "input")
    h._run = run
    h.seq = _steps._next_seq()
    h.t0 = run.start_ns
    h.t1 = run.start_ns
    env = run.metadata.get("env")
    if env is None:  # asked for before the writer took the snapshot
        env = run.metadata.setdefault("env", environment_snapshot(run.metadata, time_ns=run.start_ns))
    h._out = _steps._snap(env)  # the recorded JSON only: the live snapshot is nobody's output to track
    if run._led is not None:
        run._led[0] += 1  # a finished step like any other, for the run's ledger (trajdebug.record.ledger)
    run._push(h)
    return h.id


def uses_env(key: str, value: Any = None) -> None:
    """Declare that the current step read part of the environment (``"clock"``,
    ``"random"``, ``"config:timeout"``, ``"file:/etc/app.yaml"``), optionally with the value read.

    The step gets an ``env`` dependency on the run's environment step.
    """
    h = rec.current_step()
    run = rec.current_run()
    if h is None or run is None:
        return
    try:
        env_id = run.env_step_id()
        if env_id is None:
            return
        h.deps = (*h.deps, Dependency(step_id=env_id, kind="env", origin="declared", key=key))
        reads = h.attrs.get("env_reads") if h.attrs else None
        if reads is None:
            reads = {}
            h.set("env_reads", reads)
        reads[key] = value
    except Exception:  # noqa: BLE001
        run._internal_error("uses_env")
