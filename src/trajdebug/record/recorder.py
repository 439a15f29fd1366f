"""The recording SDK's step API: `step()` (decorator or context manager), `current_step`, `current_run`.

`step()` builds a `trajdebug.record.steps.StepHandle` (the hot path: entering and leaving a step,
see that module) or, when recording is off, returns the shared no-op handle defined here.  The
step handle's names are re-exported, so ``from trajdebug.record.recorder import StepHandle`` keeps
working.
"""

from __future__ import annotations

from trajdebug.record import context as _ctx
from trajdebug.record.config import CONFIG
from trajdebug.record.decorate import decorate
from trajdebug.record.steps import (
    _KINDS,
    RecorderWarning,
    RemoteParent,
    StepHandle,
    StopRun,
    _check_kind,
    _new_handle,
    scope_closed,
    scope_opened,
)
from trajdebug.record.steps import request_stop as request_stop
from trajdebug.record.steps import take_stop as take_stop


# `import trajdebug` imports this module: `typing` is for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, TypeVar, overload

    from trajdebug.record.runs import RunHandle

    F = TypeVar("F", bound=Callable[..., Any])
    T = TypeVar("T")

# Bound by assignment, not imported by name, so that ``_RUN.get()`` compiles to a method call (see
# the same lines in `trajdebug.record.steps`).
_RUN = _ctx._RUN
_STEP = _ctx._STEP


if TYPE_CHECKING:  # the overloads are the type checker's (`typing.overload` costs start-up)

    @overload
    def step(name: F, /) -> F: ...
    @overload
    def step(
        name: str | None = None,
        /,
        kind: str = "other",
        *,
        deps: Iterable[Any] = (),
        agent: str | None = None,
        input: Any = None,
        attempt: int | None = None,
        retry_of: Any = None,
        attributes: dict[str, Any] | None = None,
        timeout: float | None = None,
        expect: Callable[[Any], Any] | None = None,
    ) -> StepHandle: ...


def step(
    name: Any = None,
    /,
    kind: str = "other",
    *,
    deps: Iterable[Any] = (),
    agent: str | None = None,
    input: Any = None,
    attempt: int | None = None,
    retry_of: Any = None,
    attributes: dict[str, Any] | None = None,
    timeout: float | None = None,
    expect: Callable[[Any], Any] | None = None,
) -> Any:
    """Record a step: a decorator (sync, async, generators) or a context manager.

    Example:
        ```python
        @trajdebug.step(kind="tool")
        def run_sql(query: str) -> list[dict]: ...

        with trajdebug.step("parse", kind="parse") as s:
            s.output = parse(text)
        ```

    Args:
        name: The step's name (default: the function's name), or the function to decorate.
        kind: ``llm``, ``tool``, ``parse``, ``condition``, ``retrieval``, ``state``, ``agent``,
            ``input``, ``output`` or ``other``.
        deps: Steps (handles or ids) whose outputs this step consumes, beyond those tracked.
        agent: The agent executing the step (inherited from the enclosing step).
        input: The step's input (context-manager form; the decorator binds the arguments).
        attempt: The attempt number, for hand-written retry loops.
        retry_of: The step (handle or id) this attempt retries.
        attributes: Free attributes (``service``: the target service a tool's errors name).
        timeout: Seconds a call may take (`trajdebug.record.timeouts`): a decorated function past it
            raises `trajdebug.ToolTimeout`, recorded as a standard timeout error; a block
            (context-manager form) that overran is recorded so, without raising.
        expect: A check on the step's output, run at analysis time by the guided search
            (`trajdebug.record.expectations`; registered in this process for the step's name,
            nothing but the name is recorded).
    """
    if expect is not None:
        return _expecting(name, expect, kind, deps, agent, input, attempt, retry_of, attributes, timeout)
    if not CONFIG.enabled:
        return _NOOP_STEP
    if name is not None and name.__class__ is not str and callable(name):
        return decorate(StepHandle(None, kind), name)
    # Built without __init__: a step with no extras needs only two attribute
    # writes here (the rest are class defaults), which matters on the hot path.
    # The kind is checked here, where the step is declared (`check_kind`: one
    # set lookup for a built-in kind).
    h = _new_handle(StepHandle)
    h.name = name
    h.kind = kind if kind in _KINDS else _check_kind(kind)
    if input is not None:
        h.input = input
    if deps or agent is not None or attempt is not None or retry_of is not None or attributes or timeout is not None:
        h.__init__(  # type: ignore[misc]
            name,
            kind,
            deps=deps,
            agent=agent,
            input=input,
            attempt=attempt,
            retry_of=retry_of,
            attributes=attributes,
            timeout=timeout,
        )
    return h


def _expecting(name: Any, check: Callable[[Any], Any], kind: str, *rest: Any) -> Any:
    """`step` with ``expect=``: the check registered under the step's name (the function's, decorating)."""
    from trajdebug.record.expectations import expect

    deps, agent, input, attempt, retry_of, attributes, timeout = rest
    if name is not None and name.__class__ is not str and callable(name):
        expect(getattr(name, "__name__", "step"), check)
        return step(kind=kind)(name)
    h = step(
        name, kind, deps=deps, agent=agent, input=input, attempt=attempt, retry_of=retry_of,
        attributes=attributes, timeout=timeout,
    )
    if isinstance(name, str):
        expect(name, check)
        return h

    def decorator(fn: Any) -> Any:
        expect(getattr(fn, "__name__", "step"), check)
        return h(fn)

    return decorator


def current_step() -> StepHandle | None:
    """The step being recorded in this context, or None."""
    s = _STEP.get()
    return s if type(s) is StepHandle else None


def current_run() -> RunHandle | None:
    """The run being recorded in this context (a `trajdebug.record.runs.RunHandle`), or None."""
    return _RUN.get()


class _NoopStep(StepHandle):
    """The shared handle `step` returns when recording is off: every method does nothing."""

    def __enter__(self) -> StepHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __call__(self, fn: Any) -> Any:
        return fn

    def set(self, key: str, value: Any) -> None:
        return None

    def uses(self, *deps: Any, kind: str = "data") -> None:
        return None

    def error(self, message: str, *, type: str = "ReportedError", **attributes: Any) -> str | None:
        return None

    def fallback(self, value: T, reason: str = "fallback value used") -> T:
        return value


_NOOP_STEP = _NoopStep("noop")


__all__ = [
    "RecorderWarning",
    "RemoteParent",
    "StepHandle",
    "StopRun",
    "current_run",
    "current_step",
    "scope_closed",
    "scope_opened",
    "step",
]
