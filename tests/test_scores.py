"""Scores on runs and steps: the record, `trajdebug.score`, `trajdebug score`, on real stores, JSONL files and
foreign traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import trajdebug
from trajdebug.core.jsonl import RunBuilder, read_jsonl, write_jsonl
from trajdebug.core.model import Score
from trajdebug.core.schema import make_score, parse_value, score_record
from trajdebug.sources.load import load_runs
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
    with src.open("a") as fh:
        fh.write(json.dumps(score_record(rid, Score("q", 2))) + "\n")
    db = tmp_path / "copy.db"
    with Store(db) as st:
        st.save_run(the_run(src, rid))
    assert [(s.name, s.value) for s in the_run(db, rid).scores] == [("q", 2)]
