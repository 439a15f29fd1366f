"""Delta debugging over step differences, and the binary search for the cause transition."""

from __future__ import annotations

import math
from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

import trajdebug
from trajdebug.demo import demo_agent, run_demo
from trajdebug.record.sinks import MemorySink
from trajdebug.replay import dd, earliest, isolate, record
from trajdebug.replay.dd import Outcome


class TestDDAlgorithm:
    """Zeller's dd on plain deltas."""

    def test_single_cause_is_isolated(self) -> None:
        """With eight deltas of which only 3 fails the test, dd returns exactly (3,)."""
        calls: list[frozenset[int]] = []

        def test(kept: frozenset[int]) -> Outcome:
            calls.append(kept)
            return "fail" if 3 in kept else "pass"

        result = dd(list(range(8)), test)
        assert result.failure_inducing == (3,)
        assert result.tests == len(set(calls))

    def test_interacting_causes_are_isolated_against_a_passing_context(self) -> None:
        """When 2 and 5 fail only together, dd isolates one of them relative to a passing set holding the other."""

        def test(kept: frozenset[int]) -> Outcome:
            return "fail" if {2, 5} <= kept else "pass"

        result = dd(list(range(8)), test)
        assert len(result.failure_inducing) == 1
        assert set(result.failure_inducing) < {2, 5}
        assert result.failing - result.passing == set(result.failure_inducing)
        assert test(result.passing) == "pass" and test(result.failing) == "fail"

    def test_unresolved_tests_do_not_count_as_failures(self) -> None:
        """Configurations whose test is unresolved are neither pass nor fail, and dd still ends."""

        def test(kept: frozenset[int]) -> Outcome:
            if 1 in kept and 0 not in kept:
                return "unresolved"
            return "fail" if 1 in kept else "pass"

        result = dd([0, 1, 2, 3], test)
        assert 1 in result.failure_inducing
        assert result.passing < result.failing

    @given(st.integers(min_value=1, max_value=40), st.data())
    def test_earliest_finds_the_first_flip_in_log_tests(self, n: int, data: st.DataObject) -> None:
        """On a monotone chain the binary search returns the first flipping index in O(log n) tests."""
        first = data.draw(st.integers(min_value=0, max_value=n - 1))
        chain = list(range(n))
        found = earliest(chain, lambda i: i >= first)
        assert found.index == first
        assert found.tests <= math.ceil(math.log2(n)) + 1

    def test_earliest_reports_none_when_nothing_flips(self) -> None:
        """A chain whose last element does not flip has no earliest fix."""
        assert earliest([1, 2, 3], lambda i: False).index is None


CALLS: Counter[str] = Counter()
SCRIPT: dict[str, str] = {}


@trajdebug.step(kind="llm")
def greet(name: str) -> str:
    CALLS["greet"] += 1
    return SCRIPT["greet"] + ", " + name


@trajdebug.step(kind="llm")
def pick_tone(name: str) -> str:
    CALLS["pick_tone"] += 1
    return SCRIPT["tone"]


@trajdebug.step(kind="llm")
def pick_units(name: str) -> str:
    CALLS["pick_units"] += 1
    return SCRIPT["units"]


@trajdebug.step(kind="output")
def compose(greeting: str, tone: str, units: str) -> str:
    if units != "metric":
        raise ValueError(f"units must be metric, got {units}")
    return f"{greeting} ({tone}, {units})"


def letter_agent(name: str) -> str:
    """Entry point: three independent sampled choices; only the units matter for success."""
    return compose(greet(name), pick_tone(name), pick_units(name))


def _record(**script: str) -> trajdebug.Run:
    SCRIPT.clear()
    SCRIPT.update(script)
    return record(letter_agent, ["Ada"])


class TestIsolate:
    """dd and the chain search on two recorded runs of one agent."""

    def test_one_of_three_differences_is_isolated(self) -> None:
        """Two runs differing in three steps, one of which causes the failure: dd isolates that one."""
        good = _record(greet="Hello", tone="warm", units="metric")
        bad = _record(greet="Hi", tone="dry", units="imperial")
        assert (good.outcome, bad.outcome) == ("success", "failure")
        CALLS.clear()
        iso = isolate(letter_agent, good, bad)
        units = next(s.step_id for s in bad.steps if s.name == "pick_units")
        assert len(iso.deltas) == 3
        assert iso.failure_inducing == (units,)
        assert iso.problem is None
        assert not CALLS  # every test was served from the two recordings

    def test_chain_search_finds_the_injected_step(self) -> None:
        """On the demo, the earliest correction that removes the failure is the faulty write_sql."""
        bad = run_demo("bad-sql-filter", sinks=[MemorySink()])
        good = record(demo_agent, kwargs={**bad.metadata["entry"]["kwargs"], "fault": None})
        iso = isolate(demo_agent, good, bad)
        injected = bad.metadata["fault"]["step_id"]
        assert iso.earliest == injected
        assert iso.failure_inducing == (injected,)
        assert len(iso.chain) >= 3 and iso.chain[0] == injected

    def test_runs_that_do_not_differ_are_reported(self) -> None:
        """Two identical runs give no deltas and a problem saying so."""
        a = _record(greet="Hello", tone="warm", units="metric")
        b = _record(greet="Hello", tone="warm", units="metric")
        iso = isolate(letter_agent, a, b)
        assert iso.deltas == () and iso.problem is not None
