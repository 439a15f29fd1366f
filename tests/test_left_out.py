"""Items a step left out of a list it was given, where they make up the gap the failure states."""

from __future__ import annotations

import json
from typing import Any

from tests.builders import step

from trajdebug.analysis._localize import localize
from trajdebug.core.model import ErrorInfo, Run


_ITEMS = [
    {"date": "11-03", "kind": "taxi", "amount": 38.0},
    {"date": "11-04", "kind": "meal", "amount": 27.5},
    {"date": "11-04", "kind": "meal", "amount": 64.0},
    {"date": "11-05", "kind": "train", "amount": 54.9},
]


def _run(kept: list[dict[str, Any]], message: str) -> Run:
    total = round(sum(i["amount"] for i in kept), 2)
    return Run(
        "r",
        "claims",
        outcome="failure",
        steps=(
            step("p", "parse_lines", "parse", 1, {"text": "..."}, _ITEMS),
            step("d", "dedupe", "other", 3, {"items": _ITEMS}, kept, "p"),
            step("t", "add_up", "other", 5, {"items": kept}, {"total": total}, "d"),
            step(
                "w",
                "decide",
                "tool",
                7,
                {"total": total},
                None,
                "t",
                status="error",
                error=ErrorInfo("Mismatch", message),
            ),
        ),
    )


def test_items_left_out_that_make_up_the_stated_gap_point_at_the_step_that_dropped_them() -> None:
    """A step that returned its list minus an item whose amount is the gap between the two totals the failure states ranks first."""
    kept = [i for i in _ITEMS if i["amount"] != 64.0]
    loc = localize(_run(kept, "paid 120.40 but the statement says 184.40"))
    top = loc.candidates[0]
    assert top.step_id == "d"
    assert "lineage:dropped" in top.signals
    assert any("64" in r and "120.40" in r for r in top.reasons)


def test_items_left_out_that_make_up_no_stated_gap_say_nothing() -> None:
    """A filter whose left-out items add up to no gap the failure states gets no such evidence."""
    kept = [i for i in _ITEMS if i["amount"] != 64.0]
    loc = localize(_run(kept, "paid 120.40 but the statement says 999.99"))
    assert all("lineage:dropped" not in c.signals for c in loc.ranked_all if c.step_id == "d")


def _parsed(units: int, message: str) -> Run:
    text = "Invoice IV-4: client Marlow; pallets 1,240 + crates 35; ship 2027-03-02"
    return Run(
        "r",
        "invoices",
        outcome="failure",
        steps=(
            step("m", "model", "llm", 1, {"messages": [{"role": "user", "content": text}]}, {"role": "assistant", "content": text}),
            step("p", "parse_invoice", "other", 3, text, {"invoice": "IV-4", "units": units}, "m"),
            step("c", "price", "other", 5, {"units": units}, {"units": units, "rate": 4.1}, "p"),
            step("s", "submit", "tool", 7, {"units": units, "rate": 4.1}, None, "c", status="error",
                 error=ErrorInfo("Mismatch", message)),
        ),
    )


def test_a_part_of_a_written_amount_left_out_points_at_the_parse_that_kept_the_first_part() -> None:
    """A parse that read ``1,240 + 35`` in its text as 1240, where the failure states 1275 against 1240, ranks first
    for leaving out the 35; the model that handed the whole text on, both parts in it, does not."""
    loc = localize(_parsed(1240, "warehouse shows 1275 units, invoice states 1240"))
    top = loc.candidates[0]
    assert top.step_id == "p"
    assert any("35" in r and "1275" in r for r in top.reasons)
    assert all("lineage:dropped" not in c.signals for c in loc.ranked_all if c.step_id == "m")


def test_a_part_left_out_that_is_no_stated_gap_says_nothing() -> None:
    """The same parse, where the failure states numbers 35 apart from neither part of the text, gets no such finding."""
    loc = localize(_parsed(1240, "warehouse shows 1300 units, invoice states 1265"))
    assert all("left out the" not in r for c in loc.ranked_all if c.step_id == "p" for r in c.reasons)


def test_an_answer_is_read_for_parts_only_where_its_given_text_writes_two_numbers() -> None:
    """A step given texts of fewer than two numbers each can have left out no part written beside another, so its
    answer is never read (an answer that no JSON writer takes raises nothing); given ``1,240 + 35`` the same step
    is found keeping the first part."""
    from trajdebug.analysis._left_out import _part_left_out

    gaps = [(35.0, 0.0, "1275", "1240")]
    unwritable = {("units", 1): 1240}  # a tuple key: ``json.dumps`` raises on it
    assert _part_left_out({"text": "client Marlow, 1,240 units", "note": "rush"}, unwritable, gaps) is None
    kept = _part_left_out("pallets 1,240 + crates 35", {"units": 1240}, gaps)
    assert kept == ("1,240", "35", "1275", "1240")


def _planner_run(plan: str, message: str) -> Run:
    stops = ["Alder Quay", "Brook End", "Cobalt Hill", "Dunmore Gate"]
    return Run(
        "r",
        "coach-tours",
        outcome="failure",
        steps=(
            step("l", "list_stops", "tool", 1, {"line": "east"}, {"line": "east", "stops": stops}),
            step("e", "read_booking", "other", 2, {"tour": "TR-8"}, {"tour": "TR-8", "seats": 14, "guide": "B. Osei"}),
            step(
                "m",
                "plan_route",
                "llm",
                3,
                {"messages": [{"role": "user", "content": json.dumps({"tour": "TR-8", "stops": stops})}]},
                {"role": "assistant", "content": plan},
                "l",
                "e",
            ),
            step("s", "book_coach", "tool", 5, {"tour": "TR-8", "plan": plan}, {"tour": "TR-8", "coaches": 3}, "m"),
            step(
                "f",
                "approve_tour",
                "tool",
                7,
                {"tour": "TR-8", "coaches": 3},
                None,
                "s",
                status="error",
                error=ErrorInfo("Refused", message),
            ),
        ),
    )


_SKIPPED = "Itinerary: Alder Quay > Brook End > Dunmore Gate"


def test_a_list_item_the_failure_says_is_missing_points_at_the_step_that_left_it_out() -> None:
    """A planner given four stops that passed on three, leaving out the one the failure says has no pickup
    (the word of absence before the name or after it), ranks first."""
    for message in ("tour TR-8 has no pickup at Cobalt Hill", "tour TR-8: Cobalt Hill is missing from the route"):
        top = localize(_planner_run(_SKIPPED, message)).candidates[0]
        assert top.step_id == "m"
        assert any("'Cobalt Hill'" in r and "3 of the 4" in r for r in top.reasons)


def test_a_name_the_step_passed_on_or_a_name_in_no_list_is_no_item_left_out() -> None:
    """A planner that kept every stop, or a failure naming a value no step was given in a list, says nothing of this kind."""
    kept = localize(_planner_run("Itinerary: Alder Quay > Brook End > Cobalt Hill > Dunmore Gate", "tour TR-8 has no pickup at Cobalt Hill"))
    guide = localize(_planner_run(_SKIPPED, "tour TR-8 has no guide B. Osei"))
    for loc in (kept, guide):
        assert not any("items of a list it was given" in r for c in loc.ranked_all for r in c.reasons)


def test_a_name_the_failure_writes_for_another_reason_is_no_item_left_out() -> None:
    """A router that sent an order to two of three desks, where the failure names the third only as the one
    that set the limit it checked (no word of absence near it), is not said to have left it out."""
    desks = ["Day Desk", "Night Desk", "Weekend Desk"]
    routed = ["Day Desk", "Weekend Desk"]
    run = Run(
        "r",
        "orders",
        outcome="failure",
        steps=(
            step("l", "list_desks", "tool", 1, {"site": "S-1"}, {"desks": desks}),
            step("r", "route", "other", 3, {"desks": desks, "hour": 14}, {"route": routed}, "l"),
            step("p", "price", "tool", 5, {"sku": "SKU-77", "qty": 3}, {"total": 9000}),
            step("f", "approve", "condition", 7, {"route": routed, "total": 9000}, None, "r", "p", status="error",
                 error=ErrorInfo("ValueError", "total 9000 is over the 5000 limit Night Desk set for SKU-77")),
        ),
    )
    ranked = localize(run).ranked_all
    assert not any("leaving out 'Night Desk'" in r for c in ranked for r in c.reasons)
    assert ranked[0].step_id == "p"


def test_a_deeply_nested_json_text_beside_the_list_is_read_as_text() -> None:
    """A planner also given a note of JSON text nested too deep to parse is still analysed: the note is no
    list of names, and the stop it left out of the list beside it is still found."""
    deep = "[" * 100_000 + "]" * 100_000
    stops = ["Alder Quay", "Brook End", "Cobalt Hill"]
    run = Run(
        "r",
        "coach-tours",
        outcome="failure",
        steps=(
            step("t", "list_stops", "tool", 1, {"line": "north"}, {"stops": stops}),
            step("p", "plan", "other", 3, {"notes": deep, "stops": stops}, {"plan": "Alder Quay > Cobalt Hill"}, "t"),
            step("f", "validate", "condition", 5, {"plan": "Alder Quay > Cobalt Hill"}, None, "p", status="error",
                 error=ErrorInfo("ValueError", "route has no stop at Brook End")),
        ),
    )
    top = localize(run).candidates[0]
    assert top.step_id == "p"
    assert any("'Brook End'" in r for r in top.reasons)


def test_a_lowercase_item_a_model_left_out_of_a_printed_record_points_at_that_model() -> None:
    """A model handed a tool's record printed by Python (the Agents SDK's ``str(result)`` in its conversation)
    listing three courses, which asked for two of them, ranks first when the failure says the menu does not
    cover the third, a lowercase name of two words; told the menu covers all, nothing of this kind is said."""
    record = {"event": "EV-12", "courses": ["leek soup", "lamb shank", "pear tart"], "guests": 40}

    def run(message: str) -> Run:
        asked = {"event": "EV-12", "courses": ["leek soup", "pear tart"]}
        convo = [{"role": "user", "content": "Plan EV-12"}, {"role": "tool", "content": str(record)}]
        return Run(
            "r",
            "catering",
            outcome="failure",
            steps=(
                step("b", "read_event", "tool", 1, {"event": "EV-12"}, str(record)),
                step("m", "planner", "llm", 3, {"messages": convo},
                     {"role": "assistant", "content": None, "tool_calls": [{"name": "cost_menu", "arguments": asked}]}, "b"),
                step("c", "cost_menu", "tool", 5, asked, {"menu": "MN-4", "total": 880.0}, "m"),
                step("f", "confirm_event", "tool", 7, {"menu": "MN-4", "total": 880.0}, None, "c", status="error",
                     error=ErrorInfo("ToolError", message)),
            ),
        )

    top = localize(run("venue API 422: menu does not cover booked courses: lamb shank")).candidates[0]
    assert top.step_id == "m"
    assert any("'lamb shank'" in r and "2 of the 3" in r for r in top.reasons)
    other = localize(run("venue API 422: menu total 880.0 over budget")).ranked_all
    assert not any("items of a list it was given" in r for c in other for r in c.reasons)


def _ferry(saved: list[str]) -> Run:
    """A ferry desk: the port lookup returns the berths of the terminal, a code step saves the night's plan with
    the berths it keeps (``saved``), and the allocation refused for the berth no longer there."""
    berths = ["Quay 1", "Quay 2", "Ramp Berth"]
    return Run("r", "t", outcome="failure", steps=(
        step("look", "port_lookup", "retrieval", 0, {"terminal": "T-North"}, [{"terminal": "T-North", "berths": berths}]),
        step("save", "save_night_plan", "other", 2, {"terminal": "T-North"}, {"night": "2027-05-02", "berths": saved},
             "look"),
        step("alloc", "allocate_sailings", "tool", 4, {"plan": {"night": "2027-05-02", "berths": saved}}, None, "save",
             status="error", error=ErrorInfo("ValueError", "sailing S-4 needs a ramp berth, none of the berths has one")),
    ))


def test_a_code_step_that_saved_fewer_of_the_items_of_a_list_it_read_cut_it() -> None:
    """The plan saved two of the three berths the lookup returned, and the failure speaks of berths: the code
    step cut the list (`lineage:dropped`); one that saved all three cut nothing."""
    def dropped(saved: list[str]) -> list[str]:
        loc = localize(_ferry(saved), top=10)
        return [r for c in loc.ranked_all if c.step_id == "save" for r in c.reasons if "left out" in r]

    [reason] = dropped(["Quay 1", "Quay 2"])
    assert "2 of the 3 berths" in reason and "Ramp Berth" in reason
    assert dropped(["Quay 1", "Quay 2", "Ramp Berth"]) == []


def _spa(kept: list[str], message: str) -> Run:
    """A spa's booking desk: the lookup returns the treatment rooms, a code step keeps those open today
    (``kept``), a model reads the client's note for the price cap, and the booking fails with ``message``."""
    rooms = ["Fern Room", "Moss Room", "Salt Room", "Cedar Room"]
    return Run("r", "t", outcome="failure", steps=(
        step("look", "list_rooms", "retrieval", 0, {"spa": "Nord"}, {"rooms": rooms, "spa": "Nord"}),
        step("open", "keep_open_rooms", "other", 2, {"spa": "Nord"}, {"rooms": kept}, "look"),
        step("cap", "read_price_cap", "llm", 3, {"note": "at most 60 EUR an hour"}, {"cap": 50}),
        step("pick", "pick_rooms", "other", 4, {"rooms": kept, "cap": 50}, {"rooms": []}, "open", "cap"),
        step("book", "book_room", "tool", 6, {"rooms": []}, None, "pick",
             status="error", error=ErrorInfo("ValueError", message)),
    ))


def test_a_code_step_that_filtered_out_a_room_nobody_wanted_cut_nothing() -> None:
    """The desk kept the three rooms open today of the four the lookup returned, and the failure speaks of rooms
    but names no room left out and no later step asked for it: filtering is the step's work, no cut.  A failure
    naming the left-out room makes it one."""
    def dropped(message: str) -> list[str]:
        loc = localize(_spa(["Fern Room", "Salt Room", "Cedar Room"], message), top=10)
        return [r for c in loc.ranked_all if c.step_id == "open" for r in c.reasons if "left out" in r]

    assert dropped("no rooms left to book under the price cap") == []
    [reason] = dropped("no rooms left to book: the Moss Room was asked for")
    assert "Moss Room" in reason

