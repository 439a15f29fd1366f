"""The self-contained HTML report, read by a real browser (Chromium through Playwright)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from trajdebug.analysis import analyze
from trajdebug.core.model import ErrorInfo, Run
from trajdebug.demo import run_demo
from trajdebug.report.html import embed_json, report_data, report_html, write_report
from trajdebug.store import Store


@pytest.fixture
def demo_report(tmp_path: Path) -> tuple[Path, Any]:
    """The report of the default demo run (bad-sql-filter), written to a file; hand-ranked, so its candidates
    carry no confidence (null), the empty field a card must hide."""
    run = run_demo("bad-sql-filter", store=Store(tmp_path / "demo.db"))
    analysis = analyze(run, model=None)
    return write_report(tmp_path / "report.html", analysis), analysis


def _open(page: Any, path: Path) -> None:
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready]")


def test_embedded_json_cannot_close_its_script_element() -> None:
    """Every <, > and & is escaped, and JSON.parse gets the same value back."""
    value = {"out": "</script><script>alert(1)</script><!-- & \u2028"}
    text = embed_json(value)
    assert not re.search(r"[<>&\u2028]", text)
    assert json.loads(text) == value


def test_report_data_carries_the_run_its_analysis_and_the_graph(demo_report: tuple[Path, Any]) -> None:
    """The document holds every step, Analysis.to_dict() unchanged, the lifecycle and a laid-out graph."""
    _, analysis = demo_report
    data = report_data(analysis)
    assert [s["step_id"] for s in data["run"]["steps"]] == [s.step_id for s in analysis.run.steps]
    assert data["analysis"] == json.loads(json.dumps(analysis.to_dict()))
    assert data["lifecycle"]["chains"][0]["critical"] is True
    assert "| error | step |" in data["errors_markdown"]
    view = data["graph"]["views"][data["graph"]["default"]]
    assert len(view["nodes"]) == len(analysis.run.steps)


def test_report_is_self_contained_and_its_policy_blocks_the_rest(page: Any, demo_report: tuple[Path, Any]) -> None:
    """No external resource in the file; in the browser the page may not fetch nor run a script it adds."""
    html = demo_report[0].read_text()
    assert not re.search(r"""<(script|link|img|iframe)[^>]*\s(src|href)=""", html)
    _open(page, demo_report[0])
    result = page.evaluate(
        """async () => {
            const seen = [];
            document.addEventListener('securitypolicyviolation', (e) => seen.push(e.effectiveDirective));
            try { await fetch('http://127.0.0.1:9/x'); } catch (e) {}
            const s = document.createElement('script');
            s.textContent = 'window.__added = 1';
            document.body.appendChild(s);
            await new Promise((r) => setTimeout(r, 50));
            return {seen, added: window.__added === 1};
        }"""
    )
    assert "connect-src" in result["seen"] and "script-src-elem" in result["seen"]
    assert result["added"] is False


def test_demo_report_draws_waterfall_causes_and_chain_table(page: Any, demo_report: tuple[Path, Any]) -> None:
    """Opened in Chromium: a row per step, the ranked causes, the chain table with its critical chain."""
    path, analysis = demo_report
    _open(page, path)
    assert page.locator(".wf-row").count() == len(analysis.run.steps)
    names = page.locator(".cause .c-name").all_text_contents()
    assert names[0] == "write_sql"
    page.click("#tabs [data-tab=errors]")
    assert "CRITICAL FAILURE" in page.locator(".chain h3").first.text_content()
    assert page.locator(".etable tbody tr").count() == 1
    assert page.errors == []


def test_clicking_a_step_shows_it_in_the_inspector(page: Any, demo_report: tuple[Path, Any]) -> None:
    """A click on run_sql's row shows its name, its SQL input and its rows as output."""
    path, analysis = demo_report
    _open(page, path)
    run_sql = next(s for s in analysis.run.steps if s.name == "run_sql")
    page.click(f'.wf-row[data-step="{run_sql.step_id}"]')
    inspector = page.locator("#inspector")
    assert inspector.locator(".i-name").text_content() == "run_sql"
    assert "SELECT region" in inspector.text_content()
    assert page.locator(f'.wf-row.sel[data-step="{run_sql.step_id}"]').count() == 1


def test_clicking_a_root_cause_highlights_its_path(page: Any, demo_report: tuple[Path, Any]) -> None:
    """Choosing the third cause highlights exactly its path in the waterfall and in the graph."""
    path, analysis = demo_report
    _open(page, path)
    cause = analysis.to_dict()["root_causes"][2]
    page.click('.cause[data-cause="2"]')
    on_path = page.eval_on_selector_all(".wf-row.onpath", "rows => rows.map(r => r.dataset.step)")
    assert set(on_path) == set(cause["path"])
    assert page.locator("#inspector .i-name").text_content() == cause["name"]
    page.click("#tabs [data-tab=graph]")
    page.wait_for_selector("#graph .node")
    assert page.locator("#graph .node.onpath").count() == len(cause["path"])
    assert page.locator("#graph .edge.onpath").count() == len(cause["path"]) - 1
    # Back to the top cause: the highlight follows.
    page.click('.cause[data-cause="0"]')
    assert page.locator("#graph .node.onpath").count() == len(analysis.to_dict()["root_causes"][0]["path"])


def test_a_large_report_opens_collapsed_and_a_group_opens_on_click(page: Any, tmp_path: Path) -> None:
    """A 2,000-step run: the waterfall draws only the rows in view; the graph opens a group's view."""
    from benchmarks.report_html import agent_run

    run = agent_run(2_000, agents=8)
    path = write_report(tmp_path / "big.html", analyze(run))
    _open(page, path)
    assert 0 < page.locator(".wf-row").count() < 200
    page.click("#tabs [data-tab=graph]")
    page.select_option("#graph select", "overview")  # it opens on the failure's slice
    page.wait_for_selector("#graph .node.t-group")
    page.locator("#graph .node.t-group").first.click()
    assert "researcher-" in page.locator(".crumbs").text_content()
    assert page.locator("#graph .node").count() > 1
    assert page.errors == []


def _assert_nothing_ran(page: Any) -> None:
    assert page.evaluate("() => window.__pwned") is None
    assert page.dialogs == []
    assert page.locator("#planted").count() == 0
    assert page.locator("img").count() == 0


def test_planted_markup_in_a_run_never_executes(page: Any, tmp_path: Path, hostile_run: Run) -> None:
    """<script>, onerror= and javascript: in an LLM output, step names and an error message stay text."""
    path = write_report(tmp_path / "hostile.html", analyze(hostile_run))
    _open(page, path)
    for row in page.locator(".wf-row").all():
        row.click()
        for button in page.locator("#inspector .expand").all():
            button.click()
    for tab in ("graph", "errors", "waterfall"):
        page.click(f"#tabs [data-tab={tab}]")
    page.locator(".cause").first.click()
    _assert_nothing_ran(page)
    # The payload is shown, as text.
    assert "<script>window.__pwned" in page.locator("#head").text_content()
    plan = next(s for s in hostile_run.steps if s.name.startswith("plan "))
    page.click(f'.wf-row[data-step="{plan.step_id}"]')
    assert "Sure! <script>" in page.locator("#inspector").text_content()
    assert page.errors == []


def test_nav_links_are_escaped() -> None:
    """The web UI's header links are escaped like everything else."""
    from trajdebug.demo import run_demo as _demo

    run = _demo("bad-sql-filter", store=Store("nav.db"))
    html = report_html(analyze(run), nav=[('"><script>x</script>', '/x?a="b"')])
    assert '<a href="/x?a=&quot;b&quot;">&quot;&gt;&lt;script&gt;x&lt;/script&gt;</a>' in html


def _usage_run() -> Run:
    """A failed run of two LLM calls with model and tokens, one error."""
    import trajdebug
    from trajdebug.testing import capture_runs

    with capture_runs() as cap, trajdebug.run("priced"):
        for i, (p, c) in enumerate(((1000, 200), (3000, 100))):
            with trajdebug.step(f"ask{i}", kind="llm") as s:
                s.usage(model="gpt-4o", prompt_tokens=p, completion_tokens=c)
                s.output = {"role": "assistant", "content": "x"}
        with pytest.raises(ValueError), trajdebug.step("parse"):
            raise ValueError("bad answer")
    [run] = cap
    return run


def test_report_shows_tokens_and_cost_per_run_and_step(page: Any, tmp_path: Path) -> None:
    """The header carries the run's tokens and cost, a step's inspector its model, tokens and cost; counts of one are singular."""
    from trajdebug.usage import format_cost, run_usage

    run = _usage_run()
    total = run_usage(run)
    path = write_report(tmp_path / "r.html", analyze(run))
    _open(page, path)
    head = page.locator("#head").text_content() or ""
    assert f"{total.total_tokens:,} tokens" in head and format_cost(total.cost) in head
    assert "1 error " in head and "1 errors" not in head
    ask = next(s for s in run.steps if s.name == "ask1")
    page.click(f'.wf-row[data-step="{ask.step_id}"]')
    facts = page.locator("#inspector .facts").text_content() or ""
    assert "3000 in, 100 out" in facts and "gpt-4o" in facts
    assert page.errors == []


def test_header_counts_the_verified_candidates_own_replays(page: Any, tmp_path: Path) -> None:
    """The header counts the replays of the verified candidate (as its card does), naming the total only when it differs."""
    run = _usage_run()
    analysis = analyze(run)
    sid = run.steps[0].step_id
    verification = {
        "run_id": run.run_id,
        "verified": sid,
        "replays": 3,
        "problem": None,
        "passing_run": None,
        "candidates": [{"step_id": sid, "name": "ask0", "status": "verified", "reason": "ok", "trial": {"replays": 1}}],
    }
    path = write_report(tmp_path / "r.html", analysis, verification=verification)
    _open(page, path)
    text = page.locator(".h-verify").text_content() or ""
    assert "(1 replay of 3 in all)" in text


def test_a_large_failed_run_opens_on_the_failure_slice_and_finds_steps_by_name(page: Any, tmp_path: Path) -> None:
    """A 2,000-step failed run's graph opens on the failure's slice (its steps shown, the rest collapsed into
    few groups); typing a step's name marks its node, Enter selects it in the inspector."""
    from benchmarks.report_html import agent_run

    run = agent_run(2_000, agents=8)
    analysis = analyze(run)
    data = report_data(analysis)
    if run.outcome != "failure" or not analysis.root_causes:
        pytest.fail("the benchmark's large run should fail with candidates")
    assert data["graph"]["default"] == "slice"
    view = data["graph"]["views"]["slice"]
    shown = {n["step"] for n in view["nodes"] if n["type"] == "step"}
    top = analysis.root_causes[0]
    assert top.step_id in shown and all(f.step_id in shown for f in analysis.failures)
    assert len(view["nodes"]) <= 120 < len(run.steps)
    path = write_report(tmp_path / "big.html", analysis)
    _open(page, path)
    page.click("#tabs [data-tab=graph]")
    page.wait_for_selector("#graph .node")
    assert page.locator("#graph select").input_value() == "slice"
    name = run.step(top.step_id).name
    page.fill("#graph .g-search", name)
    assert page.locator("#graph .node.match").count() >= 1
    page.press("#graph .g-search", "Enter")
    assert page.locator("#inspector .i-name").text_content() == next(s.name for s in run.steps if name in s.name)
    assert page.errors == []


def _stage_transform(page: Any) -> tuple[float, float, float]:
    text = page.locator("#graph svg g.g-stage").first.get_attribute("transform") or ""
    match = re.fullmatch(r"translate\((-?[\d.e-]+) (-?[\d.e-]+)\) scale\((-?[\d.e-]+)\)", text)
    assert match, text
    x, y, s = (float(v) for v in match.groups())
    return x, y, s


def test_the_graph_zooms_with_the_wheel_and_pans_by_dragging_the_background(page: Any, tmp_path: Path) -> None:
    """On a 2,000-step run's graph, the wheel zooms in around the pointer, dragging the background moves the
    drawing by the distance dragged, and "fit" brings the whole view back."""
    from benchmarks.report_html import agent_run

    path = write_report(tmp_path / "big.html", analyze(agent_run(2_000, agents=8)))
    _open(page, path)
    page.click("#tabs [data-tab=graph]")
    page.wait_for_selector("#graph .node")
    frame = page.locator("#graph .g-frame").bounding_box()
    s0 = _stage_transform(page)[2]
    page.mouse.move(frame["x"] + 10, frame["y"] + 10)
    page.mouse.wheel(0, -200)
    page.wait_for_function("s => !document.querySelector('#graph svg g.g-stage').getAttribute('transform').endsWith(`scale(${s})`)", arg=s0)
    x1, y1, s1 = _stage_transform(page)
    assert s1 > s0
    page.mouse.move(frame["x"] + 5, frame["y"] + frame["height"] - 5)  # a corner: the background, not a node
    page.mouse.down()
    page.mouse.move(frame["x"] + 65, frame["y"] + frame["height"] - 45, steps=4)
    page.mouse.up()
    x2, y2, s2 = _stage_transform(page)
    assert (round(x2 - x1), round(y2 - y1), s2) == (60, -40, s1)
    page.click("#graph [data-act=fit]")
    assert _stage_transform(page)[2] <= s1
    assert page.errors == []


def test_a_candidates_signals_are_said_in_words_and_no_bare_field_is_shown(page: Any, demo_report: tuple[Path, Any]) -> None:
    """The demo's top candidate has signals (a list of names) and no confidence (null): the card says them in
    words with the legend they are listed in ("dropped (traced from the failure's values)", docs/analysis.md
    "Signals"), never the bare "signals: lineage:dropped" (nu32 finding 8), nor "label:" (its head names it),
    nor "confidence: null"."""
    path, analysis = demo_report
    top = analysis.to_dict()["root_causes"][0]
    assert top["confidence"] is None and top["signals"] == ["lineage:dropped"]  # what the card is given
    _open(page, path)
    card = page.locator(".cause").first
    said = card.locator(".c-signals").inner_text()
    assert "dropped (traced from the failure's values)" in said and 'docs/analysis.md, "Signals"' in said
    assert "signals:" not in card.inner_text() and "label:" not in card.inner_text()
    assert "null" not in card.inner_text() and card.locator(".c-extra").count() == 0
    assert page.errors == []


def test_a_candidates_confidence_reads_as_a_percentage(page: Any, tmp_path: Path) -> None:
    """Ranked by the learned model, each card shows its calibrated confidence as the CLI prints it,
    "confidence 37%", in its head, never the raw float (0.3712...) among the extra fields."""
    run = run_demo("bad-sql-filter", store=Store(tmp_path / "demo.db"))
    analysis = analyze(run)
    top = analysis.to_dict()["root_causes"][0]
    assert isinstance(top["confidence"], float)  # what the card is given
    path = write_report(tmp_path / "report.html", analysis)
    _open(page, path)
    card = page.locator(".cause").first
    # JS Math.round rounds .5 up; Python's round() to even: floor(x + 0.5) is the page's rounding.
    assert card.locator(".c-head .c-conf").inner_text() == f"confidence {math.floor(top['confidence'] * 100 + 0.5)}%"
    assert "confidence" not in (card.locator(".c-extra").inner_text() if card.locator(".c-extra").count() else "")
    assert not re.search(r"\d\.\d{5,}", card.inner_text())
    assert page.errors == []


def test_an_inferred_edge_without_a_confidence_shows_no_nan(page: Any, demo_report: tuple[Path, Any], monkeypatch: Any) -> None:
    """A candidate that hangs on an inferred edge whose confidence is missing (null, from an older or
    foreign document) names the edge's step and prints no number, never "NaN"."""
    import trajdebug.report.html as html

    path, analysis = demo_report
    made = html.report_data
    sid = analysis.run.steps[0].step_id

    def with_a_bare_edge(*args: Any, **kw: Any) -> dict[str, Any]:
        data = made(*args, **kw)
        data["analysis"]["root_causes"][0]["inferred"] = [{"step_id": sid, "confidence": None}]
        return data

    monkeypatch.setattr(html, "report_data", with_a_bare_edge)
    write_report(path, analysis)
    _open(page, path)
    note = page.locator(".cause").first.locator(".note", has_text="inferred edges").inner_text()
    assert analysis.run.steps[0].name in note and "NaN" not in note and "(" not in note
    assert page.errors == []


def test_an_inferred_dependency_of_full_confidence_reads_as_one_not_nan(page: Any, tmp_path: Path) -> None:
    """The format omits a dependency's confidence when it is 1.0 (its default), so the inspector reads a
    missing one as 1.00: a value inferred at full confidence (an item passed on whole) shows "inferred 1.00"."""
    from trajdebug.core.model import Dependency, Step

    edge = Dependency("s1", kind="data", origin="inferred", confidence=1.0, key="rows[0].kiln")
    run = Run(
        "r-kiln",
        "kiln-scheduler",
        steps=(
            Step("s1", "read_kilns", kind="tool", output={"rows": [{"kiln": "K-4"}]}),
            Step("s2", "pick_kiln", kind="other", input={"kiln": "K-4"}, output="K-4", deps=(edge,)),
        ),
        outcome="success",
    )
    path = write_report(tmp_path / "report.html", analyze(run, model=None))
    _open(page, path)
    page.click('.wf-row[data-step="s2"]')
    deps = page.locator("#inspector ul.deps").first.inner_text()
    assert "inferred 1.00" in deps and "NaN" not in deps
    assert page.errors == []


def test_the_report_shows_the_verdict_and_the_passing_runs_it_compared_with_as_text(page: Any, tmp_path: Path) -> None:
    """The learned model's verdict for the run and the passing runs its evidence was compared with are on the
    page in `trajdebug analyze`'s words; a reference's id holding markup is shown as text, never run."""
    from tests.conftest import HOSTILE

    from trajdebug.core.model import replace
    from trajdebug.report.analysis import compared_note, verdict_note

    store = Store(tmp_path / "demo.db")
    run = run_demo("bad-sql-filter", store=store)
    passing = replace(run_demo(None, store=store), run_id="ref-" + HOSTILE)
    analysis = analyze(run, references=[passing])
    assert analysis.verdict in ("confident", "likely", "unsure")
    path = write_report(tmp_path / "report.html", analysis)
    _open(page, path)
    verdict = page.locator("#run-verdict").text_content()
    assert verdict == verdict_note(analysis)
    assert verdict.startswith("verdict: " + analysis.verdict)
    compared = page.locator("#run-compared").text_content()
    assert compared == compared_note(analysis)
    assert compared.startswith("compared with 1 passing run of this agent: ref-<script>")
    assert page.evaluate("window.__pwned") is None and page.locator("#planted").count() == 0
    assert page.errors == []


def test_a_hand_ranked_report_shows_no_verdict_and_says_it_compared_with_no_run(page: Any, demo_report: tuple[Path, Any]) -> None:
    """A run ranked by hand (no learned model, no verdict) and with no passing run shows no verdict line and
    says its evidence came from the run alone."""
    path, _ = demo_report
    _open(page, path)
    assert page.locator("#run-verdict").count() == 0
    assert "no passing run of this agent" in page.locator("#run-compared").text_content()


def test_a_cards_path_names_a_step_whose_name_repeats_with_its_id(page: Any, tmp_path: Path) -> None:
    """A card's path names a step with its id where another step of the run has its name (two get_profile
    calls: which one the path goes through), and a step with a name of its own by name alone; its inferred
    edges say what they are in words (nu32 finding 8)."""
    from trajdebug.core.model import Dependency, Step

    inferred = Dependency("p2", kind="data", origin="inferred", confidence=0.9)
    run = Run(
        "r-prof",
        "invoices",
        steps=(
            Step("p1", "get_profile", kind="tool", input={"id": "CU-1042"}, output={"vat": "DE1"}, start_ns=1, end_ns=2),
            Step("p2", "get_profile", kind="tool", input={"id": "CU-1047"}, output={"vat": "DE1"}, start_ns=3, end_ns=4),
            Step("s3", "submit", kind="tool", input={"vat": "DE1", "id": "CU-1047"}, status="error",
                 error=ErrorInfo("ValueError", "VAT DE1 is not CU-1047's"), start_ns=5, end_ns=6, deps=(inferred,)),
        ),
        outcome="failure",
    )
    analysis = analyze(run, model=None)
    top = next(c for c in analysis.root_causes if c.path[:1] == ("p2",))
    path = write_report(tmp_path / "report.html", analysis)
    _open(page, path)
    card = page.locator(".cause").nth(analysis.root_causes.index(top))
    assert card.locator(".c-path").inner_text() == "path: get_profile#p2 → submit"
    assert "found by content and not recorded" in card.inner_text()
    assert page.errors == []


# -- the passing run of the same input, and the waterfall's arcs (nu33 finding 11) -------------------------------


def _same_input_pair(tmp_path: Path, **good_changes: Any) -> tuple[Run, Run]:
    """The demo's failed run (bad-sql-filter) and its passing run of the same task (``good_changes``: fields of the
    passing run replaced, e.g. its ``run_id`` or ``metadata``)."""
    from trajdebug.core.model import replace

    store = Store(tmp_path / "pair.db")
    bad = run_demo("bad-sql-filter", store=store)
    good = run_demo(None, store=store)
    return bad, replace(good, **good_changes) if good_changes else good


def test_the_overview_names_the_same_input_run_and_links_where_the_runs_part(page: Any, tmp_path: Path) -> None:
    """With a passing run of the same input among the references, the overview names it, says how it was matched
    (the task id) and links the first step where the runs part, as `trajdebug diff` names it: the link opens the
    waterfall on that step, from any tab."""
    from trajdebug.core.model import replace
    from trajdebug.replay.diffview import parting

    bad, good = _same_input_pair(tmp_path)
    other = replace(good, run_id="other-task", metadata={**good.metadata, "task": "another question"})
    analysis = analyze(bad, references=[good, other])
    assert analysis.same_input == (good.run_id,)
    same = parting(good, bad)
    first = same["first_divergence"]
    assert first is not None and first["label"] == "write_sql#" + first["step_id"][-6:]
    assert same["matched_by"] == "task" and same["matched_words"] == "task id"
    data = report_data(analysis, same_input=same)
    assert data["same_input"]["compared"] is True and data["same_input"]["references"] == 2
    _open(page, write_report(tmp_path / "same.html", analysis, same_input=same))
    line = page.locator("#run-same-input").text_content() or ""
    assert line.startswith(f"same input: passing run {good.run_id[:12]} (one of the 2 runs compared), matched by its task id (task: What was our revenue")
    assert f"The runs part first at {first['label']}: same request, different output (" in line
    page.click("#tabs [data-tab=graph]")
    page.click("#same-input-part")
    assert page.locator("#waterfall").is_visible() and not page.locator("#graph").is_visible()
    assert page.locator(f'.wf-row.sel[data-step="{first["step_id"]}"]').count() == 1
    assert page.locator("#inspector .i-name").text_content() == "write_sql"
    assert page.errors == []


def test_the_overview_says_nothing_of_a_same_input_run_when_there_is_none(page: Any, tmp_path: Path) -> None:
    """A passing run of another task is a reference but not the same input: no line, no document; a passing run
    is paired with none; without the caller's `parting`, the analysis's same-input reference is named by id."""
    bad, other = _same_input_pair(tmp_path, metadata={"task": "another question"})
    analysis = analyze(bad, references=[other])
    assert analysis.references == (other.run_id,) and analysis.same_input == ()
    assert report_data(analysis)["same_input"] is None
    _open(page, write_report(tmp_path / "other.html", analysis))
    assert page.locator("#run-compared").count() == 1
    assert page.locator("#run-same-input").count() == 0
    # A same-input run the caller found that the ranking did not compare (older than the 50 newest references, or
    # a run recorded to verify another) says so.
    from trajdebug.replay.diffview import parting

    first_bad = bad
    bad, good = _same_input_pair(tmp_path / "b")
    _open(page, write_report(tmp_path / "uncompared.html", analysis, same_input=parting(good, first_bad)))
    line = page.locator("#run-same-input").text_content() or ""
    assert line.startswith(f"same input: passing run {good.run_id[:12]} (not among the runs compared), matched by its task id")
    assert report_data(analyze(good, references=[good]))["same_input"] is None
    named = analyze(bad, references=[good])
    assert report_data(named)["same_input"] == {"run_id": good.run_id, "compared": True, "references": 1}
    _open(page, write_report(tmp_path / "named.html", named))
    line = page.locator("#run-same-input").text_content() or ""
    assert line == f"same input: passing run {good.run_id[:12]} (the run compared). trajdebug diff shows where the runs part."
    assert page.errors == []


def test_the_same_input_line_escapes_the_runs_id_and_task(page: Any, tmp_path: Path) -> None:
    """The same-input run's id and its task are the recording's text: shown as text, never markup."""
    from tests.conftest import HOSTILE

    from trajdebug.core.model import replace
    from trajdebug.replay.diffview import parting

    bad, good = _same_input_pair(tmp_path)
    bad = replace(bad, metadata={**bad.metadata, "task": HOSTILE})
    good = replace(good, run_id="ref-" + HOSTILE, metadata={**good.metadata, "task": HOSTILE})
    analysis = analyze(bad, references=[good])
    assert analysis.same_input == (good.run_id,)
    path = write_report(tmp_path / "hostile.html", analysis, same_input=parting(good, bad))
    assert "<script>window.__pwned" not in path.read_text()
    _open(page, path)
    line = page.locator("#run-same-input").text_content() or ""
    assert line.startswith("same input: passing run ref-<script>")
    assert "(task: <script>window.__pwned" in line
    assert page.evaluate("window.__pwned") is None and page.locator("#planted").count() == 0
    assert page.errors == []


def _propagating_run(at_start: bool) -> Run:
    """A failed run whose error propagates from a tool to the agent step around it: at the end of the run, as in
    nu33's support desk (the arc's ends beside the duration column), or, with ``at_start``, at its start, an
    outer step recovering and a slow step after (the arc's ends beside the names)."""
    import time

    import trajdebug
    from trajdebug.testing import capture_runs

    def failing_agent() -> None:
        with trajdebug.step("refund_agent", kind="agent"):
            with trajdebug.step("lookup_customer", kind="tool") as s:
                s.output = {"id": "C-1012"}
            with trajdebug.step("issue_refund", kind="tool"):
                raise PermissionError("order O-7731 does not belong to customer C-1012")

    with capture_runs() as cap, trajdebug.run("support-desk", task="tickets T-501"):
        if at_start:
            with trajdebug.step("desk", kind="agent"):
                try:
                    failing_agent()
                except PermissionError:
                    pass
            with trajdebug.step("triage", kind="llm") as s:
                time.sleep(0.05)
                s.output = "done"
            trajdebug.current_run().fail("refund not issued")
        else:
            with trajdebug.step("triage", kind="llm") as s:
                time.sleep(0.05)
                s.output = "refund"
            with pytest.raises(PermissionError):
                failing_agent()
    [run] = cap
    return run


ARC_BOXES = """() => {
  const box = (r) => ({ l: r.left, r: r.right, t: r.top, b: r.bottom });
  const text = (n) => { const range = document.createRange(); range.selectNodeContents(n); return box(range.getBoundingClientRect()); };
  const lane = box(document.querySelector('#waterfall .wf-lane').getBoundingClientRect());
  const svg = document.querySelector('#waterfall .wf-arcs').getBoundingClientRect();
  const arcs = [...document.querySelectorAll('#waterfall path.arc')].map((p) => {
    const b = box(p.getBoundingClientRect());
    const s = p.getPointAtLength(0);
    return { ...b, x0: svg.left + s.x, y0: svg.top + s.y };
  });
  const texts = [...document.querySelectorAll('#waterfall .dur, #waterfall .wf-name .nm, #waterfall .wf-name .sid, #waterfall .wf-name .badge')]
    .filter((n) => n.textContent).map((n) => ({ cls: n.className, ...text(n) }));
  const dots = [...document.querySelectorAll('#waterfall .wf-lane .dot')].map((d) => { const r = d.getBoundingClientRect(); return { x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2 }; });
  return { lane, arcs, texts, dots };
}"""


@pytest.mark.parametrize("at_start", [False, True])
def test_the_propagation_arc_covers_no_text_of_any_column(browser: Any, tmp_path: Path, at_start: bool) -> None:
    """nu33 finding 11: the red propagation arc was drawn over the duration column ("8.6ms", "8.4µs"), its ends
    placed on a lane 56 px wider than the bars'.  At every width the page takes (the one-column layout under
    1,100 px included) and pixel ratio, each arc starts on its error's dot, stays inside the lane and its box
    meets no text box of the duration or name column, and stays visible (spans its rows)."""
    path = write_report(tmp_path / "arc.html", analyze(_propagating_run(at_start)))
    errors: list[str] = []
    for width, scale in ((1400, 1), (1920, 2), (1000, 1), (1180, 1.5)):
        ctx = browser.new_context(viewport={"width": width, "height": 900}, device_scale_factor=scale)
        page = ctx.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        _open(page, path)
        got = page.evaluate(ARC_BOXES)
        ctx.close()
        assert errors == []
        assert got["arcs"], (width, scale)
        lane = got["lane"]
        for arc in got["arcs"]:
            assert arc["b"] - arc["t"] >= 20, (width, scale, arc)  # spans from one row's middle to another's
            assert lane["l"] - 1.5 <= arc["l"] and arc["r"] <= lane["r"] + 1.5, (width, scale, arc, lane)
            for t in got["texts"]:
                apart = arc["r"] <= t["l"] or t["r"] <= arc["l"] or arc["b"] <= t["t"] or t["b"] <= arc["t"]
                assert apart, (width, scale, arc, t)
        starts = [(a["x0"], a["y0"]) for a in got["arcs"]]
        assert any(abs(x - d["x"]) <= 1.5 and abs(y - d["y"]) <= 3 for x, y in starts for d in got["dots"]), (width, scale, starts, got["dots"])


def test_the_reports_small_costs_are_in_fixed_notation_as_the_cli_writes_them() -> None:
    """The report's script writes a cost below $0.0001 as `format_cost` does (``$0.000049``), never in
    exponent notation (``toPrecision`` wrote ``$1.0e-7``)."""
    import shutil
    import subprocess

    from trajdebug.usage import format_cost

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the report's script")
    js = (Path(__file__).parents[1] / "src/trajdebug/report/assets/core.js").read_text(encoding="utf-8")
    [fn] = re.findall(r"^function fmtCost\(c\) \{.*?^\}", js, flags=re.S | re.M)
    costs = [5e-05, 4.9e-05, 1e-07, 3.3e-09, 0.0123]
    out = subprocess.run([node, "-e", fn + f"console.log(JSON.stringify({costs}.map(fmtCost)))"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [format_cost(c) for c in costs]


def test_the_reports_header_names_the_runs_session_user_tags_task_and_version(tmp_path: Path) -> None:
    """The header of the report (and of serve's run page, the same script) names the session, user, tags, task
    and version a run was recorded with, and leaves out those it was not (nu64b: only in the embedded JSON)."""
    import shutil
    import subprocess

    import trajdebug

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node to run the report's script")
    src = tmp_path / "r.jsonl"
    with trajdebug.run(
        "support", path=str(src), session="s-dan-1", tags=["prod", "refund"], task="refund A103", version="1.4.2",
        metadata={"user_id": "dan"},
    ), trajdebug.step("answer", kind="llm", input={"q": "refund A103"}) as s:
        s.output = "done"
    with trajdebug.run("bare", path=str(src)), trajdebug.step("answer", kind="llm", input={"q": "x"}) as s:
        s.output = "done"
    assets = Path(__file__).parents[1] / "src/trajdebug/report/assets"
    js = (assets / "core.js").read_text(encoding="utf-8") + (assets / "panels.js").read_text(encoding="utf-8")
    fns = "".join(re.findall(r"^function (?:oneLine|runFacts)\(.*?^\}", js, flags=re.S | re.M))
    metas = [report_data(analyze(r))["run"]["metadata"] for r in trajdebug.load_runs(str(src))]
    out = subprocess.run([node, "-e", fns + f"console.log(JSON.stringify({json.dumps(metas)}.map(runFacts)))"],
                         capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [
        [["session", "s-dan-1"], ["user", "dan"], ["tags", "prod, refund"], ["task", "refund A103"], ["version", "1.4.2"]],
        [],
    ]
