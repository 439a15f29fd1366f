"""Tests of the step whose choice a failure is about (`trajdebug.analysis._picked`)."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import step

from trajdebug.analysis import analyze
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


def _boat_run(seats_fitted: int, message: str) -> Run:
    return Run(
        "r",
        "kayak-hire",
        outcome="failure",
        steps=(
            _t("h", "trip_rules", "tool", 1, input={"trip": "estuary"}, output={"seats_needed": 3}),
            _t("c", "boat_finder", "tool", 3, input={"date": "2027-04-02", "seats": 3},
               output={"boat_id": "K-3-07", "seats_fitted": seats_fitted}, deps=(D("h"),)),
            _t("q", "price_trip", "tool", 5, input={"trip": "TR-9"}, output={"price_id": "P-12"}),
            _t("b", "reserve_boat", "tool", 7, input={"boat_id": "K-3-07", "price_id": "P-12"},
               status="error", error=ErrorInfo("Refused", message), deps=(D("c"), D("q"))),
        ),
    )


def test_the_step_given_the_bound_that_returned_the_record_breaking_it_ranks_first() -> None:
    """A boat finder asked for 3 seats that answered boat K-3-07, which the failure says is below the 3 seats
    required, ranks above the rules that stated the 3."""
    loc = localize(_boat_run(2, "boat K-3-07 is below the 3 seats required"))
    top = loc.candidates[0]
    assert top.step_id == "c"
    assert any("was given 3, the bound" in r and "K-3-07" in r for r in top.reasons)


def test_a_bound_the_answer_holds_or_a_message_naming_no_record_is_no_ignored_bound() -> None:
    """A boat finder whose answer holds the 3 it was asked for, or a failure that names no record, gives no such finding."""
    held = localize(_boat_run(3, "boat K-3-07 is below the 3 seats required"))
    nameless = localize(_boat_run(2, "the boat is below the 3 seats required"))
    for loc in (held, nameless):
        assert not any("the bound" in r for c in loc.ranked_all for r in c.reasons)


def _lookup_run(given: dict[str, Any], message: str) -> Run:
    return Run(
        "r",
        "orders",
        outcome="failure",
        steps=(
            _t("q", "find_order", "tool", 1, input=given, output={"orders": ["ORD-7"]}),
            _t("a", "add_items", "tool", 3, input={"order": "ORD-7", "sku": "SKU-9", "qty": 7},
               output={"order": "ORD-7", "items": 7}, deps=(D("q"),)),
            _t("c", "check_order", "condition", 5, input={"order": "ORD-7", "items": 7}, status="error",
               error=ErrorInfo("ValueError", message), deps=(D("a"),)),
        ),
    )


def test_a_small_bound_given_under_a_field_the_failure_does_not_name_is_a_coincidence() -> None:
    """A lookup given ``page=5`` that returned the order the failure says breaks "the 5 item limit" was told
    no limit: a small integer under a field the failure's words do not name says nothing of the bound."""
    loc = localize(_lookup_run({"customer": "CU-31", "page": 5}, "order ORD-7 has 7 items, above the 5 item limit"))
    assert not any("the bound" in r for c in loc.ranked_all for r in c.reasons)
    assert loc.candidates[0].step_id == "a"


def test_a_bound_that_is_no_small_integer_counts_under_any_field() -> None:
    """A lookup given a budget of 200 that returned the order the failure says is over the 200 limit was given
    the bound, whatever its field is called: a number that large is given by no coincidence."""
    loc = localize(_lookup_run({"customer": "CU-31", "budget": 200}, "order ORD-7 costs 260, over the 200 limit"))
    ranked = {c.step_id: c for c in loc.ranked_all}
    assert any("was given 200, the bound" in r for r in ranked["q"].reasons)


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


def _ledger_run(logged: int, message: str) -> Run:
    """A workshop's booking (12 seats) read back by a roster tool, and a logbook step handed the booking that writes
    its entry; the reconciliation refuses a log that does not match the booking."""
    booking = {"booking": "BK-2207", "seats": 12}
    return Run(
        "r",
        "workshop-log",
        outcome="failure",
        steps=(
            _t("b", "book_room", "tool", 1, input={"room": "R-3"}, output=booking),
            _t("r", "read_roster", "tool", 3, input={"booking": "BK-2207"},
               output={"attendees": ["Ines", "Tove", "Arlo"], "count": 3}),
            _t("l", "log_booking", "other", 5, input={"booking": booking, "roster": ["Ines", "Tove", "Arlo"]},
               output={"booking": "BK-2207", "seats": logged}, deps=(D("b"), D("r"))),
            _t("c", "reconcile", "condition", 7, input={"log": {"booking": "BK-2207", "seats": logged}},
               status="error", error=ErrorInfo("ValueError", message), deps=(D("l"),)),
        ),
    )


def test_a_step_that_answered_another_value_under_a_field_it_was_given_is_the_replacement_the_failure_names() -> None:
    """A logbook step handed a booking of 12 seats that wrote 3 seats, where the failure sets the log's 3 against
    the booking's 12, made the replacement the failure is about: it ranks above the tools that first held either."""
    loc = localize(_ledger_run(3, "log lists 3 seats, booking BK-2207 holds 12"))
    top = loc.candidates[0]
    assert top.step_id == "l"
    assert any("was given seats=12 and answered seats=3 in its place" in r for r in top.reasons)


def test_a_replacement_the_failure_does_not_set_against_the_given_value_is_none() -> None:
    """When the failure names only one of the two values, the logbook's change is no replacement it speaks of."""
    loc = localize(_ledger_run(3, "log lists 3 seats for BK-2207, fewer than the room's minimum"))
    assert not any("in its place" in r for c in loc.ranked_all for r in c.reasons)


def _refund_run(ledger_extra: dict[str, Any]) -> Run:
    """A refund applied to an account (balance 500, refund 120, answered 620), then a ledger read that answers the
    stale 500; the reconciliation refuses the two balances."""
    account = {"account": "AC-2", "balance": 500}
    ledger = {"account": "AC-2", "balance": 500, **ledger_extra}
    as_of = f" (as of {ledger_extra['as_of']})" if "as_of" in ledger_extra else ""
    return Run("r", "billing", outcome="failure", steps=(
        step("g", "get_account", "tool", 0, {"account": "AC-2"}, account),
        step("rf", "get_refund", "tool", 1, {"account": "AC-2"}, {"refund": 120}),
        step("ap", "apply_refund", "other", 2, {"account": account, "refund": 120},
             {"account": "AC-2", "balance": 620}, "g", "rf"),
        step("led", "read_ledger", "tool", 4, {"account": "AC-2"}, ledger, "ap"),
        step("rec", "reconcile", "condition", 6, {"account": {"account": "AC-2", "balance": 620}, "ledger": ledger},
             None, "ap", "led", status="error",
             error=ErrorInfo("ValueError", f"ledger balance 500{as_of} does not match account balance 620")),
    ))


def test_a_step_that_computed_the_new_value_from_its_own_inputs_made_an_update_not_a_replacement() -> None:
    """A refund step given a balance of 500 and a refund of 120 that answered 620 (500 + 120) updated the balance:
    the stale ledger read the failure sets against it is no replacement it made, and the ledger read (which
    introduced the as-of date the failure quotes) ranks first."""
    loc = analyze(_refund_run({"as_of": "2025-03-01"}), model=None).localization
    assert loc.ranked_all[0].step_id == "led"
    assert not any("in its place" in r for c in loc.ranked_all for r in c.reasons)
    plain = analyze(_refund_run({}), model=None).localization
    assert not any("in its place" in r for c in plain.ranked_all for r in c.reasons)


def test_a_step_given_the_new_value_under_a_field_named_for_the_old_made_an_update_not_a_replacement() -> None:
    """A reschedule given date=2025-03-14 and new_date=2025-03-21 that answered date=2025-03-21 did what it was
    handed: when the invite model later writes the old date, the reschedule gets no replacement finding."""
    appt = {"appointment": "AP-3", "date": "2025-03-14", "new_date": "2025-03-21"}
    moved = {"appointment": "AP-3", "date": "2025-03-21"}
    invite = {"messages": [{"role": "user", "content": json.dumps({"before": appt, "after": moved})}]}
    run = Run("r", "clinic", outcome="failure", steps=(
        step("in", "get_request", "tool", 0, {"appointment": "AP-3"}, appt),
        step("rs", "reschedule", "other", 2, appt, moved, "in"),
        step("inv", "write_invite", "llm", 4, invite,
             {"role": "assistant", "content": json.dumps({"appointment": "AP-3", "invite_date": "2025-03-14"})},
             "in", "rs"),
        step("cal", "sync_calendar", "tool", 6, {"appointment": "AP-3", "date": "2025-03-21",
                                                 "invite_date": "2025-03-14"}, None, "rs", "inv", status="error",
             error=ErrorInfo("ValueError", "invite says 2025-03-14 but appointment AP-3 is on 2025-03-21")),
    ))
    loc = analyze(run, model=None).localization
    assert not any("in its place" in r for c in loc.ranked_all for r in c.reasons)


def test_a_value_handed_as_a_suggestion_or_made_by_chance_arithmetic_is_still_a_replacement() -> None:
    """A logbook handed the booking's 12 seats and a suggested_seats of 3 that wrote seats=3 replaced the booking's
    value (a suggestion is no order to change it), as does one whose 3 only some other pair of its inputs makes
    (20 - 17, a room's capacity less the seats it holds): neither is an update of the 12 it was given."""
    booking = {"booking": "BK-2207", "seats": 12}
    for extra in ({"suggested_seats": 3}, {"room_capacity": 20, "room_held": 17}):
        run = Run("r", "workshop-log", outcome="failure", steps=(
            step("b", "book_room", "tool", 1, {"room": "R-3"}, booking),
            step("l", "log_booking", "other", 3, {"booking": booking, **extra},
                 {"booking": "BK-2207", "seats": 3}, "b"),
            step("c", "reconcile", "condition", 5, {"log": {"booking": "BK-2207", "seats": 3}}, None, "l",
                 status="error", error=ErrorInfo("ValueError", "log lists 3 seats, booking BK-2207 holds 12")),
        ))
        top = analyze(run, model=None).localization.ranked_all[0]
        assert top.step_id == "l", extra
        assert any("was given seats=12 and answered seats=3 in its place" in r for r in top.reasons), extra
