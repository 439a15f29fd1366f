"""Switches for the suite's silent faults: `planted(fault_id)` turns one on, `active(fault_id)` reads it.

Each fault id is read by `active` at exactly one place in the agent modules."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_ON: set[str] = set()


@contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    if fault_id:
        _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id or "")


def active(fault_id: str) -> bool:
    return fault_id in _ON
