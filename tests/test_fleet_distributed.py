"""Tests of the fleet job on a Dask cluster that the test starts on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from distributed import LocalCluster

from trajdebug.cli import cli
from trajdebug.fleet import run_fleet, run_fleet_dask
from trajdebug.fleet.engine import export_source


@pytest.fixture(scope="module")
def cluster() -> object:
    """Two single-threaded worker processes, no dashboard."""
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",  # port 0: never a fixed port (Dask's default one may be taken)
        worker_dashboard_address="127.0.0.1:0",
        scheduler_kwargs={"dashboard": False},
    ) as c:  # type: ignore[no-untyped-call]
        yield c


def test_dask_path_gives_the_same_groups_as_the_single_machine_path(
    tmp_path: Path, fleet_store: Path, cluster: LocalCluster
) -> None:
    """The store grouped on this machine and its Parquet export grouped on the cluster (by its address) agree."""
    export_source(fleet_store, tmp_path / "ds")
    local = run_fleet([fleet_store], workers=1)
    remote = run_fleet_dask(tmp_path / "ds", address=cluster.scheduler_address)
    assert remote.workers == 2
    assert remote.groups.to_dict() == local.groups.to_dict()
    assert remote.runs == local.runs
    assert [s.to_dict() for s in remote.suspects()] == [s.to_dict() for s in local.suspects()]


def test_fleet_command_runs_on_the_cluster(tmp_path: Path, fleet_store: Path, cluster: LocalCluster) -> None:
    """`trajdebug fleet DATASET --engine dask --address URL --json` reports the same groups as the local engine."""
    export_source(fleet_store, tmp_path / "ds")
    r = CliRunner().invoke(
        cli,
        ["fleet", str(tmp_path / "ds"), "--engine", "dask", "--address", cluster.scheduler_address, "--json"],
    )
    assert r.exit_code == 0, r.output
    local = run_fleet([tmp_path / "ds"], workers=1)
    assert [g["group_id"] for g in json.loads(r.stdout)["groups"]] == [
        g.group_id for g in local.groups.ranked()
    ]


def test_dask_path_refuses_a_source_that_is_no_dataset(fleet_store: Path) -> None:
    """The cluster reads Parquet datasets only; a store is refused before any cluster is started."""
    with pytest.raises(ValueError, match="not a trajdebug Parquet dataset"):
        run_fleet_dask(fleet_store)
