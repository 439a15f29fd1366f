"""The switch for one silent defect at a time: `planted(id)` turns it on, `active(id)` reads it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_ON: str | None = None


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    global _ON
    prev, _ON = _ON, fault_id
    try:
        yield
    finally:
        _ON = prev


def active(fault_id: str) -> bool:
    return _ON == fault_id
