"""``trajdebug errors``: the lifecycle of every error of a run, as a chain table."""

from __future__ import annotations

import click

from trajdebug.cli._common import (
    console,
    emit_json,
    fail,
    fmt_option,
    json_option,
    latest_original,
    load_source,
    run_option,
    source_argument,
    warn,
)


@click.command(name="errors")
@source_argument
@run_option
@fmt_option
@json_option
@click.option(
    "--format",
    "out_format",
    type=click.Choice(["text", "markdown"]),
    default="text",
    show_default=True,
    help="Text for the terminal, or Markdown to paste into a ticket.",
)
@click.option(
    "--no-history", is_flag=True, help="Do not list the stage history of the errors in critical chains."
)
@click.option(
    "--critical", "critical_only", is_flag=True, help="Only the chains that end in the run's failure."
)
def errors_cmd(
    source: str | None,
    run_id: str | None,
    fmt: str | None,
    as_json: bool,
    out_format: str,
    no_history: bool,
    critical_only: bool,
) -> None:
    """Show each error's lifecycle: where it occurred, how it propagated, how it ended.

    One error per exception (not one per step it passed through), linked into
    chains (cause, retry, sub-agent, data flow); chains that end in the run's
    failure come first as Critical Failures, with the rules that scored them.
    SOURCE is a store, a trajdebug JSONL file or a foreign trace (default: the
    default store, newest run).

    \b
    Example:
        trajdebug errors runs.jsonl --run 3f2a --format markdown
    """
    from trajdebug.analysis import GraphError, analyze_errors
    from trajdebug.core.model import replace

    runs = load_source(source, run_id, fmt)
    if source is None and run_id is None:
        runs = latest_original(runs)
    reports = []
    for r in runs:
        try:
            rep = analyze_errors(r)
        except GraphError as exc:
            # The message already names the run; the other runs still get their report.
            warn(f"{source or 'store'}: skipped: {exc}")
            continue
        if critical_only:
            rep = replace(rep, chains=tuple(rep.critical_chains()))
        reports.append((r, rep))
    if not reports:
        raise fail(f"{source or 'store'}: no run could be analyzed")
    if as_json:
        emit_json({"runs": [rep.to_dict() for _, rep in reports]})
        return
    if out_format == "markdown":
        from trajdebug.report.errors import errors_markdown

        click.echo("\n".join(errors_markdown(rep, r, history=not no_history) for r, rep in reports), nl=False)
        return
    from trajdebug.core.shortids import shortener
    from trajdebug.report.errors import render_errors

    out = console(unwrapped_piped=False)  # a table laid out in 80 columns, each line ending in … if it must
    # As `show`: one run named by --run is shown whole, else each by its prefix unique among the source's ids.
    short = (lambda rid: rid) if run_id is not None else shortener(r.run_id for r in runs)
    for i, (r, rep) in enumerate(reports):
        if i:
            out.print()
        render_errors(rep, out, r, history=not no_history, shown_id=short(r.run_id))


def register(cli: click.Group) -> None:
    """Add ``errors``."""
    cli.add_command(errors_cmd)
