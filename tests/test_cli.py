"""The command line: runs, show, demo, and help for every command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import trajdebug
from trajdebug.cli import COMMANDS, cli
from trajdebug.demo import FAULTS


NAMES = cli.list_commands(click.Context(cli))


def invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


class TestHelp:
    @pytest.mark.parametrize("command", NAMES)
    def test_every_command_has_help(self, command: str) -> None:
        """Each command documents itself in --help."""
        out = invoke(command, "--help")
        assert "Usage:" in out
        real = cli.get_command(click.Context(cli), command)
        assert real is not None and len(real.help or "") > 20

    @pytest.mark.parametrize("command", NAMES)
    def test_the_command_list_shows_each_commands_own_summary(self, command: str) -> None:
        """`trajdebug --help` lists a command with the summary its own help gives, at any width."""
        real = cli.get_command(click.Context(cli), command)
        assert real is not None and real.name == command
        listed = click.Command(command, help=COMMANDS[command][1])
        for width in (20, 45, 80, 200):
            assert listed.get_short_help_str(width) == real.get_short_help_str(width)

    def test_the_command_list_loads_no_command(self) -> None:
        """`trajdebug --help` lists every command without importing any command's module or the analysis."""
        code = (
            "import sys\nfrom click.testing import CliRunner\nfrom trajdebug.cli import cli\n"
            "out = CliRunner().invoke(cli, ['--help']).output\n"
            "print(sorted(m for m in sys.modules if m.startswith(('trajdebug.cli.', 'trajdebug.analysis'))))\n"
            "print(out)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.splitlines()[0] == "[]"
        assert all(f"  {name} " in out for name in NAMES)

    @pytest.mark.parametrize("command", NAMES)
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
        from trajdebug.core.jsonl import write_jsonl
        from trajdebug.core.model import Dependency, Run, Step

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
        from trajdebug.core.jsonl import read_jsonl
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

    @pytest.mark.parametrize("command", ["analyze", "show", "report", "errors"])
    def test_every_reading_command_without_a_store_says_so_as_runs_does(self, command: str) -> None:
        """With no source and no default store, each reading command gives the same one-line hint as `runs`."""
        result = CliRunner().invoke(cli, [command])
        assert result.exit_code == 1
        assert "no store here yet (record a run, or try: trajdebug demo)" in result.output

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

    def test_show_caps_a_large_run_and_says_how_many_steps_it_left_out(self, tmp_path: Path) -> None:
        """A run of more than 1,000 steps shows its first 900 and last 100, and one line counting the rest;
        --all shows every step."""
        path = tmp_path / "big.jsonl"
        with trajdebug.run("big", path=path):
            for i in range(1_500):
                with trajdebug.step(f"s{i:04d}", kind="tool"):
                    pass
            with trajdebug.step("last", kind="condition") as last:
                last.error("the totals do not add up")
        out = invoke("show", str(path))
        names = re.findall(r"\b(s\d{4}|last)#", out)
        assert names == [f"s{i:04d}" for i in range(900)] + [f"s{i:04d}" for i in range(1_401, 1_500)] + ["last"]
        assert "... 501 more steps not shown (--all shows every step)" in out
        everything = invoke("show", str(path), "--all")
        assert len(re.findall(r"\b(s\d{4}|last)#", everything)) == 1_501
        assert "not shown" not in everything

    def test_show_max_steps_shows_the_first_steps_and_counts_the_rest(self, tmp_path: Path) -> None:
        """--max-steps N shows the first N steps and says how many more there are."""
        path = tmp_path / "r.jsonl"
        with trajdebug.run("few", path=path):
            for i in range(5):
                with trajdebug.step(f"s{i}"):
                    pass
        out = invoke("show", str(path), "--max-steps", "2")
        assert re.findall(r"\b(s\d)#", out) == ["s0", "s1"]
        assert "... 3 more steps not shown" in out

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


def _one_line_error(proc: Any) -> str:
    """The error a failed command printed: exactly one line, no traceback."""
    err = proc.stderr.decode()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert 1 == len(lines), err
    return lines[0]


def _a_run(path: Path) -> Path:
    with trajdebug.run("kept", path=path), trajdebug.step("s") as s:
        s.output = 1
    return path


class TestUserErrors:
    @pytest.mark.parametrize(
        ("args", "target"),
        [
            (["demo", "--no-verify", "--store", "{ro}/x.db"], "x.db"),
            (["import", "{src}", "-o", "{ro}/x.jsonl"], "x.jsonl"),
            (["import", "{src}", "-o", "{ro}/x.db"], "x.db"),
            (["export", "{src}", "-o", "{ro}/x.json"], "x.json"),
        ],
    )
    def test_writing_to_a_read_only_location_is_one_line_naming_it(
        self, args: list[str], target: str, tmp_path: Path, cli_run: Any, readonly: Any
    ) -> None:
        """A command that must write onto a read-only file system ends with one line naming the file."""
        src = _a_run(tmp_path / "src.jsonl")
        ro = tmp_path / "ro"
        argv = [a.format(ro=ro, src=src) for a in args]
        line = _one_line_error(cli_run(*argv, wrap=readonly(ro)))
        assert target in line
        assert "read-only" in line.lower() or "readonly" in line.lower() or "cannot write" in line.lower()

    def test_reading_commands_read_a_store_on_a_read_only_mount(self, tmp_path: Path, cli_run: Any, readonly: Any) -> None:
        """`runs`, `show`, `analyze` and `errors` open the store read-only, so a read-only mount can be read."""
        ro = tmp_path / "ro"
        ro.mkdir()
        db = ro / "s.db"
        with trajdebug.run("mounted", store=db) as h, trajdebug.step("s", kind="tool") as s:
            s.output = "x"
        trajdebug.record.flush()
        wrap = readonly(ro)
        listed = json.loads(cli_run("runs", "--store", str(db), "--json", wrap=wrap, check=True).stdout)
        assert [h.run_id] == [r["run_id"] for r in listed["runs"]]
        for cmd in (["show", str(db)], ["analyze", str(db), "--json"], ["errors", str(db), "--json"]):
            proc = cli_run(*cmd, wrap=wrap)
            assert 0 == proc.returncode, proc.stderr

    @pytest.mark.parametrize(
        ("make", "says"),
        [
            (lambda p: p.write_bytes(b""), "empty file"),
            (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64)), "PNG image"),
            (lambda p: p.write_text('{"data": [\n  1,\n  2,,\n]}'), "broken JSON at line 3, column"),
            (lambda p: p.write_text('{"hello": "world"}'), "its keys: hello"),
            (lambda p: p.mkdir(), "empty folder"),
        ],
        ids=["empty", "png", "broken-json", "unknown-json", "empty-folder"],
    )
    def test_an_unreadable_source_says_what_is_wrong_with_it(self, make: Any, says: str, tmp_path: Path, cli_run: Any) -> None:
        """`show` and `import` on an empty file, an image, broken JSON, unknown JSON or an empty folder say
        what is wrong, in one line, not only that the format is unknown."""
        target = tmp_path / "thing.json"
        make(target)
        for cmd in ("show", "import"):
            line = _one_line_error(cli_run(cmd, str(target)))
            assert says in line and str(target) in line

    def test_a_corrupt_store_names_what_it_cannot_read_and_shows_the_rest(self, tmp_path: Path, cli_run: Any) -> None:
        """A row that is not JSON and a run listed without records are warnings naming the store; the other
        runs are still shown."""
        import sqlite3

        db = tmp_path / "c.db"
        ids = []
        for name in ("one", "two", "three"):
            with trajdebug.run(name, store=db) as h, trajdebug.step("s") as s:
                s.output = name
            ids.append(h.run_id)
        trajdebug.record.flush()
        with sqlite3.connect(db) as conn:
            # The run's step record (its n-th record) becomes a line that is not JSON.
            key = conn.execute("SELECT key FROM runs WHERE run_id = ?", (ids[0],)).fetchone()[0]
            n = bad = 0
            for cid, body in conn.execute("SELECT id, body FROM chunks WHERE run = ? ORDER BY id", (key,)).fetchall():
                lines = bytes(body).splitlines(keepends=True)
                for i, line in enumerate(lines):
                    n += 1
                    if b'"t":"step"' in line:
                        lines[i], bad = b"{broken\n", n
                conn.execute("UPDATE chunks SET body = ? WHERE id = ?", (b"".join(lines), cid))
            conn.execute("INSERT INTO runs (run_id, name) VALUES ('ghost', 'ghost')")
        proc = cli_run("show", str(db), "--json")
        assert 0 == proc.returncode
        err = proc.stderr.decode()
        assert f"{db} (run {ids[0]}):{bad}: record is not valid JSON" in err
        assert "(run ghost): listed, but no record of it could be read" in err
        shown = {r["run_id"]: r for r in json.loads(proc.stdout)["runs"]}
        assert set(ids) == set(shown)
        assert 0 == shown[ids[0]]["step_count"] and 1 == shown[ids[1]]["step_count"]


class TestImport:
    def test_importing_the_same_file_twice_does_not_duplicate_its_runs(self, tmp_path: Path, cli_run: Any) -> None:
        """The second import of a file into a store finds its runs already there and adds nothing."""
        import sqlite3

        log = tmp_path / "chat.json"
        log.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
        db = tmp_path / "i.db"
        first = json.loads(cli_run("import", str(log), "-o", str(db), "--json", check=True).stdout)
        second = json.loads(cli_run("import", str(log), "-o", str(db), "--json", check=True).stdout)
        assert (1, 0) == (first["added"], first["unchanged"])
        assert (0, 1) == (second["added"], second["unchanged"])
        with sqlite3.connect(db) as conn:
            assert [2] == [n for (n,) in conn.execute("SELECT steps FROM runs")]
            stored = b"".join(bytes(b) for (b,) in conn.execute("SELECT body FROM chunks"))
        assert 2 == stored.count(b'"t":"step"')
        assert "1 already there" in cli_run("import", str(log), "-o", str(db), check=True).stdout.decode()

    def test_the_import_line_counts_one_step_and_one_error_in_the_singular(self, tmp_path: Path, cli_run: Any) -> None:
        """The import line says "1 error" and "1 step", not "1 errors" (newuser64 F15)."""
        log = tmp_path / "chat.json"
        log.write_text(json.dumps([{"role": "tool", "tool_call_id": "c1", "content": "Error: user not found"}]))
        line = cli_run("import", str(log), "--from", "openai", "-o", str(tmp_path / "i.db"), check=True).stdout.decode()
        assert "imported 1 run (1 step, 1 error) from" in line

    def test_import_shows_progress_on_a_terminal(self, tmp_path: Path) -> None:
        """With stderr on a terminal, `import` draws a progress bar there (rich), naming what it does."""
        import os
        import pty
        import select

        src = _a_run(tmp_path / "r.jsonl")
        master, slave = pty.openpty()
        env = {**os.environ, "TERM": "xterm", "TRAJDEBUG_PROGRESS_DELAY": "0", "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
        proc = subprocess.Popen(
            [sys.executable, "-m", "trajdebug", "import", str(src), "-o", str(tmp_path / "x.db")],
            stdout=subprocess.PIPE, stderr=slave, env=env, cwd=tmp_path,
        )
        os.close(slave)
        drawn = b""
        while select.select([master], [], [], 30)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        out, _ = proc.communicate(timeout=60)
        os.close(master)
        assert 0 == proc.returncode
        assert b"reading" in drawn and b"importing into" in drawn
        assert b"imported 1 run" in out

    def test_import_is_quiet_on_stderr_when_piped(self, tmp_path: Path, cli_run: Any) -> None:
        """Progress is drawn only on a terminal: a piped import writes nothing to stderr but problems."""
        src = _a_run(tmp_path / "r.jsonl")
        proc = cli_run("import", str(src), "-o", str(tmp_path / "x.db"), check=True)
        assert b"" == proc.stderr
        assert b"imported 1 run" in proc.stdout


class TestForeignReaders:
    def test_otlp_spans_with_impossible_values_are_named_and_the_rest_shown(self, tmp_path: Path, cli_run: Any) -> None:
        """An OTLP span with `intValue: "abc"` and one starting at time 1e400 are each one line naming the span and
        the field; every span of the trace is still shown (one bad value costs only itself)."""
        doc = (
            '{"resourceSpans":[{"resource":{"attributes":[]},"scopeSpans":[{"scope":{"name":"x"},"spans":['
            '{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"a",'
            '"startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"n","value":{"intValue":"abc"}}]},'
            '{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203332","name":"b",'
            '"startTimeUnixNano":1e400,"endTimeUnixNano":"3"},'
            '{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203333","name":"kept",'
            '"startTimeUnixNano":"4","endTimeUnixNano":"5"}]}]}]}'
        )
        path = tmp_path / "spans.json"
        path.write_bytes(b"\xef\xbb\xbf" + doc.encode())
        proc = cli_run("show", str(path), "--json")
        assert 0 == proc.returncode, proc.stderr
        err = proc.stderr.decode().splitlines()
        assert 2 == len(err)
        fields = (".attributes[0].value.intValue: ", ".startTimeUnixNano: ")
        for i, line in enumerate(err):
            assert line.startswith(f"{path}: resourceSpans[0].scopeSpans[0].spans[{i}]{fields[i]}")
        assert ["a", "b", "kept"] == sorted(s["name"] for s in json.loads(proc.stdout)["runs"][0]["steps"])


def _on_a_terminal(args: list[str], cwd: Path, delay: str) -> tuple[int, bytes, bytes]:
    """Run ``python -m trajdebug ARGS`` with stderr on a pseudo-terminal; return (code, stdout, what stderr drew)."""
    import os
    import pty
    import select

    master, slave = pty.openpty()
    env = {
        **os.environ,
        "TERM": "xterm",
        "TRAJDEBUG_PROGRESS_DELAY": delay,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "trajdebug", *args], stdout=subprocess.PIPE, stderr=slave, env=env, cwd=cwd
    )
    os.close(slave)
    drawn = b""
    while select.select([master], [], [], 60)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        drawn += chunk
    out, _ = proc.communicate(timeout=120)
    os.close(master)
    return proc.returncode, out, drawn


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with the demo's failed run."""
    from trajdebug.demo import run_demo
    from trajdebug.store import Store

    path = tmp_path_factory.mktemp("progress") / "demo.db"
    run_demo("bad-sql-filter", store=Store(path))
    return path


class TestProgress:
    def test_long_work_on_a_terminal_draws_a_bar(self, demo_store: Path, tmp_path: Path) -> None:
        """On a terminal, once the work outlasts the delay (0 here), analyze, fleet and export draw their bar."""
        for args, label in (
            (["analyze", str(demo_store)], b"analyzing"),
            (["fleet", str(demo_store), "--workers", "1"], b"grouping failures"),
            (["export", str(demo_store), "--to", "parquet", "-o", str(tmp_path / "ds")], b"exporting to"),
        ):
            code, _, drawn = _on_a_terminal(args, tmp_path, "0")
            assert code == 0 and label in drawn, (args, drawn[-300:])

    def test_json_and_quick_work_draw_nothing(self, demo_store: Path, tmp_path: Path) -> None:
        """With --json, or when the work ends within the delay, the terminal gets no bar."""
        code, out, drawn = _on_a_terminal(["analyze", str(demo_store), "--json"], tmp_path, "0")
        assert code == 0 and b"analyzing" not in drawn and json.loads(out)["runs"]
        code, _, drawn = _on_a_terminal(["fleet", str(demo_store), "--workers", "1"], tmp_path, "60")
        assert code == 0 and b"grouping failures" not in drawn

    def test_a_pipe_gets_no_progress(self, demo_store: Path, cli_run: Any) -> None:
        """Piped, analyze, fleet and compare write nothing on stderr even with no delay."""
        for args in (
            ["analyze", str(demo_store)],
            ["fleet", str(demo_store), "--workers", "1"],
            ["compare", str(demo_store), str(demo_store), "--workers", "1"],
        ):
            proc = cli_run(*args, env={"TRAJDEBUG_PROGRESS_DELAY": "0"})
            assert proc.returncode == 0 and proc.stderr == b"", (args, proc.stderr[-300:])


def test_the_demo_names_the_command_that_shows_the_same_root_later(cli_run: Any) -> None:
    """`demo --fault truncated-rows` ranks run_sql first with the agent's database; the command it prints
    for a later look (`analyze ... --sql-db ...`) ranks the same step first."""
    demo = cli_run("demo", "--fault", "truncated-rows", "--no-verify", "--no-report", env={"COLUMNS": "400"})
    assert 0 == demo.returncode, demo.stderr
    text = demo.stdout.decode()
    assert "root cause matches" in " ".join(text.split())
    later = next(line for line in text.splitlines() if line.startswith("the same analysis later: "))
    args = later.removeprefix("the same analysis later: trajdebug ").split()
    proc = cli_run(*args, "--json", check=True)
    [analysis] = json.loads(proc.stdout)["runs"]
    assert "run_sql" == analysis["root_causes"][0]["name"]


def test_analyze_help_says_where_ask_writes_the_label() -> None:
    """`analyze --help` says that --ask writes SOURCE.labels.jsonl beside the source (a new user found the file
    there unannounced)."""
    text = " ".join(CliRunner().invoke(cli, ["analyze", "--help"]).output.split())
    assert "SOURCE.labels.jsonl beside SOURCE" in text


def test_analyze_guided_lets_a_passing_run_of_the_same_input_answer_alone(tmp_path: Path) -> None:
    """`analyze --guided`, with no --oracle, runs the guided search on a passing run of the same input (it
    proves the step that answered otherwise the root); with no such run it says it searched nothing."""
    import trajdebug

    path = tmp_path / "ferry.jsonl"
    for seats in (48, 4):
        with trajdebug.run("ferry-booking", task="book the 9:40 to Vis", path=str(path)) as run:
            with trajdebug.step("count_seats", kind="tool", input={"sailing": "9:40"}) as s:
                s.output = {"free_seats": seats, "deck": "upper"}
            if seats < 10:
                run.fail("no room for the group of 12")
    out = CliRunner().invoke(cli, ["analyze", str(path), "--guided", "--json"])
    assert out.exit_code == 0, out.output
    guided = json.loads(out.stdout)["runs"][0]["guided"]
    assert guided["root_name"] == "count_seats" and guided["certain"]
    alone = tmp_path / "alone.jsonl"
    with trajdebug.run("ferry-booking", task="book the 9:40 to Vis", path=str(alone)) as run:
        with trajdebug.step("count_seats", kind="tool", input={"sailing": "9:40"}) as s:
            s.output = {"free_seats": 4}
        run.fail("no room for the group of 12")
    none = CliRunner().invoke(cli, ["analyze", str(alone), "--guided"])
    assert none.exit_code == 0 and "no guided search" in none.output


def test_analyze_guided_says_once_which_failed_runs_it_could_not_search(tmp_path: Path) -> None:
    """`analyze --guided` on a source of several failed runs with nothing to answer prints one note naming how
    many runs went unsearched, not one note per run."""
    import trajdebug

    path = tmp_path / "mill.jsonl"
    for sack in range(5):
        with trajdebug.run("flour-mill", task=f"grind sack {sack}", path=str(path)) as run:
            with trajdebug.step("weigh_sack", kind="tool", input={"sack": sack}) as s:
                s.output = {"kg": 3}
            run.fail("sack under the 25 kg minimum")
    out = CliRunner().invoke(cli, ["analyze", str(path), "--guided"])
    assert out.exit_code == 0, out.output
    notes = [line for line in out.stderr.splitlines() if "no guided search" in line]
    assert len(notes) == 1 and notes[0].startswith("note: 5 runs (") and ", ...)" in notes[0]


def test_analyze_guided_with_no_one_to_ask_still_settles_the_stored_answers(tmp_path: Path) -> None:
    """`analyze --guided` on a run a person already answered (weigh_dog right, plan_ration wrong), with no
    passing run of the same input to ask, settles the stored answers as plain `analyze` does: the same proven
    root, the same ranking, and no note that nothing was searched."""
    from trajdebug.core.model import Answer

    path = tmp_path / "kennel.db"
    with trajdebug.run("kennel-feeding", task="feed kennel 3", path=str(path)) as run:
        with trajdebug.step("weigh_dog", kind="tool", input={"kennel": 3}) as w:
            w.output = {"weight_kg": 31.0}
        with trajdebug.step("plan_ration", kind="other", input=w.output) as p:
            p.output = {"grams": 0}
        with trajdebug.step("dispense", kind="tool", input=p.output) as d:
            d.output = {"dispensed": False}
        run.fail("kennel 3 went unfed")
    steps = {s.name: s.step_id for s in trajdebug.load_runs(str(path), run_id=run.run_id)[0].steps}
    trajdebug.save_answer(str(path), run.run_id, Answer(steps["weigh_dog"], True, "person"))
    trajdebug.save_answer(str(path), run.run_id, Answer(steps["plan_ration"], False, "person"))
    seen = []
    for extra in ([], ["--guided"]):
        out = CliRunner().invoke(cli, ["analyze", str(path), "--json", *extra])
        assert out.exit_code == 0, out.output
        assert "no guided search" not in out.stderr
        [a] = json.loads(out.stdout)["runs"]
        seen.append((a["guided"]["root_name"], a["guided"]["certain"], [c["name"] for c in a["root_causes"]]))
    assert seen[0][:2] == ("plan_ration", True)
    assert seen[1] == seen[0]


def test_piped_show_and_analyze_keep_every_value_on_one_line(tmp_path: Path) -> None:
    """Not on a terminal, `show` and `analyze` never wrap their text: a failure's message longer than 80 columns
    is found whole on one line (nu62 bug 7: "the claimed \\n837.07 EUR")."""
    from tests.builders import recorded_meeting_run

    src = tmp_path / "m.jsonl"
    run = recorded_meeting_run(src)
    message = "Bo Chen declined: busy 13:00 UTC; the meeting cannot go ahead at this slot"
    assert message in (run.failure_reason or "")
    for command in (["show", str(src)], ["analyze", str(src)]):
        out = CliRunner().invoke(cli, command, catch_exceptions=False).output
        assert any(message in line for line in out.splitlines()), command


def test_analyze_help_names_the_shipped_models_verdict_thresholds() -> None:
    """`analyze --help` says where likely and confident begin, per setting, as the shipped model has them (nu62
    bug 5: 77 % likely and 78 % confident, no threshold said anywhere)."""
    from trajdebug.analysis.learned import load_model

    m = load_model("default")
    assert m is not None
    likely, sure = m.thresholds(references=True)
    flat = " ".join(CliRunner().invoke(cli, ["analyze", "--help"]).output.split())
    assert f"likely from {likely:.0%}".replace("%", " %") in flat
    assert f"confident from {sure:.1%}".replace("%", " %") + " with references" in flat
    assert ("and never alone" in flat) == (m.thresholds(references=False)[1] > 1)


def test_analyze_top_0_lists_every_ranked_step_as_root_causes(tmp_path: Path) -> None:
    """`analyze --json --top 0` lists every ranked step in root_causes (as many as ``ranked`` counts), and
    --help says root_causes holds --top entries and ranked is a count (nu63: `--top 40` was the only way)."""
    from tests.builders import recorded_meeting_run

    src = tmp_path / "m.jsonl"
    recorded_meeting_run(src)
    [head] = json.loads(CliRunner().invoke(cli, ["analyze", str(src), "--json", "--top", "1"]).output)["runs"]
    res = CliRunner().invoke(cli, ["analyze", str(src), "--json", "--top", "0"])
    assert res.exit_code == 0, res.output
    [every] = json.loads(res.output)["runs"]
    assert every["ranked"] > 1 and len(every["root_causes"]) == every["ranked"]
    assert len(head["root_causes"]) == 1 and every["root_causes"][0]["step_id"] == head["root_causes"][0]["step_id"]
    flat = " ".join(CliRunner().invoke(cli, ["analyze", "--help"]).output.split())
    assert "root_causes lists the first --top candidates" in flat and "ranked counts the steps ranked" in flat
    assert "0 for every ranked step" in flat


def test_analyze_of_a_source_where_no_run_failed_says_why_and_exits_0_as_run_on_a_success_does(tmp_path: Path) -> None:
    """`analyze` on a source of passing runs only says in one line on stderr that no run failed, and exits 0,
    as `--run` on a passing run does; --help documents the exit status (nu63)."""
    path = tmp_path / "ok.jsonl"
    for price in (3, 4):
        with trajdebug.run("quotes", path=str(path), task=f"quote {price}") as r, trajdebug.step("price", kind="tool") as s:
            s.output = price
    res = CliRunner().invoke(cli, ["analyze", str(path)])
    assert res.exit_code == 0
    assert res.stderr.strip() == (
        f"note: {path}: no run failed (2 passing), so there is no failure to trace: each run is shown with "
        "nothing ranked (analyze a failing run; these can be its --refs)"
    )
    one = CliRunner().invoke(cli, ["analyze", str(path), "--run", r.run_id])
    assert one.exit_code == 0 and "no run failed" not in one.stderr
    flat = " ".join(CliRunner().invoke(cli, ["analyze", "--help"]).output.split())
    assert "Exit status: 0 when the runs were analyzed, whatever was found" in flat


def test_analyze_json_names_the_run_of_each_root_cause(demo_store: Path) -> None:
    """In ``analyze --json`` each root cause's ``run_id`` is the run its step is in, the analyzed run's own id
    rather than null, and ``earlier_turn`` is false for it (newuser64 F14: every run_id was null)."""
    result = CliRunner().invoke(cli, ["analyze", str(demo_store), "--json"])
    assert result.exit_code == 0, result.output
    for entry in json.loads(result.stdout)["runs"]:
        assert entry["root_causes"]
        assert all((c["run_id"], c["earlier_turn"]) == (entry["run_id"], False) for c in entry["root_causes"])


def test_no_command_wraps_or_cuts_its_text_when_piped(tmp_path: Path) -> None:
    """Piped, every command prints each line whole: `show` keeps a model call's cost at the end of its line,
    `mark` and `fleet` keep a reason longer than 80 columns on one line (nu64b: `show` cut the cost off with
    ``…``, `mark` and `fleet` wrapped at 80)."""
    src = tmp_path / "s.db"
    reason = "did not explain why the refund was refused although the customer asked twice"
    for i in range(3):
        with (
            trajdebug.run("support-desk-with-a-rather-long-agent-name", store=str(src)) as run,
            trajdebug.step("classify_the_customers_intent_carefully", kind="llm", input={"i": i}) as s,
        ):
            s.usage(model="gpt-4o-mini-2024-07-18", prompt_tokens=123_456, completion_tokens=54_321, cost=1.5)
            s.output = {"intent": "refund"}
    out = CliRunner().invoke(cli, ["show", str(src), "--run", run.run_id], catch_exceptions=False).output
    [line] = [x for x in out.splitlines() if "classify_the_customers_intent_carefully#" in x]
    assert line.endswith("$1.50") and "…" not in out
    out = CliRunner().invoke(cli, ["mark", str(src), "--run", run.run_id, "--failed", reason], catch_exceptions=False)
    assert any(reason in x for x in out.output.splitlines()), out.output
    out = CliRunner().invoke(cli, ["fleet", str(src)], catch_exceptions=False)
    assert any(reason in x for x in out.output.splitlines()), out.output


def test_show_of_a_failed_run_with_no_step_cut_short_does_not_load_the_analysis(tmp_path: Path) -> None:
    """`show --run` of a run that failed on a raised error, where no step ends empty after it, prints the tree
    without importing the analysis (nu64b: most of what `show` cost on a failed run)."""
    src = tmp_path / "s.db"
    with trajdebug.run("pay", store=str(src)) as run:
        with trajdebug.step("plan", kind="llm", input={"q": "refund A103"}) as s:
            s.output = {"amount": "1.299,00"}
        with pytest.raises(ValueError), trajdebug.step("pay", kind="tool", input=s.output):
            raise ValueError("refund 129900.0 EUR exceeds the limit")
        run.fail("refund refused")
    code = (
        "import sys\nfrom click.testing import CliRunner\nfrom trajdebug.cli import cli\n"
        f"out = CliRunner().invoke(cli, ['show', {str(src)!r}, '--run', {run.run_id!r}]).output\n"
        "print(sorted(m for m in sys.modules if m.startswith('trajdebug.analysis')))\nprint(out)"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}  # this checkout's code
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env).stdout
    assert out.splitlines()[0] == "[]", out[-2000:]
    assert "pay#" in out and "refund refused" in out
