"""The model and the JSONL record format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trajdebug.core.jsonl import (
    FormatError,
    RunBuilder,
    UnsupportedVersionError,
    read_jsonl,
    read_lines,
    run_to_records,
    write_jsonl,
)
from trajdebug.core.model import (
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
            ({"deps": [{"step_id": "ok", "origin": "weird"}]}, "origin"),
            ({"error": 42}, "error"),
            ({"attributes": [1]}, "attributes"),
            ({"status": 7}, "status"),
        ],
    )
    def test_wrong_typed_field_is_a_problem_and_the_step_is_kept(self, record: dict[str, Any], field: str) -> None:
        """A step record with a field of the wrong type is reported at its line, naming the field; the step
        itself is kept with that field at its default, and the other steps load."""
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
        if field == "status":
            assert [] == result.problems
            assert "7" == result.runs[0].step("bad").attributes["recorded_status"]
        else:
            assert 1 == len(result.problems)
            assert "x.jsonl:2:" in str(result.problems[0])
            assert field in str(result.problems[0])
        assert {"ok", "bad"} == {s.step_id for s in result.runs[0].steps}

    @pytest.mark.parametrize(
        ("kind", "read_as"),
        [("embedding", "other"), ("reranker", "other"), ("chain", "other"), ("LLM", "llm"), ("Tool", "tool")],
    )
    def test_a_kind_outside_the_built_ins_reads_as_other_with_the_original_kept(self, kind: str, read_as: str) -> None:
        """Unknown kinds never drop a step: they read as `other` (a built-in in another case as that built-in),
        with the kind as recorded in the `recorded_kind` attribute, and no problem."""
        rec = {"v": 1, "t": "step", "run_id": "r", "step_id": "s", "name": "n", "kind": kind, "start_ns": 1}
        result = read_lines([json.dumps(rec)])
        (step,) = result.runs[0].steps
        assert (read_as, kind) == (step.kind, step.attributes["recorded_kind"])
        assert [] == result.problems

    def test_a_string_version_and_a_bom_are_read(self) -> None:
        """`"v": "1"` reads as version 1, and a UTF-8 byte order mark before the first record is ignored."""
        lines = [
            b'\xef\xbb\xbf{"v": "1", "t": "run", "run_id": "r", "name": "n", "start_ns": 1}',
            b'{"v": 1.0, "t": "step", "run_id": "r", "step_id": "s", "name": "x", "start_ns": 2}',
        ]
        result = read_lines(lines, source="bom.jsonl")
        assert [] == result.problems
        assert ("n", ["s"]) == (result.runs[0].name, [s.step_id for s in result.runs[0].steps])

    def test_duplicate_step_ids_are_reported_and_the_first_is_kept(self) -> None:
        """Two step records with one id do not silently overwrite each other: the first stays, the second is named."""
        first = {"v": 1, "t": "step", "run_id": "r", "step_id": "s", "name": "first", "start_ns": 1}
        second = {**first, "name": "second"}
        result = read_lines([json.dumps(first), json.dumps(second)], source="d.jsonl")
        assert ["first"] == [s.name for s in result.runs[0].steps]
        assert 1 == len(result.problems)
        assert "d.jsonl:2:" in str(result.problems[0]) and "duplicate step id 's'" in str(result.problems[0])

    def test_dangling_dependencies_and_parent_cycles_are_reported_not_fatal(self) -> None:
        """An edge to a missing step and a parent cycle are each one problem naming the run; every step loads."""
        recs = [
            {"v": 1, "t": "step", "run_id": "r", "step_id": "a", "name": "a", "start_ns": 1, "parent_id": "b"},
            {"v": 1, "t": "step", "run_id": "r", "step_id": "b", "name": "b", "start_ns": 2, "parent_id": "a"},
            {"v": 1, "t": "step", "run_id": "r", "step_id": "c", "name": "c", "start_ns": 3, "deps": [{"step_id": "gone"}]},
        ]
        result = read_lines([json.dumps(r) for r in recs])
        assert ["a", "b", "c"] == [s.step_id for s in result.runs[0].steps]
        text = [str(p) for p in result.problems]
        assert 2 == len(text)
        assert any("'gone', which is not in the run" in t for t in text)
        assert any("parent cycle" in t for t in text)

    def test_a_line_nested_100k_deep_is_one_problem(self) -> None:
        """A 100,000-deep JSON line is reported as a problem at its line; the next record loads."""
        deep = '{"v": 1, "t": "step", "run_id": "r", "step_id": "d", "input": ' + "[" * 100_000 + "]" * 100_000 + "}"
        ok = json.dumps({"v": 1, "t": "step", "run_id": "r", "step_id": "ok", "name": "ok", "start_ns": 1})
        result = read_lines([deep, ok], source="deep.jsonl")
        assert ["ok"] == [s.step_id for s in result.runs[0].steps]
        assert 1 == len(result.problems) and "deep.jsonl:1:" in str(result.problems[0])

    def test_unknown_stage_is_a_problem(self) -> None:
        """A stage record with a stage name outside the lifecycle is reported."""
        result = read_lines(['{"v": 1, "t": "stage", "run_id": "r", "error_id": "e", "stage": "exploded"}'])
        assert "stage" in str(result.problems[0])

    def test_a_newer_version_is_one_problem_and_the_rest_loads(self) -> None:
        """Records of a newer format version are skipped with one problem naming the version; older ones load."""
        lines = [
            '{"v": 99, "t": "run", "run_id": "new"}',
            '{"v": 99, "t": "step", "run_id": "new", "step_id": "x"}',
            '{"v": 1, "t": "run", "run_id": "old", "name": "kept", "start_ns": 1}',
        ]
        result = read_lines(lines, source="x.jsonl")
        assert ["old"] == [r.run_id for r in result.runs]
        assert 1 == len(result.problems)
        assert isinstance(result.problems[0], UnsupportedVersionError)
        assert str(result.problems[0]).startswith("x.jsonl:1: format version 99 is newer")

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
