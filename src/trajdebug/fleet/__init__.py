"""Fleet analysis: root causes across many runs, spectrum ranking, regressions, alerts.

``run_fleet(sources)`` analyzes every failed run (in parallel), groups the
failures by root-cause signature and ranks what failing runs have that
passing ones don't; ``compare`` measures a regression between two run sets;
``Watcher`` raises one alert per new failure group as runs land;
``write_dataset`` exports runs as Parquet and ``run_fleet_dask`` runs the
fleet job on a Dask cluster.  The heavy dependencies (pyarrow, DuckDB, Dask,
matplotlib) are in the ``fleet`` extra and load only when used.
"""

from __future__ import annotations

from trajdebug.fleet.compare import Comparison, compare, wilson
from trajdebug.fleet.engine import FleetReport, analyze_run, run_fleet
from trajdebug.fleet.groups import Finding, Group, GroupTable, finding_of
from trajdebug.fleet.signature import Signature, normalize, signature_of
from trajdebug.fleet.spectrum import Spectrum, Suspect, dstar, ochiai, run_features
from trajdebug.fleet.watch import Watcher


def __getattr__(name: str) -> object:
    # Resolved lazily: they import pyarrow, DuckDB or Dask.
    if name in ("write_dataset", "read_part", "iter_dataset"):
        from trajdebug.fleet import parquet

        return getattr(parquet, name)
    if name == "run_fleet_dask":
        from trajdebug.fleet.distributed import run_fleet_dask

        return run_fleet_dask
    raise AttributeError(f"module 'trajdebug.fleet' has no attribute {name!r}")


__all__ = [
    "Comparison",
    "Finding",
    "FleetReport",
    "Group",
    "GroupTable",
    "Signature",
    "Spectrum",
    "Suspect",
    "Watcher",
    "analyze_run",
    "compare",
    "dstar",
    "finding_of",
    "iter_dataset",
    "normalize",
    "ochiai",
    "read_part",
    "run_features",
    "run_fleet",
    "run_fleet_dask",
    "signature_of",
    "wilson",
    "write_dataset",
]
