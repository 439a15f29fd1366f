"""Switches for the silent faults of suite_zf: each fault id is read with `active` at exactly one place."""

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
    """Whether the fault is on (read at exactly one place in the agents' code per fault id)."""
    return fault_id in _ON
