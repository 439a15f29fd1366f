"""The one garbage-collector pause: nested and concurrent pauses end with the collector as the caller left it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from trajdebug.core.collector import collector_paused, pause_depth


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_a_pause_turns_the_collector_off_and_back_on() -> None:
    """Inside the pause the collector is off; after it, on again, and no pause is counted."""
    with collector_paused():
        assert not gc.isenabled()
        assert pause_depth() == 1
    assert gc.isenabled()
    assert pause_depth() == 0


def test_nested_pauses_leave_the_collector_to_the_outermost() -> None:
    """An inner pause ending does not turn the collector on under the outer one."""
    with collector_paused():
        with collector_paused():
            assert pause_depth() == 2
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    """A caller who disabled the collector finds it disabled after the pause too."""
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_the_collector_comes_back_when_the_block_raises() -> None:
    """An exception inside the pause still ends it."""
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("boom")
    assert gc.isenabled()
    assert pause_depth() == 0


def test_as_a_decorator_each_call_pauses() -> None:
    """``@collector_paused()`` pauses the collector for every call of the function, and keeps its name."""

    @collector_paused()
    def work(x: int) -> bool:
        return x > 0 and not gc.isenabled()

    assert work(1) and work(2)
    assert work.__name__ == "work"
    assert gc.isenabled()


def test_overlapping_pauses_in_two_threads_end_with_the_last_one() -> None:
    """The thread that paused first, finishing first, does not turn the collector on under the other's pause."""
    entered, first_done, seen = threading.Event(), threading.Event(), []

    def second() -> None:
        with collector_paused():
            entered.set()
            first_done.wait(5)
            seen.append(gc.isenabled())

    t = threading.Thread(target=second)
    with collector_paused():
        t.start()
        assert entered.wait(5)
    first_done.set()
    t.join(5)
    assert seen == [False]
    assert gc.isenabled()
