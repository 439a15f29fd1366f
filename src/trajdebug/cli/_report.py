"""``trajdebug report``: one run as a self-contained HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from trajdebug.cli._common import (
    Progress,
    emit_json,
    fail,
    fmt_option,
    is_derived,
    json_option,
    latest_original,
    load_source,
    refs_option,
    run_option,
    source_argument,
    store_path,
)
from trajdebug.cli._judge import add_judge_options, report_usage
from trajdebug.cli._judge import judge_config as _judge_config
from trajdebug.cli._replay import add_verify_option, load_callable
from trajdebug.core.model import Run


if TYPE_CHECKING:
    from trajdebug.analysis import Analysis


DEFAULT_OUTPUT = "trajdebug-report.html"


@click.command(name="report")
@source_argument
@run_option
@fmt_option
@click.option(
    "-o",
    "--output",
    metavar="PATH",
    default=DEFAULT_OUTPUT,
    show_default=True,
    help="The HTML file to write.",
)
@refs_option
@add_verify_option
@add_judge_options
@json_option
def report_cmd(
    source: str | None,
    run_id: str | None,
    fmt: str | None,
    output: str,
    verify_entry: str | None,
    fixer: str | None,
    verify_samples: int,
    use_judge: bool,
    judge_config: str | None,
    as_json: bool,
    refs: tuple[str, ...] = (),
) -> None:
    """Write one run as a self-contained HTML report.

    The report has the waterfall of the run (steps nested by parent, errors
    and their propagation), the dependency graph with the path from each
    root cause to the failure, the ranked root causes with their evidence,
    the error chains and a step inspector.  It needs no network: open it
    offline or attach it to a ticket.  SOURCE is a store, a trajdebug JSONL
    file or a foreign trace (default: the default store); without --run, its
    newest failed run (the run there is a cause to find, as `analyze` looks
    at failures), else its newest run; replays and reference runs are passed
    over.  The output line says which run it wrote.  The root causes are
    ranked as `trajdebug analyze` ranks them: compared with the passing runs
    of the same agent in SOURCE and in each --refs FILE.

    \b
    Example:
        trajdebug report trajdebug.db --run 3f2a -o failure.html
        trajdebug report trace.json --from otlp
        trajdebug report failed.jsonl --refs passing.jsonl
    """
    from trajdebug.replay.diffview import parting
    from trajdebug.report.html import write_report

    judge = _judge_config(use_judge, judge_config)
    pool = load_source(source, None, fmt)
    how = ""
    if run_id is not None:
        run = load_source(source, run_id, fmt)[0]
    else:
        run, how = default_run(pool)
    options = {
        "verify": load_callable(verify_entry) if verify_entry else None,
        "fixer": load_callable(fixer, "fixer") if fixer else None,
        "samples": verify_samples,
        "judge": judge,
        "refs": refs,
    }
    result = _analyzed(source, run, pool, options, quiet=as_json)
    report_usage(result.judgments)
    analysis = result.analyses[0]
    for problem in analysis.problems:
        click.echo(f"warning: {source or 'store'}: {problem}", err=True)
    first = result.verifications[0] if result.verifications else None
    verification = first.to_dict() if first is not None else None
    twin = result.twins[0] if result.twins else None
    # The passing run of the same input `analyze`'s diff hint names, and where the two runs part (as `diff` says).
    same = parting(twin, run) if twin is not None else None
    try:
        path = write_report(output, analysis, verification=verification, source=source, same_input=same)
    except OSError as exc:
        raise click.ClickException(f"{output}: cannot write the report ({exc.strerror or exc})") from None
    _say_written(path, run, analysis, how, as_json)

def _say_written(path: Path, run: Run, analysis: Analysis, how: str, as_json: bool) -> None:
    """The command's last line: where the report went and which run it shows, or the same with the verdict as JSON."""
    size = path.stat().st_size
    if as_json:
        # The verdict and the ranked candidates as `analyze --json` gives them: a CI job that writes the report
        # reads what it found from the same command (nu24, F8).
        found = analysis.to_dict()
        emit_json(
            {
                "report": str(path),
                "bytes": size,
                "run_id": run.run_id,
                "outcome": run.outcome,
                "steps": len(run.steps),
                **{k: found[k] for k in REPORT_JSON_KEYS if k in found},
            }
        )
        return
    from trajdebug.report.analysis import shown_id

    click.echo(
        f"wrote {path} ({size / 1024:.0f} KiB): run {shown_id(analysis, run.run_id)}, {run.outcome}, "
        f"{len(run.steps)} steps{how}; open it in a browser"
    )


REPORT_JSON_KEYS = ("verdict", "ranker_verdict", "ranker_confidence", "order", "root_causes", "references", "same_input")
"""The members of the analysis's JSON (`Analysis.to_dict`, what ``analyze --json`` prints per run) that
``report --json`` repeats beside the report's path."""


def _analyzed(source: str | None, run: Run, pool: list[Run], options: dict[str, Any], *, quiet: bool) -> Any:
    """`trajdebug.analyze_source` of the run (``options``: its keyword arguments) behind a progress bar; a --refs
    file that cannot be read is a one-line error."""
    from trajdebug.api import analyze_source
    from trajdebug.sources.load import SourceError

    try:
        with Progress(f"analyzing {run.name}", enabled=not quiet):
            return analyze_source(store_path(source), run.run_id, runs=pool, **options)
    except SourceError as exc:
        raise fail(str(exc)) from None


def default_run(pool: list[Run]) -> tuple[Run, str]:
    """The run `report` writes without --run, and how the output line names the choice: the newest
    failed original run (what a report is for: finding a failure's cause), else the newest original run."""
    originals = [r for r in pool if not is_derived(r)]
    failed = [r for r in originals if r.outcome == "failure"]
    if failed:
        note = "the newest failed run" if len(originals) > 1 else ""
        return latest_original(failed)[0], (f" ({note}; --run picks another)" if note else "")
    note = "the newest run, none failed" if len(originals) > 1 else ""
    return latest_original(pool)[0], (f" ({note}; --run picks another)" if note else "")


def register(cli: click.Group) -> None:
    """Add ``report``."""
    cli.add_command(report_cmd)
