"""Switches for the planted faults: `planted(fid)` turns one on, `active(fid)` is read once per fault."""
from __future__ import annotations

import contextlib

_ON: set[str] = set()


@contextlib.contextmanager
def planted(fault_id: str | None):
    if fault_id:
        _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ON
