"""The switchboard of suite M: one switch per planted fault, read at exactly one place.

`planted(fid)` turns one switch on around one run; `active(fid)` is read by the one tool,
code step or model policy that the switch changes.  The switch is a process-wide flag (not a
context variable) because model policies run on the fake server's threads.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


_lock = threading.Lock()
_on: set[str] = set()


@contextmanager
def planted(fid: str) -> Iterator[None]:
    with _lock:
        _on.add(fid)
    try:
        yield
    finally:
        with _lock:
            _on.discard(fid)


def active(fid: str) -> bool:
    with _lock:
        return fid in _on
