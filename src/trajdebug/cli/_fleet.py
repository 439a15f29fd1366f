"""``trajdebug fleet``, ``compare`` and ``watch``: failures across many runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from trajdebug.cli._common import console, emit_json, json_option


def _fail(exc: Exception) -> click.ClickException:
    return click.ClickException(str(exc))


@click.command(name="fleet")
@click.argument("sources", nargs=-1, required=True, type=click.Path(dir_okay=True))
@click.option("--workers", type=click.IntRange(min=1), help="Processes (default: the usable cores).")
@click.option("--top", type=click.IntRange(min=1), default=20, show_default=True, help="Groups shown.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "markdown"]),
    default="text",
    show_default=True,
    help="markdown: one ticket-ready alert per group.",
)
@click.option(
    "--plots", metavar="DIR", help="Write timeline.png and groups.png (failures over time, group sizes) here."
)
@click.option(
    "--engine",
    type=click.Choice(["local", "dask"]),
    default="local",
    show_default=True,
    help="dask: run on a Dask cluster (SOURCE must be one Parquet dataset).",
)
@click.option(
    "--address",
    "--scheduler",
    "address",
    metavar="URL",
    help="The Dask scheduler (tcp://host:8786); default: a local cluster.",
)
@json_option
def fleet_cmd(
    sources: tuple[str, ...],
    workers: int | None,
    top: int,
    fmt: str,
    plots: str | None,
    engine: str,
    address: str | None,
    as_json: bool,
) -> None:
    """Group the failed runs of SOURCES by root cause, and rank what failing runs have that passing runs don't.

    SOURCES are stores, JSONL files, foreign traces, folders of them, or a
    Parquet dataset (`trajdebug export --to parquet`).  Every failed run is
    analyzed (in parallel) and its root-cause signature computed: groups have
    a stable id, a title, counts, first/last seen, severity, examples, and
    the share verified by replay.  The JSON is described in docs/fleet.md.

    \b
    Examples:
        trajdebug fleet trajdebug.db
        trajdebug fleet runs/ --format markdown > alerts.md
        trajdebug fleet dataset/ --engine dask --address tcp://10.0.0.5:8786 --json
    """
    from trajdebug.cli._common import Progress
    from trajdebug.sources.load import SourceError

    try:
        with Progress("grouping failures", enabled=not as_json) as bar:
            report = _fleet(sources, engine, address, workers, bar)
    except (SourceError, ValueError, OSError) as exc:
        raise _fail(exc) from None
    if plots:
        from trajdebug.fleet.plots import plot_group_sizes, plot_timeline

        groups = list(report.groups.groups.values())
        written = [
            plot_timeline(groups, Path(plots) / "timeline.png"),
            plot_group_sizes(groups, Path(plots) / "groups.png"),
        ]
        click.echo("wrote " + ", ".join(map(str, written)), err=True)
    if as_json:
        emit_json(report.to_dict())
    elif fmt == "markdown":
        from trajdebug.core.escape import visible
        from trajdebug.fleet.render import fleet_markdown

        click.echo(visible(fleet_markdown(report, top=top)), nl=False)
    else:
        from trajdebug.fleet.render import render_fleet

        render_fleet(report, console(), top=top)


def _fleet(sources: tuple[str, ...], engine: str, address: str | None, workers: int | None, bar: Any) -> Any:
    if engine == "dask":
        from trajdebug.fleet.distributed import run_fleet_dask

        if len(sources) != 1:
            raise click.ClickException("--engine dask takes one Parquet dataset")
        return run_fleet_dask(sources[0], address=address, workers=workers or 2, progress=bar.update)
    from trajdebug.fleet.engine import run_fleet

    return run_fleet(sources, workers=workers, progress=bar.update)


@click.command(name="compare")
@click.argument("set_a", type=click.Path(exists=True, dir_okay=True))
@click.argument("set_b", required=False, type=click.Path(exists=True, dir_okay=True))
@click.option(
    "--by", metavar="KEY", help="Split SET_A by this metadata key (e.g. version) instead of giving SET_B."
)
@click.option("--a", "value_a", metavar="VALUE", help="With --by: the value of set A.")
@click.option("--b", "value_b", metavar="VALUE", help="With --by: the value of set B.")
@click.option("--workers", type=click.IntRange(min=1), help="Processes (default: the usable cores).")
@click.option("--plot", metavar="PATH", help="Write the comparison plot (.png or .svg).")
@click.option(
    "--metric-file", metavar="PATH", help="Write the CI metric (critical failures per run) as JSON."
)
@click.option(
    "--fail-on-regression", is_flag=True, help="Exit 1 when B's critical-failure rate is significantly worse."
)
@click.option(
    "--max-critical-rate",
    type=float,
    metavar="RATE",
    help="Exit 1 when B's critical failures per run exceed RATE.",
)
@json_option
def compare_cmd(
    set_a: str,
    set_b: str | None,
    by: str | None,
    value_a: str | None,
    value_b: str | None,
    workers: int | None,
    plot: str | None,
    metric_file: str | None,
    fail_on_regression: bool,
    max_critical_rate: float | None,
    as_json: bool,
) -> None:
    """Compare two run sets: failure rates with 95 % intervals, new/gone/grown groups, changed steps.

    SET_A and SET_B are two sources, or one source split by a metadata key
    (--by version --a 1.0 --b 1.1; with exactly two values in the runs,
    --a and --b may be left out).  The JSON's "metric" is the CI gate:
    critical failures per run in A and B and whether B regressed.

    \b
    Examples:
        trajdebug compare baseline.db candidate.db --fail-on-regression
        trajdebug compare trajdebug.db --by version --a 1.0 --b 1.1 --json
    """
    from trajdebug.fleet.compare import compare
    from trajdebug.sources.load import SourceError

    if by is not None and (value_a is None or value_b is None):
        value_a, value_b = _two_values(set_a, by, value_a, value_b)
    from trajdebug.cli._common import Progress

    try:
        with Progress("comparing", enabled=not as_json) as bar:
            cmp = compare(
                [set_a], [set_b] if set_b else [], by=by, a=value_a, b=value_b, workers=workers, progress=bar.update
            )
    except (SourceError, ValueError) as exc:
        raise _fail(exc) from None
    metric = cmp.metric()
    if metric_file:
        import json

        Path(metric_file).write_text(json.dumps(metric, indent=1) + "\n", encoding="utf-8")
    if plot:
        from trajdebug.fleet.plots import plot_comparison

        click.echo(f"wrote {plot_comparison(cmp, plot)}", err=True)
    if as_json:
        emit_json(cmp.to_dict())
    else:
        from trajdebug.fleet.render import render_compare

        render_compare(cmp, console())
    if fail_on_regression and metric["regressed"]:
        raise SystemExit(1)
    if max_critical_rate is not None and metric["b"] > max_critical_rate:
        raise SystemExit(1)


def _two_values(source: str, by: str, a: str | None, b: str | None) -> tuple[str, str]:
    """The values of ``by`` in a source, when it has exactly two (sorted): the default --a and --b."""
    from trajdebug.sources.load import SourceError, read_source
    from trajdebug.store import Store, is_store

    values: set[str] = set()
    try:
        if is_store(source):
            with Store(source) as st:
                for rid in st.run_ids():
                    v = st.load_run(rid).metadata.get(by)
                    if v is not None:
                        values.add(str(v))
                    if len(values) > 2:
                        break
        else:
            values = {str(r.metadata[by]) for r in read_source(source).runs if r.metadata.get(by) is not None}
    except SourceError as exc:
        raise _fail(exc) from None
    if a is not None:
        values.discard(a)
    if b is not None:
        values.discard(b)
    missing = 2 - (a is not None) - (b is not None)
    if len(values) != missing:
        raise click.ClickException(
            f"{source}: give --a and --b (values of {by!r} found: {', '.join(sorted(values)) or 'none'})"
        )
    rest = sorted(values)
    return (a if a is not None else rest.pop(0)), (b if b is not None else rest.pop(0))


@click.command(name="watch")
@click.argument("source", type=click.Path(exists=True, dir_okay=True))
@click.option(
    "--state",
    metavar="PATH",
    help="The state file (default: SOURCE.watch.json, or .trajdebug-watch.json in a folder).",
)
@click.option(
    "--to",
    "targets",
    multiple=True,
    metavar="TARGET",
    help="Where alerts go: '-' (stdout, JSON lines; the default), a file (JSON lines appended), or an http(s) webhook URL. Repeatable.",
)
@click.option(
    "--threshold",
    "thresholds",
    multiple=True,
    type=click.IntRange(min=1),
    metavar="N",
    help="Alert again when a group reaches N runs (default 10, 100, 1000). Repeatable.",
)
@click.option("--interval", type=float, default=2.0, show_default=True, help="Seconds between polls.")
@click.option("--once", is_flag=True, help="Poll once and exit.")
@click.option(
    "--idle-exit", type=float, metavar="SECONDS", help="Exit after this long with no new failed run."
)
@click.option(
    "--alert-existing",
    is_flag=True,
    help="On a first start, also alert on the groups of the failed runs already in SOURCE "
    "(by default they are the baseline: counted, not announced).",
)
def watch_cmd(
    source: str,
    state: str | None,
    targets: tuple[str, ...],
    thresholds: tuple[int, ...],
    interval: float,
    once: bool,
    idle_exit: float | None,
    alert_existing: bool,
) -> None:
    """Follow a store or a folder: analyze each new failed run once, alert once per new group.

    An alert is raised when a failure group first appears and when it
    crosses a threshold; it goes to every --to target.  The state file
    remembers the runs analyzed and the alerts delivered, so a restarted
    watcher does not alert twice; an alert a target refused is retried.

    \b
    Examples:
        trajdebug watch trajdebug.db --to alerts.jsonl --to https://hooks.example.com/trajdebug
        trajdebug watch runs/ --once --to -
    """
    from trajdebug.fleet.delivery import parse_target
    from trajdebug.fleet.watch import DEFAULT_THRESHOLDS, Watcher

    src = Path(source)
    state_path = (
        Path(state)
        if state
        else (src / ".trajdebug-watch.json" if src.is_dir() else src.with_name(src.name + ".watch.json"))
    )
    try:
        deliveries = [parse_target(t) for t in (targets or ("-",))]
        w = Watcher(
            src,
            state=state_path,
            deliveries=deliveries,
            thresholds=thresholds or DEFAULT_THRESHOLDS,
            alert_existing=alert_existing,
        )
    except (ValueError, OSError) as exc:
        raise _fail(exc) from None
    try:
        if not w.state.path.exists():
            first = w.poll()
            for p in first.problems:
                click.echo(f"warning: {p}", err=True)
            if w.baseline:
                groups = len({f.group_id for f in first.analyzed})
                click.echo(
                    f"baseline: {w.baseline} failed run{'s' * (w.baseline != 1)} already in {source} "
                    f"({groups} group{'s' * (groups != 1)}) counted without an alert (--alert-existing alerts on them)",
                    err=True,
                )
            if once:
                return
        w.run(interval=interval, polls=1 if once else None, idle_exit=idle_exit)
    except KeyboardInterrupt:
        w.state.save()


def register(cli: click.Group) -> None:
    """Add ``fleet``, ``compare`` and ``watch``."""
    cli.add_command(fleet_cmd)
    cli.add_command(compare_cmd)
    cli.add_command(watch_cmd)


__all__ = ["compare_cmd", "fleet_cmd", "register", "watch_cmd"]
