"""Switches for the suite's cases: each switch is read at exactly one place in the agents."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

_ON: set[str] = set()


@contextmanager
def planted(case_id: str) -> Iterator[None]:
    """Turn one case's switch on for the duration of the block."""
    _ON.add(case_id)
    try:
        yield
    finally:
        _ON.discard(case_id)


def active(case_id: str) -> bool:
    """Whether the case's switch is on (each id is read at one place only)."""
    return case_id in _ON
