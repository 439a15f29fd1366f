"""The switch for the suite's silent faults: one id on at a time, read at exactly one place per id."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_ON: set[str] = set()


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn one fault on for the duration of the block."""
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether ``fault_id`` is on (each id is read at exactly one place in the agents)."""
    return fault_id in _ON
