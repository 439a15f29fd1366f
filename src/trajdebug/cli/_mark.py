"""``trajdebug mark``: a verdict on a recorded run, after the fact."""

from __future__ import annotations

import click

from trajdebug.cli._common import emit_json, json_option, source_argument, store_path


@click.command(name="mark")
@source_argument
@click.option("--run", "run_id", metavar="ID", required=True, help="The run (a unique id prefix is enough).")
@click.option("--failed", "reason", metavar="REASON", help="Mark the run failed, for this reason.")
@click.option("--success", is_flag=True, help="Mark the run successful (undoes a failure mark).")
@json_option
def mark_cmd(source: str | None, run_id: str, reason: str | None, success: bool, as_json: bool) -> None:
    """Mark a run failed (or successful) after the fact, so analyze treats it so.

    A run that raised nothing but gave a wrong answer is recorded as a
    success.  The verdict is appended to SOURCE (a store or a trajdebug JSONL
    file); the recorded outcome is kept in the run's metadata ("marked").

    \b
    Examples:
        trajdebug mark --run 4f2a --failed "quoted the price in USD, not EUR"
        trajdebug analyze --run 4f2a
        trajdebug mark runs.jsonl --run 4f2a --success
    """
    from trajdebug.core.jsonl import MARK_KEY
    from trajdebug.marks import mark
    from trajdebug.sources.load import SourceError

    if (reason is None) == (not success):
        raise click.UsageError("pass exactly one of --failed REASON or --success")
    path = store_path(source)
    try:
        run = mark(path, run_id, failed=reason, success=success)
    except (SourceError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    marked = run.metadata.get(MARK_KEY) or {}
    was = marked.get("recorded_outcome")
    if as_json:
        emit_json(
            {
                "source": path,
                "run_id": run.run_id,
                "outcome": run.outcome,
                "failure_reason": run.failure_reason,
                "recorded_outcome": was,
                "recorded_failure_reason": marked.get("recorded_failure_reason"),
            }
        )
        return
    from rich.markup import escape

    from trajdebug.cli._common import console

    why = f": {escape(run.failure_reason)}" if run.failure_reason else ""
    console().print(f"run {escape(run.run_id)} marked {run.outcome}{why} (recorded as {was})")


def register(cli: click.Group) -> None:
    """Add ``mark`` to the command group."""
    cli.add_command(mark_cmd)
