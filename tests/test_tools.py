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


def test_calls_answering_every_plot_with_one_default_record_are_no_finding() -> None:
    """A probe that answers every plot it has no reading for with the same default record (zero readings, an
    unknown status, no date) answers alike by design, not because it ignored the plot."""
    def blank(plot: str) -> dict[str, Any]:
        return {"plot": plot, "nitrogen_ppm": 0, "moisture_pct": None, "status": "unknown", "sampled": ""}

    found = _findings(("north", blank("north")), ("south", blank("south")), ("east", blank("east")))
    assert all(v == [] for v in found.values())


def test_each_calls_own_answer_is_read_once_per_run(monkeypatch: Any) -> None:
    """On a long loop of calls of one tool, each call's answer is read once, not once per later call."""
    from trajdebug.analysis.diagnosers import _tool_arguments

    reads: list[str] = []
    real = _tool_arguments._read_own_answer

    def counted(step: Step, lexicon: Any) -> Any:
        reads.append(step.step_id)
        return real(step, lexicon)

    monkeypatch.setattr(_tool_arguments, "_read_own_answer", counted)
    plots = [f"P-{i}" for i in range(30)]
    _findings(*((p, {"plot": p, "ph": 6.4, "nitrogen_ppm": 31, "moisture_pct": 22.5}) for p in plots))
    assert len(reads) == len(set(reads)) == len(plots)
