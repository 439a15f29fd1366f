"""``trajdebug show``: runs as step trees, or steps in full."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from trajdebug.cli._common import (
    console,
    emit_json,
    fmt_option,
    json_option,
    latest_original,
    load_source,
    run_option,
    source_argument,
)
from trajdebug.core.model import Run
from trajdebug.core.shortids import shortener


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
        _emit_runs(runs)
        return
    # One run named by --run is shown by its whole id (its source's other ids were not read); else each is cut
    # to its prefix unique among the source's.
    short = (lambda rid: rid) if run_id is not None else shortener(r.run_id for r in everything)
    _print_trees(runs, short, no_deps=no_deps, max_steps=max_steps, show_all=show_all, show_io=show_io)


def _emit_runs(runs: list[Run]) -> None:
    """``show --json``: each run as recorded, with its usage and the steps its failure cut short."""
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


def _print_trees(
    runs: list[Run], short: Callable[[str], str], *, no_deps: bool, max_steps: int | None, show_all: bool, show_io: bool
) -> None:
    """``show``'s text: each run's step tree and scores, with ``show_io`` each shown step's input and output."""
    from trajdebug.report.text import render_run

    out = console(unwrapped_piped=True)
    for i, r in enumerate(runs):
        if i:
            out.print()
        shown = render_run(
            r, out, show_deps=not no_deps, max_steps=max_steps, everything=show_all, shown_id=short(r.run_id)
        )
        _print_scores(out, r, None)
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
        where = runs[0].run_id if len(runs) == 1 else f"{len(runs)} runs"  # whole: this run alone was read
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
        from trajdebug.core.schema import score_to_dict

        emit_json(
            {
                "steps": [
                    {
                        "run_id": r.run_id,
                        **step_to_json(s, r),
                        "scores": [score_to_dict(x) for x in r.scores if x.step_id == s.step_id],
                    }
                    for r, s in picked
                ]
            }
        )
        return
    from trajdebug.core.escape import visible

    out = console(unwrapped_piped=True)
    short = shortener(r.run_id for r in runs)
    for i, (r, s) in enumerate(picked):
        if i:
            out.print()
        if len(runs) > 1:
            # Steps of the same name in several runs look alike: say whose each one is.
            out.print(f"run {visible(short(r.run_id))}  {visible(r.name)}  {r.outcome}", markup=False, style="bold")
        render_step(s, r, out)
        _print_scores(out, r, s.step_id)


def _print_scores(out: Any, run: Run, step_id: str | None) -> None:
    """A run's scores (``step_id`` None: all of them, each a step's naming its step) or one step's, after what
    `show` printed of it; nothing when there are none."""
    from trajdebug.cli._score import score_lines
    from trajdebug.core.escape import visible

    lines = score_lines(run, step_id)
    if lines:
        out.print("scores:", markup=False, style="bold")
        for line in lines:
            out.print(f"  {visible(line)}", markup=False)


def register(cli: click.Group) -> None:
    """Add ``show``."""
    cli.add_command(show_cmd)
