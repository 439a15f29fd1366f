"""Switches for the suite's planted conditions: `planted(id)` turns one on, `active(id)` reads it.

Each id is read at exactly one place in the agent modules."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

_ON: set[str] = set()


@contextlib.contextmanager
def planted(fault_id: str) -> Iterator[None]:
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ON
