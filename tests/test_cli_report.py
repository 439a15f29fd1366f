"""``trajdebug report``, ``trajdebug serve`` and the report ``trajdebug demo`` writes."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

from click.testing import CliRunner

from trajdebug.cli import cli


def invoke(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def test_demo_writes_its_report_and_says_where(tmp_path: Path) -> None:
    """`trajdebug demo` ends by pointing at the HTML report it wrote, which names the injected step's cause."""
    out = invoke("demo", "--no-verify")
    report = tmp_path / "trajdebug-report.html"
    assert report.exists()
    assert f"report: {report}\n" in out
    assert '"name":"write_sql"' in report.read_text()


def test_demo_writes_its_report_beside_the_store_not_in_the_working_directory(tmp_path: Path) -> None:
    """With the store elsewhere, the report goes beside it and the working directory stays clean."""
    store = tmp_path / "elsewhere" / "demo.db"
    store.parent.mkdir()
    (tmp_path / "work").mkdir()
    import os

    os.chdir(tmp_path / "work")
    out = invoke("demo", "--no-verify", "--store", str(store))
    assert (store.parent / "trajdebug-report.html").exists()
    assert list((tmp_path / "work").iterdir()) == []
    assert f"report: {store.parent / 'trajdebug-report.html'}\n" in out
    invoke("demo", "--no-verify", "--no-report", "--report", "x.html")
    assert not (tmp_path / "work" / "x.html").exists()


def test_report_writes_the_latest_original_run(tmp_path: Path) -> None:
    """Without --run, the report is of the newest run that is not a replay or reference run."""
    demo = json.loads(invoke("demo", "--json", "--no-report"))
    data = json.loads(invoke("report", "-o", "r.html", "--json"))
    assert data["run_id"] == demo["run"]["run_id"]
    assert data["bytes"] == (tmp_path / "r.html").stat().st_size
    out = invoke("report", "--run", demo["run"]["run_id"][:8], "-o", "again.html")
    assert out.startswith("wrote again.html")


def test_report_of_an_unwritable_path_is_one_line(tmp_path: Path) -> None:
    """A report that cannot be written says so in one line naming the path."""
    invoke("demo", "--no-verify", "--no-report")
    out = invoke("report", "-o", str(tmp_path / "missing" / "r.html"), code=1)
    assert out.strip().startswith("Error:") and "missing/r.html" in out and len(out.strip().splitlines()) == 1


def test_serve_prints_its_url_and_serves_the_store(tmp_path: Path) -> None:
    """`trajdebug serve --port 0` in a real subprocess: the URL it prints answers with the run list."""
    invoke("demo", "--no-verify", "--no-report")
    proc = subprocess.Popen(
        [sys.executable, "-m", "trajdebug", "serve", str(tmp_path / "trajdebug.db"), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert "http://127.0.0.1:" in line, line
        url = line.split(" at ", 1)[1].split()[0]
        with urllib.request.urlopen(url, timeout=10) as res:
            body = res.read().decode()
        assert res.status == 200 and "sales-report" in body
    finally:
        proc.terminate()
        proc.wait(10)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


def test_report_json_gives_the_verdict_and_the_candidates_that_analyze_json_gives(tmp_path: Path) -> None:
    """``report --json`` carries the verdict and the ranked root causes of ``analyze --json`` beside the report's
    path (nu24, F8: it gave only the path, size and run, and a CI job had to analyze twice)."""
    demo = json.loads(invoke("demo", "--json", "--no-report"))
    run_id = demo["run"]["run_id"]
    report = json.loads(invoke("report", "--run", run_id, "-o", "r.html", "--json"))
    [analysis] = json.loads(invoke("analyze", "--run", run_id, "--json"))["runs"]
    assert report["verdict"] == analysis["verdict"] and report["ranker_verdict"] == analysis["ranker_verdict"]
    assert [c["step_id"] for c in report["root_causes"]] == [c["step_id"] for c in analysis["root_causes"]]


def _embedded(path: Path) -> dict:
    """The document a report file embeds."""
    text = path.read_text()
    start = text.index('id="trajdebug-data">') + len('id="trajdebug-data">')
    return json.loads(text[start : text.index("</script>", start)])


def test_report_names_the_passing_run_of_the_same_input_and_where_the_runs_part(tmp_path: Path) -> None:
    """nu33 finding 11: the run `analyze`'s diff hint names (a passing run of the same input) is the one the report's
    overview names, with how it was matched and the first step where the two runs part (as `diff` says); a
    source with no such run gives none."""
    from trajdebug.demo import run_demo
    from trajdebug.replay.align import align
    from trajdebug.replay.diffview import label
    from trajdebug.store import Store

    store = Store(tmp_path / "pair.db")
    bad = run_demo("bad-sql-filter", store=store)
    alone = json.loads(invoke("report", str(tmp_path / "pair.db"), "-o", "alone.html", "--json"))
    assert alone["same_input"] == [] and _embedded(tmp_path / "alone.html")["same_input"] is None
    good = run_demo(None, store=store)
    hint = json.loads(invoke("analyze", str(tmp_path / "pair.db"), "--json"))["hints"]
    assert hint == [f"trajdebug diff {tmp_path / 'pair.db'}@{good.run_id[:12]} {tmp_path / 'pair.db'}@{bad.run_id[:12]}"]
    out = json.loads(invoke("report", str(tmp_path / "pair.db"), "-o", "pair.html", "--json"))
    assert out["run_id"] == bad.run_id and out["same_input"] == [good.run_id]
    doc = _embedded(tmp_path / "pair.html")["same_input"]
    first = align(good, bad).first_divergence
    assert first is not None and first.bad is not None
    assert doc["run_id"] == good.run_id and doc["compared"] is True
    assert (doc["matched_by"], doc["matched_words"]) == ("task", "task id")
    assert doc["first_divergence"] == {
        "step_id": first.bad.step_id, "label": label(first), "status": first.status, "words": "same request, different output",
    }
