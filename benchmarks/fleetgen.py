"""The fleet generator: thousands of recorded runs of the fleet agents, faults and passing runs mixed.

`generate` records runs of the agents in `benchmarks.fleet_agents` with the
recording SDK into a store: each run picks an agent, a task, a version
(``1.0`` for the first half of the period, ``1.1`` after) and, with
probability ``fault_rate``, one of the agent's fault kinds (version 1.1 also
has its regressions, and injects ``truncated-rows`` twice as often); a few
clean runs carry a transient error that a retry recovers.  The recorder's
clock is simulated (`trajdebug.testing.IncrementalClock`), so the runs spread
over 30 days and the plots over time have something to show.

`restamp` copies recorded runs under new run ids and start times, which is
how the 100,000-run store of the speed measurement is filled quickly.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from benchmarks.fleet_agents import AGENTS, Fault, run_agent
from trajdebug.core import model
from trajdebug.core.jsonl import run_to_records
from trajdebug.core.model import Run
from trajdebug.record import MemorySink
from trajdebug.store import Store
from trajdebug.testing import IncrementalClock, deterministic


START_NS = 1_793_491_200_000_000_000
"""2026-11-01 00:00 UTC: the generated fleet's first run."""

DAYS = 30
"""The period the generated runs spread over."""

_DAY_NS = 86_400 * 1_000_000_000


def _choose_fault(agent: Any, version: str, rng: random.Random, fault_rate: float) -> str | None:
    if rng.random() >= fault_rate:
        return None
    kinds = list(agent.faults)
    if version == "1.1":
        kinds += list(agent.new_faults)
        if "truncated-rows" in kinds:
            kinds.append("truncated-rows")
    return rng.choice(kinds)


def record_runs(n: int, *, seed: int = 0, fault_rate: float = 0.45) -> Iterator[Run]:
    """Record ``n`` runs of the fleet agents (see the module docstring), oldest first."""
    rng = random.Random(seed)
    clock = IncrementalClock(start_ns=START_NS, step_ns=3_000_000)
    gap = DAYS * _DAY_NS // max(1, n)
    with deterministic(clock=clock, prefix=f"{seed:08x}"):
        for i in range(n):
            agent = rng.choice(AGENTS)
            version = "1.0" if i < n // 2 else "1.1"
            task = rng.choice(agent.tasks)
            kind = _choose_fault(agent, version, rng, fault_rate)
            fault = Fault(
                kind, random.Random(rng.random()), flaky=kind is None and rng.random() < 0.15, version=version
            )
            sink = MemorySink()
            handle = run_agent(agent, task, fault, sinks=[sink], version=version)
            yield handle.load()
            clock.now = START_NS + (i + 1) * gap + rng.randrange(gap // 2 + 1)


def write_store(runs: Iterable[Run], path: str | Path, *, batch: int = 200) -> int:
    """Write runs into a store, ``batch`` runs per transaction; returns how many."""
    n = 0
    records: list[dict[str, Any]] = []
    with Store(path) as store:
        for run in runs:
            records.extend(run_to_records(run))
            n += 1
            if n % batch == 0:
                store.write_records(records)
                records = []
        if records:
            store.write_records(records)
    return n


def generate(path: str | Path, n: int = 2400, *, seed: int = 0, fault_rate: float = 0.45) -> int:
    """Record ``n`` runs into the store at ``path``; returns how many."""
    return write_store(record_runs(n, seed=seed, fault_rate=fault_rate), path)


def restamp(runs: list[Run], total: int, *, seed: int = 1) -> Iterator[Run]:
    """``total`` copies of ``runs`` (cycled) under new run ids, spread over `DAYS` days."""
    rng = random.Random(seed)
    gap = DAYS * _DAY_NS // max(1, total)
    for i in range(total):
        src = runs[i % len(runs)]
        start = START_NS + i * gap
        shift = start - src.start_ns
        steps = tuple(
            model.replace(
                s, start_ns=s.start_ns + shift, end_ns=None if s.end_ns is None else s.end_ns + shift
            )
            for s in src.steps
        )
        yield model.replace(
            src,
            run_id=f"{rng.getrandbits(128):032x}",
            start_ns=start,
            end_ns=None if src.end_ns is None else src.end_ns + shift,
            steps=steps,
        )


__all__ = ["DAYS", "START_NS", "generate", "main", "record_runs", "restamp", "write_store"]


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.fleetgen STORE N``: record N runs into STORE, one transaction per run.

    ``--delay`` sleeps between runs, to play a production agent writing while
    something else (``trajdebug watch``) reads the store.
    """
    import argparse
    import time

    p = argparse.ArgumentParser(prog="python -m benchmarks.fleetgen", description=main.__doc__)
    p.add_argument("store")
    p.add_argument("n", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--delay", type=float, default=0.0, help="seconds between runs")
    a = p.parse_args(argv)
    with Store(a.store) as store:
        for run in record_runs(a.n, seed=a.seed):
            store.save_run(run)
            if a.delay:
                time.sleep(a.delay)
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
