"""``trajdebug runs`` and ``trajdebug show``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from trajdebug.cli._common import (
    console,
    emit_json,
    fail,
    fmt_option,
    is_derived,
    json_option,
    latest_original,
    load_source,
    run_option,
    source_argument,
    store_path,
)
from trajdebug.core.model import Run


@click.command(name="runs")
@source_argument
@click.option(
    "--store", "store", metavar="PATH", help="The store (same as SOURCE; default: $TRAJDEBUG_STORE or ./trajdebug.db)."
)
@fmt_option
@click.option(
    "--outcome", type=click.Choice(["success", "failure", "incomplete"]), help="Only runs with this outcome."
)
@click.option("--name", metavar="PATTERN", help="Only runs whose name matches (SQL LIKE: % and _).")
@click.option(
    "--limit", type=click.IntRange(min=1), default=50, show_default=True, help="At most this many runs."
)
@click.option(
    "--all", "show_all", is_flag=True, help="Also list replays and reference runs (hidden by default)."
)
@json_option
def runs_cmd(
    source: str | None,
    store: str | None,
    fmt: str | None,
    outcome: str | None,
    name: str | None,
    limit: int,
    show_all: bool,
    as_json: bool,
) -> None:
    """List the runs of SOURCE, newest first.

    SOURCE is a store, a trajdebug JSONL file or a foreign trace, as for every
    other command (default: $TRAJDEBUG_STORE or ./trajdebug.db; --store is the
    same).  Replays and reference runs that verification recorded are hidden
    unless --all is given.  A run the recorder lost records of (dropped under
    load, unwritable, finished after the run ended) shows how many next to its
    outcome.

    \b
    Example:
        trajdebug runs meeting.db --outcome failure
    """
    from pathlib import Path

    from trajdebug.store import Store, StoreError, is_store

    if source and store and Path(source) != Path(store):
        raise fail(f"two sources given: {source} and --store {store}; give one")
    path = store_path(source or store)
    if not Path(path).exists():
        raise fail(f"{path}: no store here yet (record a run, or try: trajdebug demo)")
    if fmt not in (None, "store") or not is_store(path):
        if fmt == "store":
            raise fail(f"{path}: not a trajdebug store")
        rows, hidden = _summaries(load_source(path, None, fmt), outcome, name, limit, show_all)
    else:
        try:
            with Store(path, readonly=True) as st:
                rows = st.list_runs(outcome=outcome, name=name, limit=limit, derived=show_all)
                hidden = 0
                if not show_all:
                    hidden = st.count_runs(outcome=outcome, name=name) - st.count_runs(
                        outcome=outcome, name=name, derived=False
                    )
        except StoreError as exc:
            raise fail(str(exc)) from None
    if as_json:
        emit_json({"store": path, "runs": [r.to_dict() for r in rows], "hidden": hidden})
        return
    _print_runs(rows, hidden)


def _print_runs(rows: list[Any], hidden: int) -> None:
    """The runs as a terminal table, with what is hidden and why."""
    from rich.table import Table

    from trajdebug.core.escape import markup as escape
    from trajdebug.report.text import fmt_duration

    table = Table(box=None, pad_edge=False)
    for col in ("run", "name", "outcome", "steps", "errors", "time", "note"):
        table.add_column(col, no_wrap=col not in ("name", "note"), overflow="ellipsis")
    style = {"success": "green", "failure": "red", "incomplete": "yellow"}
    for r in rows:
        dur = None if r.end_ns is None or r.start_ns is None else r.end_ns - r.start_ns
        table.add_row(
            escape(r.run_id[:12]),
            escape(r.name),
            f"[{'yellow' if r.lost else style.get(r.outcome, 'white')}]{escape(r.outcome)}"
            + (f", {r.lost:,} lost" if r.lost else "")
            + "[/]",
            str(r.steps),
            str(r.errors),
            fmt_duration(dur),
            escape(r.note or ""),
        )
    out = console()
    out.print(table)
    if not rows:
        out.print("no runs", style="dim")
    if hidden:
        out.print(
            f"{hidden} more run{'s' if hidden != 1 else ''} hidden: replays and reference runs (--all lists them)",
            style="dim",
        )


def _summaries(
    runs: list[Run], outcome: str | None, name: str | None, limit: int, show_all: bool
) -> tuple[list[Any], int]:
    """`Store.list_runs` for a file: the runs' summaries, newest first, filtered the same way, and how
    many replays and reference runs were left out."""
    import re

    from trajdebug.core.schema import RECORDER_KEY, lost_in
    from trajdebug.store import RunSummary, run_note

    pattern = None
    if name is not None:
        # SQL LIKE, as the store reads --name: % any run of characters, _ one character, no case.
        like = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in name)
        pattern = re.compile(like, re.IGNORECASE | re.DOTALL)
    picked = [
        r
        for r in runs
        if (outcome is None or r.outcome == outcome) and (pattern is None or pattern.fullmatch(r.name))
    ]
    shown = picked if show_all else [r for r in picked if not is_derived(r)]
    shown.sort(key=lambda r: r.start_ns, reverse=True)
    rows = [
        RunSummary(
            r.run_id,
            r.name,
            r.start_ns,
            r.end_ns,
            r.outcome,
            r.failure_reason,
            len(r.steps),
            len(r.errors),
            run_note(r.metadata),
            lost_in(r.metadata.get(RECORDER_KEY)),
        )
        for r in shown[:limit]
    ]
    return rows, len(picked) - len(shown)


@click.command(name="show")
@source_argument
@run_option
@fmt_option
@json_option
@click.option("--no-deps", is_flag=True, help="Hide each step's dependencies.")
@click.option(
    "--max-steps", type=click.IntRange(min=1), default=None, help="Show at most this many steps per run."
)
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="Show every step of a large run (by default a run of more than 1,000 steps shows its first 900 "
    "and last 100, and says how many it left out).",
)
@click.option(
    "--infer/--no-infer",
    default=None,
    help="Also list the dependencies `analyze` infers from content (marked inferred, with their confidence): "
    "on by default for --step's text, off for the step trees and --json.",
)
@click.option(
    "--step",
    "step_sel",
    metavar="STEP",
    help="Show this step in full: input, output, error, attributes, dependencies in and out "
    "(a step id, its last digits as shown, e.g. 000005, a step name, or both as listings print them: write_sql#000005).",
)
@click.option("--io", "show_io", is_flag=True, help="Also print each step's input and output.")
def show_cmd(
    source: str | None,
    run_id: str | None,
    fmt: str | None,
    as_json: bool,
    no_deps: bool,
    max_steps: int | None,
    infer: bool | None,
    step_sel: str | None,
    show_io: bool,
    show_all: bool,
) -> None:
    """Show runs as step trees: kind, name, duration, status and dependencies.

    SOURCE is a store, a trajdebug JSONL file or a foreign trace; without
    --run, every run of it, newest first (as `trajdebug runs` lists them).
    With no SOURCE, the newest run of the default store.  Each dependency is
    marked tracked, declared or inferred (with its confidence).  The edges
    `analyze` infers from content (a value one step returned that a later
    step was given, e.g. a tool's result sent back to the model as JSON text)
    are listed by --step, and by the trees with --infer; --no-infer shows only
    what was recorded.  --step without --run looks in every run and names the
    run of each step it prints.

    \b
    Example:
        trajdebug show runs.jsonl --run 3f2a
        trajdebug show --step write_sql
    """
    everything = load_source(source, run_id, fmt)
    if source is None and run_id is None:
        runs = latest_original(everything)
    else:
        # Newest first, as `runs` lists them (among equal starts the later in the source first).
        runs = [r for _, r in sorted(enumerate(everything), key=lambda p: (p[1].start_ns, p[0]), reverse=True)]
    def pool() -> list[Run]:
        return load_source(source, None, fmt) if run_id is not None else everything

    if step_sel is not None:
        # The full view of a step lists the edges the analysis's reasons name ("an inferred edge from ..."), unless
        # asked not to; --json keeps what was recorded unless --infer asks (nu32 finding 7).
        with_inferred = infer if infer is not None else not as_json
        _show_steps(runs, step_sel, as_json, (lambda rs: _as_analyzed(rs, pool())) if with_inferred else None)
        return
    if infer:
        runs = _as_analyzed(runs, pool())
    if as_json:
        from trajdebug.report.json import run_to_dict
        from trajdebug.usage import default_prices, run_usage

        prices = default_prices()
        from trajdebug.report.text import cut_short

        # ``cut_short`` is derived (the steps the run's failure interrupted, as the analysis reads them), as
        # ``usage`` is: the record itself is unchanged.
        emit_json(
            {
                "runs": [
                    {**run_to_dict(r), "usage": run_usage(r, prices).to_dict(), "cut_short": _in_order(r, cut_short(r))}
                    for r in runs
                ]
            }
        )
        return
    from trajdebug.report.text import render_run

    out = console(unwrapped_piped=True)
    for i, r in enumerate(runs):
        if i:
            out.print()
        shown = render_run(r, out, show_deps=not no_deps, max_steps=max_steps, everything=show_all)
        if show_io:
            from trajdebug.report.step import IO_LIMIT, render_step

            for s in shown:
                out.print()
                render_step(s, r, out, limit=IO_LIMIT, io_only=True)


def _in_order(run: Run, ids: frozenset[str]) -> list[str]:
    return [s.step_id for s in run.steps if s.step_id in ids]


def _as_analyzed(runs: list[Run], pool: list[Run]) -> list[Run]:
    """The runs with the dependencies `analyze` adds to each (inferred from content, thinned, and those to the values
    a failure names), as the analysis's reasons cite them: each run is analyzed as `analyze` would, with its
    earlier turns and the passing runs of its agent in ``pool`` (every run of the source)."""
    from trajdebug.analysis import analyzed_run, previous_turns, references

    # Only the edges: the search and ranking `analyze` runs on them were most of what `show --step` cost (nu64b).
    return [analyzed_run(r, previous=previous_turns(r, pool), references=references(r, pool)) for r in runs]


def _show_steps(
    runs: list[Run], selector: str, as_json: bool, analyzed: Callable[[list[Run]], list[Run]] | None = None
) -> None:
    """``show --step``: the selected steps of the runs, in full; with ``analyzed``, of the runs it returns (the
    runs holding a selected step, with the dependencies the analysis adds: `_as_analyzed`)."""
    from trajdebug.report.step import render_step, select_steps, step_to_json

    picked = [(r, s) for r in runs for s in select_steps(r, selector)]
    if not picked:
        where = runs[0].run_id[:12] if len(runs) == 1 else f"{len(runs)} runs"
        raise click.ClickException(f"no step {selector!r} in {where} (try a step name or the digits after #)")
    if analyzed is not None:
        holding = list({id(r): r for r, _ in picked}.values())
        try:
            by_id = {id(old): new for old, new in zip(holding, analyzed(holding), strict=True)}
        except Exception as exc:  # noqa: BLE001 - show what was recorded rather than nothing
            # The inferred edges are an addition; a run the analysis cannot read is still shown as recorded.
            click.echo(f"trajdebug: inferred edges not shown ({type(exc).__name__}: {exc})", err=True)
        else:
            picked = [(by_id[id(r)], by_id[id(r)].step_map().get(s.step_id, s)) for r, s in picked]
    if as_json:
        emit_json({"steps": [{"run_id": r.run_id, **step_to_json(s, r)} for r, s in picked]})
        return
    from trajdebug.core.escape import visible

    out = console(unwrapped_piped=True)
    for i, (r, s) in enumerate(picked):
        if i:
            out.print()
        if len(runs) > 1:
            # Steps of the same name in several runs look alike: say whose each one is.
            out.print(f"run {visible(r.run_id[:12])}  {visible(r.name)}  {r.outcome}", markup=False, style="bold")
        render_step(s, r, out)


def register(cli: click.Group) -> None:
    """Add ``runs`` and ``show``."""
    cli.add_command(runs_cmd)
    cli.add_command(show_cmd)
