"""Options and helpers shared by the commands: SOURCE, --run, --json, --from, output and progress.

Everything a command prints goes through `trajdebug.escape`: the console
carries a render hook that shows control characters as visible escapes,
`emit_json` writes JSON that cannot drive a terminal, and `fail` and `warn`
escape their messages.  Progress bars appear only on a terminal (stderr), so
piped output stays clean.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from trajdebug.model import Run


F = TypeVar("F", bound=Callable[..., Any])

FORMATS = ("trajdebug", "store", "otlp", "openai", "transcript")


def source_argument(fn: F) -> F:
    """``SOURCE``: a store, a JSONL file, a foreign trace or a directory of OTLP files (default: the default store)."""
    return click.argument("source", required=False, type=click.Path(dir_okay=True))(fn)


def run_option(fn: F) -> F:
    """``--run ID``: one run of the source (a unique prefix is enough)."""
    return click.option(
        "--run", "run_id", metavar="ID", help="Only this run (a unique id prefix is enough)."
    )(fn)


def json_option(fn: F) -> F:
    """``--json``: machine-readable output."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")(fn)


def fmt_option(fn: F) -> F:
    """``--from FORMAT``: the source's format (auto-detected by default)."""
    return click.option(
        "--from",
        "fmt",
        type=click.Choice(FORMATS),
        help="Format of SOURCE (auto-detected by default).",
    )(fn)


def store_path(source: str | None) -> str:
    """The source, or the default store when none is given."""
    if source:
        return source
    from trajdebug.store import default_store_path

    return str(default_store_path())


def fail(message: str) -> click.ClickException:
    """A one-line error for the user (control characters in it shown as escapes)."""
    from trajdebug.escape import one_line

    return click.ClickException(one_line(message))


def warn(message: str) -> None:
    """A warning on stderr, one line."""
    from trajdebug.escape import one_line

    click.echo(f"warning: {one_line(message)}", err=True)


def load_source(source: str | None, run_id: str | None = None, fmt: str | None = None) -> list[Run]:
    """Load runs for a command (stores are opened read-only), turning source errors into one-line errors."""
    from trajdebug.source import SourceError, load_runs

    path = store_path(source)
    try:
        runs = load_runs(path, run_id=run_id, fmt=fmt)
    except SourceError as exc:
        raise fail(str(exc)) from None
    if not runs:
        raise fail(f"{path}: no runs found")
    return runs


def is_derived(run: Run) -> bool:
    """Whether a run was made by trajdebug for another run: a replay or a reference run."""
    md = run.metadata
    return bool(md.get("replay_of") or md.get("reference_for"))


def latest_original(runs: list[Run]) -> list[Run]:
    """The newest run that is neither a replay nor a reference run, as a one-element list.

    "The latest run" of a store means the run the user recorded last, not the
    replays that verifying it added after it; when every run is one of those,
    the newest of them.
    """
    pool = [r for r in runs if not is_derived(r)] or runs
    if not pool:
        return []
    # Newest by start time; among equal starts the later in the source.
    return [max(enumerate(pool), key=lambda p: (p[1].start_ns, p[0]))[1]]


def emit_json(obj: Any) -> None:
    """Print JSON to stdout (valid JSON; controls a terminal would obey are written as ``\\u`` escapes)."""
    from trajdebug._encode import dumps
    from trajdebug.escape import json_text

    sys.stdout.write(json_text(dumps(obj).decode("utf-8")) + "\n")


def console() -> Any:
    """A rich console on stdout (colour only on a terminal); what it prints goes through `visible`."""
    from rich.console import Console

    from trajdebug.escape import render_hook

    out = Console(highlight=False, soft_wrap=False)
    out.push_render_hook(render_hook())
    return out


class Progress:
    """A progress bar on stderr while a long command works, only when stderr is a terminal.

    Example:
        ```python
        with Progress("importing", total=len(runs)) as bar:
            for run in runs:
                ...
                bar.advance()
        ```
    """

    def __init__(self, label: str, total: int | None = None) -> None:
        self.label = label
        self.total = total
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Progress:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn
            from rich.progress import Progress as Bar

            from trajdebug.escape import visible

            self._bar = Bar(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._bar.__enter__()
            self._task = self._bar.add_task(visible(self.label), total=self.total)
        return self

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done."""
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)
