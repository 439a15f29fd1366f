"""Switches for the suite's silent conditions: one is on at a time, read at one place each."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_ON: set[str] = set()


@contextlib.contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    """Turn ``fault_id`` on for the duration of the block (None: nothing on)."""
    if fault_id:
        _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id or "")


def active(fault_id: str) -> bool:
    """Whether ``fault_id`` is on now (read at exactly one place in the agent code per id)."""
    return fault_id in _ON
