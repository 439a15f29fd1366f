"""Retries as first-class attempts.

Each attempt is its own step (``attempt`` = n, ``retry_of`` = the previous
attempt), so a failed attempt's error stays visible and ends ``recovered``
when a later attempt succeeds, or ``failed`` when every attempt fails and the
error escapes.  The reason for retrying is kept on each retrying attempt
(``retry_reason``): an automatic policy, or a model's decision.

For a hand-written loop, pass ``attempt=`` and ``retry_of=`` to
`trajdebug.step` and put the reason in ``attributes={"retry_reason": ...}``;
the lifecycle is the same.

Which step was the failed attempt is read from the exception itself (the
recorder tags each recorded exception with the last attempt step it left), not
from a run-global "last attempt", so retried calls running concurrently in
asyncio tasks or threads never chain into each other's attempts.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

from trajdebug.record import recorder as rec
from trajdebug.record.context import _ATTEMPT
from trajdebug.record.exceptions import attempt_step


F = TypeVar("F", bound=Callable[..., Any])

DEFAULT_REASON = "policy: retry on error"


class _Attempts:
    """The chain of attempt step ids within one retried call."""

    __slots__ = ("n", "prev", "reason", "token")

    def __init__(self, reason: str | None) -> None:
        self.prev: str | None = None
        self.reason = reason
        self.n = 0
        self.token: Any = None

    def begin(self, n: int) -> None:
        # The first step started inside the attempt becomes the attempt
        # (`StepHandle.__enter__` consumes this marker).
        self.n = n
        self.token = _ATTEMPT.set((n, self.prev, None if n == 1 else self.reason))
        rec.scope_opened()

    def failed(self, exc: BaseException) -> None:
        run = rec.current_run()
        if run is None:
            return
        sid = attempt_step(exc, run.run_id, self.n, self.prev)
        if sid is not None:
            self.prev = sid

    def end(self) -> None:
        _ATTEMPT.reset(self.token)
        rec.scope_closed()


def retry(
    attempts: int = 3,
    *,
    on: tuple[type[BaseException], ...] = (Exception,),
    backoff: float = 0.0,
    reason: str = DEFAULT_REASON,
) -> Callable[[F], F]:
    """Retry a step-decorated function; each attempt is recorded as its own step.

    Example:
        ```python
        @trajdebug.retry(attempts=3, on=(TimeoutError,))
        @trajdebug.step(kind="tool")
        def fetch(url): ...
        ```

    Args:
        attempts: Maximum number of attempts (at least 1).
        on: Exception types that trigger another attempt; others propagate at once.
        backoff: Seconds to sleep before attempt n+1, multiplied by n.
        reason: Why the call is retried (kept as ``retry_reason`` on each retrying attempt).

    Raises:
        ValueError: ``attempts`` is less than 1.
    """
    if attempts < 1:
        raise ValueError(f"retry(attempts={attempts}): at least one attempt is needed")

    def deco(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                chain = _Attempts(reason)
                for n in range(1, attempts + 1):
                    chain.begin(n)
                    try:
                        return await fn(*args, **kwargs)
                    except on as exc:
                        chain.failed(exc)
                        if n == attempts:
                            raise
                    finally:
                        chain.end()
                    if backoff:
                        import asyncio  # here: `import trajdebug` stays free of asyncio's start-up

                        await asyncio.sleep(backoff * n)
                raise AssertionError("unreachable")

            return awrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            chain = _Attempts(reason)
            for n in range(1, attempts + 1):
                chain.begin(n)
                try:
                    return fn(*args, **kwargs)
                except on as exc:
                    chain.failed(exc)
                    if n == attempts:
                        raise
                finally:
                    chain.end()
                if backoff:
                    time.sleep(backoff * n)
            raise AssertionError("unreachable")

        return wrapper  # type: ignore[return-value]

    return deco


def retry_call(
    fn: Callable[..., Any],
    *args: Any,
    attempts: int = 3,
    **kwargs: Any,
) -> Any:
    """Call a step-decorated ``fn`` with retries on any exception (the helper form of `retry`).

    Example:
        ```python
        rows = trajdebug.retry_call(run_sql, query, attempts=2)
        ```
    """
    return retry(attempts)(fn)(*args, **kwargs)


__all__ = ["DEFAULT_REASON", "retry", "retry_call"]
