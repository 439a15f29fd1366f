"""The switches of suite V: one per planted fault, read at exactly one place each."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

_ON: set[str] = set()


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn one fault on for the block (one run)."""
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ON
