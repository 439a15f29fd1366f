"""Recording a run: ``with trajdebug.run("name") as run``.

A `RunHandle` owns the run's queue and sinks.  The agent's threads push
finished step handles onto its deque; the writer thread
(`trajdebug.record.writer`) turns them into records (`trajdebug.record.tracking`)
and hands them to the sinks.  Nothing here waits on storage on the agent's
thread: sinks are opened by the writer, and leaving the run's block waits
only until the writer has reached the run's end (bounded by
``close_timeout``, and not at all for a store that is locked).

What the recorder could not keep is counted and written into the run's
``end`` record (``recorder.lost``): records dropped because the queue was full,
records a sink could not take, values that could not be encoded, steps that
finished after the run was written.  A lossy run reads back with those counts
and is never shown as plain ``success``.  Recorder failures never raise into
the agent; they are counted in `RunHandle.stats` and reported once as a warning.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from trajdebug.core.codec import dumps_line
from trajdebug.core.schema import RECORDER_KEY, end_record, meta_record, run_record, run_to_records
from trajdebug.record import config as _config
from trajdebug.record import context as _ctx
from trajdebug.record import exceptions as _errors
from trajdebug.record import hooks as _hooks
from trajdebug.record import ledger as _ledger
from trajdebug.record import recorder as _rec
from trajdebug.record import rollout as _rollout
from trajdebug.record.config import CONFIG
from trajdebug.record.context import _RUN, _STEP, RemoteParent
from trajdebug.record.env import environment_snapshot, record_environment_step
from trajdebug.record.recorder import StepHandle
from trajdebug.record.sinks import JsonlSink, MemorySink, Sink, StoreSink, describe, make_sink
from trajdebug.record.state import RunState
from trajdebug.record.tracking import Tracker
from trajdebug.record.writer import WRITER, Flush, Slot


log = logging.getLogger("trajdebug")

LOST_KINDS = ("dropped", "unwritable", "unencodable", "after_end", "export_dropped")
"""Why records were lost: the queue was full; a sink could not take them; a value could not be
encoded at all; the step finished after the run had been written; a live exporter's queue was full
(`trajdebug.integrations.otlp_exporter`)."""


class _Account:
    """What went wrong inside the recorder for one run (kept apart from the hot attributes of the run).

    CPython keeps up to 30 attributes of an instance in its compact layout, which the
    interpreter reads fastest; the step's exit reads the run's queue and limits on
    every step, so the run's rarely used counters live here.
    """

    __slots__ = (
        "context_lost", "drain", "escaped", "internal_errors", "lock", "lost", "on_disk", "serviced",
        "sink_failures", "waiting", "warned",
    )  # fmt: skip

    def __init__(self) -> None:
        self.drain = 0.0
        """Records per second the writer drains from this run's queue while it is backlogged (EWMA)."""
        self.serviced = 0.0
        """When the writer last serviced this run (monotonic seconds)."""
        self.on_disk = 0
        """Records counted as dropped in what was last written (a ``meta`` record's account)."""
        self.escaped: BaseException | None = None
        self.lost = dict.fromkeys(LOST_KINDS, 0)
        self.context_lost = [0, 0]
        self.lock = threading.Lock()
        self.warned = False
        self.sink_failures = 0
        self.internal_errors = 0
        self.waiting: list[Flush] = []


class _End:
    """The run's end, queued behind its last steps (the writer builds the ``end`` record from it)."""

    __slots__ = ("end_ns", "flush", "outcome", "reason")

    def __init__(self, end_ns: int | None, outcome: str | None, reason: str | None) -> None:
        self.end_ns = end_ns
        self.outcome = outcome
        self.reason = reason
        self.flush = Flush()


class _RunStart:
    """The run's first record, queued; the writer adds the environment snapshot to its metadata."""

    __slots__ = ("record",)

    def __init__(self, record: dict[str, Any]) -> None:
        self.record = record


class RunHandle:
    """A run being recorded; ``with trajdebug.run(...) as run`` gives you one."""

    _stop: Any = None
    """A live hook's request to stop the run (`trajdebug.record.hooks`), pending until the next step starts."""
    _led: Any = None
    """The run's ``handed`` counter in its ledger (`trajdebug.record.ledger`), bumped as each step finishes."""
    _ledger: Any = None
    """The writer's side of the run's ledger slot (`trajdebug.record.ledger.Entry`)."""

    def __init__(
        self,
        name: str,
        *,
        store: Any = None,
        path: str | Path | None = None,
        sinks: Iterable[Sink] = (),
        metadata: Mapping[str, Any] | None = None,
        continues: str | None = None,
        run_id: str | None = None,
        parent: str | None = None,
        joined: bool = False,
    ) -> None:
        self.name = name
        self.run_id = run_id or _config.new_run_id()
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.continues = continues
        self.outcome: str | None = None
        self.failure_reason: str | None = None
        self._acct = _Account()
        self._joined = joined
        self._remote_parent = RemoteParent(parent) if parent else None
        self._queue: deque[Any] = deque()
        self._max_buffer = CONFIG.max_buffer
        self._bytes = 0
        self._max_bytes = CONFIG.max_buffer_bytes
        self._lock = threading.RLock()
        self._slots: list[Slot] = [Slot(s) for s in sinks]
        targets = [t for t in (store, path) if t is not None]
        if not targets and not self._slots:
            targets.append(CONFIG.path if CONFIG.path is not None else (CONFIG.store or _default_store()))
        for target in targets:
            try:
                self._slots.append(Slot(make_sink(target)))
            except Exception as exc:  # noqa: BLE001 - a bad target costs its records, not the agent
                self._sink_failed(target, exc, 0)
        for extra in CONFIG.sinks:
            # Sinks every run writes to besides its own (a live exporter).
            self._slots.append(Slot(extra))
        self._errors: dict[str, Any] = {}
        self._errors_by_step: dict[str, list[str]] = {}
        self._retry_of: dict[str, str] = {}
        self._tracker: Any = None
        self._state: Any = None
        self._env_step: str | None = None
        self._tokens: list[Any] = []
        self._active = False
        self._ended: float | None = None
        self._final = False
        self.start_ns = 0
        self.end_ns: int | None = None
        self._plan: Any = None
        self._hold: Any = None
        self._summary: Any = None
        self._void = False
        if _rollout.configured():
            _rollout.apply(self)

    @property
    def _sinks(self) -> list[Any]:
        return [slot.sink for slot in self._slots]

    @property
    def dropped(self) -> int:
        """Records dropped because the queue was full."""
        return self._acct.lost["dropped"]

    @property
    def sink_failures(self) -> int:
        """How many sinks failed for good."""
        return self._acct.sink_failures

    @property
    def internal_errors(self) -> int:
        """How many times the recorder itself failed (never raised into the agent)."""
        return self._acct.internal_errors

    # -- context -----------------------------------------------------------------

    def __enter__(self) -> RunHandle:
        if not CONFIG.enabled:
            return self
        if self._void:
            # Off, or not chosen by head sampling: steps record into a queue that keeps nothing.
            self._queue = deque(maxlen=0)
            self._tokens.append((_RUN.set(self), _STEP.set(None)))
            return self
        try:
            self._begin()
        except Exception:  # noqa: BLE001
            self._internal_error("run start")
        return self

    def _begin(self) -> None:
        self._tracker = Tracker(self)
        self.start_ns = _rec._now()
        self._active = True
        _ctx.run_started(self)
        WRITER.register(self)
        _ledger.attach(self)  # a slot in the ledger beside the file: what a SIGKILL loses stays counted
        if not self._joined:
            # The environment snapshot is taken by the writer when it writes this record
            # (it reads package metadata and the interpreter's binary: file work).
            self._queue.append(_RunStart(run_record(self.run_id, self.name, self.start_ns, self.metadata, self.continues)))
        self._tokens.append((_RUN.set(self), _STEP.set(self._remote_parent)))

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if not self._active:
            if self._void and self._tokens:
                tok_run, tok_step = self._tokens.pop()
                try:
                    _RUN.reset(tok_run)
                    _STEP.reset(tok_step)
                except ValueError:
                    _RUN.set(None)
                    _STEP.set(None)
            return
        try:
            if exc is not None and isinstance(exc, Exception) and exc is not self._acct.escaped:
                _errors.on_run_exception(self, exc)
                if self.outcome is None:
                    self.outcome = "failure"
                    self.failure_reason = f"{type(exc).__name__}: {_errors.safe_str(exc)}"
            self.close()
        except Exception:  # noqa: BLE001
            self._internal_error("run end")
        finally:
            tok_run, tok_step = self._tokens.pop()
            try:
                _RUN.reset(tok_run)
                _STEP.reset(tok_step)
            except ValueError:
                _RUN.set(None)
                _STEP.set(None)

    def close(self) -> None:
        """End the run: queue its end record and wait (bounded) until the writer has written it.

        Waits at most ``close_timeout`` seconds, and not at all for a sink that is
        busy (a locked store): the writer keeps retrying in the background, and
        the interpreter's exit waits for it (``exit_timeout``).
        """
        if not self._active:
            return
        self._active = False
        _ctx.run_ended(self)
        if self._stop is not None:
            _rec.take_stop(self)  # a stop nobody took: the run is over anyway
        self.end_ns = _rec._now()
        outcome = None
        if not self._joined:
            outcome = self.outcome or "success"
            self.outcome = outcome
            if outcome == "failure":
                _errors.on_run_failure(self)
        end = _End(self.end_ns, outcome, self.failure_reason)
        self._queue.append(end)
        self._wait(end.flush, CONFIG.close_timeout, busy_ok=False)

    def _wait(self, marker: Flush, timeout: float, *, busy_ok: bool = True) -> bool:
        """Wait for the writer to reach ``marker``; with ``busy_ok`` False, not at all while a sink is busy."""
        if WRITER.on_writer_thread() or not WRITER.alive():
            # No thread to wait for (interpreter exit): write here.
            for _ in range(10_000):
                if not self._service() or marker.event.is_set():
                    break
            return marker.wait(0)
        WRITER.wake()
        if busy_ok:
            return marker.wait(timeout)
        # Leaving the run waits for encoding, never for storage: a sink found busy
        # (a locked store) ends the wait at once, and the writer retries on its own.
        deadline = time.monotonic() + timeout
        while not marker.event.wait(0.002):
            if any(s.stalled for s in self._slots) or time.monotonic() > deadline:
                return False
        return marker.clean

    # -- outcome -------------------------------------------------------------------

    def fail(self, reason: str) -> None:
        """Mark the run failed (the agent gave a wrong answer, a check failed)."""
        self.outcome = "failure"
        self.failure_reason = reason

    def succeed(self) -> None:
        """Mark the run successful (the default when it ends without an exception)."""
        self.outcome = "success"
        self.failure_reason = None

    # -- state, environment ------------------------------------------------------------

    @property
    def state(self) -> Any:
        """Shared state: a dict whose writes and reads become ``state`` dependencies."""
        if self._state is None:
            self._state = RunState(self)
        return self._state

    def env_step_id(self) -> str | None:
        """The id of the run's ``environment`` step (created on first use)."""
        if self._env_step is None and self._active:
            self._env_step = record_environment_step(self)
        return self._env_step

    # -- the agent's side of the queue -----------------------------------------------------

    def _push(self, item: Any) -> None:
        q = self._queue
        if len(q) < self._max_buffer:
            q.append(item)
        else:
            self._full(item)

    def _full(self, item: Any) -> None:
        """The queue is full (or the run was written already): block, drop or count, per the settings."""
        if self._final:
            self._after_end(1)
            return
        if CONFIG.backpressure == "block" and not WRITER.on_writer_thread():
            WRITER.wake()
            deadline = time.monotonic() + CONFIG.block_timeout
            while time.monotonic() < deadline:
                time.sleep(0.0005)
                if len(self._queue) < self._max_buffer and self._bytes < self._max_bytes:
                    self._queue.append(item)
                    return
                if self._final:
                    self._after_end(1)
                    return
        self._lost("dropped", 1)
        _ledger.dropped(self, item)  # after the count above: the writer never settles a drop it did not count
        self._warn_once(
            f"trajdebug: buffer full, dropping records of run {self.run_id} (counted in its end record;"
            " see trajdebug.configure(backpressure=...))"
        )
        # Ask the writer to catch up; it was probably asleep between flushes.
        WRITER.wake()

    def _after_end(self, n: int) -> None:
        self._lost("after_end", n)
        log.warning(
            "trajdebug: a step of run %s finished after the run had been written; it was not recorded "
            "(join the threads of a run before leaving its block)",
            self.run_id,
        )

    def _adopted(self, ambiguous: bool) -> None:
        """A step that lost its context (a plain thread pool) joined this run."""
        with self._acct.lock:
            self._acct.context_lost[1 if ambiguous else 0] += 1
            first = sum(self._acct.context_lost) == 1
        if first:
            how = "the most recent of several active runs" if ambiguous else "the only active run"
            log.warning(
                "trajdebug: a step ran in a thread without the run's context (a plain ThreadPoolExecutor or "
                "run_in_executor?); it was recorded in %s, %s, marked context_lost (use "
                "trajdebug.ContextThreadPoolExecutor or trajdebug.wrap to keep its parent)",
                how,
                self.run_id,
            )

    def _emit(self, record: dict[str, Any]) -> None:
        """Queue a ready-made record (error, stage, dep)."""
        record.setdefault("v", 1)
        record["run_id"] = self.run_id
        self._push(record)

    def add_metadata(self, **metadata: Any) -> None:
        """Add metadata known only during the run (e.g. where a fault was injected); readers merge it in."""
        self.metadata.update(metadata)
        if self._active:
            self._push(meta_record(self.run_id, metadata))

    def merge(self, run: Any) -> None:
        """Add the steps and errors of another `trajdebug.core.model.Run` to this run.

        Used by the framework integrations: a LangChain or OpenAI Agents trace
        converted to the model joins the trajdebug run active where it ran, its
        top-level steps nested under the current step.  The writer redacts them
        like every other record.
        """
        cur = _STEP.get()
        parent = cur.id if cur is not None else None
        for rec in run_to_records(run, redact=False):
            if rec["t"] in ("run", "end", "meta"):
                continue
            rec["run_id"] = self.run_id
            if rec["t"] == "step" and rec.get("parent_id") is None and parent is not None:
                rec["parent_id"] = parent
            self._push(rec)

    def flush(self, timeout: float | None = None) -> bool:
        """Write everything recorded so far now and wait for it (normally the writer does it within
        ``flush_interval``).

        Args:
            timeout: Seconds to wait at most (None: ``close_timeout``).

        Returns:
            Whether everything was written (False: a sink is busy and the writer is
            still retrying, or time ran out).
        """
        if (not self._active and self._final) or self._void:
            return True
        return self._wait(self._mark(), CONFIG.close_timeout if timeout is None else timeout)

    def _mark(self) -> Flush:
        marker = Flush()
        self._queue.append(marker)
        return marker

    def drain(self) -> None:
        """Write what is queued now (an alias of `flush`, kept for callers of the old name)."""
        self.flush()

    # -- the writer's side ------------------------------------------------------------------

    def _service(self) -> int:
        """Writer thread: encode up to ``max_batch`` queued items and write them.

        Returns:
            0 when idle, 1 when more is queued, 2 when a sink holds records for a retry.
        """
        if not self._lock.acquire(blocking=False):
            return 1
        try:
            return self._service_locked()
        finally:
            self._lock.release()

    def _service_locked(self) -> int:
        q = self._queue
        tracker = self._tracker
        records: list[dict[str, Any]] = []
        reached: list[Any] = []
        limit = CONFIG.max_batch
        # A batch is also bounded in time (a quarter of the flush interval), so that under
        # GIL contention with a busy agent a write still happens at least every interval.
        deadline = time.monotonic() + CONFIG.flush_interval / 4
        done_bytes = 0
        n = steps = 0
        encode = tracker.encode
        after_end = self._ended is not None
        while q and n < limit:
            if not n & 127 and n and time.monotonic() > deadline:
                break
            item = q.popleft()
            n += 1
            cls = item.__class__
            if cls is StepHandle:
                steps += 1  # for the ledger
                if item.input.__class__ is bytes:
                    done_bytes += len(item.input)
                if item.output.__class__ is bytes:
                    done_bytes += len(item.output)
                try:
                    records += encode(item, after_end)
                except Exception as exc:  # noqa: BLE001 - a step is never lost for a field
                    records += tracker.unencodable(item, exc)
            elif cls is dict:
                records.append(tracker.record(item))
            elif cls is _RunStart:
                md = item.record["metadata"]
                if "env" not in md:
                    md["env"] = environment_snapshot(md, time_ns=self.start_ns)
                records.append(tracker.record(item.record))
            elif cls is tuple:
                tracker.handle(item)
            elif cls is _End:
                if self._hold is not None and not self._hold.decided:
                    self._decide(item, records)
                if not self._joined:
                    records.append(self._end_record(item))
                reached.append(item)
            elif cls is Flush:
                reached.append(item)
        if done_bytes:
            # Only this thread writes _max_bytes: the agent's check stays "queued bytes < budget".
            self._max_bytes += done_bytes
        self._bound_backlog(n, bool(q))
        step_drops = _ledger.drops(self)  # read before the drop count below, so it never counts more
        dropped = self._acct.lost["dropped"]
        if dropped != self._acct.on_disk and records and not self._joined:
            # What was dropped is on disk with the next batch, not only in the end record: a run
            # killed under load still says how many finished steps it never wrote.
            self._acct.on_disk = dropped
            records.append(self._tracker.record(meta_record(self.run_id, {RECORDER_KEY: self.account()})))
        slots = self._slots
        if records:
            # Each record is encoded once; every sink (and the hook thread) gets the same bytes.
            lines = [dumps_line(r) for r in records]
            if _hooks.HOOKS:
                _hooks.feed(self, lines)
            if self._hold is None:
                for slot in slots:
                    slot.write(self, lines)
            else:
                # Tail sampling: the lines are held until the run's end decides; then written in bounded batches.
                wrote = False
                for batch in self._hold.take(lines):
                    wrote = True
                    for slot in slots:
                        slot.write(self, batch)
                if not wrote:
                    records = []
        if not records:
            for slot in slots:
                slot.flush(self)
        _ledger.settle(self, steps, step_drops, bool(records) and self._hold is None)
        clean = not any(slot.pending for slot in slots)
        for m in reached:
            if m.__class__ is _End:
                self._ended = time.monotonic()
                m.flush.done(clean)
            elif clean:
                m.done(True)
            else:
                self._acct.waiting.append(m)
        if clean and self._acct.waiting:
            for m in self._acct.waiting:
                m.done(True)
            self._acct.waiting.clear()
        if q:
            return 1
        if not clean:
            return 2
        if self._ended is not None and time.monotonic() - self._ended >= CONFIG.late_grace:
            self._finalize()
        return 0

    def _bound_backlog(self, n: int, backlogged: bool) -> None:
        """Size the queue to what the writer drains in ``backlog_seconds`` (0.1 s by default), so a SIGKILL under any load
        loses at most that much of finished steps (the rest are dropped and counted on disk).  The
        drain rate is measured only while the writer is backlogged; a run that never backlogs it (an
        agent waiting on models and tools) keeps the full `max_buffer` for its bursts.
        """
        now = time.monotonic()
        acct = self._acct
        elapsed, acct.serviced = now - acct.serviced, now
        window = CONFIG.backlog_seconds
        if self._final or not backlogged or window is None:
            return
        if n and 0 < elapsed < 1.0:
            rate = n / elapsed
            acct.drain = rate if not acct.drain else 0.7 * acct.drain + 0.3 * rate
            self._max_buffer = min(CONFIG.max_buffer, max(CONFIG.max_batch, int(acct.drain * window)))

    def _end_record(self, end: _End) -> dict[str, Any]:
        reason = None if end.reason is None else self._tracker.text(end.reason)
        rec = end_record(self.run_id, end.end_ns, end.outcome or "success", reason, self.account())
        return rec if self._summary is None else self._summary.apply(rec)

    def _decide(self, end: _End, records: list[dict[str, Any]]) -> None:
        """Tail sampling: decide the run at its end (the decision is written only when it is kept)."""
        meta = self._hold.decide(
            None if self._joined else (end.outcome or "success"),
            self.account(),
            joined=self._joined,
            errors=len(self._errors),
        )
        if self._hold.keep:
            records.append(self._tracker.record(meta))

    def _incomplete_at_exit(self) -> None:
        """The interpreter exits with this tail-sampled run still open: keep it, as incomplete."""
        with self._lock:
            if self._hold is not None and not self._hold.decided:
                self._queue.append(self._hold.decide_incomplete())

    def account(self) -> dict[str, Any]:
        """The recorder's account of this run so far: records lost by cause, steps that lost their
        context, secrets redacted per rule (what goes into the ``end`` record's ``recorder`` field)."""
        out: dict[str, Any] = {}
        lost = {k: v for k, v in self._acct.lost.items() if v}
        if lost:
            out["lost"] = lost
        if any(self._acct.context_lost):
            out["context_lost"] = {"steps": self._acct.context_lost[0] + self._acct.context_lost[1], "ambiguous": self._acct.context_lost[1]}
        red = self._tracker.redactor if self._tracker is not None else None
        if red is not None and red.counts:
            out["redacted"] = dict(red.counts)
        if self._acct.internal_errors:
            out["internal_errors"] = self._acct.internal_errors
        return out

    def _finalize(self) -> None:
        """Close the sinks and release what the run held; later steps are counted as lost."""
        self._final = True
        self._max_buffer = -1  # every later append goes through _full, which counts it
        WRITER.unregister(self)
        _ledger.release(self)  # written to its end: nothing left for a ledger to say
        for slot in self._slots:
            slot.close(self)
        if self._tracker is not None:
            self._tracker.release()
        self._sweep_late()

    def _sweep_late(self) -> None:
        """Count steps that reached the queue after the run was written (a race with `_finalize`)."""
        q = self._queue
        n = 0
        while q:
            if q.popleft().__class__ is StepHandle:
                n += 1
        if n:
            self._after_end(n)

    def _forked(self) -> None:
        """In a forked child: the parent writes what was queued; the child starts empty."""
        self._queue.clear()
        for slot in self._slots:
            slot.pending.clear()

    # -- counting what went wrong ---------------------------------------------------------------

    def _lost(self, why: str, n: int) -> None:
        with self._acct.lock:
            self._acct.lost[why if why in self._acct.lost else "unencodable"] += n

    def _sink_failed(self, sink: Any, exc: BaseException | None, lost: int) -> None:
        self._acct.sink_failures += 1
        if lost:
            self._lost("unwritable", lost)
        reason = f"{type(exc).__name__}: {exc}" if exc is not None else "failed"
        self._warn_once(f"trajdebug: cannot write run {self.run_id} to {describe(sink)} ({reason}); its records there are lost")

    def _internal_error(self, where: str) -> None:
        self._acct.internal_errors += 1
        self._warn_once(f"trajdebug: internal error in {where}; the agent was not affected")
        log.debug("trajdebug internal error in %s", where, exc_info=True)

    def _warn_once(self, message: str) -> None:
        if not self._acct.warned:
            self._acct.warned = True
            log.warning(message)

    @property
    def stats(self) -> dict[str, int]:
        """Counters of what went wrong inside the recorder: records dropped (queue full), sinks that
        failed, internal errors (see `losses` for every cause)."""
        return {
            "dropped": self._acct.lost["dropped"],
            "sink_failures": self._acct.sink_failures,
            "internal_errors": self._acct.internal_errors,
        }

    @property
    def losses(self) -> dict[str, int]:
        """Records lost so far by cause (`LOST_KINDS`), their total (``lost``), and the steps that
        joined this run without its context (``context_lost``)."""
        return {
            **self._acct.lost,
            "lost": sum(self._acct.lost.values()),
            "context_lost": sum(self._acct.context_lost),
        }

    def load(self) -> Any:
        """Read this run back from its first readable sink (a `trajdebug.core.model.Run`), after a flush."""
        from trajdebug.core.jsonl import RunBuilder, read_jsonl

        self.flush()
        for sink in self._sinks:
            if isinstance(sink, MemorySink):
                b = RunBuilder("memory")
                for r in sink.records:
                    if r.get("run_id") == self.run_id:
                        b.add(r)
                return b.runs()[0]
            if isinstance(sink, StoreSink):
                from trajdebug.store import Store

                with Store(sink.path, readonly=True) as st:
                    return st.load_run(self.run_id)
            if isinstance(sink, JsonlSink):
                for found in read_jsonl(sink.path).runs:
                    if found.run_id == self.run_id:
                        return found
                raise LookupError(f"{sink.path}: run {self.run_id} is not there (yet)")
        raise LookupError("this run has no readable sink")


def _default_store() -> Path:
    from trajdebug.store import default_store_path

    return default_store_path()


def run(
    name: str,
    *,
    store: Any = None,
    path: str | Path | None = None,
    sinks: Iterable[Sink] = (),
    metadata: Mapping[str, Any] | None = None,
    tags: Iterable[str] | Mapping[str, Any] = (),
    continues: str | None = None,
    task: str | None = None,
    agent: str | None = None,
    version: str | None = None,
    session: str | None = None,
) -> RunHandle:
    """Record a run: ``with trajdebug.run("name") as run: ...``.

    Example:
        ```python
        with trajdebug.run("support", metadata={"customer": "c-42"}, tags=["nightly", "eu"]) as run:
            ...
        ```

    Args:
        name: The run's name.
        store: A store (path or `trajdebug.store.Store`) to write to.
        path: A JSONL file to append to.
        sinks: Extra sinks.
        metadata: Free metadata (any JSON-able values; what cannot be encoded is kept as a
            marker, secrets are redacted).  Add more during the run with ``run.add_metadata(...)``.
        tags: Labels for the run, kept sorted and without duplicates in ``metadata["tags"]``;
            key-value tags (``tags={"team": "search"}``) are kept whole, as a mapping.
        continues: The run id this run continues (an earlier conversation turn).
        task: The task (recorded in metadata).
        agent: The agent's name (recorded in metadata).
        version: The agent's version (recorded in metadata).
        session: The conversation or user session the run belongs to (``metadata["session"]``):
            `trajdebug serve` lists sessions, ``analyze --session`` searches its earlier runs.

    Without ``store``, ``path`` or ``sinks`` the run goes to the configured default:
    ``trajdebug.configure(path=...)`` or ``store=...``, else ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``.

    Inside `trajdebug.replay.record` or a replay, the run joins the run being recorded
    there (its name and metadata go to that run; ``store``, ``path`` and ``sinks`` are not used).
    """
    md = dict(metadata or {})
    for key, value in (("task", task), ("agent", agent), ("version", version), ("session", session)):
        if value is not None:
            md[key] = value
    if isinstance(tags, Mapping):
        # Key-value tags are kept whole (a dict, merged into one given in metadata).
        had = md.get("tags")
        md["tags"] = {**(dict(had) if isinstance(had, Mapping) else {}), **{str(k): v for k, v in tags.items()}}
    elif tags:
        given = [tags] if isinstance(tags, str) else list(tags)
        had = md.get("tags")
        had = list(had) if isinstance(had, (list, tuple, set, frozenset)) else ([] if had is None else [had])
        md["tags"] = sorted({str(t) for t in [*had, *given]})
    if not CONFIG.enabled:
        return _NoopRun(name)
    host = _ctx._HOST.get()
    if host is not None and host[0]._active:
        return _JoinedRun(host[0], name if host[1] else None, md)  # type: ignore[return-value]
    return RunHandle(name, store=store, path=path, sinks=sinks, metadata=md, continues=continues)


class _JoinedRun:
    """``trajdebug.run(...)`` opened by an entry point that `trajdebug.replay` records or replays.

    It starts no run of its own (its store and sinks are not used): entering it
    names the host run (when the host lets it) and adds the metadata the host
    does not already have, and gives the host's handle, so ``run.state``,
    ``run.fail(...)`` and the steps all land in the one recorded run.  An
    exception leaving its block fails the host there, as it would have failed
    a run of its own, even when the caller catches it afterwards.
    """

    __slots__ = ("_host", "_metadata", "_name")

    def __init__(self, host: RunHandle, name: str | None, metadata: dict[str, Any]) -> None:
        self._host = host
        self._name = name
        self._metadata = metadata

    def __enter__(self) -> RunHandle:
        host = self._host
        if self._name is not None:
            host.name = self._name
        new = {k: v for k, v in self._metadata.items() if k not in host.metadata}
        if new:
            host.add_metadata(**new)
        return host

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        host = self._host
        if exc is None or not isinstance(exc, Exception) or not host._active or exc is host._acct.escaped:
            return
        try:
            _errors.on_run_exception(host, exc)
            host._acct.escaped = exc
            if host.outcome is None:
                host.outcome = "failure"
                host.failure_reason = f"{type(exc).__name__}: {_errors.safe_str(exc)}"
        except Exception:  # noqa: BLE001
            host._internal_error("joined run end")

    def close(self) -> None:
        """Nothing to end: the host run ends where it was opened."""

    def __getattr__(self, attr: str) -> Any:
        # Used without ``with`` (``r = trajdebug.run(...); r.state[...]``): the host's handle answers.
        return getattr(self._host, attr)


class _NoopRun(RunHandle):
    """What `run` returns when recording is off: nothing is opened or written."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.run_id = ""
        self.outcome = None
        self.failure_reason = None
        self._active = False
        self._final = True
        self._state = None
        self._slots = []
        self._acct = _Account()

    def __enter__(self) -> RunHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def flush(self, timeout: float | None = None) -> bool:
        return True

    @property
    def state(self) -> Any:
        if self._state is None:
            self._state = {}
        return self._state


__all__ = ["LOST_KINDS", "RECORDER_KEY", "RunHandle", "run"]
