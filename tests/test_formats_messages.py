"""Tests for the OpenAI-style message-log importer, on real tau-bench runs and small logs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trajdebug.core.jsonl import FormatError, read_jsonl, write_jsonl
from trajdebug.sources.formats import import_path, sniff
from trajdebug.sources.formats.messages import read_messages


LOG = [
    {"role": "system", "content": "You are a retail agent."},
    {"role": "user", "content": "Cancel order #W1, I am ana."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "find_user", "arguments": '{"name": "ana"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "Error: user not found"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c2", "type": "function", "function": {"name": "cancel", "arguments": '{"order": "#W1"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c2", "name": "cancel", "content": '{"status": "cancelled"}'},
    {"role": "assistant", "content": "Done, #W1 is cancelled."},
]


def _write(tmp_path: Path, doc: Any, name: str = "log.json") -> Path:
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


class TestStructure:
    """One step per message, with edges from the log's own structure."""

    def test_one_step_per_message_with_kinds(self, tmp_path: Path) -> None:
        """Each message is a step in order, its kind from its role, its position kept as source_index."""
        [run] = read_messages(_write(tmp_path, LOG)).runs
        assert [s.kind for s in run.steps] == ["input", "input", "llm", "tool", "llm", "tool", "llm"]
        assert [s.source_index for s in run.steps] == list(range(len(LOG)))
        assert [s.name for s in run.steps][3:6] == ["find_user", "assistant", "cancel"]
        assert run.steps[3].input == {"name": "ana"}
        assert run.steps[5].output == {"status": "cancelled"}
        assert run.steps[2].output["tool_calls"][0] == {
            "id": "c1",
            "name": "find_user",
            "arguments": {"name": "ana"},
        }

    def test_tool_result_depends_on_its_call_and_assistant_on_what_it_read(self, tmp_path: Path) -> None:
        """A tool result depends on its call by id; an assistant turn on the results and user turns since its last turn."""
        [run] = read_messages(_write(tmp_path, LOG)).runs
        s = run.steps

        def declared(i: int) -> set[str]:
            return {d.step_id for d in s[i].deps if d.origin == "declared"}

        assert declared(3) == {s[2].step_id}
        assert declared(5) == {s[4].step_id}
        assert declared(2) == {s[0].step_id, s[1].step_id}
        assert declared(4) == {s[3].step_id}
        turn = [d for d in s[4].deps if d.origin == "inferred" and d.step_id == s[2].step_id]
        assert turn
        assert turn[0].kind == "context"
        assert turn[0].confidence < 1

    def test_error_returned_as_data_is_an_error_recovered_by_the_next_turn(self, tmp_path: Path) -> None:
        """A tool result reading 'Error: ...' is an error that occurred at the tool and was recovered at the next assistant turn."""
        [run] = read_messages(_write(tmp_path, LOG)).runs
        [err] = run.errors
        tool, nxt = run.steps[3], run.steps[4]
        assert tool.status == "error"
        assert tool.error is not None
        assert tool.error.error_id == err.error_id
        assert err.message == "Error: user not found"
        assert err.attributes == {"reported": True}
        assert [(c.stage, c.step_id) for c in err.stages] == [
            ("occurred", tool.step_id),
            ("recovered", nxt.step_id),
        ]

    def test_object_shapes_and_jsonl(self, tmp_path: Path) -> None:
        """An object with messages/traj/history, and JSON lines of messages, each import as one run."""
        for key in ("messages", "traj", "history"):
            [run] = read_messages(_write(tmp_path, {key: LOG, "reward": 1.0}, f"{key}.json")).runs
            assert len(run.steps) == len(LOG)
            assert run.outcome == "success"
            assert run.metadata["reward"] == 1.0
        f = tmp_path / "lines.jsonl"
        f.write_text("\n".join(json.dumps(m) for m in LOG) + "\n")
        [run] = read_messages(f).runs
        assert len(run.steps) == len(LOG)
        assert run.run_id == "lines"

    def test_round_trips_through_the_trajdebug_format(self, tmp_path: Path) -> None:
        """An imported run written as trajdebug JSONL reads back unchanged (ids sort in message order)."""
        [run] = read_messages(_write(tmp_path, LOG)).runs
        out = tmp_path / "run.jsonl"
        write_jsonl([run], out)
        [back] = read_jsonl(out).runs
        assert [s.step_id for s in back.steps] == [s.step_id for s in run.steps]
        assert back.steps == run.steps
        assert back.errors == run.errors

    def test_assistant_turns_follow_the_chat_convention_and_nothing_is_inferred(self, tmp_path: Path) -> None:
        """Assistant turns are messages with parsed tool calls; the import states only the log's own edges."""
        [run] = read_messages(_write(tmp_path, LOG)).runs
        first, _, last = (s for s in run.steps if s.kind == "llm")
        assert first.output == {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "name": "find_user", "arguments": {"name": "ana"}}],
        }
        assert last.output == {"role": "assistant", "content": "Done, #W1 is cancelled.", "tool_calls": []}
        # Only declared edges and the turn-order context edges: no content-matched data edges.
        assert {(d.origin, d.kind) for s in run.steps for d in s.deps} == {
            ("declared", "data"),
            ("inferred", "context"),
        }


class TestMalformed:
    """Malformed messages give clear errors; valid ones still load."""

    def test_bad_message_is_a_problem_and_the_rest_loads(self, tmp_path: Path) -> None:
        """A message without a role, and one with numeric content, are problems naming the file and message."""
        log = [*LOG[:2], {"content": "who am I"}, {"role": "user", "content": 42}, *LOG[2:]]
        f = _write(tmp_path, log)
        result = read_messages(f)
        [run] = result.runs
        assert len(run.steps) == len(LOG)
        assert [str(p) for p in result.problems] == [
            f"{f}:3: message 3: lacks a string field 'role'",
            f"{f}:4: message 4: field 'content' must be a string, a list of parts or null, got int",
        ]
        assert [s.source_index for s in run.steps][:3] == [0, 1, 4]

    def test_bad_run_in_a_run_list(self, tmp_path: Path) -> None:
        """In a list of runs, a run whose traj is not a list is a problem naming the run; the others load."""
        f = _write(tmp_path, [{"task_id": 1, "traj": LOG}, {"task_id": 2, "traj": "oops"}])
        result = read_messages(f)
        assert [r.run_id for r in result.runs] == ["tau-1"]
        assert [str(p) for p in result.problems] == [f"{f}:2: run 2: 'traj' is not a list of messages"]

    def test_nothing_readable_raises(self, tmp_path: Path) -> None:
        """A file that is not JSON, or holds no message list, raises a FormatError naming it."""
        f = tmp_path / "x.json"
        f.write_text("{nope")
        with pytest.raises(FormatError, match=r"x\.json: not valid JSON"):
            read_messages(f)
        g = _write(tmp_path, {"steps": []}, "y.json")
        with pytest.raises(
            FormatError,
            match=r"y\.json: no run could be read; first problem: object has none of the keys messages, traj, history",
        ):
            read_messages(g)


@pytest.fixture(scope="module")
def tau_runs(tau_dir: Path) -> list[Any]:
    """The tau-bench runs (``../shared/data/agentrx-tau``), imported once for the module."""
    return import_path(tau_dir / "tau_dataset_failed.json").runs


class TestTauBench:
    """The 29 real failed tau-bench retail runs."""

    def test_all_runs_import_as_failures(self, tau_dir: Path) -> None:
        """Every run imports, named tau-<task_id>, outcome failure (reward 0), one step per message."""
        tau_runs_file = tau_dir / "tau_dataset_failed.json"
        raw = json.loads(tau_runs_file.read_text())
        assert sniff(tau_runs_file) == "openai"
        result = import_path(tau_runs_file)
        assert result.problems == []
        assert [r.run_id for r in result.runs] == [f"tau-{x['task_id']}" for x in raw]
        for run, x in zip(result.runs, raw, strict=True):
            assert run.outcome == "failure"
            assert run.failure_reason == "reward 0.0"
            assert len(run.steps) == len(x["traj"])
            # step s of the annotations is traj[s-1]: source_index + 1 == the message's own index
            assert all(
                s.source_index is not None and s.source_index + 1 == s.attributes["index"] for s in run.steps
            )

    def test_annotated_steps_are_found_by_source_index(self, tau_runs: list[Any], tau_dir: Path) -> None:
        """Every annotated failure step maps to an imported step of the annotated run."""
        truth = json.loads((tau_dir / "tau_ground_truth.json").read_text())
        runs = {r.run_id: r for r in tau_runs}
        for entry in truth:
            run = runs[f"tau-{entry['trajectory_id']}"]
            by_index = {s.source_index: s for s in run.steps}
            for failure in entry["failures"]:
                assert failure["step_number"] - 1 in by_index

    def test_tool_results_link_to_their_calls(self, tau_runs: list[Any]) -> None:
        """Every tool message depends (declared) on the assistant message that issued its tool_call_id."""
        for run in tau_runs:
            steps = run.step_map()
            for s in run.steps:
                if s.kind != "tool":
                    continue
                owners = [steps[d.step_id] for d in s.deps if d.origin == "declared"]
                assert len(owners) == 1
                assert owners[0].kind == "llm"
                assert s.attributes["tool_call_id"] in owners[0].attributes["tool_call_ids"]

    def test_runs_analyze_without_error(self, tau_runs: list[Any]) -> None:
        """Every imported tau-bench run goes through the analysis pipeline, and its report is JSON that reads
        back to the same run, with a failure and at least one ranked candidate."""
        from trajdebug.analysis import analyze

        for run in tau_runs:
            report = json.loads(json.dumps(analyze(run, top=3).to_dict()))
            assert report["run_id"] == run.run_id
            assert report["failures"]
            assert 1 <= len(report["root_causes"]) <= 3


class TestRegistry:
    """Third-party importers plug into import_path and sniffing."""

    def test_registered_importer_is_sniffed_and_used(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An importer added to the registry with a sniff function is detected and used; unknown files are refused."""
        from trajdebug.core.jsonl import ReadResult
        from trajdebug.sources.formats import IMPORTERS
        from trajdebug.sources.formats.messages import messages_to_run

        def read_chatlog(path: Path) -> ReadResult:
            lines = [ln.split(": ", 1) for ln in path.read_text().splitlines() if ln]
            run, problems = messages_to_run([{"role": r, "content": c} for r, c in lines], run_id=path.stem)
            return ReadResult([run], problems)

        read_chatlog.sniff = lambda p: p.suffix == ".chatlog"  # type: ignore[attr-defined]
        monkeypatch.setitem(IMPORTERS, "chatlog", read_chatlog)
        f = tmp_path / "talk.chatlog"
        f.write_text("user: hi\nassistant: hello\n")
        assert sniff(f) == "chatlog"
        [run] = import_path(f).runs
        assert [s.kind for s in run.steps] == ["input", "llm"]
        other = tmp_path / "notes.txt"
        other.write_text("just text")
        with pytest.raises(
            FormatError, match=r"notes\.txt: cannot tell the format; pass one of .*chatlog.*openai"
        ):
            import_path(other)


def test_message_log_run_fields_are_what_docs_importers_says(tmp_path: Path) -> None:
    """An OpenAI-style log imported into a SQLite store is named by its top-level `name` (else its file's stem,
    not `run_name` or `agent`), fails with its `failure_reason` as text, keeps `task` as metadata, and leaves its
    assistant turns' input empty; docs/importers.md states each of these (newuser65)."""
    from click.testing import CliRunner

    import trajdebug
    from trajdebug.cli import cli

    messages = [
        {"role": "user", "content": "I was charged twice for March."},
        {"role": "assistant", "content": "Let me check your February invoice."},
    ]
    (tmp_path / "named.json").write_text(json.dumps({
        "name": "billing-support", "id": "lena-march", "task": "duplicate charge", "outcome": "failure",
        "failure_reason": "refund refused", "messages": messages,
    }), encoding="utf-8")  # fmt: skip
    (tmp_path / "support_pass.json").write_text(json.dumps({
        "run_name": "billing-support", "agent": "billing-support", "outcome": "success", "messages": messages,
    }), encoding="utf-8")  # fmt: skip
    db = tmp_path / "runs.db"
    for f in ("named.json", "support_pass.json"):
        assert CliRunner().invoke(cli, ["import", str(tmp_path / f), "-o", str(db)]).exit_code == 0
    got = {r.outcome: r for r in trajdebug.load_runs(str(db))}
    failed, passed = got["failure"], got["success"]
    assert (failed.name, failed.failure_reason, failed.metadata["task"]) == (
        "billing-support", "refund refused", "duplicate charge",
    )  # fmt: skip
    assert passed.name == "support_pass" and passed.metadata["run_name"] == "billing-support"
    assert [s.input for s in failed.steps if s.kind == "llm"] == [None]
    doc = " ".join((Path(__file__).parents[1] / "docs" / "importers.md").read_text(encoding="utf-8").split())
    for said in ("the run's **name**, else `task <task_id>`, else the **file's stem**",
                 "`failure_reason` | with `outcome`, the failure's text", "`task` | metadata `task`",
                 "(`run_name`, `agent`: metadata only; they do not name the run)",
                 "there every message is a step of its own, and a turn's input is left empty"):
        assert said in doc, said
