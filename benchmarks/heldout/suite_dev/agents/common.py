"""Bookkeeping shared by the agents: which faults are on, and ground-truth marks.

The marks never touch what trajdebug records: they only note the id of the
step that is running (``trajdebug.current_step()``) so the generator can write
``truth.json`` (the faulty step, the steps the wrong value flows through, and
the step that raises).
"""

from __future__ import annotations

import trajdebug


ACTIVE: set[str] = set()
"""Faults switched on for the run being recorded."""

MARKS: dict = {"root": None, "flow": [], "failure": None}


def reset(faults: set[str] | None = None) -> None:
    ACTIVE.clear()
    ACTIVE.update(faults or ())
    MARKS["root"] = None
    MARKS["flow"] = []
    MARKS["failure"] = None


def on(fault: str) -> bool:
    return fault in ACTIVE


def _sid() -> str:
    h = trajdebug.current_step()
    assert h is not None, "truth mark outside a step"
    return h.id


def mark_root() -> None:
    """The faulty step (called only when the fault actually changes the value)."""
    sid = _sid()
    if MARKS["root"] is not None and MARKS["root"] != sid:
        raise AssertionError("a second faulty step in one run: cases must have a single root")
    MARKS["root"] = sid
    if not MARKS["flow"] or MARKS["flow"][-1] != sid:
        MARKS["flow"].append(sid)


def mark_flow() -> None:
    """A step the wrong value passes through, after the root (only once a root is marked)."""
    if MARKS["root"] is None:
        return
    sid = _sid()
    if MARKS["flow"][-1] != sid:
        MARKS["flow"].append(sid)


def mark_failure() -> None:
    """The step about to raise."""
    mark_flow()
    MARKS["failure"] = _sid()


def llm_meta(model: str = "scripted-llm-1") -> None:
    """Attributes a real LLM client would set on its step."""
    h = trajdebug.current_step()
    if h is not None:
        h.set("model", model)
        h.set("temperature", 0)
