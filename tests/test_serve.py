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
from trajdebug.core.model import Run
from trajdebug.demo import run_demo, verify_demo
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


def test_run_page_names_the_passing_run_of_the_same_input_as_the_report_does(page: Any, server: Server, store: Path) -> None:
    """The live report's overview names the passing run of the same input and where the runs part (write_sql), as
    the report file does; the link opens that step."""
    st = Store(store)
    failed = st.list_runs(outcome="failure", derived=False)[0]
    # The demo's passing run (a run recorded by another test of this module is another agent's).
    [passing] = [r.run_id for r in st.list_runs(outcome="success", derived=False) if r.name == failed.name]
    page.goto(f"{server.url}runs/{failed.run_id}")
    page.wait_for_selector("body[data-ready]")
    line = page.locator("#run-same-input").text_content() or ""
    assert line.startswith(f"same input: passing run {passing[:12]} (the run compared), matched by its task id")
    assert "The runs part first at write_sql#" in line
    page.click("#same-input-part")
    assert page.locator("#inspector .i-name").text_content() == "write_sql"
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


# -- one pipeline: the web UI, `report` and `analyze` answer alike ----------------------------

_TIERS = {"C-1": "free", "C-2": "enterprise", "C-3": "pro", "C-4": "free", "C-5": "enterprise"}


@trajdebug.step(kind="tool")
def _fetch(batch: list[str]) -> list[dict[str, str]]:
    return [{"ticket": f"T-{i}", "customer_id": c} for i, c in enumerate(batch)]


@trajdebug.step(kind="tool")
def _lookup_customer(customer_id: str, cached: str | None) -> dict[str, str]:
    account = cached or customer_id  # planted: a cache hit returns the previous customer's record
    return {"account": account, "tier": _TIERS[account]}


@trajdebug.step(kind="condition")
def _route(tier: str) -> str:
    return "priority" if tier == "enterprise" else "standard"


@trajdebug.step(kind="tool")
def _assign(ticket: str, queue: str) -> dict[str, str]:
    return {"ticket": ticket, "queue": queue}


def _triage(store: Path, batch: list[str], stale_for: str | None = None) -> str:
    with trajdebug.run("triage", store=str(store)) as run:
        last = None
        for t in _fetch(batch):
            customer = _lookup_customer(t["customer_id"], last if t["customer_id"] == stale_for else None)
            last = t["customer_id"]
            _assign(t["ticket"], _route(customer["tier"]))
        return run.run_id


def test_web_ui_report_and_analyze_rank_a_marked_run_alike(tmp_path: Path) -> None:
    """A run marked failed after five passing runs: the run page, the run list and `report` give `analyze`'s ranking."""
    import json
    import re

    from click.testing import CliRunner

    from trajdebug.cli import cli

    db = tmp_path / "triage.db"
    for batch in (["C-1", "C-2"], ["C-3", "C-4"], ["C-5", "C-1"], ["C-2", "C-3"], ["C-4", "C-5"]):
        _triage(db, batch)
    bad = _triage(db, ["C-2", "C-1"], stale_for="C-1")  # recorded as a success: the check missed it
    CliRunner().invoke(cli, ["mark", str(db), "--run", bad, "--failed", "free customer C-1 got priority"])

    def causes(analysis: dict[str, Any]) -> list[tuple[str, float]]:
        return [(c["step_id"], c["score"]) for c in analysis["root_causes"]]

    cli_out = CliRunner().invoke(cli, ["analyze", str(db), "--run", bad[:12], "--json"]).output
    [expected] = [causes(r) for r in json.loads(cli_out)["runs"]]
    alone = json.loads(CliRunner().invoke(cli, ["analyze", str(db), "--run", bad, "--json", "--no-references"]).output)
    assert causes(alone["runs"][0]) != expected  # the comparison below can tell references from none

    embedded = re.compile(r'<script type="application/json" id="trajdebug-data">(.*?)</script>', re.S)
    CliRunner().invoke(cli, ["report", str(db), "--run", bad, "-o", str(tmp_path / "r.html")])
    report = json.loads(embedded.search((tmp_path / "r.html").read_text()).group(1))
    assert causes(report["analysis"]) == expected
    with Server(db, port=0) as srv:
        status, listing, _ = _get(f"{srv.url}api/runs")
        status_page, body, _ = _get(f"{srv.url}runs/{bad}")
    assert status == status_page == 200
    [row] = [r for r in json.loads(listing)["runs"] if r["run_id"] == bad]
    page_data = json.loads(embedded.search(body).group(1))
    assert causes(page_data["analysis"]) == expected
    names = {c["step_id"]: c["name"] for c in page_data["analysis"]["root_causes"]}
    assert row["causes"] == [names[sid] for sid, _ in expected[:3]]


def test_catalog_reanalyzes_a_failure_when_its_agent_gains_a_passing_run(tmp_path: Path) -> None:
    """A passing run recorded while the UI is up changes the failed run's references: the UI follows `analyze`."""
    from trajdebug.api import analyze_source

    db = tmp_path / "triage.db"
    _triage(db, ["C-1", "C-2"])
    bad = _triage(db, ["C-2", "C-1"], stale_for="C-1")
    trajdebug.mark(db, bad, failed="free customer C-1 got priority")
    cat = Catalog(db)
    before = cat.analysis(bad).to_dict()["root_causes"]
    assert before == analyze_source(db, bad).analyses[0].to_dict()["root_causes"]
    for batch in (["C-3", "C-4"], ["C-5", "C-1"], ["C-2", "C-3"], ["C-4", "C-5"]):
        _triage(db, batch)
    listed = {e.run_id: e for e in cat.query()}
    after = cat.analysis(bad).to_dict()["root_causes"]
    expected = analyze_source(db, bad).analyses[0].to_dict()["root_causes"]
    assert after == expected != before
    assert list(listed[bad].causes) == [c["name"] for c in expected[:3]]


@pytest.fixture
def session_store(tmp_path: Path) -> Path:
    """Three runs of one session (one failed, with tokens) and one run of no session."""
    path = tmp_path / "sessions.db"
    for i, (tokens, fail) in enumerate(((100, False), (5000, True), (20, False))):
        with trajdebug.run("chat", store=path, session="s-1") as r:
            with trajdebug.step("ask", kind="llm") as s:
                s.usage(model="gpt-4o", prompt_tokens=tokens, completion_tokens=i + 1)
            if fail:
                r.fail("bad answer")
    with trajdebug.run("chat", store=path) as r:
        pass
    trajdebug.flush()
    return path


def test_run_list_sorts_by_cost_and_shows_tokens(page: Any, session_store: Path) -> None:
    """The cost column links sort the run list by cost, most expensive first, then cheapest first."""
    with Server(session_store, port=0) as srv:
        page.goto(srv.url)
        page.click("a.sort[data-sort=cost]")
        page.wait_for_url("**sort=cost**")
        costs = page.locator("#runs tbody td.cost").all_text_contents()
        priced = [float(c.strip("$")) for c in costs if c]
        assert len(priced) == 3 and priced == sorted(priced, reverse=True)
        assert "5,002" in page.locator("#runs tbody td.tokens").all_text_contents()
        page.click("a.sort[data-sort=cost]")
        page.wait_for_url("**order=asc**")
        costs = [float(c.strip("$")) for c in page.locator("#runs tbody td.cost").all_text_contents() if c]
        assert costs == sorted(costs)
        assert page.errors == []


def test_sessions_page_lists_a_session_and_its_runs_in_order(page: Any, session_store: Path) -> None:
    """/sessions lists the session with its run and failure counts; its page shows its runs oldest first, as turns."""
    runs = [r for r in Store(session_store).load_runs() if r.metadata.get("session") == "s-1"]
    with Server(session_store, port=0) as srv:
        page.goto(srv.url + "sessions")
        row = page.locator("#sessions tbody tr")
        assert row.count() == 1
        cells = row.locator("td").all_text_contents()
        assert cells[:3] == ["s-1", "3", "1"]
        row.locator("a").click()
        page.wait_for_url("**/sessions/s-1")
        turns = page.eval_on_selector_all("#turns .turn", "ns => ns.map(n => n.dataset.run)")
        assert turns == [r.run_id for r in sorted(runs, key=lambda r: r.start_ns)]
        assert page.errors == []


def test_another_loopback_address_gets_a_token_and_serves_with_it(store: Path) -> None:
    """--host 127.0.0.2 issues a token; requests with it are served (not refused by the Host check), without it 401."""
    with Server(store, host="127.0.0.2", port=0) as srv:
        assert srv.token
        assert _get(srv.url)[0] == 200
        assert _get(srv.url.split("?")[0])[0] == 401


def test_compare_page_offers_only_passing_runs_as_good(server: Server, store: Path) -> None:
    """The good list holds passing runs that are not replays; the bad list the failing original runs."""
    import re

    runs = {r.run_id: r for r in Store(store).load_runs()}
    _, body, _ = _get(server.url + "compare")
    good_html, bad_html = body.split('name="bad"')
    good_ids = list(re.findall(r'<option value="([^"]+)"', good_html))
    bad_ids = list(re.findall(r'<option value="([^"]+)"', bad_html))
    assert good_ids and bad_ids
    assert all(runs[r].outcome == "success" and not runs[r].metadata.get("replay_of") for r in good_ids)
    assert all(runs[r].outcome != "success" and not runs[r].metadata.get("replay_of") for r in bad_ids)
    assert any(r.metadata.get("replay_of") and r.outcome == "success" for r in runs.values())


def test_compare_page_of_runs_given_different_inputs_says_so_and_shows_requests(tmp_path: Path) -> None:
    """The compare page words a diff as ``trajdebug diff`` does: a line says the two runs were given different
    inputs (behaviour, not values), and a step whose request differs shows the two requests."""
    import html

    path = tmp_path / "runs.jsonl"
    ids = []
    for ticket in ("T-9", "T-12"):
        with trajdebug.run("bike-quote", path=str(path), task=f"quote ticket {ticket}") as r:
            with trajdebug.step("lookup", kind="tool", input={"ticket": ticket}) as s:
                s.output = {"bike": "road" if ticket == "T-9" else "gravel"}
            if ticket == "T-12":
                r.fail("wrong bike")
        ids.append(r.run_id)
    with Server(path, port=0) as srv:
        _, body, _ = _get(f"{srv.url}compare?good={ids[0]}&bad={ids[1]}")
    text = html.unescape(body)
    assert "inputs differ: task 'quote ticket T-9' vs 'quote ticket T-12'; this compares behaviour, not values" in text
    assert 'good request: {"ticket":"T-9"}' in text and 'bad request: {"ticket":"T-12"}' in text


def test_compare_page_shows_the_requests_and_the_outputs_of_a_row_whose_request_differs(tmp_path: Path) -> None:
    """A row whose request differs shows, on each side, the request and, when it differs too, the output, as
    ``trajdebug diff`` does: the two sides are not left without what each step answered."""
    import html

    path = tmp_path / "runs.jsonl"
    ids = []
    for ticket, bike in (("T-9", "road"), ("T-12", "gravel")):
        with trajdebug.run("bike-quote", path=str(path), task="quote the ticket") as r:
            with trajdebug.step("read_ticket", kind="tool", input={"inbox": 1}) as t:
                t.output = ticket
            with trajdebug.step("lookup", kind="tool", input={"ticket": t.output}) as s:
                s.output = {"bike": bike}
            if ticket == "T-12":
                r.fail("wrong bike")
        ids.append(r.run_id)
    with Server(path, port=0) as srv:
        _, body, _ = _get(f"{srv.url}compare?good={ids[0]}&bad={ids[1]}")
    text = html.unescape(body)
    row = text[text.index("lookup</strong>") :]
    row = row[: row.index("</tr>")]
    assert 'good request: {"ticket":"T-9"}' in row and 'good: {"bike":"road"}' in row
    assert 'bad request: {"ticket":"T-12"}' in row and 'bad: {"bike":"gravel"}' in row
    assert "inputs differ" not in text


def test_compare_from_a_failed_run_picks_the_passing_run_given_the_same_input(tmp_path: Path) -> None:
    """From a failed run, the compare page pairs it with the passing run of the same input, not the newest passing
    run of another (nu30 finding 4: the newest other input's run was offered, and every value then differed)."""
    import html

    path = tmp_path / "runs.jsonl"
    ids = {}
    for ticket, bike, fail in (("T-12", "gravel", False), ("T-12", "road", True), ("T-9", "road", False)):
        with trajdebug.run("bike-quote", path=str(path), task=f"quote ticket {ticket}") as r:
            with trajdebug.step("lookup", kind="tool", input={"ticket": ticket}) as s:
                s.output = {"bike": bike}
            if fail:
                r.fail("wrong bike")
        ids[(ticket, fail)] = r.run_id
    with Server(path, port=0) as srv:
        _, body, _ = _get(f"{srv.url}compare?bad={ids[('T-12', True)]}")
    text = html.unescape(body)
    assert "inputs differ" not in text
    assert f'value="{ids[("T-12", False)]}" selected' in text or f"{ids[('T-12', False)][:12]}" in text
    assert 'good: {"bike":"gravel"}' in text


def test_a_run_and_a_mark_written_by_another_process_after_start_appear_on_the_next_request(tmp_path: Path) -> None:
    """With serve up, a `trajdebug mark` and a run recorded by other processes show in the next /api/runs."""
    import json
    import subprocess
    import sys

    from tests.builders import recorded_shop_store

    store = tmp_path / "shop.db"
    _, eve1, _ = recorded_shop_store(store)
    record = (
        "import trajdebug\n"
        f"with trajdebug.run('smoke-check', store={str(store)!r}) as h, trajdebug.step('x', kind='tool') as s:\n"
        "    s.output = 1\n"
        "print(h.run_id)\n"
    )
    with Server(store, port=0) as srv:
        api = srv.url.rstrip("/") + "/api/runs"
        before = json.loads(_get(api)[1])["runs"]
        assert len(before) == 3 and sum(r["outcome"] == "failure" for r in before) == 1
        cmd = [sys.executable, "-m", "trajdebug", "mark", str(store), "--run", eve1[:10], "--failed", "told the wrong date"]
        subprocess.run(cmd, check=True, capture_output=True)
        new = subprocess.run([sys.executable, "-c", record], check=True, capture_output=True, text=True).stdout.strip()
        after = {r["run_id"]: r for r in json.loads(_get(api)[1])["runs"]}
    assert new in after and len(after) == 4
    assert after[eve1]["outcome"] == "failure" and after[eve1]["failure_reason"] == "told the wrong date"


def test_compare_page_offers_runs_by_outcome_and_warns_when_good_failed_and_bad_passed(tmp_path: Path) -> None:
    """From a failed run, the good select offers passing runs and the bad select failing ones (nu64b: the failed
    run was offered as good, the passing run chosen for it as bad); a failed GOOD and a passing BAD named in
    the URL stay selectable, each in its own select, and the page warns in one line."""
    import html
    import re

    path = tmp_path / "runs.jsonl"
    ids = []
    for ticket in ("T-9", "T-12"):
        with trajdebug.run("bike-quote", path=str(path), task=f"quote ticket {ticket}") as r:
            with trajdebug.step("lookup", kind="tool", input={"ticket": ticket}) as s:
                s.output = {"bike": "road"}
            if ticket == "T-12":
                r.fail("wrong bike")
        ids.append(r.run_id)
    passed, failed = ids
    with Server(path, port=0) as srv:
        _, body, _ = _get(f"{srv.url}compare?bad={failed}")
        _, swapped, _ = _get(f"{srv.url}compare?good={failed}&bad={passed}")
    good_html, bad_html = body.split('name="bad"')
    assert re.findall(r'<option value="([^"]+)"', good_html) == [passed]
    assert re.findall(r'<option value="([^"]+)"', bad_html) == [failed]
    assert "warning" not in body
    good_html, bad_html = swapped.split('name="bad"')
    assert failed in good_html and passed in bad_html
    assert f"warning: GOOD {failed[:12]} failed and BAD {passed[:12]} passed" in html.unescape(swapped)
