"""Which recorded runs can serve as references for a failing run: passing runs of the same agent.

A reference is a run of the same agent (same run name, and the same ``agent``
metadata when both runs state one) that succeeded, recorded before or after
the failing run, that is neither a replay (``replay_of``) nor a run recorded to
verify another (``reference_for``: it answered the failing run's own input
with the fault removed, a luxury real users do not have).  The most recent
come first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from trajdebug.core.model import Run


MAX_REFERENCES = 50
"""At most this many references are used (the most recent)."""


def is_original(run: Run) -> bool:
    """Whether a run is one the agent made (not a replay, not a run recorded to verify another)."""
    md = run.metadata
    return not md.get("replay_of") and not md.get("reference_for")


def same_agent(a: Run, b: Run) -> bool:
    """Whether two runs are runs of the same agent."""
    if a.name != b.name:
        return False
    x, y = a.metadata.get("agent"), b.metadata.get("agent")
    return x is None or y is None or x == y


def references(run: Run, pool: Iterable[Run], limit: int = MAX_REFERENCES) -> tuple[Run, ...]:
    """The passing runs of the same agent in ``pool`` that can stand as references for ``run``."""
    found = [
        r
        for r in pool
        if r.run_id != run.run_id and r.outcome == "success" and is_original(r) and same_agent(r, run)
    ]
    found.sort(key=lambda r: r.start_ns, reverse=True)
    return tuple(found[:limit])


def _given(run: Run) -> tuple[str, Any] | None:
    """What a run was asked: its metadata's ``task`` (or ``task_id``, ``input``, ``args``), else its first step's input."""
    for key in ("task", "task_id", "input", "args"):
        if run.metadata.get(key) is not None:
            return (key, run.metadata[key])
    return ("first", run.steps[0].input) if run.steps else None


def same_request(a: Run, b: Run) -> bool:
    """Whether two runs of the same agent were given the same input (the same ``task``, or the same first input):
    a passing one is a same-input reference of the other, as ``trajdebug diff`` pairs them."""
    x, y = _given(a), _given(b)
    if x is None or y is None or x[0] != y[0]:
        return False
    try:
        if x[1] == y[1]:
            return True
        return json.dumps(x[1], sort_keys=True, default=str) == json.dumps(y[1], sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        return False  # keys that do not sort (an int beside a str), or a value too deep to write: not shown alike


__all__ = ["MAX_REFERENCES", "is_original", "references", "same_agent", "same_request"]
