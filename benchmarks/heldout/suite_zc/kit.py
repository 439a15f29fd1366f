"""Switches for the suite's cases: `planted(case_switch)` turns one on, `active(case_switch)` reads it."""

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
