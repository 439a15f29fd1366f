"""Switches for suite W: one named switch per case, on for exactly one recorded run.

``planted(switch_id)`` turns a switch on around one run; ``active(switch_id)`` is read at exactly one
place in the agent (a tool, a code step, or the scripted model policy).  Nothing here is recorded.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_ON: set[str] = set()


@contextmanager
def planted(switch_id: str) -> Iterator[None]:
    _ON.add(switch_id)
    try:
        yield
    finally:
        _ON.discard(switch_id)


def active(switch_id: str) -> bool:
    return switch_id in _ON
