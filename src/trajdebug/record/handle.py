"""A run being recorded: `RunHandle`, what ``with trajdebug.run("name") as run`` gives.

A `RunHandle` is the agent's side of a run: its context, its queue, its
outcome, state and metadata.  The agent's threads push finished step handles
onto its deque; the writer thread (`trajdebug.record.writer`) services the
run's `trajdebug.record.export.RunExport`, which turns them into records,
passes them through the run's processors and hands them to the sinks.  Nothing here waits on storage on the agent's
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
import time
from collections import deque
from collections.abc import Iterable, Mapping
from contextvars import Token
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from trajdebug.core.schema import RECORDER_KEY, meta_record, run_record, run_to_records
from trajdebug.record import config as _config
from trajdebug.record import context as _ctx
from trajdebug.record import exceptions as _errors
from trajdebug.record import ledger as _ledger
from trajdebug.record import rollout as _rollout
from trajdebug.record import steps as _steps
from trajdebug.record.account import LOST_KINDS, Account
from trajdebug.record.config import CONFIG
from trajdebug.record.context import _RUN, _STEP, RemoteParent
from trajdebug.record.env import record_environment_step
from trajdebug.record.export import End, QueueItem, RunExport, RunStart
from trajdebug.record.processors import Processors, TailSampler
from trajdebug.record.sinks import JsonlSink, MemorySink, Sink, StoreSink, make_sink
from trajdebug.record.state import RunState
from trajdebug.record.steps import StepHandle
from trajdebug.record.writer import WRITER, Flush, Slot


if TYPE_CHECKING:
    from trajdebug.core.model import Run
    from trajdebug.record.rollout import Plan
    from trajdebug.record.sampling import Hold
    from trajdebug.store import Store


log = logging.getLogger("trajdebug")


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
        store: Store | str | Path | None = None,
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
        self._acct = Account(self.run_id)
        self._joined = joined
        self._remote_parent = RemoteParent(parent) if parent else None
        self._queue: deque[QueueItem] = deque()
        self._max_buffer = CONFIG.max_buffer
        self._bytes = 0
        self._max_bytes = CONFIG.max_buffer_bytes
        self._export = RunExport(self, self._acct, _sink_slots(self._acct, store, path, sinks))
        self._errors: dict[str, Any] = {}
        self._errors_by_step: dict[str, list[str]] = {}
        self._retry_of: dict[str, str] = {}
        self._state: RunState | dict[str, Any] | None = None
        self._env_step: str | None = None
        self._tokens: list[tuple[Token[RunHandle | None], Token[StepHandle | RemoteParent | None]]] = []
        self._active = False
        self._final = False
        """The run was written and its sinks closed (set by the writer): later steps are counted as lost."""
        self.start_ns = 0
        self.end_ns: int | None = None
        self._plan: Plan | None = None
        self._void = False
        if _rollout.configured():
            self._set_up()

    def _set_up(self) -> None:
        """Production recording (`trajdebug.record.rollout`): the run's plan, its processors, or nothing."""
        setup = _rollout.setup(str(self.metadata.get("agent") or self.name), self.run_id, self._joined)
        if setup is None:
            return
        self._plan = setup.plan
        self._void = setup.void
        self.metadata.update(setup.metadata)
        self._export.processors = Processors(setup.processors)

    @property
    def _sinks(self) -> list[Sink]:
        return [slot.sink for slot in self._slots]

    @property
    def dropped(self) -> int:
        """Records dropped because the queue was full."""
        return self._acct.lost_by["dropped"]

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
        self._export.start()
        self.start_ns = _steps._now()
        self._active = True
        _ctx.run_started(self)
        WRITER.register(self._export)
        _ledger.attach(self)  # a slot in the ledger beside the file: what a SIGKILL loses stays counted
        if not self._joined:
            # The environment snapshot is taken by the writer when it writes this record
            # (it reads package metadata and the interpreter's binary: file work).
            self._queue.append(RunStart(run_record(self.run_id, self.name, self.start_ns, self.metadata, self.continues)))
        self._tokens.append((_RUN.set(self), _STEP.set(self._remote_parent)))

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if not self._active:
            if self._void and self._tokens:
                self._restore_context()
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
            self._restore_context()

    def _restore_context(self) -> None:
        """Put back the current run and step this block's ``__enter__`` replaced (cleared when the block
        ended in another context than it began, where the tokens cannot be reset)."""
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
            _steps.take_stop(self)  # a stop nobody took: the run is over anyway
        self.end_ns = _steps._now()
        outcome = None
        if not self._joined:
            outcome = self.outcome or "success"
            self.outcome = outcome
            if outcome == "failure":
                _errors.on_run_failure(self)
        end = End(self.end_ns, outcome, self.failure_reason)
        self._queue.append(end)
        self._wait(end.flush, CONFIG.close_timeout, busy_ok=False)

    def _wait(self, marker: Flush, timeout: float, *, busy_ok: bool = True) -> bool:
        """Wait for the writer to reach ``marker``; with ``busy_ok`` False, not at all while a sink is busy."""
        if WRITER.on_writer_thread() or not WRITER.alive():
            # No thread to wait for (interpreter exit): write here.
            for _ in range(10_000):
                if not self._export.service() or marker.event.is_set():
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

    def _push(self, item: QueueItem) -> None:
        q = self._queue
        if len(q) < self._max_buffer:
            q.append(item)
        else:
            self._full(item)

    def _full(self, item: QueueItem) -> None:
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
        if self._acct.adopted(ambiguous):
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

    def merge(self, run: Run) -> None:
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
        return self._wait(self._export.mark(), CONFIG.close_timeout if timeout is None else timeout)

    def drain(self) -> None:
        """Write what is queued now (an alias of `flush`, kept for callers of the old name)."""
        self.flush()

    # -- the writer's side (`trajdebug.record.export.RunExport`) -------------------------------------

    @property
    def _slots(self) -> list[Slot]:
        return self._export.slots

    @property
    def _hold(self) -> Hold | None:
        """Tail sampling's hold of this run's lines (None when the run is not tail-sampled)."""
        sampler = self._export.processors.find(TailSampler)
        return sampler.hold if isinstance(sampler, TailSampler) else None

    def account(self) -> dict[str, object]:
        """The recorder's account of this run so far: records lost by cause, steps that lost their
        context, secrets redacted per rule (what goes into the ``end`` record's ``recorder`` field)."""
        return self._export.account()

    # -- counting what went wrong ---------------------------------------------------------------

    def _lost(self, why: str, n: int) -> None:
        self._acct.lost(why, n)

    def _sink_failed(self, sink: object, exc: BaseException | None, lost: int) -> None:
        self._acct.sink_failed(sink, exc, lost)

    def _internal_error(self, where: str) -> None:
        self._acct.internal_error(where)

    def _warn_once(self, message: str) -> None:
        self._acct.warn_once(message)

    @property
    def stats(self) -> dict[str, int]:
        """Counters of what went wrong inside the recorder: records dropped (queue full), sinks that
        failed, internal errors (see `losses` for every cause)."""
        return {
            "dropped": self._acct.lost_by["dropped"],
            "sink_failures": self._acct.sink_failures,
            "internal_errors": self._acct.internal_errors,
        }

    @property
    def losses(self) -> dict[str, int]:
        """Records lost so far by cause (`LOST_KINDS`), their total (``lost``), and the steps that
        joined this run without its context (``context_lost``)."""
        return {
            **self._acct.lost_by,
            "lost": sum(self._acct.lost_by.values()),
            "context_lost": sum(self._acct.context_lost),
        }

    def load(self) -> Run:
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


def _sink_slots(acct: Account, store: Store | str | Path | None, path: str | Path | None, sinks: Iterable[Sink]) -> list[Slot]:
    """A new run's sinks, each in its writer's slot: the ones given, the store or file named (else the
    configured default), and the sinks every run writes to (a live exporter).  Nothing is opened here."""
    slots = [Slot(s) for s in sinks]
    targets = [t for t in (store, path) if t is not None]
    if not targets and not slots:
        targets.append(CONFIG.path if CONFIG.path is not None else (CONFIG.store or _default_store()))
    for target in targets:
        try:
            slots.append(Slot(make_sink(target)))
        except Exception as exc:  # noqa: BLE001 - a bad target costs its records, not the agent
            acct.sink_failed(target, exc, 0)
    for extra in CONFIG.sinks:
        # Sinks every run writes to besides its own (a live exporter).
        slots.append(Slot(extra))
    return slots


def _default_store() -> Path:
    from trajdebug.store import default_store_path

    return default_store_path()


__all__ = ["LOST_KINDS", "RECORDER_KEY", "RunHandle"]
