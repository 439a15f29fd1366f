"""Switches for the suite's silent faults: each fault id is read at exactly one place."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

_ON: set[str] = set()


@contextlib.contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    if fault_id:
        _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id or "")


def active(fault_id: str) -> bool:
    return fault_id in _ON
