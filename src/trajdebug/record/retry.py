"""Retries as first-class attempts.

Each attempt is its own step (``attempt`` = n, ``retry_of`` = the previous
attempt), so a failed attempt's error stays visible and ends ``recovered``
when a later attempt succeeds, or ``failed`` when every attempt fails and the
error escapes.  The reason for retrying is kept on the attempt: an automatic
policy, or a model's decision.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, TypeVar

from trajdebug.record import recorder as rec


F = TypeVar("F", bound=Callable[..., Any])


class _Attempts:
    """Tracks the chain of attempt step ids within one retried call."""

    def __init__(self, reason: str | None) -> None:
        self.prev: str | None = None
        self.reason = reason

    def begin(self, n: int) -> Any:
        reason = None if n == 1 else self.reason
        return rec._ATTEMPT.set((n, self.prev, reason))

    def end(self, token: Any) -> None:
        # The attempt's step cleared the marker when it started; find its id
        # through the last step the attempt recorded.
        rec._ATTEMPT.reset(token)


def retry(
    attempts: int = 3,
    *,
    on: tuple[type[BaseException], ...] = (Exception,),
    backoff: float = 0.0,
    reason: str = "policy: retry on error",
) -> Callable[[F], F]:
    """Retry a step-decorated function; each attempt is recorded as its own step.

    Example:
        ```python
        @trajdebug.retry(attempts=3, on=(TimeoutError,))
        @trajdebug.step(kind="tool")
        def fetch(url): ...
        ```

    Args:
        attempts: Maximum number of attempts.
        on: Exception types that trigger another attempt.
        backoff: Seconds to sleep before attempt n+1, multiplied by n.
        reason: Why the call is retried (kept on each retrying attempt).
    """

    def deco(fn: F) -> F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def awrapper(*args: Any, **kwargs: Any) -> Any:
                chain = _Attempts(reason)
                for n in range(1, attempts + 1):
                    tok = chain.begin(n)
                    try:
                        return await fn(*args, **kwargs)
                    except on:
                        if n == attempts:
                            raise
                        if backoff:
                            await asyncio.sleep(backoff * n)
                    finally:
                        chain.prev = _last_attempt_id() or chain.prev
                        chain.end(tok)
                raise AssertionError("unreachable")

            return awrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            chain = _Attempts(reason)
            for n in range(1, attempts + 1):
                tok = chain.begin(n)
                try:
                    return fn(*args, **kwargs)
                except on:
                    if n == attempts:
                        raise
                    if backoff:
                        time.sleep(backoff * n)
                finally:
                    chain.prev = _last_attempt_id() or chain.prev
                    chain.end(tok)
            raise AssertionError("unreachable")

        return wrapper  # type: ignore[return-value]

    return deco


def retry_call(fn: Callable[..., Any], *args: Any, attempts: int = 3, **kwargs: Any) -> Any:
    """Call a step-decorated ``fn`` with retries (the helper form of `retry`)."""
    return retry(attempts)(fn)(*args, **kwargs)


def _last_attempt_id() -> str | None:
    run = rec.current_run()
    if run is None:
        return None
    return getattr(run, "_last_attempt", None)
