"""Recording a run: ``with trajdebug.run("name") as run``.

A `RunHandle` owns the run's buffer and sinks.  The agent's threads push
finished step handles onto its deque; the writer thread (or the run's end)
drains it into records (`trajdebug.record.tracking`) and hands them to the
sinks.  Recorder failures are counted in `RunHandle.stats` and reported once
as a warning; they never raise into the agent.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from trajdebug.record import config as _config
from trajdebug.record import recorder as _rec
from trajdebug.record.config import CONFIG
from trajdebug.record.recorder import _RUN, _STEP, RemoteParent, StepHandle
from trajdebug.record.sinks import WRITER, Sink, make_sink


log = logging.getLogger("trajdebug")


class RunHandle:
    """A run being recorded; ``with trajdebug.run(...) as run`` gives you one."""

    def __init__(
        self,
        name: str,
        *,
        store: Any = None,
        path: str | Path | None = None,
        sinks: Iterable[Sink] = (),
        metadata: dict[str, Any] | None = None,
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
        self.dropped = 0
        self.sink_failures = 0
        self.internal_errors = 0
        self._warned = False
        self._joined = joined
        self._remote_parent = RemoteParent(parent) if parent else None
        self._queue: deque[Any] = deque()
        self._max_buffer = CONFIG.max_buffer
        self._lock = threading.RLock()
        self._sinks: list[Sink] = list(sinks)
        targets = [t for t in (store, path) if t is not None]
        if not targets and not self._sinks:
            targets.append(CONFIG.path if CONFIG.path is not None else (CONFIG.store or _default_store()))
        for target in targets:
            try:
                self._sinks.append(make_sink(target))
            except Exception:
                self._sink_failed(target)
                log.debug("trajdebug: cannot open sink %r", target, exc_info=True)
        self._errors: dict[str, Any] = {}
        self._errors_by_step: dict[str, list[str]] = {}
        self._retry_of: dict[str, str] = {}
        self._tracker: Any = None
        self._state: Any = None
        self._env_step: str | None = None
        self._tokens: list[Any] = []
        self._active = False
        self.start_ns = 0
        self.end_ns: int | None = None

    # -- context -----------------------------------------------------------------

    def __enter__(self) -> RunHandle:
        if not CONFIG.enabled:
            return self
        try:
            self._begin()
        except Exception:  # noqa: BLE001
            self._internal_error("run start")
        return self

    def _begin(self) -> None:
        from trajdebug.record.tracking import Tracker

        self._tracker = Tracker(self)
        self.start_ns = _rec._now()
        self._active = True
        WRITER.register(self)
        if not self._joined:
            from trajdebug.record.env import environment_snapshot

            env = environment_snapshot(self.metadata)
            self.metadata.setdefault("env", env)
            rec: dict[str, Any] = {
                "v": 1,
                "t": "run",
                "run_id": self.run_id,
                "name": self.name,
                "start_ns": self.start_ns,
                "metadata": self.metadata,
            }
            if self.continues:
                rec["continues"] = self.continues
            self._queue.append(rec)
        self._tokens.append((_RUN.set(self), _STEP.set(self._remote_parent)))

    def __exit__(self, et: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        if not self._active:
            return
        try:
            if exc is not None and isinstance(exc, Exception):
                from trajdebug.record.errors import on_run_exception

                on_run_exception(self, exc)
                if self.outcome is None:
                    self.outcome = "failure"
                    self.failure_reason = f"{type(exc).__name__}: {exc}"
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
        """End the run: write its end record, flush and close the sinks."""
        if not self._active:
            return
        self._active = False
        self.end_ns = _rec._now()
        if not self._joined:
            outcome = self.outcome or "success"
            self.outcome = outcome
            if outcome == "failure":
                from trajdebug.record.errors import on_run_failure

                on_run_failure(self)
            self._queue.append(
                {
                    "v": 1,
                    "t": "end",
                    "run_id": self.run_id,
                    "end_ns": self.end_ns,
                    "outcome": outcome,
                    "failure_reason": self.failure_reason,
                }
            )
        self.drain()
        WRITER.unregister(self)
        for sink in self._sinks:
            try:
                sink.close()
            except Exception:  # noqa: BLE001
                self._sink_failed(sink)
        if self._tracker is not None:
            self._tracker.release()

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
            from trajdebug.record.state import RunState

            self._state = RunState(self)
        return self._state

    def env_step_id(self) -> str | None:
        """The id of the run's ``environment`` step (created on first use)."""
        if self._env_step is None and self._active:
            from trajdebug.record.env import record_environment_step

            self._env_step = record_environment_step(self)
        return self._env_step

    # -- plumbing ------------------------------------------------------------------------

    def _push(self, item: Any) -> None:
        q = self._queue
        if len(q) >= self._max_buffer:
            self._drop()
            return
        q.append(item)

    def _drop(self) -> None:
        self.dropped += 1
        self._warn_once(f"trajdebug: buffer full, dropping records of run {self.run_id}")
        # Ask the writer to catch up; it was probably asleep between flushes.
        WRITER.wake()

    def _emit(self, record: dict[str, Any]) -> None:
        """Queue a ready-made record (error, stage, dep)."""
        record.setdefault("v", 1)
        record["run_id"] = self.run_id
        self._push(record)

    def add_metadata(self, **metadata: Any) -> None:
        """Add metadata known only during the run (e.g. where a fault was injected); readers merge it in."""
        self.metadata.update(metadata)
        if self._active:
            self._emit({"t": "meta", "metadata": metadata})

    def merge(self, run: Any) -> None:
        """Add the steps and errors of another `trajdebug.model.Run` to this run.

        Used by the framework integrations: a LangChain or OpenAI Agents trace
        converted to the model joins the trajdebug run active where it ran, its
        top-level steps nested under the current step.
        """
        from trajdebug.format import run_to_records

        cur = _STEP.get()
        parent = cur.id if cur is not None else None
        for rec in run_to_records(run):
            if rec["t"] in ("run", "end"):
                continue
            rec["run_id"] = self.run_id
            if rec["t"] == "step" and rec.get("parent_id") is None and parent is not None:
                rec["parent_id"] = parent
            self._push(rec)

    def flush(self) -> None:
        """Write everything recorded so far to the sinks now (normally the writer thread does it)."""
        self.drain()

    def drain(self) -> None:
        """Turn queued handles into records and write them to the sinks (writer thread, or at run end)."""
        with self._lock:
            q = self._queue
            if not q:
                return
            records: list[dict[str, Any]] = []
            tracker = self._tracker
            while q:
                item = q.popleft()
                try:
                    if type(item) is StepHandle:
                        records.extend(tracker.encode(item))
                    elif type(item) is tuple:
                        tracker.handle(item)
                    else:
                        # Run, end, error, stage and merged records carry user text too
                        # (metadata, failure reasons, error messages): redact them as well.
                        records.append(tracker.redact(item))
                except Exception:  # noqa: BLE001
                    self._internal_error("encode")
            if not records:
                return
            for sink in self._sinks:
                try:
                    sink.write(records)
                except Exception:  # noqa: BLE001
                    self._sink_failed(sink)

    def _sink_failed(self, sink: Any) -> None:
        self.sink_failures += 1
        self._warn_once(
            f"trajdebug: sink {type(sink).__name__} failed; records of run {self.run_id} were lost"
        )

    def _internal_error(self, where: str) -> None:
        self.internal_errors += 1
        self._warn_once(f"trajdebug: internal error in {where}; the agent was not affected")
        log.debug("trajdebug internal error in %s", where, exc_info=True)

    def _warn_once(self, message: str) -> None:
        if not self._warned:
            self._warned = True
            log.warning(message)

    @property
    def stats(self) -> dict[str, int]:
        """Counters of what went wrong inside the recorder (dropped records, sink failures)."""
        return {
            "dropped": self.dropped,
            "sink_failures": self.sink_failures,
            "internal_errors": self.internal_errors,
        }

    def load(self) -> Any:
        """Read this run back from its first readable sink (a `trajdebug.model.Run`)."""
        from trajdebug.format import RunBuilder, read_jsonl
        from trajdebug.record.sinks import JsonlSink, MemorySink, StoreSink

        self.drain()
        for sink in self._sinks:
            if isinstance(sink, MemorySink):
                b = RunBuilder("memory")
                for r in sink.records:
                    if r.get("run_id") == self.run_id:
                        b.add(r)
                return b.runs()[0]
            if isinstance(sink, StoreSink):
                return sink.store.load_run(self.run_id)
            if isinstance(sink, JsonlSink):
                return next(r for r in read_jsonl(sink.path).runs if r.run_id == self.run_id)
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
    metadata: dict[str, Any] | None = None,
    continues: str | None = None,
    task: str | None = None,
    agent: str | None = None,
    version: str | None = None,
) -> RunHandle:
    """Record a run: ``with trajdebug.run("name") as run: ...``.

    Args:
        name: The run's name.
        store: A store (path or `trajdebug.store.Store`) to write to.
        path: A JSONL file to append to.
        sinks: Extra sinks.
        metadata: Free metadata.
        continues: The run id this run continues (an earlier conversation turn).
        task: The task (recorded in metadata).
        agent: The agent's name (recorded in metadata).
        version: The agent's version (recorded in metadata).

    Without ``store``, ``path`` or ``sinks`` the run goes to the configured default:
    ``trajdebug.configure(path=...)`` or ``store=...``, else ``$TRAJDEBUG_STORE`` or ``./trajdebug.db``.
    """
    md = dict(metadata or {})
    for key, value in (("task", task), ("agent", agent), ("version", version)):
        if value is not None:
            md[key] = value
    if not CONFIG.enabled:
        return _NoopRun(name)
    return RunHandle(name, store=store, path=path, sinks=sinks, metadata=md, continues=continues)


class _NoopRun(RunHandle):
    """What `run` returns when recording is off: nothing is opened or written."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.run_id = ""
        self.outcome = None
        self.failure_reason = None
        self._active = False
        self._state = None

    def __enter__(self) -> RunHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    @property
    def state(self) -> Any:
        if self._state is None:
            self._state = {}
        return self._state
