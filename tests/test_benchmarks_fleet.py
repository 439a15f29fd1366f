"""Tests of the fleet benchmark: purity and completeness, the generator's ground truth, the report section."""

from __future__ import annotations

import json
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
# `pytest` run without `python -m` does not put the repo root, where `benchmarks` lives, on the path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.fleet import purity, render_section  # noqa: E402
from benchmarks.fleet_agents import FAULT_STEPS  # noqa: E402

from trajdebug.fleet import GroupTable, Signature  # noqa: E402
from trajdebug.fleet.engine import FleetReport, run_fleet  # noqa: E402
from trajdebug.fleet.groups import Finding  # noqa: E402
from trajdebug.fleet.spectrum import Spectrum  # noqa: E402
from trajdebug.store import Store  # noqa: E402


def _report(assign: dict[str, str]) -> FleetReport:
    t = GroupTable()
    findings = []
    for rid, root in assign.items():
        sig = Signature("a", "tool", root, "-", "e", "-", "-")
        f = Finding(rid, "a", 0, sig, "ERROR", False, "s", "m")
        t.add(f)
        findings.append(f)
    return FleetReport(t, Spectrum(), ["x"], len(assign), findings=findings)


def test_purity_and_completeness_count_majorities() -> None:
    """Two kinds split over three groups: purity counts each group's majority, completeness each kind's largest group."""
    kinds = {
        "r1": "bad-column",
        "r2": "bad-column",
        "r3": "bad-column",
        "r4": "fetch-timeout",
        "r5": "fetch-timeout",
    }
    rep = _report({"r1": "write_sql", "r2": "write_sql", "r3": "fetch", "r4": "fetch", "r5": "other"})
    q = purity(rep, kinds)
    assert (q["purity"], q["completeness"]) == (0.8, 0.6)
    assert q["by_kind"]["bad-column"]["names_injected_step"] is True
    assert q["by_kind"]["fetch-timeout"]["top_group_share"] == 0.5


def test_generator_records_the_injected_step_of_each_failed_run(fleet_store: Path) -> None:
    """Every failed generated run names its fault kind and the step it was injected in; passing runs name none."""
    with Store(fleet_store) as st:
        runs = [st.load_run(r) for r in st.run_ids()]
    failed = [r for r in runs if r.outcome == "failure"]
    assert 0.25 < len(failed) / len(runs) < 0.7
    for r in runs:
        fault = r.metadata["fault"]
        if r.outcome == "failure":
            assert r.step(fault["step_id"]).name == FAULT_STEPS[fault["type"]] == fault["step"]
        assert r.metadata["version"] in ("1.0", "1.1")
    assert {r.metadata["fault"]["type"] for r in runs if r.metadata["fault"]["type"]} <= set(FAULT_STEPS)
    assert len({r.name for r in runs}) == 4


def test_fleet_section_renders_the_stored_results() -> None:
    """The section of docs/benchmarks.md renders from a full run's stored results, both quality rows included.

    tests/data/fleet_section.json is the ``fleet`` part of one run's ``results.json``
    (which is produced by the run, not committed)."""
    data = json.loads((ROOT / "tests" / "data" / "fleet_section.json").read_text())
    text = "\n".join(render_section(data))
    assert "## 7. Fleet" in text and "the injected step (ground truth)" in text
    assert f"{data['scale']['stored_runs']:,} stored runs" in text


def test_grouping_on_the_injected_step_is_pure(fleet_store: Path) -> None:
    """Grouping on the injected step puts each fault kind in groups of its own (the ground-truth baseline)."""
    with Store(fleet_store) as st:
        kinds = {r: st.load_run(r).metadata["fault"]["type"] for r in st.run_ids()}
    rep = run_fleet([fleet_store], workers=1, keep_findings=True, root_from="fault.step_id")
    assert purity(rep, {k: v for k, v in kinds.items() if v})["purity"] == 1.0
