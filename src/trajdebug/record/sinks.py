"""Sinks: where records go.

A sink is anything with ``write(records)`` and ``close()`` (`Sink`).  The
writer thread (`trajdebug.record.writer`) is the only caller: sinks are
opened there, on first write, so that opening a store, waiting for its lock
or finding the file system read-only never happens on the agent's thread.

The writer encodes each record once, to one line of JSON (bytes); a sink
whose class sets ``takes_lines = True`` (`JsonlSink`, `StoreSink`) gets those
lines and writes the bytes as they are; any other sink gets the records as
mappings (`Lines`: decoded from the same bytes when it reads them).

A sink tells the writer what went wrong by what it raises: an error that may
pass (a locked store, a full disk: `is_transient`) keeps the batch for a
later retry; any other error marks the sink failed and its records lost (and
counted).  An exception may carry ``written``, the number of leading records
of the batch that did reach the sink; those are not retried.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast, overload, runtime_checkable

from trajdebug.core.codec import dumps_line, loads


if TYPE_CHECKING:
    from trajdebug.store import Store


@runtime_checkable
class Sink(Protocol):
    """**Protocol:** somewhere to write records (the exporter role of the recorder)."""

    def write(self, records: Sequence[Mapping[str, Any]]) -> int | None:
        """Write a batch of records (called from the writer thread).

        May return the number of records it had to skip (counted as lost);
        anything else means all were written.
        """

    def close(self) -> None:
        """Flush and release resources at the end of the run."""


class LineSink(Protocol):
    """**Protocol:** a sink that takes the records as the JSON lines the writer encoded (``takes_lines = True``).

    The bytes are written as they are (a file, a store); the optional attributes the
    writer reads: ``loss_kind`` (the cause its skipped records are counted under),
    ``on_busy`` (set by the writer: call it when the target is found locked),
    ``spill(lines)`` (where records go when the process exits with the target still locked).
    """

    takes_lines: bool

    def write(self, records: Sequence[bytes]) -> int | None:
        """Write a batch of encoded records (each one JSON line, ending with its newline)."""

    def close(self) -> None:
        """Flush and release resources at the end of the run."""


class Lines(Sequence[Mapping[str, Any]]):
    """A batch of records given as JSON lines, read as mappings (each line decoded when it is read).

    What a sink without ``takes_lines`` receives: it reads dicts, and the writer
    never decodes for a sink that only counts or forwards the batch.
    """

    __slots__ = ("lines",)

    def __init__(self, lines: Sequence[bytes]) -> None:
        self.lines = lines

    def __len__(self) -> int:
        return len(self.lines)

    @overload
    def __getitem__(self, i: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, i: slice) -> Lines: ...
    def __getitem__(self, i: int | slice) -> Any:
        if isinstance(i, slice):
            return Lines(self.lines[i])
        decoded: Mapping[str, Any] = loads(self.lines[i])
        return decoded

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        for line in self.lines:
            yield loads(line)


class PartialWrite(OSError):
    """A write that failed after its first ``written`` records reached the sink."""

    def __init__(self, cause: OSError, written: int) -> None:
        super().__init__(cause.errno, cause.strerror or str(cause))
        self.cause = cause
        self.written = written


_TRANSIENT_ERRNO = frozenset({errno.ENOSPC, errno.EAGAIN, errno.EINTR, errno.EBUSY, getattr(errno, "EDQUOT", -1)})


_SQLITE_TRANSIENT = frozenset({5, 6, 13})
"""SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL (primary result codes)."""


def is_transient(exc: BaseException) -> bool:
    """Whether a sink error may pass by itself (a locked store, a full disk): then the batch is retried."""
    if getattr(exc, "transient", False) is True:
        return True
    if isinstance(exc, sqlite3.OperationalError):
        # SQLITE_FULL ("database or disk is full") passes when space returns: keep the batch and
        # retry, as a JSONL file does on ENOSPC.
        if getattr(exc, "sqlite_errorcode", None) in _SQLITE_TRANSIENT:
            return True
        text = str(exc).lower()
        return "locked" in text or "busy" in text or "disk is full" in text
    if isinstance(exc, OSError):
        return exc.errno in _TRANSIENT_ERRNO
    return False


def describe(sink: object) -> str:
    """What a sink writes to, for messages: its path when it has one."""
    path = getattr(sink, "path", None)
    if path is not None:
        return str(path)
    return f"sink {type(sink).__name__}"


_IOV = 1024
"""Lines handed to one ``writev`` call (POSIX's IOV_MAX on Linux and macOS)."""


def _writev(fd: int, parts: list[bytes]) -> int:
    """``os.writev``, or one ``os.write`` of the parts joined where there is none (Windows)."""
    if _HAS_WRITEV:
        return os.writev(fd, parts)
    return os.write(fd, b"".join(parts))


_HAS_WRITEV = hasattr(os, "writev")


class JsonlSink:
    """Append records to a JSON Lines file.

    Each batch is one ``write`` on a file opened with ``O_APPEND``, so several
    processes may append to one file without interleaving inside a line.  When
    a write stops part-way (a full disk), the unwritten rest of the record it
    cut is kept and written first next time, so the line is completed rather
    than glued to the next record; the records after it are retried by the
    writer.
    """

    takes_lines = True
    """The writer hands it records as encoded lines (bytes), written as they are."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None
        self._tail = b""

    def _write_all(self, data: bytes) -> int:
        view = memoryview(data)
        done = 0
        while done < len(data):
            n = os.write(self._fd, view[done:])  # type: ignore[arg-type]
            if n <= 0:  # pragma: no cover - os.write raises instead on POSIX
                raise OSError(errno.EIO, "short write")
            done += n
        return done

    def _write_lines(self, chunks: list[bytes]) -> int:
        """Append the lines, at most `_IOV` to a call of ``writev`` (the lines as they are: no copy of the
        batch joined); the bytes written.  An ``OSError`` carries what was written before it (``done``)."""
        fd = self._fd
        assert fd is not None
        done = i = 0
        try:
            while i < len(chunks):
                part = chunks[i : i + _IOV]
                n = _writev(fd, part)
                done += n
                i += len(part)
                rest = sum(map(len, part)) - n
                if rest:
                    # A short write (a full disk): the rest of this part, joined, until written or refused.
                    tail = memoryview(b"".join(part))[n:]
                    while rest:
                        k = os.write(fd, tail[len(tail) - rest :])
                        if k <= 0:  # pragma: no cover - os.write raises instead on POSIX
                            raise OSError(errno.EIO, "short write")
                        done += k
                        rest -= k
        except OSError as exc:
            exc.done = done  # type: ignore[attr-defined]
            raise
        return done

    def write(self, records: Sequence[Mapping[str, Any] | bytes]) -> None:
        """Append the batch: records, or records encoded as JSON lines (written as they are).

        Raises:
            PartialWrite: the file stopped taking data part-way (``written``: the
                records that are complete or whose rest is kept for the next write).
            OSError: the file cannot be opened.
        """
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if self._tail:
            try:
                n = self._write_all(self._tail)
            except OSError as exc:
                raise PartialWrite(exc, 0) from exc
            self._tail = self._tail[n:]
        chunks = [r if r.__class__ is bytes else dumps_line(r) for r in records]
        done = 0
        try:
            done = self._write_lines(chunks)
        except OSError as exc:
            done = getattr(exc, "done", done)
            whole, acc = 0, 0
            for c in chunks:
                if acc + len(c) > done:
                    break
                acc += len(c)
                whole += 1
            if acc < done:
                # The record cut in the middle: its rest goes first next time.
                self._tail = chunks[whole][done - acc :]
                whole += 1
            raise PartialWrite(exc, whole) from exc

    def close(self) -> None:
        """Write what is left of a cut record, then close the file."""
        if self._fd is not None:
            try:
                if self._tail:
                    self._write_all(self._tail)
                    self._tail = b""
            finally:
                os.close(self._fd)
                self._fd = None


_BYTES = {bytes}


class StoreSink:
    """Write records to a `trajdebug.store.Store` (opened on first write, on the writer thread).

    The connection waits inside SQLite for a lock at most
    `trajdebug.configure`'s ``store_busy_timeout``; a store still locked is
    reported at once through `on_busy` (the writer uses it to stop anyone
    waiting for this write: the agent never waits on storage), and the writer
    moves on and tries again on its next round.
    """

    takes_lines = True
    """The writer hands it records as encoded lines (bytes): they go into the store as they are."""

    def __init__(self, store: Store | str | Path) -> None:
        from trajdebug.store import Store

        self.path = Path(store.path) if isinstance(store, Store) else Path(store)
        self._store: Store | None = None
        self._locked = False
        self.on_busy: Callable[[], None] | None = None
        """Called when the store is found locked (set by the writer)."""

    @property
    def store(self) -> Store:
        """The store (opened now if it was not yet)."""
        if self._store is None:
            from trajdebug.record.config import CONFIG
            from trajdebug.store import Store

            self._store = Store(self.path, timeout=CONFIG.store_busy_timeout)
        return self._store

    def write(self, records: Sequence[Mapping[str, Any] | bytes]) -> int:
        """Insert the batch (redacted records, or their JSON lines) in one transaction; returns how many
        records could not be stored."""
        try:
            store = self.store
            # While the store is known to be locked, a retry only looks (no wait inside
            # SQLite): other runs' writes must not queue behind this one.
            store.set_busy_timeout(0.0 if self._locked else None)
            skipped: int
            if records and set(map(type, records)) == _BYTES:  # a type per record, in C
                skipped = store.write_lines(cast("Sequence[bytes]", records))
            else:
                skipped = store.write_records([loads(r) if isinstance(r, bytes) else r for r in records], redacted=True)
        except (sqlite3.OperationalError, OSError, RuntimeError) as exc:
            if is_transient(exc):
                self._locked = True
                if self.on_busy is not None:
                    self.on_busy()
            raise
        self._locked = False
        return skipped

    def spill(self, lines: Sequence[bytes]) -> Path:
        """Leave records that could not be written (the process exits while the store stays locked)
        in the side file beside the store (`trajdebug.store.spill_path`); returns its path."""
        from trajdebug.store import append_spill

        return append_spill(self.path, lines, self._store.renamed_ids if self._store is not None else None)

    def close(self) -> None:
        """Close the writer thread's connection."""
        if self._store is not None:
            self._store.close()


class MemorySink:
    """Keep records in memory (tests, `trajdebug.testing.capture_runs`)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Keep copies of the batch."""
        self.records.extend(dict(r) for r in records)

    def close(self) -> None:
        """Nothing to release."""


def make_sink(target: Sink | Store | str | Path) -> Sink:
    """Turn a store object, a sink, or a path (``.jsonl`` -> JSONL, else SQLite) into a sink (nothing is opened)."""
    if isinstance(target, Sink):
        return target
    from trajdebug.store import Store

    if isinstance(target, Store):
        return StoreSink(target)
    p = Path(target)
    if p.suffix in (".jsonl", ".ndjson", ".json"):
        return JsonlSink(p)
    return StoreSink(p)


__all__ = [
    "JsonlSink",
    "LineSink",
    "Lines",
    "MemorySink",
    "PartialWrite",
    "Sink",
    "StoreSink",
    "describe",
    "is_transient",
    "make_sink",
]
