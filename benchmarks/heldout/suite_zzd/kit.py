"""Switches for the silent faults of this suite.

`planted(fault_id)` turns one fault on for the duration of a recording; `active(fault_id)` is read at exactly
one place in the agent code per fault id.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_ON: set[str] = set()


@contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    if fault_id is None:
        yield
        return
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ON
