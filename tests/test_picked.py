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


def _crew_run(members: int, message: str) -> Run:
    return Run(
        "r",
        "movers",
        outcome="failure",
        steps=(
            _t("h", "handling_rules", "tool", 1, input={"category": "grand"}, output={"crew_needed": 4}),
            _t("c", "crew_roster", "tool", 3, input={"date": "2026-12-11", "crew_size": 4},
               output={"crew_id": "C-2-11", "members": members}, deps=(D("h"),)),
            _t("q", "quote_move", "tool", 5, input={"job": "PM-1"}, output={"quote_id": "Q-7"}),
            _t("b", "confirm_booking", "tool", 7, input={"crew_id": "C-2-11", "quote_id": "Q-7"},
               status="error", error=ErrorInfo("Refused", message), deps=(D("c"), D("q"))),
        ),
    )


def test_the_step_given_the_bound_that_returned_the_record_breaking_it_ranks_first() -> None:
    """A roster asked for a crew of 4 that answered crew C-2-11, which the failure says is below the 4 movers
    required, ranks above the rules that stated the 4."""
    loc = localize(_crew_run(2, "crew C-2-11 is below the 4 movers required"))
    top = loc.candidates[0]
    assert top.step_id == "c"
    assert any("was given 4, the bound" in r and "C-2-11" in r for r in top.reasons)


def test_a_bound_the_answer_holds_or_a_message_naming_no_record_is_no_ignored_bound() -> None:
    """A roster whose answer holds the 4 it was asked for, or a failure that names no record, gives no such finding."""
    held = localize(_crew_run(4, "crew C-2-11 is below the 4 movers required"))
    nameless = localize(_crew_run(2, "the crew is below the 4 movers required"))
    for loc in (held, nameless):
        assert not any("the bound" in r for c in loc.ranked_all for r in c.reasons)


def test_a_model_that_picked_the_record_holding_the_failures_number_is_the_choice() -> None:
    """A fitter model shown boots of three sizes that picked B-265 (sole 290 mm) where a binding then refused a
    290 mm sole made the choice the failure is about, though the failure names the sole, not the boot: it
    joins the failure's slice; had it picked B-255 (280 mm), the same refusal of 290 mm says nothing of it."""
    boots = [{"boot_id": "B-255", "mondo": 25.5, "sole_mm": 280}, {"boot_id": "B-260", "mondo": 26.0, "sole_mm": 285},
             {"boot_id": "B-265", "mondo": 26.5, "sole_mm": 290}]

    def ranked(pick: str) -> dict[str, Any]:
        run = Run(
            "r",
            "fitting",
            outcome="failure",
            steps=(
                _t("l", "list_boots", "tool", 1, input={"mondo": 25.5}, output=boots),
                _t("m", "choose", "llm", 3, deps=(D("l"),),
                   input={"messages": [{"role": "tool", "content": str(boots).replace("'", '"')}]},
                   output={"role": "assistant", "tool_calls": [{"name": "fit", "arguments": {"boot_id": pick}}]}),
                _t("s", "set_binding", "tool", 5, input={"sole_mm": 290}, deps=(D("m"),), status="error",
                   error=ErrorInfo("ValueError", "binding cannot be adjusted to a 290 mm sole")),
            ),
        )
        failure = Failure("s", "step-error", "ValueError: binding cannot be adjusted to a 290 mm sole", "x")
        return {c.step_id: c for c in localize(run, failures=[failure]).ranked_all}

    said = "from a list it was given, whose record holds a number"
    assert any(said in r for r in ranked("B-265")["m"].reasons)
    assert not any(said in r for r in ranked("B-255")["m"].reasons)


def test_a_model_answering_as_the_assistant_picked_no_message() -> None:
    """A model's answer carries the role 'assistant', which one message of its conversation has: the message
    holding the failure's number (290) is no record it picked."""
    messages = [{"role": "user", "content": '{"sole_mm": 280}'}, {"role": "assistant", "content": '{"sole_mm": 290}'},
                {"role": "tool", "content": '{"sole_mm": 285}'}]
    run = Run(
        "r",
        "fitting",
        outcome="failure",
        steps=(
            _t("m", "choose", "llm", 3, input={"messages": messages}, output={"role": "assistant", "content": "fit it"}),
            _t("s", "set_binding", "tool", 5, input={"sole_mm": 290}, deps=(D("m"),), status="error",
               error=ErrorInfo("ValueError", "binding cannot be adjusted to a 290 mm sole")),
        ),
    )
    failure = Failure("s", "step-error", "ValueError: binding cannot be adjusted to a 290 mm sole", "x")
    ranked = {c.step_id: c for c in localize(run, failures=[failure]).ranked_all}
    assert not any("from a list it was given" in r for r in ranked["m"].reasons)
