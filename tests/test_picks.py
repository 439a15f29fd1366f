"""Tests of a step that picked one of the values it was given (`trajdebug.analysis.lineage._picks`)."""

from __future__ import annotations

from typing import Any

from tests.builders import step

from trajdebug.analysis import analyze
from trajdebug.analysis.lineage import PICKED_KEY
from trajdebug.core.model import ErrorInfo, Run, Step


ZONES = ["GH-03", "GH-07", "GH-11"]


def _greenhouse(answers: list[str]) -> Run:
    """A greenhouse audit: each zone is looked up and logged (its id held by many steps), then an inspector
    sub-agent per zone reads its brief (the zone it is for, beside the whole list) and answers which zone to
    read the sensor of; the certificate service refuses a reading that is not the zone's."""
    steps: list[Step] = [step("in", "receive_audit", "input", 0, None, {"zones": ZONES})]
    t = 1
    for z in ZONES:
        steps.append(step(f"lk{z}", "lookup_zone", "retrieval", t, {"zone": z}, {"zone": z, "crop": "basil"}))
        steps.append(step(f"lg{z}", "log_zone", "tool", t + 1, {"zone": z}, {"zone": z, "logged": True}))
        t += 2
    readings: list[dict[str, Any]] = []
    for i, (z, pick) in enumerate(zip(ZONES, answers)):
        brief = {"line": i + 1, "zone": z, "site": ZONES}
        sensor = {"zone": pick, "humidity_pct": 61.5 + i, "probe": f"PR-{pick[-2:]}{i}"}
        steps += [
            step(f"desk{i}", "inspector", "agent", t, {"brief": brief}, sensor),
            step(f"brief{i}", "read_brief", "llm", t + 1, {"brief": brief}, {"inspect_zone": pick},
                 parent_id=f"desk{i}"),
            step(f"sensor{i}", "read_sensor", "tool", t + 2, {"zone": pick}, sensor, parent_id=f"desk{i}"),
        ]
        readings.append({"zone": z, "probe": sensor["probe"]})
        t += 3
    wrong = next((r for r, z, p in zip(readings, ZONES, answers) if z != p), None)
    steps.append(
        step("cert", "certify", "tool", t, {"readings": readings}, None, status="error",
             error=ErrorInfo("RuntimeError", f"HTTP 409: probe {wrong['probe']} is not installed in {wrong['zone']}"
                             if wrong else "HTTP 500"))
    )
    return Run("r", "greenhouse-audit", outcome="failure", steps=tuple(steps))


def test_a_call_handed_the_value_the_model_before_it_picked_from_a_list_depends_on_that_model() -> None:
    """The sensor read right after a model that answered one zone of the list it was given depends on that
    model through its pick, though the zone id was born at the run's start and many steps hold it."""
    a = analyze(_greenhouse(["GH-03", "GH-03", "GH-11"]))
    deps = {d.step_id: d.key for s in a.run.steps if s.step_id == "sensor1" for d in s.deps}
    assert deps.get("brief1", "").startswith(PICKED_KEY)


def test_a_model_asked_about_one_item_that_answers_another_of_its_list_is_the_root() -> None:
    """An inspector's model asked about GH-07 (its brief also lists every zone) that answered
    ``inspect_zone=GH-03`` picked the wrong entity: it ranks first for the certificate refusing the probe."""
    a = analyze(_greenhouse(["GH-03", "GH-03", "GH-11"]))
    top = a.localization.ranked_all[0]
    assert top.step_id == "brief1"
    assert "lineage:wrong-record" in top.signals
    assert any("was asked about zone='GH-07'" in r for r in top.reasons)


def test_a_model_that_answers_the_item_it_was_asked_about_picked_nothing_wrong() -> None:
    """Inspectors that each answer their own zone give no wrong-pick finding, and a call handed a value its
    sibling was given alone (no list to pick from) gets no pick edge."""
    a = analyze(_greenhouse(ZONES))
    for c in a.localization.ranked_all:
        assert not any("was asked about" in r for r in c.reasons)
    keys = {d.key for s in a.run.steps if s.name == "log_zone" for d in s.deps}
    assert not any(k and k.startswith(PICKED_KEY) for k in keys)


def _piano_tuning(parsed: str = "Sat 10:30") -> Run:
    """A piano-tuning desk: the tuner's free slots (each also checked, so many steps hold each slot), a context
    built from them, a model proposing one in prose, a parser reading it out, and a booking drafted from the
    parsed slot (its draft recorded with no edge); the confirmation refuses a slot that is not the day asked."""
    slots = ["Mon 09:00", "Mon 14:00", "Sat 10:30", "Sat 15:00"]
    steps = [
        step("req", "read_request", "input", 0, None, {"day": "Monday", "piano": "PN-88"}),
        step("list", "fetch_free_slots", "tool", 1, {"tuner": "TU-4"}, slots),
        *(step(f"chk{i}", "check_travel", "tool", 2 + i, {"slot": s}, {"slot": s, "ok": True}) for i, s in enumerate(slots)),
        step("ctx", "assemble_context", "other", 8, {"day": "Monday"}, f"Day asked: Monday. Slots: {', '.join(slots)}"),
        step("llm", "propose_slot", "llm", 9, {"context": "Day asked: Monday. Slots: ..."}, f"Proposed slot: {parsed}", "ctx"),
        step("parse", "parse_slot", "parse", 10, {"answer": f"Proposed slot: {parsed}"}, parsed, "llm"),
        step("draft", "draft_booking", "llm", 11, {"payload": {"slot": parsed, "piano": "PN-88"}},
             {"slot": parsed, "piano": "PN-88"}),
        step("book", "book_visit", "tool", 12, {"args": {"slot": parsed, "piano": "PN-88"}}, {"visit": "V-7", "slot": parsed},
             "draft"),
        step("ok", "confirm_visit", "output", 13, {"visit": {"visit": "V-7", "slot": parsed}, "day": "Monday"}, None,
             "book", "req", status="error", error=ErrorInfo("ValueError", f"visit {parsed} does not match the requested Monday")),
    ]
    return Run("r", "piano", outcome="failure", steps=tuple(steps))


def test_a_step_handed_the_one_value_a_parser_answered_depends_on_the_parser() -> None:
    """The booking draft given the slot a parser read out of the model's prose depends on that parser, though
    the slot was born in the tuner's list long before."""
    from trajdebug.analysis.lineage import ANSWER_KEY, answered_edges

    edges = answered_edges(_piano_tuning())
    assert [(d.step_id, d.key) for d in edges["draft"]] == [("parse", ANSWER_KEY + "Sat 10:30")]


def test_the_model_whose_parsed_answer_was_handed_on_is_on_the_failures_path() -> None:
    """The model that proposed the wrong slot reaches the failed confirmation through the parser and the draft."""
    from trajdebug.core.graph import DependencyGraph

    a = analyze(_piano_tuning(), top=50)
    assert {"llm", "ctx"} <= DependencyGraph(a.run).backward_slice([f.step_id for f in a.failures])


def test_a_step_that_relays_a_value_it_was_handed_whole_answers_nothing_new() -> None:
    """A step whose whole answer is a value it was handed under a field (a relay) is no answer to link to."""
    from trajdebug.analysis.lineage import answered_edges

    run = _piano_tuning()
    relay = step("relay", "echo_slot", "other", 10, {"slot": "Sat 10:30"}, "Sat 10:30", "llm")
    steps = tuple(relay if s.step_id == "parse" else s for s in run.steps)
    assert "draft" not in answered_edges(Run("r", "piano", outcome="failure", steps=steps))


def test_a_yes_no_or_empty_answer_and_a_text_in_another_case_link_nothing() -> None:
    """A check whose whole answer is ``"False"`` or ``"None"`` (a Python tool through ``str()``) is no answer a later
    step handed ``"false"`` (a setting) depends on; nor is a ``"Sat 10:30"`` answer a step handed ``"sat 10:30"``:
    answers are compared as written."""
    from trajdebug.analysis.lineage import answered_edges

    for answer, handed in (("False", "false"), ("None", "none"), ("True", "True"), ("Sat 10:30", "sat 10:30")):
        steps = (
            step("u", "user", "input", 0, None, {"kiln": "KL-4"}),
            step("chk", "is_preheated", "tool", 2, {"kiln": "KL-4"}, answer, "u"),
            step("pl", "plan_firing", "llm", 4, {"kiln": "KL-4"}, {"kiln": "KL-4", "glaze": handed}, "u"),
            step("f", "fire", "tool", 6, {"kiln": "KL-4", "glaze": handed}, None, "pl", status="error",
                 error=ErrorInfo("ValueError", "firing failed: KL-4 door open")),
        )
        assert "f" not in answered_edges(Run("r", "pottery", outcome="failure", steps=steps)), answer
