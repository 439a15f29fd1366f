"""The switch for this suite's silent changes: one active id at a time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_ACTIVE: str | None = None


@contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    """Turn one change on for the duration of the block (None: all off)."""
    global _ACTIVE
    previous = _ACTIVE
    _ACTIVE = fault_id
    try:
        yield
    finally:
        _ACTIVE = previous


def active(fault_id: str) -> bool:
    """True when this change is on; each id is read at exactly one place in the agents."""
    return _ACTIVE == fault_id
