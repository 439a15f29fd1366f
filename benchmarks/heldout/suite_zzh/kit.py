"""Case switches: which case is switched on for the run being recorded.

Each agent reads each of its switches at exactly one place (``kit.on("agent.switch")``).
The generator turns one switch on for a case's failed run and clears it for every other run.
"""

from __future__ import annotations


_active: str | None = None


def arm(name: str | None) -> None:
    """Switch on the named case switch (None: every switch off)."""
    global _active
    _active = name


def clear() -> None:
    """Every switch off."""
    arm(None)


def on(name: str) -> bool:
    """Whether the named switch is on for the run being recorded."""
    return _active == name


def active() -> str | None:
    """The switch that is on, if any."""
    return _active
