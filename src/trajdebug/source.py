"""Where runs come from: a store, a trajdebug JSONL file, or a foreign trace.

Every command that reads runs takes a SOURCE and goes through `load_runs`, so
the store, our own files and every importer behave the same.
"""

from __future__ import annotations

import logging
from pathlib import Path

from trajdebug.format import FormatError, ReadResult, read_jsonl
from trajdebug.model import Run
from trajdebug.store import Store, StoreError, is_store


log = logging.getLogger("trajdebug")


class SourceError(ValueError):
    """A source that cannot be read: the message names the file and what is wrong."""


def _is_trajdebug_jsonl(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            for raw in fh:
                line = raw.strip()
                if line:
                    return line.startswith(b"{") and b'"v"' in line and b'"t"' in line and b'"run_id"' in line
    except OSError:
        return False
    return False


def read_source(source: str | Path, *, fmt: str | None = None) -> ReadResult:
    """Read every run in a source, with the records that could not be read.

    Args:
        source: A store (SQLite file), a trajdebug JSONL file, or a foreign trace file.
        fmt: Force a format: ``trajdebug``, ``store``, or an importer's name (``otlp``,
            ``openai``, ``transcript``); auto-detected when None.

    Raises:
        SourceError: the source does not exist or is in no format we can read.
    """
    path = Path(source)
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    if fmt in (None, "store") and is_store(path):
        try:
            with Store(path) as store:
                return ReadResult(store.load_runs(), [])
        except (StoreError, KeyError) as exc:
            raise SourceError(str(exc)) from None
    if fmt == "store":
        raise SourceError(f"{path}: not a trajdebug store (SQLite file)")
    try:
        if fmt in (None, "trajdebug", "jsonl") and (fmt is not None or _is_trajdebug_jsonl(path)):
            return read_jsonl(path)
        from trajdebug.formats import import_path

        return import_path(path, fmt)
    except FormatError as exc:
        raise SourceError(str(exc)) from None
    except ImportError as exc:  # pragma: no cover - importers ship with the package
        raise SourceError(f"{path}: cannot import this format ({exc})") from None


def load_runs(
    source: str | Path,
    *,
    run_id: str | None = None,
    fmt: str | None = None,
    outcome: str | None = None,
) -> list[Run]:
    """Load the runs of a source (see `read_source`); problems are logged as warnings.

    Args:
        source: A store, a JSONL file or a foreign trace.
        run_id: Keep only this run (a unique prefix is enough).
        fmt: Force a format (see `read_source`).
        outcome: Keep only runs with this outcome.

    Raises:
        SourceError: unreadable source, or no run matches ``run_id``.
    """
    result = read_source(source, fmt=fmt)
    for problem in result.problems:
        log.warning("%s", problem)
    runs = result.runs
    if run_id is not None:
        exact = [r for r in runs if r.run_id == run_id]
        runs = exact or [r for r in runs if r.run_id.startswith(run_id)]
        if not runs:
            raise SourceError(f"{source}: no run {run_id!r}")
        if len(runs) > 1:
            raise SourceError(f"{source}: run id prefix {run_id!r} is ambiguous ({len(runs)} runs)")
    if outcome is not None:
        runs = [r for r in runs if r.outcome == outcome]
    return runs


__all__ = ["SourceError", "load_runs", "read_source"]
