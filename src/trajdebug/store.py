"""The embedded run store: one SQLite file in WAL mode.

The store keeps the same records as the JSONL format (see `trajdebug.format`),
one row per record, plus a ``runs`` table for listing and filtering.  Loading a
run replays its records through the same `RunBuilder` the JSONL reader uses, so
a run reads the same from either.

Several processes may write one store at once: each batch is one short
``BEGIN IMMEDIATE`` transaction, WAL mode lets readers run beside the writer,
and a busy timeout makes writers queue instead of failing.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trajdebug._encode import dumps_str, loads
from trajdebug.format import RunBuilder, run_to_records
from trajdebug.model import Run


SCHEMA_VERSION = 1
"""The store's schema version, kept in ``PRAGMA user_version``."""

DEFAULT_STORE = "trajdebug.db"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    name TEXT NOT NULL DEFAULT '',
    start_ns INTEGER,
    end_ns INTEGER,
    outcome TEXT NOT NULL DEFAULT 'incomplete',
    failure_reason TEXT,
    steps INTEGER NOT NULL DEFAULT 0,
    errors INTEGER NOT NULL DEFAULT 0,
    note TEXT
);
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_run ON records (run_id, seq);
CREATE INDEX IF NOT EXISTS runs_start ON runs (start_ns);
"""


class StoreError(RuntimeError):
    """The store file cannot be used (wrong schema version, not a trajdebug store)."""


def default_store_path() -> Path:
    """The default store: ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``."""
    return Path(os.environ.get("TRAJDEBUG_STORE") or DEFAULT_STORE)


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

    def __init__(self, path: str | Path | None = None, *, timeout: float = 30.0) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        self._timeout = timeout
        self._local = threading.local()
        self._init()

    # Each thread gets its own connection: sqlite3 connections must not be
    # shared across threads without a lock, and a connection per thread keeps
    # the recorder's writer thread independent of readers.
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
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
                        raise StoreError(f"{self.path}: cannot switch to WAL mode (journal mode is {mode})")
                    time.sleep(0.02)
                except sqlite3.OperationalError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
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
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
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
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.unlink(f"{tmp}{suffix}")
                except FileNotFoundError:
                    pass

    def _init(self) -> None:
        # Never open() the database file ourselves here: closing any descriptor
        # of a file releases every POSIX lock this process holds on it, including
        # SQLite's, which silently loses other connections' writes.  SQLite
        # itself tells us when a file is not a database.
        if not self.path.exists():
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
        if version == 0:
            conn.execute("BEGIN IMMEDIATE")
            try:
                # Re-check under the write lock: another process may have created it.
                if conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                    for stmt in _SCHEMA.split(";"):
                        if stmt.strip():
                            conn.execute(stmt)
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        elif version != SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: store schema version {version} is not supported "
                f"(this trajdebug uses version {SCHEMA_VERSION})"
            )

    def close(self) -> None:
        """Close this thread's connection."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    # -- writing -----------------------------------------------------------

    def write_records(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append records (as written by the recorder) in one transaction."""
        if not records:
            return
        rows = [(str(r["run_id"]), str(r["t"]), dumps_str(r)) for r in records]
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT INTO records (run_id, type, body) VALUES (?, ?, ?)", rows)
            for r in records:
                self._update_summary(conn, r)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @staticmethod
    def _update_summary(conn: sqlite3.Connection, r: Mapping[str, Any]) -> None:
        t = r["t"]
        rid = str(r["run_id"])
        if t == "run":
            conn.execute(
                "INSERT INTO runs (run_id, name, start_ns, note) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET name=excluded.name, start_ns=excluded.start_ns, "
                "note=coalesce(excluded.note, runs.note)",
                (rid, r.get("name", ""), r.get("start_ns"), run_note(r.get("metadata") or {})),
            )
        elif t == "meta":
            note = run_note(r.get("metadata") or {})
            if note:
                conn.execute(
                    "INSERT INTO runs (run_id, note) VALUES (?, ?) ON CONFLICT(run_id) DO UPDATE SET note=excluded.note",
                    (rid, note),
                )
        elif t == "mark":
            conn.execute(
                "UPDATE runs SET outcome = ?, failure_reason = ? WHERE run_id = ?",
                (r.get("outcome", "failure"), r.get("failure_reason"), rid),
            )
        elif t == "end":
            conn.execute(
                "INSERT INTO runs (run_id, end_ns, outcome, failure_reason) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(run_id) DO UPDATE SET end_ns=excluded.end_ns, outcome=excluded.outcome, "
                "failure_reason=excluded.failure_reason",
                (rid, r.get("end_ns"), r.get("outcome", "incomplete"), r.get("failure_reason")),
            )
        elif t in ("step", "error"):
            col = "steps" if t == "step" else "errors"
            conn.execute(
                f"INSERT INTO runs (run_id, {col}) VALUES (?, 1) "
                f"ON CONFLICT(run_id) DO UPDATE SET {col}={col}+1",
                (rid,),
            )

    def mark_run(self, run_id: str, outcome: str, reason: str | None = None) -> str:
        """Record a verdict on a run after the fact (a ``mark`` record; the recorded outcome stays in its records).

        Returns:
            The run's full id.

        Raises:
            KeyError: no such run (a unique prefix is accepted).
        """
        import time

        from trajdebug.format import mark_record

        rid = self.resolve(run_id)
        self.write_records([mark_record(rid, outcome, reason, time.time_ns())])
        return rid

    def save_run(self, run: Run) -> None:
        """Store a whole run (an imported or replayed one)."""
        self.write_records(run_to_records(run))

    # -- reading -----------------------------------------------------------

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
        records for another run, see `run_note`) are left out.
        """
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
        sql = "SELECT run_id, name, start_ns, end_ns, outcome, failure_reason, steps, errors, note FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY start_ns DESC, rowid DESC"
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [RunSummary(*row) for row in self._conn().execute(sql, args)]

    def run_ids(self) -> list[str]:
        """All run ids, oldest first."""
        return [r[0] for r in self._conn().execute("SELECT run_id FROM runs ORDER BY start_ns, rowid")]

    def load_run(self, run_id: str) -> Run:
        """Load one run.

        Raises:
            KeyError: no such run; a unique prefix of a run id is accepted.
        """
        rid = self.resolve(run_id)
        builder = RunBuilder(f"{self.path} (run {rid})")
        rows = self._conn().execute("SELECT seq, body FROM records WHERE run_id = ? ORDER BY seq", (rid,))
        for seq, body in rows:
            builder.add(loads(body), line=seq)
        runs = builder.runs()
        return runs[0]

    def load_runs(self, run_ids: Iterable[str] | None = None) -> list[Run]:
        """Load several runs (all of them by default), oldest first."""
        ids = list(run_ids) if run_ids is not None else self.run_ids()
        return [self.load_run(r) for r in ids]

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
            r"SELECT run_id FROM runs WHERE run_id LIKE ? ESCAPE '\' LIMIT 2", (like,)
        ).fetchall()
        if len(rows) == 1:
            return str(rows[0][0])
        if not rows:
            raise KeyError(f"{self.path}: no run {run_id!r}")
        raise KeyError(f"{self.path}: run id prefix {run_id!r} is ambiguous")

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["SCHEMA_VERSION", "RunSummary", "Store", "StoreError", "default_store_path", "is_store"]
