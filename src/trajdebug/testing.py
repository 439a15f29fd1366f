"""Helpers for testing code that records with trajdebug (and for trajdebug's own tests).

Example:
    ```python
    from trajdebug.testing import capture_runs, deterministic

    def test_agent_records_its_tool_call():
        with deterministic(), capture_runs() as runs:
            my_agent("question")
        assert [s.name for s in runs[0].steps] == ["plan", "search", "answer"]
    ```
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from trajdebug.format import RunBuilder
from trajdebug.model import Run
from trajdebug.record import config as _config
from trajdebug.record import recorder as _rec
from trajdebug.record.sinks import MemorySink


class IncrementalClock:
    """A clock that advances by a fixed step on every read (1 ms by default)."""

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000, step_ns: int = 1_000_000) -> None:
        self.now = start_ns
        self.step_ns = step_ns

    def __call__(self) -> int:
        self.now += self.step_ns
        return self.now


@contextmanager
def deterministic(
    *, clock: IncrementalClock | None = None, prefix: str = "00000000"
) -> Iterator[IncrementalClock]:
    """Deterministic step ids (``00000000`` + a counter from 1) and clock for the block.

    Step ids become ``0000000000000001``, ``0000000000000002``, ...; every
    timestamp read advances the clock by 1 ms.  Restores the real ones after.
    """
    clock = clock or IncrementalClock()
    saved = (_rec._now, _rec._next_seq, _config._prefix)
    _rec._now = clock
    _rec._next_seq = itertools.count(1).__next__
    _config._prefix = prefix
    try:
        yield clock
    finally:
        _rec._now, _rec._next_seq, _config._prefix = saved


class CapturedRuns(list[Run]):
    """The runs recorded inside `capture_runs` (filled when the block ends)."""

    def __init__(self) -> None:
        super().__init__()
        self.sink = MemorySink()

    def refresh(self) -> CapturedRuns:
        """Rebuild the list from the records captured so far (runs still open read as incomplete)."""
        from trajdebug.record.sinks import WRITER

        WRITER.flush_all()
        builder = RunBuilder("capture_runs")
        for rec in self.sink.records:
            builder.add(rec)
        self[:] = builder.runs()
        return self


@contextmanager
def capture_runs() -> Iterator[CapturedRuns]:
    """Capture every run recorded in the block in memory instead of the configured sinks.

    Runs that name their own ``store=``/``path=`` still write there too.
    """
    captured = CapturedRuns()
    saved = _rec.RunHandle.__init__

    def patched(self: Any, name: str, **kwargs: Any) -> None:
        sinks = list(kwargs.pop("sinks", ()) or ())
        sinks.append(captured.sink)
        saved(self, name, sinks=sinks, **kwargs)

    _rec.RunHandle.__init__ = patched  # type: ignore[method-assign]
    try:
        yield captured
    finally:
        _rec.RunHandle.__init__ = saved  # type: ignore[method-assign]
        captured.refresh()


__all__ = ["CapturedRuns", "IncrementalClock", "capture_runs", "deterministic"]
