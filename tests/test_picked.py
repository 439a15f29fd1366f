"""Tests of the step whose choice a failure is about (`trajdebug.analysis._picked`)."""

from __future__ import annotations

from typing import Any

from trajdebug.analysis._detect import Failure
from trajdebug.analysis._localize import localize
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


D = Dependency


def _t(sid: str, name: str, kind: str, start: int, **kw: Any) -> Step:
    return Step(sid, name, kind, start_ns=start, end_ns=start + 1, **kw)  # type: ignore[arg-type]


def test_a_label_is_traced_to_the_step_given_the_failures_item() -> None:
    """Of two triage calls that both filed ``queue=planned``, the one given the alert the failure names
    (MN-0703 at 14.2 L/s) made the decision the failure speaks of, not the first one."""

    def triage(sid: str, start: int, asset: str, flow: float) -> Step:
        return _t(
            sid,
            "triage",
            "llm",
            start,
            input={"messages": [{"role": "user", "content": f"Alert: asset {asset}, flow {flow} L/s"}]},
            output={"asset": asset, "queue": "planned"},
        )

    run = Run(
        "r",
        "leaks",
        outcome="failure",
        steps=(
            triage("a", 1, "MN-0700", 1.4),
            triage("b", 3, "MN-0703", 14.2),
            _t(
                "s",
                "schedule_planned_repair",
                "tool",
                5,
                input={"asset": "MN-0703", "flow_lps": 14.2},
                status="error",
                error=ErrorInfo("Rejected", "14.2 L/s on MN-0703 exceeds the ceiling for planned repairs"),
                deps=(D("a"), D("b")),
            ),
        ),
    )
    message = "Rejected: planned works: 14.2 L/s on MN-0703 exceeds the ceiling for planned repairs"
    ranked = {
        c.step_id: c for c in localize(run, failures=[Failure("s", "step-error", message, "x")]).ranked_all
    }
    stated = "first stated queue=planned"
    assert any(stated in r for r in ranked["b"].reasons)
    assert not any(stated in r for r in ranked["a"].reasons)
