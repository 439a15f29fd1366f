"""Tool-call diagnosers (`trajdebug.analysis.diagnosers._tools`)."""

from __future__ import annotations

from typing import Any

from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.core.model import Run, Step


def _findings(*answers: tuple[str, Any]) -> dict[str, list[Evidence]]:
    """Soil-probe lookups, one per plot, each answering ``answer``; the ignored-argument findings by step."""
    steps = [Step(f"s{i}", "soil_probe", "tool", input={"farm": "F-9", "plot": plot}, output=out)
             for i, (plot, out) in enumerate(answers)]
    ctx = DiagnoseContext.build(Run("r", "test", steps=tuple(steps)), diagnosers=registered_diagnosers())
    return {s.step_id: [e for e in ctx.verdict(s.step_id).evidence if e.diagnoser == "ignored-argument"] for s in steps}


def test_a_call_answering_another_plot_with_an_earlier_calls_answer_did_not_read_its_argument() -> None:
    """The second plot answered with the first plot's very readings (its echoed plot aside) did not read the plot;
    the first call is not blamed, and a third repeat weighs less than the first repeat."""
    def reading(plot: str) -> dict[str, Any]:
        return {"plot": plot, "ph": 6.4, "nitrogen_ppm": 31, "moisture_pct": 22.5}

    found = _findings(("north", reading("north")), ("south", reading("south")), ("east", reading("east")))
    assert found["s0"] == []
    [second] = found["s1"]
    [third] = found["s2"]
    assert "plot" in second.reason and second.suspicion > third.suspicion > 0


def test_calls_answering_other_plots_with_their_own_readings_are_no_finding() -> None:
    """Calls whose answers differ beyond the echoed plot, or that answer too few values of their own, are left alone."""
    found = _findings(
        ("north", {"plot": "north", "ph": 6.4, "nitrogen_ppm": 31, "moisture_pct": 22.5}),
        ("south", {"plot": "south", "ph": 5.9, "nitrogen_ppm": 31, "moisture_pct": 22.5}),
        ("east", {"plot": "east", "ok": True}),
        ("west", {"plot": "west", "ok": True}),
    )
    assert all(v == [] for v in found.values())
