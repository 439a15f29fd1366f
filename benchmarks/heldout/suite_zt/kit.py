"""Fault switches: `planted(fault_id)` turns one on; each fault is read with `active` at one place."""
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
