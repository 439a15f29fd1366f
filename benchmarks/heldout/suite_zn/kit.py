"""Switches for the planted faults: `planted(fault_id)` turns one on, `active(fault_id)` reads it.

Each fault id is read by `active` at exactly one place in the agent modules."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_on: set[str] = set()


@contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    """Turn ``fault_id`` on for the duration of the block (None: nothing is on)."""
    if fault_id is None:
        yield
        return
    with _lock:
        _on.add(fault_id)
    try:
        yield
    finally:
        with _lock:
            _on.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether ``fault_id`` is on now."""
    with _lock:
        return fault_id in _on
