"""Switches for the suite's planted faults: `planted(fault_id)` turns one on, `active(fault_id)` reads it.

A module-global set (not a contextvar): the fake model server answers from its own thread.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

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
