"""The switch for one planted fault at a time: `planted(fault_id)` turns it on, `active(fault_id)` reads it."""
from __future__ import annotations

from contextlib import contextmanager

_ON: list[str] = []


@contextmanager
def planted(fault_id: str | None):
    _ON.append(fault_id or "")
    try:
        yield
    finally:
        _ON.pop()


def active(fault_id: str) -> bool:
    return bool(_ON) and _ON[-1] == fault_id
