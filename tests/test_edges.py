"""Edges the recorder could not see: map entries rebuilt from records, words a model's answer chose."""

from __future__ import annotations

from typing import Any

from tests.builders import step

from trajdebug.analysis import DependencyGraph, analyze
from trajdebug.analysis.inference import answer_edges, entry_edges
from trajdebug.core.model import ErrorInfo, Run, Step


def _loop(n: int = 6, urgent: int = 3) -> list[Step]:
    """A triage loop over listed units: per unit a model answers a track in prose, a memory step records the
    unit's priority; the memory (a map keyed by unit id) grows and is handed on whole."""
    units = [f"U-{200 + i}" for i in range(n)]
    steps: list[Step] = [step("l", "list_units", "retrieval", 0, {"depot": "north"}, {"units": units})]
    memory: dict[str, int] = {}
    t = 1
    for i in range(n):
        unit = f"U-{200 + i}"
        track = "urgent" if i == urgent else "usual"
        steps.append(step(f"m{i}", "triage", "llm", t, {"messages": [{"role": "user", "content": unit}]},
                          {"role": "assistant", "content": f"{unit}: {track}, recheck in 30 days"}))
        steps.append(step(f"w{i}", "remember", "other", t + 2, {"unit": unit, "memory": dict(memory),
                                                                 "track": track},
                          {"unit": unit, "priority": 1 if track == "urgent" else 3}))
        memory[unit] = 1 if track == "urgent" else 3
        t += 4
    steps.append(step("r", "review", "other", t, {"memory": dict(memory)}, None,
                      error=ErrorInfo("AssertionError", "a unit rated urgent has no work order")))
    return steps


def _producers(run: Run, sid: str) -> list[str]:
    return [d.step_id for d in run.step(sid).deps]


def test_a_map_entry_links_the_record_it_was_rebuilt_from() -> None:
    """Each entry of a memory keyed by unit id links the step whose record held that id and that value."""
    run = entry_edges(Run("r", "planner", outcome="failure", steps=tuple(_loop())))
    assert set(_producers(run, "r")) == {f"w{i}" for i in range(6)}
    assert all(d.key is not None and d.key.startswith("memory.") for d in run.step("r").deps)


def test_an_entry_whose_value_no_record_held_links_nothing() -> None:
    """A map whose values match no record's (a different number for the same id) gets no entry edge."""
    steps = _loop()
    review = steps[-1]
    changed = dict.fromkeys(review.input["memory"], 9)
    steps[-1] = step("r", "review", "other", review.start_ns, {"memory": changed}, None)
    assert _producers(entry_edges(Run("r", "planner", steps=tuple(steps))), "r") == []


def test_a_word_the_model_chose_links_the_step_it_was_handed_to() -> None:
    """`track: urgent` links the model call whose answer wrote `urgent` without being given it."""
    run = answer_edges(Run("r", "planner", steps=tuple(_loop())))
    assert "m3" in _producers(run, "w3")
    assert "m2" not in _producers(run, "w3")


def test_a_word_the_model_was_given_is_no_choice_of_its_own() -> None:
    """A word the model's prompt already held (it repeated it) does not make the model its source."""
    steps: list[Any] = [
        step("m", "triage", "llm", 1, {"messages": [{"role": "user", "content": "track: urgent"}]},
             {"role": "assistant", "content": "urgent, as asked"}),
        step("w", "remember", "other", 3, {"track": "urgent"}, {"ok": True}),
    ]
    assert _producers(answer_edges(Run("r", "planner", steps=tuple(steps))), "w") == []


def test_the_model_that_chose_a_remembered_track_is_on_the_failure_path() -> None:
    """In a loop long enough that its one word is common, each model call whose choice became a memory
    entry still reaches the failing review."""
    a = analyze(Run("r", "planner", outcome="failure", steps=tuple(_loop(40, urgent=-1))))
    fails = [f.step_id for f in a.failures]
    assert fails == ["r"]
    assert {f"m{i}" for i in range(40)} <= DependencyGraph(a.run).backward_slice(fails)


def test_a_small_record_merged_into_the_next_calls_arguments_links_it() -> None:
    """A parsed choice ({"courier": "C7"}) whose every field a later call's argument object holds, under the
    same name with the same value, links that call to the step that returned it (the latest such record);
    a record of flags only links nothing."""
    from trajdebug.analysis.inference import structural_edges

    run = Run("r", "dispatch", outcome="failure", steps=(
        step("a", "parse_pick", "parse", 1, '{"courier": "C2"}', {"courier": "C2"}),
        step("b", "parse_pick", "parse", 3, '{"courier": "C7"}', {"courier": "C7"}),
        step("f", "flags", "other", 5, {}, {"ok": True}),
        step("c", "book", "tool", 7, {"parcel": "P-1", "courier": "C7", "ok": True}, {"booked": 1}),
        step("d", "book", "tool", 9, {"parcel": "P-2", "courier": "C9"}, {"booked": 2}),
    ))
    linked = structural_edges(run)
    assert _producers(linked, "c") == ["b"]
    assert _producers(linked, "d") == []


def test_a_record_of_one_small_number_or_word_links_nothing() -> None:
    """A page counter's ``{"page": 1}`` (one field, a small number) or ``{"shelf": "oak"}`` (one word) sources
    no later call whose arguments happen to hold the same field and value; a one-field id (``{"dock": "D4"}``)
    and a record of two fields or more (a loop's counters handed on) still do."""
    from trajdebug.analysis.inference import structural_edges

    run = Run("r", "shelving", outcome="failure", steps=(
        step("a", "count_pages", "tool", 1, {"doc": "manual.pdf"}, {"page": 1}),
        step("b", "pick_shelf", "parse", 3, "{}", {"shelf": "oak"}),
        step("c", "search", "tool", 5, {"query": "oak shelf brackets", "page": 1, "shelf": "oak"}, ["x"]),
        step("d", "pick_dock", "parse", 7, "{}", {"dock": "D4"}),
        step("e", "grade", "parse", 9, "{}", {"grade": "oak", "tier": 2}),
        step("f", "load", "tool", 11, {"crate": "K-9", "dock": "D4"}, {"ok": True}),
        step("g", "price", "tool", 13, {"crate": "K-9", "grade": "oak", "tier": 2}, {"eur": 40}),
        step("h", "advance", "other", 15, {"done": 1, "total": 4}, {"done": 2, "total": 4}),
        step("i", "advance", "other", 17, {"done": 2, "total": 4}, {"done": 3, "total": 4}),
    ))
    linked = structural_edges(run)
    assert _producers(linked, "c") == []
    assert _producers(linked, "f") == ["d"]
    assert _producers(linked, "g") == ["e"]
    assert _producers(linked, "i") == ["h"]


def test_a_record_repeated_by_every_step_links_each_argument_to_its_latest_producer() -> None:
    """Among many steps returning the same record (``status="done"``) and records that share one field, a
    later argument holding a record's every field links to the latest step that returned that record."""
    from trajdebug.analysis.inference import structural_edges

    steps = [step(f"s{i}", "poll", "tool", 2 * i + 1, {"job": f"J{i}"}, {"state": "done", "lane": f"L{i % 3}"})
             for i in range(30)]
    steps.append(step("u", "ship", "tool", 101, {"state": "done", "lane": "L1", "crate": "K-2"}, ["y"]))
    assert _producers(structural_edges(Run("r", "yard", outcome="failure", steps=tuple(steps))), "u") == ["s28"]


def test_a_map_entry_holding_a_list_links_the_record_it_was_rebuilt_from() -> None:
    """A loop that kept each hive's inspected frames in a map (`frames[hive] = picked`) hands the map on whole:
    the entry `"H2": ["F-21", "F-22"]` links the step whose record paired `H2` with that list, and no other."""
    steps = [
        step(f"p{i}", "pick_frames", "other", 2 * i, {"hive": hive, "count": 2}, {"hive": hive, "frames": frames})
        for i, (hive, frames) in enumerate([("H1", ["F-11", "F-12"]), ("H2", ["F-21", "F-22"])])
    ]
    steps.append(step("v", "validate_frames", "other", 9, {"frames": {"H1": ["F-11", "F-12"], "H2": ["F-21", "F-23"]}},
                      None))
    assert _producers(entry_edges(Run("r", "apiary", outcome="failure", steps=tuple(steps))), "v") == ["p0"]


def test_an_enclosing_step_opened_with_one_record_of_an_output_links_its_producer() -> None:
    """A loop that opens a step per record of an allocation (`input={"boat": "BT-422", "mooring": "M9"}`, the
    record itself, not an argument map) depends on the allocation, by a whole-input edge."""
    from trajdebug.analysis.inference import structural_edges
    from trajdebug.core.graph import WHOLE_INPUT_KEY

    plan = [{"boat": "BT-410", "mooring": "M7"}, {"boat": "BT-422", "mooring": "M9"}]
    run = Run("r", "harbour", outcome="failure", steps=(
        step("alloc", "allocate_moorings", "other", 0, {"boats": ["BT-410", "BT-422"]}, plan),
        step("node", "confirm_mooring", "agent", 3, dict(plan[1]), None),
        step("other", "confirm_mooring", "agent", 5, {"boat": "BT-499", "mooring": "M1"}, None),
    ))
    linked = structural_edges(run)
    assert [(d.step_id, d.key) for d in linked.step("node").deps] == [("alloc", WHOLE_INPUT_KEY)]
    assert _producers(linked, "other") == []


def test_a_call_handed_one_record_whole_gets_no_whole_input_edge() -> None:
    """A leaf call given a planner's record as its whole input (a search handed ``{"hull": ..., "berth": ...}``)
    links by its fields as before, not by a whole-input edge: only a step that encloses others stands for its
    record whole (a plan handed to every call would otherwise make each call hang on the plan)."""
    from trajdebug.analysis.inference import structural_edges
    from trajdebug.core.graph import WHOLE_INPUT_KEY

    plan = [{"hull": "HX-310", "berth": "B7"}, {"hull": "HX-322", "berth": "B9"}]
    run = Run("r", "harbour", outcome="failure", steps=(
        step("alloc", "allocate_berths", "other", 0, {"hulls": ["HX-310", "HX-322"]}, plan),
        step("call", "search_berth", "tool", 3, dict(plan[1]), None),
    ))
    linked = structural_edges(run)
    assert WHOLE_INPUT_KEY not in [d.key for d in linked.step("call").deps]


def test_a_record_whose_object_mixes_number_and_text_keys_is_analysed_without_error() -> None:
    """A run built in Python whose record holds `{1: "open", "spare": "closed"}` (keys of two types, which JSON
    cannot sort) is analysed: the entry simply names no value."""
    valves = {1: "open", "spare": "closed"}
    run = Run("r", "pumps", outcome="failure", steps=(
        step("a", "read_valves", "tool", 0, {"station": "east"}, {"bank": "VB-7", "valves": valves}),
        step("b", "balance", "tool", 2, {"banks": {"VB-7": dict(valves)}}, None, status="error",
             error=ErrorInfo("ValueError", "no balance")),
    ))
    assert [c.step_id for c in analyze(run, top=3).root_causes]


def test_a_one_field_answer_handed_on_whole_links_the_step_that_answered_it() -> None:
    """A guarantee lookup that answered one field (``{"insured_until": null}``, found nothing) handed whole as
    the ``guarantee`` argument of the quote links the quote to that lookup; a one-field answer too short to
    tell (``{"ok": true}``) still links nothing."""
    from trajdebug.analysis.inference import structural_edges

    run = Run("r", "boat-repair", outcome="failure", steps=(
        step("g", "resolve_guarantee", "other", 1, {"hull": "HN-5521"}, {"insured_until": None}),
        step("k", "ping_yard", "other", 3, {}, {"ok": True}),
        step("q", "compute_quote", "other", 5, {"hours": 3.0, "guarantee": {"insured_until": None}, "yard": {"ok": True}},
             {"charge": 210.0}),
    ))
    assert _producers(structural_edges(run), "q") == ["g"]


def test_a_one_field_acknowledgement_several_steps_answer_links_nothing() -> None:
    """Two tools that each answer ``{"outcome": "accepted"}`` (an acknowledgement calls share) give a step handed
    that record no edge to the latest of them; nor does a yes/no under one field (``{"acknowledged": true}``)."""
    from trajdebug.analysis.inference import structural_edges

    ack = {"outcome": "accepted"}
    run = Run("r", "kennel", outcome="failure", steps=(
        step("h", "reserve_pen", "tool", 1, {"pen": "P-9"}, dict(ack)),
        step("n", "notify_owner", "tool", 3, {"owner": "OW-12"}, dict(ack)),
        step("v", "notify_vet", "tool", 4, {"vet": "VT-3"}, {"acknowledged": True}),
        step("c", "check_in", "tool", 5, {"dog": "DG-77", "pen": dict(ack), "vet": {"acknowledged": True}}, None),
    ))
    assert _producers(structural_edges(run), "c") == []


def _hedge_run(rows: list[list[Any]], walked: list[list[Any]]) -> Run:
    """A hedge-laying agent: a code step plans the rows to lay as ``[row, side]`` pairs, a tool lays each pair in
    turn (``walked``), and the hedge check refuses a short hedge."""
    steps: list[Step] = [
        step("ask", "read_job", "input", 0, {"text": "lay 4 rows"}, {"rows": 4}),
        step("plan", "plan_rows", "other", 2, {"rows": 4}, rows),
    ]
    t = 4
    for i, (row, side) in enumerate(walked):
        steps.append(step(f"lay{i}", "lay_row", "tool", t, {"row": row, "side": side, "stakes": 12}, {"laid": True}))
        t += 2
    steps.append(step("chk", "check_hedge", "tool", t, {"laid": len(walked)}, None, status="error",
                      error=ErrorInfo("ValueError", "hedge short: 4 rows a side asked")))
    return Run("r", "t", outcome="failure", steps=tuple(steps))


def test_the_calls_of_a_loop_over_a_list_of_small_items_depend_on_the_list() -> None:
    """Each row-laying call took one ``[row, side]`` pair of the plan, every pair in turn: each depends on the
    plan (an item of a small number and a short word carries no text content inference traces)."""
    from trajdebug.analysis.inference import item_edges

    rows = [[1, "east"], [2, "east"], [3, "east"], [1, "west"], [2, "west"], [3, "west"]]
    run = item_edges(_hedge_run(rows, rows))
    assert all(("plan", "item:") in {(d.step_id, d.key) for d in run.step(f"lay{i}").deps} for i in range(6))


def test_calls_that_take_only_some_of_a_lists_items_do_not_depend_on_it() -> None:
    """A loop that laid three of the six pairs walked some other plan: no call depends on this one."""
    from trajdebug.analysis.inference import item_edges

    rows = [[1, "east"], [2, "east"], [3, "east"], [1, "west"], [2, "west"], [3, "west"]]
    run = item_edges(_hedge_run(rows, rows[:3]))
    assert not any(d.step_id == "plan" for s in run.steps for d in s.deps)


def test_calls_given_the_same_small_settings_each_take_no_item_of_a_list_of_small_pairs() -> None:
    """A loop of fetches each given the same options (``tries=3, wait=2, jitter=1``) holds every number of a list of
    pairs of 1 to 3 in every call: the options tell no item from another, so no call depends on the list."""
    from trajdebug.analysis.inference import item_edges

    steps: list[Step] = [step("pairs", "pair_kilns", "other", 0, {"kilns": 3}, {"pairs": [[1, 2], [2, 3], [3, 1]]})]
    for i in range(4):
        steps.append(step(f"f{i}", "fetch_glaze_sheet", "tool", 2 + i,
                          {"url": f"https://glaze.example/{i}", "tries": 3, "wait": 2, "jitter": 1}, {"ok": True}))
    run = item_edges(Run("r", "t", outcome="failure", steps=tuple(steps)))
    assert not any(d.step_id == "pairs" for s in run.steps for d in s.deps)
