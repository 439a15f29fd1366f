"""Options and helpers shared by the commands: SOURCE, --run, --json, --from."""

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


def load_source(source: str | None, run_id: str | None = None, fmt: str | None = None) -> list[Run]:
    """Load runs for a command, turning source errors into click errors."""
    from trajdebug.source import SourceError, load_runs

    path = store_path(source)
    try:
        runs = load_runs(path, run_id=run_id, fmt=fmt)
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    if not runs:
        raise click.ClickException(f"{path}: no runs found")
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
    """Print JSON to stdout."""
    from trajdebug._encode import dumps

    sys.stdout.write(dumps(obj).decode("utf-8") + "\n")


def console() -> Any:
    """A rich console on stdout (colour only on a terminal)."""
    from rich.console import Console

    return Console(highlight=False, soft_wrap=False)
