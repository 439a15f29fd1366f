"""Expectations written in the agent: what a step's output should be, checked at analysis time.

``trajdebug.expect("extract_price", lambda out: out["currency"] == "EUR")``
(or ``expect=`` on ``trajdebug.step``) registers a check for every step of
that name, in this process.  Nothing is recorded but the step's name: the
guided search (`trajdebug.analysis.GuidedSearch`) runs the check on the
recorded output when it asks about such a step
(`trajdebug.analysis.ExpectationOracle`), so a bug is found with no person
present.  Code is never looked up from recorded data; a source analyzed in
another process uses only the checks that process registered.

A check returns True (the output is as expected), False (it is not) or None
(cannot tell), or raises `AssertionError` (False, the message kept).  A check
that takes two arguments gets the step's recorded input too:
``trajdebug.expect("plan_pages", lambda out, inp: len(out) * inp["page_size"] >= inp["total"])``.
"""

from __future__ import annotations

from _thread import allocate_lock


# ``@trajdebug.step(expect=...)`` imports this module when a function is decorated, at the agent's
# import time: `typing` is the type checker's only, and the lock is `threading.Lock` without `threading`.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Check = Callable[..., Any]
    """A check on a step's output (and, taking two arguments, its input): True, False, None, or an
    `AssertionError` raised."""

_CHECKS: dict[str, Check] = {}
_LOCK = allocate_lock()


def expect(name: str, check: Check) -> Check:
    """Register ``check`` for the steps named ``name`` (replacing an earlier one); returns the check.

    Raises:
        TypeError: ``check`` is not callable or ``name`` is not a string.
    """
    if not isinstance(name, str) or not name:
        raise TypeError("expect(name, check): name must be a step name")
    if not callable(check):
        raise TypeError(f"expect({name!r}, check): check must be callable")
    with _LOCK:
        _CHECKS[name] = check
    return check


def expectations() -> dict[str, Check]:
    """The registered checks by step name (a copy)."""
    with _LOCK:
        return dict(_CHECKS)


def forget(name: str | None = None) -> None:
    """Drop the check of ``name`` (None: every check)."""
    with _LOCK:
        if name is None:
            _CHECKS.clear()
        else:
            _CHECKS.pop(name, None)


__all__ = ["expect", "expectations", "forget"]
