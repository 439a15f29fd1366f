"""Links to steps (the report's ``links.js``): ``#step=ID`` opens a run with that step selected, in a report file and in serve."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from trajdebug.analysis import analyze
from trajdebug.core.model import Run
from trajdebug.demo import run_demo
from trajdebug.report.html import write_report
from trajdebug.serve import Server
from trajdebug.store import Store


@pytest.fixture
def demo(tmp_path: Path) -> tuple[Path, Run, Any]:
    """The demo's failed run in a store and its report file."""
    db = tmp_path / "demo.db"
    run = run_demo("bad-sql-filter", store=Store(db))
    analysis = analyze(run, model=None)
    write_report(tmp_path / "report.html", analysis)
    return db, run, analysis


def _ready(page: Any, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("body[data-ready]")


def _selected(page: Any) -> str:
    return page.eval_on_selector("#inspector .link-url", "n => n.value").rsplit("#step=", 1)[1]


def test_a_report_opened_at_a_steps_link_shows_that_step(page: Any, demo: tuple[Path, Run, Any], tmp_path: Path) -> None:
    """Opening report.html#step=ID selects that step (not the first candidate) and highlights its waterfall row."""
    _, run, analysis = demo
    top = analysis.root_causes[0].step_id
    other = next(s for s in run.steps if s.step_id != top and s.kind == "llm")
    _ready(page, (tmp_path / "report.html").as_uri() + "#step=" + other.step_id)
    assert page.locator("#inspector .i-name").text_content() == other.name
    assert _selected(page) == other.step_id
    assert page.locator(".wf-row.sel").evaluate_all("ns => ns.map(n => n.dataset.step)") == [other.step_id]
    assert page.errors == []


def test_selecting_a_step_puts_its_link_in_the_address_and_the_inspector(page: Any, demo: tuple[Path, Run, Any], tmp_path: Path) -> None:
    """Clicking a step makes the page's address its link, the inspector shows that link, and "copy link" copies it."""
    _, run, _ = demo
    _ready(page, (tmp_path / "report.html").as_uri())
    last = run.steps[-1]
    page.click(f'.wf-row[data-step="{last.step_id}"]')
    assert page.url.endswith("#step=" + last.step_id)
    assert page.eval_on_selector("#inspector .link-url", "n => n.value") == page.url
    page.click("#inspector .copy-link")
    page.wait_for_function("() => document.querySelector('#inspector .copy-link').textContent === 'copied'")
    assert page.errors == []


def test_each_candidate_links_to_its_step_and_following_a_link_selects_it(page: Any, demo: tuple[Path, Run, Any], tmp_path: Path) -> None:
    """Every root-cause card carries a #step= link to its own step; a link pasted into the address selects its step."""
    _, run, analysis = demo
    _ready(page, (tmp_path / "report.html").as_uri())
    hrefs = page.locator("#causes .cause .step-link").evaluate_all("ns => ns.map(n => n.getAttribute('href'))")
    assert hrefs == ["#step=" + c.step_id for c in analysis.root_causes]
    first = run.steps[0]
    page.evaluate(f"() => {{ location.hash = 'step={first.step_id}'; }}")
    page.wait_for_function(f"() => document.querySelector('#inspector .link-url').value.endsWith('{first.step_id}')")
    assert page.locator("#inspector .i-name").text_content() == first.name
    assert page.errors == []


def test_the_ask_panels_question_links_to_its_step(page: Any, demo: tuple[Path, Run, Any], tmp_path: Path) -> None:
    """The "find the cause" question about a step carries that step's #step= link."""
    _ready(page, (tmp_path / "report.html").as_uri())
    page.click("#tabs [data-tab=ask]")
    q = page.locator("#ask-question")
    sid = q.get_attribute("data-step")
    assert q.locator("h3 .step-link").get_attribute("href") == "#step=" + sid


def test_serve_opens_a_run_at_a_steps_link_by_hash_query_or_short_id(page: Any, demo: tuple[Path, Run, Any]) -> None:
    """serve's /runs/ID#step=SID, /runs/ID?step=SID and a short id's link each open the run with that step selected."""
    db, run, _ = demo
    target = run.steps[2]
    with Server(db, port=0) as srv:
        base = f"{srv.url}runs/{run.run_id}"
        for url in (base + "#step=" + target.step_id, base + "?step=" + target.step_id, base + "#step=" + target.step_id[-6:]):
            _ready(page, url)
            assert _selected(page) == target.step_id, url
            assert page.locator("#inspector .i-name").text_content() == target.name
        page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=srv.url.rstrip("/"))
        page.click("#inspector .copy-link")
        assert page.evaluate("() => navigator.clipboard.readText()") == base + "#step=" + target.step_id
    assert page.errors == []
