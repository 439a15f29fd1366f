"""Scores on runs and steps: the record, `trajdebug.score`, `trajdebug score`, on real stores, JSONL files and
foreign traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import trajdebug
from trajdebug.cli import cli
from trajdebug.core.jsonl import RunBuilder, read_jsonl, write_jsonl
from trajdebug.core.model import Score
from trajdebug.core.schema import make_score, parse_value, score_record
from trajdebug.sidefile import side_file
from trajdebug.sources.load import SourceError, load_runs
from trajdebug.store import Store


SECRET = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"


@trajdebug.step(kind="tool")
def parse_amount(text: str) -> float:
    return float(text.replace(".", "").replace(",", ""))


@trajdebug.step(kind="output")
def reply(value: float) -> str:
    return f"{value:.2f} EUR"


def record(**where: object) -> str:
    with trajdebug.run("refund", **where) as h:  # type: ignore[arg-type]
        reply(parse_amount("1.299,00"))
    return h.run_id


def the_run(source: Path, rid: str) -> trajdebug.Run:
    return load_runs(source, run_id=rid)[0]


# -- 1. the record ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"name": "", "value": 1}, "'name'"),
        ({"name": "a=b", "value": 1}, "'name'"),
        ({"name": "q", "value": float("nan")}, "'value'"),
        ({"name": "q", "value": [1, 2]}, "'value'"),
        ({"name": "q", "value": "  "}, "'value'"),
        ({"name": "q", "value": 1, "source": "robot"}, "'source'"),
        ({"name": "q", "value": 1, "by": 7}, "'by'"),
        ({"name": "q", "value": 1, "comment": 3}, "'comment'"),
    ],
)
def test_a_bad_field_is_refused_in_one_line_naming_it(fields: dict[str, object], named: str) -> None:
    """make_score refuses a missing or mistyped field with a one-line ValueError that names the field."""
    with pytest.raises(ValueError, match=named) as info:
        make_score(fields.pop("name"), fields.pop("value"), **fields)
    assert "\n" not in str(info.value)


def test_a_value_is_a_number_a_category_or_a_boolean() -> None:
    """A typed value reads as a boolean (true/false), a number (an integer stays one) or else a category."""
    assert [parse_value(t) for t in ("true", "FALSE", "3", "0.25", "-1e3", "off-topic")] == [
        True,
        False,
        3,
        0.25,
        -1000.0,
        "off-topic",
    ]


def test_score_records_read_back_every_one_kept_with_every_field(tmp_path: Path) -> None:
    """Score records read back into Run.scores in order, two of one name on one target both kept, every field
    as written; written out again (export to JSONL), they stay."""
    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    sid = the_run(src, rid).steps[0].step_id
    scores = [
        Score("helpfulness", 0.3, "human", "dan", "vague", None, 5),
        Score("helpfulness", 0.9, "llm", "model:gpt-4o", None, None, 6),
        Score("correct", False, "code", "check:amounts", None, sid, 7),
        Score("tone", "curt", "human", None, None, None, 8),
    ]
    with src.open("a") as fh:
        for s in scores:
            fh.write(json.dumps(score_record(rid, s)) + "\n")
    assert the_run(src, rid).scores == tuple(scores)
    out = tmp_path / "out.jsonl"
    write_jsonl(load_runs(src), out)
    assert read_jsonl(out).runs[0].scores == tuple(scores)


def test_a_bad_score_record_is_skipped_with_a_problem_naming_the_field() -> None:
    """A score record without a name is skipped with a problem naming 'name'; the run and its other scores read."""
    b = RunBuilder("t.jsonl")
    b.add({"v": 1, "t": "run", "run_id": "r1", "name": "x", "start_ns": 1}, 1)
    b.add({"v": 1, "t": "score", "run_id": "r1", "value": 1}, 2)
    b.add({"v": 1, "t": "score", "run_id": "r1", "name": "ok", "value": True}, 3)
    [run] = b.runs()
    assert [s.name for s in run.scores] == ["ok"]
    assert any("'name'" in str(p) for p in b.problems)


def test_a_store_keeps_scores_when_a_run_is_written_whole(tmp_path: Path) -> None:
    """Importing a run with scores into a store (Store.save_run) keeps them."""
    src = tmp_path / "runs.jsonl"
    rid = record(path=src)
    trajdebug.score("q", 2, store=src, run=rid)
    db = tmp_path / "copy.db"
    with Store(db) as st:
        st.save_run(the_run(src, rid))
    assert [(s.name, s.value) for s in the_run(db, rid).scores] == [("q", 2)]


# -- 2. ways in -------------------------------------------------------------------------------------


def test_score_is_public() -> None:
    """trajdebug.score and trajdebug.Score are in the package's __all__."""
    assert {"score", "Score"} <= set(trajdebug.__all__)
    assert trajdebug.score is not None and trajdebug.Score is Score


def test_while_recording_a_score_lands_on_the_current_step_or_the_run(tmp_path: Path) -> None:
    """Inside a step, trajdebug.score scores that step; outside any step (or step=None), the run."""
    db = tmp_path / "runs.db"
    with trajdebug.run("live", store=db) as h:
        with trajdebug.step("answer", kind="llm") as s:
            trajdebug.score("grounded", True, source="code", by="check:cites")
            trajdebug.score("whole", 1, step=None)
        trajdebug.score("helpfulness", 0.75, source="llm", by="model:judge", comment="fine")
    run = the_run(db, h.run_id)
    assert [(x.name, x.value, x.step_id) for x in run.scores] == [
        ("grounded", True, s.id),
        ("whole", 1, None),
        ("helpfulness", 0.75, None),
    ]
    assert run.scores[2].source == "llm" and run.scores[2].by == "model:judge" and run.scores[2].comment == "fine"


def test_outside_a_run_and_without_a_store_score_says_what_to_give() -> None:
    """With no run being recorded and no store, trajdebug.score refuses, naming the 'run' field."""
    with pytest.raises(ValueError, match="'run'"):
        trajdebug.score("q", 1)


@pytest.mark.parametrize("kind", ["store", "jsonl"])
def test_after_the_fact_a_score_lands_on_a_stored_run_or_its_step_by_name(tmp_path: Path, kind: str) -> None:
    """trajdebug.score(store=, run=prefix, step=name) appends to the run's store or file; the step is named by name."""
    src = tmp_path / ("runs.db" if kind == "store" else "runs.jsonl")
    rid = record(**({"store": src} if kind == "store" else {"path": src}))
    stored = trajdebug.score("correct", False, store=src, run=rid[:8], step="parse_amount", source="code")
    run = the_run(src, rid)
    sid = next(s.step_id for s in run.steps if s.name == "parse_amount")
    assert [(x.name, x.value, x.step_id) for x in run.scores] == [("correct", False, sid)]
    assert stored.at_ns > 0 and run.scores[0].at_ns == stored.at_ns


def test_a_missing_step_is_refused(tmp_path: Path) -> None:
    """A step the run does not have is a SourceError saying it matches no step; nothing is written."""
    db = tmp_path / "runs.db"
    rid = record(store=db)
    with pytest.raises(SourceError, match="matches no step"):
        trajdebug.score("q", 1, store=db, run=rid, step="nowhere")
    assert the_run(db, rid).scores == ()


def test_a_foreign_trace_gets_its_scores_in_the_side_file(tmp_path: Path) -> None:
    """A score on a run of an OTLP export goes to SOURCE.answers.jsonl, and reading the export carries it."""
    from trajdebug.sources.formats.export import export_otlp

    db = tmp_path / "runs.db"
    rid = record(store=db)
    otlp = tmp_path / "trace.json"
    otlp.write_text(json.dumps(export_otlp(load_runs(db))))
    before = otlp.read_bytes()
    trajdebug.score("tone", "curt", store=otlp, run=rid)
    assert otlp.read_bytes() == before and side_file(otlp).is_file()
    assert [(s.name, s.value) for s in the_run(otlp, rid).scores][-1] == ("tone", "curt")


def test_the_command_scores_a_run_and_a_step_of_a_store(tmp_path: Path) -> None:
    """`trajdebug score SOURCE --run ID [--step S] NAME=VALUE... --comment --by --source` stores each pair."""
    db = tmp_path / "runs.db"
    rid = record(store=db)
    r1 = CliRunner().invoke(cli, ["score", str(db), "--run", rid[:6], "helpfulness=0.3", "tone=rude", "--by", "dan", "--comment", "vague"])
    r2 = CliRunner().invoke(cli, ["score", str(db), "--run", rid[:6], "--step", "parse_amount", "correct=false", "--source", "code"])
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    run = the_run(db, rid)
    sid = next(s.step_id for s in run.steps if s.name == "parse_amount")
    assert [(s.name, s.value, s.by, s.comment, s.source, s.step_id) for s in run.scores] == [
        ("helpfulness", 0.3, "dan", "vague", "human", None),
        ("tone", "rude", "dan", "vague", "human", None),
        ("correct", False, None, None, "code", sid),
    ]


def test_the_command_refuses_a_bad_value_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    """A value that is no score (nan) ends the command with one line naming 'value'; the run has no score."""
    db = tmp_path / "runs.db"
    rid = record(store=db)
    result = CliRunner().invoke(cli, ["score", str(db), "--run", rid, "q=nan"])
    assert result.exit_code == 1 and "'value'" in result.output and result.output.count("\n") == 1
    assert the_run(db, rid).scores == ()


def test_a_secret_in_a_comment_never_reaches_the_store(tmp_path: Path) -> None:
    """With redaction on (the default), a key in a comment is redacted before it is written: the command's,
    the API's after the fact, and one given while recording."""
    db = tmp_path / "runs.db"
    with trajdebug.run("live", store=db) as h:
        trajdebug.score("q", 1, comment=f"live {SECRET}")
    CliRunner().invoke(cli, ["score", str(db), "--run", h.run_id, "q=2", "--comment", f"cli {SECRET}"])
    trajdebug.score("q", 3, store=db, run=h.run_id, comment=f"api {SECRET}")
    comments = [s.comment or "" for s in the_run(db, h.run_id).scores]
    assert [c.split()[0] for c in comments] == ["live", "cli", "api"]
    assert all(SECRET not in c for c in comments)
    for f in tmp_path.iterdir():
        assert SECRET.encode() not in f.read_bytes(), f


# -- 3. ways out: runs, show ------------------------------------------------------------------------


def scored_store(tmp_path: Path) -> tuple[Path, list[str]]:
    """Three runs: helpfulness 0.2 and tone=rude; helpfulness 0.9 and a step scored correct=false; none."""
    db = tmp_path / "runs.db"
    ids = [record(store=db) for _ in range(3)]
    trajdebug.score("helpfulness", 0.2, store=db, run=ids[0], comment="vague")
    trajdebug.score("tone", "rude", store=db, run=ids[0])
    trajdebug.score("helpfulness", 0.9, store=db, run=ids[1], source="llm", by="model:judge")
    trajdebug.score("correct", False, store=db, run=ids[1], step="parse_amount", source="code")
    return db, ids


def runs_json(*args: str) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["runs", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_runs_lists_each_runs_scores_in_a_column_and_in_json(tmp_path: Path) -> None:
    """`runs` shows a scores column (a step's score named by its step) and `--json` each run's scores."""
    db, ids = scored_store(tmp_path)
    text = CliRunner().invoke(cli, ["runs", str(db)]).output
    assert "scores" in text.splitlines()[0]
    assert "helpfulness=0.2 tone=rude" in text and "helpfulness=0.9 parse_amount:correct=false" in text
    rows = {r["run_id"]: r["scores"] for r in runs_json(str(db))["runs"]}  # type: ignore[attr-defined]
    assert [(s["name"], s["value"], s["comment"]) for s in rows[ids[0]]] == [("helpfulness", 0.2, "vague"), ("tone", "rude", None)]
    assert rows[ids[2]] == []


def test_a_store_nobody_scored_lists_without_a_scores_column(tmp_path: Path) -> None:
    """Without a score on any listed run, `runs` has no scores column."""
    db = tmp_path / "runs.db"
    record(store=db)
    assert "scores" not in CliRunner().invoke(cli, ["runs", str(db)]).output


@pytest.mark.parametrize(
    ("flt", "kept"),
    [
        (["helpfulness"], {0, 1}),
        (["helpfulness<0.5"], {0}),
        (["helpfulness>=0.5"], {1}),
        (["tone=rude"], {0}),
        (["correct=false"], {1}),
        (["helpfulness", "tone!=rude"], set()),
        (["missing"], set()),
    ],
)
def test_runs_score_filters_keep_the_runs_whose_scores_meet_them(tmp_path: Path, flt: list[str], kept: set[int]) -> None:
    """`runs --score NAME[OPVALUE]` keeps the runs with a score of that name (on the run or a step) meeting the
    bound; several must all hold."""
    db, ids = scored_store(tmp_path)
    args = [a for f in flt for a in ("--score", f)]
    listed = {r["run_id"] for r in runs_json(str(db), *args)["runs"]}  # type: ignore[attr-defined]
    assert listed == {ids[i] for i in kept}


def test_a_bad_score_filter_is_refused_in_one_line(tmp_path: Path) -> None:
    """An order bound on something that is not a number is refused, naming --score."""
    db, _ = scored_store(tmp_path)
    result = CliRunner().invoke(cli, ["runs", str(db), "--score", "helpfulness<high"])
    assert result.exit_code == 2 and "--score" in result.output and "compares numbers" in result.output


def test_runs_totals_give_the_mean_of_each_numeric_score(tmp_path: Path) -> None:
    """`runs --totals` adds each numeric score's mean over the kept runs (categories and booleans left out)."""
    db, _ = scored_store(tmp_path)
    totals = runs_json(str(db), "--totals")["totals"]
    assert totals["scores"] == {"helpfulness": {"mean": pytest.approx(0.55), "n": 2}}  # type: ignore[index]
    text = CliRunner().invoke(cli, ["runs", str(db), "--totals"]).output
    assert "score means: helpfulness 0.55 (n=2)" in text


def test_show_prints_a_runs_scores_and_a_steps_scores(tmp_path: Path) -> None:
    """`show --run` ends with the run's scores (a step's naming its step); `show --step` with the step's; --json
    carries them."""
    db, ids = scored_store(tmp_path)
    run_text = CliRunner().invoke(cli, ["show", str(db), "--run", ids[1]]).output
    assert "helpfulness = 0.9 on the run (llm by model:judge)" in run_text
    assert "correct = false on parse_amount#" in run_text
    step_text = CliRunner().invoke(cli, ["show", str(db), "--run", ids[1], "--step", "parse_amount"]).output
    assert step_text.rstrip().endswith("correct = false (code)")
    data = json.loads(CliRunner().invoke(cli, ["show", str(db), "--run", ids[1], "--step", "parse_amount", "--json"]).output)
    assert [(s["name"], s["value"]) for s in data["steps"][0]["scores"]] == [("correct", False)]
    data = json.loads(CliRunner().invoke(cli, ["show", str(db), "--run", ids[0], "--json"]).output)
    assert [s["name"] for s in data["runs"][0]["scores"]] == ["helpfulness", "tone"]


# -- 3. ways out: export ----------------------------------------------------------------------------


def test_an_otlp_export_carries_scores_as_span_events_and_import_reads_them_back(tmp_path: Path) -> None:
    """`export --to otlp` writes each score as a trajdebug.score span event (the run's on its first top-level
    span, a step's on its span); `import --from otlp` gives back every score with every field."""
    db = tmp_path / "runs.db"
    rid = record(store=db)
    trajdebug.score("helpfulness", 0.3, store=db, run=rid, by="dan", comment="vague")
    trajdebug.score("turns", 2, store=db, run=rid, source="code")
    trajdebug.score("tone", "curt", store=db, run=rid, source="llm", by="model:judge")
    trajdebug.score("correct", False, store=db, run=rid, step="parse_amount", source="code", by="check:amounts")
    before = the_run(db, rid).scores
    otlp, back = tmp_path / "spans.json", tmp_path / "back.jsonl"
    assert CliRunner().invoke(cli, ["export", str(db), "-o", str(otlp)]).exit_code == 0
    spans = {
        s["name"]: s
        for rs in json.loads(otlp.read_text())["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }
    targets = [
        next(a["value"]["stringValue"] for a in e["attributes"] if a["key"] == "trajdebug.score.target")
        for e in spans["parse_amount"]["events"]
        if e["name"] == "trajdebug.score"
    ]
    assert targets == ["run", "run", "run", "step"]  # parse_amount is the run's first top-level span
    assert not any(e["name"] == "trajdebug.score" for e in spans["reply"].get("events", []))
    assert CliRunner().invoke(cli, ["import", str(otlp), "--from", "otlp", "-o", str(back)]).exit_code == 0
    assert the_run(back, rid).scores == before


def test_with_recording_off_a_live_score_is_checked_and_writes_nothing(tmp_path: Path) -> None:
    """With the off switch, trajdebug.score inside a run returns the checked score, raises nothing and writes
    nothing; a bad field is still refused."""
    trajdebug.configure(enabled=False)
    try:
        with trajdebug.run("off", store=tmp_path / "off.db"):
            assert trajdebug.score("q", 1).value == 1
            with pytest.raises(ValueError, match="'value'"):
                trajdebug.score("q", float("inf"))
    finally:
        trajdebug.configure(enabled=True)
    assert not (tmp_path / "off.db").exists()
