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
        ["fleet", str(tmp_path / "ds"), "--engine", "dask", "--scheduler", cluster.scheduler_address, "--json"],
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


def test_a_dataset_of_one_part_is_split_across_the_workers(tmp_path: Path, fleet_store: Path) -> None:
    """A one-part dataset is cut into slices of its runs, one task each, that together hold every run once."""
    from trajdebug.fleet.distributed import split_parts
    from trajdebug.fleet.parquet import iter_dataset, parts, read_part

    export_source(fleet_store, tmp_path / "ds")
    from trajdebug.fleet.parquet import write_dataset

    runs = list(iter_dataset(tmp_path / "ds"))
    write_dataset(runs, tmp_path / "one", part_size=10_000, part_rows=10**9)
    assert parts(tmp_path / "one") == ["part-00000"]
    units = split_parts(tmp_path / "one", 4)
    assert len(units) == 4
    sliced = [r for u in units for r in read_part(u.path, str(u.part), u.ids)]
    assert sorted(r.run_id for r in sliced) == sorted(r.run_id for r in runs)
    assert {r.run_id: r for r in sliced} == {r.run_id: r for r in runs}


def test_parts_are_bounded_by_runs_and_by_step_rows(tmp_path: Path, fleet_store: Path) -> None:
    """A part closes at its run limit or its step-row limit, never inside a run."""
    from trajdebug.fleet.parquet import connect, iter_dataset, parts, write_dataset

    export_source(fleet_store, tmp_path / "ds")
    runs = list(iter_dataset(tmp_path / "ds"))
    write_dataset(runs, tmp_path / "rows", part_size=10_000, part_rows=500)
    con = connect(tmp_path / "rows")
    per_part = con.execute(
        "SELECT filename, count(*) FROM read_parquet(?, filename=true) GROUP BY 1",
        [str(tmp_path / "rows" / "steps" / "part-*.parquet")],
    ).fetchall()
    longest = max(len(r.steps) for r in runs)
    assert len(parts(tmp_path / "rows")) > 1 and all(n < 500 + longest for _, n in per_part)
    assert list(iter_dataset(tmp_path / "rows")) == runs


def test_dask_with_two_workers_splits_a_small_dataset(tmp_path: Path, fleet_store: Path, cluster: LocalCluster) -> None:
    """On a one-part dataset, both workers get tasks and the groups equal the local engine's."""
    from distributed import Client

    from trajdebug.fleet.parquet import iter_dataset, write_dataset

    export_source(fleet_store, tmp_path / "ds")
    write_dataset(list(iter_dataset(tmp_path / "ds")), tmp_path / "one", part_size=10_000, part_rows=10**9)
    report = run_fleet_dask(tmp_path / "one", address=cluster.scheduler_address)
    assert report.groups.to_dict() == run_fleet([tmp_path / "one"], workers=1).groups.to_dict()
    with Client(cluster.scheduler_address) as client:  # type: ignore[no-untyped-call]
        done = client.run(lambda dask_worker: len(dask_worker.data) + dask_worker.state.transition_counter)
    assert len(done) == 2 and all(v > 0 for v in done.values())
