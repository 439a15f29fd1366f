"""Tests of `trajdebug compare`: rates with Wilson intervals, group changes, changed steps, the CI metric."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from trajdebug.cli import cli
from trajdebug.fleet import compare, wilson
from trajdebug.store import Store


def test_wilson_interval_matches_known_values() -> None:
    """The 95 % Wilson interval of 0/10 and 5/10 (Wilson 1927; Newcombe 1998, table I)."""
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    assert wilson(0, 0) == (0.0, 1.0)


def test_compare_by_version_finds_the_new_group_and_the_changed_step(fleet_store: Path) -> None:
    """Split by version: the fault only 1.1 has is a new group, and the policy 1.1 reworded is a changed step."""
    cmp = compare([fleet_store], by="version", a="1.0", b="1.1", workers=1)
    d = cmp.to_dict()
    assert d["a"]["runs"] + d["b"]["runs"] == 240
    new = [g for g in d["groups"] if g["change"] == "new"]
    assert any("lookup_order" in g["title"] and "delivered" in g["title"] for g in new)
    assert all(g["a"]["k"] == 0 < g["b"]["k"] for g in new)
    changed = {(c["step"], json.dumps(c["input"], sort_keys=True)) for c in d["changed_steps"]}
    assert ("find_policy", '{"intent": "refund"}') in changed
    # Tools whose output varies run to run (fetched pages) are not reported as changed.
    assert not any(c["step"] == "fetch" for c in d["changed_steps"])
    fr = d["a"]["failure_rate"]
    assert fr["low"] <= fr["rate"] <= fr["high"] and fr["rate"] == pytest.approx(fr["k"] / fr["n"], abs=1e-6)


def test_compare_of_a_set_with_itself_changes_nothing(fleet_store: Path) -> None:
    """The same store as A and B: every group the same, no changed step, no regression."""
    cmp = compare([fleet_store], [fleet_store], workers=1)
    assert {g["change"] for g in cmp.groups()} == {"same"}
    assert cmp.changed_steps == []
    assert cmp.metric()["regressed"] is False and cmp.metric()["delta"] == 0


def test_compare_gates_ci_on_a_critical_regression(tmp_path: Path, fleet_store: Path) -> None:
    """Against a baseline of passing runs, the fleet regressed: --fail-on-regression exits 1 and the metric file says so."""
    baseline = tmp_path / "baseline.db"
    with Store(fleet_store) as src, Store(baseline) as dst:
        for rid in src.run_ids():
            run = src.load_run(rid)
            if run.outcome == "success":
                dst.save_run(run)
    metric = tmp_path / "metric.json"
    r = CliRunner().invoke(
        cli,
        [
            "compare",
            str(baseline),
            str(fleet_store),
            "--workers",
            "1",
            "--fail-on-regression",
            "--metric-file",
            str(metric),
            "--plot",
            str(tmp_path / "cmp.svg"),
        ],
    )
    assert r.exit_code == 1, r.output
    m = json.loads(metric.read_text())
    assert m["name"] == "critical_failures_per_run" and m["a"] == 0 and m["b"] > 0 and m["regressed"] is True
    assert "<svg" in (tmp_path / "cmp.svg").read_text()
    ok = CliRunner().invoke(
        cli, ["compare", str(fleet_store), str(baseline), "--workers", "1", "--fail-on-regression", "--json"]
    )
    assert ok.exit_code == 0
    assert {g["change"] for g in json.loads(ok.stdout)["groups"]} == {"gone"}


def test_compare_by_key_finds_the_two_values_itself(fleet_store: Path) -> None:
    """--by without --a/--b takes the two values the runs carry, in order; more or fewer is an error naming them."""
    r = CliRunner().invoke(cli, ["compare", str(fleet_store), "--by", "version", "--workers", "1", "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["a"]["label"], d["b"]["label"]) == ("version=1.0", "version=1.1")
    bad = CliRunner().invoke(cli, ["compare", str(fleet_store), "--by", "task", "--workers", "1"])
    assert bad.exit_code != 0 and "give --a and --b" in bad.output
