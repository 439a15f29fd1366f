"""The error lifecycle's one state machine: its transitions, and the recorder and the analysis agreeing on them."""

from __future__ import annotations

from typing import Any

import pytest

import trajdebug
from trajdebug.core.lifecycle import analyze_errors
from trajdebug.core.lifecycle.machine import TERMINAL, advance, fold, is_open
from trajdebug.core.model import Run, Stage, StageChange
from trajdebug.testing import capture_runs, deterministic


def _run(body: Any) -> Run:
    with deterministic(), capture_runs() as runs:
        try:
            with trajdebug.run("machine") as h:
                body(h)
        except Exception:  # noqa: BLE001 - the failure is what the test is about
            pass
    (run,) = runs
    return run


@pytest.mark.parametrize(
    ("state", "stage", "after"),
    [
        (None, "occurred", "occurred"),
        ("occurred", "propagated", "propagated"),
        ("propagated", "propagated", "propagated"),
        ("propagated", "recovered", "recovered"),
        ("occurred", "failed", "failed"),
        ("ignored", "propagated", "ignored"),
        ("recovered", "occurred", "recovered"),
        ("ignored", "failed", "failed"),
    ],
)
def test_advance_moves_open_errors_and_lets_the_last_end_win(state: Stage | None, stage: Stage, after: Stage) -> None:
    """Propagation moves only an open error; ``occurred`` never reopens one; a later end replaces an earlier one."""
    assert advance(state, stage) == after


def test_an_error_is_open_until_a_terminal_stage() -> None:
    """Occurred, propagated and unseen errors are open; recovered, ignored and failed ones are not."""
    assert [is_open(s) for s in (None, "occurred", "propagated")] == [True, True, True]
    assert not any(is_open(s) for s in ("recovered", "ignored", "failed"))
    assert frozenset({"recovered", "ignored", "failed"}) == TERMINAL


def test_fold_reads_the_path_and_the_steps_that_ended_the_error() -> None:
    """Folding a history gives the last state, the steps the error left in order, and where a value replaced it."""
    changes = [
        StageChange("occurred", "a", 1),
        StageChange("propagated", "b", 2),
        StageChange("propagated", "gone", 3),
        StageChange("propagated", "b", 4),
        StageChange("ignored", "c", 5, "fallback"),
        StageChange("failed", None, 6),
    ]
    folded = fold("a", changes, {"a", "b", "c"})
    assert folded.stage == "failed"
    assert folded.path == ("a", "b")
    assert folded.ended == ("c",)
    assert fold("missing", [], {"a"}).path == ()


def test_recorder_and_analysis_read_the_same_stages() -> None:
    """For a retried, a fallen-back and an escaping error, the recorder's last stage is the analysis's folded one."""
    calls = {"n": 0}

    @trajdebug.retry(attempts=2)
    @trajdebug.step(kind="tool")
    def flaky() -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            raise TimeoutError("slow")
        return 1

    @trajdebug.step
    def broken() -> None:
        raise ValueError("broken")

    def body(h: Any) -> None:
        with trajdebug.step("parent") as s:
            flaky()
            try:
                broken()
            except ValueError:
                s.fallback(0)
        with trajdebug.step("last"):
            raise KeyError("escapes")

    run = _run(body)
    recorded = {e.type: e.stages[-1].stage for e in run.errors}
    assert recorded == {"TimeoutError": "recovered", "ValueError": "ignored", "KeyError": "failed"}
    steps = {s.step_id for s in run.steps}
    assert {e.type: fold(e.step_id, e.stages, steps).stage for e in run.errors} == recorded
    report = analyze_errors(run)
    assert {e.type: e.stage for e in report.errors} == recorded
