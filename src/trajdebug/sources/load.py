"""Where runs come from: a store, a trajdebug JSONL file, or a foreign trace.

Every command that reads runs takes a SOURCE and goes through `load_runs`, so
the store, our own files and every importer behave the same.  Stores are
opened read-only.  A source that cannot be read at all gets a one-line
`SourceError` saying what is wrong with it (an empty file, an image, JSON
broken at a given line, an empty folder), never a traceback.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from trajdebug.core.jsonl import FormatError, ReadResult, read_jsonl
from trajdebug.core.model import Run
from trajdebug.core.shortids import shortener
from trajdebug.store import Store, StoreError, ambiguous_prefix, is_store


log = logging.getLogger("trajdebug")


class SourceError(ValueError):
    """A source that cannot be read: the message names the file and what is wrong."""


_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"%PDF", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"\x1f\x8b", "a gzip archive (decompress it first)"),
    (b"\x7fELF", "an executable"),
    (b"SQLite format 3\x00", "an SQLite file that is not a trajdebug store"),
)


def describe_unreadable(path: Path) -> str:
    """What is wrong with a file or folder no reader recognised, in a few words."""
    if path.is_dir():
        entries = [p for p in path.iterdir() if not p.name.startswith(".")]
        if not entries:
            return "empty folder: no trace files in it"
        traces = [p for p in entries if p.is_file() and p.suffix in (".json", ".jsonl")]
        if not traces:
            return f"folder without .json or .jsonl files ({len(entries)} other entries)"
        return "folder of files that are not all OTLP/JSON traces; import them one by one to see which"
    try:
        with path.open("rb") as fh:
            head = fh.read(64 * 1024)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if not head.strip(b" \t\r\n\xef\xbb\xbf"):
        return "empty file"
    for magic, what in _MAGIC:
        if head.startswith(magic):
            return f"this is {what}, not a trace"
    if b"\x00" in head:
        return "binary file, not a trace"
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        return f"not UTF-8 text (byte {exc.start})"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    stripped = text.lstrip()
    if stripped[:1] not in ("{", "["):
        return "not JSON (a trace is JSON or JSON Lines)"
    try:
        doc = json.loads(text)
    except RecursionError:
        return "JSON nested too deeply to read"
    except json.JSONDecodeError as exc:
        first = stripped.split("\n", 1)[0]
        try:
            json.loads(first)
        except (json.JSONDecodeError, RecursionError):
            return f"broken JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        return "JSON Lines whose records are not in a known trace format"
    if isinstance(doc, dict):
        keys = ", ".join(sorted(str(k) for k in doc)[:6]) or "none"
        return f"JSON object in no known trace format (its keys: {keys})"
    if isinstance(doc, list):
        return "JSON list in no known trace format" if doc else "empty JSON list"
    return "JSON value in no known trace format"


def _is_trajdebug_jsonl(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            for raw in fh:
                line = raw.strip().removeprefix(b"\xef\xbb\xbf")
                if line:
                    return line.startswith(b"{") and b'"v"' in line and b'"t"' in line and b'"run_id"' in line
    except OSError:
        return False
    return False


FORCE_HINT = "pass --from otlp|openai|transcript|trajdebug to force one"
"""What a source whose format cannot be told is advised (`read_source`'s ``hint``): SOURCE takes ``--from``."""

REFS_HINT = (
    "the format of a --refs file is detected, never forced: convert it with "
    "`trajdebug import FILE --from FORMAT -o refs.jsonl` and pass refs.jsonl"
)
"""The advice for a ``--refs`` file whose format cannot be told (``--from`` applies to SOURCE only)."""


def read_source(source: str | Path, *, fmt: str | None = None, hint: str = FORCE_HINT) -> ReadResult:
    """Read every run in a source, with the records that could not be read.

    Args:
        source: A store (SQLite file, opened read-only), a trajdebug JSONL file,
            or a foreign trace file or folder.
        fmt: Force a format: ``trajdebug``, ``store``, or an importer's name (``otlp``,
            ``openai``, ``transcript``); auto-detected when None.
        hint: What the error about a source whose format cannot be told advises (`FORCE_HINT`, `REFS_HINT`).

    Raises:
        SourceError: the source does not exist or is in no format we can read
            (the message says what is wrong with it).
    """
    path = Path(source)
    if not path.exists():
        raise SourceError(f"{path}: no such file or folder")
    if fmt in (None, "store") and is_store(path):
        try:
            with Store(path, readonly=True) as store:
                return store.read()
        except StoreError as exc:
            raise SourceError(str(exc)) from None
    if fmt == "store":
        raise SourceError(f"{path}: not a trajdebug store (SQLite file); {describe_unreadable(path)}")
    try:
        if fmt in (None, "trajdebug", "jsonl") and (fmt is not None or _is_trajdebug_jsonl(path)):
            if path.is_dir():
                raise SourceError(f"{path}: a folder, not a trajdebug JSONL file")
            return read_jsonl(path)
        from trajdebug.core.jsonl import redacted
        from trajdebug.sources.formats import import_path, sniff

        if fmt is None and sniff(path) is None:
            raise SourceError(
                f"{path}: cannot tell the format: {describe_unreadable(path)} ({hint})"
            )
        from trajdebug.sidefile import with_side_answers

        # What is rendered or written from a foreign source is redacted on the way in, as what the
        # recorder records (a report, `serve`, a Parquet export never show a secret it holds).
        return with_side_answers(path, redacted(import_path(path, fmt)))
    except FormatError as exc:
        raise SourceError(str(exc).splitlines()[0] if str(exc) else f"{path}: cannot be read") from None
    except SourceError:
        raise
    except (OSError, UnicodeError) as exc:
        raise SourceError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    except Exception as exc:
        log.debug("trajdebug: importer failed on %s", path, exc_info=True)
        raise SourceError(
            f"{path}: could not be imported ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no message'})"
        ) from None


def select_run(source: str | Path, runs: Sequence[Run], run_id: str) -> list[Run]:
    """The run ``--run ID`` names among ``runs``: the one with that id, else the one whose id starts
    with it, as a one-element list.

    Raises:
        SourceError: no run matches, or the prefix is ambiguous (the message lists a few of the matches).
    """
    exact = [r for r in runs if r.run_id == run_id]
    if exact:
        return exact[:1]
    found = [r for r in runs if r.run_id.startswith(run_id)] if run_id else []
    if not found:
        raise SourceError(_no_run(source, runs, run_id))
    if len({r.run_id for r in found}) > 1:
        newest = sorted(found, key=lambda r: r.start_ns, reverse=True)
        raise SourceError(ambiguous_prefix(source, run_id, [r.run_id for r in newest]))
    return found[:1]


def _no_run(source: str | Path, runs: Sequence[Run], run_id: str, shown: int = 3) -> str:
    """The error for a run id that no run of ``source`` has: with a few of its run ids, newest first, and the
    command that lists them all (nu63: "no run 'zzz'" alone left the user guessing)."""
    if not runs:
        return f"{source}: no run {run_id!r} (it holds no run)"
    short = shortener(r.run_id for r in runs)
    newest = [short(r.run_id) for r in sorted(runs, key=lambda r: r.start_ns, reverse=True)]
    more = f" and {len(newest) - shown} more" if len(newest) > shown else ""
    return (
        f"{source}: no run {run_id!r}; its runs, newest first: {', '.join(newest[:shown])}{more} "
        f"(`trajdebug runs {source}` lists them)"
    )


def load_runs(
    source: str | Path,
    *,
    run_id: str | None = None,
    fmt: str | None = None,
    outcome: str | None = None,
    hint: str = FORCE_HINT,
) -> list[Run]:
    """Load the runs of a source (see `read_source`); problems are logged as warnings.

    Args:
        source: A store, a JSONL file or a foreign trace.
        run_id: Keep only this run (a unique prefix is enough).
        fmt: Force a format (see `read_source`).
        outcome: Keep only runs with this outcome.
        hint: What the error about a source whose format cannot be told advises (see `read_source`).

    Raises:
        SourceError: unreadable source, or no run matches ``run_id``.
    """
    result = read_source(source, fmt=fmt, hint=hint)
    for problem in result.problems:
        log.warning("%s", problem)
    runs = result.runs
    if run_id is not None:
        runs = select_run(source, runs, run_id)
    if outcome is not None:
        runs = [r for r in runs if r.outcome == outcome]
    return runs


__all__ = ["FORCE_HINT", "REFS_HINT", "SourceError", "describe_unreadable", "load_runs", "read_source", "select_run"]
