"""Switches for the suite's cases: each is read at exactly one place in the agents."""
from __future__ import annotations

from contextlib import contextmanager

_ON: set[str] = set()


@contextmanager
def planted(fault_id: str | None):
    if fault_id:
        _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ON
