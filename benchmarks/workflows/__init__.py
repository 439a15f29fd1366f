"""The benchmark workflows: realistic agents written with the recording SDK.

Each module has ``NAME``, ``FAULTS`` (the fault types it can inject) and
``run(case) -> Result``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType

from benchmarks.faults import Case
from benchmarks.workflows import coding_loop, ops_runbook, rag_qa, research_team, sql_report, web_research
from benchmarks.workflows._base import _MODE, CheckFailed, Result, entry_of
from trajdebug.core.model import Run


WORKFLOWS: dict[str, ModuleType] = {
    m.NAME: m for m in (sql_report, web_research, ops_runbook, research_team, rag_qa, coding_loop)
}
"""The workflows by name."""


def replay_case(
    workflow: str,
    fault: str | None,
    seed: int,
    distractors: Sequence[str] = (),
    *,
    disarmed: bool = False,
) -> None:
    """The replayable entry point of a benchmark case: run its analysed turn in the current run.

    `trajdebug.replay.replay` calls it inside the replay's run with the
    arguments recorded in the run's ``entry`` metadata.  The workflow rebuilds
    its world from the seed; earlier conversation turns are re-run outside the
    replay (their effects are inputs of the analysed turn).

    Args:
        workflow: The workflow's name.
        fault: The case's fault type (None for a clean case).
        seed: The case's seed.
        distractors: The case's distractors.
        disarmed: Run the fault-free twin: same seed, data and task, no fault injected.

    Raises:
        KeyError: an unknown workflow.
        Exception: whatever the agent raises (its failure; the run records it).
    """
    case = Case(workflow, fault, seed, tuple(distractors))
    token = _MODE.set("disarmed" if disarmed else "current")
    try:
        WORKFLOWS[workflow].run(case)
    finally:
        _MODE.reset(token)


def reference(case: Case) -> Run:
    """Record the case's fault-free twin, ready to supply corrections (`trajdebug.replay.verify`).

    It is recorded with `trajdebug.replay.record`, so its state steps keep the
    values they wrote (``state_values``) and a state step can be corrected too.
    """
    from trajdebug.replay import record as record_replayable

    e = entry_of(case, disarmed=True)
    return record_replayable(
        replay_case,
        kwargs=e["kwargs"],
        name=case.workflow,
        metadata={"workflow": case.workflow, "seed": case.seed, "reference_for": case.case_id},
    )


__all__ = ["WORKFLOWS", "CheckFailed", "Result", "reference", "replay_case"]
