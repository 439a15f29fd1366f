"""``trajdebug label``, ``eval`` and ``fit``: root-cause labels on your own runs, and learning from them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import click

from trajdebug.cli._common import emit_json, json_option, refs_option, source_argument, store_path
from trajdebug.core.escape import visible


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


@click.command(name="label")
@source_argument
@click.option("--run", "run_id", metavar="ID", required=True, help="The failed run (a unique id prefix is enough).")
@click.option("--root", "root", metavar="STEP", required=True, help="Its root-cause step: an id, id prefix, the short id shown (#000007, name#000007) or unique name.")
@json_option
def label_cmd(source: str | None, run_id: str, root: str, as_json: bool) -> None:
    """Record which step caused a run's failure (stored in SOURCE.labels.jsonl beside SOURCE).

    Labelled runs are what `trajdebug eval` measures the analysis on and
    what `trajdebug fit` learns from.

    \b
    Example:
        trajdebug label runs.jsonl --run 4f2a --root lookup_customer
    """
    from trajdebug.labels import label, sidecar
    from trajdebug.sources.load import SourceError

    path = store_path(source)
    try:
        rid, sid = label(path, run_id, root)
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        emit_json({"source": path, "run_id": rid, "step_id": sid, "labels": str(sidecar(path))})
        return
    click.echo(visible(f"run {rid}: root {sid} (labels in {sidecar(path)})"))


@click.command(name="eval")
@source_argument
@click.option(
    "--model",
    "model",
    metavar="FILE|default|none",
    default="default",
    show_default=True,
    help="The ranking measured, as `trajdebug analyze --model` takes it (`default`: the shipped learned model, "
    "what `analyze` ranks by; a file from `trajdebug fit`; `none`: the hand ranking alone).",
)
@refs_option
@json_option
def eval_cmd(source: str | None, model: str, as_json: bool, refs: tuple[str, ...] = ()) -> None:
    """Measure the analysis on SOURCE's labelled runs: top-1, top-3 and (with a learned model) calibration.

    By default the ranking measured is the one `trajdebug analyze` shows (the shipped learned model), with the
    hand ranking's line beside it to compare; `--model none` measures the hand ranking alone.

    The runs are ranked as `trajdebug analyze` ranks them: compared with the passing runs of the same agent
    in SOURCE and in each --refs FILE.

    \b
    Example:
        trajdebug eval runs.jsonl --json
        trajdebug eval labelled.jsonl --refs passing.jsonl
    """
    from trajdebug.labels import evaluate

    path = store_path(source)
    learned = None if model == "none" else model
    ev = evaluate(path, learned, refs)
    # A learned model is measured beside the hand ranking: the hand ranking's line first, to compare with.
    hand = ev if learned is None or not ev.results else evaluate(path, None, refs)
    if as_json:
        emit_json(ev.to_dict(hand))
        return
    if not ev.results:
        click.echo(visible(f"{path}: no labelled run (label some with `trajdebug label`)"))
        return
    for how, e in [("hand ranking", hand)] + ([] if learned is None else [(f"model {learned}", ev)]):
        click.echo(f"{len(e.results)} labelled runs, {how}: top-1 {_pct(e.top(1))}, top-3 {_pct(e.top(3))}")
    if ev.calibration_error() is not None:
        click.echo(f"mean |confidence - right| of the best candidate: {ev.calibration_error():.3f}")
    if ev.fitted:
        click.echo(
            f"{ev.fitted} of these runs are those the model was fit on: its score on them says how well it "
            "learned them, not how it ranks runs it never saw"
        )
    ranks = {r.run_id: r.rank for r in hand.results}
    from trajdebug.core.shortids import shortener

    short = shortener(ev.source_ids)
    # Each rank named by its ranking (nu26 F12: "rank 11, model 9" did not say "rank" was the hand ranking's).
    for r in ev.results[:RANKS_SHOWN]:
        by_model = "" if learned is None else f", model {r.rank or '-'}"
        # (Ids and step names come from the data: control characters in them are shown as escapes.)
        root = visible(r.step_name or r.step_id)
        click.echo(f"  run {visible(short(r.run_id))}  root {root}  hand ranking {ranks.get(r.run_id) or '-'}{by_model}")
    if len(ev.results) > RANKS_SHOWN:
        click.echo(f"  and {len(ev.results) - RANKS_SHOWN} more (--json lists them)")


RANKS_SHOWN = 20
"""Labelled runs whose root's rank `eval` prints (the JSON lists all)."""


@click.command(name="fit")
@source_argument
@click.option("-o", "--output", "output", type=click.Path(dir_okay=False), required=True, help="The model file to write.")
@click.option("--prior", default="default", show_default=True, metavar="FILE|default", help="The model to start from.")
@json_option
def fit_cmd(source: str | None, output: str, prior: str, as_json: bool) -> None:
    """Fit a ranking model on SOURCE's labelled runs, starting from the shipped model (needs the `train` extra).

    Use it with `trajdebug analyze --model FILE`.

    \b
    Example:
        trajdebug fit runs.jsonl -o model.json && trajdebug analyze runs.jsonl --model model.json
    """
    import json

    from trajdebug.labels import fit
    from trajdebug.sources.load import SourceError

    path = store_path(source)
    try:
        model = fit(path, prior)
    except SourceError as exc:
        raise click.ClickException(str(exc)) from None
    except ImportError:
        raise click.ClickException("fitting needs scikit-learn: pip install 'trajdebug[train]'") from None
    Path(output).write_text(json.dumps(model.to_dict(), separators=(",", ":")) + "\n", encoding="utf-8")
    # The labelled runs it learned from, as `fit` counted them: the text and the JSON say the same number.
    fitted = model.meta.get("fitted_on") if isinstance(model.meta, Mapping) else None
    n = int(fitted.get("cases", 0)) if isinstance(fitted, Mapping) else 0
    if as_json:
        emit_json({"source": path, "model": output, "labelled": n, "trees": len(model.trees), "prior": prior})
        return
    from trajdebug.analysis.learned import load_model

    base = load_model(prior)
    new = len(model.trees) - (len(base.trees) if base is not None else 0)
    click.echo(f"{output}: {len(model.trees)} trees (prior {prior}, {new} new trees), fitted on {n} labelled run{'s' * (n != 1)}")
    if n < FEW_LABELS:
        # A handful of cases moves the trees a lot and the prior's calibration stays: the new model is sure of
        # runs like those, and an eval on them says how well it learned them, not how it will rank others.
        click.echo(
            f"  few labelled runs (under {FEW_LABELS}): its confidences are not yet to be trusted on other runs; "
            "label more, and eval it on runs it was not fitted on"
        )


FEW_LABELS = 20
"""Below this many labelled runs, `fit` says its model is not yet to be trusted on other runs."""


def register(cli: click.Group) -> None:
    """Add ``label``, ``eval`` and ``fit``."""
    cli.add_command(label_cmd)
    cli.add_command(eval_cmd)
    cli.add_command(fit_cmd)
