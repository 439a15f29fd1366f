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
