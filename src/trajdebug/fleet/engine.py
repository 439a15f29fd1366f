"""The fleet job: analyze every failed run of many sources, group the failures, rank the spectrum.

Sources are split into *units* of a few dozen runs (`units`): run ids of a
store, one part of a Parquet dataset, or runs already read from a file.  Each
unit is processed on its own (`process_unit`: load, analyze each failed run,
count every run's features) and returns a small `UnitResult`; results fold
into one `GroupTable` and one `Spectrum` in any order.  The same function runs
in a local process pool (`run_fleet`) and on a Dask cluster
(`trajdebug.fleet.distributed`), which is why both give the same groups.

Memory stays bounded for any number of stored runs: the parent holds run ids
of one store at a time and a few units in flight; workers load their runs
themselves; aggregates grow with groups and features, not runs.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajdebug.core.model import Run
from trajdebug.fleet.groups import Finding, GroupTable, finding_of, verification_index
from trajdebug.fleet.spectrum import Spectrum, Suspect, run_features
from trajdebug.fleet.units import (
    UNIT_SIZE,
    Unit,
    _load,
    _skip,
    close_stores,
    expand,
    reference_pool,
    units,
)
from trajdebug.sessions import session_of
from trajdebug.usage import run_usage


log = logging.getLogger("trajdebug")


@dataclass(slots=True)
class UnitResult:
    """What one unit gives back: findings of its failed runs and the spectrum of all its runs."""

    findings: list[Finding] = field(default_factory=list)
    """One per failed run analyzed."""
    spectrum: Spectrum = field(default_factory=Spectrum)
    """Feature counts of every run."""
    runs: int = 0
    """Runs read."""
    problems: list[str] = field(default_factory=list)
    """Runs that could not be analyzed, one line each."""
    cost: float = 0.0
    """What every run's LLM calls cost (US dollars)."""
    tokens: int = 0
    """Tokens of every run's LLM calls."""
    sessions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per session: runs and failed runs."""


@dataclass(slots=True)
class FleetReport:
    """The result of a fleet job."""

    groups: GroupTable
    """The failure groups."""
    spectrum: Spectrum
    """The feature counts (rank them with `suspects`)."""
    sources: list[str]
    """What was read."""
    runs: int = 0
    """Runs read (replays and reference runs excluded)."""
    problems: list[str] = field(default_factory=list)
    """Runs or sources that could not be read or analyzed (first 100)."""
    seconds: float = 0.0
    """Wall time."""
    workers: int = 1
    """Processes (or cluster workers) used."""
    findings: list[Finding] | None = None
    """Every finding, when asked for (``keep_findings``)."""
    cost: float = 0.0
    """What every run's LLM calls cost (US dollars; `trajdebug.usage`)."""
    tokens: int = 0
    """Tokens of every run's LLM calls."""
    sessions: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Per session (`trajdebug.sessions`): runs and failed runs."""

    def session_counts(self) -> dict[str, int]:
        """Sessions in all, and those with a failed run."""
        return {"sessions": len(self.sessions), "failed": sum(1 for _, f in self.sessions.values() if f)}

    def suspects(self, top: int = 5) -> list[Suspect]:
        """The spectrum ranking (see `trajdebug.fleet.spectrum`)."""
        return self.spectrum.rank(top=top)

    def to_dict(self, *, top: int = 5) -> dict[str, Any]:
        """As JSON data (the ``trajdebug fleet --json`` document, described in docs/fleet.md)."""
        return {
            "sources": self.sources,
            "runs": self.runs,
            "failed": self.groups.failed,
            "groups": [g.to_dict() for g in self.groups.ranked()],
            "spectrum": [s.to_dict() for s in self.suspects(top)],
            "problems": self.problems,
            "seconds": round(self.seconds, 3),
            "workers": self.workers,
            "cost": round(self.cost, 6),
            "failed_cost": round(sum(g.cost for g in self.groups.groups.values()), 6),
            "tokens": self.tokens,
            "sessions": self.session_counts(),
        }


def _lookup(md: Mapping[str, Any], dotted: str) -> Any:
    cur: Any = md
    for part in dotted.split("."):
        if not isinstance(cur, Mapping):
            return None
        cur = cur.get(part)
    return cur


def analyze_run(run: Run, *, root_from: str | None = None, references: Sequence[Run] = ()) -> Finding:
    """Analyze one failed run and return its finding.

    Args:
        run: The run.
        root_from: Group on the step named by this run-metadata path instead of the
            analysis's first candidate (``fault.step_id``: the benchmarks' injected step).
        references: Passing runs of the same agent (`trajdebug.analysis.references`).
    """
    from trajdebug.analysis import analyze

    # The hand ranking: a group is keyed on the first candidate, and the hand ranker's is the same for runs of
    # one fault; the learned re-ranking moves some of them to a near-tied neighbour and splits the group.
    analysis = analyze(run, top=3, references=references, model=None)
    root = None
    if root_from is not None:
        value = _lookup(run.metadata, root_from)
        root = str(value) if value else None
    return finding_of(analysis, root=root)


def process_unit(
    unit: Unit, root_from: str | None = None, references: Mapping[str, Sequence[Run]] | None = None
) -> UnitResult:
    """Load a unit's runs, analyze each failed one, count every run's features.

    Args:
        unit: The unit.
        root_from: Group on the step named by this metadata path (see `analyze_run`).
        references: Per agent (run name), the passing runs its failures are compared
            with (`reference_pool`: the same whatever the units, so every engine
            gives the same groups).

    A run that cannot be loaded or analyzed is named in ``problems``; the rest go on.
    """
    from trajdebug.analysis import GraphError

    out = UnitResult()
    loaded: list[Run] = []
    runs = _load(unit)
    while True:
        try:
            loaded.append(next(runs))
        except StopIteration:
            break
        except Exception as exc:  # noqa: BLE001 - one unreadable run must not stop the fleet
            out.problems.append(f"{unit.path}: {exc}")
            break
    from trajdebug.analysis import same_agent

    pool = references or {}
    for run in loaded:
        if _skip(run.metadata):
            continue
        out.runs += 1
        failed = run.outcome == "failure"
        usage = run_usage(run)
        out.cost += usage.cost or 0.0
        out.tokens += usage.total_tokens or 0
        sid = session_of(run)
        if sid is not None:
            n, f = out.sessions.get(sid, (0, 0))
            out.sessions[sid] = (n + 1, f + failed)
        out.spectrum.add(run.name, run.metadata.get("task"), failed, run_features(run))
        if not failed:
            continue
        try:
            refs = [r for r in pool.get(run.name, ()) if r.run_id != run.run_id and same_agent(r, run)]
            out.findings.append(analyze_run(run, root_from=root_from, references=refs))
        except GraphError as exc:
            out.problems.append(f"{unit.path}: run {run.run_id}: skipped: {exc}")
        except Exception as exc:  # noqa: BLE001 - a crash on one run is reported, the rest go on
            out.problems.append(
                f"{unit.path}: run {run.run_id}: analysis failed: {type(exc).__name__}: {exc}"
            )
    return out


class Aggregate:
    """Folds unit results into a report (used by every engine)."""

    def __init__(self, replays: Sequence[Run] = (), *, keep_findings: bool = False) -> None:
        self.groups = GroupTable()
        self.spectrum = Spectrum()
        self.runs = 0
        self.problems: list[str] = []
        self.findings: list[Finding] | None = [] if keep_findings else None
        self.cost = 0.0
        self.tokens = 0
        self.sessions: dict[str, tuple[int, int]] = {}
        self._verified = verification_index(replays)

    def add(self, result: UnitResult) -> None:
        """Fold one unit's result in."""
        self.runs += result.runs
        self.spectrum.merge(result.spectrum)
        self.cost += result.cost
        self.tokens += result.tokens
        for sid, (n_runs, n_failed) in result.sessions.items():
            had = self.sessions.get(sid, (0, 0))
            self.sessions[sid] = (had[0] + n_runs, had[1] + n_failed)
        if len(self.problems) < 100:
            self.problems.extend(result.problems[: 100 - len(self.problems)])
        for f in result.findings:
            v = self._verified.get(f.run_id)
            if v is not None:
                from dataclasses import replace

                f = replace(f, verified=f.root_step in v[0])
            self.groups.add(f)
            if self.findings is not None:
                self.findings.append(f)

    def report(self, sources: Sequence[str], seconds: float, workers: int) -> FleetReport:
        """The finished report."""
        return FleetReport(
            self.groups,
            self.spectrum,
            list(sources),
            self.runs,
            self.problems,
            seconds,
            workers,
            self.findings,
            self.cost,
            self.tokens,
            self.sessions,
        )


def default_workers() -> int:
    """Processes to use by default: the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def execute(
    work: Sequence[Any],
    fn: Callable[..., Any],
    consume: Callable[[Any], None],
    *,
    workers: int | None = None,
    args: tuple[Any, ...] = (),
    progress: Callable[[int, int | None], None] | None = None,
) -> int:
    """Run ``fn(unit, *args)`` over the units in a process pool, handing each result to ``consume``.

    Results arrive in completion order; at most three units per process are in
    flight, so results waiting to be consumed stay few.  Returns the number of
    processes used (1: everything ran in this process).  ``progress(done, total)``
    is called with the units done after each one.
    """
    n = workers or default_workers()
    done = 0

    def take(result: Any) -> None:
        nonlocal done
        consume(result)
        done += 1
        if progress is not None:
            progress(done, len(work))

    if n <= 1 or len(work) <= 1:
        for u in work:
            take(fn(u, *args))
        return 1
    import multiprocessing

    # forkserver: the recorder's writer thread must not be forked mid-write.
    ctx = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
        pending: set[Future[Any]] = set()
        for u in work:
            pending.add(pool.submit(fn, u, *args))
            while len(pending) >= 3 * n:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    take(fut.result())
        for fut in pending:
            take(fut.result())
    return n


def run_fleet(
    sources: Sequence[str | Path],
    *,
    workers: int | None = None,
    keep_findings: bool = False,
    root_from: str | None = None,
    unit_size: int = UNIT_SIZE,
    progress: Callable[[int, int | None], None] | None = None,
) -> FleetReport:
    """Analyze every failed run of the sources in parallel and group the failures.

    Args:
        sources: Stores, JSONL files, foreign traces, folders of them, Parquet datasets.
        workers: Processes (default: the usable cores); 1 runs in this process.
        keep_findings: Keep every finding in the report (memory grows with failed runs).
        root_from: Group on the step named by this metadata path (see `analyze_run`).
        unit_size: Runs per unit of work.
        progress: Called as ``progress(units_done, units)`` after each unit.

    Raises:
        SourceError: a source does not exist.
    """
    t0 = time.perf_counter()
    work, replays, problems = units(sources, size=unit_size)
    refs = reference_pool(sources)
    agg = Aggregate(replays, keep_findings=keep_findings)
    agg.problems.extend(problems)
    try:
        n = execute(work, process_unit, agg.add, workers=workers, args=(root_from, refs), progress=progress)
    finally:
        close_stores()
    return agg.report([str(s) for s in sources], time.perf_counter() - t0, n)


def export_source(
    source: str | Path,
    out: str | Path,
    *,
    run_id: str | None = None,
    fmt: str | None = None,
    analyses: bool = False,
    progress: Callable[[int, int | None], None] | None = None,
) -> dict[str, int]:
    """Export a source (``trajdebug export --to parquet``): a store is read one run at a time.

    ``progress(runs_done, runs)`` is called after each run written.

    Raises:
        SourceError: the source cannot be read, or holds no run.
    """
    from trajdebug.fleet.parquet import write_dataset
    from trajdebug.sources.load import SourceError, load_runs
    from trajdebug.store import Store, is_store

    if run_id is None and fmt in (None, "store") and is_store(source):

        def stream() -> Iterator[Run]:
            with Store(source) as store:
                ids = store.run_ids()
                for i, rid in enumerate(ids):
                    yield store.load_run(rid)
                    if progress is not None:
                        progress(i + 1, len(ids))

        refs = reference_pool([source]) if analyses else None
        return write_dataset(stream(), out, analyses=analyses, references=refs)
    runs = load_runs(source, run_id=run_id, fmt=fmt)
    if not runs:
        raise SourceError(f"{source}: no runs found")

    def counted() -> Iterator[Run]:
        for i, r in enumerate(runs):
            yield r
            if progress is not None:
                progress(i + 1, len(runs))

    return write_dataset(
        counted(), out, analyses=analyses, references=reference_pool([source]) if analyses else None
    )


__all__ = [
    "UNIT_SIZE",
    "Aggregate",
    "FleetReport",
    "Unit",
    "UnitResult",
    "export_source",
    "reference_pool",
    "analyze_run",
    "close_stores",
    "default_workers",
    "execute",
    "expand",
    "process_unit",
    "run_fleet",
    "units",
]
