"""Options and helpers shared by the commands: SOURCE, --run, --json, --from, output and progress.

Everything a command prints goes through `trajdebug.core.escape`: the console
carries a render hook that shows control characters as visible escapes,
`emit_json` writes JSON that cannot drive a terminal, and `fail` and `warn`
escape their messages.  Progress bars appear only on a terminal (stderr), so
piped output stays clean.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from trajdebug.core.model import Run


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


REFS_HELP = (
    "Runs to compare with from another file or store (any format SOURCE may be, detected); repeatable. Its runs "
    "join the references exactly as if they were in SOURCE (only SOURCE's runs are analyzed): a passing run on "
    "another input compares behaviour (what the steps always did), not values; a passing run of the same input "
    "is compared value for value."
)
"""The help of ``--refs`` (`refs_option`), the same on every command that takes references."""


def refs_option(fn: F) -> F:
    """``--refs FILE`` (repeatable): more runs to compare with, loaded as SOURCE is (`analyze_source`'s ``refs``)."""
    return click.option(
        "--refs",
        "refs",
        metavar="FILE",
        multiple=True,
        type=click.Path(exists=True, dir_okay=True),
        help=REFS_HELP,
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
    """The source, or the default store when none is given.

    Raises:
        click.ClickException: no source given and no default store here yet (every reading command
            says so the same way).
    """
    if source:
        return source
    from pathlib import Path

    from trajdebug.store import default_store_path

    path = str(default_store_path())
    if not Path(path).exists():
        raise fail(f"{path}: no store here yet (record a run, or try: trajdebug demo)")
    return path


def fail(message: str) -> click.ClickException:
    """A one-line error for the user (control characters in it shown as escapes)."""
    from trajdebug.core.escape import one_line

    return click.ClickException(one_line(message))


def warn(message: str) -> None:
    """A warning on stderr, one line."""
    from trajdebug.core.escape import one_line

    click.echo(f"warning: {one_line(message)}", err=True)


def load_source(source: str | None, run_id: str | None = None, fmt: str | None = None) -> list[Run]:
    """Load runs for a command (stores are opened read-only), turning source errors into one-line errors."""
    from trajdebug.sources.load import SourceError, load_runs

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
    from trajdebug.core.codec import dumps
    from trajdebug.core.escape import json_text

    sys.stdout.write(json_text(dumps(obj).decode("utf-8")) + "\n")


def console(*, unwrapped_piped: bool = True, stderr: bool = False) -> Any:
    """A rich console on stdout (``stderr``: on stderr; colour only on a terminal); what it prints goes through
    `visible`.

    Piped into a file, a pager or another program, text is never wrapped, a value is one line (nu62 bug 7:
    `show` and `analyze` split "the claimed 837.07 EUR" at 80 columns, where a script could not find it), and
    never cut either: a line printed to fold, or to end in ``…`` at the terminal's edge, is printed whole
    (nu63: `show --step` cut values at 80 columns; nu64b: `show` cut the cost off model-call lines, `mark` and
    `fleet` wrapped at 80); a table is as wide as its widest row; a line shortened on purpose says so with
    ``…``.  The default of every command, so that no command can forget it.  On a terminal, rich wraps to its
    width (``COLUMNS`` sets another).  ``unwrapped_piped=False`` keeps rich's 80 columns when piped
    (`errors`' table, laid out in them)."""
    from trajdebug.core.escape import render_hook

    out = _console_class()(highlight=False, soft_wrap=False, stderr=stderr)
    out.soft_wrap = unwrapped_piped and not out.is_terminal
    out.push_render_hook(render_hook())
    return out


@functools.cache
def _console_class() -> Any:
    """rich's ``Console`` that, unwrapped (``soft_wrap``), prints every line whole: rich would otherwise cut a
    line at 80 columns, with no marker (``overflow="fold"`` with ``soft_wrap`` truncates) or with ``…``
    (``overflow="ellipsis"``), and lay a table out in 80 columns, wrapping its cells.  Made on first use, so a
    command that prints nothing does not import rich."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    class _Unwrapped(Console):
        def print(self, *objects: Any, **options: Any) -> None:
            if not (self.soft_wrap and options.get("soft_wrap", True)):
                super().print(*objects, **options)
                return
            options["overflow"], options["no_wrap"] = "ignore", True
            tables = [o for o in objects if isinstance(o, Table)]
            if not tables:
                super().print(*objects, **options)
                return
            # A table is laid out, not wrapped: at its natural width, each cell on one line.
            wide = self.options.update(max_width=1 << 16)
            need = max(Measurement.get(self, wide, t).maximum for t in tables)
            kept = self.width
            self.width = max(kept, need)
            try:
                super().print(*objects, **{**options, "soft_wrap": False})
            finally:
                self.width = kept

    return _Unwrapped


PROGRESS_DELAY = 1.0
"""Seconds of work before a progress bar appears (``$TRAJDEBUG_PROGRESS_DELAY`` overrides it)."""


class Progress:
    """A progress bar on stderr while a long command works: only on a terminal, never with ``--json``,
    and only once the work has taken more than `PROGRESS_DELAY` seconds (quick commands draw nothing).

    Example:
        ```python
        with Progress("importing", total=len(runs), enabled=not as_json) as bar:
            for run in runs:
                ...
                bar.advance()
        ```

    The library reports progress through callbacks (``progress=bar.advance``), so the bar
    stays in the command line.
    """

    def __init__(self, label: str, total: int | None = None, *, enabled: bool = True) -> None:
        self.label = label
        self.total = total
        self.enabled = enabled
        self.done = 0
        self._bar: Any = None
        self._task: Any = None
        self._timer: Any = None
        self._closed = False
        import threading

        self._lock = threading.Lock()

    def __enter__(self) -> Progress:
        if self.enabled and sys.stderr.isatty():
            import os
            import threading

            try:
                delay = float(os.environ.get("TRAJDEBUG_PROGRESS_DELAY", PROGRESS_DELAY))
            except ValueError:
                delay = PROGRESS_DELAY
            if delay <= 0:
                self._show()
            else:
                self._timer = threading.Timer(delay, self._show)
                self._timer.daemon = True
                self._timer.start()
        return self

    def _show(self) -> None:
        """Draw the bar (from the timer thread once the delay has passed)."""
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        from trajdebug.core.escape import visible

        with self._lock:
            if self._closed or self._bar is not None:
                return
            bar = Bar(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            bar.__enter__()
            self._task = bar.add_task(visible(self.label), total=self.total, completed=self.done)
            self._bar = bar

    def set_total(self, total: int | None) -> None:
        """Say how many items there are, once known."""
        with self._lock:
            self.total = total
            if self._bar is not None:
                self._bar.update(self._task, total=total)

    def update(self, done: int, total: int | None = None) -> None:
        """Set how many items are done (and how many there are): the library's ``progress(done, total)`` hook."""
        with self._lock:
            self.done, self.total = done, total if total is not None else self.total
            if self._bar is not None:
                self._bar.update(self._task, completed=done, total=self.total)

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more items done."""
        with self._lock:
            self.done += n
            if self._bar is not None:
                self._bar.advance(self._task, n)

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.__exit__(*exc)
