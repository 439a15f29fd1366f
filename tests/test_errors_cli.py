"""Output of the error lifecycle: ``trajdebug errors`` (text, Markdown, JSON), the renderers, and logging."""

from __future__ import annotations

import io
import json
import logging
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import trajdebug
from trajdebug.cli import cli
from trajdebug.core.lifecycle.analyze import analyze_errors
from trajdebug.core.model import Run
from trajdebug.demo import run_demo
from trajdebug.record.errorlog import FIELDS, JsonFormatter, LiveErrorLog, emit_errors
from trajdebug.report.errors import errors_markdown, render_errors


def invoke(*args: str, ok: bool = True) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False, terminal_width=80)
    assert (result.exit_code == 0) == ok, result.output
    return result.output


def record_two_chains(path: Path) -> Run:
    """A run with a handled warning and a critical chain whose message contains Markdown and rich markup."""

    @trajdebug.step
    def probe() -> None:
        raise FileNotFoundError("cache miss")

    @trajdebug.step(kind="tool")
    def fetch() -> None:
        raise KeyError("col|umn [bold]x[/bold]")

    @trajdebug.step(kind="agent")
    def answer() -> None:
        try:
            fetch()
        except KeyError as e:
            raise ValueError("cannot answer") from e

    handle = trajdebug.run("two-chains", path=path)

    def body() -> None:
        with handle:
            try:
                probe()
            except FileNotFoundError:
                pass
            answer()

    with pytest.raises(ValueError):
        body()
    loaded: Run = handle.load()
    return loaded


class TestCommand:
    def test_text_table_lists_the_critical_chain_first_within_80_columns(self, tmp_path: Path) -> None:
        """The table shows the critical chain before the other, every line fits 80 columns, markup is not interpreted."""
        path = tmp_path / "runs.jsonl"
        run = record_two_chains(path)
        out = invoke("errors", str(path))
        # The chain label, not a "c2" inside a random hex id.
        assert out.index("CRITICAL FAILURE") < re.search(r"(?m)^\s*c2\b", out).start()  # type: ignore[union-attr]
        assert "KeyError" in out and "cannot answer" in out and "cache miss" in out
        assert "[bold]x[/bold]" in out
        assert max(len(line) for line in out.splitlines()) <= 80
        assert run.run_id[:12] in out

    def test_json_has_errors_and_chains_per_run(self, tmp_path: Path) -> None:
        """--json prints the report of each run, critical chain first."""
        path = tmp_path / "runs.jsonl"
        run = record_two_chains(path)
        data = json.loads(invoke("errors", str(path), "--json"))
        (rep,) = data["runs"]
        assert rep["run_id"] == run.run_id
        assert len(rep["errors"]) == 3
        assert rep["chains"][0]["critical"] is True
        assert [rep["chains"][0]["links"]] == [["cause"]]

    def test_critical_filter_keeps_only_critical_chains(self, tmp_path: Path) -> None:
        """--critical drops the chains that did not end the run."""
        path = tmp_path / "runs.jsonl"
        record_two_chains(path)
        data = json.loads(invoke("errors", str(path), "--json", "--critical"))
        assert [c["critical"] for c in data["runs"][0]["chains"]] == [True]

    def test_markdown_is_a_ticket_ready_table(self, tmp_path: Path) -> None:
        """--format markdown gives headed tables with full ids and escaped pipes."""
        path = tmp_path / "runs.jsonl"
        run = record_two_chains(path)
        out = invoke("errors", str(path), "--format", "markdown")
        assert out.startswith(f"### Errors of run `{run.run_id}`")
        assert "| error | step | stage | parent error | severity | message |" in out
        assert "col\\|umn" in out
        for e in run.errors:
            assert f"`{e.error_id}`" in out
        rows = [line for line in out.splitlines() if line.startswith("| `e")]
        assert all(line.count(" | ") == 5 for line in rows)

    def test_default_source_is_the_newest_run_of_the_default_store(self) -> None:
        """Without SOURCE the newest run of the default store is shown (the demo's here)."""
        run = run_demo("wrong-column")
        out = invoke("errors")
        assert run.run_id[:12] in out
        assert "retries-exhausted" in out
        assert "run_sql" in out

    def test_unknown_run_is_a_clear_error(self, tmp_path: Path) -> None:
        """A --run that matches nothing fails with a message, not a traceback."""
        path = tmp_path / "runs.jsonl"
        record_two_chains(path)
        out = invoke("errors", str(path), "--run", "ffffffff", ok=False)
        assert "ffffffff" in out

    def test_run_without_errors_says_so(self, tmp_path: Path) -> None:
        """A clean run prints a headline and 'no errors recorded'."""
        path = tmp_path / "clean.jsonl"
        with trajdebug.run("clean", path=path), trajdebug.step("ok") as s:
            s.output = 1
        assert "no errors recorded" in invoke("errors", str(path))


class TestRenderers:
    def test_render_errors_without_the_run_uses_ids(self, tmp_path: Path) -> None:
        """Rendering works from the report alone, on a narrow console, with the lifecycle history."""
        from rich.console import Console

        run = record_two_chains(tmp_path / "r.jsonl")
        report = analyze_errors(run)
        buf = io.StringIO()
        render_errors(report, Console(file=buf, width=80, color_system=None), None)
        text = buf.getvalue()
        assert "lifecycle of the errors in critical chains" in text
        assert "occurred" in text and "failed" in text

    def test_markdown_lists_every_rule_that_fired(self, tmp_path: Path) -> None:
        """Each rule of a chain appears with its weight."""
        run = record_two_chains(tmp_path / "r.jsonl")
        report = analyze_errors(run)
        md = errors_markdown(report, run)
        for hit in report.chains[0].reasons:
            assert f"`{hit.rule}` (+{hit.weight})" in md


class TestLogging:
    def _logger(self, name: str) -> tuple[logging.Logger, io.StringIO]:
        buf = io.StringIO()
        handler = logging.StreamHandler(buf)
        handler.setFormatter(JsonFormatter())
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.WARNING)
        logger.propagate = False
        return logger, buf

    def test_emit_errors_logs_unified_fields_at_the_severity_level(self, tmp_path: Path) -> None:
        """One JSON line per error with exactly the unified fields, logged at WARNING/ERROR/CRITICAL by severity."""
        run = record_two_chains(tmp_path / "r.jsonl")
        logger, buf = self._logger("test.trajdebug.emit")
        records: list[logging.LogRecord] = []

        class Keep(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                records.append(record)

        logger.addHandler(Keep())
        assert emit_errors(run, logger) == 3
        lines = [json.loads(line) for line in buf.getvalue().splitlines()]
        assert [list(line) for line in lines] == [list(FIELDS)] * 3
        assert {line["trace_id"] for line in lines} == {run.run_id}
        by_sev = {r.trajdebug["severity"]: r.levelno for r in records}  # type: ignore[attr-defined]
        assert by_sev == {"WARN": logging.WARNING, "ERROR": logging.ERROR, "CRITICAL": logging.CRITICAL}
        crit = next(line for line in lines if line["severity"] == "CRITICAL")
        assert crit["message"].startswith("KeyError")
        assert crit["timestamp"].endswith("Z")
        assert records[0].error_id == lines[0]["error_id"]  # type: ignore[attr-defined]

    def test_logger_level_filters_records(self, tmp_path: Path) -> None:
        """Records below the logger's level are not emitted nor counted."""
        run = record_two_chains(tmp_path / "r.jsonl")
        logger, buf = self._logger("test.trajdebug.level")
        logger.setLevel(logging.CRITICAL)
        assert emit_errors(analyze_errors(run), logger, run=run) == 1
        assert json.loads(buf.getvalue())["severity"] == "CRITICAL"

    def test_live_log_reports_each_transition_with_the_agent(self) -> None:
        """While active, each error and stage change is logged as it happens, with the step's agent."""
        logger, buf = self._logger("test.trajdebug.live")
        calls = {"n": 0}

        @trajdebug.retry(attempts=2)
        @trajdebug.step(kind="tool", agent="researcher")
        def fetch() -> int:
            calls["n"] += 1
            if calls["n"] == 1:
                raise TimeoutError("slow")
            return 1

        from trajdebug.testing import capture_runs

        with LiveErrorLog(logger), capture_runs(), trajdebug.run("live"):
            fetch()
        lines: list[dict[str, Any]] = [json.loads(line) for line in buf.getvalue().splitlines()]
        assert [line["stage"] for line in lines] == ["occurred", "recovered"]
        assert {line["agent_id"] for line in lines} == {"researcher"}
        assert lines[0]["error_id"] == lines[1]["error_id"]

        @trajdebug.step
        def broken() -> None:
            raise ValueError("after the block")

        with capture_runs() as after, trajdebug.run("after"):
            try:
                broken()
            except ValueError:
                pass
        assert len(after[0].errors) == 1
        assert len(buf.getvalue().splitlines()) == 2  # stopped: the later error was not logged
