"""Python's cyclic garbage collector, paused while a library call builds objects that all stay alive.

Loading a trace file, decoding foreign spans and analysing a run each allocate millions of
small containers that live until the call returns (records, steps, atoms, evidence).  Every
collection the allocations trigger re-traverses all of them, which cost as much as the work
itself on a 10,000-step run.  Reference counting still frees what dies while the collector
is paused; cycles made meanwhile wait for the next collection.

One helper for the whole package (there were three toggles, each ``gc.disable()`` /
``gc.enable()`` on its own), because the collector is process-wide and the toggles must nest:

* The first caller in remembers whether the collector was on; only the last one out turns it
  back on, and only if it was on.  A caller who turned it off keeps it off.
* The count is shared by all threads under a lock: two threads analysing at once no longer
  race (before, the first to finish re-enabled the collector under the other one's feet).

Why not `gc.freeze`: it would move everything alive, the caller's own objects included, into
the permanent generation for good, exempting them from collection after the call returned.
That is a decision for an application at start-up, not for a library call.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator


_lock = threading.Lock()
_depth = 0
_restore = False
"""Whether the collector was on when the outermost pause began (to turn it back on at the end)."""


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector paused for the ``with`` block (or the decorated function: ``@collector_paused()``).

    Reentrant and thread-safe: nested and concurrent pauses share one count, and the collector
    is turned back on when the last one ends, if it was on when the first one began.
    """
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            if _restore:
                gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                _restore = False
                gc.enable()


def pause_depth() -> int:
    """How many pauses are active now, across all threads (0: the collector is the caller's)."""
    return _depth


__all__ = ["collector_paused", "pause_depth"]
