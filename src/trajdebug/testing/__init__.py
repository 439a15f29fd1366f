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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from trajdebug.core.jsonl import RunBuilder
from trajdebug.core.model import Run
from trajdebug.record import config as _config
from trajdebug.record import context as _ctx
from trajdebug.record import runs as _runs
from trajdebug.record import steps as _steps
from trajdebug.record.sinks import MemorySink
from trajdebug.testing.server import FakeModelServer, Policy, Reply, Request, Script, tool_call


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
    saved = (_steps._now, _steps._next_seq, _ctx._now, _ctx._next_seq, _config._prefix)
    seq = itertools.count(1).__next__
    _steps._now = _ctx._now = clock
    _steps._next_seq = _ctx._next_seq = seq
    _config._prefix = prefix
    try:
        yield clock
    finally:
        _steps._now, _steps._next_seq, _ctx._now, _ctx._next_seq, _config._prefix = saved


class CapturedRuns(list[Run]):
    """The runs recorded inside `capture_runs` (filled when the block ends)."""

    def __init__(self) -> None:
        super().__init__()
        self.sink = MemorySink()

    def refresh(self) -> CapturedRuns:
        """Rebuild the list from the records captured so far (runs still open read as incomplete)."""
        from trajdebug.record.writer import flush

        flush()
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
    saved = _runs.RunHandle.__init__

    def patched(self: Any, name: str, **kwargs: Any) -> None:
        sinks = list(kwargs.pop("sinks", ()) or ())
        sinks.append(captured.sink)
        saved(self, name, sinks=sinks, **kwargs)

    _runs.RunHandle.__init__ = patched  # type: ignore[method-assign]
    try:
        yield captured
    finally:
        _runs.RunHandle.__init__ = saved  # type: ignore[method-assign]
        captured.refresh()


# -- a scripted judge ---------------------------------------------------------------------

JudgeVerdict = Callable[[str, str], "Mapping[str, Any] | None"]
"""A verdict for one shortlisted step, from its label (``S3``) and name; None leaves it out."""


def judge_script(
    verdict: JudgeVerdict,
    *,
    outline: Mapping[str, Any] | str | None = None,
    explanation: Mapping[str, Any] | str | None = None,
) -> Callable[[Request], Reply | str]:
    """A `FakeModelServer` script that answers the judge's three questions (`trajdebug.judge.prompts`).

    The verdict question is answered with ``{"verdicts": [...]}``, one entry per
    shortlisted step for which ``verdict(label, name)`` returns fields
    (``verdict``, ``confidence``, ``fix_removes_failure``, ``departs``,
    ``reason``; missing ones default to a sound verdict of confidence 0.5).
    The expectation and explanation questions get ``outline`` and
    ``explanation`` (dicts sent as JSON, strings as they are: malformed
    answers on demand); without them a minimal valid answer.

    Example:
        ```python
        script = judge_script(lambda label, name: {"verdict": "decisive"} if name == "fetch" else None)
        with FakeModelServer(script) as server:
            analyze_source(path, judge=JudgeConfig(server.base_url, "m", cache=None))
        ```
    """
    import json
    import re

    from trajdebug.judge.prompts import EXPECTATION_SYSTEM, EXPLANATION_SYSTEM

    heading = re.compile(r"^### (S\d+): (.*?) \(", re.MULTILINE)

    def answer(request: Request) -> Reply | str:
        messages = (request.body or {}).get("messages") or [{}]
        system = str(messages[0].get("content") or "")
        if system == EXPECTATION_SYSTEM:
            value: Any = outline if outline is not None else {"steps": [{"step": "solve it", "key_values": []}]}
            return value if isinstance(value, str) else json.dumps(value)
        if system == EXPLANATION_SYSTEM:
            value = explanation if explanation is not None else {"cause": "other", "explanation": "unclear"}
            return value if isinstance(value, str) else json.dumps(value)
        user = str(messages[1].get("content") or "") if len(messages) > 1 else ""
        verdicts = []
        for label, name in heading.findall(user):
            fields = verdict(label, name)
            if fields is None:
                continue
            verdicts.append(
                {
                    "step": label,
                    "verdict": "sound",
                    "confidence": 0.5,
                    "fix_removes_failure": False,
                    "departs": None,
                    "reason": f"{name} looks fine",
                    **fields,
                }
            )
        return json.dumps({"verdicts": verdicts})

    return answer


__all__ = [
    "CapturedRuns",
    "FakeModelServer",
    "IncrementalClock",
    "Reply",
    "Request",
    "Script",
    "JudgeVerdict",
    "Policy",
    "capture_runs",
    "deterministic",
    "judge_script",
    "tool_call",
]
