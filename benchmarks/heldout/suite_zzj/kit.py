"""Case switches: which case of the suite is switched on for the run being recorded.

`generate.py` sets `ACTIVE` before each recording; each agent reads its switches with `on(case_id)`,
each switch at one place in the agent.  With nothing active every agent behaves as intended.
"""

from __future__ import annotations


ACTIVE: str | None = None


def activate(case_id: str | None) -> None:
    """Switch one case on (or all off with None) for the next recordings."""
    global ACTIVE
    ACTIVE = case_id


def on(case_id: str) -> bool:
    """Whether the case named is the one switched on."""
    return ACTIVE == case_id
