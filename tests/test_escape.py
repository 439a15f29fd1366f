"""Untrusted text is shown, never obeyed: the escaping function, and a scan of every command's stdout bytes,
piped and on a terminal, for runs whose names, outputs and errors carry terminal control sequences."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path
from typing import Any

import click
import pytest

from trajdebug.cli import cli
from trajdebug.core.escape import json_text, markdown, md_code, visible
from trajdebug.core.jsonl import write_jsonl
from trajdebug.core.model import Dependency, ErrorEvent, ErrorInfo, Run, StageChange, Step


ROOT = Path(__file__).resolve().parents[1]

# Clear screen, set the window title, an OSC 8 hyperlink left open, a C1 CSI, a right-to-left override,
# backspace, carriage return and a bell.
PAYLOAD = "\x1b[2J\x1b]0;PWNED\x07\x1b]8;;http://evil.example/\x1b\\click\x9b31m\u202eevil\x08\rX\x07"


class TestVisible:
    @pytest.mark.parametrize("cp", [*range(0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)])
    def test_every_control_character_but_newline_and_tab_becomes_a_visible_escape(self, cp: int) -> None:
        """C0 (but newline and tab), DEL and C1 are shown as \\xNN."""
        assert f"a\\x{cp:02x}b" == visible(f"a{chr(cp)}b")

    @pytest.mark.parametrize("cp", [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069, 0x200E, 0x200F, 0x061C])
    def test_bidi_controls_become_visible(self, cp: int) -> None:
        """Bidirectional overrides, embeddings, isolates and marks are shown as \\uNNNN."""
        assert f"\\u{cp:04x}" == visible(chr(cp))

    def test_ordinary_text_is_kept_as_it_is(self) -> None:
        """Newlines, tabs, accents, CJK and emoji pass through unchanged."""
        text = "line\n\tcafé 中文 ✓ 🎉"
        assert text == visible(text)

    def test_markdown_escapes_markup_and_controls_on_one_line(self) -> None:
        """Markdown output shows CR, BS and BEL, and escapes Markdown's special characters."""
        assert "a\\\\x0db\\\\x08c\\\\x07 \\*x\\* \\|" == markdown("a\rb\bc\x07\n*x* |")
        assert "``a`b``" == md_code("a`b")

    def test_json_text_stays_the_same_data(self) -> None:
        """`json_text` escapes C1 and bidi characters that JSON encoders leave raw, without changing the data."""
        import json

        raw = json.dumps({"k": "\x9b\u202ex"}, ensure_ascii=False)
        safe = json_text(raw)
        assert "\x9b" not in safe and "\u202e" not in safe
        assert json.loads(raw) == json.loads(safe)


def _hostile_source(folder: Path) -> Path:
    """A JSONL file with a passing and a failing run whose every text field carries the payload."""
    p = PAYLOAD

    def run(rid: str, outcome: str, out: str) -> Run:
        steps = (
            Step("a1", f"plan{p}", "llm", agent=f"agent{p}", input={f"k{p}": p}, output=f"plan{p}", start_ns=1, end_ns=2),
            Step(
                "a2",
                f"search{p}",
                "tool",
                input={"q": p},
                output=out,
                start_ns=3,
                end_ns=4,
                deps=(Dependency("a1", key=f"key{p}"),),
                attributes={f"attr{p}": p},
            ),
            Step(
                "a3",
                f"check{p}",
                "condition",
                status="error" if outcome == "failure" else "ok",
                error=ErrorInfo(f"Error{p}", f"message{p}", "e1") if outcome == "failure" else None,
                start_ns=5,
                end_ns=6,
                deps=(Dependency("a2"),),
            ),
        )
        errors = (
            (ErrorEvent("e1", "a3", f"Error{p}", f"message{p}", stages=(StageChange("occurred", "a3", 5, f"reason{p}"), StageChange("failed", None, 7, f"why{p}"))),)
            if outcome == "failure"
            else ()
        )
        return Run(
            rid,
            f"agent{p}",
            start_ns=1 if outcome == "success" else 10,
            end_ns=8,
            outcome=outcome,  # type: ignore[arg-type]
            failure_reason=f"failed{p}" if outcome == "failure" else None,
            metadata={"fault": {"name": f"fault{p}", "step_id": "a2"}, "task": p, "version": "1" if outcome == "success" else "2"},
            steps=steps,
            errors=errors,
        )

    path = folder / "hostile.jsonl"
    write_jsonl([run("good" + "0" * 28, "success", "result ok"), run("bad" + "0" * 29, "failure", f"result{p}")], path)
    return path


EXEMPT = {
    "serve": "serves until stopped and prints only its own address; its pages are HTML, escaped by the "
    "report module and tested in a real browser (tests/test_serve.py)",
}
"""Commands the stdout scan does not run, and why."""


def _invocations(src: Path, db: Path) -> dict[str, list[list[str]]]:
    s, d = str(src), str(db)
    out = str(db.with_name("report.html"))
    return {
        "runs": [["runs", "--store", d], ["runs", "--store", d, "--json"]],
        "show": [["show", s], ["show", s, "--json"], ["show", s, "--infer"], ["show", d]],
        "analyze": [["analyze", s], ["analyze", s, "--json"], ["analyze", s, "--markdown"]],
        "errors": [["errors", s], ["errors", s, "--format", "markdown"], ["errors", s, "--json"]],
        "diff": [["diff", s, s], ["diff", s, s, "--json"]],
        "import": [["import", s, "-o", str(db.with_name("again.db"))], ["import", s, "-o", str(db.with_name("x.db")), "--json"]],
        "export": [["export", s]],
        "demo": [["demo", "--no-verify"]],
        "mark": [["mark", d, "--run", "bad", "--failed", "wrong answer"], ["mark", d, "--run", "good", "--success", "--json"]],
        "report": [["report", s, "-o", out]],
        "fleet": [["fleet", d], ["fleet", d, "--format", "markdown"], ["fleet", d, "--json"]],
        "compare": [["compare", d, "--by", "version", "--a", "1", "--b", "2"]],
        # --alert-existing: on first start a watcher counts what is already there without alerting.
        "watch": [["watch", d, "--once", "--to", "-", "--alert-existing", "--state", str(db.with_name("watch.json"))]],
        "label": [["label", s, "--run", "bad", "--root", "a2"]],
        "eval": [["label", s, "--run", "bad", "--root", "a2"], ["eval", s], ["eval", s, "--json"]],
        "fit": [["label", s, "--run", "bad", "--root", "a2"], ["fit", s, "-o", str(db.with_name("model.json"))]],
        "answers": [["answers", "list", s], ["answers", "list", s, "--json"], ["answers", "list", d]],
        "lint": [["lint", s, "--exit-zero"], ["lint", s, "--json", "--exit-zero"], ["lint", d, "--exit-zero"]],
        # A score's comment, name and category carry control sequences too: runs and show print them.
        "score": [
            ["score", d, "--run", "bad", "--step", "a2", "tone=\x1b[31mred\x1b]0;t\x07", "--comment", "\x1b[2Jwiped", "--by", "\x9bx"],
            ["score", d, "--run", "bad", "q=1", "--json"],
            ["runs", "--store", d],
            ["runs", "--store", d, "--json", "--totals"],
            ["show", d, "--run", "bad"],
            ["show", d, "--run", "bad", "--step", "a2"],
        ],
    }


def _check_piped(out: bytes) -> list[str]:
    text = out.decode("utf-8", "replace")
    bad = [f"U+{ord(c):04X}" for c in sorted(set(re.findall("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]", text)))]
    return bad


_SGR = re.compile(rb"\x1b\[[0-9;]*m")


def _check_terminal(out: bytes) -> list[str]:
    rest = _SGR.sub(b"", out).replace(b"\r\n", b"\n")
    return _check_piped(rest)


def _run_on_pty(argv: list[str], cwd: Path, env: dict[str, str]) -> bytes:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=slave, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(60)
    os.close(master)
    return b"".join(chunks)


class TestEveryCommand:
    def test_every_registered_command_is_scanned(self, tmp_path: Path) -> None:
        """The scan below covers each command the CLI has (a new command must add its invocations)."""
        assert set(cli.list_commands(click.Context(cli))) == set(_invocations(tmp_path / "s.jsonl", tmp_path / "s.db")) | set(EXEMPT)

    @pytest.mark.slow
    @pytest.mark.parametrize("command", sorted(_invocations(Path("s.jsonl"), Path("s.db"))))
    def test_no_control_sequence_from_the_data_reaches_stdout(self, command: str, tmp_path: Path, cli_run: Any) -> None:
        """Each invocation of the command on runs whose names, outputs, errors and metadata carry terminal
        control sequences prints none of them: piped (no control byte at all) and on a terminal (nothing but
        the colour codes rich adds)."""
        src = _hostile_source(tmp_path)
        db = tmp_path / "hostile.db"
        cli_run("import", str(src), "-o", str(db), check=True)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TERM": "xterm-256color", "COLUMNS": "120"}
        env.pop("NO_COLOR", None)
        state = db.with_name("watch.json")  # a watcher alerts once per state: each run starts afresh
        for args in _invocations(src, db)[command]:
            state.unlink(missing_ok=True)
            piped = cli_run(*args)
            assert piped.returncode == 0, piped.stderr
            assert piped.stdout, args
            assert [] == _check_piped(piped.stdout), (args, piped.stdout[:400])
            state.unlink(missing_ok=True)
            on_tty = _run_on_pty([sys.executable, "-m", "trajdebug", *args], tmp_path, env)
            assert on_tty, args
            assert [] == _check_terminal(on_tty), (args, on_tty[:400])


def test_a_long_text_is_cut_around_where_it_first_differs_from_the_other_side() -> None:
    """`cut_where_differs` keeps a short text whole, cuts a long one at its head alone, and beside another text alike
    at its head shows a quarter line of the shared part and then the difference."""
    from trajdebug.core.escape import cut_where_differs

    assert cut_where_differs("short", "other", 20) == "short"
    assert cut_where_differs("a" * 50, None, 20) == "a" * 19 + "…"
    cut = cut_where_differs("x" * 100 + "vegetarian" + "y" * 50, "x" * 100 + "none", 40)
    assert len(cut) <= 40 and cut.startswith("…" + "x" * 10) and "vegetarian" in cut
