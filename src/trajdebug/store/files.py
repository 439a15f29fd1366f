"""The store's files: where it lives, creating it, opening connections to it, and its spill file.

A new store is built aside and linked into place (`create`), so no process ever sees a half-made
file; a connection for writing is switched to WAL mode with a bounded ``journal_size_limit``
(`connect`), one for reading opens the file read-only, or immutable on a read-only file system
(`connect_readonly`).  The spill file beside a store (`spill_path`) holds the records of a process
that exited while the store stayed locked.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from trajdebug.store.lines import _renamed_line
from trajdebug.store.schema import _SCHEMA, PAGE_SIZE, SCHEMA_VERSION, WAL_SIZE_LIMIT, StoreBusyError


DEFAULT_STORE = "trajdebug.db"


def default_store_path() -> Path:
    """The default store: ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``."""
    return Path(os.environ.get("TRAJDEBUG_STORE") or DEFAULT_STORE)


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


def connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection for writing, in WAL mode, waiting up to ``timeout`` seconds for another writer's lock.

    Raises:
        StoreBusyError: the file could not be switched to WAL mode within ``timeout`` (another
            process holds a lock or is creating it).
        sqlite3.OperationalError: the file cannot be opened or written.
    """
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
    # Switching a new file to WAL needs an exclusive lock, and SQLite may
    # report BUSY or an I/O error there without calling the busy handler
    # while another process creates the same file: retry for a while.
    deadline = time.monotonic() + timeout
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            if str(mode).lower() == "wal":
                break
            # Another connection holds a lock: the mode did not change yet.
            if time.monotonic() > deadline:
                raise StoreBusyError(f"{path}: cannot switch to WAL mode yet (journal mode is {mode})")
            time.sleep(min(0.02, max(timeout / 4, 0.001)))
        except sqlite3.OperationalError as exc:
            if time.monotonic() > deadline:
                text = str(exc).lower()
                if "readonly" in text or "read-only" in text or "unable to open" in text:
                    raise
                # BUSY, or an I/O error while another process creates the file: it passes.
                raise StoreBusyError(f"{path}: not ready yet ({exc})") from None
            time.sleep(min(0.02, max(timeout / 4, 0.001)))
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
    return conn


def connect_readonly(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection that only reads (a store on a read-only file system is opened as immutable)."""
    uri = path.resolve().as_uri()
    try:
        conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=timeout, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA user_version").fetchone()
        return conn
    except sqlite3.OperationalError:
        # A WAL store on a read-only file system: SQLite cannot create the
        # shared-memory file; nobody can write there either, so it may read
        # the file as immutable.
        conn = sqlite3.connect(f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA user_version").fetchone()
        return conn


def log_files(path: Path) -> tuple[Path, Path]:
    """The write-ahead log and shared-memory files SQLite keeps beside a WAL store (``-wal``, ``-shm``)."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def tidy_log_files(path: Path) -> None:
    """Remove the ``-wal`` and ``-shm`` files a read-only connection left beside a store it found without them.

    A read-only connection to a WAL store creates both and, unable to write, cannot remove them when it closes:
    every store a command only read stayed with two extra files (nu25).  A connection that may write removes
    them when it closes as the store's last connection (SQLite checks that under its own lock: another process
    reading or writing the store keeps them), so one is opened, told to make no change, and closed.  Nothing
    happens on a store that cannot be written (a read-only mount: SQLite could not have created them there), nor
    on one no longer at ``path``."""
    if not any(f.exists() for f in log_files(path)):
        return
    try:
        # mode=rw never creates the store: one renamed or removed while it was read (log rotation, `mv`) leaves
        # no empty file in its place, which every command would then refuse to read (rev52w M3).
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", timeout=0.1, isolation_level=None, uri=True)
    except sqlite3.Error:
        return
    try:
        conn.execute("PRAGMA query_only=1")
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone()
    except sqlite3.Error:
        pass
    finally:
        conn.close()


def create(path: Path) -> None:
    """Create a new store atomically: build it aside, then link it into place.

    Two processes creating one SQLite file and switching it to WAL at the
    same moment can corrupt it ("database disk image is malformed"), so the
    file is complete (schema, WAL mode) before it appears under its name;
    whoever links first wins and the other opens that file.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
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
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        # Clean-up must never hide the reason the store could not be made.
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(f"{tmp}{suffix}")
            except OSError:
                pass
