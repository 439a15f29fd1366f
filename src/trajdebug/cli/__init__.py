"""The ``trajdebug`` command line: a thin layer over the library.

Each command group lives in its own module with a ``register(cli)`` function.
Errors a user can act on (a file that cannot be written, a store on a
read-only mount, a source in no known format) end the command with one line
naming the file and the reason, never a traceback.
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
import sys
from typing import Any

import click


COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("trajdebug.cli._analyze", "Find where runs failed and rank the steps most likely to have caused it."),
    "answers": (
        "trajdebug.cli._answers",
        "List the answers stored with runs, or import a file of them (the HTML report's download).",
    ),
    "compare": (
        "trajdebug.cli._fleet",
        "Compare two run sets: failure rates with 95 % intervals, new/gone/grown groups, changed steps.",
    ),
    "demo": ("trajdebug.cli._demo", "Run the bundled SQL reporting agent with an injected fault and debug it."),
    "diff": ("trajdebug.cli._replay", "Align a passing and a failing run step by step and show where they diverge."),
    "errors": (
        "trajdebug.cli._errors",
        "Show each error's lifecycle: where it occurred, how it propagated, how it ended.",
    ),
    "eval": ("trajdebug.cli._labels", "Measure the analysis on SOURCE's labelled runs: top-1, top-3 and (with a learned model) calibration."),
    "export": ("trajdebug.cli._io", "Export runs as OTLP/JSON spans, to open them in any OpenTelemetry backend."),
    "fit": ("trajdebug.cli._labels", "Fit a ranking model on SOURCE's labelled runs, starting from the shipped model (needs the `train` extra)."),
    "fleet": (
        "trajdebug.cli._fleet",
        "Group the failed runs of SOURCES by root cause, and rank what failing runs have that passing runs don't.",
    ),
    "import": ("trajdebug.cli._io", "Import a foreign trace into trajdebug runs."),
    "label": ("trajdebug.cli._labels", "Record which step caused a run's failure (stored in SOURCE.labels.jsonl beside SOURCE)."),
    "lint": ("trajdebug.cli._lint", "Check how an agent is instrumented, from its recorded runs."),
    "mark": ("trajdebug.cli._mark", "Mark a run failed (or successful) after the fact, so analyze treats it so."),
    "report": ("trajdebug.cli._report", "Write one run as a self-contained HTML report."),
    "runs": ("trajdebug.cli._runs", "List the runs of SOURCE, newest first."),
    "score": ("trajdebug.cli._score", "Put a score on a run or a step: NAME=VALUE, a number, a category or true/false."),
    "serve": (
        "trajdebug.cli._serve",
        "Browse runs in a local web UI: the run list, each run's report, two runs compared.",
    ),
    "show": ("trajdebug.cli._show", "Show runs as step trees: kind, name, duration, status and dependencies."),
    "watch": (
        "trajdebug.cli._fleet",
        "Follow a store or a folder: analyze each new failed run once, alert once per new group.",
    ),
}
"""Each command: the module that defines it (as ``<name>_cmd``) and the first line of its help.

A command's module is imported only when the command runs (or shows its own
help), so ``trajdebug --help`` and every command start without loading the
analysis, the report or the servers they do not use.  The summaries are what
``trajdebug --help`` lists; tests/test_cli.py checks them against the commands.
"""


def user_error(exc: BaseException) -> str | None:
    """The one-line message for an error the user can act on, or None for a bug (which keeps its traceback)."""
    from trajdebug.sources.load import SourceError
    from trajdebug.store import StoreError

    if isinstance(exc, (SourceError, StoreError)):
        return str(exc)
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "file"
        return f"{where}: {exc.strerror or exc}"
    if isinstance(exc, sqlite3.Error):
        return f"store: {exc}"
    return None


class _Group(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = self.commands.get(cmd_name)
        if cmd is None and cmd_name in COMMANDS:
            cmd = getattr(importlib.import_module(COMMANDS[cmd_name][0]), f"{cmd_name.replace('-', '_')}_cmd")
            self.add_command(cmd, cmd_name)
        return cmd

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # As click.Group.format_commands, from the summaries: listing the commands imports none of them.
        listed = {n: self.commands.get(n) or click.Command(n, help=COMMANDS[n][1]) for n in self.list_commands(ctx)}
        shown = [(n, c) for n, c in listed.items() if not c.hidden]
        if shown:
            limit = formatter.width - 6 - max(len(n) for n, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(n, c.get_short_help_str(limit)) for n, c in shown])

    def invoke(self, ctx: click.Context) -> Any:
        from trajdebug.core.escape import one_line

        try:
            return super().invoke(ctx)
        except click.ClickException as exc:
            # Messages quote file names, run ids and reasons: never let them drive the terminal.
            setattr(exc, "message", one_line(exc.message))  # noqa: B010 - Final only to type checkers
            raise
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except (OSError, sqlite3.Error, ValueError, RuntimeError) as exc:
            message = user_error(exc)
            if message is None:
                raise
            raise click.ClickException(one_line(message)) from None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="trajdebug")
def cli() -> None:
    """Debug LLM-agent runs: record, find the root cause of a failure, verify it."""


class _VisibleFormatter(logging.Formatter):
    """Log lines on stderr with control characters shown as escapes (messages quote untrusted names)."""

    def format(self, record: logging.LogRecord) -> str:
        from trajdebug.core.escape import visible

        return visible(super().format(record))


def main() -> None:
    """Console-script entry point."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_VisibleFormatter("%(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    cli()


__all__ = ["COMMANDS", "cli", "main", "user_error"]
