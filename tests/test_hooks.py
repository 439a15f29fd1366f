"""Live hooks: a callback when an error chain becomes critical during a run, and an opt-in early stop."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

import trajdebug
from trajdebug.record.hooks import HOOKS, CriticalError
from trajdebug.testing import capture_runs


@pytest.fixture(autouse=True)
def _no_hooks_left() -> Iterator[None]:
    """Every hook a test registers is removed after it."""
    yield
    for hook in list(HOOKS):
        hook.remove()


@trajdebug.retry(attempts=3, on=(ConnectionError,))
@trajdebug.step(kind="tool")
def fetch_prices(sku: str) -> dict:
    raise ConnectionError("inventory service unreachable")


def _wait_for(seen: list[CriticalError], run_id: str) -> list[CriticalError]:
    """This run's events, once there is one: the hook thread may still be reading an earlier test's run, whose
    late event is not this run's (seen once in CI at load 11)."""
    deadline = time.monotonic() + 30
    while not any(e.run_id == run_id for e in seen) and time.monotonic() < deadline:
        time.sleep(0.01)
    return [e for e in seen if e.run_id == run_id]


def _collect(**kwargs: object) -> tuple[list[CriticalError], threading.Event]:
    seen: list[CriticalError] = []
    fired = threading.Event()

    def callback(event: CriticalError) -> None:
        seen.append(event)
        fired.set()

    trajdebug.on_critical(callback, **kwargs)  # type: ignore[arg-type]
    return seen, fired


def test_a_chain_that_reaches_the_failure_is_reported_with_the_chain() -> None:
    """An exception that escapes the run makes its chain critical: the callback gets its errors, rules and score."""
    seen, fired = _collect()
    with pytest.raises(ConnectionError), trajdebug.run("shop"):
        fetch_prices("A-1")
    assert fired.wait(30)
    [event] = seen
    assert event.critical and "terminal-failed" in event.rules and "retries-exhausted" in event.rules
    assert 3 == len(event.errors) and all(e.type == "ConnectionError" for e in event.errors)
    assert "shop" == event.run_name and event.score >= 6


def test_a_score_threshold_reports_before_the_run_fails_and_stop_raises_at_the_next_step() -> None:
    """With score=2 and stop=True, exhausted retries that the agent swallowed stop it at its next step."""
    seen, _ = _collect(score=2, stop=True)
    stopped: list[trajdebug.StopRun] = []
    with capture_runs() as runs, trajdebug.run("shop") as run, trajdebug.step("answer", kind="agent"):
        try:
            fetch_prices("A-1")
        except ConnectionError:
            pass  # the agent goes on without prices
        run.flush()
        mine = _wait_for(seen, run.run_id)
        assert mine
        try:
            with trajdebug.step("write_reply", kind="llm"):
                pass
        except trajdebug.StopRun as exc:
            stopped.append(exc)
        with trajdebug.step("after", kind="other"):
            pass  # raised once: the agent that caught it may go on
    assert [mine[0]] == [s.event for s in stopped]
    assert not mine[0].critical and mine[0].score >= 2
    names = [s.name for s in runs[0].steps]
    assert "write_reply" not in names and "after" in names


def test_the_stop_ends_the_run_as_a_failure_unless_caught() -> None:
    """A StopRun the agent does not catch fails the run with the hook's reason."""
    seen, _ = _collect(score=2, stop=True)

    def agent() -> None:
        with trajdebug.run("shop") as run:
            with trajdebug.step("answer", kind="agent"):
                try:
                    fetch_prices("A-1")
                except ConnectionError:
                    pass
            run.flush()
            assert _wait_for(seen, run.run_id)
            with trajdebug.step("next"):
                pass

    with capture_runs() as runs, pytest.raises(trajdebug.StopRun):
        agent()
    assert "failure" == runs[0].outcome and runs[0].failure_reason.startswith("StopRun: stopped by a live hook")


def test_without_stop_nothing_is_raised_and_each_chain_is_reported_once() -> None:
    """A reporting hook never raises into the agent, and a chain is reported once however often it is judged."""
    seen, fired = _collect(score=1)
    with trajdebug.run("shop") as run:
        for _ in range(2):
            try:
                fetch_prices("A-1")
            except ConnectionError:
                pass
            run.flush()
        with trajdebug.step("reply"):
            pass
    assert fired.wait(30)
    trajdebug.flush(5)
    # The hook thread reads the writer's lines after the writer: wait for the second chain (a loaded
    # machine delays it), then make sure neither is reported again.
    # Only this run's events count: the hook thread may still deliver an earlier test's run late (seen in
    # CI at load 3: a third chain, the previous test's).
    deadline = time.monotonic() + 30
    while len(mine := [e for e in seen if e.run_id == run.run_id]) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.2)
    mine = [e for e in seen if e.run_id == run.run_id]
    assert 2 == len({e.chain.error_ids[0] for e in mine}) == len(mine)


def test_a_hook_that_raises_is_ignored() -> None:
    """A callback that raises is logged; the run records normally."""

    def broken(event: CriticalError) -> None:
        raise RuntimeError("pager down")

    trajdebug.on_critical(broken)
    with capture_runs() as runs, pytest.raises(ConnectionError), trajdebug.run("shop"):
        fetch_prices("A-1")
    assert "failure" == runs[0].outcome and 3 == len(runs[0].steps)


def test_a_removed_hook_is_not_called() -> None:
    """After remove(), the callback is not called."""
    seen: list[CriticalError] = []
    trajdebug.on_critical(seen.append).remove()
    with pytest.raises(ConnectionError), trajdebug.run("shop"):
        fetch_prices("A-1")
    trajdebug.flush(5)
    assert [] == seen


def test_a_hook_reads_the_standard_fields_of_a_timed_out_tool() -> None:
    """The hook thread decodes the writer's encoded lines: a tool past its timeout reaches the callback
    with its error's standard fields (kind, service, code, the bound; the request only as a summary)."""
    import time

    @trajdebug.step(kind="tool", timeout=0.05, attributes={"service": "billing"})
    def charge(card: str) -> str:
        time.sleep(0.5)
        return "charged"

    seen, fired = _collect()
    with pytest.raises(trajdebug.ToolTimeout), trajdebug.run("shop"):
        charge("4111-1111-1111-1111")
    assert fired.wait(30)
    [event] = seen
    attrs = event.errors[0].attributes
    assert ("timeout", "billing", "timeout", 0.05) == (attrs["error.kind"], attrs["service"], attrs["code"], attrs["timeout_s"])
    assert "4111" not in str(attrs["request"]) and attrs["request"]["type"] == "object"
