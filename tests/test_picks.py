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


def _plan_memory(kept: str) -> Run:
    """A gym's billing: an account lookup gives the member's plan and the plans they have held, a memory keeps one as
    the plan to bill, and the invoice service refuses an amount that is not the current plan's."""
    account = {"account": "A-77", "plan": "premium", "plans_held": ["basic", "premium"]}
    return Run("r", "gym-billing", outcome="failure", steps=(
        step("a", "get_account", "tool", 1, {"account": "A-77"}, account),
        step("m", "remember_plan", "state", 3, account, {"account": "A-77", "current_plan": kept}, "a"),
        step("p", "price_plan", "tool", 5, {"plan": kept},
             {"plan": kept, "monthly": 9.0 if kept == "basic" else 19.0}, "m"),
        step("i", "issue_invoice", "tool", 7, {"account": "A-77", "amount": 9.0}, None, "p", status="error",
             error=ErrorInfo("ValueError", "invoice refused: 9.00 differs from the 19.00 due")),
    ))


def test_a_step_asked_about_one_word_of_its_list_that_answers_another_word_of_it_picked_the_wrong_item() -> None:
    """A memory given plan='premium' and the plans held, basic and premium, that kept current_plan='basic' answered
    another item of the list for the one it was asked about, though the two words differ in length."""
    loc = analyze(_plan_memory("basic"), model=None).localization
    top = loc.ranked_all[0]
    assert top.step_id == "m"
    assert any("was asked about plan='premium'" in r for r in top.reasons)
    assert not any("was asked about" in r for c in analyze(_plan_memory("premium"), model=None).localization.ranked_all
                   for r in c.reasons)



def test_a_model_that_answers_the_next_identifier_of_its_box_still_picked_the_wrong_item() -> None:
    """An inspector asked about GH-07 that answered GH-11, the zone after it in the site's list, picked the wrong
    entity: a box of identifiers has no order to move along (its order is where the items were stored)."""
    top = analyze(_greenhouse(["GH-03", "GH-11", "GH-11"])).localization.ranked_all[0]
    assert top.step_id == "brief1"
    assert any("was asked about zone='GH-07'" in r for r in top.reasons)


def _upgrade(answer_field: str) -> Run:
    """A gym's upgrade: the account holds plan='basic', the plans held and an ``upgrade_to='premium'`` directive; a
    code step applies it (answering the new plan under ``answer_field``), and a price tool with a stale table
    answers the old price for premium, which the invoice service refuses."""
    account = {"account": "A-77", "plan": "basic", "plans_held": ["basic", "premium"], "upgrade_to": "premium"}
    return Run("r", "gym", outcome="failure", steps=(
        step("a", "get_account", "tool", 0, {"account": "A-77"}, account),
        step("u", "apply_upgrade", "other", 2, account, {"account": "A-77", answer_field: "premium"}, "a"),
        step("p", "price_plan", "tool", 4, {"plan": "premium"}, {"plan": "premium", "monthly": 9.0}, "u"),
        step("i", "issue_invoice", "tool", 6, {"account": "A-77", "plan": "premium", "amount": 9.0}, None, "u", "p",
             status="error", error=ErrorInfo("ValueError", "invoice refused: 9.00 differs from the 19.00 due for premium")),
    ))


def test_a_step_that_carries_out_a_change_it_was_given_as_a_directive_picked_nothing_wrong() -> None:
    """A step given plan='basic', the plans held and upgrade_to='premium' that answered premium (as new_plan or as
    plan) did what it was told: no wrong-pick finding, and with new_plan the stale price tool ranks first."""
    for field in ("new_plan", "plan"):
        loc = analyze(_upgrade(field), model=None).localization
        assert not any("was asked about" in r for c in loc.ranked_all for r in c.reasons), field
    assert analyze(_upgrade("new_plan"), model=None).localization.ranked_all[0].step_id == "p"


def _pipeline(answer_field: str) -> Run:
    """A ticket pipeline: the ticket holds stage='triage' and the ordered stages; a code step advances it (the next
    stage under ``answer_field``); the engineer picker answers an engineer off shift and the assignment fails."""
    ticket = {"ticket": "TK-12", "stage": "triage", "stages": ["triage", "investigate", "resolve"], "severity": 2}
    return Run("r", "tickets", outcome="failure", steps=(
        step("g", "get_ticket", "tool", 0, {"ticket": "TK-12"}, ticket),
        step("adv", "advance_stage", "other", 2, ticket, {"ticket": "TK-12", answer_field: "investigate"}, "g"),
        step("pick", "pick_engineer", "tool", 4, {"stage": "investigate", "severity": 2}, {"engineer": "E-4"},
             "adv", "g"),
        step("as", "assign", "tool", 6, {"ticket": "TK-12", "engineer": "E-4", "stage": "investigate"}, None,
             "adv", "pick", status="error", error=ErrorInfo("ValueError", "assign failed: engineer E-4 is off shift")),
    ))


def test_a_step_that_moves_to_the_next_name_of_an_ordered_list_picked_nothing_wrong() -> None:
    """A step given stage='triage' and the stages in order that answered 'investigate', the next one, moved along
    the list (its job): no wrong-pick finding, and with next_stage the engineer picker ranks first."""
    for field in ("next_stage", "stage"):
        loc = analyze(_pipeline(field), model=None).localization
        assert not any("was asked about" in r for c in loc.ranked_all for r in c.reasons), field
    assert analyze(_pipeline("next_stage"), model=None).localization.ranked_all[0].step_id == "pick"


def test_a_model_called_with_a_record_that_swaps_to_the_next_shift_picked_nothing_wrong() -> None:
    """A model called with a rota record (shift='early', the shifts early and late, a swap asked for) that answered
    shift='late' made the swap: the payroll tool that answered the wrong rate for it ranks first."""
    rota = {"nurse": "N-8", "shift": "early", "shifts": ["early", "late"], "swap_requested": True}
    run = Run("r", "rota", outcome="failure", steps=(
        step("g", "get_rota", "tool", 0, {"nurse": "N-8"}, rota),
        step("m", "approve_swap", "llm", 2, rota, {"nurse": "N-8", "shift": "late"}, "g"),
        step("pay", "payroll_rate", "tool", 4, {"shift": "late"}, {"shift": "late", "rate": 18.5}, "m"),
        step("chk", "check_pay", "tool", 6, {"nurse": "N-8", "shift": "late", "rate": 18.5}, None, "m", "pay",
             status="error", error=ErrorInfo("ValueError", "pay 18.5 differs from the late-shift rate 21.0")),
    ))
    loc = analyze(run, model=None).localization
    assert loc.ranked_all[0].step_id == "pay"
    assert not any("was asked about" in r for c in loc.ranked_all for r in c.reasons)
