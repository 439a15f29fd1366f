"""Tool-call diagnosers (`trajdebug.analysis.diagnosers._tools`)."""

from __future__ import annotations

from typing import Any

from trajdebug.analysis._detect import Failure
from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.core.model import Run, Step


_FAILED = Failure("x", "step-error", "sowing plan refused: south and east have no nitrogen reading of their own", "x")


def _findings(*answers: tuple[str, Any], failure: Failure = _FAILED) -> dict[str, list[Evidence]]:
    """Soil-probe lookups, one per plot, each answering ``answer``; the ignored-argument findings by step."""
    steps = [Step(f"s{i}", "soil_probe", "tool", input={"farm": "F-9", "plot": plot}, output=out)
             for i, (plot, out) in enumerate(answers)]
    run = Run("r", "test", steps=tuple(steps))
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers(), failures=(failure,))
    return {s.step_id: [e for e in ctx.verdict(s.step_id).evidence if e.diagnoser == "ignored-argument"] for s in steps}


def test_a_call_answering_another_plot_with_an_earlier_calls_answer_did_not_read_its_argument() -> None:
    """The second plot answered with the first plot's very readings (its echoed plot aside) did not read the plot,
    when the failure names the plot and the readings; the first call is not blamed, and a third repeat weighs less
    than the first repeat."""
    def reading(plot: str) -> dict[str, Any]:
        return {"plot": plot, "ph": 6.4, "nitrogen_ppm": 31, "moisture_pct": 22.5}

    found = _findings(("north", reading("north")), ("south", reading("south")), ("east", reading("east")))
    assert found["s0"] == []
    [second] = found["s1"]
    [third] = found["s2"]
    assert "plot" in second.reason and second.suspicion > third.suspicion > 0
    # A failure that speaks of neither the plots nor the readings says nothing of the probes answering alike.
    elsewhere = Failure("x", "step-error", "tractor T-4 is booked on 2026-04-02", "x")
    quiet = _findings(("north", reading("north")), ("south", reading("south")), failure=elsewhere)
    assert all(v == [] for v in quiet.values())


def test_calls_answering_other_plots_with_their_own_readings_are_no_finding() -> None:
    """Calls whose answers differ beyond the echoed plot, or that answer too few values of their own, are left alone."""
    found = _findings(
        ("north", {"plot": "north", "ph": 6.4, "nitrogen_ppm": 31, "moisture_pct": 22.5}),
        ("south", {"plot": "south", "ph": 5.9, "nitrogen_ppm": 31, "moisture_pct": 22.5}),
        ("east", {"plot": "east", "ok": True}),
        ("west", {"plot": "west", "ok": True}),
    )
    assert all(v == [] for v in found.values())
