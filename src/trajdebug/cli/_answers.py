"""``trajdebug answers``: the answers stored with runs (who judged which step, when, why)."""

from __future__ import annotations

import click

from trajdebug.cli._common import console, emit_json, json_option, run_option, source_argument, store_path


class _ListByDefault(click.Group):
    """A group whose first argument, when it is no subcommand, is the SOURCE of ``list``:
    `trajdebug answers runs.db` lists, as a new user tries first."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and not args[0].startswith("-") and args[0] not in self.commands:
            args = ["list", *args]
        return super().parse_args(ctx, args)


@click.group(name="answers", cls=_ListByDefault)
def answers_cmd() -> None:
    """List the answers stored with runs, or import a file of them (the HTML report's download).

    An answer says whether one step's output was right (what the run needed), who
    said so (person, check:NAME, model:M, reference:RUN, oracle:MOD:FN), when
    and why.  `trajdebug analyze --ask`, the report's "find the cause" panel and
    `trajdebug serve` give them; a store or a trajdebug JSONL file keeps them
    with the run, a foreign trace in SOURCE.answers.jsonl beside it.

    A bare SOURCE means `list SOURCE`.

    \b
    Examples:
        trajdebug answers trajdebug.db
        trajdebug answers list trajdebug.db --run 4f2a
        trajdebug answers import trajdebug.db answers-4f2a.jsonl
        trajdebug answers forget trajdebug.db --run 4f2a --step 9c1e
    """


@answers_cmd.command(name="list")
@source_argument
@run_option
@json_option
def list_cmd(source: str | None, run_id: str | None, as_json: bool) -> None:
    """List the answers stored with the runs of SOURCE (or one run)."""
    from trajdebug.core.schema import answer_to_dict
    from trajdebug.sources.load import SourceError, load_runs

    path = store_path(source)
    try:
        loaded = load_runs(path, run_id=run_id)
        runs = [r for r in loaded if r.answers]
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json({"runs": [{"run_id": r.run_id, "answers": [answer_to_dict(a) for a in r.answers]} for r in runs]})
        return
    from trajdebug.core.escape import visible
    from trajdebug.core.shortids import shortener
    from trajdebug.report.text import render_answers

    # As `show`: one run named by --run is shown whole, else each by its prefix unique among the source's ids.
    short = (lambda rid: rid) if run_id is not None else shortener(r.run_id for r in loaded)
    out = console()
    if not runs:
        out.print("no answers stored", markup=False)
    for r in runs:
        out.print(f"run {visible(short(r.run_id))}  {visible(r.name)}", markup=False, style="bold")
        render_answers(r, out)


@answers_cmd.command(name="import")
@click.argument("source", type=click.Path(dir_okay=True))
@click.argument("answers_file", metavar="FILE", type=click.Path(dir_okay=False, exists=True))
@run_option
@json_option
def import_cmd(source: str, answers_file: str, run_id: str | None, as_json: bool) -> None:
    """Store the answer records of FILE (JSON lines, as the HTML report downloads them) with the runs of SOURCE.

    Each record names its run; --run stores them all with this run instead.
    """
    from trajdebug.answers import import_answers
    from trajdebug.sources.load import SourceError

    try:
        stored = import_answers(source, answers_file, run_id=run_id)
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json({"source": source, "stored": len(stored)})
        return
    click.echo(f"{len(stored)} answer(s) stored with the runs of {source}")


@answers_cmd.command(name="forget")
@source_argument
@click.option("--run", "run_id", required=True, metavar="ID", help="The run (a unique prefix of its id).")
@click.option("--step", "steps", multiple=True, metavar="ID", help="Only the answers about this step: its id, a prefix, or the short id shown (#2a70cc); repeatable.")
@json_option
def forget_cmd(source: str | None, run_id: str, steps: tuple[str, ...], as_json: bool) -> None:
    """Take back answers stored with a run (all of them, or those about --step), and the label they proved.

    A later --ask asks those steps again.  The records stay in the file (it is
    append-only); a withdrawing record makes every reader leave them out.
    """
    from trajdebug.labels import forget
    from trajdebug.sources.load import SourceError

    path = store_path(source)
    try:
        gone, unlabelled = forget(path, run_id, steps)
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json({"source": str(path), "withdrawn": len(gone), "unlabelled": unlabelled})
        return
    extra = "; the label they proved is taken back" if unlabelled else ""
    click.echo(f"{len(gone)} answer(s) taken back{extra}")


def register(cli: click.Group) -> None:
    """Add ``answers``."""
    cli.add_command(answers_cmd)
