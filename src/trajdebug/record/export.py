"""A run's export: the writer thread's side of one run (drain its queue, encode, process, write).

The run (`trajdebug.record.runs.RunHandle`) is what the agent's threads touch:
they append finished steps and ready-made records to its queue.  Its
`RunExport` is what the writer thread (`trajdebug.record.writer`) services:
it takes a bounded batch from the queue, turns each item into records
(`trajdebug.record.tracking.Tracker`: tracking, redaction, size caps), passes
them through the run's processors (`trajdebug.record.processors`), encodes each
record once to a JSON line and hands the lines to every sink's `Slot`.

The queue holds six kinds of item (`QueueItem`): a finished step, a
ready-made record (an error, a stage, metadata), the run's start, a trace
message, the run's end and a flush marker.  Each has its own handler.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from trajdebug.core import codec as _codec
from trajdebug.core.codec import dumps_line
from trajdebug.core.schema import RECORDER_KEY, end_record, meta_record
from trajdebug.record import hooks as _hooks
from trajdebug.record import ledger as _ledger
from trajdebug.record.account import Account
from trajdebug.record.config import CONFIG
from trajdebug.record.env import environment_snapshot
from trajdebug.record.processors import Processors, Record, RunView
from trajdebug.record.recorder import StepHandle
from trajdebug.record.tracking import Trace, Tracker
from trajdebug.record.writer import WRITER, Flush, Slot


if TYPE_CHECKING:
    from trajdebug.record.runs import RunHandle


log = logging.getLogger("trajdebug")


_LINE: Callable[[Any], bytes] | None = (
    None if _codec._orjson is None
    else partial(_codec._orjson.dumps, default=_codec._default, option=_codec._orjson.OPT_APPEND_NEWLINE)
)
"""`dumps_line` without its fallback, a C callable: a batch of records is encoded by one ``map`` with no
Python call per record (`_lines`); a batch where it raises is encoded again by `dumps_line`."""


def _lines(records: list[Record]) -> list[bytes]:
    """The records encoded as JSON lines, each as `dumps_line` encodes it."""
    if _LINE is not None:
        try:
            return list(map(_LINE, records))
        except Exception:  # noqa: BLE001 - a record orjson refuses: `dumps_line` rebuilds it
            pass
    return [dumps_line(r) for r in records]


class End:
    """The run's end, queued behind its last steps (the writer builds the ``end`` record from it)."""

    __slots__ = ("end_ns", "flush", "outcome", "reason")

    def __init__(self, end_ns: int | None, outcome: str | None, reason: str | None) -> None:
        self.end_ns = end_ns
        self.outcome = outcome
        self.reason = reason
        self.flush = Flush()


class RunStart:
    """The run's first record, queued; the writer adds the environment snapshot to its metadata."""

    __slots__ = ("record",)

    def __init__(self, record: Record) -> None:
        self.record = record


QueueItem = StepHandle | Record | RunStart | Trace | End | Flush
"""What a run's queue holds."""


class _Batch:
    """What one service round took from the queue."""

    __slots__ = ("done_bytes", "n", "reached", "records", "steps")

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.reached: list[End | Flush] = []
        self.n = 0
        self.steps = 0
        """Steps taken from the queue (for the run's ledger, `trajdebug.record.ledger`)."""
        self.done_bytes = 0


class RunExport:
    """The writer thread's side of one run: its sinks, its processors, its encoder."""

    __slots__ = ("_handlers", "acct", "ended", "final", "lock", "processors", "run", "slots", "tracker")

    def __init__(self, run: RunHandle, acct: Account, slots: list[Slot]) -> None:
        self.run = run
        self.acct = acct
        self.slots = slots
        self.processors = Processors(())
        """Chosen at the run's start (`trajdebug.record.rollout`); none for plain recording."""
        self.tracker: Tracker | None = None
        self.lock = threading.RLock()
        """Held while servicing: one thread at a time writes this run's sinks."""
        self.ended: float | None = None
        """When the writer reached the run's end (monotonic seconds)."""
        self.final = False
        """The run was written and its sinks closed."""
        self._handlers: dict[type, Callable[[Any, _Batch], None]] = {
            dict: self._record, RunStart: self._start, tuple: self._trace, End: self._end, Flush: self._flush,
        }

    def start(self) -> None:
        """The run starts: its encoder, with the processors that rewrite records."""
        rewrite = self.processors.on_record if self.processors.rewriting else None
        self.tracker = Tracker(self.run.run_id, self.acct, rewrite)

    # -- one round ------------------------------------------------------------------------

    def service(self) -> int:
        """Writer thread: encode up to ``max_batch`` queued items and write them.

        Returns:
            0 when idle, 1 when more is queued, 2 when a sink holds records for a retry.
        """
        if not self.lock.acquire(blocking=False):
            return 1
        try:
            return self._service_locked()
        finally:
            self.lock.release()

    def _service_locked(self) -> int:
        run = self.run
        q = run._queue
        batch = self._drain(q)
        if batch.done_bytes:
            # Only this thread writes _max_bytes: the agent's check stays "queued bytes < budget".
            run._max_bytes += batch.done_bytes
        self._bound_backlog(batch.n, bool(q))
        records = batch.records
        step_drops = _ledger.drops(run)  # read before the drop count below, so it never counts more
        dropped = self.acct.lost_by["dropped"]
        if dropped != self.acct.on_disk and records and not run._joined:
            # What was dropped is on disk with the next batch, not only in the end record: a run
            # killed under load still says how many finished steps it never wrote.
            self.acct.on_disk = dropped
            records.append(self._tracked().record(meta_record(run.run_id, {RECORDER_KEY: self.account()})))
        wrote = self._write(records)
        _ledger.settle(run, batch.steps, step_drops, bool(records) and run._hold is None)
        clean = self._settle(batch.reached, wrote)
        if q:
            return 1
        if not clean:
            return 2
        if self.ended is not None and time.monotonic() - self.ended >= CONFIG.late_grace:
            self.finalize()
        return 0

    def _drain(self, q: deque[QueueItem]) -> _Batch:
        """Take up to ``max_batch`` items from the queue, each into records (or a marker reached)."""
        batch = _Batch()
        records = batch.records
        tracker = self._tracked()
        encode = tracker.encode
        handlers = self._handlers
        limit = CONFIG.max_batch
        # A batch is also bounded in time (a quarter of the flush interval), so that under
        # GIL contention with a busy agent a write still happens at least every interval.
        deadline = time.monotonic() + CONFIG.flush_interval / 4
        after_end = self.ended is not None
        # The commonest step's record in one call (`Tracker.plain`), unless every record is rewritten
        # (summary mode) or the step came after the run's end (both marked by `encode`).
        plain = tracker.plain if tracker.rewrite is None and not after_end else None
        snapped = tracker.snapped
        append = records.append
        n = steps = 0
        tracker.batch(q)
        while q and n < limit:
            if not n & 127 and n and time.monotonic() > deadline:
                break
            item = q.popleft()
            n += 1
            if item.__class__ is StepHandle:
                # The common item, handled inline (a call per step would show in the cost per step).
                steps += 1
                try:
                    if item._in is None and item._out is None:
                        if plain is not None:
                            rec = plain(item)
                            if rec is not None:
                                append(rec)  # a text in and out: no snapshot bytes to count
                                continue
                        tracker.at = n - 1  # the item's position (`Tracker.batch`)
                    else:
                        if item._in is not None:
                            batch.done_bytes += len(item._in)
                        if item._out is not None:
                            batch.done_bytes += len(item._out)
                        tracker.at = n - 1
                        if plain is not None:
                            # A snapshotted structure (a chat request) without extras (`Tracker.snapped`).
                            rec = snapped(item)
                            if rec is not None:
                                append(rec)
                                continue
                    records += encode(item, after_end)
                except Exception as exc:  # noqa: BLE001 - a step is never lost for a field
                    records += tracker.unencodable(item, exc)
            else:
                handle = handlers.get(item.__class__)
                if handle is not None:
                    handle(item, batch)
        tracker.batch(None)
        batch.n = n
        batch.steps = steps
        return batch

    def _tracked(self) -> Tracker:
        if self.tracker is None:  # pragma: no cover - started before the run registers with the writer
            self.start()
        assert self.tracker is not None
        return self.tracker

    # -- the items besides steps -------------------------------------------------------------

    def _record(self, item: Record, batch: _Batch) -> None:
        batch.records.append(self._tracked().record(item))

    def _start(self, item: RunStart, batch: _Batch) -> None:
        md = item.record["metadata"]
        if "env" not in md:
            md["env"] = environment_snapshot(md, time_ns=self.run.start_ns)
        batch.records.append(self._tracked().record(item.record))

    def _trace(self, item: Trace, batch: _Batch) -> None:
        self._tracked().handle(item)

    def _end(self, item: End, batch: _Batch) -> None:
        run = self.run
        if self.processors:
            view = RunView(run.run_id, run.name, item.outcome, run._joined, self.account(), len(run._errors))
            batch.records += [self._tracked().record(r) for r in self.processors.on_end(view)]
        if not run._joined:
            batch.records.append(self._end_record(item))
        batch.reached.append(item)

    def _flush(self, item: Flush, batch: _Batch) -> None:
        batch.reached.append(item)

    def _end_record(self, end: End) -> Record:
        tracker = self._tracked()
        reason = None if end.reason is None else tracker.text(end.reason)
        rec = end_record(self.run.run_id, end.end_ns, end.outcome or "success", reason, self.account())
        return self.processors.on_record(rec)

    # -- writing --------------------------------------------------------------------------------

    def _write(self, records: list[Record]) -> bool:
        """Encode the records once and hand the lines to every sink (through the processors); whether
        anything was handed on."""
        slots = self.slots
        wrote = False
        if records:
            # Each record is encoded once; every sink (and the hook thread) gets the same bytes.
            lines = _lines(records)
            if _hooks.HOOKS:
                _hooks.feed(self.run, lines)
            if not self.processors:
                wrote = True
                for slot in slots:
                    slot.write(self.acct, lines)
            else:
                # Tail sampling: the lines are held until the run's end decides; then written in bounded batches.
                for batch in self.processors.on_lines(lines):
                    wrote = True
                    for slot in slots:
                        slot.write(self.acct, batch)
        if not wrote:
            for slot in slots:
                slot.flush(self.acct)
        return wrote

    def _settle(self, reached: list[End | Flush], wrote: bool) -> bool:
        """Tell whoever waits on a marker reached in this round; whether every sink is clean."""
        clean = not any(slot.pending for slot in self.slots)
        waiting = self.acct.waiting
        for m in reached:
            if m.__class__ is End:
                assert isinstance(m, End)
                self.ended = time.monotonic()
                m.flush.done(clean)
            elif clean:
                m.done(True)  # type: ignore[union-attr]
            else:
                waiting.append(m)  # type: ignore[arg-type]
        if clean and waiting:
            for w in waiting:
                w.done(True)
            waiting.clear()
        return clean

    def _bound_backlog(self, n: int, backlogged: bool) -> None:
        """Size the queue to what the writer drains in ``backlog_seconds`` (0.1 s by default), so a SIGKILL under any load
        loses at most that much of finished steps (the rest are dropped and counted on disk).  The
        drain rate is measured only while the writer is backlogged; a run that never backlogs it (an
        agent waiting on models and tools) keeps the full `max_buffer` for its bursts.
        """
        now = time.monotonic()
        acct = self.acct
        elapsed, acct.serviced = now - acct.serviced, now
        window = CONFIG.backlog_seconds
        if self.final or not backlogged or window is None:
            return
        if n and 0 < elapsed < 1.0:
            rate = n / elapsed
            acct.drain = rate if not acct.drain else 0.7 * acct.drain + 0.3 * rate
            self.run._max_buffer = min(CONFIG.max_buffer, max(CONFIG.max_batch, int(acct.drain * window)))

    # -- the run's account ------------------------------------------------------------------------

    def account(self) -> dict[str, object]:
        """The recorder's account of this run so far (what goes into the ``end`` record's ``recorder`` field)."""
        red = self.tracker.redactor if self.tracker is not None else None
        return self.acct.summary(red.counts if red is not None else None)

    # -- the end ------------------------------------------------------------------------------------

    def mark(self) -> Flush:
        """Queue a flush marker (set once the writer has written everything queued before it)."""
        marker = Flush()
        if self.final:
            # Written to its end already: a flush that raced with the final write (the writer finalized
            # the run between flush's snapshot and this marker) has nothing to wait for.
            marker.done(True)
            return marker
        self.run._queue.append(marker)
        return marker

    def finalize(self) -> None:
        """Close the sinks and release what the run held; later steps are counted as lost."""
        self.final = True
        run = self.run
        run._final = True
        run._max_buffer = -1  # every later append goes through _full, which counts it
        WRITER.unregister(self)
        _ledger.release(run)  # written to its end: nothing left for a ledger to say
        for slot in self.slots:
            slot.close(self.acct)
        if self.tracker is not None:
            self.tracker.release()
        self.sweep_late()

    def sweep_late(self) -> None:
        """Count steps that reached the queue after the run was written (a race with `finalize`)."""
        q = self.run._queue
        n = 0
        while q:
            item = q.popleft()
            if item.__class__ is StepHandle:
                n += 1
            elif item.__class__ is Flush:
                item.done(True)  # queued as the run was finalized: everything before it is written
        if n:
            self.run._after_end(n)

    def forked(self) -> None:
        """In a forked child: the parent writes what was queued; the child starts empty."""
        self.run._queue.clear()
        for slot in self.slots:
            slot.pending.clear()

    def incomplete_at_exit(self) -> None:
        """The interpreter exits with the run still open: the processors' last records are queued."""
        with self.lock:
            for rec in self.processors.on_exit():
                self.run._queue.append(rec)

    def internal_error(self, where: str) -> None:
        """The recorder failed at ``where`` (counted; the agent is not affected)."""
        self.acct.internal_error(where)


@atexit.register
def _release_at_exit() -> None:
    # Registered after the writer's own exit flush (this module imports the writer), so it runs
    # first (atexit is last in, first out): write what is queued into the holds, decide the runs
    # still open as incomplete, write.
    try:
        pending = [e for e in WRITER.serviced() if e.processors.pending]
        if not pending:
            return
        WRITER.flush_all(CONFIG.exit_timeout)
        for export in pending:
            export.incomplete_at_exit()
        WRITER.flush_all(CONFIG.exit_timeout)
    except Exception:
        log.debug("trajdebug: releasing sampled runs at exit failed", exc_info=True)


__all__ = ["End", "QueueItem", "RunExport", "RunStart", "Trace"]
