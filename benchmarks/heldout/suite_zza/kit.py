"""Switches for the suite's cases: `planted(case_id)` turns one on, `active(case_id)` reads it.

Each switch is read at exactly one place in its agent's code.  The state is process-wide (not a
context variable) because the fake model server answers from its own threads.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_ON: set[str] = set()
_LOCK = threading.Lock()


@contextlib.contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    with _LOCK:
        if fault_id:
            _ON.add(fault_id)
    try:
        yield
    finally:
        with _LOCK:
            _ON.discard(fault_id or "")


def active(fault_id: str) -> bool:
    with _LOCK:
        return fault_id in _ON
