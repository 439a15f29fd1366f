"""The switch for this suite's planted faults: one fault at a time, read at exactly one place."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_current: str | None = None


@contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    """Turn one fault on for the block (None: every fault off)."""
    global _current
    saved, _current = _current, fault_id
    try:
        yield
    finally:
        _current = saved


def active(fault_id: str) -> bool:
    """True when this fault is switched on."""
    return _current == fault_id


def seed(*parts: object) -> int:
    """A small deterministic number from strings (no hash randomisation)."""
    text = "|".join(str(p) for p in parts)
    h = 7
    for ch in text:
        h = (h * 31 + ord(ch)) % 1_000_003
    return h
