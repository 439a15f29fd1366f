"""One switch per planted fault: `planted(fid)` around one run, `active(fid)` read at one place."""
from __future__ import annotations

from contextlib import contextmanager

_on: set[str] = set()


@contextmanager
def planted(fault_id: str | None):
    if fault_id:
        _on.add(fault_id)
    try:
        yield
    finally:
        _on.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _on
