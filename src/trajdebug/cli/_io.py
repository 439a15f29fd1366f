"""``trajdebug import`` and ``trajdebug export``: foreign traces in, OTLP out."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from trajdebug.cli._common import (
    Progress,
    emit_json,
    fail,
    fmt_option,
    json_option,
    load_source,
    run_option,
    source_argument,
    warn,
)


if TYPE_CHECKING:
    from trajdebug.core.model import Run
    from trajdebug.labels import Carried


_STORE_SUFFIXES = (".db", ".sqlite", ".sqlite3")


@click.command(name="import")
@click.argument("source", type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option(
    "--from",
    "fmt",
    metavar="FORMAT",
    help="Format of SOURCE: otlp, openai, transcript, trajdebug, store, or a plugin's (auto-detected by default).",
)
@click.option(
    "-o",
    "--output",
    metavar="PATH",
    help="Write to this trajdebug JSONL file, or into this store if it ends in .db/.sqlite (default: the default store).",
)
@json_option
def import_cmd(source: Path, fmt: str | None, output: str | None, as_json: bool) -> None:
    """Import a foreign trace into trajdebug runs.

    SOURCE is an OTLP/JSON file (or a directory of them), an OpenAI-style
    message log, a multi-agent transcript, or trajdebug's own JSONL or store
    (to copy runs between files and stores).  Malformed records are reported
    as warnings naming the file and record; the valid ones are imported.
    Importing into a store replaces an earlier copy of each run, so importing
    the same file twice does not duplicate it.  Secrets are redacted on the way
    in, as when recording.

    \b
    Examples:
        trajdebug import spans.json --from otlp -o run.jsonl
        trajdebug import tau_dataset_failed.json        # into ./trajdebug.db
    """
    from trajdebug.sources.formats import sniff

    # Any source works, trajdebug's own JSONL and stores included (to move runs
    # between files and stores).
    from trajdebug.store import is_store

    fmt_used = fmt or sniff(source)
    if output is None:
        from trajdebug.store import default_store_path

        output = str(default_store_path())
    runs, problems, streamed = _read_runs(source, fmt_used, as_json)
    fmt_used = fmt_used or ("store" if is_store(source) else "trajdebug")
    imported: list[dict[str, Any]] = []  # what the summary says of each run (not the run: it may be large)
    roots: dict[str, str] = {}  # the labelled runs written, with their labelled root
    outcome = _write_runs(_noting_labels(runs, source, roots), output, streamed, imported, as_json)
    # A JSONL file is written anew, a store is merged into: the destination's labels file follows suit.
    carried = _carry_labels(source, output, roots, anew=not output.endswith(_STORE_SUFFIXES))
    if streamed:
        # Streamed (OTLP): problems may quote a value of the file; redacted like the runs.
        from trajdebug.core.jsonl import ReadResult, redacted

        problems = redacted(ReadResult([], problems)).problems
        for problem in problems:
            warn(str(problem))
    if as_json:
        emit_json(
            {
                "source": str(source),
                "format": fmt_used,
                "output": output,
                "runs": imported,
                "problems": [str(p) for p in problems],
                "added": outcome["added"],
                "replaced": outcome["replaced"],
                "unchanged": outcome["unchanged"],
                "labels_carried": carried.carried,
                "labels_kept": carried.kept,
            }
        )
        return
    click.echo(_summary(source, fmt_used, output, imported, outcome, len(problems)))
    if carried.carried or carried.kept:
        click.echo(_carried_line(carried, source, output))


def _carry_labels(source: Path | str, output: str, roots: dict[str, str], *, anew: bool) -> Carried:
    """`trajdebug.labels.carry`, its problems warned of: a labels file that cannot be read or written costs
    its labels, never the runs the command wrote."""
    from trajdebug.core.escape import visible
    from trajdebug.labels import Carried, carry

    try:
        carried = carry(source, output, roots, anew=anew)
    except (OSError, ValueError) as exc:
        warn(visible(f"root-cause labels not carried to {output}: {exc}"))
        return Carried()
    for problem in carried.problems:
        warn(visible(problem))
    return carried


def _carried_line(carried: Carried, source: Path | str, output: str) -> str:
    """What became of the source's labels: carried, and those the destination had newer and kept."""
    from trajdebug.core.escape import visible
    from trajdebug.labels import sidecar

    n, k = carried.carried, carried.kept
    return visible(
        f"carried {n} root-cause label{'s' * (n != 1)} of {source} to {sidecar(output)}"
        + (f"; {k} label{'s' * (k != 1)} the destination already had, newer, kept" if k else "")
    )


def _noting_labels(runs: Iterable[Run], source: Path, roots: dict[str, str]) -> Iterable[Run]:
    """The runs, noting in ``roots`` each labelled run whose labelled step it still holds (as a stream is
    read; a list, which the progress bar counts, at once); `trajdebug.labels.carry` copies those labels
    beside the destination."""
    from trajdebug.labels import labels

    wanted = labels(source)

    def note(run: Run) -> Run:
        sid = wanted.get(run.run_id)
        if sid is not None and any(s.step_id == sid for s in run.steps):
            roots[run.run_id] = sid
        return run

    if not wanted:
        return runs
    return [note(r) for r in runs] if isinstance(runs, list) else map(note, runs)


def _read_runs(source: Path, fmt_used: str | None, as_json: bool) -> tuple[Iterable[Run], list[Any], bool]:
    """The source's runs, its problems so far, and whether the runs stream (OTLP: read as written)."""
    from trajdebug.sources.formats import ALIASES
    from trajdebug.sources.load import SourceError, read_source

    if fmt_used is not None and ALIASES.get(fmt_used.lower(), fmt_used.lower()) == "otlp":
        # OTLP streams: each run is written as soon as its trace is read, so a file of any
        # size imports in bounded memory.
        from trajdebug.core.jsonl import FormatError
        from trajdebug.sources.formats.otlp import iter_otlp

        problems: list[Any] = []
        stream = iter_otlp(source, problems)
        try:
            first = next(stream, None)
        except FormatError as exc:
            raise fail(str(exc)) from None
        return itertools.chain([first] if first is not None else [], stream), problems, True
    try:
        with Progress(f"reading {source}", enabled=not as_json):
            result = read_source(source, fmt=fmt_used)
    except SourceError as exc:
        raise fail(str(exc)) from None
    for problem in result.problems:
        warn(str(problem))
    return result.runs, list(result.problems), False


def _write_runs(
    runs: Iterable[Run], output: str, streamed: bool, imported: list[dict[str, Any]], as_json: bool
) -> dict[str, int]:
    """Write the runs to ``output`` (a store or a JSONL file), noting each in ``imported``; the store's counts."""
    from trajdebug.core.jsonl import write_jsonl

    outcome: dict[str, int] = {"added": 0, "replaced": 0, "unchanged": 0}

    def counted(runs: Iterable[Run]) -> Iterator[Run]:
        for r in runs:
            imported.append(
                {"run_id": r.run_id, "name": r.name, "outcome": r.outcome, "steps": len(r.steps), "errors": len(r.errors)}
            )
            yield r

    if streamed and not output.endswith(_STORE_SUFFIXES):
        _write_redacted(runs, output, imported)
        outcome["added"] = len(imported)
    elif output.endswith(_STORE_SUFFIXES):
        from trajdebug.store import Store

        if streamed:
            from trajdebug.core.jsonl import redacted_run

            runs = map(redacted_run, runs)

        total = len(runs) if isinstance(runs, list) else None
        with Store(output) as store, Progress(f"importing into {output}", total=total, enabled=not as_json) as bar:
            for run in counted(runs):
                outcome[store.save_run(run)] += 1
                bar.advance()
    else:
        write_jsonl(counted(runs), output)
        outcome["added"] = len(imported)
    return outcome


def _summary(
    source: Path, fmt_used: str, output: str, imported: list[dict[str, Any]], outcome: dict[str, int], problems: int
) -> str:
    """The line ``import`` ends with: runs, steps and errors imported, and where."""
    from trajdebug.core.escape import visible

    steps = sum(r["steps"] for r in imported)
    errors = sum(r["errors"] for r in imported)
    n = len(imported)
    already = outcome["unchanged"] + outcome["replaced"]
    return visible(
        f"imported {n} run{'s' * (n != 1)} ({steps} step{'s' * (steps != 1)}, {errors} error{'s' * (errors != 1)})"
        f" from {source} ({fmt_used}) into {output}"
        + (
            f" ({outcome['added']} new, {outcome['unchanged']} already there, {outcome['replaced']} updated)"
            if already
            else ""
        )
        + (f"; {problems} problem(s) reported above" if problems else "")
    )


def _write_redacted(runs: Iterable[Any], output: str, imported: list[dict[str, Any]]) -> None:
    """Streamed runs into a JSONL file: each run's records redacted once (`run_to_lines`, per the
    process policy) are its lines, and what the summary says of the run is read from them (the
    name it shows is the redacted one)."""
    from trajdebug.core.schema import run_to_lines

    with open(output, "wb") as fh:
        for run in runs:
            recs, lines = run_to_lines(run)
            end = next((r for r in reversed(recs) if r.get("t") == "end"), None)
            imported.append(
                {
                    "run_id": recs[0]["run_id"],
                    "name": recs[0]["name"],
                    "outcome": end["outcome"] if end is not None else "incomplete",
                    "steps": len(run.steps),  # one record each
                    "errors": len(run.errors),
                }
            )
            fh.write(b"".join(lines))


@click.command(name="export")
@source_argument
@run_option
@fmt_option
@click.option(
    "--to",
    "to",
    type=click.Choice(["otlp", "parquet"]),
    default="otlp",
    show_default=True,
    help="Output format (parquet: a dataset folder, see docs/format.md).",
)
@click.option(
    "-o", "--output", metavar="PATH", default="-", show_default=True, help="Output file ('-': stdout)."
)
@click.option(
    "--per-line",
    is_flag=True,
    help="One envelope per run per line (JSON lines, as the collector's file exporter writes).",
)
@click.option("--analyze", "with_analyses", is_flag=True, help="parquet: also write the analyses table.")
def export_cmd(
    source: str | None,
    run_id: str | None,
    fmt: str | None,
    to: str,
    output: str,
    per_line: bool,
    with_analyses: bool,
) -> None:
    """Export runs as OTLP/JSON spans, to open them in any OpenTelemetry backend.

    Each run is a trace and each step a span (OpenInference attributes:
    Phoenix and Langfuse show each LLM call's tokens and cost, and each run's
    session, user, tags and metadata; docs/importers.md, "Export");
    dependencies are span links and error lifecycle stages are span events.
    `trajdebug import` reads the file back to the same runs.

    \b
    Example:
        trajdebug export trajdebug.db --run 4f2a --to otlp -o spans.json
        trajdebug export trajdebug.db --to parquet -o dataset/
    """
    if to == "parquet":
        from trajdebug.cli._common import store_path
        from trajdebug.fleet.engine import export_source
        from trajdebug.sources.load import SourceError

        if output == "-":
            raise click.ClickException("--to parquet writes a dataset folder: give -o DIR")
        try:
            with Progress(f"exporting to {output}") as bar:
                n = export_source(
                    store_path(source), output, run_id=run_id, fmt=fmt, analyses=with_analyses, progress=bar.update
                )
        except SourceError as exc:
            raise click.ClickException(str(exc)) from None
        click.echo(f"exported {n['runs']} runs ({n['steps']} steps) as parquet to {output}", err=True)
        return
    from trajdebug.sources.formats.export import write_otlp

    runs = load_source(source, run_id, fmt)
    if output == "-":
        import io

        from trajdebug.core.escape import json_text

        buf = io.StringIO()
        write_otlp(runs, buf, per_line=per_line)
        sys.stdout.write(json_text(buf.getvalue()))
        return
    with Progress(f"exporting to {output}"):
        write_otlp(runs, output, per_line=per_line)
    spans = sum(len(r.steps) for r in runs)
    from trajdebug.cli._common import store_path
    from trajdebug.core.escape import visible

    # The file reads back to the same runs and step ids (`trajdebug import`), so their labels go with them.
    roots: dict[str, str] = {}
    _noting_labels(runs, Path(store_path(source)), roots)  # a list: noted at once
    carried = _carry_labels(store_path(source), output, roots, anew=True)  # the file is written anew
    click.echo(
        visible(f"exported {len(runs)} run{'s' * (len(runs) != 1)} ({spans} spans) as {to} to {output}")
        + ("; " + _carried_line(carried, store_path(source), output) if carried.carried or carried.kept else ""),
        err=True,
    )


def register(cli: click.Group) -> None:
    """Add ``import`` and ``export`` to the command line."""
    cli.add_command(import_cmd)
    cli.add_command(export_cmd)


__all__ = ["export_cmd", "import_cmd", "register"]
