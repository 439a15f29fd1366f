"""Switches for the suite's silent faults: one active at a time, read at exactly one place each."""
from __future__ import annotations

import contextlib

_ACTIVE: str | None = None


@contextlib.contextmanager
def planted(fault_id: str | None):
    global _ACTIVE
    prev, _ACTIVE = _ACTIVE, fault_id
    try:
        yield
    finally:
        _ACTIVE = prev


def active(fault_id: str) -> bool:
    return _ACTIVE == fault_id
