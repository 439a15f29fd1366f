"""Which case is switched on. Each agent reads one switch per case, at one place in its code."""

from __future__ import annotations


ACTIVE: str | None = None


def use(case_id: str | None) -> None:
    global ACTIVE
    ACTIVE = case_id


def on(case_id: str) -> bool:
    return ACTIVE == case_id
