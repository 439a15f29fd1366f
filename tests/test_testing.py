"""trajdebug.testing: deterministic ids and clock, capturing runs in users' tests."""

from __future__ import annotations

from pathlib import Path

import trajdebug
from trajdebug.testing import IncrementalClock, capture_runs, deterministic


@trajdebug.step(kind="tool")
def lookup(q: str) -> str:
    return f"result for {q}"


def agent() -> None:
    with trajdebug.run("agent"):
        lookup("a")
        lookup("b")


class TestDeterministic:
    def test_ids_and_clock_repeat_exactly(self) -> None:
        """Two recordings under deterministic() have identical step ids and times."""
        results = []
        for _ in range(2):
            with deterministic(), capture_runs() as runs:
                agent()
            results.append([(s.step_id, s.start_ns, s.end_ns) for s in runs[0].steps])
        assert results[0] == results[1]
        assert ["0000000000000001", "0000000000000002"] == [r[0] for r in results[0]]

    def test_clock_steps_by_a_millisecond(self) -> None:
        """IncrementalClock advances by its step on every read."""
        clock = IncrementalClock(start_ns=0, step_ns=1_000_000)
        assert [1_000_000, 2_000_000] == [clock(), clock()]

    def test_real_ids_come_back_after_the_block(self) -> None:
        """Outside deterministic() ids are random-prefixed again."""
        with deterministic():
            pass
        with capture_runs() as runs:
            agent()
        assert not runs[0].steps[0].step_id.startswith("00000000")


class TestCaptureRuns:
    def test_captures_without_touching_the_default_store(self, tmp_path: Path) -> None:
        """capture_runs() keeps runs in memory; no ./trajdebug.db appears."""
        with capture_runs() as runs:
            agent()
        assert ["agent"] == [r.name for r in runs]
        assert ["lookup", "lookup"] == [s.name for s in runs[0].steps]
        assert not (tmp_path / "trajdebug.db").exists()

    def test_refresh_shows_a_run_still_open(self) -> None:
        """refresh() inside the block shows what was recorded so far, as incomplete."""
        with capture_runs() as runs, trajdebug.run("open"):
            lookup("x")
            runs.refresh()
            assert "incomplete" == runs[0].outcome
            assert 1 == len(runs[0].steps)
