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


def stated(value: Any) -> bool:
    """Whether ``value`` states an input: None, a blank text, and an empty mapping or list state none (a first
    step that takes no argument records ``{}`` whatever ticket it then pops from a queue: review rev51u M1)."""
    if value is None:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    return not isinstance(value, (dict, list, tuple)) or bool(value)


def given_input(run: Run) -> tuple[str, Any] | None:
    """What a run was asked, as ``(where, value)``: its metadata's ``task`` (or ``task_id``, ``input``, ``args``),
    else its first step's input (``first``); None for a run that states neither (`stated`: an empty one is
    none, so two runs given nothing are never the same input, whatever each was asked)."""
    for key in ("task", "task_id", "input", "args"):
        if stated(run.metadata.get(key)):
            return (key, run.metadata[key])
    return ("first", run.steps[0].input) if run.steps and stated(run.steps[0].input) else None


def input_key(run: Run) -> tuple[str, str] | None:
    """What a run was given (`given_input`) as a key: where it was read, and the value written as JSON (keys
    sorted; where they do not sort, an int beside a str, as given).  None for a run given nothing, or a value
    too deep to write: it is the same input as no other run's.  Runs are indexed by it (`same_request`)."""
    given = given_input(run)
    if given is None:
        return None
    where, value = given
    try:
        return where, json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        pass
    except RecursionError:
        return None
    try:
        return where, json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        return None


def same_request(a: Run, b: Run) -> bool:
    """Whether two runs of the same agent were given the same input (the same ``task``, or the same first input,
    as `input_key` writes it): a passing one is a same-input reference of the other, as ``trajdebug diff`` pairs
    them (`trajdebug.replay.input_difference` reads inputs alike)."""
    x = input_key(a)
    return x is not None and x == input_key(b)


__all__ = [
    "MAX_REFERENCES",
    "given_input",
    "input_key",
    "is_original",
    "references",
    "same_agent",
    "same_request",
    "stated",
]
