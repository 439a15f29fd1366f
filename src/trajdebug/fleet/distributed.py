"""The fleet job on a Dask cluster: one task per Parquet part (parts sliced by run when too few), groups folded on the client.

Why Dask distributed rather than Ray: the unit of work here is a plain Python
function over one Parquet part (`trajdebug.fleet.engine.process_unit`) that
returns a small result, which is exactly Dask's ``Client.map``; Dask is pure
Python on top of what the fleet already needs (pyarrow), a local cluster
starts in about two seconds on two cores, and a scheduler address
(``tcp://host:8786``) is all it takes to use a real cluster.  Ray brings a
native runtime (raylet, object store, GCS) that costs more to start and to
install than the job needs.

Every worker must see the dataset at the same path (a shared file system or
a mounted bucket), and run the same trajdebug version.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from trajdebug.fleet.engine import Aggregate, FleetReport, Unit, process_unit, reference_pool


def split_parts(path: Path, tasks: int) -> list[Unit]:
    """The units of a dataset: one per part, and when there are fewer parts than ``tasks``, each part cut
    into slices of its runs (read with a Parquet filter) so every worker gets work.

    Twice as many tasks as workers evens out parts of unequal cost (failed runs are analyzed,
    passing ones only counted), as a work queue would.
    """
    from trajdebug.fleet.parquet import part_run_ids, parts

    names = parts(path)
    if len(names) >= tasks:
        return [Unit("parquet", str(path), part=p) for p in names]
    per = -(-tasks // max(1, len(names)))  # slices per part, rounded up
    out: list[Unit] = []
    for p in names:
        ids = part_run_ids(path, p)
        size = max(1, -(-len(ids) // per))
        out.extend(Unit("parquet", str(path), ids=tuple(ids[i : i + size]), part=p) for i in range(0, len(ids), size))
    return out


def run_fleet_dask(
    dataset: str | Path,
    *,
    address: str | None = None,
    workers: int = 2,
    keep_findings: bool = False,
    root_from: str | None = None,
    progress: Any = None,
    split: bool = True,
) -> FleetReport:
    """Group the failures of a Parquet dataset on a Dask cluster.

    Args:
        dataset: A dataset written by `trajdebug.fleet.parquet.write_dataset`
            (``trajdebug export --to parquet``).
        address: The scheduler's address (``tcp://host:8786``); None starts a
            local cluster of ``workers`` processes on 127.0.0.1 for the job.
        workers: Processes of the local cluster (ignored with ``address``).
        keep_findings: Keep every finding in the report.
        root_from: Group on the step named by this metadata path (see `trajdebug.fleet.engine.analyze_run`).
        progress: Called as ``progress(parts_done, parts)`` after each part.
        split: Slice parts by run when there are fewer than twice the workers (`split_parts`);
            False: one task per part, as written.

    Raises:
        ValueError: ``dataset`` is not a Parquet dataset.
    """
    from distributed import Client, LocalCluster, as_completed

    from trajdebug.fleet.parquet import is_dataset, replay_runs

    path = Path(dataset).resolve()
    if not is_dataset(path):
        raise ValueError(
            f"{dataset}: not a trajdebug Parquet dataset (write one with `trajdebug export --to parquet`)"
        )
    t0 = time.perf_counter()
    with ExitStack() as stack:
        target: Any = address
        if address is None:
            # The cluster's own progress chatter (INFO) is not the report.
            import logging

            for name in (
                "distributed",
                "distributed.scheduler",
                "distributed.nanny",
                "distributed.worker",
                "distributed.core",
            ):
                logging.getLogger(name).setLevel(logging.WARNING)
            target = stack.enter_context(
                LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    host="127.0.0.1",
                    dashboard_address="127.0.0.1:0",  # port 0: never a fixed port (Dask's default one may be taken)
                    worker_dashboard_address="127.0.0.1:0",
                    scheduler_kwargs={"dashboard": False},
                )  # type: ignore[no-untyped-call]
            )
        client = stack.enter_context(Client(target))  # type: ignore[no-untyped-call]
        n = len(client.scheduler_info().get("workers", {})) or workers
        agg = Aggregate(replay_runs(path), keep_findings=keep_findings)
        units = split_parts(path, 2 * n if split else 0)
        refs = reference_pool([path])
        futures = client.map(process_unit, units, root_from=root_from, references=refs, pure=False)
        for done, fut in enumerate(as_completed(futures), 1):  # type: ignore[no-untyped-call]
            agg.add(fut.result())
            fut.release()
            if progress is not None:
                progress(done, len(units))
    return agg.report([str(dataset)], time.perf_counter() - t0, n)


__all__ = ["run_fleet_dask", "split_parts"]
