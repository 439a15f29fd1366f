"""Switches for the suite's silent cases: `planted(id)` turns one on, `active(id)` reads it."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

_ON: set[str] = set()
_LOCK = threading.Lock()


@contextlib.contextmanager
def planted(case_key: str | None) -> Iterator[None]:
    """Turn on one case switch for the duration of a recording (None: nothing on)."""
    with _LOCK:
        if case_key:
            _ON.add(case_key)
    try:
        yield
    finally:
        with _LOCK:
            _ON.discard(case_key or "")


def active(case_key: str) -> bool:
    """Whether a switch is on (read from the model server thread too, hence a plain set)."""
    with _LOCK:
        return case_key in _ON
