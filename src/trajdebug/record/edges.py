"""Edges the recorder cannot see by itself: provenance across boundaries, and control.

`traced` declares where a value came from when it crossed a boundary that
identity tracking cannot follow (a queue, a subprocess, the network);
`branch` makes the steps run under a decision depend on it.
"""

from __future__ import annotations

from contextvars import Token
from typing import Any

from trajdebug.record import recorder as rec
from trajdebug.record.context import _BRANCH


def _step_id(ref: Any) -> str | None:
    """The id of a step handle, or a step id given as a string; None for anything else."""
    if isinstance(ref, (rec.StepHandle, rec.RemoteParent)):
        return ref.id if (not isinstance(ref, rec.StepHandle) or ref.seq) else None
    return ref if isinstance(ref, str) and ref else None


def traced(value: Any, *, source: Any) -> Any:
    """Declare that ``value`` came from ``source`` (a step handle or a step id) across a boundary
    the recorder cannot see; returns ``value``.

    When ``value`` later reaches a step's arguments, that step gets a ``declared``
    data edge from ``source``.  Anything but a handle or an id is ignored.
    """
    run = rec.current_run()
    sid = _step_id(source)
    if run is None or sid is None or not getattr(run, "_active", False):
        return value
    run._push(("trace", value, sid, 0))
    return value


class branch:
    """Steps started inside ``with trajdebug.branch(decision):`` get a ``control`` edge from the
    decision step (a step handle or a step id): the branch taken depends on it.

    Pass the *step* that decided, not the value it decided: anything but a handle
    or an id adds no edge.
    """

    __slots__ = ("_id", "_token")

    def __init__(self, decision: Any) -> None:
        self._id = _step_id(decision)
        self._token: Token[tuple[str, ...]] | None = None

    def __enter__(self) -> branch:
        if self._id is not None:
            self._token = _BRANCH.set((*_BRANCH.get(), self._id))
            rec.scope_opened()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _BRANCH.reset(self._token)
            self._token = None
            rec.scope_closed()


__all__ = ["branch", "traced"]
