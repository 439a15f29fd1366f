"""Fault injection for the benchmark workflows: the fault types, the cases, the injector.

A benchmark case is one recorded run of one workflow with at most one fault
injected at a known step.  The workflow's code asks the `Injector` at each
place a fault of some type could happen (``if inj.on("truncated-output"):``);
the call answers whether this case injects that fault *here* and, when it
does, remembers the id of the step being recorded at that moment
(`trajdebug.current_step`).  That id is the ground truth: the benchmark asks
every localization method to find it, given only the recorded run.

Distractors are the noise of real runs that a localizer must not blame: a
transient error that a retry recovers, a harmless warning a step reports and
ignores.  They are switched on per case from the seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Literal

import trajdebug


FaultType = Literal[
    "bad-tool-args",
    "masked-retry-stale",
    "json-repair-drop",
    "wrong-state-value",
    "wrong-branch",
    "truncated-output",
    "stale-fact",
    "subagent-wrong",
    "race",
    "env-change",
]
"""The injected fault types."""

FAULT_TYPES: dict[str, str] = {
    "bad-tool-args": "a planner (LLM) gives a tool wrong arguments",
    "masked-retry-stale": "a tool error is masked by a retry that serves stale (cached) data",
    "json-repair-drop": "an LLM emits malformed JSON; a lenient parser 'repairs' it by dropping items",
    "wrong-state-value": "a wrong value is written to shared state and read much later",
    "wrong-branch": "a decision step takes the wrong branch",
    "truncated-output": "a tool's output is truncated",
    "stale-fact": "a wrong fact from an earlier conversation turn is reused in a later turn",
    "subagent-wrong": "a sub-agent returns a wrong result to its lead",
    "race": "parallel branches race on shared state (a lost update)",
    "env-change": "the environment changed under the agent (clock, configuration)",
}
"""Each fault type and what it does."""

Distractor = Literal["transient", "warning"]
"""``transient``: a tool fails once and a retry recovers; ``warning``: a step reports a harmless warning."""


class TransientError(ConnectionError):
    """A transient failure (connection reset, rate limit) that a retry recovers from."""


class ToolTimeout(TimeoutError):
    """A tool call that timed out."""


@dataclass(frozen=True, slots=True)
class Case:
    """One benchmark case: a workflow run with a seed, at most one fault, and distractors."""

    workflow: str
    """The workflow's name."""
    fault: str | None
    """The fault type injected (one of `FAULT_TYPES`), or None for a clean run."""
    seed: int
    """Seed of the case's variation (data, wording, where the fault lands)."""
    distractors: tuple[str, ...] = ()
    """The distractors switched on."""

    @property
    def case_id(self) -> str:
        """A readable id: ``workflow/fault/seed``."""
        return f"{self.workflow}/{self.fault or 'clean'}/{self.seed}"


def distractors_for(seed: int) -> tuple[str, ...]:
    """The distractors of a case, from its seed: none, one or both, about equally often."""
    return ((), ("transient",), ("warning",), ("transient", "warning"))[seed % 4]


@dataclass(slots=True)
class Injector:
    """What a workflow consults to inject its case's fault and distractors.

    Args:
        case: The case being run.
    """

    case: Case
    """The case."""
    rng: random.Random = field(init=False)
    """The case's random source (seeded): everything that varies comes from it."""
    step_id: str | None = field(default=None, init=False)
    """The id of the step where the fault was injected, once it was."""
    run_id: str | None = field(default=None, init=False)
    """The run holding that step (differs from the analysed run for earlier turns)."""
    armed: bool = field(default=True, init=False)
    """Whether faults may be injected now (a conversation injects in one chosen turn)."""
    _transient_done: set[str] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(f"{self.case.workflow}:{self.case.fault}:{self.case.seed}")

    @property
    def fault(self) -> str | None:
        """The case's fault type."""
        return self.case.fault

    def on(self, fault: str) -> bool:
        """Whether to inject ``fault`` here; when yes, the current step becomes the ground truth.

        Only the first place that asks for the case's fault injects it: one fault per case.
        """
        if self.case.fault != fault or self.step_id is not None or not self.armed:
            return False
        s = trajdebug.current_step()
        run = trajdebug.current_run()
        if s is None:
            raise RuntimeError(f"fault {fault!r} asked for outside a recorded step")
        self.step_id = s.id
        self.run_id = run.run_id if run is not None else None
        return True

    def transient(self, site: str) -> None:
        """Fail once at ``site`` when the case carries a transient-error distractor.

        Raises:
            TransientError: on the first call at this site in a case with the distractor.
        """
        if "transient" in self.case.distractors and site not in self._transient_done:
            self._transient_done.add(site)
            raise TransientError(f"{site}: connection reset by peer (transient)")

    def warning(self, message: str) -> None:
        """Report a harmless warning on the current step when the case carries that distractor.

        The warning is an error event that ends ``ignored`` (the step goes on with its value).
        """
        if "warning" not in self.case.distractors:
            return
        s = trajdebug.current_step()
        if s is not None:
            s.error(message, type="Warning")
            s.fallback(s.output, "harmless warning, ignored")

    def truth(self) -> dict[str, Any]:
        """The ground truth as recorded in ``run.metadata["fault"]``."""
        out: dict[str, Any] = {"type": self.case.fault, "step_id": self.step_id}
        if self.run_id is not None:
            out["run_id"] = self.run_id
        return out


def record_truth(run: Any, inj: Injector) -> None:
    """Write the ground truth into the run's metadata (and its records, since the run
    record may already have been written when the fault's step becomes known)."""
    truth = inj.truth()
    meta = {"fault": truth, "case": inj.case.case_id, "distractors": list(inj.case.distractors)}
    run.metadata.update(meta)
    emit = getattr(run, "_emit", None)
    if emit is not None:
        # The same "meta" record the bundled demo writes (trajdebug.demo.run_demo).
        emit({"t": "meta", "metadata": meta})


__all__ = [
    "FAULT_TYPES",
    "Case",
    "Distractor",
    "FaultType",
    "Injector",
    "ToolTimeout",
    "TransientError",
    "distractors_for",
    "record_truth",
]
