"""The model and the JSONL record format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trajdebug.format import (
    FormatError,
    RunBuilder,
    UnsupportedVersionError,
    read_jsonl,
    read_lines,
    run_to_records,
    write_jsonl,
)
from trajdebug.model import (
    Dependency,
    ErrorEvent,
    ErrorInfo,
    Run,
    StageChange,
    Step,
)


def sample_run(run_id: str = "r1") -> Run:
    steps = (
        Step(
            "a",
            "plan",
            kind="llm",
            start_ns=1,
            end_ns=5,
            input={"q": "x"},
            output="plan text",
            attributes={"model": "m"},
        ),
        Step(
            "b",
            "search",
            kind="tool",
            parent_id=None,
            start_ns=6,
            end_ns=9,
            deps=(Dependency("a", kind="data", origin="tracked", key="query"),),
            status="error",
            error=ErrorInfo("TimeoutError", "slow", error_id="e1"),
        ),
        Step(
            "c",
            "search",
            kind="tool",
            start_ns=10,
            end_ns=12,
            attempt=2,
            retry_of="b",
            deps=(Dependency("a", origin="inferred", confidence=0.5),),
            output=[1, 2],
            source_index=3,
        ),
    )
    errors = (
        ErrorEvent(
            "e1",
            "b",
            "TimeoutError",
            "slow",
            stages=(
                StageChange("occurred", "b", 8),
                StageChange("recovered", "c", 12, "attempt 2 succeeded"),
            ),
        ),
    )
    return Run(
        run_id,
        "demo",
        start_ns=0,
        end_ns=20,
        outcome="failure",
        failure_reason="bad answer",
        metadata={"task": "t"},
        steps=steps,
        errors=errors,
        continues="r0",
    )


class TestRoundTrip:
    def test_run_survives_records_round_trip(self) -> None:
        """A run encoded to records and rebuilt is equal to the original."""
        run = sample_run()
        b = RunBuilder()
        for rec in run_to_records(run):
            b.add(json.loads(json.dumps(rec)))
        assert [run] == b.runs()

    def test_file_round_trip_with_several_runs(self, tmp_path: Path) -> None:
        """Several runs written to one file read back in order and intact."""
        runs = [sample_run("r1"), sample_run("r2")]
        path = tmp_path / "runs.jsonl"
        write_jsonl(runs, path)
        result = read_jsonl(path)
        assert runs == result.runs
        assert result.problems == []

    def test_every_record_carries_the_version(self) -> None:
        """Every record has "v" and "t"."""
        for rec in run_to_records(sample_run()):
            assert rec["v"] == 1
            assert rec["t"] in {"run", "step", "error", "stage", "end"}

    def test_interleaved_records_of_two_runs(self) -> None:
        """Records of two runs interleaved line by line still build both runs."""
        a, b = run_to_records(sample_run("ra")), run_to_records(sample_run("rb"))
        mixed = [r for pair in zip(a, b, strict=True) for r in pair]
        result = read_lines([json.dumps(r) for r in mixed])
        assert {"ra", "rb"} == {r.run_id for r in result.runs}
        assert all(len(r.steps) == 3 for r in result.runs)


class TestPartialAndBadInput:
    def test_prefix_of_a_run_reads_as_incomplete(self) -> None:
        """A run whose end record was never written reads as incomplete with the steps written so far."""
        recs = run_to_records(sample_run())[:3]
        result = read_lines([json.dumps(r) for r in recs])
        (run,) = result.runs
        assert run.outcome == "incomplete"
        assert [s.step_id for s in run.steps] == ["a", "b"]

    def test_corrupt_line_names_file_and_line_and_keeps_the_rest(self, tmp_path: Path) -> None:
        """A corrupt line is reported with file and line; every good record still loads."""
        lines = [json.dumps(r) for r in run_to_records(sample_run())]
        lines.insert(2, '{"v": 1, "t": "step", "run_id": "r1", "step_id": "zz", "name": ')
        path = tmp_path / "bad.jsonl"
        path.write_text("\n".join(lines) + "\n")
        result = read_jsonl(path)
        assert len(result.problems) == 1
        assert f"{path}:3:" in str(result.problems[0])
        assert len(result.runs[0].steps) == 3
        assert result.runs[0].outcome == "failure"

    def test_record_missing_a_field_is_a_problem_naming_the_field(self) -> None:
        """A step record without step_id is reported with the missing field's name."""
        result = read_lines(['{"v": 1, "t": "step", "run_id": "r"}'], source="x.jsonl")
        assert "step_id" in str(result.problems[0])
        assert "x.jsonl:1" in str(result.problems[0])

    @pytest.mark.parametrize(
        ("record", "field"),
        [
            ({"start_ns": "soon"}, "start_ns"),
            ({"end_ns": "later"}, "end_ns"),
            ({"attempt": "two"}, "attempt"),
            ({"deps": "s1"}, "deps"),
            ({"deps": [{"kind": "data"}]}, "deps[0]"),
            ({"deps": [{"step_id": "a", "origin": "weird"}]}, "origin"),
            ({"error": "boom"}, "error"),
            ({"attributes": [1]}, "attributes"),
            ({"kind": "robot"}, "kind"),
        ],
    )
    def test_wrong_typed_field_is_a_problem_naming_field_and_line(
        self, record: dict[str, Any], field: str
    ) -> None:
        """A step record with a field of the wrong type is reported at its line, naming the field; others load."""
        good = {
            "v": 1,
            "t": "step",
            "run_id": "r",
            "step_id": "ok",
            "name": "fine",
            "start_ns": 1,
            "end_ns": 2,
        }
        bad = {**good, "step_id": "bad", **record}
        result = read_lines([json.dumps(good), json.dumps(bad)], source="x.jsonl")
        assert 1 == len(result.problems)
        assert "x.jsonl:2:" in str(result.problems[0])
        assert field in str(result.problems[0])
        assert ["ok"] == [s.step_id for s in result.runs[0].steps]

    def test_unknown_stage_is_a_problem(self) -> None:
        """A stage record with a stage name outside the lifecycle is reported."""
        result = read_lines(['{"v": 1, "t": "stage", "run_id": "r", "error_id": "e", "stage": "exploded"}'])
        assert "stage" in str(result.problems[0])

    def test_unknown_version_is_a_clear_error(self) -> None:
        """A record from a newer format version raises, naming the version and what we read."""
        with pytest.raises(UnsupportedVersionError, match=r"x.jsonl:1: format version 99 is not supported"):
            read_lines(['{"v": 99, "t": "run", "run_id": "r"}'], source="x.jsonl")

    def test_missing_version_is_a_problem(self) -> None:
        """A JSON object without "v" is not taken for a record."""
        result = read_lines(['{"t": "run"}'])
        assert isinstance(result.problems[0], FormatError)
        assert "format version" in str(result.problems[0])

    def test_open_step_without_end_reads_as_unfinished(self) -> None:
        """A step that started but never ended (process killed) reads with no end time."""
        recs = [
            {"v": 1, "t": "run", "run_id": "r", "name": "n", "start_ns": 1},
            {
                "v": 1,
                "t": "open",
                "run_id": "r",
                "step_id": "p",
                "name": "agent",
                "kind": "agent",
                "start_ns": 2,
            },
            {
                "v": 1,
                "t": "step",
                "run_id": "r",
                "step_id": "c",
                "name": "tool",
                "parent_id": "p",
                "start_ns": 3,
                "end_ns": 4,
            },
        ]
        (run,) = read_lines([json.dumps(r) for r in recs]).runs
        assert None is run.step("p").end_ns
        assert run.step("c").parent_id == "p"


class TestModel:
    def test_step_lookup_and_children(self) -> None:
        """Run.step finds by id; Run.children lists the steps under a parent."""
        run = sample_run()
        assert run.step("b").name == "search"
        assert [s.step_id for s in run.children(None)] == ["a", "b", "c"]
        with pytest.raises(KeyError, match="no step 'zz'"):
            run.step("zz")

    def test_error_stage_is_the_last_transition(self) -> None:
        """An error's stage is its latest lifecycle transition."""
        assert sample_run().error("e1").stage == "recovered"

    def test_duplicate_edges_keep_the_most_certain(self) -> None:
        """When a step has both a tracked and an inferred edge to one producer, the tracked one is kept."""
        recs = [
            {"v": 1, "t": "step", "run_id": "r", "step_id": "a", "name": "a", "start_ns": 1, "end_ns": 2},
            {
                "v": 1,
                "t": "step",
                "run_id": "r",
                "step_id": "b",
                "name": "b",
                "start_ns": 3,
                "end_ns": 4,
                "deps": [
                    {"step_id": "a", "kind": "data", "origin": "inferred", "confidence": 0.4},
                    {"step_id": "a", "kind": "data", "origin": "tracked"},
                ],
            },
        ]
        (run,) = read_lines([json.dumps(r) for r in recs]).runs
        assert (Dependency("a", "data", "tracked"),) == run.step("b").deps
