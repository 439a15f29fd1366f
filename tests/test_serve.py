"""The web UI (``trajdebug serve``): a real uvicorn server on 127.0.0.1, read by Chromium."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.demo import run_demo, verify_demo
from trajdebug.model import Run
from trajdebug.serve import Catalog, Query, Server, is_loopback
from trajdebug.store import Store


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a failed demo run verified by replay (so replays and a reference run) and a passing one."""
    path = tmp_path_factory.mktemp("serve") / "runs.db"
    st = Store(path)
    bad = run_demo("bad-sql-filter", store=st)
    verify_demo(bad, analyze(bad), store=st)
    run_demo(None, store=st)
    return path


@pytest.fixture(scope="module")
def server(store: Path) -> Iterator[Server]:
    """The UI over that store, on a free port of 127.0.0.1."""
    with Server(store, port=0) as srv:
        yield srv


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.read().decode(), res.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(), exc.headers


def _rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("#runs tbody tr", "rows => rows.map(r => r.dataset.run)")


def test_run_list_hides_replays_and_reference_runs_unless_asked(page: Any, server: Server, store: Path) -> None:
    """Two original runs by default; ticking the box lists the verification's runs too."""
    page.goto(server.url)
    originals = [r.run_id for r in Store(store).list_runs(derived=False)]
    assert sorted(_rows(page)) == sorted(originals)
    assert int(page.locator("#hidden-count").text_content()) > 0
    page.check("input[name=all]")
    page.click("button[type=submit]")
    page.wait_for_url("**all=1**")
    assert len(_rows(page)) == len(Store(store).list_runs())


def test_filters_narrow_the_run_list(page: Any, server: Server, store: Path) -> None:
    """Outcome, full-text search over errors, root-cause step name and metadata tag each filter the rows."""
    failed = Store(store).list_runs(outcome="failure", derived=False)[0].run_id
    page.goto(server.url)
    page.select_option("select[name=outcome]", "failure")
    page.click("button[type=submit]")
    page.wait_for_url("**outcome=failure**")
    assert _rows(page) == [failed]
    for field, value, expected in (
        ("q", "keyerror 2025-q2", [failed]),
        ("q", "no-such-words", []),
        ("cause", "write_sql", [failed]),
        ("tag", "fault=bad-sql-filter", [failed]),
    ):
        page.goto(server.url)
        page.fill(f"input[name={field}]", value)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        assert _rows(page) == expected, (field, value)
        assert page.locator("#empty").is_visible() == (not expected)


def test_a_run_recorded_while_the_page_is_open_appears(page: Any, server: Server, store: Path) -> None:
    """No restart, no reload: the list asks the server again and the new run shows up."""
    page.goto(server.url)
    before = set(_rows(page))
    with trajdebug.run("late-arrival", store=str(store)) as h, trajdebug.step("only", kind="tool") as s:
        s.output = 1
    page.wait_for_selector(f'#runs tbody tr[data-run="{h.run_id}"]', timeout=10_000)
    assert set(_rows(page)) == before | {h.run_id}


def test_run_page_is_the_live_report(page: Any, server: Server, store: Path) -> None:
    """Clicking a run opens its report: a step click fills the inspector, a cause highlights its path."""
    failed = Store(store).list_runs(outcome="failure", derived=False)[0].run_id
    page.goto(server.url)
    page.click(f'#runs tbody tr[data-run="{failed}"] a')
    page.wait_for_selector("body[data-ready]")
    assert page.locator(".wf-row").count() == Store(store).load_run(failed).steps.__len__()
    page.locator(".wf-row").nth(3).click()
    assert page.locator("#inspector .i-name").text_content() == page.locator(".wf-row .nm").nth(3).text_content()
    page.click('.cause[data-cause="0"]')
    assert page.locator(".wf-row.onpath").count() >= 2
    assert page.errors == []


def test_compare_page_marks_the_first_divergence(page: Any, server: Server, store: Path) -> None:
    """From a failed run, compare picks a passing run and marks write_sql as where they first differ."""
    failed = Store(store).list_runs(outcome="failure", derived=False)[0].run_id
    page.goto(f"{server.url}compare?bad={failed}")
    first = page.locator("tr.first")
    assert first.count() == 1
    assert "write_sql" in first.text_content() and "first divergence" in first.text_content()
    assert page.locator("#alignment tbody tr").count() > 5


def test_pages_refuse_a_foreign_host_header(server: Server) -> None:
    """A request naming another host (DNS rebinding) is refused on the loopback server."""
    status, _, _ = _get(server.url, {"Host": "attacker.example"})
    assert status == 400
    status, _, headers = _get(server.url)
    assert status == 200 and "default-src 'none'" in headers["Content-Security-Policy"]


def test_a_token_is_required_on_every_request_when_set(store: Path) -> None:
    """Without the token: 401; with ?token= a cookie carries it on; a Bearer header works too."""
    with Server(store, port=0, token="s3cret-token") as srv:
        base = f"http://127.0.0.1:{srv.port}"
        assert _get(base + "/")[0] == 401
        assert _get(base + "/api/runs?token=wrong")[0] == 401
        status, _, headers = _get(base + "/?token=s3cret-token")
        assert status == 200 and "trajdebug_token=s3cret-token" in headers["set-cookie"]
        assert "HttpOnly" in headers["set-cookie"]
        assert _get(base + "/api/runs", {"Cookie": "trajdebug_token=s3cret-token"})[0] == 200
        assert _get(base + "/api/runs", {"Authorization": "Bearer s3cret-token"})[0] == 200


def test_any_other_host_than_loopback_gets_a_generated_token(store: Path) -> None:
    """Binding a non-loopback address generates a token and puts it in the URL to open."""
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.0.2.1")
    srv = Server(store, host="0.0.0.0", port=0)  # bound, never started: nothing listens
    try:
        assert srv.token and len(srv.token) >= 24
        assert srv.url.endswith(f"?token={srv.token}")
    finally:
        srv.stop()
    local = Server(store, port=0)
    local.stop()
    assert local.token is None


def test_catalog_reads_a_jsonl_file_and_follows_its_changes(tmp_path: Path) -> None:
    """Over a file the catalog reloads when it changes: a run appended later is found."""
    path = tmp_path / "runs.jsonl"
    with trajdebug.run("first", path=path), trajdebug.step("a"):
        pass
    cat = Catalog(path)
    assert [e.name for e in cat.query()] == ["first"]
    with trajdebug.run("second", path=path), trajdebug.step("b"):
        pass
    assert sorted(e.name for e in cat.query()) == ["first", "second"]
    assert [e.name for e in cat.query(Query(text="b"))] == ["second"]


def test_planted_markup_never_executes_in_the_web_ui(page: Any, tmp_path: Path, hostile_run: Run) -> None:
    """A hostile run in a store: list, run page and compare page show its markup as text only."""
    db = tmp_path / "hostile.db"
    Store(db).save_run(hostile_run)
    with Server(db, port=0) as srv:
        page.goto(srv.url)
        assert "<script>" in page.locator("#runs tbody").text_content()
        page.fill("input[name=q]", "<script>")
        page.click("button[type=submit]")
        page.wait_for_load_state()
        page.click("#runs tbody tr a")
        page.wait_for_selector("body[data-ready]")
        for row in page.locator(".wf-row").all():
            row.click()
        page.click("#tabs [data-tab=errors]")
        page.goto(f"{srv.url}compare?bad={hostile_run.run_id}&good={hostile_run.run_id[:8]}")
        page.wait_for_timeout(2500)  # one refresh of the run list's poller, had it been left running
        assert page.evaluate("() => window.__pwned") is None
        assert page.dialogs == [] and page.errors == []
        assert page.locator("#planted").count() == 0
