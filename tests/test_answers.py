"""Answers stored with a run: `trajdebug.save_answer` on real stores, JSONL files and foreign traces."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import trajdebug
from trajdebug.answers import import_answers
from trajdebug.core.jsonl import RunBuilder, read_jsonl, write_jsonl
from trajdebug.core.model import Answer
from trajdebug.core.schema import answer_record
from trajdebug.sidefile import side_file
from trajdebug.sources.formats.export import export_otlp
from trajdebug.sources.load import SourceError, load_runs


@trajdebug.step(kind="tool")
def convert(amount: float) -> float:
    return amount * 1.0


@trajdebug.step(kind="output")
def reply(value: float) -> str:
    return f"{value:.2f} EUR"


def record(**where: object) -> str:
    with trajdebug.run("price", **where) as h:  # type: ignore[arg-type]
        reply(convert(100.0))
    return h.run_id


def step_ids(source: Path, rid: str) -> list[str]:
    return [s.step_id for s in load_runs(source, run_id=rid)[0].steps]


@pytest.mark.parametrize("kind", ["store", "jsonl"])
def test_an_answer_saved_to_a_store_or_file_reads_back_with_the_run(tmp_path: Path, kind: str) -> None:
    """save_answer appends to the run's own store or JSONL file; the reader fills Run.answers."""
    src = tmp_path / ("runs.db" if kind == "store" else "runs.jsonl")
    rid = record(**({"store": src} if kind == "store" else {"path": src}))
    first = step_ids(src, rid)[0]
    stored = trajdebug.save_answer(src, rid[:8], Answer(first, False, "person", reason="rate never applied"))
    [run] = load_runs(src, run_id=rid)
    assert [(a.step_id, a.correct, a.by, a.reason) for a in run.answers] == [
        (first, False, "person", "rate never applied")
    ]
    assert stored.at_ns > 0 and run.answers[0].at_ns == stored.at_ns


@pytest.mark.parametrize("kind", ["store", "jsonl"])
def test_what_an_answer_was_asked_as_is_stored_with_it(tmp_path: Path, kind: str) -> None:
    """`Answer.asked` (an audit of a proof, here) reads back as written; the record that takes the answer back
    carries none; a value that is not a string reads as not said, with a problem."""
    from trajdebug.answers import forget_answers
    from trajdebug.core.schema import decode_answer

    src = tmp_path / ("runs.db" if kind == "store" else "runs.jsonl")
    rid = record(**({"store": src} if kind == "store" else {"path": src}))
    first, second = step_ids(src, rid)[:2]
    trajdebug.save_answer(src, rid, Answer(first, False, "person", asked=f"audit:{second}"))
    [run] = load_runs(src, run_id=rid)
    assert [a.asked for a in run.answers] == [f"audit:{second}"]
    forget_answers(src, rid, steps=[first])
    assert load_runs(src, run_id=rid)[0].answers == ()
    withdrawn = Answer(first, None, "person", withdrawn=True, asked="question")
    assert "asked" not in answer_record(rid, withdrawn)
    problems: list[str] = []
    read = decode_answer({"step_id": first, "by": "person", "correct": True, "asked": 3}, problems)
    assert read is not None and read.asked is None and "field 'asked'" in problems[0]


def test_the_latest_answer_per_step_and_answerer_wins(tmp_path: Path) -> None:
    """A second answer by the same answerer replaces the first; another answerer's is kept beside it."""
    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    sid = step_ids(src, rid)[0]
    trajdebug.save_answer(src, rid, Answer(sid, True, "person"))
    trajdebug.save_answer(src, rid, Answer(sid, None, "model:fake"))
    trajdebug.save_answer(src, rid, Answer(sid, False, "person"))
    [run] = load_runs(src, run_id=rid)
    assert sorted((a.by, a.correct) for a in run.answers) == [("model:fake", None), ("person", False)]


def test_a_foreign_trace_gets_a_side_file_and_is_never_rewritten(tmp_path: Path) -> None:
    """Answers to a run of an OTLP file go to SOURCE.answers.jsonl; reading the OTLP file applies them."""
    jsonl = tmp_path / "runs.jsonl"
    record(path=jsonl)
    otlp = tmp_path / "trace.json"
    otlp.write_text(json.dumps(export_otlp(read_jsonl(jsonl).runs)))
    before = otlp.read_bytes()
    [run] = load_runs(otlp)
    sid = run.steps[-1].step_id
    trajdebug.save_answer(otlp, run.run_id, Answer(sid, True, "person"))
    assert otlp.read_bytes() == before and side_file(otlp).is_file()
    [again] = load_runs(otlp)
    assert [(a.step_id, a.correct) for a in again.answers] == [(sid, True)]


def test_a_reason_is_redacted_before_it_is_written(tmp_path: Path) -> None:
    """A secret in an answer's reason never reaches the file."""
    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    trajdebug.save_answer(src, rid, Answer(step_ids(src, rid)[0], False, "person", reason=f"it leaked {secret}"))
    assert secret not in src.read_text()
    assert "it leaked" in load_runs(src, run_id=rid)[0].answers[0].reason  # type: ignore[operator]


def test_answers_are_exported_with_the_run(tmp_path: Path) -> None:
    """Writing a run (export, import into a store) carries its answers."""
    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    trajdebug.save_answer(src, rid, Answer(step_ids(src, rid)[0], False, "check:rate"))
    out = tmp_path / "out.jsonl"
    write_jsonl(load_runs(src), out)
    assert [a.by for a in read_jsonl(out).runs[0].answers] == ["check:rate"]


def test_a_bad_answer_field_is_named_and_the_rest_reads() -> None:
    """An answer record with a wrong 'correct' reads as don't know with a problem naming the field;
    one without 'by' is skipped with a problem."""
    b = RunBuilder("mem")
    rec = answer_record("r1", Answer("s1", None, "person"))
    b.add({**rec, "correct": 3}, line=1)
    b.add({**rec, "by": ""}, line=2)
    b.add({**rec, "step_id": "s2", "correct": "no"}, line=3)
    [run] = b.runs()
    assert sorted((a.step_id, a.correct) for a in run.answers) == [("s1", None), ("s2", False)]
    messages = [str(p) for p in b.problems]
    assert any("'correct'" in m and "mem:1:" in m for m in messages)
    assert any("'by'" in m and "mem:2:" in m for m in messages)


def test_an_unknown_run_is_a_one_line_error(tmp_path: Path) -> None:
    """save_answer names the source and the run when the run is not there."""
    src = tmp_path / "runs.jsonl"
    record(path=src)
    with pytest.raises(SourceError, match="no run 'zzz'"):
        trajdebug.save_answer(src, "zzz", Answer("s", True, "person"))


def test_a_downloaded_answers_file_is_imported_into_the_source(tmp_path: Path) -> None:
    """import_answers stores the answer records of a file (the report's download) with the runs."""
    db = tmp_path / "runs.db"
    rid = record(store=db)
    sid = step_ids(db, rid)[0]
    download = tmp_path / "answers.jsonl"
    download.write_text(json.dumps(answer_record(rid, Answer(sid, False, "person", at_ns=5))) + "\n")
    stored = import_answers(db, download)
    assert [(a.step_id, a.correct) for a in stored] == [(sid, False)]
    assert [a.correct for a in load_runs(db, run_id=rid)[0].answers] == [False]


def test_show_lists_the_answers_in_text_and_json(tmp_path: Path) -> None:
    """`trajdebug show` prints each answer (judgement, step, who, why); --json carries them."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    sid = step_ids(src, rid)[0]
    trajdebug.save_answer(src, rid, Answer(sid, False, "person", reason="the rate was never applied"))
    text = CliRunner().invoke(cli, ["show", str(src), "--run", rid]).output
    assert "answers (1)" in text and "wrong" in text and "the rate was never applied" in text
    data = json.loads(CliRunner().invoke(cli, ["show", str(src), "--run", rid, "--json"]).output)
    assert data["runs"][0]["answers"][0]["correct"] is False


def test_the_answers_command_imports_a_download_and_lists_it(tmp_path: Path) -> None:
    """`trajdebug answers import SOURCE FILE` stores the records; `answers list --json` shows them."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    sid = step_ids(src, rid)[0]
    download = tmp_path / "answers.jsonl"
    download.write_text(json.dumps(answer_record(rid, Answer(sid, True, "person", at_ns=7))) + "\n")
    res = CliRunner().invoke(cli, ["answers", "import", str(src), str(download)])
    assert res.exit_code == 0 and "1 answer(s) stored" in res.output
    data = json.loads(CliRunner().invoke(cli, ["answers", "list", str(src), "--json"]).output)
    assert [(a["step_id"], a["correct"]) for a in data["runs"][0]["answers"]] == [(sid, True)]


def test_answers_survive_an_otlp_export_and_import(tmp_path: Path) -> None:
    """`trajdebug export --to otlp` writes each answer as a trajdebug.answer event on its step's span;
    importing the export gives the run its answers back."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    sid = step_ids(src, rid)[-1]
    trajdebug.save_answer(src, rid, Answer(sid, False, "person", reason="rate never applied"))
    trajdebug.save_answer(src, rid, Answer(sid, None, "model:fake"))
    out = tmp_path / "spans.json"
    res = CliRunner().invoke(cli, ["export", str(src), "--to", "otlp", "-o", str(out)])
    assert res.exit_code == 0, res.output
    [back] = load_runs(out)
    assert sorted(((a.by, a.step_id, a.correct, a.reason) for a in back.answers), key=str) == [
        ("model:fake", sid, None, None),
        ("person", sid, False, "rate never applied"),
    ]


@pytest.mark.parametrize("kind", ["store", "jsonl", "otlp"])
def test_forget_takes_back_one_steps_answers_and_the_rest_stay(tmp_path: Path, kind: str) -> None:
    """`answers forget --step` withdraws that step's answers (every reader leaves them out); others stay."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    src = tmp_path / {"store": "runs.db", "jsonl": "runs.jsonl", "otlp": "runs.jsonl"}[kind]
    rid = record(**({"store": src} if kind == "store" else {"path": src}))
    if kind == "otlp":
        otlp = tmp_path / "trace.json"
        otlp.write_text(json.dumps(export_otlp(read_jsonl(src).runs)))
        src = otlp
        rid = load_runs(src)[0].run_id
    first, second = step_ids(src, rid)[:2]
    trajdebug.save_answer(src, rid, Answer(first, True, "person"))
    trajdebug.save_answer(src, rid, Answer(second, False, "person"))
    res = CliRunner().invoke(cli, ["answers", "forget", str(src), "--run", rid[:8], "--step", second, "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["withdrawn"] == 1
    [run] = load_runs(src, run_id=rid)
    assert [(a.step_id, a.correct) for a in run.answers] == [(first, True)]
    trajdebug.save_answer(src, rid, Answer(second, True, "person"))  # answered again after forgetting
    [run] = load_runs(src, run_id=rid)
    assert sorted((a.step_id, a.correct) for a in run.answers) == sorted([(first, True), (second, True)])


def test_forget_takes_the_short_id_the_commands_show(tmp_path: Path) -> None:
    """`answers forget --step '#abc123'` (the last characters of a step's id, as `show` and `--ask` print it)
    withdraws that step's answers; a suffix of fewer than 4 characters names none."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    first, second = step_ids(src, rid)[:2]
    trajdebug.save_answer(src, rid, Answer(first, True, "person"))
    trajdebug.save_answer(src, rid, Answer(second, False, "person"))
    short = CliRunner().invoke(cli, ["answers", "forget", str(src), "--run", rid[:8], "--step", second[-3:], "--json"])
    assert json.loads(short.output)["withdrawn"] == 0
    res = CliRunner().invoke(cli, ["answers", "forget", str(src), "--run", rid[:8], "--step", "#" + second[-6:], "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["withdrawn"] == 1
    [run] = load_runs(src, run_id=rid)
    assert [(a.step_id, a.correct) for a in run.answers] == [(first, True)]


def test_forgetting_the_answers_takes_back_the_label_they_proved_but_not_a_persons(tmp_path: Path) -> None:
    """A label the answers proved (by="answers") goes with them; a label a person gave stays."""
    from trajdebug.labels import forget, label, labels

    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    first, second = step_ids(src, rid)[:2]
    trajdebug.save_answer(src, rid, Answer(first, False, "person"))
    label(src, rid, first, by="answers")
    gone, unlabelled = forget(src, rid)
    assert [a.step_id for a in gone] == [first] and unlabelled
    assert labels(src) == {} and load_runs(src, run_id=rid)[0].answers == ()
    trajdebug.save_answer(src, rid, Answer(first, False, "person"))
    label(src, rid, second)
    assert forget(src, rid)[1] is False
    assert labels(src) == {rid: second}


def test_a_bare_source_after_answers_lists_its_answers(tmp_path: Path) -> None:
    """`trajdebug answers SOURCE` (no subcommand, as a new user types it) lists, as `answers list SOURCE` does."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    trajdebug.save_answer(src, rid, Answer(step_ids(src, rid)[0], False, "person", reason="rate never applied"))
    bare = CliRunner().invoke(cli, ["answers", str(src), "--json"])
    assert bare.exit_code == 0, bare.output
    listed = CliRunner().invoke(cli, ["answers", "list", str(src), "--json"])
    assert bare.output == listed.output and "rate never applied" in bare.output


@pytest.mark.parametrize("kind", ["store", "jsonl", "otlp"])
def test_a_three_valued_answer_keeps_what_it_said_of_the_inputs_through_every_store(tmp_path: Path, kind: str) -> None:
    """``admissible`` of a wrong answer survives a store, a JSONL file and an OTLP export; a two-valued
    answer's record has no such field, so files written before read as they did."""
    from click.testing import CliRunner

    from trajdebug.cli import cli

    src = tmp_path / ("runs.db" if kind == "store" else "runs.jsonl")
    rid = record(**({"store": src} if kind == "store" else {"path": src}))
    first, last = step_ids(src, rid)[0], step_ids(src, rid)[-1]
    trajdebug.save_answer(src, rid, Answer(first, False, "person", admissible=True))
    trajdebug.save_answer(src, rid, Answer(last, False, "check:reply", admissible=False))
    trajdebug.save_answer(src, rid, Answer(last, False, "person"))
    if kind == "otlp":
        out = tmp_path / "spans.json"
        assert CliRunner().invoke(cli, ["export", str(src), "--to", "otlp", "-o", str(out)]).exit_code == 0
        src = out
    [run] = load_runs(src)
    assert sorted((a.step_id == first, a.by, a.admissible) for a in run.answers) == [
        (False, "check:reply", False), (False, "person", None), (True, "person", True),
    ]
    assert "admissible" not in answer_record(rid, Answer(first, False, "person"))


def test_admissible_is_read_only_from_a_wrong_answer_and_a_bad_value_is_named() -> None:
    """A correct answer's ``admissible`` is dropped; a value other than true, false or null reads as not said, with a problem."""
    b = RunBuilder("mem")
    rec = answer_record("r1", Answer("s1", False, "person"))
    b.add({**rec, "admissible": True}, line=1)
    b.add({**rec, "step_id": "s2", "correct": True, "admissible": True}, line=2)
    b.add({**rec, "step_id": "s3", "admissible": "yes"}, line=3)
    [run] = b.runs()
    assert sorted((a.step_id, a.admissible) for a in run.answers) == [("s1", True), ("s2", None), ("s3", None)]
    assert any("'admissible'" in str(p) and "mem:3:" in str(p) for p in b.problems)


def test_forget_refuses_a_short_id_that_names_several_steps_and_names_them(tmp_path: Path) -> None:
    """`answers forget --step` with a suffix two steps' ids end in withdraws nothing and lists both ids."""
    from click.testing import CliRunner

    from trajdebug.cli import cli
    from trajdebug.core.model import Run, Step

    src = tmp_path / "runs.jsonl"
    steps = (Step("a" * 28 + "0001", "lookup", "tool", output=1), Step("a" * 27 + "10001", "merge", "tool", output=2))
    write_jsonl([Run("r" * 32, "task", 0, 9, "failure", steps=steps)], src)
    for s in steps:
        trajdebug.save_answer(src, "r" * 32, Answer(s.step_id, False, "person"))
    res = CliRunner().invoke(cli, ["answers", "forget", str(src), "--run", "rrrr", "--step", "0001", "--json"])
    assert res.exit_code != 0
    assert steps[0].step_id in res.output and steps[1].step_id in res.output
    [run] = load_runs(src)
    assert len(run.answers) == 2
    res = CliRunner().invoke(cli, ["answers", "forget", str(src), "--run", "rrrr", "--step", steps[1].step_id, "--json"])
    assert json.loads(res.output)["withdrawn"] == 1


def test_a_file_with_answers_appended_reads_the_same_for_every_other_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`analyze --ask` appends its answers to the recorded file itself: the runs read back the same (steps, ids,
    edges, outcome), and every command that does not show answers prints what it printed before; `show` and
    `export` add the answers and nothing else, `analyze` moves the candidates but keeps the ranker's scores."""
    import dataclasses
    import shutil

    from click.testing import CliRunner

    from trajdebug.cli import cli

    plain, asked = tmp_path / "plain", tmp_path / "asked"
    plain.mkdir()
    asked.mkdir()
    with trajdebug.run("price", path=plain / "runs.jsonl") as h:
        reply(convert(convert(100.0)))
        h.fail("quoted 100.00 EUR, the till says 108.00")
    shutil.copy(plain / "runs.jsonl", asked / "runs.jsonl")
    ids = step_ids(asked / "runs.jsonl", h.run_id)
    keys = "\n".join(["n", "y", "i", "o", "q"]) + "\n"
    res = CliRunner().invoke(cli, ["analyze", str(asked / "runs.jsonl"), "--ask"], input=keys)
    assert res.exit_code == 0
    trajdebug.save_answer(asked / "runs.jsonl", h.run_id, Answer(ids[0], None, "model:fake"))
    assert '"t":"answer"' in (asked / "runs.jsonl").read_text()
    [before], [after] = load_runs(plain / "runs.jsonl"), load_runs(asked / "runs.jsonl")
    assert len(after.answers) >= 2 and dataclasses.replace(after, answers=()) == before

    def output(where: Path, *args: str) -> str:
        monkeypatch.chdir(where)  # the same relative path in both: outputs that name it compare
        result = CliRunner().invoke(cli, [args[0], "runs.jsonl", *args[1:]])
        # `fleet` says how long it took ("0.1 s on 2 workers"): the one part that may differ between two calls.
        return re.sub(r"\d+\.\d s on", "_ s on", f"exit {result.exit_code}\n{result.output}")

    for command in (["runs"], ["runs", "--json"], ["errors"], ["errors", "--json"], ["lint"], ["fleet"]):
        assert output(asked, *command) == output(plain, *command), command

    def data(where: Path, *args: str) -> dict:
        exit_line, _, text = output(where, *args).partition("\n")
        assert exit_line == "exit 0", text
        return json.loads(text)

    shown = [data(d, "show", "--json")["runs"][0] for d in (plain, asked)]
    assert shown[1].pop("answers") and shown[0].pop("answers", []) == [] and shown[0] == shown[1]
    spans = [data(d, "export")["resourceSpans"][0]["scopeSpans"][0]["spans"] for d in (plain, asked)]
    told = 0
    for span in [*spans[0], *spans[1]]:
        events = span.pop("events", [])
        span["events"] = [e for e in events if e["name"] != "trajdebug.answer"]
        told += len(events) - len(span["events"])
    assert told == len(after.answers) and spans[0] == spans[1]
    ranked = [data(d, "analyze", "--json")["runs"][0] for d in (plain, asked)]
    scores = [sorted((c["step_id"], c["score"], c["confidence"]) for c in r["root_causes"]) for r in ranked]
    assert scores[0] == scores[1] and ranked[0]["failures"] == ranked[1]["failures"]
