"""The background writer: one daemon thread that turns queued steps into records and writes them.

The agent's threads only append finished step handles (and ready-made
records) to a per-run deque, a lock-free operation in CPython.  Everything
that costs time or may wait happens here: building records, dependency
tracking, redaction, opening sinks, waiting for a locked store.

Durability, as a rule the tests and ``benchmarks/`` check:

* The thread wakes twice per ``flush_interval`` (0.1 s) and writes in batches
  of at most ``max_batch`` records, so while it keeps up a finished step is on
  disk (in the OS, safe from the process being killed) within the interval,
  and under any load a write happens at least that often.  When the agent
  produces faster than the thread can encode, the queue grows up to
  ``max_buffer`` and what waits there is what a SIGKILL can lose.
* A write that fails for a reason that may pass (a locked store, a full disk)
  keeps its batch and is retried on the next round; the agent is never made
  to wait for it.  Any other failure marks that sink failed: its records are
  counted as lost and named in one warning (with the path and the reason).
* `Flush` markers let a caller wait until everything queued before it was
  written (`trajdebug.record.runs.RunHandle.flush`, a run's end, the
  interpreter's exit), each with a bound.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from trajdebug.record.account import Losses
from trajdebug.record.config import CONFIG
from trajdebug.record.sinks import Lines, LineSink, Sink, describe, is_transient


if TYPE_CHECKING:
    from trajdebug.record.export import RunExport


log = logging.getLogger("trajdebug")


class Flush:
    """A marker in a run's queue: set once everything queued before it was handed to the sinks."""

    __slots__ = ("clean", "event")

    def __init__(self) -> None:
        self.event = threading.Event()
        """Set when the writer reached the marker."""
        self.clean = False
        """Whether every sink had written everything by then (False: some is still being retried)."""

    def done(self, clean: bool) -> None:
        """The writer reached the marker."""
        self.clean = clean
        self.event.set()

    def wait(self, timeout: float | None) -> bool:
        """Wait for the writer; True when it reached the marker with nothing left to retry."""
        return self.event.wait(timeout) and self.clean


class Slot:
    """One sink of one run as the writer sees it: records (encoded lines) waiting for a retry, and whether
    it failed."""

    __slots__ = ("dead", "lines", "pending", "sink", "stalled")

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.lines = getattr(sink, "takes_lines", False) is True
        """The sink takes the encoded lines; others get them as mappings (`Lines`)."""
        self.pending: list[bytes] = []
        self.dead = False
        self.stalled = False
        if hasattr(sink, "on_busy"):
            busy: Callable[[], None] = self._busy
            sink.on_busy = busy

    def _busy(self) -> None:
        # The store is locked: whoever waits for this write (a run's end) stops waiting now.
        self.stalled = True

    def write(self, account: Losses, records: list[bytes]) -> None:
        """Queue a batch (records encoded as JSON lines) for this sink and try to write everything it holds;
        what cannot be written is reported to ``account`` (the run's)."""
        if self.dead:
            account.lost("unwritable", len(records))
            return
        self.pending.extend(records)
        self.flush(account)

    def flush(self, account: Losses) -> bool:
        """Try to write the pending records; True when nothing is left to retry."""
        if self.dead or not self.pending:
            return True
        try:
            if self.lines:
                skipped = cast(LineSink, self.sink).write(self.pending)
            else:
                skipped = self.sink.write(Lines(self.pending))
        except BaseException as exc:  # noqa: BLE001 - a sink raising SystemExit must not kill the writer
            written = getattr(exc, "written", 0)
            if isinstance(written, int) and written > 0:
                del self.pending[:written]
            if is_transient(exc):
                overflow = len(self.pending) - CONFIG.max_buffer
                if overflow > 0:
                    account.lost("unwritable", overflow)
                    del self.pending[:overflow]
                if not self.stalled:
                    self.stalled = True
                    log.info("trajdebug: %s is busy (%s); retrying run %s in the background", describe(self.sink), exc, account.run_id)
                return False
            self.dead = True
            lost = len(self.pending)
            self.pending.clear()
            account.sink_failed(self.sink, exc, lost)
            return True
        self.stalled = False
        if isinstance(skipped, int) and not isinstance(skipped, bool) and skipped > 0:
            # A sink may name its own cause (an exporter's full queue: "export_dropped").
            account.lost(getattr(self.sink, "loss_kind", "unencodable"), skipped)
        self.pending.clear()
        return True

    def close(self, account: Losses) -> None:
        """Release the sink (records still pending are counted as lost)."""
        if self.pending:
            account.lost("unwritable", len(self.pending))
            account.warn_once(
                f"trajdebug: {describe(self.sink)} stayed unavailable; records of run {account.run_id} were lost"
            )
            self.pending.clear()
        try:
            self.sink.close()
        except BaseException as exc:  # noqa: BLE001
            if not self.dead:
                account.sink_failed(self.sink, exc, 0)


class Writer:
    """The one background thread that services every run being written (each through its `RunExport`)."""

    def __init__(self) -> None:
        self._runs: list[RunExport] = []
        self._sweep: list[tuple[float, RunExport]] = []
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._kick = False

    # -- registration ------------------------------------------------------------------

    def register(self, run: RunExport) -> None:
        """Start servicing a run (starts the thread on first use, and again after a fork)."""
        with self._cond:
            if run not in self._runs:
                self._runs.append(run)
            self._ensure()

    def _ensure(self) -> bool:
        # Caller holds the condition.
        if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
            self._pid = os.getpid()
            try:
                self._thread = threading.Thread(target=self._loop, name="trajdebug-writer", daemon=True)
                self._thread.start()
            except RuntimeError:  # interpreter shutting down: callers service inline
                self._thread = None
                return False
        return True

    def unregister(self, run: RunExport) -> None:
        """Stop servicing a run (after its final write); late steps are still watched for a while."""
        with self._cond:
            try:
                self._runs.remove(run)
            except ValueError:
                pass
            self._sweep.append((time.monotonic() + 2.0, run))

    def serviced(self) -> list[RunExport]:
        """The runs being written now."""
        with self._cond:
            return list(self._runs)

    def wake(self) -> None:
        """Ask for a round now (a buffer is filling up, someone waits for a flush)."""
        with self._cond:
            self._kick = True
            self._cond.notify()

    def on_writer_thread(self) -> bool:
        """Whether the caller is the writer thread itself."""
        return threading.current_thread() is self._thread

    def alive(self) -> bool:
        """Whether the thread runs (it may not, at interpreter exit); restarts it after a fork."""
        with self._cond:
            return self._ensure()

    # -- the loop ------------------------------------------------------------------------

    def _loop(self) -> None:
        self._warm_up()
        state = 0
        while True:
            with self._cond:
                if not self._kick:
                    if state == 2:
                        timeout: float | None = min(0.01, CONFIG.flush_interval / 2)  # a busy sink: retry soon
                    elif self._runs:
                        timeout = CONFIG.flush_interval / 2
                    else:
                        timeout = 1.0 if self._sweep else None
                    self._cond.wait(timeout)
                self._kick = False
                runs = list(self._runs)
            state = self.round(runs)
            if state == 1:
                self._kick = True

    @staticmethod
    def _warm_up() -> None:
        # What every first run needs and reads files for (package versions, the platform,
        # the redaction patterns), done while the agent runs its first steps.
        _raise_trim_threshold()
        try:
            from trajdebug.core import redaction
            from trajdebug.record.env import environment_snapshot

            environment_snapshot()
            redaction.redactor()
        except Exception:
            log.debug("trajdebug: writer warm-up failed", exc_info=True)

    def round(self, runs: list[RunExport]) -> int:
        """Service each run once (a bounded batch each).

        Returns:
            1 when some run has more queued, else 2 when some sink holds records for a
            retry, else 0.
        """
        busy = 0
        for run in runs:
            try:
                got = run.service()
                busy = 1 if 1 in (busy, got) else max(busy, got)
            except BaseException:  # noqa: BLE001 - the writer thread never dies
                try:
                    run.internal_error("writer")
                except BaseException:  # noqa: BLE001  # pragma: no cover
                    pass
        if self._sweep:
            now = time.monotonic()
            with self._cond:
                sweep, self._sweep = self._sweep, [(t, r) for t, r in self._sweep if t > now]
            for _, run in sweep:
                try:
                    run.sweep_late()
                except BaseException:  # noqa: BLE001  # pragma: no cover
                    pass
        return busy

    def flush_all(self, timeout: float | None = None) -> bool:
        """Write everything queued by every run now, waiting at most ``timeout`` seconds in all.

        Returns:
            Whether everything was written (False: a sink is still being retried, or time ran out).
        """
        with self._cond:
            runs = list(self._runs)
        if not runs:
            return True
        markers = [run.mark() for run in runs]
        if self.on_writer_thread() or not self.alive():
            for _ in range(1000):
                if self.round(runs) != 1:
                    break
        else:
            self.wake()
        deadline = None if timeout is None else time.monotonic() + timeout
        ok = True
        for m in markers:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ok &= m.wait(left)
        return ok


_LARGE_FREE = 16 << 20
"""The block `_raise_trim_threshold` allocates and frees (bytes)."""


def _raise_trim_threshold() -> None:
    """Free one large block, as glibc's malloc needs to see once to stop giving a batch's memory back.

    A batch is a few megabytes of short-lived objects (up to `max_batch` records and their lines, each
    larger than what Python's small-object allocator takes, so each a ``malloc``).  glibc returns the
    free top of the heap to the system once it exceeds its trim threshold, 128 KiB until the process
    frees a block larger than that which it had mapped on its own; then the threshold becomes twice
    that block.  Until then every batch grows the heap again page by page (a system call and a
    zeroed page per few lines): measured, encoding a batch of 2,000 step lines cost 4-7 µs a line
    before and 0.3-0.5 µs after, a quarter of a 200-byte step's CPU into JSONL.  This is glibc's own
    rule, applied as after any large buffer a program frees (a file read whole); its memory cost is
    that up to twice the block of freed memory stays with the process.  A process that set its
    allocator's thresholds itself (``mallopt``, ``MALLOC_TRIM_THRESHOLD_``) keeps them: glibc then
    ignores the free; other allocators ignore it too.  ``bytes`` of zeros is allocated by ``calloc``,
    fresh mapped pages that are never touched: this costs two system calls.
    """
    try:
        block = bytes(_LARGE_FREE)
    except MemoryError:  # pragma: no cover - then batches cost what they did
        return
    del block


WRITER = Writer()
"""The process's writer."""


def flush(timeout: float | None = None) -> bool:
    """Write every run's queued records now, waiting at most ``timeout`` seconds (None: as long as it takes).

    Normally the writer thread writes within ``flush_interval``; call this before
    reading runs back in the same process, or before a fork or ``os._exit``.

    Returns:
        Whether everything queued was written (False: a store is locked or a sink
        is failing and the writer is still retrying, or time ran out).
    """
    return WRITER.flush_all(timeout)


def _reset_after_fork() -> None:
    # The child inherits the parent's queues: the parent writes those.  Runs
    # stay registered (steps the child records inside them are its own).
    for run in list(WRITER._runs):
        try:
            run.forked()
        except Exception:  # noqa: BLE001  # pragma: no cover
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


@atexit.register
def _flush_at_exit() -> None:
    # Runs still open at exit (a script that never closed its run) keep what
    # they recorded; they read back as incomplete.
    try:
        if not WRITER.flush_all(CONFIG.exit_timeout):
            _spill_at_exit()
    except Exception:
        log.debug("trajdebug: flush at exit failed", exc_info=True)
    from trajdebug.record import ledger

    ledger.at_exit()  # a clean exit says its own losses: its ledgers go


def _spill_at_exit() -> None:
    """Records a sink still holds for a retry when the process exits (a store locked all along) go to
    the sink's side file (`trajdebug.store.spill_path`), never silently nowhere."""
    with WRITER._cond:
        runs = [*WRITER._runs, *(r for _, r in WRITER._sweep)]
    for run in runs:
        # The run's lock keeps the writer thread off its sinks meanwhile (no record written twice).
        if not run.lock.acquire(timeout=1.0):
            continue
        try:
            for slot in run.slots:
                spill = getattr(slot.sink, "spill", None)
                if not slot.pending or spill is None:
                    continue
                try:
                    where = spill(slot.pending)
                except Exception as exc:  # noqa: BLE001 - then they are lost, and said so
                    log.warning("trajdebug: %d records of run %s were lost at exit (%s)", len(slot.pending), run.acct.run_id, exc)
                    continue
                log.warning(
                    "trajdebug: %s stayed locked; %d records of run %s were left in %s (merged into the store when"
                    " it is next written)", describe(slot.sink), len(slot.pending), run.acct.run_id, where,
                )
                slot.pending.clear()
        finally:
            run.lock.release()


__all__ = ["WRITER", "Flush", "Slot", "Writer", "flush"]
