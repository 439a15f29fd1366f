"""Case switches for suite_zzi.

Exactly one switch is on while a case's first recording is made (`ACTIVE`); every other
recording (the control run, the references) is made with none on.  Each switch is read at
one place in one agent module, through `on`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


ACTIVE: str | None = None


def on(switch: str) -> bool:
    """Whether `switch` is the one turned on for the recording being made."""
    return ACTIVE == switch


@contextmanager
def active(switch: str | None) -> Iterator[None]:
    """Turn `switch` on (None: all off) for the block."""
    global ACTIVE
    previous, ACTIVE = ACTIVE, switch
    try:
        yield
    finally:
        ACTIVE = previous
