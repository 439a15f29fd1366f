"""Sinks (where records go) and the background writer that feeds them.

The agent's threads only append finished step handles to a per-run deque (an
atomic, lock-free operation in CPython); one daemon thread turns them into
records and hands batches to the sinks.  A sink that raises is counted and
reported once as a warning; it never raises into the agent.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from trajdebug._encode import dumps


if TYPE_CHECKING:
    from trajdebug.record.runs import RunHandle as ActiveRun

log = logging.getLogger("trajdebug")


@runtime_checkable
class Sink(Protocol):
    """**Protocol:** somewhere to write records."""

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Write a batch of records (called from the writer thread)."""

    def close(self) -> None:
        """Flush and release resources at the end of the run."""


class JsonlSink:
    """Append records to a JSON Lines file.

    Each batch is one ``write`` on a file opened with ``O_APPEND``, so several
    processes may append to one file without interleaving inside a line.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fd: int | None = None

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Append the batch."""
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        data = b"".join(dumps(r) + b"\n" for r in records)
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self) -> None:
        """Close the file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class StoreSink:
    """Write records to a `trajdebug.store.Store`."""

    def __init__(self, store: Any) -> None:
        from trajdebug.store import Store

        self.store = store if isinstance(store, Store) else Store(store)

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Insert the batch in one transaction."""
        self.store.write_records(records)

    def close(self) -> None:
        """Close the writer thread's connection."""
        self.store.close()


class MemorySink:
    """Keep records in memory (tests, `trajdebug.testing.capture_runs`)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def write(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Keep copies of the batch."""
        self.records.extend(dict(r) for r in records)

    def close(self) -> None:
        """Nothing to release."""


def make_sink(target: Any) -> Sink:
    """Turn a store object, a sink, or a path (``.jsonl`` -> JSONL, else SQLite) into a sink."""
    if isinstance(target, Sink):
        return target
    from trajdebug.store import Store

    if isinstance(target, Store):
        return StoreSink(target)
    p = Path(target)
    if p.suffix in (".jsonl", ".ndjson", ".json"):
        return JsonlSink(p)
    return StoreSink(p)


class Writer:
    """The one background thread that drains every active run's buffer."""

    def __init__(self) -> None:
        self._runs: weakref.WeakSet[ActiveRun] = weakref.WeakSet()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def register(self, run: ActiveRun) -> None:
        """Start servicing a run (starts the thread on first use, and again after a fork)."""
        with self._cond:
            self._runs.add(run)
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._loop, name="trajdebug-writer", daemon=True)
                self._thread.start()

    def unregister(self, run: ActiveRun) -> None:
        """Stop servicing a run (after its final flush)."""
        with self._cond:
            self._runs.discard(run)

    def wake(self) -> None:
        """Ask for an early flush (a buffer is filling up)."""
        with self._cond:
            self._cond.notify()

    def _loop(self) -> None:
        from trajdebug.record.config import CONFIG

        while True:
            with self._cond:
                self._cond.wait(CONFIG.flush_interval)
                runs = list(self._runs)
            for run in runs:
                run.drain()

    def flush_all(self) -> None:
        """Drain every active run now (interpreter exit)."""
        for run in list(self._runs):
            run.drain()


WRITER = Writer()


@atexit.register
def _flush_at_exit() -> None:
    # Runs still open at exit (a script that never closed its run) keep what
    # they recorded; they read back as incomplete.
    try:
        WRITER.flush_all()
    except Exception:
        log.debug("trajdebug: flush at exit failed", exc_info=True)
