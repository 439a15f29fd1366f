"""Tests for the multi-agent transcript importer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from trajdebug.core.jsonl import FormatError
from trajdebug.sources.formats import import_path, sniff
from trajdebug.sources.formats.transcript import looks_like_transcript, read_transcript


CHAT = [
    {"role": "user", "content": "How many rows does data.csv have? Answer with a number."},
    {
        "role": "assistant",
        "name": "Orchestrator",
        "content": "Coder, please write Python that counts the rows of data.csv.",
    },
    {
        "role": "assistant",
        "name": "Coder",
        "content": "```python\nimport pandas as pd\nprint(len(pd.read_csv('data.csv')))\n```",
    },
    {
        "role": "user",
        "name": "Computer_terminal",
        "content": "exitcode: 1 (execution failed)\nCode output: Traceback (most recent call last):\n"
        "  File \"<stdin>\", line 1, in <module>\nModuleNotFoundError: No module named 'pandas'",
    },
    {
        "role": "assistant",
        "name": "Coder",
        "content": "```python\nprint(sum(1 for _ in open('data.csv')) - 1)\n```",
    },
    {
        "role": "user",
        "name": "Computer_terminal",
        "content": "exitcode: 0 (execution succeeded)\nCode output: 41",
    },
    {
        "role": "assistant",
        "name": "Verifier",
        "content": "> exitcode: 0 (execution succeeded)\nThe count excludes the header line. @Orchestrator the answer is 41.",
    },
    {"role": "assistant", "name": "Orchestrator", "content": "FINAL ANSWER: 41"},
]


def _write(tmp_path: Path, doc: Any, name: str = "chat.json") -> Path:
    f = tmp_path / name
    f.write_text(json.dumps(doc))
    return f


def _declared(step: Any) -> set[tuple[str, str]]:
    return {(d.step_id, d.kind) for d in step.deps if d.origin == "declared"}


class TestTranscript:
    """One step per message; edges from addressing, quoting, code -> result and turn order."""

    def test_steps_speakers_and_kinds(self, tmp_path: Path) -> None:
        """Each message is a step named after its speaker, who is its agent; execution results are tool steps."""
        [run] = read_transcript(
            _write(tmp_path, {"history": CHAT, "is_correct": False, "mistake_agent": "Coder"})
        ).runs
        s = run.steps
        assert [x.agent for x in s] == [
            "user",
            "Orchestrator",
            "Coder",
            "Computer_terminal",
            "Coder",
            "Computer_terminal",
            "Verifier",
            "Orchestrator",
        ]
        assert [x.kind for x in s] == ["input", "llm", "llm", "tool", "llm", "tool", "llm", "llm"]
        assert [x.source_index for x in s] == list(range(len(CHAT)))
        assert run.outcome == "failure"
        assert run.metadata["mistake_agent"] == "Coder"

    def test_addressing_code_results_quotes_and_turn_order(self, tmp_path: Path) -> None:
        """Addressed agents depend on the addressing message, results on the code, quotes on their source, each turn on the previous."""
        [run] = read_transcript(_write(tmp_path, CHAT)).runs
        s = [x.step_id for x in run.steps]
        steps = run.steps
        assert (s[1], "control") in _declared(steps[2])  # Orchestrator addressed Coder
        assert (s[2], "data") in _declared(steps[3])  # first result <- first code
        assert (s[4], "data") in _declared(steps[5])  # second result <- second code
        assert (s[5], "data") in _declared(steps[6])  # Verifier quotes the result
        assert (s[6], "control") in _declared(steps[7])  # @Orchestrator
        for i in range(1, len(steps)):
            [turn] = [d for d in steps[i].deps if d.step_id == s[i - 1] and d.origin == "inferred"]
            assert turn.kind == "context"
            assert turn.confidence < 1

    def test_failed_execution_is_an_error_recovered_by_the_next_turn(self, tmp_path: Path) -> None:
        """A failed execution result is an error (type from the traceback), recovered when the next agent turn reads it."""
        [run] = read_transcript(_write(tmp_path, CHAT)).runs
        [err] = run.errors
        assert (err.type, err.message) == ("ModuleNotFoundError", "No module named 'pandas'")
        assert [(c.stage, c.step_id) for c in err.stages] == [
            ("occurred", run.steps[3].step_id),
            ("recovered", run.steps[4].step_id),
        ]
        assert run.steps[3].status == "error"
        assert run.steps[5].status == "ok"

    def test_generic_names_are_not_addresses(self, tmp_path: Path) -> None:
        """The word 'assistant' in a message is not an address to an agent named assistant."""
        chat = [
            {"role": "user", "name": "user", "content": "hi"},
            {"role": "assistant", "name": "assistant", "content": "I am an assistant."},
            {"role": "user", "name": "user", "content": "The assistant said hi."},
            {"role": "assistant", "name": "assistant", "content": "yes"},
        ]
        [run] = read_transcript(_write(tmp_path, chat)).runs
        assert all(d.origin == "inferred" for st in run.steps for d in st.deps)


class TestDetection:
    """Telling transcripts from OpenAI logs."""

    def test_sniff(self, tmp_path: Path) -> None:
        """Named speakers taking turns are a transcript; a log with tool calls is an OpenAI log."""
        assert sniff(_write(tmp_path, {"history": CHAT}, "t.json")) == "transcript"
        assert looks_like_transcript(_write(tmp_path, CHAT, "u.json"))
        log = [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]},
        ]
        assert sniff(_write(tmp_path, log, "o.json")) == "openai"
        result = import_path(_write(tmp_path, CHAT, "v.json"), "transcript")
        assert len(result.runs[0].steps) == len(CHAT)


class TestMalformed:
    """Malformed transcripts give clear errors."""

    def test_bad_message_is_a_problem_and_the_rest_loads(self, tmp_path: Path) -> None:
        """A message that is not an object is a problem naming the file and message; the others load."""
        f = _write(tmp_path, [*CHAT[:2], "oops", *CHAT[2:]])
        result = read_transcript(f)
        assert [str(p) for p in result.problems] == [f"{f}:3: message 3: expected an object, got str"]
        assert len(result.runs[0].steps) == len(CHAT)

    def test_nothing_readable_raises(self, tmp_path: Path) -> None:
        """An object without a transcript raises a FormatError naming the file and the keys looked for."""
        with pytest.raises(
            FormatError,
            match=r"x\.json: no run could be read; first problem: object has none of the keys history, messages",
        ):
            read_transcript(_write(tmp_path, {"turns": 3}, "x.json"))


def test_transcript_run_fields_import_into_a_store_as_docs_importers_says(tmp_path: Path) -> None:
    """A JSON list of transcript objects imports into a SQLite store as one run each, with `name` as the run's name
    (else the file's stem), `outcome` and `failure_reason` as its outcome and failure, `task` as metadata, and a
    user-role speaker who opens it as an input step; docs/importers.md states each of these for transcripts (newuser65)."""
    from click.testing import CliRunner

    import trajdebug
    from trajdebug.cli import cli

    chat = [
        {"role": "user", "name": "Admin", "content": "Phoenix closes at 16:00. Cut-off in UTC for July?"},
        {"role": "assistant", "name": "TimezoneExpert", "content": "Phoenix is on MST all year: UTC-7."},
        {"role": "assistant", "name": "Planner", "content": "Coder, please convert 16:00 at UTC-7."},
    ]
    runs = [
        {"name": "cutoff-groupchat", "id": "chat-phoenix", "task": "Phoenix cut-off", "outcome": "failure",
         "failure_reason": "answered 22:00 UTC, expected 23:00", "messages": chat},
        {"id": "chat-denver", "outcome": "success", "messages": chat},
    ]  # fmt: skip
    src = tmp_path / "chats.json"
    src.write_text(json.dumps(runs), encoding="utf-8")
    db = tmp_path / "runs.db"
    assert CliRunner().invoke(cli, ["import", str(src), "--from", "transcript", "-o", str(db)]).exit_code == 0
    got = {r.run_id: r for r in trajdebug.load_runs(str(db))}
    assert set(got) == {"chat-phoenix", "chat-denver"}
    failed, passed = got["chat-phoenix"], got["chat-denver"]
    assert (failed.name, failed.outcome, failed.failure_reason) == (
        "cutoff-groupchat", "failure", "answered 22:00 UTC, expected 23:00",
    )  # fmt: skip
    assert failed.metadata["task"] == "Phoenix cut-off"
    assert (passed.name, passed.outcome) == ("chats", "success")
    assert [s.kind for s in failed.steps] == ["input", "llm", "llm"]
    doc = (Path(__file__).parents[1] / "docs" / "importers.md").read_text(encoding="utf-8")
    section = doc[doc.index("## Multi-agent transcripts") : doc.index("## Export")]
    for said in ("`name` names the run (else the", "`outcome` marks it failed", "`failure_reason` is the failure",
                 "`task` its", "A JSON list of such objects", 'the person giving the task) is the run\'s input',
                 "agents recorded in the user role included"):
        assert said in " ".join(section.split()), said


def test_the_user_role_speaker_who_opens_a_transcript_is_its_input(tmp_path: Path) -> None:
    """The user-role speaker who opens a transcript (the person giving the task) is an input step in all its
    messages, as an OpenAI log's user messages are; a user-role speaker in a chat an agent
    opened is an agent, an llm step (newuser65)."""
    opened_by_admin = [
        {"role": "user", "name": "Admin", "content": "Phoenix closes at 16:00 local. Cut-off in UTC for July?"},
        {"role": "assistant", "name": "TimezoneExpert", "content": "Phoenix is on MDT in July: UTC-6."},
        {"role": "assistant", "name": "Planner", "content": "So the cut-off is 22:00 UTC."},
        {"role": "user", "name": "Admin", "content": "Thanks, that is what I needed."},
    ]
    p = tmp_path / "admin.json"
    p.write_text(json.dumps({"outcome": "failure", "messages": opened_by_admin}), encoding="utf-8")
    [run] = read_transcript(p).runs
    assert [s.kind for s in run.steps] == ["input", "llm", "llm", "input"]
    opened_by_agent = [
        {"role": "assistant", "name": "DataAnalysis_Expert", "content": "Plan: count the rows, then verify."},
        {"role": "user", "name": "Verification_Expert", "content": "I verified it: 42 rows."},
    ]
    q = tmp_path / "agents.json"
    q.write_text(json.dumps(opened_by_agent), encoding="utf-8")
    [chat] = read_transcript(q).runs
    assert [s.kind for s in chat.steps] == ["llm", "llm"]
