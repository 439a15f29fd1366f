"""Scores in real Chromium: the report file's score table and the inspector's score section, and under
``trajdebug serve`` the form that adds a score to the run or a step (stored, checked as `trajdebug score` checks)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import HOSTILE

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.report.html import write_report
from trajdebug.serve import Server
from trajdebug.sources.load import load_runs


@trajdebug.step(kind="tool")
def parse_amount(text: str) -> float:
    return float(text.replace(".", "").replace(",", ""))


@trajdebug.step(kind="output")
def reply(value: float) -> str:
    return f"{value:.2f} EUR"


def scored_run(db: Path) -> tuple[str, str]:
    """A run with a run score (its comment hostile markup) and a step score; returns (run id, step id)."""
    with trajdebug.run("refund", store=db) as h:
        reply(parse_amount("1.299,00"))
    trajdebug.score("helpfulness", 0.3, store=db, run=h.run_id, by="dan", comment=HOSTILE)
    trajdebug.score("correct", False, store=db, run=h.run_id, step="parse_amount", source="code")
    run = load_runs(db, run_id=h.run_id)[0]
    return h.run_id, next(s.step_id for s in run.steps if s.name == "parse_amount")


def rows(page: Any, where: str) -> list[list[str]]:
    return page.eval_on_selector_all(
        f"{where} table.scores tbody tr", "trs => trs.map(tr => [...tr.cells].map(td => td.textContent))"
    )


def test_the_report_file_shows_the_score_table_and_a_steps_scores_in_the_inspector(page: Any, tmp_path: Path) -> None:
    """A report file lists every score under the header (a step's naming its step), with no form; a step's
    scores show in its inspector; markup in a comment is shown as text and never runs."""
    db = tmp_path / "runs.db"
    rid, sid = scored_run(db)
    report = write_report(tmp_path / "r.html", analyze(load_runs(db, run_id=rid)[0]))
    page.goto(report.as_uri())
    page.wait_for_selector("#run-scores table.scores")
    assert rows(page, "#run-scores") == [
        ["helpfulness", "0.3", "the run", "human", "dan", HOSTILE],
        ["correct", "false", "parse_amount#" + sid[-6:], "code", "", ""],
    ]
    assert page.query_selector(".score-form") is None
    page.click(f'#run-scores button[data-step="{sid}"]')
    page.wait_for_selector("#inspector .i-scores")
    assert rows(page, "#inspector .i-scores") == [["correct", "false", "code", "", ""]]
    assert page.evaluate("window.__pwned") is None and page.dialogs == [] and page.errors == []


def test_serve_adds_a_score_to_the_run_and_to_a_step_from_the_page(page: Any, tmp_path: Path) -> None:
    """Under serve, the run page's form stores a score on the run and the inspector's on the step; each shows at
    once and is in the store; a bad value shows the server's one-line reason and stores nothing."""
    db = tmp_path / "runs.db"
    rid, sid = scored_run(db)
    with Server(db, port=0) as srv:
        page.goto(f"{srv.url}runs/{rid}")
        page.click("#run-scores details.score-new summary")
        form = "#run-scores .score-form"
        page.fill(f"{form} .score-name", "tone")
        page.fill(f"{form} .score-value", "rude")
        page.fill(f"{form} .score-by", "kim")
        page.fill(f"{form} .score-comment", "<b>curt</b>")
        page.click(f"{form} .score-add")
        page.wait_for_function("() => document.querySelectorAll('#run-scores table.scores tbody tr').length === 3")
        assert rows(page, "#run-scores")[-1] == ["tone", "rude", "the run", "human", "kim", "<b>curt</b>"]
        page.fill(f"{form} .score-name", "q")
        page.fill(f"{form} .score-value", "nan")
        page.click(f"{form} .score-add")
        page.wait_for_selector(f"{form} .score-error")
        assert "'value'" in page.text_content(f"{form} .score-msg")
        page.click(f'#waterfall [data-step="{sid}"]')
        step_form = "#inspector .i-scores .score-form"
        page.wait_for_selector(step_form)
        page.fill(f"{step_form} .score-name", "grounded")
        page.fill(f"{step_form} .score-value", "true")
        page.select_option(f"{step_form} .score-source", "llm")
        page.click(f"{step_form} .score-add")
        page.wait_for_function("() => document.querySelectorAll('#inspector .i-scores tbody tr').length === 2")
        assert rows(page, "#inspector .i-scores")[-1] == ["grounded", "true", "llm", "", ""]
    stored = load_runs(db, run_id=rid)[0].scores
    assert [(s.name, s.value, s.step_id, s.source) for s in stored] == [
        ("helpfulness", 0.3, None, "human"),
        ("correct", False, sid, "code"),
        ("tone", "rude", None, "human"),
        ("grounded", True, sid, "llm"),
    ]
    assert page.errors == []


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_refuses_a_score_that_is_not_json_from_its_own_page_or_fails_the_check(tmp_path: Path) -> None:
    """A form post (not JSON), another site's Origin, a field that fails the check, a step the run lacks: 400
    with a line naming what is wrong, nothing stored; a good one is stored."""
    db = tmp_path / "runs.db"
    rid, _ = scored_run(db)
    with Server(db, port=0) as srv:
        url = f"{srv.url}api/runs/{rid}/scores"
        good = json.dumps({"name": "q", "value": "2"}).encode()
        js = {"Content-Type": "application/json"}
        assert _post(url, b"name=q&value=2", {"Content-Type": "application/x-www-form-urlencoded"})[0] == 400
        assert _post(url, good, {**js, "Origin": "http://evil.example"})[0] == 400
        status, body = _post(url, json.dumps({"name": "q", "value": "1", "source": "robot"}).encode(), js)
        assert status == 400 and "'source'" in body["error"]
        status, body = _post(url, json.dumps({"name": "q", "value": 1, "step_id": "nope"}).encode(), js)
        assert status == 400 and "'step_id'" in body["error"]
        assert len(load_runs(db, run_id=rid)[0].scores) == 2
        status, body = _post(url, good, js)
        assert status == 200 and body["score"]["value"] == 2
    assert [s.name for s in load_runs(db, run_id=rid)[0].scores][-1] == "q"


def test_a_secret_in_a_posted_comment_never_reaches_the_store_or_the_page(tmp_path: Path) -> None:
    """A key in a comment posted to serve is redacted before it is written, and the page gets it redacted back."""
    secret = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    db = tmp_path / "runs.db"
    rid, _ = scored_run(db)
    with Server(db, port=0) as srv:
        body = json.dumps({"name": "q", "value": "1", "comment": f"leaked {secret}"}).encode()
        status, got = _post(f"{srv.url}api/runs/{rid}/scores", body, {"Content-Type": "application/json"})
    assert status == 200 and got["score"]["comment"].startswith("leaked") and secret not in got["score"]["comment"]
    for f in tmp_path.iterdir():
        assert secret.encode() not in f.read_bytes(), f


def _three_runs(db: Path) -> list[str]:
    """Three runs: helpfulness 0.3 (and a step's correct=false), helpfulness 0.9, none."""
    first, _ = scored_run(db)
    ids = [first]
    for _ in range(2):
        with trajdebug.run("refund", store=db) as h:
            reply(parse_amount("2,00"))
        ids.append(h.run_id)
    trajdebug.score("helpfulness", 0.9, store=db, run=ids[1])
    return ids


def test_serve_run_list_filters_by_score_as_runs_does_and_shows_a_scores_column(page: Any, tmp_path: Path) -> None:
    """`?score=NAME` and `?score=NAME<0.5` keep the runs `runs --score` keeps, and the list has a scores column
    (a step's score named by its step) that stays after the page's live refresh."""
    db = tmp_path / "runs.db"
    ids = _three_runs(db)
    with Server(db, port=0) as srv:
        base, _, token = srv.url.partition("?")
        amp = f"&{token}" if token else ""
        page.goto(f"{base}?score=helpfulness{amp}")
        assert sorted(page.eval_on_selector_all("#runs tbody tr", "rs => rs.map(r => r.dataset.run)")) == sorted(ids[:2])
        page.goto(f"{base}?score=helpfulness%3C0.5{amp}")
        page.wait_for_timeout(2500)  # one live refresh (runs.js) rebuilds the rows
        assert page.eval_on_selector_all("#runs tbody tr", "rs => rs.map(r => r.dataset.run)") == [ids[0]]
        assert page.locator("#scores-col").count() == 1
        assert page.locator("#runs tbody td.scores").all_text_contents() == ["helpfulness=0.3 parse_amount:correct=false"]
        assert page.errors == []


def test_serve_run_list_without_a_scored_run_has_no_scores_column_and_refuses_a_bad_filter(tmp_path: Path) -> None:
    """A list with no scored run has no scores column; a filter `runs --score` refuses is a 400 naming it."""
    db = tmp_path / "runs.db"
    with trajdebug.run("refund", store=db):
        reply(parse_amount("2,00"))
    with Server(db, port=0) as srv:
        base, _, token = srv.url.partition("?")
        amp = f"&{token}" if token else ""
        with urllib.request.urlopen(srv.url, timeout=10) as res:
            assert 'id="scores-col"' not in res.read().decode()
        with pytest.raises(urllib.error.HTTPError) as bad:
            urllib.request.urlopen(f"{base}?score=helpfulness%3Chigh{amp}", timeout=10)
        assert bad.value.code == 400 and "compares numbers" in bad.value.read().decode()
