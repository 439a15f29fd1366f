"""The store's SQL: its tables, its schema version, upgrading older stores, and its errors.

Version 1 kept a row per record (``records``); version 2 a row per batch (``chunks``) under an
integer run key; version 3 adds ``blobs`` (the package docstring says why each).  Older stores are
read as they are and upgraded here, under the write lock, when opened for writing.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from trajdebug.core.codec import loads
from trajdebug.core.schema import RECORDER_KEY, lost_in


SCHEMA_VERSION = 3
"""The store's schema version, kept in ``PRAGMA user_version`` (1: a row per record; 2: no ``blobs``;
both read as they are and upgraded when opened for writing)."""

PAGE_SIZE = 16384
"""The page size of a new store: a batch of records spans fewer pages (fewer writes to the log and
the file) than with SQLite's 4,096, while a small commit still writes little."""

WAL_SIZE_LIMIT = 32 * 1024 * 1024
"""Bytes the write-ahead log is truncated back to after a checkpoint (``journal_size_limit``)."""

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


class StoreError(RuntimeError):
    """The store file cannot be used (wrong schema version, not a trajdebug store)."""


class StoreBusyError(StoreError):
    """The store is locked by another connection right now (it may pass: retry later)."""

    transient = True


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


def write_schema(conn: sqlite3.Connection, found: int) -> None:
    """Create the tables of an empty store (``found`` 0), or upgrade one of schema version 1 or 2, under
    the write lock."""
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

