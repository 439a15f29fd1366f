"""Marking a recorded run failed after the fact: `trajdebug.mark` and `trajdebug mark`, on real stores and files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import trajdebug
from trajdebug.cli import cli
from trajdebug.core.jsonl import FormatError, RunBuilder, mark_record, read_jsonl, run_to_records
from trajdebug.sources.load import SourceError, load_runs
from trajdebug.store import Store


@trajdebug.step(kind="tool")
def convert(amount: float) -> float:
    return amount * 1.0  # the silent bug: the rate is never applied


@trajdebug.step(kind="output")
def answer(value: float) -> str:
    return f"{value:.2f} EUR"


def record_wrong_answer(**where: object) -> str:
    """A run that raises nothing and answers wrongly: recorded as a success."""
    with trajdebug.run("price", **where) as h:  # type: ignore[arg-type]
        answer(convert(100.0))
    return h.run_id


class TestStore:
    def test_marked_failed_loads_as_failure_and_keeps_the_recorded_outcome(self, tmp_path: Path) -> None:
        """After mark(failed=...), loading the run gives failure with the reason; the recorded outcome is in metadata."""
        db = tmp_path / "runs.db"
        rid = record_wrong_answer(store=db)
        marked = trajdebug.mark(db, rid[:8], failed="quoted USD as EUR")
        [run] = load_runs(db, run_id=rid)
        assert (marked.outcome, run.outcome, run.failure_reason) == (
            "failure",
            "failure",
            "quoted USD as EUR",
        )
        assert run.metadata["marked"]["recorded_outcome"] == "success"
        with Store(db) as st:
            [row] = st.list_runs(outcome="failure")
        assert (row.run_id, row.failure_reason) == (rid, "quoted USD as EUR")

    def test_success_undoes_a_failure_mark(self, tmp_path: Path) -> None:
        """mark(success=True) after a failure mark reads as success again, for the reader and the runs list."""
        db = tmp_path / "runs.db"
        rid = record_wrong_answer(store=db)
        trajdebug.mark(db, rid, failed="wrong")
        run = trajdebug.mark(db, rid, success=True)
        assert (run.outcome, run.failure_reason) == ("success", None)
        with Store(db) as st:
            assert [r.outcome for r in st.list_runs()] == ["success"]

    def test_a_marked_run_is_analyzed_as_a_failure(self, tmp_path: Path) -> None:
        """The analysis of a marked run has the run's failure to explain, with the mark's reason."""
        from trajdebug.analysis import analyze

        db = tmp_path / "runs.db"
        rid = record_wrong_answer(store=db)
        before = analyze(load_runs(db, run_id=rid)[0])
        trajdebug.mark(db, rid, failed="quoted USD as EUR")
        after = analyze(load_runs(db, run_id=rid)[0])
        assert (before.outcome, before.failures) == ("success", ())
        assert after.outcome == "failure"
        assert [(f.detector, f.message) for f in after.failures] == [("run-failure", "quoted USD as EUR")]


class TestJsonl:
    def test_a_mark_record_is_appended_and_applied(self, tmp_path: Path) -> None:
        """A JSONL file gains one `mark` record; the earlier lines are untouched and the run reads as failed."""
        path = tmp_path / "runs.jsonl"
        rid = record_wrong_answer(path=path)
        before = path.read_text()
        trajdebug.mark(path, rid, failed="quoted USD as EUR")
        after = path.read_text()
        assert after.startswith(before)
        [line] = after[len(before) :].splitlines()
        assert json.loads(line)["t"] == "mark"
        [run] = read_jsonl(path).runs
        assert (run.outcome, run.failure_reason) == ("failure", "quoted USD as EUR")
        assert read_jsonl(path).problems == []

    def test_the_last_mark_wins_wherever_the_end_record_is(self) -> None:
        """Marks apply in order, whether they come before or after the run's end record."""
        from trajdebug.core.model import Run

        recs = run_to_records(Run("r1", "x", outcome="success", end_ns=5))
        b = RunBuilder()
        for rec in [
            recs[0],
            mark_record("r1", "failure", "first", 1),
            mark_record("r1", "failure", "second", 2),
            *recs[1:],
        ]:
            b.add(rec)
        [run] = b.runs()
        assert (run.outcome, run.failure_reason) == ("failure", "second")
        assert run.metadata["marked"]["recorded_outcome"] == "success"

    def test_a_failure_mark_without_a_reason_is_a_problem_on_its_line(self, tmp_path: Path) -> None:
        """A malformed mark record is reported with its line; the run still loads with its recorded outcome."""
        path = tmp_path / "runs.jsonl"
        rid = record_wrong_answer(path=path)
        n = len(path.read_text().splitlines()) + 1
        with path.open("a") as fh:
            fh.write(json.dumps(mark_record(rid, "failure", None, 1)) + "\n")
        result = read_jsonl(path)
        [problem] = result.problems
        assert isinstance(problem, FormatError) and problem.line == n and "failure_reason" in str(problem)
        assert [r.outcome for r in result.runs] == ["success"]


class TestRefusals:
    def test_foreign_traces_unknown_runs_and_bad_arguments(self, tmp_path: Path) -> None:
        """Each refusal is one error that names the file or the run; nothing is written."""
        path = tmp_path / "runs.jsonl"
        rid = record_wrong_answer(path=path)
        chat = tmp_path / "chat.json"
        chat.write_text(json.dumps([{"role": "user", "content": "hi"}]))
        with pytest.raises(SourceError, match=r"chat\.json: only a store or a trajdebug JSONL file"):
            trajdebug.mark(chat, "chat", failed="x")
        with pytest.raises(SourceError, match=r"runs\.jsonl: no run 'zzz'"):
            trajdebug.mark(path, "zzz", failed="x")
        with pytest.raises(ValueError, match="exactly one"):
            trajdebug.mark(path, rid, failed="x", success=True)
        with pytest.raises(ValueError, match="needs a reason"):
            trajdebug.mark(path, rid, failed="  ")
        assert [r.outcome for r in read_jsonl(path).runs] == ["success"]


class TestCommand:
    def test_mark_then_analyze_from_the_command_line(self, tmp_path: Path) -> None:
        """`trajdebug mark --failed` on the default store, then `trajdebug analyze --json` reports the failure."""
        rid = record_wrong_answer()
        runner = CliRunner()
        out = runner.invoke(cli, ["mark", "--run", rid[:8], "--failed", "quoted USD as EUR", "--json"])
        assert out.exit_code == 0, out.output
        assert json.loads(out.output) | {"source": None} == {
            "source": None,
            "run_id": rid,
            "outcome": "failure",
            "failure_reason": "quoted USD as EUR",
            "recorded_outcome": "success",
            "recorded_failure_reason": None,
        }
        report = json.loads(runner.invoke(cli, ["analyze", "--run", rid, "--json"]).output)
        assert report["runs"][0]["outcome"] == "failure"
        assert report["runs"][0]["failures"]

    def test_usage_errors_are_one_line(self, tmp_path: Path) -> None:
        """Neither flag, or a run that is not there, exits non-zero with a one-line message (a real subprocess)."""
        rid = record_wrong_answer()
        both = subprocess.run(
            [sys.executable, "-m", "trajdebug", "mark", "--run", rid, "--failed", "x", "--success"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        missing = subprocess.run(
            [sys.executable, "-m", "trajdebug", "mark", "--run", "nope", "--failed", "x"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert both.returncode == 2 and "exactly one of --failed REASON or --success" in both.stderr
        assert missing.returncode == 1
        assert missing.stderr.strip().splitlines() == [f"Error: {tmp_path / 'trajdebug.db'}: no run 'nope'"]
