"""``trajdebug score``: put a score (a number, a category, a boolean) on a run or a step."""

from __future__ import annotations

from collections.abc import Iterable

import click

from trajdebug.cli._common import emit_json, fail, json_option, store_path
from trajdebug.core.model import Run, Score
from trajdebug.core.schema import numeric
from trajdebug.scores import ScoreFilter, parse_score_filter


@click.command(name="score")
@click.argument("items", nargs=-1, metavar="[SOURCE] NAME=VALUE...")
@click.option("--run", "run_id", metavar="ID", required=True, help="The run (a unique id prefix is enough).")
@click.option(
    "--step",
    "step",
    metavar="STEP",
    help="Score this step, not the run: a step id, its short id as listings print it (#000007) or a unique name.",
)
@click.option("--comment", metavar="TEXT", help="Why, in words (redacted before it is written, like every free text).")
@click.option("--by", "by", metavar="WHO", help="Who gives it: a person, a check, a model (default: not said).")
@click.option(
    "--source",
    "kind",
    type=click.Choice(["human", "code", "llm"]),
    default="human",
    show_default=True,
    help="Where the score comes from: a person, a program, a model.",
)
@json_option
def score_cmd(
    items: tuple[str, ...], run_id: str, step: str | None, comment: str | None, by: str | None, kind: str, as_json: bool
) -> None:
    """Put a score on a run or a step: NAME=VALUE, a number, a category or true/false.

    Many scores per run and step, under several names: each is kept, none
    replaces another.  Appended to SOURCE (a store or a trajdebug JSONL file;
    beside a foreign trace, in SOURCE.answers.jsonl; default: $TRAJDEBUG_STORE
    or ./trajdebug.db).  `runs` lists them (--score filters on them), `show`,
    the report and `serve` show them, `export` carries them.  The analysis does
    not read them (docs/recording.md, "Scores").

    \b
    Examples:
        trajdebug score support.db --run 4f2a helpfulness=0.3 --comment "vague" --by dan
        trajdebug score support.db --run 4f2a --step parse_amount correct=false --source code --by check:amounts
        trajdebug score --run 4f2a tone=rude
        trajdebug runs support.db --score "helpfulness<0.5"
    """
    from trajdebug.core.schema import make_score, parse_value, score_text
    from trajdebug.scores import save_score
    from trajdebug.sources.load import SourceError

    source, pairs = _split(items)
    path = store_path(source)
    stored = []
    try:
        for name, text in pairs:
            checked = make_score(name, parse_value(text), source=kind, by=by, comment=comment)
            stored.append(save_score(path, run_id, checked, step=step))
    except (SourceError, ValueError) as exc:
        raise fail(str(exc)) from None
    if as_json:
        from trajdebug.core.schema import score_to_dict

        emit_json({"source": path, "run_id_given": run_id, "scores": [score_to_dict(s) for s in stored]})
        return
    from trajdebug.cli._common import console

    out = console()
    for s in stored:
        on = f"step {s.step_id}" if s.step_id else "the run"
        out.print(f"scored {on} of run {run_id}: {s.name}={score_text(s.value)} ({s.source})", markup=False)


def _split(items: tuple[str, ...]) -> tuple[str | None, list[tuple[str, str]]]:
    """SOURCE (the first item, when it holds no ``=``) and the NAME=VALUE pairs.

    Raises:
        click.UsageError: no NAME=VALUE, or an item that is neither.
    """
    source = items[0] if items and "=" not in items[0] else None
    rest = items[1:] if source is not None else items
    if not rest:
        raise click.UsageError("give a score as NAME=VALUE (e.g. helpfulness=0.3, tone=rude, correct=false)")
    pairs = []
    for item in rest:
        name, eq, value = item.partition("=")
        if not eq:
            raise click.UsageError(f"{item!r} is not NAME=VALUE (e.g. helpfulness=0.3); SOURCE comes first")
        pairs.append((name, value))
    return source, pairs


def register(cli: click.Group) -> None:
    """Add ``score`` to the command group."""
    cli.add_command(score_cmd)


# -- ways out: what `runs` and `show` print of the scores -------------------------------------------

def parse_filter(text: str) -> ScoreFilter:
    """``NAME``, or ``NAME`` then ``<``, ``<=``, ``>``, ``>=``, ``=`` or ``!=`` and a value (``helpfulness<0.5``):
    `trajdebug.scores.parse_score_filter`, its error as the option's.

    Raises:
        click.BadParameter: no name, or a comparison of order with something that is not a number.
    """
    try:
        return parse_score_filter(text)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--score") from None


def score_means(runs_scores: Iterable[Iterable[Score]]) -> dict[str, dict[str, float | int]]:
    """Each numeric score's mean over the runs' scores (booleans and categories left out): name -> mean, n."""
    sums: dict[str, list[float]] = {}
    for scores in runs_scores:
        for s in scores:
            if numeric(s.value):
                sums.setdefault(s.name, []).append(float(s.value))
    return {name: {"mean": sum(v) / len(v), "n": len(v)} for name, v in sorted(sums.items())}


def score_lines(run: Run, step_id: str | None = None) -> list[str]:
    """The scores of a run (``step_id`` None: every one, each a step's naming its step) or of one step, one line
    each: name = value, source, by, comment."""
    from trajdebug.core.schema import score_text

    names = {s.step_id: s.name for s in run.steps}
    out = []
    for s in run.scores:
        if step_id is not None and s.step_id != step_id:
            continue
        on = "" if step_id is not None else (f" on {names.get(s.step_id, '?')}#{s.step_id[-6:]}" if s.step_id else " on the run")
        who = f" by {s.by}" if s.by else ""
        why = f": {s.comment}" if s.comment else ""
        out.append(f"{s.name} = {score_text(s.value)}{on} ({s.source}{who}){why}")
    return out
