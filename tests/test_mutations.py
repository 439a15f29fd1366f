"""The mutation harness: planted faults re-recorded through jsonl, OTLP and transcripts keep their truth step."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from benchmarks.mutations import ROUTES, mutants, transcript_of


pytest.importorskip("sklearn")


def test_each_planted_fault_travels_every_route_with_its_truth_step_ranked(tmp_path: Path) -> None:
    """The first fault-suite case comes back once per route, its truth step among the run's ranked steps."""
    got = list(itertools.islice(mutants(1, workdir=tmp_path), len(ROUTES)))
    assert [c.route for c in got] == list(ROUTES)
    assert len({c.fault for c in got}) == 1
    for c in got:
        assert sum(c.labels()) >= 1, c.case_id
        assert c.rows and all("hand_rank_inv" in r for r in c.rows)


def test_a_transcript_keeps_speakers_and_error_text_but_no_structure() -> None:
    """A run written as a transcript is one message per step: its speaker and text, an error as text, nothing else."""
    from trajdebug.core.model import ErrorInfo, Run, Step

    run = Run(
        run_id="r",
        name="demo",
        steps=(
            Step(step_id="a", name="plan", kind="llm", agent="planner", output="look up the rate"),
            Step(step_id="b", name="fetch", kind="tool", output=None, status="error", error=ErrorInfo(type="KeyError", message="rate")),
        ),
        outcome="failure",
    )
    t = transcript_of(run)
    assert [m["name"] for m in t["history"]] == ["planner", "fetch"]
    assert "KeyError: rate" in t["history"][1]["content"]
    assert t["outcome"] == "failure" and all(set(m) == {"role", "name", "content"} for m in t["history"])
