"""Tests of the benchmark package: workflows, fault injection, metrics, report."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
# `pytest` run without `python -m` does not put the repo root, where `benchmarks` lives, on the path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import metrics, quality, report  # noqa: E402
from benchmarks.faults import FAULT_TYPES, Case, Injector, distractors_for  # noqa: E402
from benchmarks.workflows import WORKFLOWS  # noqa: E402

from trajdebug.core.model import Run, Step  # noqa: E402


PAIRS = [(w, f) for w, mod in WORKFLOWS.items() for f in mod.FAULTS]


def _all_step_ids(res: object) -> set[str]:
    runs = (res.run, *res.previous)  # type: ignore[attr-defined]
    return {s.step_id for r in runs for s in r.steps}


class TestWorkflows:
    """Each workflow runs clean and with each of its faults, recording ground truth."""

    @pytest.mark.parametrize("workflow", sorted(WORKFLOWS))
    def test_clean_run_succeeds(self, workflow: str) -> None:
        """A clean run (with both distractors on) succeeds and records no fault step."""
        res = WORKFLOWS[workflow].run(Case(workflow, None, 3, ("transient", "warning")))
        assert res.run.outcome == "success", res.run.failure_reason
        assert res.fault == {"type": None, "step_id": None}

    @pytest.mark.parametrize(("workflow", "fault"), PAIRS)
    def test_faulted_run_fails_with_ground_truth(self, workflow: str, fault: str) -> None:
        """A faulted run fails, and its ground truth names the fault type and an existing step."""
        res = WORKFLOWS[workflow].run(Case(workflow, fault, 1, distractors_for(1)))
        assert res.run.outcome == "failure"
        assert res.fault["type"] == fault
        assert res.fault["step_id"] in _all_step_ids(res)

    @pytest.mark.parametrize("workflow", sorted(WORKFLOWS))
    def test_distractors_are_recorded_and_harmless(self, workflow: str) -> None:
        """With distractors on, a clean run shows a recovered transient error and an ignored warning."""
        res = WORKFLOWS[workflow].run(Case(workflow, None, 5, ("transient", "warning")))
        stages = [e.stage for r in (res.run, *res.previous) for e in r.errors]
        assert res.run.outcome == "success"
        assert "recovered" in stages
        assert "ignored" in stages

    def test_every_fault_type_is_injected_somewhere(self) -> None:
        """The workflows together cover every fault type."""
        assert {f for _, f in PAIRS} == set(FAULT_TYPES)

    def test_fault_lands_inside_a_step_of_the_same_seed_deterministically(self) -> None:
        """The same case injects its fault at the same step (same name and position) on every run."""
        case = Case("sql-report", "truncated-output", 4)
        a, b = (WORKFLOWS["sql-report"].run(case) for _ in range(2))
        pos = [[s.step_id for s in r.run.steps].index(r.fault["step_id"]) for r in (a, b)]
        assert pos[0] == pos[1]
        assert a.run.step(a.fault["step_id"]).name == "run_sql"

    def test_injector_refuses_outside_a_step(self) -> None:
        """Asking for a fault outside any recorded step is an error, not a silent miss."""
        inj = Injector(Case("w", "race", 0))
        with pytest.raises(RuntimeError, match="outside a recorded step"):
            inj.on("race")

    def test_suite_has_at_least_500_cases(self) -> None:
        """The full suite has at least 500 cases."""
        assert len(quality.cases(quality.SEEDS_FULL)) >= 500


class TestMetrics:
    """Metric functions on hand-made rankings."""

    def test_rank_top_k_and_mrr(self) -> None:
        """Ranks are 1-based; misses count as misses in top-k and 0 in MRR."""
        ranks = [metrics.rank_of(["a", "b", "c"], t) for t in ("a", "c", "z")]
        assert ranks == [1, 3, None]
        assert metrics.top_k(ranks, 1) == pytest.approx(1 / 3)
        assert metrics.top_k(ranks, 3) == pytest.approx(2 / 3)
        assert metrics.mrr(ranks) == pytest.approx((1 + 1 / 3 + 0) / 3)
        assert math.isnan(metrics.mrr([]))

    def test_exam_average_tie(self) -> None:
        """A root in a tie group of three after one better candidate sits at position 1 + 2 = 3."""
        cands, scores = ["a", "b", "c", "d"], [0.9, 0.5, 0.5, 0.5]
        assert metrics.exam_position(cands, scores, "c", 10) == pytest.approx(3.0)
        assert metrics.exam_position(cands, scores, "a", 10) == pytest.approx(1.0)
        assert metrics.exam(cands, scores, "b", 10) == pytest.approx(0.3)

    def test_exam_of_a_missed_root_is_the_middle_of_the_rest(self) -> None:
        """A root absent from a 4-candidate list in a 10-step run sits at 4 + (6 + 1) / 2."""
        assert metrics.exam_position(["a", "b", "c", "d"], [4, 3, 2, 1], "z", 10) == pytest.approx(7.5)

    def test_exam_rejects_inconsistent_input(self) -> None:
        """Mismatched scores, or more candidates than steps, are errors."""
        with pytest.raises(ValueError, match="scores"):
            metrics.exam_position(["a"], [], "a", 3)
        with pytest.raises(ValueError, match="cannot have"):
            metrics.exam_position(["a", "b"], [1, 1], "a", 1)

    def test_summarize(self) -> None:
        """A summary aggregates ranks, EXAM, cost and time over outcomes."""
        outs = [metrics.Outcome("m", 1, 0.1, 4, 10, 0.002), metrics.Outcome("m", None, 0.5, 6, 20, 0.004)]
        s = metrics.summarize("m", outs)
        assert (s.top1, s.top3, s.mrr) == (0.5, 0.5, 0.5)
        assert s.exam == pytest.approx(0.3)
        assert s.examined_ratio == pytest.approx(5 / 15)
        assert s.ms == pytest.approx(3.0)

    def test_linear_cost(self) -> None:
        """The linear backward scan reads from the latest failure back to the root, inclusive."""

        class F:
            def __init__(self, sid: str) -> None:
                self.step_id = sid

        run = Run("r", "r", steps=tuple(Step(f"s{i}", f"s{i}") for i in range(6)))
        assert quality.linear_cost(run, [F("s4"), F("s2")], "s1") == 4
        assert quality.linear_cost(run, [F("s4")], "elsewhere") == 5


class TestSuiteAndReport:
    """The suite scores every method, and the report renders it."""

    def test_run_case_and_render(self) -> None:
        """Scoring two cases gives every method an outcome, and the document shows the tables."""
        bl = quality._baselines()
        recs = [quality.run_case(Case("sql-report", f, 0), bl) for f in ("json-repair-drop", "wrong-branch")]
        assert set(recs[0].outcomes) == {"trajdebug", *bl}
        for r in recs:
            assert r.failed and r.truth_in_run
            for o in r.outcomes.values():
                assert 0 < o.exam <= 1
                assert o.rank is None or 1 <= o.rank <= quality.TOP
        data = {
            "quality": report.quality_data(quality.SuiteResult(recs, 0.1), quick=True),
            "machine": report.machine(),
        }
        text = report.render(data, "python -m benchmarks --quick")
        assert "## 2. Fault-injection suite (in-distribution)" in text
        assert "`json-repair-drop`" in text and "`wrong-branch`" in text
        assert "| suite top-1 (trajdebug) |" in text

    @pytest.mark.slow
    def test_tau_annotations_map_to_imported_messages(self) -> None:
        """Every annotated tau-bench run is found, and its root cause is a message of that run."""
        from benchmarks.tau import DATA, run_tau

        if not DATA.exists():
            pytest.skip("the AgentRx data set is not available here")
        res = run_tau()
        assert not res.unmatched
        assert len(res.cases) == 29
        for c in res.cases:
            assert 1 <= c.root <= c.messages
            assert c.root in c.failures
        assert {r["method"] for r in res.rows()} >= {"trajdebug", "linear-scan"}

    @pytest.mark.slow
    def test_a_recording_case_runs_in_its_own_process_and_renders(self) -> None:
        """A recording configuration runs in a subprocess into a real store: every step on disk, nothing
        dropped, the process's CPU per step above its agent thread's; the section renders its row."""
        from benchmarks.recording import render_section, run_case

        r = run_case("cm-store", 2000, 1)
        assert (r["n"], r["dropped"]) == (2000, 0)
        assert r["total_us"] > r["agent_us"] > 0
        assert r["bytes_per_step"] > 400  # two 200-byte values per step, on disk
        lines = render_section({"date": "d", "seconds": 1.0, "n": 2000, "repeats": 1, "total": [r]})
        assert any(line.startswith("| `with trajdebug.step(...)` → SQLite store | **") for line in lines)

    def test_the_startup_benchmark_times_an_agents_start_up_to_its_first_step(self, tmp_path: Path) -> None:
        """The start-up benchmark times ``python -c pass``, ``import trajdebug`` and an agent's start up to its
        first step written (whose run file then holds that step), each with its ratios to ``python -c pass``."""
        import json

        from benchmarks.startup import measure

        out = measure(runs=1, out_dir=tmp_path)
        assert list(out) == ["python -c pass", "import trajdebug", "first step recorded"]
        assert out["python -c pass"]["wall_ratio"] == 1.0
        assert all(row["wall_ms"] > 0 and row["cpu_ratio"] > 0 for row in out.values())
        records = [json.loads(line) for line in (tmp_path / "first.jsonl").read_text().splitlines()]
        assert [r["name"] for r in records if r["t"] == "step"] == ["search", "search"]  # the warm-up, the round

    @pytest.mark.slow
    def test_main_writes_the_document_and_keeps_other_sections(self, tmp_path: Path) -> None:
        """`python -m benchmarks --only tau` writes the document and keeps earlier sections' results."""
        import json
        import subprocess

        from benchmarks.tau import DATA

        if not DATA.exists():
            pytest.skip("the AgentRx data set is not available here")
        results = tmp_path / "results.json"
        results.write_text(json.dumps({"speed": None, "kept": {"x": 1}}))
        out = tmp_path / "bench.md"
        cmd = [
            sys.executable,
            "-m",
            "benchmarks",
            "--only",
            "tau",
            "--out",
            str(out),
            "--results",
            str(results),
        ]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        text = out.read_text()
        assert "## 3. Real data: AgentRx tau-bench failures" in text
        assert "Command: `python -m benchmarks --only tau`" in text
        data = json.loads(results.read_text())
        assert data["kept"] == {"x": 1}
        assert data["tau"]["runs"] == 29
