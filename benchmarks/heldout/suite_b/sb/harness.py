"""Case bookkeeping shared by the agents: the fault switch, step counters and root markers.

An agent's code asks `faulty(fault_name, step_name)` at the one place where a
fault can be injected.  It answers True only when the scenario's fault is that
one, and then remembers which step (name, occurrence) produced the wrong value,
so that the generator can point at it in the recorded run.  Every tool, parser
or node that may be a root or the failing step calls `tick(name)` on entry.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Case:
    """One failing case: an input, a fault, and where the fault sits."""

    id: str
    task: dict[str, Any]
    fault: str
    fault_kind: str
    description: str
    root: str
    """``llm`` for a wrong model answer, else the recorded name of the tool/parser/node step."""
    evidence: str
    """A string the root step's recorded output (or input, for ``llm`` tool-call arguments) must contain."""
    path: list[str]
    """Step names along the wrong value's flow, root first, failing step last (``llm`` = any model call)."""
    failure: str
    """The recorded name of the step that raises."""


@dataclass
class RunContext:
    fault: str | None = None
    counts: Counter[str] = field(default_factory=Counter)
    root: tuple[str, int] | None = None
    failure: tuple[str, int] | None = None
    fired: int = 0


CTX = RunContext()


def reset(fault: str | None) -> RunContext:
    global CTX
    CTX = RunContext(fault=fault)
    return CTX


def tick(name: str) -> int:
    """Count one call of step ``name`` in the current run; returns its 1-based occurrence."""
    CTX.counts[name] += 1
    return CTX.counts[name]


def faulty(fault: str, step_name: str | None = None) -> bool:
    """Whether the injected fault ``fault`` is on; a tool/parser fault also marks ``step_name`` as the root."""
    if CTX.fault != fault:
        return False
    CTX.fired += 1
    if step_name is not None and CTX.root is None:
        CTX.root = (step_name, CTX.counts[step_name])
    return True


def failing(step_name: str) -> None:
    """Note that step ``step_name`` (at its current occurrence) is about to raise."""
    if CTX.failure is None:
        CTX.failure = (step_name, CTX.counts[step_name])
