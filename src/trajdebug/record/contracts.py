"""Declared contracts: checks, pre-conditions and post-conditions recorded on the current step.

A check is a claim about the run that the agent's author can state and the
debugger cannot guess: "the SQL names only known columns", "the totals cover
every region".  `check` evaluates one and records the result on the step being
recorded, as ``attributes["checks"]``, a list of
``{"name", "passed", "message", "when"}``; `contract` wraps a function with
pre-conditions on its arguments and post-conditions on its result.

The analysis reads them back: a failed check is a failure (detector
``contract``); a failed post-condition makes the step suspect; a failed
pre-condition makes the steps that *fed* it suspect; a passed check is
evidence that the step's output is good, which exonerates the steps whose
outputs fed it (confidence pruning, Zhang, Gupta & Gupta, PLDI 2006).

Outside a recorded step a check is still evaluated (and, with ``strict=True``,
still raises); there is just nowhere to record it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeVar


When = Literal["pre", "post", "checkpoint"]
"""When a check ran: on a step's inputs, on its output, or anywhere in between."""

F = TypeVar("F", bound=Callable[..., Any])

Condition = Callable[..., Any]
Conditions = Condition | Sequence[Condition] | Mapping[str, Condition] | None


class ContractError(AssertionError):
    """A check that failed under ``strict=True``."""

    def __init__(self, name: str, message: str | None, when: When) -> None:
        super().__init__(f"{when} check {name!r} failed" + (f": {message}" if message else ""))
        self.name = name
        self.message = message
        self.when = when


def _record(name: str, passed: bool, message: str | None, when: When) -> None:
    from trajdebug.record.recorder import current_step

    handle = current_step()
    if handle is None:
        return
    attrs = getattr(handle, "attrs", None)
    previous = attrs.get("checks") if isinstance(attrs, Mapping) else None
    checks = list(previous) if isinstance(previous, list) else []
    entry: dict[str, Any] = {"name": name, "passed": passed, "when": when}
    if message:
        entry["message"] = message
    checks.append(entry)
    handle.set("checks", checks)


def _evaluate(
    condition: Any, args: tuple[Any, ...] = (), kwargs: Mapping[str, Any] | None = None
) -> tuple[bool, str | None]:
    if not callable(condition):
        return bool(condition), None
    try:
        return bool(condition(*args, **(kwargs or {}))), None
    except Exception as exc:  # noqa: BLE001 - a check that crashes is a failed check, not a crashed agent
        return False, f"the check raised {type(exc).__name__}: {exc}"


def check(
    name: str,
    condition: Any,
    message: str | None = None,
    *,
    when: When = "checkpoint",
    strict: bool = False,
) -> bool:
    """Evaluate a check and record its result on the current step.

    Example:
        ```python
        rows = run_sql(sql)
        trajdebug.check("rows returned", len(rows) > 0, f"query returned no rows: {sql}")
        ```

    Args:
        name: What is checked, in a few words.
        condition: The outcome (truthy passes), or a callable without arguments
            returning it; a callable that raises counts as a failed check.
        message: Why it failed, for the report (recorded only on failure).
        when: ``pre`` (on the step's inputs), ``post`` (on its output) or ``checkpoint``.
        strict: Raise `ContractError` when the check fails.

    Returns:
        Whether the check passed.

    Raises:
        ContractError: the check failed and ``strict`` is set.
        ValueError: ``when`` is not one of ``pre``, ``post``, ``checkpoint``.
    """
    if when not in ("pre", "post", "checkpoint"):
        raise ValueError(f"check {name!r}: when must be 'pre', 'post' or 'checkpoint', not {when!r}")
    passed, crash = _evaluate(condition)
    note = crash or (None if passed else message)
    _record(name, passed, note, when)
    if strict and not passed:
        raise ContractError(name, note, when)
    return passed


def _named(conditions: Conditions, kind: str) -> list[tuple[str, Condition]]:
    if conditions is None:
        return []
    if isinstance(conditions, Mapping):
        return list(conditions.items())
    items = [conditions] if callable(conditions) else list(conditions)
    out = []
    for i, c in enumerate(items):
        name = getattr(c, "__name__", "")
        out.append((name if name and name != "<lambda>" else f"{kind}-{i + 1}", c))
    return out


def contract(*, pre: Conditions = None, post: Conditions = None, strict: bool = False) -> Callable[[F], F]:
    """Wrap a function with pre-conditions on its arguments and post-conditions on its result.

    Put it *under* the step decorator, so the checks land on the function's own step:

    Example:
        ```python
        @trajdebug.step(kind="tool")
        @trajdebug.contract(pre={"is a SELECT": lambda sql: sql.lstrip().upper().startswith("SELECT")},
                            post={"rows returned": lambda rows: len(rows) > 0})
        def run_sql(sql: str) -> list[dict]: ...
        ```

    Args:
        pre: Conditions called with the function's arguments (a callable, a list, or a
            mapping of names to callables).
        post: Conditions called with the function's result.
        strict: Raise `ContractError` when a condition fails (a pre-condition before
            the function runs).

    Returns:
        The decorator.
    """
    pres = _named(pre, "pre")
    posts = _named(post, "post")

    def run_pre(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        for name, cond in pres:
            passed, crash = _evaluate(cond, args, kwargs)
            _record(
                name,
                passed,
                crash or (None if passed else "pre-condition does not hold for the arguments"),
                "pre",
            )
            if strict and not passed:
                raise ContractError(name, crash, "pre")

    def run_post(result: Any) -> None:
        for name, cond in posts:
            passed, crash = _evaluate(cond, (result,))
            _record(
                name,
                passed,
                crash or (None if passed else "post-condition does not hold for the result"),
                "post",
            )
            if strict and not passed:
                raise ContractError(name, crash, "post")

    def decorate(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                run_pre(args, kwargs)
                result = await fn(*args, **kwargs)
                run_post(result)
                return result

            return awrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            run_pre(args, kwargs)
            result = fn(*args, **kwargs)
            run_post(result)
            return result

        return wrapper  # type: ignore[return-value]

    return decorate


__all__ = ["ContractError", "When", "check", "contract"]
