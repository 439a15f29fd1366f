"""``trajdebug lint``: instrumentation health from the recorded data (for CI)."""

from __future__ import annotations

import sys

import click

from trajdebug.cli._common import (
    emit_json,
    fmt_option,
    json_option,
    load_source,
    run_option,
    source_argument,
    store_path,
)


@click.command(name="lint")
@source_argument
@run_option
@fmt_option
@json_option
@click.option("--ignore", "ignore", multiple=True, metavar="CODE", help="Leave out findings with this code (repeatable).")
@click.option("--no-infer", is_flag=True, help="Skip the content-inference check (missing-dependency): faster.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when something was found.")
def lint_cmd(
    source: str | None,
    run_id: str | None,
    fmt: str | None,
    as_json: bool,
    ignore: tuple[str, ...],
    no_infer: bool,
    exit_zero: bool,
) -> None:
    """Check how an agent is instrumented, from its recorded runs.

    Finds exceptions swallowed without fallback(), broken error chains, steps
    and runs left open, steps with no dependency where content says data
    flowed, sub-agents that lost the trace context, steps that ran in threads
    outside the run, tool steps without a timeout, and steps that read run.state
    written outside every step; each with the step and a one-line fix.  Exits 1 when it found anything to fix (0 with
    --exit-zero), so a CI job fails on new instrumentation problems; a finding marked info (a dependency a
    framework's route cannot record: nothing to declare) never fails it.

    "Content says data flowed" (missing-dependency): a step that is not an
    input or agent step, recorded no dependency at all, and was given
    something, to which content inference finds a data edge from an earlier
    step of the same run at confidence 0.8 or more (the edges `show --infer`
    marks inferred; every producer it finds counts, not only the nearest).
    Nothing below 0.8 is reported (a short field handed on infers at about
    0.7), nor an edge only the analysis adds (a whole record handed on).  Once
    found for a step, the same step in the other runs checked is reported at
    any confidence.  An imported OTLP span can declare its dependencies (span
    links): a span with none, found so, is a finding to fix.

    On a terminal the text wraps to its width; piped (not a terminal), it is
    never wrapped or cut: one line per message and fix.

    \b
    Examples:
        trajdebug lint runs.db
        trajdebug lint runs.jsonl --json --ignore no-timeout
    """
    from trajdebug.lint import CODES, failing, group_findings, lint, summary_line

    unknown = [c for c in ignore if c not in CODES]
    if unknown:
        raise click.UsageError(f"unknown code(s) for --ignore: {', '.join(unknown)} (known: {', '.join(CODES)})")
    runs = load_source(source, run_id, fmt)
    findings = [f for f in lint(runs, infer=not no_infer) if f.code not in ignore]
    if as_json:
        emit_json(
            {
                "source": store_path(source),
                "runs": len(runs),
                "findings": [f.to_dict() for f in findings],
                "groups": [g.to_dict() for g in group_findings(findings)],
                "summary": summary_line(findings, len(runs)),
            }
        )
    else:
        from rich.markup import escape

        from trajdebug.cli._common import console

        # Piped (CI logs, grep), each finding's lines stay whole, as analyze's and show's do.
        out = console(unwrapped_piped=True)
        from trajdebug.core.shortids import shortener

        short = shortener(r.run_id for r in runs)
        # One entry per problem (code, step, fix), with the runs it shows in: 210 runs with the
        # same missing timeout are one line, not 210.
        for g in group_findings(findings):
            first = g.findings[0]
            where = f"step {g.step_name}" if g.step_name else "run"
            count = f"{g.runs} run{'s' * (g.runs != 1)}"
            example = f" (e.g. run {short(first.run_id)})" if g.runs > 1 else f" (run {short(first.run_id)})"
            info = "" if g.severity == "warning" else " (info: nothing to fix)"
            out.print(f"[bold]{escape(g.code)}[/bold]  {escape(where)}  {count}{escape(example)}{info}")
            out.print(f"    {escape(first.message)}")
            out.print(f"    fix: {escape(g.fix)}")
        out.print(escape(summary_line(findings, len(runs))))
    if failing(findings) and not exit_zero:
        sys.exit(1)


def register(cli: click.Group) -> None:
    """Add ``lint`` to the command group."""
    cli.add_command(lint_cmd)
