"""Streaming a large OTLP file: its JSON values a line at a time, and its spans waiting for their trace's turn.

A trace's spans may be spread over a whole file (a collector flushes by time, not
by trace), so no trace is complete before the file's end.  Reading a file of any
size in bounded memory (`trajdebug.sources.formats.otlp.iter_otlp`) reads a large
line-delimited file a line at a time (`records`) and keeps the decoded spans in a
`SpanSpill`: in memory up to a limit, then in an anonymous temporary file, one chunk per
trace and spill (its place kept in memory), read back one trace at a time.
"""

from __future__ import annotations

import dataclasses
import marshal
import operator
import pickle
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

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

    # A large buffer: a collector's line holds a whole batch (hundreds of KB), which a small one reads in
    # many pieces, copied twice; a blank line is told without a stripped copy of each line.
    with path.open("rb", buffering=1 << 20) as fh:
        for n, raw in enumerate(fh, start=1):
            if not raw or raw.isspace():
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
        self._file: IO[bytes] | None = None
        self._end = 0
        self._chunks: dict[int, list[tuple[int, int]]] = {}
        """Trace number -> (offset, length) of each chunk of its spans in the file, in order."""

    def __enter__(self) -> SpanSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._file is not None:
            self._file.close()  # an anonymous temporary file: gone when closed

    @property
    def spilled(self) -> bool:
        """Whether spans were written to disk (every trace is then read back from there)."""
        return self._file is not None

    def add(self, spans: list[Span], limit: int) -> None:
        """Hold these spans; when ``limit`` spans or more are held, write them all to disk."""
        order, memory, named = self.order, self.memory, self.named
        for s in spans:
            t = s.trace_id
            held = memory.get(t)
            if held is None:  # a trace new to memory: new to the file, or spilled before
                held = memory[t] = []
                if t not in order:
                    order[t] = len(order)
            held.append(s)
            if RUN_ID in s.attrs or RUN_ID in s.resource:
                named.add(t)
        self.count += len(spans)
        self._held += len(spans)
        if self._held >= limit:
            self._spill()

    def finish(self) -> None:
        """Every span added: what was spilled is made readable; the spans still held stay in memory
        (written out and read back at once, they would cost a pack and an unpack each for nothing)."""
        if self._file is not None:
            self._file.flush()

    def spans(self, trace: str, *, keep: bool = False) -> list[Span]:
        """A trace's spans in the order added: read again from disk where spilled, then those held in
        memory, which are taken out of it unless ``keep``."""
        if self._file is None:
            return self.memory[trace] if keep else self.memory.pop(trace)
        out: list[Span] = []
        for at, n in self._chunks.get(self.order[trace], ()):
            self._file.seek(at)
            out += unpack(self._file.read(n))
        out += self.memory.get(trace, ()) if keep else self.memory.pop(trace, ())
        return out

    def _spill(self) -> None:
        if self._file is None:
            # Open for the spill's life, closed by `__exit__` (a ``with`` would close it at once).
            self._file = tempfile.TemporaryFile(prefix="trajdebug-import-")  # noqa: SIM115
        # One chunk per trace and spill (its spans in order), appended: a pickle per span cost as much as
        # decoding it, and a database's inserts and index more than the file's writes.
        write, chunks = self._file.write, self._chunks
        for t, ss in self.memory.items():
            data = pack(ss)
            chunks.setdefault(self.order[t], []).append((self._end, len(data)))
            write(data)
            self._end += len(data)
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
