"""The "find the cause" panel in real Chromium: in a report file (the search runs in the page) and
under ``trajdebug serve`` (the search runs on the server, which stores each answer)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from trajdebug.analysis import analyze
from trajdebug.answers import import_answers
from trajdebug.core.model import Run
from trajdebug.demo import run_demo
from trajdebug.report.html import write_report
from trajdebug.serve import Server
from trajdebug.sources.load import load_runs


def wrong_steps(run: Run) -> set[str]:
    """The truth about the demo run: its planted root and every step downstream of it are wrong."""
    out = {run.metadata["fault"]["step_id"]}
    changed = True
    while changed:
        changed = False
        for s in run.steps:
            if s.step_id not in out and any(d.step_id in out for d in s.deps):
                out.add(s.step_id)
                changed = True
    return out


def answer_until_root(page: Any, run: Run, *, stop_after: int | None = None, keys: bool = False) -> list[str]:
    """Answer the panel's questions truthfully until it shows the root (or ``stop_after`` answers),
    with the buttons or (``keys``) the terminal's keys y and n."""
    wrong = wrong_steps(run)
    asked: list[str] = []
    for _ in range(len(run.steps) + 1):
        page.wait_for_selector("#ask-question, #ask-result")
        if page.query_selector("#ask-result") is not None or (stop_after is not None and len(asked) >= stop_after):
            return asked
        sid = page.get_attribute("#ask-question", "data-step")
        asked.append(sid)
        if keys:
            page.keyboard.press("n" if sid in wrong else "y")
        else:
            page.click(f'#ask-question button[data-answer="{"wrong" if sid in wrong else "correct"}"]')
        page.wait_for_function(
            "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
            arg=sid,
        )
    raise AssertionError("the panel never reached a root")


def test_the_report_file_finds_the_planted_root_in_the_page_and_offers_the_answers(
    page: Any, tmp_path: Path
) -> None:
    """Answered truthfully, the static report's panel ends at the demo's planted root, certain; its
    download is accepted by `trajdebug answers import` and stores every answer with the run."""
    src = tmp_path / "demo.jsonl"
    run = run_demo(path=src, workdir=tmp_path)
    report = write_report(tmp_path / "report.html", analyze(load_runs(src)[0]))
    page.goto(report.as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked = answer_until_root(page, run)
    root = run.metadata["fault"]["step_id"]
    assert page.get_attribute("#ask-result", "data-root") == root
    assert page.get_attribute("#ask-result", "data-certain") == "true"
    assert "Path to the failure" in page.text_content("#ask-result")
    with page.expect_download() as info:
        page.click("#ask-download")
    download = tmp_path / "answers.jsonl"
    info.value.save_as(download)
    stored = import_answers(src, download)
    assert [a.step_id for a in stored] == asked
    assert {a.step_id for a in load_runs(src)[0].answers} == set(asked)
    assert page.errors == []


def test_serve_stores_each_answer_and_resumes_after_a_restart(page: Any, tmp_path: Path) -> None:
    """Under serve each answer is posted and stored; after serve restarts the panel goes on from the
    stored answers (never asking one again) and reaches the planted root."""
    db = tmp_path / "runs.db"
    run = run_demo(store=db, workdir=tmp_path)
    root = run.metadata["fault"]["step_id"]
    with Server(db, port=0) as srv:
        page.goto(f"{srv.url}runs/{run.run_id}")
        page.click('#tabs [data-tab="ask"]')
        first = answer_until_root(page, run, stop_after=1)
    assert [a.step_id for a in load_runs(db, run_id=run.run_id)[0].answers] == first
    with Server(db, port=0) as srv:
        page.goto(f"{srv.url}runs/{run.run_id}")
        page.click('#tabs [data-tab="ask"]')
        rest = answer_until_root(page, run)
    assert not set(first) & set(rest)
    assert page.get_attribute("#ask-result", "data-root") == root
    assert page.get_attribute("#ask-result", "data-certain") == "true"
    assert len(load_runs(db, run_id=run.run_id)[0].answers) == len(first) + len(rest)
    assert page.errors == []


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, json.loads(res.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_serve_refuses_an_answer_that_is_not_json_from_its_own_page(tmp_path: Path) -> None:
    """A form post (not JSON), another site's Origin, an unknown word or step: 400, nothing stored."""
    db = tmp_path / "runs.db"
    run = run_demo(store=db, workdir=tmp_path)
    sid = run.steps[2].step_id
    good = json.dumps({"step_id": sid, "answer": "wrong"}).encode()
    with Server(db, port=0) as srv:
        url = f"{srv.url}api/runs/{run.run_id}/ask"
        host = f"127.0.0.1:{srv.port}"
        assert _post(url, b"step_id=x&answer=wrong", {"Content-Type": "application/x-www-form-urlencoded"})[0] == 400
        assert _post(url, good, {"Content-Type": "application/json", "Origin": "http://evil.example"})[0] == 400
        bad_word = json.dumps({"step_id": sid, "answer": "maybe"}).encode()
        assert _post(url, bad_word, {"Content-Type": "application/json"})[0] == 400
        no_step = json.dumps({"step_id": "nope", "answer": "wrong"}).encode()
        assert _post(url, no_step, {"Content-Type": "application/json"})[0] == 400
        assert load_runs(db, run_id=run.run_id)[0].answers == ()
        status, state = _post(url, good, {"Content-Type": "application/json", "Origin": f"http://{host}"})
    assert status == 200 and [a["step_id"] for a in state["answers"]] == [sid]


def test_the_page_asks_what_the_python_search_asks_on_every_demo_fault(page: Any, tmp_path: Path) -> None:
    """The page's port of the selection rule asks the same steps in the same order as GuidedSearch
    (prior strategy) and ends at the same root, on each of the demo's faults, answered truthfully."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer
    from trajdebug.demo import FAULTS

    for fault in FAULTS:
        src = tmp_path / f"{fault}.jsonl"
        (tmp_path / fault).mkdir()
        run = run_demo(fault, path=src, workdir=tmp_path / fault)
        analysis = analyze(load_runs(src)[0])
        wrong = wrong_steps(run)
        search = GuidedSearch(analysis)
        python: list[str] = []
        while (sid := search.next_question()) is not None:
            python.append(sid)
            search.answer(Answer(sid, sid not in wrong, "person"))
        expected = search.result()
        page.goto(write_report(tmp_path / f"{fault}.html", analysis).as_uri())
        page.click('#tabs [data-tab="ask"]')
        if expected.failure is None:
            assert page.query_selector("#ask-question") is None, fault
            continue
        assert answer_until_root(page, run) == python, fault
        assert page.get_attribute("#ask-result", "data-root") == (expected.root or ""), fault
        assert page.get_attribute("#ask-result", "data-certain") == str(expected.certain).lower(), fault


def test_planted_markup_in_a_question_stays_text(page: Any, tmp_path: Path, hostile_run: Run) -> None:
    """<script>, onerror= and javascript: in a questioned step's name, input and output, and in its
    producers, are shown as text by the panel, in the report file and under serve; nothing runs."""
    from trajdebug.store import Store

    planted = "<script>window.__pwned"

    report = write_report(tmp_path / "hostile.html", analyze(hostile_run))
    db = tmp_path / "hostile.db"
    Store(db).save_run(hostile_run)
    with Server(db, port=0) as srv:
        for url in (report.as_uri(), f"{srv.url}runs/{hostile_run.run_id}"):
            page.goto(url)
            page.click('#tabs [data-tab="ask"]')
            shown = 0
            for _ in range(len(hostile_run.steps)):
                page.wait_for_selector("#ask-question, #ask-result")
                if page.query_selector("#ask-question") is None:
                    break
                shown += 1
                assert planted in (page.text_content("#ask-question") or "")
                sid = page.get_attribute("#ask-question", "data-step")
                page.click('#ask-question button[data-answer="correct"]')
                page.wait_for_function(
                    "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
                    arg=sid,
                )
            assert shown >= 1 and page.evaluate("window.__pwned") is None
            assert page.locator("#ask img").count() == 0 and page.locator("#ask script").count() == 0
    assert page.errors == [] and page.dialogs == []


def test_a_report_written_after_some_answers_starts_from_them(page: Any, tmp_path: Path) -> None:
    """A report of a run with a stored answer never asks that step; its questions (answered with the
    keys y and n) are the rest of what the Python search asks from the same answers, and it ends at
    the planted root."""
    import trajdebug
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer

    src = tmp_path / "demo.jsonl"
    run = run_demo(path=src, workdir=tmp_path)
    wrong = wrong_steps(run)
    first = GuidedSearch(analyze(load_runs(src)[0])).next_question()
    assert first is not None
    trajdebug.save_answer(src, run.run_id, Answer(first, first not in wrong, "person"))
    analysis = analyze(load_runs(src)[0])
    search = GuidedSearch(analysis, analysis.run.answers)
    python = []
    while (sid := search.next_question()) is not None:
        python.append(sid)
        search.answer(Answer(sid, sid not in wrong, "person"))
    page.goto(write_report(tmp_path / "report.html", analysis).as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked = answer_until_root(page, run, keys=True)
    assert first not in asked and asked == python
    assert page.get_attribute("#ask-result", "data-root") == run.metadata["fault"]["step_id"]


def test_on_a_2000_step_run_the_page_asks_what_python_asks_and_answers_quickly(page: Any, tmp_path: Path) -> None:
    """On a 2,000-step run (a root planted mid-slice, answered truthfully) the page asks the Python
    search's questions in its order, each next question within a second."""
    import time

    from benchmarks.report_html import agent_run

    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer

    run = agent_run(2_000, agents=8)
    analysis = analyze(run)
    search = GuidedSearch(analysis)
    assert len(search.ids) > 1000
    planted = search.ids[len(search.ids) // 2]
    wrong = {planted}
    for sid in search.ids:  # topological order: a step is wrong when a producer of it is
        if any(search.ids[p] in wrong for p in search.parents[search.index[sid]]):
            wrong.add(sid)
    python: list[str] = []
    while (sid := search.next_question()) is not None:
        python.append(sid)
        search.answer(Answer(sid, sid not in wrong, "person"))
    page.goto(write_report(tmp_path / "big.html", analysis).as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked: list[str] = []
    slowest = 0.0
    for _ in range(len(python) + 1):
        page.wait_for_selector("#ask-question, #ask-result")
        if page.query_selector("#ask-result") is not None:
            break
        sid = page.get_attribute("#ask-question", "data-step")
        asked.append(sid)
        start = time.perf_counter()
        page.click(f'#ask-question button[data-answer="{"wrong" if sid in wrong else "correct"}"]')
        page.wait_for_function(
            "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
            arg=sid,
        )
        slowest = max(slowest, time.perf_counter() - start)
    assert asked == python
    assert page.get_attribute("#ask-result", "data-root") == search.result().root == planted
    assert slowest < 1.0, slowest


def test_serve_with_a_token_stores_an_answer_only_with_the_token(tmp_path: Path) -> None:
    """A server with a token refuses an answer without it (401) and stores one that carries it."""
    db = tmp_path / "runs.db"
    run = run_demo(store=db, workdir=tmp_path)
    sid = run.steps[2].step_id
    body = json.dumps({"step_id": sid, "answer": "correct"}).encode()
    with Server(db, port=0, token="s3cret-token") as srv:
        url = f"http://127.0.0.1:{srv.port}/api/runs/{run.run_id}/ask"
        req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"}, method="POST")
        try:
            urllib.request.urlopen(req, timeout=10)
            status = 200
        except urllib.error.HTTPError as exc:
            status = exc.code
        assert status == 401
        assert load_runs(db, run_id=run.run_id)[0].answers == ()
        ok, _ = _post(url, body, {"Content-Type": "application/json", "Authorization": "Bearer s3cret-token"})
    assert ok == 200 and [a.step_id for a in load_runs(db, run_id=run.run_id)[0].answers] == [sid]


def test_the_page_audits_a_proof_over_inferred_inputs_as_python_does(page: Any, tmp_path: Path) -> None:
    """A run whose edges were inferred and whose root was never tied to its consumer: Python's search
    audits the wrong proof and reaches the planted root; the page asks the same steps and ends there."""
    from trajdebug.analysis import GuidedSearch
    from trajdebug.core.model import Answer, Dependency, Step

    def step(sid: str, name: str, out: str, start: int, *deps: str) -> Step:
        return Step(sid, name, "tool", input={"q": name}, output=out, start_ns=start, end_ns=start + 1,
                    deps=tuple(Dependency(d, origin="inferred") for d in deps))

    run = Run("r1", "gap", 0, 20, "failure", "quota exceeded", steps=(
        step("a", "load_account", "acct-7", 0),
        step("c", "lookup_quota", "quota=5", 2),
        step("b", "plan_batch", "batch of 9", 4, "a"),
        step("f", "submit_batch", "rejected", 6, "b"),
    ))
    wrong = {"c", "b", "f"}
    analysis = analyze(run)
    search = GuidedSearch(analysis)
    python: list[str] = []
    while (sid := search.next_question()) is not None:
        python.append(sid)
        search.answer(Answer(sid, sid not in wrong, "person"))
    expected = search.result()
    assert expected.audited and (expected.root, expected.certain) == ("c", True)
    page.goto(write_report(tmp_path / "gapped.html", analysis).as_uri())
    page.click('#tabs [data-tab="ask"]')
    asked: list[str] = []
    for _ in range(len(run.steps) + 1):
        page.wait_for_selector("#ask-question, #ask-result")
        if page.query_selector("#ask-result") is not None:
            break
        sid = page.get_attribute("#ask-question", "data-step")
        asked.append(sid)
        page.click(f'#ask-question button[data-answer="{"wrong" if sid in wrong else "correct"}"]')
        page.wait_for_function(
            "sid => !document.querySelector('#ask-question') || document.querySelector('#ask-question').dataset.step !== sid",
            arg=sid,
        )
    assert asked == python
    assert page.get_attribute("#ask-result", "data-root") == "c"
