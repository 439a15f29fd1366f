"""Bounded tool calls: a call past its bound raises ToolTimeout near the bound and records one standard error."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

import trajdebug
from trajdebug.testing import capture_runs


BOUND = 0.2


@trajdebug.step(kind="tool", timeout=BOUND, attributes={"service": "inventory"})
def slow_lookup(sku: str, delay: float) -> str:
    time.sleep(delay)
    return f"{sku} in stock"


@trajdebug.step(kind="tool", timeout=BOUND)
async def slow_fetch(url: str, delay: float) -> str:
    await asyncio.sleep(delay)
    return "body"


def _timed(fn, *args) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    with pytest.raises(trajdebug.ToolTimeout):
        fn(*args)
    return time.perf_counter() - t0


def test_a_sync_call_past_its_bound_raises_at_the_bound() -> None:
    """A blocking call over its 0.2 s bound returns control to the caller at the bound, long before the call's
    2 s end (the upper margin is wide: a loaded machine may wake the caller late, which no bound can prevent)."""
    with trajdebug.run("shop"):
        took = _timed(slow_lookup, "A-1", 2.0)
    assert BOUND <= took <= BOUND + 0.8


def test_an_async_call_past_its_bound_raises_at_the_bound(run_async: Any) -> None:
    """A coroutine over its bound is cancelled and the caller gets ToolTimeout at the bound, long before the
    call's 2 s end."""

    async def main() -> float:
        t0 = time.perf_counter()
        with pytest.raises(trajdebug.ToolTimeout):
            await slow_fetch("https://example.invalid/", 2.0)
        return time.perf_counter() - t0

    with trajdebug.run("shop"):
        took = run_async(main)
    assert BOUND <= took <= BOUND + 0.8


def test_calls_from_many_threads_are_each_bounded() -> None:
    """Eight threads, each calling a tool that would take 3 s, all get control back at the bound, long
    before the call ends (no thread waits for another's timeout; the margin is wide for a loaded machine)."""
    took: list[float] = []

    def worker() -> None:
        took.append(_timed(slow_lookup, "B-2", 3.0))

    with trajdebug.run("shop"):
        threads = [threading.Thread(target=trajdebug.wrap(worker)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert 8 == len(took) and all(BOUND <= t < 1.5 for t in took)


def test_the_timeout_is_one_standard_error_event() -> None:
    """The error names the service, the endpoint, the bound and a redacted summary of the request, never its content."""
    with capture_runs() as runs, pytest.raises(trajdebug.ToolTimeout), trajdebug.run("shop"):
        slow_lookup("sk-live-Pangolin-1234567890abcdef", 1.0)
    [run] = runs
    [err] = run.errors
    a = err.attributes
    assert ("ToolTimeout", "timeout", "inventory", "slow_lookup", "timeout", BOUND) == (
        err.type, a["error.kind"], a["service"], a["endpoint"], a["code"], a["timeout_s"]
    )
    assert a["request"]["__trajdebug_summary__"] == 1 and a["request"]["keys"] == ["sku", "delay"]
    assert "Pangolin" not in str(a)
    assert "failed" == err.stage


def test_a_call_within_its_bound_is_an_ordinary_step() -> None:
    """A bounded call that returns in time gives its result, a step with its output and the bound."""
    with capture_runs() as runs, trajdebug.run("shop"):
        assert "C-3 in stock" == slow_lookup("C-3", 0.0)
    [step] = runs[0].steps
    assert ("ok", "C-3 in stock", BOUND) == (step.status, step.output, step.attributes["timeout"])


def test_the_bound_holds_outside_a_run() -> None:
    """Unrecorded, a bounded function is still bounded: control comes back at the bound, well before the
    1 s the call would take (a loaded machine wakes the caller late, so not within 10 % of the bound)."""
    assert BOUND <= _timed(slow_lookup, "D-4", 1.0) <= BOUND + 0.6


def test_steps_inside_a_bounded_call_nest_under_it() -> None:
    """The worker thread runs in the caller's context: an inner step's parent is the bounded step."""

    @trajdebug.step(kind="tool", timeout=1.0)
    def outer() -> int:
        with trajdebug.step("inner"):
            pass
        return 1

    with capture_runs() as runs, trajdebug.run("shop"):
        outer()
    out, inner = runs[0].steps
    assert ("outer", out.step_id) == (out.name, inner.parent_id)


def test_an_overrunning_block_is_recorded_without_raising() -> None:
    """The context-manager form cannot interrupt its block: an overrun is recorded as a timeout error."""
    with capture_runs() as runs, trajdebug.run("shop"), trajdebug.step("fetch", kind="tool", timeout=0.01) as s:
        time.sleep(0.05)
        s.output = "late"
    [step] = runs[0].steps
    assert ("error", "ToolTimeout") == (step.status, step.error.type)
    assert runs[0].errors[0].attributes["overran"] is True


def test_a_generator_is_recorded_without_a_bound() -> None:
    """timeout= on a generator warns and records the step unbounded."""
    with pytest.warns(UserWarning, match="does not bound"):

        @trajdebug.step(kind="tool", timeout=0.1)
        def gen() -> object:
            yield 1

    with capture_runs() as runs, trajdebug.run("shop"):
        assert [1] == list(gen())
    assert 1 == len(runs[0].steps)


def test_the_functions_own_exceptions_pass_through() -> None:
    """An exception the function raises within the bound reaches the caller as it is."""

    @trajdebug.step(kind="tool", timeout=1.0)
    def broken() -> None:
        raise KeyError("sku")

    with pytest.raises(KeyError), trajdebug.run("shop"):
        broken()
