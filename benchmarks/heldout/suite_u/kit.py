"""The switch box: one switch per case, read at exactly one place in the agents."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


_ON: str | None = None


@contextlib.contextmanager
def planted(case_switch: str) -> Iterator[None]:
    global _ON
    prev, _ON = _ON, case_switch
    try:
        yield
    finally:
        _ON = prev


def active(case_switch: str) -> bool:
    return _ON == case_switch


_MARK: list[str] = []


def mark(text: object) -> None:
    """Note the text the switched step put in its output (kept in memory, never recorded)."""
    _MARK.append(str(text))


def take_mark() -> str | None:
    out = _MARK[0] if _MARK else None  # the first place the switch took effect
    _MARK.clear()
    return out
