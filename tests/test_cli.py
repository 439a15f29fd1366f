"""The command line: runs, show, demo, and help for every command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import trajdebug
from trajdebug.cli import cli
from trajdebug.demo import FAULTS


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


class TestHelp:
    @pytest.mark.parametrize("command", sorted(cli.commands))
    def test_every_command_has_help(self, command: str) -> None:
        """Each command documents itself in --help."""
        out = invoke(command, "--help")
        assert "Usage:" in out
        assert len(cli.commands[command].help or "") > 20

    @pytest.mark.parametrize("command", sorted(cli.commands))
    def test_every_command_is_in_the_readme(self, command: str) -> None:
        """The README's CLI section names every command."""
        readme = (Path(__file__).parents[1] / "README.md").read_text()
        assert f"trajdebug {command}" in readme


class TestRunsAndShow:
    def test_runs_lists_the_default_store(self, tmp_path: Path) -> None:
        """`trajdebug runs --json` lists runs of the default store with outcome and counts."""
        with trajdebug.run("listed") as h:
            with trajdebug.step("s"):
                pass
            h.fail("nope")
        data = json.loads(invoke("runs", "--json"))
        assert [(h.run_id, "listed", "failure", 1)] == [
            (r["run_id"], r["name"], r["outcome"], r["steps"]) for r in data["runs"]
        ]

    def test_runs_prints_markup_in_names_literally(self) -> None:
        """A run named with rich markup is shown as text, not interpreted (and does not crash)."""
        with trajdebug.run("evil [/] [bold]x[/bold]"):
            pass
        assert "evil [/] [bold]x[/bold]" in invoke("runs")

    def test_analyze_names_a_broken_link_and_goes_on(self, tmp_path: Path) -> None:
        """A run with an edge to a missing step is analyzed without it and a warning names it; the others too."""
        from trajdebug.format import write_jsonl
        from trajdebug.model import Dependency, Run, Step

        good = Run(
            "good", "g", outcome="failure", steps=(Step("a", "a", status="error", start_ns=1, end_ns=2),)
        )
        bad = Run("bad", "b", outcome="failure", steps=(Step("x", "x", deps=(Dependency("ghost"),)),))
        path = tmp_path / "r.jsonl"
        write_jsonl([good, bad], path)
        result = CliRunner().invoke(cli, ["analyze", str(path), "--json"])
        assert 0 == result.exit_code, result.output
        assert "ghost" in result.stderr and "left out" in result.stderr
        runs = json.loads(result.stdout)["runs"]
        assert ["good", "bad"] == [r["run_id"] for r in runs]
        assert any("ghost" in p for p in runs[1]["problems"])

    def test_import_copies_trajdebug_jsonl_into_a_store(self, tmp_path: Path) -> None:
        """`trajdebug import FILE.jsonl -o X.db` moves our own runs into a store, unchanged."""
        from trajdebug.format import read_jsonl
        from trajdebug.store import Store

        path = tmp_path / "r.jsonl"
        with trajdebug.run("moved", path=path), trajdebug.step("s") as s:
            s.output = {"n": 1}
        invoke("import", str(path), "-o", str(tmp_path / "x.db"))
        (original,) = read_jsonl(path).runs
        assert original == Store(tmp_path / "x.db").load_run(original.run_id)

    def test_analyze_format_markdown_matches_errors_spelling(self) -> None:
        """`analyze --format markdown` is the same as `--markdown`, as `errors --format markdown` is."""
        invoke("demo", "--no-verify")

        def untimed(text: str) -> str:  # the analysis reports its own duration
            return re.sub(r"in [\d.]+ ms", "in _ ms", text)

        assert untimed(invoke("analyze", "--format", "markdown")) == untimed(invoke("analyze", "--markdown"))
        assert invoke("analyze", "--format", "markdown").lstrip().startswith("#")

    def test_runs_without_a_store_says_so(self) -> None:
        """`trajdebug runs` on a fresh directory explains that there is no store yet."""
        result = CliRunner().invoke(cli, ["runs"])
        assert result.exit_code == 1
        assert "no store here yet" in result.output

    def test_show_tree_marks_edge_origins(self, tmp_path: Path) -> None:
        """`trajdebug show FILE` prints the tree with each dependency's kind and origin."""
        path = tmp_path / "r.jsonl"

        @trajdebug.step(kind="tool")
        def fetch(q: str) -> dict[str, str]:
            return {"rows": "a long enough payload to be tracked"}

        @trajdebug.step(kind="llm")
        def answer(data: dict[str, str]) -> str:
            return "x"

        with trajdebug.run("shown", path=path), trajdebug.step("agent", kind="agent"):
            answer(fetch("q"))
        out = invoke("show", str(path))
        assert "shown" in out and "success" in out
        assert "fetch#" in out
        assert "(data, tracked via data)" in out
        for line in out.splitlines():
            assert len(line) <= 100

    def test_show_infer_marks_inferred_edges_with_confidence(self, tmp_path: Path) -> None:
        """`trajdebug show --infer` adds content-inferred edges, marked inferred with a confidence."""
        path = tmp_path / "r.jsonl"

        @trajdebug.step(kind="tool")
        def lookup(city: str) -> str:
            return "Weather in Lisbon: sunny, 24 degrees, light wind from the north west"

        @trajdebug.step(kind="llm")
        def answer(prompt: str) -> str:
            return "ok"

        with trajdebug.run("weather", path=path):
            report = lookup("Lisbon")
            answer(f"Summarize for the user. Tool said: {report.upper().lower()}")
        plain = invoke("show", str(path))
        assert "(data, inferred" not in plain
        out = invoke("show", str(path), "--infer")
        assert re.search(r"← lookup#\w+ \(data, inferred 0\.\d\d", out)

    def test_show_json_has_every_step(self, tmp_path: Path) -> None:
        """`trajdebug show --json` gives the run with steps, deps and errors."""
        path = tmp_path / "r.jsonl"
        with trajdebug.run("j", path=path), trajdebug.step("only", kind="parse") as s:
            s.output = {"a": 1}
        data = json.loads(invoke("show", str(path), "--json"))
        (run,) = data["runs"]
        assert [(s["name"], s["kind"], s["output"]) for s in run["steps"]] == [("only", "parse", {"a": 1})]

    def test_show_reports_a_corrupt_line_and_still_shows(self, tmp_path: Path) -> None:
        """A corrupt line is named on stderr while the rest of the file still shows."""
        path = tmp_path / "r.jsonl"
        with trajdebug.run("partial", path=path), trajdebug.step("s"):
            pass
        with path.open("a") as fh:
            fh.write("{not json\n")
        proc = subprocess.run(
            [sys.executable, "-m", "trajdebug", "show", str(path)], capture_output=True, text=True, check=True
        )
        assert f"{path}:" in proc.stderr and "not valid JSON" in proc.stderr
        assert "partial" in proc.stdout


class TestDemo:
    def test_demo_records_into_the_default_store_and_shows_the_run(self, tmp_path: Path) -> None:
        """`trajdebug demo` writes ./trajdebug.db (here: $TRAJDEBUG_STORE) and prints the failing run."""
        out = invoke("demo", "--no-verify")
        assert "scripted stand-in" in out
        assert "failure" in out
        assert (tmp_path / "trajdebug.db").exists()
        data = json.loads(invoke("runs", "--json"))
        assert len(data["runs"]) == 1

    def test_demo_help_lists_every_fault(self) -> None:
        """`trajdebug demo --help` names every fault."""
        out = invoke("demo", "--help")
        for name in FAULTS:
            assert name in out

    @pytest.mark.parametrize("fault", sorted(FAULTS))
    def test_every_fault_fails_late_with_ground_truth(self, fault: str) -> None:
        """Each fault makes the run fail, and its metadata names the injected step."""
        data = json.loads(invoke("demo", "--fault", fault, "--no-verify", "--json"))
        run = data["run"]
        assert run["outcome"] == "failure"
        fault_info = run["metadata"]["fault"]
        assert fault == fault_info["name"]
        ids = [s["step_id"] for s in run["steps"]]
        assert fault_info["step_id"] in ids

    def test_clean_demo_succeeds(self) -> None:
        """`trajdebug demo --clean` records a passing run."""
        data = json.loads(invoke("demo", "--clean", "--no-verify", "--json"))
        assert data["run"]["outcome"] == "success"
