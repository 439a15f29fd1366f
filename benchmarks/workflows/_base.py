"""What every benchmark workflow shares: recording one run of it into memory.

Workflows are written the way users write agents: decorated functions that
call each other, with ``run.state``, retries and parallel branches.  This
module only opens the run (into a `trajdebug.record.MemorySink`, for speed),
lets the agent fail the way it fails, writes the ground truth, and reads the
run back.

Every case is also *replayable* (`trajdebug.replay`): the analysed run records
its entry point, `benchmarks.workflows.replay_case`, with the case as keyword arguments (run
metadata ``entry``).  A workflow builds its data from the case's seed, so
re-executing the entry point inside the replay's run rebuilds the same world
(database, web, repository) before the agent starts.  `reference` records the
case's *fault-free twin*: the same seed, data and task, with the injector
disarmed (`benchmarks.workflows.reference`), which is the passing run corrections are taken from.  (The clean
case of the same seed is no twin: the seed of a case's data includes its fault
type, so its task and data differ.)
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import trajdebug
from benchmarks.faults import Case, Injector, record_truth
from trajdebug.core.model import Run
from trajdebug.record import MemorySink


ENTRY_TARGET = "benchmarks.workflows:replay_case"
"""The entry point recorded in each analysed run's ``entry`` metadata (it sits beside the
registry of workflows it dispatches through, so this module needs no import of the package)."""

_Mode = Literal["record", "current", "disarmed"]
_MODE: contextvars.ContextVar[_Mode] = contextvars.ContextVar("benchmarks_workflow_mode", default="record")
"""How `record` runs a turn: open its own run (``record``), or run it inside the run that is
already being recorded (``current``: a replay's or `trajdebug.replay.record`'s), with the
injector disarmed (``disarmed``, which also runs in the current run)."""


@dataclass(frozen=True, slots=True)
class Result:
    """The runs one case produced."""

    run: Run
    """The run to analyse (the last conversation turn)."""
    previous: tuple[Run, ...] = ()
    """Earlier turns of the conversation, oldest first."""

    @property
    def fault(self) -> dict[str, Any]:
        """The ground truth recorded in the run's metadata."""
        return dict(self.run.metadata.get("fault") or {})


def record(
    name: str,
    inj: Injector,
    body: Callable[[Any], Any],
    *,
    metadata: dict[str, Any] | None = None,
    continues: str | None = None,
    truth: bool = True,
) -> Run:
    """Record one run of ``body(run)`` and return it.

    An exception escaping the agent fails the run (it is recorded, not raised);
    ``truth=False`` for earlier turns of a conversation, whose ground truth is
    written on the last turn.  The analysed (last) turn records its entry point
    (metadata ``entry``).  Under `replay_case` the analysed turn runs inside the
    run already being recorded instead, and its failure propagates to that run;
    the run returned then only names it (it is still open).
    """
    mode = _MODE.get()
    if mode != "record":
        return _in_current_run(name, inj, body, mode, truth=truth, metadata=metadata, continues=continues)
    md = {"workflow": inj.case.workflow, "seed": inj.case.seed, "llm": "scripted stand-in (deterministic)"}
    md.update(metadata or {})
    if truth:
        md["entry"] = entry_of(inj.case)
    handle = trajdebug.run(name, sinks=[MemorySink()], metadata=md, continues=continues)
    try:
        with handle as run:
            try:
                body(run)
            finally:
                if truth:
                    record_truth(run, inj)
    except Exception:  # noqa: BLE001 - the failure is recorded; it is what the benchmark is about
        pass
    loaded: Run = handle.load()
    return loaded


def entry_of(case: Case, *, disarmed: bool = False) -> dict[str, Any]:
    """The ``entry`` metadata that makes a case's analysed run replayable (`trajdebug.replay.ENTRY_KEY`)."""
    kwargs: dict[str, Any] = {
        "workflow": case.workflow,
        "fault": case.fault,
        "seed": case.seed,
        "distractors": list(case.distractors),
    }
    if disarmed:
        kwargs["disarmed"] = True
    return {"target": ENTRY_TARGET, "args": [], "kwargs": kwargs}


def _in_current_run(
    name: str,
    inj: Injector,
    body: Callable[[Any], Any],
    mode: _Mode,
    *,
    truth: bool,
    metadata: dict[str, Any] | None,
    continues: str | None,
) -> Run:
    if not truth:
        # An earlier conversation turn is not part of the run being replayed: it
        # is recorded on its own, in a fresh context (no replay controller, no
        # current run), and only its effects on the world (a memory store) remain.
        if mode == "disarmed":
            inj.armed = False
        ctx = contextvars.Context()
        return ctx.run(record, name, inj, body, metadata=metadata, continues=continues, truth=False)
    run = trajdebug.current_run()
    if run is None:
        raise RuntimeError(f"{name}: replay_case must be called inside a recorded run (trajdebug.replay)")
    if mode == "disarmed":
        inj.armed = False
    if metadata:
        # What the workflow knows of its task, as a recorded run of it carries it.
        run.metadata.update(metadata)
        run._emit({"t": "meta", "metadata": dict(metadata)})
    try:
        body(run)  # the agent's failure propagates: the enclosing run records it
    finally:
        record_truth(run, inj)
    # The enclosing run is still open: what it holds is read when it ends.
    return Run(run.run_id, name, metadata=dict(run.metadata))


class CheckFailed(ValueError):
    """A workflow's own check on its answer failed (how most injected faults surface)."""


__all__ = ["ENTRY_TARGET", "CheckFailed", "Result", "entry_of", "record"]
