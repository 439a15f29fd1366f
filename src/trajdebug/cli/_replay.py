"""``trajdebug diff`` and the ``--verify`` support of ``trajdebug analyze``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from trajdebug.cli._common import console, emit_json, fail, fmt_option, is_derived, json_option, store_path
from trajdebug.core.model import Run
from trajdebug.core.shortids import shortener


F = TypeVar("F", bound=Callable[..., Any])


def load_callable(spec: str, what: str = "entry point") -> Callable[..., Any]:
    """Import ``module:function`` (`trajdebug.core.plugins.load_callable`), as a click parameter error when it fails."""
    from trajdebug.core.plugins import load_callable as load

    try:
        return load(spec, what)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


# -- analyze --verify ----------------------------------------------------------------------


def add_verify_option(command: F) -> F:
    """Add ``--verify MODULE:FUNCTION``, ``--fixer MODULE:FUNCTION`` and ``--samples K`` to a command.

    The command receives ``verify_entry``, ``fixer`` and ``verify_samples`` and
    passes them to `verify_analyses`.
    """
    command = click.option(
        "--samples",
        "verify_samples",
        type=click.IntRange(min=1),
        default=3,
        show_default=True,
        help="With --verify: replays per patch when live calls make a replay nondeterministic.",
    )(command)
    command = click.option(
        "--fixer",
        "fixer",
        metavar="MODULE:FUNCTION",
        help="With --verify: fixer(step, run) returning a step's corrected output (or None).",
    )(command)
    command = click.option(
        "--verify",
        "verify_entry",
        metavar="MODULE:FUNCTION",
        help="Verify the top candidates by replaying the run through this entry point "
        "(called with the arguments recorded in the run's 'entry' metadata).",
    )(command)
    return command


# -- diff ---------------------------------------------------------------------------------------


def _resolve(
    ref: str, fmt: str | None, store: str | None, want: str, partner: Run | None = None
) -> tuple[Path, Run, tuple[str, ...]]:
    """A run reference: ``PATH``, ``PATH@RUN_ID`` or a run id (prefix) in the store; with the file it was read
    from (run ids are per file: ``task-5`` of two message logs are two runs) and the run ids of that file (what
    the id shown must stay unique among: `trajdebug.core.shortids`).  Of several passing runs, the one
    given the same input as ``partner`` (the failing run) when there is one: only that run's values can say which
    value is wrong (`trajdebug.same_input`); else the newest."""
    from trajdebug.sources.load import SourceError, load_runs, select_run

    path, run_id = ref, None
    if not Path(ref).exists() and "@" in ref:
        head, _, tail = ref.rpartition("@")
        if Path(head).exists():
            path, run_id = head, tail
    # A reference that names no file is a run id in the store: said in any error, so a mistyped file name is
    # not reported as a missing default store alone (nu62: `diff a b` in an empty folder).
    as_id = ""
    if not Path(path).exists():
        try:
            path, run_id = store_path(store), ref
        except click.ClickException as exc:
            raise fail(f"{ref}: no such file or store, so read as a run id: {exc.message}") from None
        as_id = f"{ref}: no such file or store, so read as a run id in {path}: "
    try:
        every = load_runs(path, fmt=fmt)
        runs = select_run(path, every, run_id) if run_id is not None else every
    except SourceError as exc:
        raise click.ClickException(f"{as_id}{exc}") from None
    if not runs:
        raise click.ClickException(f"{as_id}{path}: no runs found")
    if want == "failure" and run_id is None and all(r.outcome == "success" for r in runs):
        # BAD named by its file: its newest failing run is meant, and there is none (nu63: "GOOD and BAD are the
        # same run" said nothing of that when both named one store of passing runs).
        raise _NoFailingRun(
            f"BAD: {path} holds no failing run ({len(runs)} passing); name the run to compare with PATH@RUN_ID "
            f"(`trajdebug runs {path}` lists them)"
        )
    ids = tuple(r.run_id for r in every)
    if len(runs) > 1:
        # Several runs: the newest with the outcome this side needs.
        originals = [r for r in runs if not is_derived(r)] or runs
        if want == "success" and partner is not None:
            from trajdebug.api import same_input

            twin = same_input(partner, [r for r in originals if r.run_id != partner.run_id])
            if twin is not None:
                return Path(path).resolve(), twin, ids
        fitting = [r for r in originals if r.outcome == want] or originals
        return Path(path).resolve(), max(fitting, key=lambda r: r.start_ns), ids
    return Path(path).resolve(), runs[0], ids


class _NoFailingRun(click.ClickException):
    """BAD names a file of passing runs alone: `diff_cmd` adds the swap when GOOD's file holds the failing run."""


def _swapped(good: str, bad: str, fmt: str | None, exc: click.ClickException) -> click.ClickException:
    """The error for a BAD of passing runs alone, saying the arguments look swapped when GOOD's file holds a
    failing run (newuser65: `diff fail.db pass.db` named no order, though GOOD comes first)."""
    from trajdebug.sources.load import SourceError, load_runs

    if not Path(good).exists():
        return exc
    try:
        failed = sum(r.outcome == "failure" for r in load_runs(good, fmt=fmt))
    except SourceError:
        return exc
    if not failed:
        return exc
    return click.ClickException(
        f"{exc.message}; GOOD ({good}) holds {failed} failing run{'s' if failed != 1 else ''}: the arguments look "
        f"swapped (GOOD, the passing run, comes first): trajdebug diff {bad} {good}"
    )


def _other_agents(g: Run, b: Run, al: Any) -> str | None:
    """One line when the two runs share no step and have different names: runs of two agents, whose diff lists
    every step as one side's only (newuser65: a support log against a group chat said nothing of it)."""
    if g.name == b.name or any(p.good is not None and p.bad is not None for p in al.pairs):
        return None
    return (
        f"GOOD ({g.name}) and BAD ({b.name}) are runs of two different agents: no step of one pairs with a step of "
        "the other, so a diff says nothing; compare BAD with a passing run of its own agent (--force diffs them "
        "anyway)"
    )


def _render_diff(al: Any, iso: Any, short: tuple[Callable[[str], str], Callable[[str], str]]) -> None:
    """Print `trajdebug.replay.diffview.diff_lines` (the library says what; this prints it, escaped)."""
    from rich.text import Text

    from trajdebug.replay.diffview import diff_lines

    # Piped into a file or a pager, a value is one line (nu30 finding 8: wrapped at 80 columns mid-value, a date
    # read "2026-12-0" / "1"); on a terminal, rich wraps to its width.
    con = console(unwrapped_piped=True)
    for line in diff_lines(al, iso, short):
        text = Text()
        for part, style in line:
            text.append(part, style=style or None)
        con.print(text)


@click.command(name="diff")
@click.argument("good")
@click.argument("bad")
@fmt_option
@click.option(
    "--store", metavar="PATH", help="Store for run ids (default: $TRAJDEBUG_STORE or ./trajdebug.db)."
)
@click.option(
    "--isolate",
    "entry",
    metavar="MODULE:FUNCTION",
    help="Also isolate the failure-inducing differences by replay (delta debugging) through this entry point.",
)
@click.option("--force", is_flag=True, help="Diff runs of two different agents too (no step paired, names differ).")
@json_option
def diff_cmd(
    good: str, bad: str, fmt: str | None, store: str | None, entry: str | None, force: bool, as_json: bool
) -> None:
    """Align a passing and a failing run step by step and show where they diverge.

    GOOD and BAD are each a run id (prefix) in the store, a file or store
    (for BAD its newest failing run; for GOOD its passing run of the same
    input as BAD when it holds one, else its newest passing run), or
    PATH@RUN_ID (a BAD file with no failing run is an error: name its run so).
    Steps are matched by name path and call order (a retried call's
    attempts by what they asked: the same page with the same page).  Shown: the
    first divergence, what differs at each step (the two requests where the
    request differs, the two outputs where only the output does), and the
    steps downstream of it that changed; when several steps answered the
    same request otherwise, the origins line names them all.  What a model
    API makes new on every call (a response's or a tool call's id, its
    creation time, token usage, system fingerprint) is no difference, in a
    step that returns a whole response, a message or a tool call alike.
    Step ids are the failing run's; a
    step only the passing run has is shown as good#ID.  When the two runs
    were given different inputs, the header says so: nearly every value
    then differs, and the comparison shows where the agent behaved
    otherwise, not which value is wrong (compare with a passing run of the
    same input for that).  Runs of two different agents (different names,
    no step paired) are an error unless --force; a BAD file of passing runs
    alone, when GOOD's file holds a failing run, is said to look swapped.
    With --isolate, replays find the minimal failure-inducing set of
    differences (Zeller's dd) and the earliest correction that removes the
    failure.

    \b
    Example:
        trajdebug diff 3f2a 9c1e
        trajdebug diff runs.jsonl runs.jsonl --isolate myagent:main
    """
    from trajdebug.replay import align, isolate

    try:
        b_file, b, b_ids = _resolve(bad, fmt, store, "failure")
    except _NoFailingRun as exc:
        raise _swapped(good, bad, fmt, exc) from None
    g_file, g, g_ids = _resolve(good, fmt, store, "success", partner=b)
    short = (shortener(g_ids), shortener(b_ids))
    if g_file == b_file and g.run_id == b.run_id:
        raise click.ClickException(f"GOOD and BAD are the same run ({short[1](g.run_id)})")
    al = align(g, b)
    other = None if force else _other_agents(g, b, al)
    if other is not None:
        raise click.ClickException(other)
    iso = isolate(load_callable(entry), g, b) if entry else None
    if as_json:
        out = al.to_dict()
        if iso is not None:
            out["isolation"] = iso.to_dict()
        emit_json(out)
        return
    _render_diff(al, iso, short)


def register(cli: click.Group) -> None:
    """Add ``diff``."""
    cli.add_command(diff_cmd)


__all__ = ["add_verify_option", "load_callable", "register"]
