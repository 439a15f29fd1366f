"""Switches for the silent faults of suite_zzb: `planted(id)` turns one on, `active(id)` reads it."""

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
