"""What every benchmark workflow shares: recording one run of it into memory.

Workflows are written the way users write agents: decorated functions that
call each other, with ``run.state``, retries and parallel branches.  This
module only opens the run (into a `trajdebug.record.MemorySink`, for speed),
lets the agent fail the way it fails, writes the ground truth, and reads the
run back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import trajdebug
from benchmarks.faults import Injector, record_truth
from trajdebug.model import Run
from trajdebug.record import MemorySink


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
    written on the last turn.
    """
    md = {"workflow": inj.case.workflow, "seed": inj.case.seed, "llm": "scripted stand-in (deterministic)"}
    md.update(metadata or {})
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


class CheckFailed(ValueError):
    """A workflow's own check on its answer failed (how most injected faults surface)."""


__all__ = ["CheckFailed", "Result", "record"]
