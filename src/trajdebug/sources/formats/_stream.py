"""Streaming a large OTLP file: its JSON values a line at a time, and its spans waiting for their trace's turn.

A trace's spans may be spread over a whole file (a collector flushes by time, not
by trace), so no trace is complete before the file's end.  Reading a file of any
size in bounded memory (`trajdebug.sources.formats.otlp.iter_otlp`) reads a large
line-delimited file a line at a time (`records`) and keeps the decoded spans in a
`SpanSpill`: in memory up to a limit, then in a temporary SQLite file, one row per
trace and spill, read back one trace at a time.
"""

from __future__ import annotations

import dataclasses
import marshal
import operator
import pickle
import sqlite3
import tempfile
from collections.abc import Iterator
from pathlib import Path

from trajdebug.core.jsonl import FormatError
from trajdebug.sources.formats._common import Record, read_records
from trajdebug.sources.formats.otlp_json import RUN_ID, Span


def records(path: Path, problems: list[FormatError], *, stream_from: int) -> Iterator[Record]:
    """The JSON values of a file: whole (`read_records`), or a line at a time when it is ``stream_from``
    bytes or more and line-delimited (malformed lines are appended to ``problems``, file and line named)."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise FormatError(f"cannot read file: {exc.strerror or exc}", source=str(path)) from None
    if size < stream_from or not _line_delimited(path):
        records, bad = read_records(path)
        problems += bad
        yield from records
        return
    from trajdebug.core.codec import loads

    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                value = loads(raw)
            except ValueError as exc:
                problems.append(FormatError(f"not valid JSON ({exc})", source=str(path), line=n))
                continue
            yield Record(value, n)


def _line_delimited(path: Path) -> bool:
    """Whether a file's first non-blank line is a whole JSON object or array (JSON lines)."""
    from trajdebug.core.codec import loads

    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                try:
                    return isinstance(loads(raw), (dict, list))
                except ValueError:
                    return False
    return False


class SpanSpill:
    """Decoded spans grouped by trace, in memory up to a limit, then on disk (a context manager: the
    temporary file goes when it exits)."""

    def __init__(self) -> None:
        self.count = 0
        """Spans added so far."""
        self.order: dict[str, int] = {}
        """Trace id -> its number, in order of first appearance."""
        self.memory: dict[str, list[Span]] = {}
        """The spans held in memory, by trace."""
        self.named: set[str] = set()
        """Traces with a span that carries a run id (the rest are named by their trace id)."""
        self._held = 0
        self._db: sqlite3.Connection | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> SpanSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._db is not None:
            self._db.close()
        if self._dir is not None:
            self._dir.cleanup()

    @property
    def spilled(self) -> bool:
        """Whether spans were written to disk (every trace is then read back from there)."""
        return self._db is not None

    def add(self, spans: list[Span], limit: int) -> None:
        """Hold these spans; when ``limit`` spans or more are held, write them all to disk."""
        for s in spans:
            self.order.setdefault(s.trace_id, len(self.order))
            self.memory.setdefault(s.trace_id, []).append(s)
            if RUN_ID in s.resource or RUN_ID in s.attrs:
                self.named.add(s.trace_id)
        self.count += len(spans)
        self._held += len(spans)
        if self._held >= limit:
            self._spill()

    def finish(self) -> None:
        """Every span added: once any were spilled, the rest join them, indexed by trace."""
        if self._db is not None:
            self._spill()
            self._db.execute("CREATE INDEX spans_trace ON spans (trace)")

    def spans(self, trace: str) -> list[Span]:
        """A trace's spans in the order added (taken out of memory; read again from disk when spilled)."""
        if self._db is None:
            return self.memory.pop(trace)
        rows = self._db.execute("SELECT data FROM spans WHERE trace = ? ORDER BY rowid", (self.order[trace],))
        return [s for r in rows for s in unpack(r[0])]

    def _spill(self) -> None:
        if self._db is None:
            self._dir = tempfile.TemporaryDirectory(prefix="trajdebug-import-")
            self._db = sqlite3.connect(Path(self._dir.name) / "spans.db")
            self._db.execute("PRAGMA journal_mode=OFF")
            self._db.execute("PRAGMA synchronous=OFF")
            self._db.execute("CREATE TABLE spans (trace INTEGER, data BLOB)")
        # One row per trace and spill (its spans in order): a pickle per span cost as much as decoding it.
        self._db.executemany(
            "INSERT INTO spans VALUES (?, ?)", ((self.order[t], pack(ss)) for t, ss in self.memory.items())
        )
        self.memory.clear()
        self._held = 0


_SPAN_FIELDS = operator.attrgetter(*(f.name for f in dataclasses.fields(Span) if f.name != "children"))
"""A span's fields but its children (none yet while its trace is being read), as a tuple."""


def pack(spans: list[Span]) -> bytes:
    """Spans as bytes: their fields marshalled (decoded JSON is all built-in values), else pickled."""
    try:
        return b"m" + marshal.dumps([_SPAN_FIELDS(s) for s in spans])
    except ValueError:  # a value marshal cannot write: pickle writes anything the decoder made
        return b"p" + pickle.dumps(spans, pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes) -> list[Span]:
    """The spans `pack` wrote."""
    if data[:1] == b"m":
        return [Span(*fields) for fields in marshal.loads(data[1:])]
    spans: list[Span] = pickle.loads(data[1:])
    return spans


__all__ = ["SpanSpill", "pack", "records", "unpack"]
