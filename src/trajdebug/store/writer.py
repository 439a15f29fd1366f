"""The store's writing side: `Store` opens (creating or upgrading) a store and appends and replaces runs.

Each batch is one short ``BEGIN IMMEDIATE`` transaction: the records of each run as rows of JSON lines
(a long step line as its head and a blob shared with the run's previous one, `Store._share`), then the
run's ``runs`` row.  A run start under an id the store holds already is stored under a new id.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from trajdebug.core.codec import dumps_line
from trajdebug.core.model import Run
from trajdebug.core.schema import run_to_records
from trajdebug.store.files import append_spill, create, default_store_path, spill_path
from trajdebug.store.lines import _common, _fresh_id, _Group, _group, _renamed_group, _started, _summarize
from trajdebug.store.reader import StoreReader
from trajdebug.store.schema import SCHEMA_VERSION, StoreBusyError, StoreError, _reason, write_schema


log = logging.getLogger("trajdebug")


CHUNK_BYTES = 1 << 20
"""A batch longer than this is split over several rows (a row stays far below SQLite's limit)."""

SHARED_MIN = 2048
"""A step line this long or longer is stored against the run's blobs (`Store._share`); shorter ones as
they are (a blob row would cost more than the bytes it saves)."""

SHARED_KEEP = 512
"""Bytes a blob must share with the run's previous one to be stored as the difference."""

_HEAD_MAX = 4096
"""Where a step line's ``"input":`` may start (after its ids, name, kind, times, status, parent)."""

_STEP = b'{"v":1,"t":"step",'


class Store(StoreReader):
    """A trajdebug store in one SQLite file.

    Example:
        ```python
        store = Store("trajdebug.db")
        for summary in store.list_runs(outcome="failure"):
            run = store.load_run(summary.run_id)
        ```
    """

    def __init__(
        self, path: str | Path | None = None, *, timeout: float = 30.0, readonly: bool = False
    ) -> None:
        """Open (and, unless ``readonly``, create) a store.

        Args:
            path: The store file (default: ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``).
            timeout: Seconds a write waits for another writer's lock.
            readonly: Open for reading only: nothing is created or changed, and a
                store on a read-only file system can be read.

        Raises:
            StoreError: the file is not a trajdebug store, has another schema
                version, or (read-only) does not exist; the message is one line
                naming the file.
        """
        self.path = Path(path) if path is not None else default_store_path()
        self._timeout = timeout
        self.readonly = readonly
        self._local = threading.local()
        self._renamed: dict[str, str] = {}
        """Run ids this writer's records are stored under instead (a run start that clashed with a
        run already in the store, see `write_lines`)."""
        self.renamed_runs = 0
        """How many incoming runs this store object gave a new id because theirs was taken."""
        self._last: dict[int, tuple[int, bytes, int]] = {}
        """Per run key, the blob this writer stored last and the line it came from (`_share`):
        ``(blob id, line, offset)``, the blob being ``line[offset:]``; committed ones only."""
        try:
            self._init()
        except sqlite3.Error as exc:
            text = str(exc).lower()
            cls = StoreBusyError if "locked" in text or "busy" in text else StoreError
            raise cls(f"{self.path}: {_reason(exc)}") from None
        except OSError as exc:
            raise StoreError(f"{self.path}: {exc.strerror or exc}") from None

    def _init(self) -> None:
        # Never open() the database file ourselves here: closing any descriptor
        # of a file releases every POSIX lock this process holds on it, including
        # SQLite's, which silently loses other connections' writes.  SQLite
        # itself tells us when a file is not a database.
        if not self.path.exists():
            if self.readonly:
                raise StoreError(f"{self.path}: no such store")
            create(self.path)
        try:
            conn = self._conn()
        except sqlite3.DatabaseError as exc:
            if "not a database" in str(exc):
                raise StoreError(
                    f"{self.path}: not an SQLite file (is it a JSONL file? pass it as a source instead)"
                ) from None
            raise StoreError(f"{self.path}: {exc}") from None
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from None
        if version == 0 and self.readonly:
            raise StoreError(f"{self.path}: not a trajdebug store (an SQLite file without its tables)")
        if version == 0:
            write_schema(conn, 0)
        elif version in (1, 2) and not self.readonly:
            write_schema(conn, version)
        elif version not in (1, 2, SCHEMA_VERSION):
            raise StoreError(
                f"{self.path}: store schema version {version} is not supported "
                f"(this trajdebug uses version {SCHEMA_VERSION})"
            )
        try:
            self._version = int(conn.execute("PRAGMA user_version").fetchone()[0])
            self._legacy = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'records'"
            ).fetchone() is not None
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: {exc}") from None
        self._blobs = self._version >= 3
        """Step lines are stored against the ``blobs`` table (`_share`)."""
        if not self.readonly and spill_path(self.path).exists():
            self.merge_spill()

    @property
    def renamed_ids(self) -> Mapping[str, str]:
        """Run ids this store object stores incoming runs under instead (their own was taken), old to new."""
        return self._renamed

    # -- the spill file ----------------------------------------------------------

    def spill(self, lines: Sequence[bytes]) -> Path:
        """Append records (JSON lines) this writer could not write (the store stayed locked until the
        process exited) to the side file `spill_path`; returns its path.  Runs this store object gave
        a new id (see `write_lines`) keep it there."""
        return append_spill(self.path, lines, self._renamed)

    def merge_spill(self) -> int:
        """Write the records of the spill file into the store and remove it (claimed by a rename, so
        two processes never merge it twice); returns how many were merged.  When the store is still
        locked, the records go back to the spill file for the next writer."""
        path = spill_path(self.path)
        claimed = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            os.rename(path, claimed)
        except OSError:
            return 0  # gone, or another process claimed it
        try:
            lines = [line for line in claimed.read_bytes().splitlines(keepends=True) if line.strip()]
            self.write_lines(lines)
        except (sqlite3.Error, OSError) as exc:
            log.info("trajdebug: %s: the spill file waits for the next writer (%s)", self.path, exc)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, claimed.read_bytes())
            finally:
                os.close(fd)
            lines = []
        claimed.unlink(missing_ok=True)
        return len(lines)

    # -- writing -----------------------------------------------------------

    def write_records(self, records: Sequence[Mapping[str, Any]], *, redacted: bool = False) -> int:
        """Append records (as written by the recorder) in one transaction.

        Args:
            records: The records, of any runs.
            redacted: The records were redacted already (the recorder's writer
                thread does it); otherwise secrets are redacted here per the
                process policy.

        Returns:
            How many records were skipped because they could not be stored (they
            lack a run id or type); every other record of the batch is written.

        Raises:
            sqlite3.OperationalError: the store is locked beyond the timeout, or
                cannot be written (nothing of the batch was written).
        """
        if not records:
            return 0
        if not redacted:
            from trajdebug.core import redaction

            red = redaction.redactor()
            if red is not None:
                records = [red(dict(r)) for r in records]
        return self.write_lines([dumps_line(r) for r in records])

    def write_lines(self, lines: Sequence[bytes]) -> int:
        """Append records given as JSON lines (redacted already: the recorder's writer thread encodes
        each record once and hands the same bytes to every sink) in one transaction.

        Returns:
            How many lines were skipped (not a JSON object with a run id and a type).

        Raises:
            sqlite3.OperationalError: the store is locked beyond the timeout, or
                cannot be written (nothing of the batch was written).
        """
        if not lines:
            return 0
        groups, skipped = _group(lines)
        conn = self._conn()
        renamed: dict[str, str] = {}
        last: dict[int, tuple[int, bytes, int]] = {}
        conn.execute("BEGIN IMMEDIATE")
        try:
            for rid, group in groups.items():
                target = self._renamed.get(rid, rid)
                if group.starts and _started(conn, target):
                    # A second run start under an id the store holds already (ids drawn from a seeded
                    # generator, a run id passed twice): never merge it into that run.
                    new = _fresh_id(conn)
                    log.warning("%s: run id %s is taken by another run; this run is stored as %s", self.path, rid, new)
                    group = _renamed_group(group, rid, new, clash=target)
                    renamed[rid] = target = new
                elif target != rid:
                    group = _renamed_group(group, rid, target)
                self._append(conn, self._key(conn, target), group, last)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        # Only once committed: a batch that is retried decides again.
        if len(self._last) + len(last) > 256:
            self._last.clear()  # a long-lived store object writing many runs keeps no line of each
        self._last.update(last)
        self._renamed.update(renamed)
        self.renamed_runs += len(renamed)
        return skipped

    @staticmethod
    def _key(conn: sqlite3.Connection, run_id: str) -> int:
        """The run's integer key (its row in ``runs``, made now if there is none); inside a transaction."""
        row = conn.execute("SELECT key FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return int(conn.execute("INSERT INTO runs (run_id) VALUES (?)", (run_id,)).lastrowid or 0)
        return int(row[0])

    def _append(self, conn: sqlite3.Connection, key: int, group: _Group, last: dict[int, tuple[int, bytes, int]]) -> None:
        """Write one run's lines as rows of at most `CHUNK_BYTES`, then its summary: one statement for the
        counts, one per run, meta, mark or end record.  ``last``: the transaction's `_share` state."""
        rows = []
        start, size = 0, 0
        lines = self._share(conn, key, group.lines, last) if self._blobs else group.lines
        for i, line in enumerate(lines):
            size += len(line)
            if size > CHUNK_BYTES and i > start:
                rows.append((key, i - start, b"".join(lines[start:i])))
                start, size = i, len(line)
        rows.append((key, len(lines) - start, b"".join(lines[start:])))
        conn.executemany("INSERT INTO chunks (run, n, body) VALUES (?, ?, ?)", rows)
        if group.steps or group.errors:
            conn.execute(
                "UPDATE runs SET steps = steps + ?, errors = errors + ? WHERE key = ?", (group.steps, group.errors, key)
            )
        for r in group.summary:
            _summarize(conn, key, r)

    def _share(
        self, conn: sqlite3.Connection, key: int, lines: list[bytes], last: dict[int, tuple[int, bytes, int]]
    ) -> list[bytes]:
        """A run's lines as they are stored: each step line of `SHARED_MIN` bytes or more as its head (up to
        its ``"input":``) and a reference to a blob holding the rest, the blob itself stored as what it
        shares with the run's previous blob (a prefix) and what follows.

        A conversation resent unchanged costs no blob; one that grew costs its new turns (and the
        output); so a run's chat history is stored about once, not once per call (`_unshared` rebuilds
        each line, byte for byte).  ``last`` (by run key): the transaction's latest blob, taken over by
        the store once committed.
        """
        if max(map(len, lines), default=0) < SHARED_MIN:
            return lines  # short records only (200-byte texts): not a Python step per line
        prev = last.get(key)
        # A blob of an earlier transaction: another process may have replaced the run (save_run) since,
        # and a blob that went is never referred to (checked with the first long line).
        check = prev is None
        if prev is None:
            prev = self._last.get(key)
        out: list[bytes] = []
        rows: list[tuple[int, int, int | None, int, bytes]] = []
        next_id = 0
        for line in lines:
            if len(line) < SHARED_MIN or not line.startswith(_STEP) or not line.endswith(b"\n"):
                out.append(line)
                continue
            off = line.find(b'"input":', 0, _HEAD_MAX)
            if off < 0:
                out.append(line)
                continue
            if not next_id:
                row = conn.execute(
                    "SELECT coalesce(max(id), 0), (SELECT count(*) FROM blobs WHERE id = ? AND run = ?) FROM blobs",
                    (prev[0] if prev is not None else 0, key),
                ).fetchone()
                next_id = int(row[0]) + 1
                if check and not row[1]:
                    prev = None
            keep = 0
            if prev is not None:
                pid, pline, poff = prev
                if len(line) - off == len(pline) - poff and line.startswith(memoryview(pline)[poff:], off):
                    out.append(b"\x1e%d\x1e%b\n" % (pid, line[:off]))
                    continue
                # Lines that share too little to be worth a base say so at the first compare.
                if line.startswith(memoryview(pline)[poff : poff + SHARED_KEEP], off):
                    keep = _common(line, off, pline, poff)
            bid, next_id = next_id, next_id + 1
            if keep >= SHARED_KEEP and prev is not None:
                rows.append((bid, key, prev[0], keep, line[off + keep :]))
            else:
                rows.append((bid, key, None, 0, line[off:]))
            prev = (bid, line, off)
            out.append(b"\x1e%d\x1e%b\n" % (bid, line[:off]))
        if rows:
            conn.executemany("INSERT INTO blobs (id, run, base, keep, body) VALUES (?, ?, ?, ?, ?)", rows)
        if prev is not None:
            last[key] = prev
        return out

    def mark_run(self, run_id: str, outcome: str, reason: str | None = None) -> str:
        """Record a verdict on a run after the fact (a ``mark`` record; the recorded outcome stays in its records).

        Returns:
            The run's full id.

        Raises:
            KeyError: no such run (a unique prefix is accepted).
        """
        import time

        from trajdebug.core.schema import mark_record

        rid = self.resolve(run_id)
        self.write_records([mark_record(rid, outcome, reason, time.time_ns())])
        return rid

    def save_run(self, run: Run) -> Literal["added", "replaced", "unchanged"]:
        """Store a whole run (an imported, merged or replayed one), replacing an earlier copy.

        Secrets are redacted per the process policy.  A run already stored with
        the same records is left alone, so importing a file twice does not
        duplicate it.  The run keeps its key when replaced.

        Returns:
            ``added``, ``replaced`` (the store held another version of the run)
            or ``unchanged``.
        """
        lines = [dumps_line(r) for r in run_to_records(run)]
        groups, _ = _group(lines)
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            old = [line for _, line in self._lines(conn, run.run_id)]
            if old == lines:
                conn.execute("COMMIT")
                return "unchanged"
            key = self._key(conn, run.run_id)
            if self._legacy:
                conn.execute("DELETE FROM records WHERE run_id = ?", (run.run_id,))
            conn.execute("DELETE FROM chunks WHERE run = ?", (key,))
            if self._blobs:
                conn.execute("DELETE FROM blobs WHERE run = ?", (key,))
            self._last.pop(key, None)
            conn.execute(
                "UPDATE runs SET name = '', start_ns = NULL, end_ns = NULL, outcome = 'incomplete', "
                "failure_reason = NULL, steps = 0, errors = 0, note = NULL, lost = 0 WHERE key = ?",
                (key,),
            )
            last: dict[int, tuple[int, bytes, int]] = {}
            for group in groups.values():
                self._append(conn, key, group, last)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        self._last.update(last)
        return "replaced" if old else "added"
