"""Per-case switches for the held-out suite suite_zzk.

The generator sets ``ACTIVE`` to the id of the case it is recording (``None`` for the
control and reference runs).  Each agent reads each of its switches at exactly one
place, with ``kit.on(case_id)``; everything else runs as shipped.
"""

from __future__ import annotations


ACTIVE: str | None = None


def on(case_id: str) -> bool:
    """True while the generator records the failed run of ``case_id``."""
    return ACTIVE == case_id


def switch(case_id: str | None) -> None:
    """Turn one case on (or, with ``None``, every case off)."""
    global ACTIVE
    ACTIVE = case_id
