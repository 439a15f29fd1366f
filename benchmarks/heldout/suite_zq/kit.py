"""Switches for the suite's cases: `planted(case_switch)` turns one on, `active(case_switch)` reads it.

Each switch is read at exactly one place in the agent modules.  The switch set is a plain module global
(not a context variable) so a model policy answering in the fake server's thread sees it too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_ON: set[str] = set()


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn the switch `fault_id` on for the duration of the block."""
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether the switch `fault_id` is on."""
    return fault_id in _ON
