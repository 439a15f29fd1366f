"""Switches for the suite's cases: one case on at a time, read at exactly one place per case."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_ON: set[str] = set()


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ON
