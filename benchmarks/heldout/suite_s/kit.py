"""Switches for the suite's cases: one switch per case, turned on around one run."""

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
