"""The embedded run store: one SQLite file in WAL mode.

The store keeps the same records as the JSONL format (see `trajdebug.core.jsonl`):
each batch the recorder writes is one row of the ``chunks`` table holding its
records as JSON lines, exactly the bytes a JSONL file would hold, under the
run's integer key; a ``runs`` table keeps one row per run for listing and
filtering (name, times, outcome, counts, records lost).  Loading a run replays
its records through the same `RunBuilder` the JSONL reader uses, so a run reads
the same from either.

Why chunks (schema version 2, measured in ``benchmarks/recording.py``): a row
per record cost about 4.5 µs of SQLite work per step (the row, its index
entries, a 32-hex run id repeated in each), as much as everything else the
recorder does; a row per batch costs the bytes alone.  The records are encoded
once, on the recorder's writer thread, and those bytes go straight into the
row; the ``runs`` row is updated once per batch, not once per record.  Stores
of schema version 1 (a row per record in ``records``) are read as they are and,
when opened for writing, upgraded in place: the ``runs`` table gets its keys,
the old rows stay where they are and are read before a run's chunks.

Why blobs (schema version 3, measured in ``benchmarks/agentcost.py``): an agent
resends its conversation with each model call, the same or grown by a turn, and
SQLite writes every byte twice (the log, then the database); 6 KB of chat per
step cost the store 15-20 µs more than a JSONL file.  A long step line is kept
in its chunk as its head and a reference to a blob holding the rest, and a blob
is stored as what it shares with the run's previous blob and what follows
(`Store._share`), so a conversation costs its new turns, not its whole text per
call; reading rebuilds each line byte for byte (`_unshared`).  Version-2 stores
are read as they are and gain the table when opened for writing.

Several processes may write one store at once: each batch is one short
``BEGIN IMMEDIATE`` transaction, WAL mode lets readers run beside the writer,
and a busy timeout makes writers queue instead of failing.  The write-ahead log
is checkpointed by SQLite as it grows and truncated back to
`WAL_SIZE_LIMIT` after each checkpoint, so it never stays as large as the data.

Reading is read-only (``Store(path, readonly=True)``, what every reporting
command uses), so a store on a read-only mount can be read, and tolerant: a
record that cannot be decoded, a corrupt page, a run listed without records are
each a one-line problem naming the store, the run and the record, and every
other run still loads (`Store.read`).  Writing a whole run (`Store.save_run`:
``import``, integrations, merges between stores) replaces the run's earlier
copy, so importing a file twice does not duplicate it, and redacts secrets per
the process policy, like every write path.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from trajdebug.core import ledger
from trajdebug.core.codec import dumps_line, loads
from trajdebug.core.jsonl import FormatError, ReadResult, RunBuilder
from trajdebug.core.model import Run
from trajdebug.core.schema import RECORDER_KEY, lost_in, meta_record, run_to_records


log = logging.getLogger("trajdebug")


SCHEMA_VERSION = 3
"""The store's schema version, kept in ``PRAGMA user_version`` (1: a row per record; 2: no ``blobs``;
both read as they are and upgraded when opened for writing)."""

DEFAULT_STORE = "trajdebug.db"

PAGE_SIZE = 16384
"""The page size of a new store: a batch of records spans fewer pages (fewer writes to the log and
the file) than with SQLite's 4,096, while a small commit still writes little."""

WAL_SIZE_LIMIT = 32 * 1024 * 1024
"""Bytes the write-ahead log is truncated back to after a checkpoint (``journal_size_limit``)."""

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

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    key INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL DEFAULT '',
    start_ns INTEGER,
    end_ns INTEGER,
    outcome TEXT NOT NULL DEFAULT 'incomplete',
    failure_reason TEXT,
    steps INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    note TEXT,
    lost INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL,
    n INTEGER NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_run ON chunks (run, id);
CREATE INDEX IF NOT EXISTS runs_start ON runs (start_ns);
CREATE TABLE IF NOT EXISTS blobs (
    id INTEGER PRIMARY KEY,
    run INTEGER NOT NULL,
    base INTEGER,
    keep INTEGER NOT NULL DEFAULT 0,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS blobs_run ON blobs (run);
"""

_RUN_COLUMNS = "run_id, name, start_ns, end_ns, outcome, failure_reason, steps, errors, note"

# The head of a record line as the recorder and `write_records` encode it (``v``, ``t``,
# ``run_id`` first): read without decoding the line; any other line is decoded.
_HEAD = b'{"v":1,"t":"'
_RUN_ID = b',"run_id":"'
_SUMMARY_TYPES = frozenset({"run", "meta", "mark", "end"})


class StoreError(RuntimeError):
    """The store file cannot be used (wrong schema version, not a trajdebug store)."""


class StoreBusyError(StoreError):
    """The store is locked by another connection right now (it may pass: retry later)."""

    transient = True


def default_store_path() -> Path:
    """The default store: ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``."""
    return Path(os.environ.get("TRAJDEBUG_STORE") or DEFAULT_STORE)


def ambiguous_prefix(where: Any, prefix: str, ids: Sequence[str], shown: int = 4) -> str:
    """The one-line error for a run id prefix that several runs share, listing a few of them.

    Each listed id is cut to the shortest length (at least 12) that still tells the listed ones apart,
    so the user can copy one back.
    """
    listed = list(dict.fromkeys(ids))[:shown]
    width = 12
    while width < 64 and len({i[:width] for i in listed}) < len(listed):
        width += 4
    more = f", and {len(set(ids)) - len(listed)} more" if len(set(ids)) > len(listed) else ""
    return (
        f"{where}: run id prefix {prefix!r} is ambiguous: {len(set(ids))} runs match "
        f"({', '.join(i[:width] for i in listed)}{more}); give more of the id"
    )


def run_note(metadata: Mapping[str, Any]) -> str | None:
    """A short note on what a run is, from its metadata (shown by ``trajdebug runs``)."""
    if metadata.get("replay_of"):
        return f"replay of {str(metadata['replay_of'])[:8]}"
    if metadata.get("reference_for"):
        return f"reference for {str(metadata['reference_for'])[:8]}"
    fault = metadata.get("fault")
    if isinstance(fault, Mapping) and fault.get("name"):
        return f"fault: {fault['name']}"
    return None


def spill_path(path: str | Path) -> Path:
    """The side file beside a store where a process that exits while the store stays locked leaves
    the records it could not write (``trajdebug.db`` -> ``trajdebug.db-spill.jsonl``): JSON lines,
    merged into the store the next time any process opens it for writing, and read with the store
    until then."""
    p = Path(path)
    return p.with_name(p.name + "-spill.jsonl")


def append_spill(store: str | Path, lines: Sequence[bytes], renamed: Mapping[str, str] | None = None) -> Path:
    """Append records (JSON lines) to a store's spill file in one write (``O_APPEND``: several
    processes may spill at once); ``renamed``: run ids a writer stored under a new id."""
    if renamed:
        lines = [_renamed_line(line, renamed) for line in lines]
    path = spill_path(store)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
        view, done = memoryview(data), 0
        while done < len(data):
            done += os.write(fd, view[done:])
    finally:
        os.close(fd)
    return path


def is_store(path: str | Path) -> bool:
    """Whether ``path`` is an SQLite file (by its magic header)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One row of `Store.list_runs`."""

    run_id: str
    """The run's id."""
    name: str
    """The run's name."""
    start_ns: int | None
    """Start time, nanoseconds since the epoch."""
    end_ns: int | None
    """End time, or None while running or after a crash."""
    outcome: str
    """``success``, ``failure`` or ``incomplete``."""
    failure_reason: str | None
    """Why it failed."""
    steps: int
    """Number of finished steps."""
    errors: int
    """Number of error events."""
    note: str | None = None
    """What the run is, when it is special: a replay, a reference run, an injected fault."""
    lost: int = 0
    """Records the recorder lost for this run (from its end record); a lossy run is never plain success."""

    def to_dict(self) -> dict[str, Any]:
        """As a JSON-able dict."""
        return {
            "run_id": self.run_id,
            "name": self.name,
            "start_ns": self.start_ns,
            "end_ns": self.end_ns,
            "outcome": self.outcome,
            "failure_reason": self.failure_reason,
            "steps": self.steps,
            "errors": self.errors,
            "note": self.note,
            "lost": self.lost,
        }


class Store:
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

    # Each thread gets its own connection: sqlite3 connections must not be
    # shared across threads without a lock, and a connection per thread keeps
    # the recorder's writer thread independent of readers.
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None and self.readonly:
            conn = self._readonly_conn()
            self._local.conn = conn
        if conn is None:
            conn = sqlite3.connect(
                self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout={int(self._timeout * 1000)}")
            # Switching a new file to WAL needs an exclusive lock, and SQLite may
            # report BUSY or an I/O error there without calling the busy handler
            # while another process creates the same file: retry for a while.
            deadline = time.monotonic() + self._timeout
            while True:
                try:
                    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                    if str(mode).lower() == "wal":
                        break
                    # Another connection holds a lock: the mode did not change yet.
                    if time.monotonic() > deadline:
                        raise StoreBusyError(f"{self.path}: cannot switch to WAL mode yet (journal mode is {mode})")
                    time.sleep(min(0.02, max(self._timeout / 4, 0.001)))
                except sqlite3.OperationalError as exc:
                    if time.monotonic() > deadline:
                        text = str(exc).lower()
                        if "readonly" in text or "read-only" in text or "unable to open" in text:
                            raise
                        # BUSY, or an I/O error while another process creates the file: it passes.
                        raise StoreBusyError(f"{self.path}: not ready yet ({exc})") from None
                    time.sleep(min(0.02, max(self._timeout / 4, 0.001)))
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            self._local.conn = conn
            self._local.busy = int(self._timeout * 1000)
        return conn

    def _readonly_conn(self) -> sqlite3.Connection:
        uri = self.path.resolve().as_uri()
        try:
            conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=self._timeout, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA user_version").fetchone()
            return conn
        except sqlite3.OperationalError:
            # A WAL store on a read-only file system: SQLite cannot create the
            # shared-memory file; nobody can write there either, so it may read
            # the file as immutable.
            conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA user_version").fetchone()
            return conn

    def _create(self) -> None:
        """Create a new store atomically: build it aside, then link it into place.

        Two processes creating one SQLite file and switching it to WAL at the
        same moment can corrupt it ("database disk image is malformed"), so the
        file is complete (schema, WAL mode) before it appears under its name;
        whoever links first wins and the other opens that file.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        # Made by hand first (a private name): a folder that cannot be written then says
        # why (read-only file system, permission denied) instead of SQLite's "unable to open".
        os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute(f"PRAGMA page_size={PAGE_SIZE}")
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("BEGIN")
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            finally:
                conn.close()
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass
        finally:
            # Clean-up must never hide the reason the store could not be made.
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(f"{tmp}{suffix}")
                except OSError:
                    pass

    def _init(self) -> None:
        # Never open() the database file ourselves here: closing any descriptor
        # of a file releases every POSIX lock this process holds on it, including
        # SQLite's, which silently loses other connections' writes.  SQLite
        # itself tells us when a file is not a database.
        if not self.path.exists():
            if self.readonly:
                raise StoreError(f"{self.path}: no such store")
            self._create()
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
            self._write_schema(conn, 0)
        elif version in (1, 2) and not self.readonly:
            self._write_schema(conn, version)
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

    def _spilled(self) -> dict[str, list[bytes]]:
        """The spill file's lines by run id (read-only readers read them with the store)."""
        try:
            data = spill_path(self.path).read_bytes()
        except OSError:
            return {}
        groups, _ = _group([line for line in data.splitlines(keepends=True) if line.strip()])
        return {rid: g.lines for rid, g in groups.items()}

    def _write_schema(self, conn: sqlite3.Connection, found: int) -> None:
        """Create the tables of an empty store, or upgrade one of schema version 1, under the write lock."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-check under the write lock: another process may have done it.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version == found == 1:
                _upgrade_v1(conn)
            elif version == found == 2:
                # Version 3 only adds the blobs table: every chunk of version 2 reads as it is.
                for stmt in _SCHEMA.split(";")[-3:]:
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version == found == 0:
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def set_busy_timeout(self, seconds: float | None) -> None:
        """How long this thread's connection waits for another writer's lock (None: the store's timeout)."""
        ms = int((self._timeout if seconds is None else seconds) * 1000)
        conn = self._conn()
        # Set only when it changes: the recorder's writer asks before every batch.
        if getattr(self._local, "busy", None) != ms:
            conn.execute(f"PRAGMA busy_timeout={ms}")
            self._local.busy = ms

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None
            self._local.busy = None

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

    # -- reading -----------------------------------------------------------

    @staticmethod
    def _where(
        outcome: str | None, name: str | None, since_ns: int | None, until_ns: int | None, derived: bool
    ) -> tuple[str, list[str | int]]:
        where: list[str] = []
        args: list[str | int] = []
        if not derived:
            where.append("(note IS NULL OR (note NOT LIKE 'replay of %' AND note NOT LIKE 'reference for %'))")
        if outcome is not None:
            where.append("outcome = ?")
            args.append(outcome)
        if name is not None:
            where.append("name LIKE ?")
            args.append(name)
        if since_ns is not None:
            where.append("start_ns >= ?")
            args.append(since_ns)
        if until_ns is not None:
            where.append("start_ns <= ?")
            args.append(until_ns)
        return (" WHERE " + " AND ".join(where)) if where else "", args

    def count_runs(self, *, outcome: str | None = None, name: str | None = None, derived: bool = True) -> int:
        """How many runs `list_runs` would list with these filters and no limit."""
        where, args = self._where(outcome, name, None, None, derived)
        try:
            return int(self._conn().execute("SELECT count(*) FROM runs" + where, args).fetchone()[0])
        except sqlite3.DatabaseError:
            return len(self.list_runs(outcome=outcome, name=name, derived=derived))

    def list_runs(
        self,
        *,
        outcome: str | None = None,
        name: str | None = None,
        since_ns: int | None = None,
        until_ns: int | None = None,
        limit: int | None = None,
        derived: bool = True,
    ) -> list[RunSummary]:
        """List runs, newest first, filtered by outcome, name (SQL LIKE pattern) and start time.

        With ``derived=False``, replays and reference runs (the runs verification
        records for another run, see `run_note`) are left out.  Each summary says
        how many records the recorder lost for the run (read from its end record).
        """
        where, args = self._where(outcome, name, since_ns, until_ns, derived)
        lost = ", lost" if self._version >= 2 else ""
        sql = f"SELECT {_RUN_COLUMNS}{lost} FROM runs" + where
        sql += " ORDER BY start_ns DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        conn = self._conn()
        try:
            rows = conn.execute(sql, args).fetchall()
        except sqlite3.DatabaseError as exc:
            log.warning("%s: the run list cannot be read (%s); listing from the records instead", self.path, _reason(exc))
            return self._list_from_records(outcome, name, since_ns, until_ns, limit, derived)
        out = []
        killed = ledger.unsettled(self.path)
        for row in rows:
            rid, name_, start, end, outcome_, reason, steps, errors, note = row[:9]
            n_lost = (row[9] if lost else self._lost(conn, str(rid))) + ledger.count(killed, str(rid), steps)
            out.append(RunSummary(rid, name_, start, end, outcome_, reason, steps, errors, note, n_lost))
        return out

    def _list_from_records(
        self,
        outcome: str | None,
        name: str | None,
        since_ns: int | None,
        until_ns: int | None,
        limit: int | None,
        derived: bool = True,
    ) -> list[RunSummary]:
        """`list_runs` for a store whose ``runs`` table is damaged: summaries of the runs that can be read."""
        import re

        result = self.read()
        for p in result.problems:
            log.warning("%s", p)
        pattern = None
        if name is not None:
            pattern = re.compile("".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in name), re.IGNORECASE | re.DOTALL)
        out = []
        for r in sorted(result.runs, key=lambda r: r.start_ns, reverse=True):
            if outcome is not None and r.outcome != outcome:
                continue
            if pattern is not None and not pattern.fullmatch(r.name):
                continue
            if (since_ns is not None and r.start_ns < since_ns) or (until_ns is not None and r.start_ns > until_ns):
                continue
            note = run_note(r.metadata)
            if not derived and note is not None and note.startswith(("replay of", "reference for")):
                continue
            out.append(
                RunSummary(
                    r.run_id, r.name, r.start_ns, r.end_ns, r.outcome, r.failure_reason, len(r.steps), len(r.errors),
                    note, lost_in(r.metadata.get(RECORDER_KEY)),
                )
            )
        return out[:limit] if limit is not None else out

    @staticmethod
    def _lost(conn: sqlite3.Connection, run_id: str) -> int:
        """Records lost, from the run's last end record (a version-1 store keeps no count in ``runs``)."""
        try:
            row = conn.execute(
                "SELECT body FROM records WHERE run_id = ? AND type = 'end' ORDER BY seq DESC LIMIT 1", (run_id,)
            ).fetchone()
        except sqlite3.DatabaseError:
            return 0  # the account cannot be read; the run's own reading will say why
        if row is None or RECORDER_KEY not in row[0]:
            return 0
        try:
            return lost_in(loads(row[0]).get(RECORDER_KEY))
        except (ValueError, AttributeError):
            return 0

    def run_ids(self) -> list[str]:
        """All run ids, oldest first (from the runs table, or from the records when that cannot be read)."""
        conn = self._conn()
        try:
            ids = [str(r[0]) for r in conn.execute("SELECT run_id FROM runs ORDER BY start_ns, rowid")]
            known = set(ids)
            return ids + [rid for rid in self._spilled() if rid not in known]
        except sqlite3.DatabaseError:
            seen: dict[str, None] = {}
            try:
                if self._legacy:
                    for (rid,) in conn.execute("SELECT run_id FROM records ORDER BY seq"):
                        seen.setdefault(str(rid), None)
                if self._version >= 2:
                    for rid in self._scan_keys():
                        seen.setdefault(rid, None)
            except sqlite3.DatabaseError:
                pass  # as many as could be read
            return list(seen)

    def _scan_keys(self) -> dict[str, int]:
        """Run ids and keys read from the chunks themselves (each line names its run): for a store whose
        ``runs`` table cannot be read."""
        found: dict[str, int] = {}
        conn = self._conn()
        for key, body in conn.execute("SELECT run, body FROM chunks WHERE id IN (SELECT min(id) FROM chunks GROUP BY run)"):
            head = bytes(body[: body.find(b"\n")])
            if head[:1] == b"\x1e":
                head = _unshared(conn, head + b"\n", {})
            try:
                rid = loads(head).get("run_id")
            except (ValueError, AttributeError):
                continue
            if isinstance(rid, str):
                found.setdefault(rid, int(key))
        return found

    def read(self, run_ids: Iterable[str] | None = None) -> ReadResult:
        """Read runs (all of them by default, oldest first) with what could not be read.

        A row that is not JSON or not a valid record, a corrupt page, or a run
        listed without records is a problem naming the store, the run and the
        row; the rest of that run (what could be read of it) and every other run
        still load.

        Raises:
            StoreError: not even the list of runs can be read.
        """
        problems: list[FormatError] = []
        try:
            ids = list(run_ids) if run_ids is not None else self.run_ids()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path}: cannot list runs: {_reason(exc)}") from None
        spilled = self._spilled()
        if spilled:
            n = sum(len(v) for v in spilled.values())
            problems.append(
                FormatError(
                    f"{n} records of {len(spilled)} run(s) wait in {spill_path(self.path)} (a process exited while"
                    " the store was locked); read with the store, merged into it when it is next written",
                    source=str(self.path),
                )
            )
        runs = []
        killed = ledger.unsettled(self.path)
        for rid in ids:
            run, found = self._read_run(rid, spilled.get(rid, ()), killed)
            problems.extend(found)
            if run is not None:
                runs.append(run)
        return ReadResult(runs, problems)

    def _lines(self, conn: sqlite3.Connection, rid: str) -> Iterator[tuple[int, bytes]]:
        """A run's records as JSON lines, numbered from 1 in the order they were written: the rows of a
        version-1 store first, then the chunks.

        Raises:
            sqlite3.DatabaseError: a page cannot be read (what came before it was yielded).
        """
        n = 0
        if self._legacy:
            for (body,) in conn.execute("SELECT body FROM records WHERE run_id = ? ORDER BY seq", (rid,)):
                n += 1
                yield n, (body.encode("utf-8", "surrogatepass") if isinstance(body, str) else bytes(body)) + b"\n"
        if self._version < 2:
            return
        try:
            row = conn.execute("SELECT key FROM runs WHERE run_id = ?", (rid,)).fetchone()
            key = None if row is None else row[0]
        except sqlite3.DatabaseError:
            key = self._scan_keys().get(rid)
        if key is None:
            return
        cache: dict[int, bytes] = {}
        for (body,) in conn.execute("SELECT body FROM chunks WHERE run = ? ORDER BY id", (key,)):
            data = bytes(body) if not isinstance(body, bytes) else body
            start = 0
            while start < len(data):
                end = data.find(b"\n", start)
                end = len(data) if end < 0 else end + 1
                n += 1
                yield n, (_unshared(conn, data[start:end], cache) if data[start] == 0x1E else data[start:end])
                start = end

    def _read_run(
        self, rid: str, spilled: Sequence[bytes] | None = None, killed: Mapping[str, tuple[int, int]] | None = None
    ) -> tuple[Run | None, list[FormatError]]:
        source = f"{self.path} (run {rid})"
        builder = RunBuilder(source, split=False)
        if spilled is None:
            spilled = self._spilled().get(rid, ()) if spill_path(self.path).exists() else ()
        try:
            n = 0
            for n, line in self._lines(self._conn(), rid):
                self._add_line(builder, source, n, line)
        except sqlite3.DatabaseError as exc:
            builder.problems.append(FormatError(f"cannot read the rest of this run: {_reason(exc)}", source=source))
        for i, line in enumerate(spilled, start=n + 1):
            self._add_line(builder, source, i, line)
        runs = builder.runs()
        if not runs:
            builder.problems.append(FormatError("listed, but no record of it could be read", source=source))
            return None, builder.problems
        # Finished steps a process killed while recording here never wrote (its ledger beside the store).
        if killed is None:
            killed = ledger.unsettled(self.path)
        return ledger.killed(runs[0], killed), builder.problems

    @staticmethod
    def _add_line(builder: RunBuilder, source: str, n: int, line: bytes) -> None:
        try:
            rec = loads(line)
        except (ValueError, TypeError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            builder.problems.append(FormatError(f"record is not valid JSON ({reason})", source=source, line=n))
            return
        builder.add(rec, line=n)

    def load_run(self, run_id: str) -> Run:
        """Load one run (what could not be read of it is logged as a warning).

        Raises:
            KeyError: no such run (a unique prefix of a run id is accepted), or
                none of its records could be read.
        """
        rid = self.resolve(run_id)
        run, problems = self._read_run(rid)
        for p in problems:
            log.warning("%s", p)
        if run is None:
            raise KeyError(f"{self.path}: run {rid!r} has no readable record")
        return run

    def load_runs(self, run_ids: Iterable[str] | None = None) -> list[Run]:
        """Load several runs (all of them by default), oldest first; problems are logged as warnings."""
        result = self.read(run_ids)
        for p in result.problems:
            log.warning("%s", p)
        return result.runs

    def resolve(self, run_id: str) -> str:
        """Return the full run id for an id or a unique prefix of one.

        Raises:
            KeyError: no run, or several, match.
        """
        conn = self._conn()
        if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone():
            return run_id
        like = run_id.replace("%", r"\%").replace("_", r"\_") + "%"
        rows = conn.execute(
            r"SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\' ORDER BY start_ns DESC", (like,)
        ).fetchall()
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            spilled = [rid for rid in self._spilled() if rid.startswith(run_id)] if spill_path(self.path).exists() else []
            if len(spilled) == 1:
                return spilled[0]
            raise KeyError(f"{self.path}: no run {run_id!r}")
        raise KeyError(ambiguous_prefix(self.path, run_id, [str(r[0]) for r in rows]))

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Group:
    """The lines of one run in a batch, with what its ``runs`` row needs to know of them."""

    __slots__ = ("errors", "lines", "starts", "steps", "summary")

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.steps = 0
        self.errors = 0
        self.starts = False
        """The batch holds the run's ``run`` record (its start)."""
        self.summary: list[Mapping[str, Any]] = []
        """The run, meta, mark and end records, decoded, in order."""


def _started(conn: sqlite3.Connection, run_id: str) -> bool:
    """The store holds a run start (a ``run`` record) under this id already."""
    row = conn.execute("SELECT start_ns, name FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row is not None and (row[0] is not None or bool(row[1]))


def _fresh_id(conn: sqlite3.Connection) -> str:
    """A run id from the OS's random source that the store does not hold."""
    while True:
        rid = f"{int.from_bytes(os.urandom(16), 'big') | 1:032x}"
        if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (rid,)).fetchone() is None:
            return rid


def _renamed_line(line: bytes, renamed: Mapping[str, str]) -> bytes:
    """A record line under the new id of its run, when its run was given one."""
    try:
        rec = loads(line)
    except (ValueError, TypeError):
        return line
    if isinstance(rec, Mapping) and rec.get("run_id") in renamed:
        return dumps_line({**rec, "run_id": renamed[rec["run_id"]]})
    return line


def _renamed_group(group: _Group, old: str, new: str, clash: str | None = None) -> _Group:
    """The group's lines under run id ``new``; ``clash``: the id was taken by another run (the run's
    recorder account says so, in a ``meta`` record now and in its ``end`` record)."""
    out = _Group()
    out.steps, out.errors, out.starts = group.steps, group.errors, group.starts
    needle = b'"run_id":"' + old.encode() + b'"'
    into = b'"run_id":"' + new.encode() + b'"'
    note = {"renamed_from": old, "warnings": [f"run id {old} was taken by another run in this store; stored as {new}"]}
    for line in group.lines:
        if line.startswith(_HEAD) and needle in line[:80] and b'"t":"end"' not in line[:20]:
            out.lines.append(line.replace(needle, into, 1))
            continue
        try:
            rec = dict(loads(line))
        except (ValueError, TypeError):
            continue
        rec["run_id"] = new
        if rec.get("t") == "end":
            account = rec.get(RECORDER_KEY)
            rec[RECORDER_KEY] = {**(account if isinstance(account, Mapping) else {}), **note}
        out.lines.append(dumps_line(rec))
        if rec.get("t") == "run" and clash is not None:
            out.lines.append(dumps_line(meta_record(new, {RECORDER_KEY: note})))
    out.summary = [{**r, "run_id": new} for r in group.summary]
    return out


def _common(a: bytes, ao: int, b: bytes, bo: int) -> int:
    """The length of the common prefix of ``a[ao:]`` and ``b[bo:]`` (halving: a dozen compares in C)."""
    view = memoryview(b)
    lo, hi = 0, min(len(a) - ao, len(b) - bo)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a.startswith(view[bo + lo : bo + mid], ao + lo):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _unshared(conn: sqlite3.Connection, line: bytes, cache: dict[int, bytes]) -> bytes:
    """A line as `Store._share` stored it (``\\x1e<blob>\\x1e<head>\\n``) made whole again: its head and its
    blob.  A blob that cannot be found leaves the line as it is (then read as a record that is not JSON)."""
    sep = line.find(b"\x1e", 1)
    try:
        body = _blob(conn, int(line[1:sep]), cache)
    except ValueError:
        return line
    return line if body is None else line[sep + 1 : -1] + body


def _blob(conn: sqlite3.Connection, bid: int, cache: dict[int, bytes]) -> bytes | None:
    """A blob's bytes: its base's first ``keep`` bytes and its body, down the chain of bases (each
    older than the blob that names it); ``cache``: blobs made already (a run's lines refer to the last
    few)."""
    chain: list[tuple[int, int, bytes]] = []
    data = b""
    while True:
        if bid in cache:
            data = cache[bid]
            break
        row = conn.execute("SELECT base, keep, body FROM blobs WHERE id = ?", (bid,)).fetchone()
        if row is None:
            return None
        chain.append((bid, int(row[1]), bytes(row[2])))
        base = row[0]
        if base is None:
            break
        if not 0 < base < bid:
            return None  # damaged: a chain only ever points back
        bid = int(base)
    if len(cache) > 64:
        cache.clear()
    for cid, keep, body in reversed(chain):
        data = data[:keep] + body
        cache[cid] = data
    return data


def _group(lines: Sequence[bytes]) -> tuple[dict[str, _Group], int]:
    """Lines grouped by run, and how many were skipped (not a record with a run id and a type).

    A line as the recorder writes it (``{"v":1,"t":"step","run_id":"...",``) is read by its head
    alone: a step or error line only counts; the rest are decoded.
    """
    groups: dict[str, _Group] = {}
    skipped = 0
    # The head of a step line of the last run a step was seen of: most lines of a batch match it.
    step_head = b"\x00"
    step_group = _Group()
    for line in lines:
        if line.startswith(step_head):
            step_group.lines.append(line)
            step_group.steps += 1
            continue
        t: str | None = None
        rid = ""  # set with t below (read only once t is)
        rec: Any = None
        if line.startswith(_HEAD):
            end = line.find(b'"', 12)
            if line.startswith(_RUN_ID, end + 1):
                q = line.find(b'"', end + 12)
                raw = line[end + 12 : q]
                if q > 0 and b"\\" not in raw:
                    t, rid = line[12:end].decode("utf-8", "replace"), raw.decode("utf-8", "replace")
        if t is None or t in _SUMMARY_TYPES:
            try:
                rec = loads(line)
                t, rid = rec["t"], rec["run_id"]
            except (ValueError, TypeError, KeyError):
                skipped += 1
                continue
            if t is None or rid is None or not isinstance(rec, Mapping):
                skipped += 1
                continue
            t, rid = str(t), str(rid)
        group = groups.get(rid) or groups.setdefault(rid, _Group())
        group.lines.append(line)
        if t == "step":
            group.steps += 1
            step_head, step_group = b'{"v":1,"t":"step","run_id":"' + rid.encode() + b'"', group
        elif t == "error":
            group.errors += 1
        elif t in _SUMMARY_TYPES and rec is not None:
            group.summary.append(rec)
            group.starts = group.starts or t == "run"
    return groups, skipped


def _summarize(conn: sqlite3.Connection, key: int, r: Mapping[str, Any]) -> None:
    """Bring a run's row up to date with one of its run, meta, mark or end records."""
    t = r.get("t")
    metadata = r.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    if t == "run":
        name = r.get("name")
        start = r.get("start_ns")
        conn.execute(
            "UPDATE runs SET name = ?, start_ns = ?, note = coalesce(?, note) WHERE key = ?",
            (name if isinstance(name, str) else "", start if type(start) is int else None, run_note(metadata), key),
        )
    elif t == "meta":
        note = run_note(metadata)
        if note:
            conn.execute("UPDATE runs SET note = ? WHERE key = ?", (note, key))
        if RECORDER_KEY in metadata:
            # The recorder's running account (records dropped under load so far).
            conn.execute("UPDATE runs SET lost = ? WHERE key = ?", (lost_in(metadata[RECORDER_KEY]), key))
    elif t == "mark":
        marked = r.get("outcome")
        reason = r.get("failure_reason")
        conn.execute(
            "UPDATE runs SET outcome = ?, failure_reason = ? WHERE key = ?",
            (marked if marked in ("success", "failure") else "failure", reason if isinstance(reason, str) else None, key),
        )
    elif t == "end":
        end = r.get("end_ns")
        outcome = r.get("outcome")
        reason = r.get("failure_reason")
        conn.execute(
            "UPDATE runs SET end_ns = ?, outcome = ?, failure_reason = ?, lost = ? WHERE key = ?",
            (
                end if type(end) is int else None,
                outcome if outcome in ("success", "failure", "incomplete") else "incomplete",
                reason if isinstance(reason, str) else None,
                lost_in(r.get(RECORDER_KEY)),
                key,
            ),
        )


def _upgrade_v1(conn: sqlite3.Connection) -> None:
    """Upgrade a store of schema version 1 in place (inside the caller's write transaction).

    The ``runs`` table is rebuilt with an integer key per run and the records each run lost; the
    ``records`` rows stay as they are and are read before the run's chunks.
    """
    runs, *rest = _SCHEMA.split(";")
    conn.execute(runs.replace("runs (", "runs_v2 (", 1))
    conn.execute(f"INSERT INTO runs_v2 ({_RUN_COLUMNS}) SELECT {_RUN_COLUMNS} FROM runs ORDER BY rowid")
    for rid, body in conn.execute(
        "SELECT run_id, body FROM records WHERE seq IN (SELECT max(seq) FROM records WHERE type = 'end' GROUP BY run_id)"
    ).fetchall():
        if RECORDER_KEY in body:
            try:
                n = lost_in(loads(body).get(RECORDER_KEY))
            except (ValueError, AttributeError):
                continue
            conn.execute("UPDATE runs_v2 SET lost = ? WHERE run_id = ?", (n, rid))
    conn.execute("DROP TABLE runs")
    conn.execute("ALTER TABLE runs_v2 RENAME TO runs")
    for stmt in rest:
        if stmt.strip():
            conn.execute(stmt)
    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


def _reason(exc: BaseException) -> str:
    """An SQLite error in words a user can act on."""
    text = str(exc)
    low = text.lower()
    if "readonly" in low or "read-only" in low:
        return f"cannot write here ({text})"
    if "unable to open" in low:
        return f"cannot open the file ({text}; does its folder exist and may it be written?)"
    if "malformed" in low or "not a database" in low:
        return f"the file is damaged ({text})"
    return text


__all__ = [
    "SCHEMA_VERSION",
    "RunSummary",
    "Store",
    "append_spill",
    "StoreBusyError",
    "StoreError",
    "ambiguous_prefix",
    "default_store_path",
    "is_store",
    "spill_path",
]
