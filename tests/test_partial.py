"""Tests of a batch answer that left items out and of a model answering outside its options."""

from __future__ import annotations

import json
from typing import Any

from trajdebug.analysis._detect import Failure
from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence, registered_diagnosers
from trajdebug.core.model import Run, Step


def _ev(run: Run, step_id: str, diagnoser: str, message: str = "") -> list[Evidence]:
    failures = (Failure(run.steps[-1].step_id, "step-error", message, "x"),) if message else ()
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers(), failures=failures)
    return [e for e in ctx.verdict(step_id).evidence if e.diagnoser == diagnoser]


def _export(n: int) -> dict[str, Any]:
    return {"file": "ICP.csv", "rows": [{"sample": f"BC-{40 + i}", "value": 1.0 + i} for i in range(n)]}


JOBS = {"method": "ICP", "jobs": [[f"BC-{40 + i}", "Cu"] for i in range(5)]}


def test_a_batch_answer_leaving_out_items_the_failure_names_is_suspect() -> None:
    """A tool asked about five samples that answered about three, leaving out the two the failure names,
    lost them; the same answer is no tell when the failure names none of them."""
    run = Run(
        "r",
        "lab",
        steps=(
            Step("t", "read_export", "tool", input=JOBS, output=_export(3)),
            Step("u", "upload", "tool", status="error"),
        ),
    )
    [e] = _ev(run, "t", "request-partial", "no reported value: BC-43, BC-44")
    assert "answered about 3" in e.reason and "'BC-43'" in e.reason
    assert _ev(run, "t", "request-partial", "certificate title missing") == []


def test_an_acknowledgement_of_a_batch_leaves_nothing_out() -> None:
    """A queue that acknowledges a batch (its answer names the method, none of the samples) lost none of them."""
    run = Run(
        "r",
        "lab",
        steps=(
            Step(
                "t", "queue", "tool", input=JOBS, output={"queue": "ICP", "job": "ICP-KG-0412", "accepted": 5}
            ),
            Step("u", "upload", "tool", status="error"),
        ),
    )
    assert _ev(run, "t", "request-partial", "no reported value: BC-43") == []


def test_a_model_answering_an_identifier_outside_the_records_it_was_given() -> None:
    """A model shown slots in Courtroom 6C that answers room "Courtroom 9B" chose outside its options; one
    answering a room it was shown did not."""
    request = 'Scheduling request: {"slots": [{"date": "2026-03-09", "room": "Courtroom 6C"}, {"date": "2026-03-11", "room": "Courtroom 6C"}]}'

    def run(room: str) -> Run:
        answer = json.dumps({"date": "2026-03-09", "room": room})
        return Run(
            "r",
            "court",
            steps=(
                Step(
                    "m",
                    "plan",
                    "llm",
                    input={"messages": [{"role": "user", "content": request}]},
                    output={"role": "assistant", "content": answer},
                ),
            ),
        )

    [e] = _ev(run("Courtroom 9B"), "m", "unlisted-value")
    assert "room" in e.reason and "9b" in e.reason
    assert _ev(run("Courtroom 6C"), "m", "unlisted-value") == []


def test_a_code_both_readings_catch_is_one_finding_not_two() -> None:
    """A model answering `tool: LTH-07` where it was given LTH-01 and LTH-02 under `tool` is caught by the
    code reading and by the names reading of `unlisted-value`: one finding, not two counted by noisy-OR."""
    request = 'Lots: {"lots": [{"lot": "A1", "tool": "LTH-01"}, {"lot": "A2", "tool": "LTH-02"}]}'
    run = Run(
        "r",
        "fab",
        steps=(
            Step(
                "m",
                "plan",
                "llm",
                input={"messages": [{"role": "user", "content": request}]},
                output={"role": "assistant", "content": json.dumps({"lot": "A1", "tool": "LTH-07"})},
            ),
        ),
    )
    [e] = _ev(run, "m", "unlisted-value") + _ev(run, "m", "answer-off-options")
    assert "LTH-07" in e.reason.upper()


def test_a_list_short_of_the_series_item_the_failure_names_is_suspect() -> None:
    """A tool that listed routes R-1 to R-3 when the failure names R-4, which no step ever held, gave the run
    a list short of it; when some step did hold R-4 (it reached the run and was lost later), or the list starts
    past the item, it says nothing."""

    def run(later: object) -> Run:
        return Run(
            "r",
            "plows",
            steps=(
                Step("t", "list_routes", "tool", input={"district": "N"},
                     output=json.dumps({"routes": ["R-01", "R-02", "R-03"]})),
                Step("m", "plan", "llm", input={"routes": ["R-01", "R-02", "R-03"]}, output=later),
                Step("u", "check", "other", status="error"),
            ),
        )

    [e] = _ev(run("assigned all"), "t", "series-gap", "route R-04 has no plow assigned")
    assert "'R-04'" in e.reason and "3 items" in e.reason
    assert _ev(run({"skip": "R-04"}), "t", "series-gap", "route R-04 has no plow assigned") == []
    assert _ev(run("assigned all"), "t", "series-gap", "truck T-04 has no route") == []
    # A list that starts past the item (another stretch of the series: another day's) was not cut short.
    assert _ev(run("assigned all"), "t", "series-gap", "route R-00 has no plow assigned") == []


def _panel_run(said: str) -> Run:
    """A model that was shown a survey of panels W-1A and W-1B and matched W-1A, asking for the next panel."""
    survey = "W-1A: amber streaky, 420 x 640 mm; W-1B: opal reamy, 300 x 300 mm"
    messages = [
        {"role": "system", "content": "Match every panel of the window."},
        {"role": "assistant", "tool_calls": [{"name": "survey", "arguments": {"window": "W-1"}}]},
        {"role": "tool", "content": survey},
        {"role": "assistant", "tool_calls": [{"name": "match", "arguments": {"input": "Panel W-1A."}}]},
        {"role": "tool", "content": "W-1A=A-305"},
    ]
    answer = {"role": "assistant", "tool_calls": [{"name": "match", "arguments": {"input": said}}]}
    return Run("r", "glazier", steps=(Step("m", "plan", "llm", input={"messages": messages}, output=answer),))


def test_a_sentence_naming_a_given_id_is_no_choice_outside_the_options() -> None:
    """A model asking about "Panel W-1B." after "Panel W-1A.", where a survey it was shown lists W-1B, wrote a
    given name into a sentence: neither an unlisted value nor a value found in none of its inputs; a panel
    the survey does not list still is."""
    given = _panel_run("Panel W-1B.")
    assert _ev(given, "m", "unlisted-value") == []
    assert not [e for e in _ev(given, "m", "llm-output") if e.suspicion > 0]
    made_up = _panel_run("Panel W-9C.")
    assert _ev(made_up, "m", "unlisted-value")
    assert [e for e in _ev(made_up, "m", "llm-output") if e.suspicion > 0]
