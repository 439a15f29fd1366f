"""Tests of steps that pick items from a list they were given (`trajdebug.analysis._selection`)."""

from __future__ import annotations

import json
from typing import Any

from trajdebug.analysis._detect import Failure
from trajdebug.analysis._localize import localize
from trajdebug.analysis._selection import left_in_state, other_item, selections
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


D = Dependency
ROWS = [
    {"sample": "S-1", "analyte": "Au", "value": 3.5},
    {"sample": "S-2", "analyte": "Au", "value": 4.5},
    {"sample": "S-3", "analyte": "Au", "value": 5.5},
]


def _t(sid: str, name: str, kind: str, start: int, **kw: Any) -> Step:
    return Step(sid, name, kind, start_ns=start, end_ns=start + 1, **kw)  # type: ignore[arg-type]


def test_an_answer_about_one_record_picked_it() -> None:
    """An answer naming one record's key, of a list of records the step was given, picked that record."""
    [sel] = selections({"sample": "S-1", "rows": ROWS}, {"sample": "S-1", "Au": 3.5})
    assert (sel.field, sel.picked, sel.others) == ("sample", frozenset({"s-1"}), frozenset({"s-2", "s-3"}))
    assert selections({"rows": ROWS}, {"total": 13.5}) == []


def test_another_records_key_is_not_the_pickers_to_pass_on() -> None:
    """The key of a record the step did not pick, or of a batch its answer names none of (a plan by
    analyte), is no value it lost; the key of the record it picked is."""
    given = {"sample": "S-1", "rows": ROWS}
    assert other_item(given, {"sample": "S-1", "Au": 3.5}, "S-2")
    assert not other_item(given, {"sample": "S-1", "Au": 3.5}, "S-1")
    assert other_item({"samples": ROWS}, {"methods": {"Au": "FA50"}}, "S-3")


def test_a_graph_nodes_partial_answer_leaves_the_rest_in_the_state() -> None:
    """A node given the whole state that answers with the fields it changes lost none of the fields it
    left alone; one answering the field itself, or a parser reshaping its one input, is judged as before."""
    state = {"dma": "DMA-11", "alerts": ROWS, "i": 0}
    assert left_in_state(state, {"current": ROWS[0], "i": 1}, "DMA-11")
    assert not left_in_state(state, {"dma": "DMA-12", "i": 1}, "DMA-11")
    assert not left_in_state({"text": "DMA-11"}, {"records": []}, "DMA-11")


def test_a_picker_of_one_samples_rows_did_not_drop_anothers() -> None:
    """A failure naming a sample the picker was not asked about does not say the picker lost it."""
    run = Run(
        "r",
        "lab",
        outcome="failure",
        steps=(
            _t("r", "read_rows", "tool", 1, input={"method": "FA"}, output={"rows": ROWS}),
            _t(
                "p",
                "normalize",
                "other",
                3,
                input={"sample": "S-1", "rows": ROWS},
                output={"sample": "S-1", "Au": 3.5},
                deps=(D("r"),),
            ),
            _t(
                "u",
                "upload",
                "tool",
                5,
                input={"results": [{"sample": "S-1", "Au": 3.5}]},
                status="error",
                error=ErrorInfo("Rejected", "S-2 has no reported value"),
                deps=(D("p"),),
            ),
        ),
    )
    failures = [Failure("u", "step-error", "Rejected: S-2 has no reported value", "exception:Rejected")]
    [p] = [c for c in localize(run, failures=failures).ranked_all if c.step_id == "p"]
    assert "lineage:dropped" not in p.signals


def test_the_step_that_picked_the_items_a_failure_names_joins_its_thin_slice() -> None:
    """A step that picked from a list it was given the valves a failure names made the choice it is about."""
    asset = {"asset": "MN-1", "valves": [{"valve": f"V-{i}", "chainage_m": 200 * i} for i in range(1, 4)]}
    run = Run(
        "r",
        "leaks",
        outcome="failure",
        steps=(
            _t("a", "get_asset", "tool", 1, input={"asset": "MN-1"}, output=asset),
            _t("s", "select_valves", "other", 3, input=asset, output=["V-2", "V-3"], deps=(D("a"),)),
            _t(
                "m",
                "simulate",
                "tool",
                5,
                input={"asset": "MN-1", "valves": ["V-2", "V-3"]},
                status="error",
                error=ErrorInfo("Rejected", "closing V-2 and V-3 does not bound the leak"),
                deps=(D("s"),),
            ),
        ),
    )
    failures = [Failure("m", "step-error", "Rejected: closing V-2 and V-3 does not bound the leak", "x")]
    [s] = [c for c in localize(run, failures=failures).ranked_all if c.step_id == "s"]
    assert any("picked V-2, V-3 from a list it was given" in r for r in s.reasons)


def _belt_run(message: str) -> list[str]:
    """The reasons given for a model that picked a belt from the list a tool showed it, the order then failing."""
    parts = [{"part": "BELT-A-40", "profile": "narrow"}, {"part": "BELT-B-55", "profile": "wide"}]
    ask = {"role": "user", "content": "order a belt for machine M-3"}
    shown = {"role": "tool", "content": json.dumps(parts)}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "name": "order", "arguments": {"part": "BELT-A-40"}}]}
    run = Run(
        "r",
        "workshop",
        outcome="failure",
        steps=(
            _t("t", "list_belts", "tool", 1, input={"machine": "M-3"}, output=parts),
            _t("m", "chat", "llm", 3, input={"messages": [ask, shown]}, output=call, deps=(D("t"),)),
            _t(
                "o",
                "order",
                "tool",
                5,
                input={"part": "BELT-A-40"},
                status="error",
                error=ErrorInfo("ValueError", message),
                deps=(D("m"),),
            ),
        ),
    )
    failures = [Failure("o", "step-error", f"ValueError: {message}", "x")]
    [m] = [c for c in localize(run, failures=failures).ranked_all if c.step_id == "m"]
    return list(m.reasons)


def test_a_model_that_passed_over_what_the_failure_asks_for_made_the_choice_it_is_about() -> None:
    """A model that picked a record from a list it was shown, when the failure names a value of a record it
    passed over (a wide belt), joins the failure's thin slice as the picker."""
    reasons = _belt_run("BELT-A-40 does not fit M-3: it needs a wide belt")
    assert any("picked BELT-A-40 from a list it was given" in r for r in reasons)


def test_a_model_picking_from_a_list_the_failure_says_nothing_else_of_is_not_marked() -> None:
    """A model's pick is not marked when the failure names only the picked item: it may have chosen well
    from a wrong list (a stale roster), which the step that listed it is to answer for."""
    reasons = _belt_run("BELT-A-40 does not fit M-3")
    assert not any("picked BELT-A-40" in r for r in reasons)


def test_a_node_that_only_returned_its_childs_result_lost_nothing_it_was_given() -> None:
    """A graph node recorded with the whole state as input, whose child was handed none of a value and whose
    answer is the child's result, is not read as having dropped that value."""
    parts = [{"part": "P-100A", "size": "small"}, {"part": "P-200B", "size": "large"}]
    gaskets = [{"gasket": "G-1"}, {"gasket": "G-2"}]
    state = {"messages": [{"role": "user", "content": "fit a part"}, {"role": "tool", "content": json.dumps(parts)}]}
    answer = {"messages": [{"role": "tool", "content": json.dumps(gaskets), "tool_call_id": "c2"}]}
    run = Run(
        "r",
        "fitter",
        outcome="failure",
        steps=(
            _t("t", "list_parts", "tool", 1, input={"category": "parts"}, output=parts),
            _t("n", "tools", "agent", 3, input=state, output=answer, deps=(D("t"),)),
            _t("k", "list_gaskets", "tool", 4, input={"category": "gaskets"}, output=gaskets, parent_id="n"),
            _t(
                "f",
                "fit",
                "tool",
                7,
                input={"part": "P-100A", "gaskets": answer},
                status="error",
                error=ErrorInfo("ValueError", "P-100A does not fit"),
                deps=(D("n"), D("t")),
            ),
        ),
    )
    failures = [Failure("f", "step-error", "ValueError: P-100A does not fit", "x")]
    [n] = [c for c in localize(run, failures=failures).ranked_all if c.step_id == "n"]
    assert "lineage:dropped" not in n.signals


def test_a_model_picking_from_a_roster_after_its_request_passed_over_the_part_the_failure_names() -> None:
    """A prompt that lays out a request and then, after a label, the list to choose from is read as a list of
    records; a record's compound value (a language pair ``en>pt-PT``) offers its parts, so a failure naming
    ``pt-PT`` names what a record the model passed over held and the one it picked did not."""
    from trajdebug.analysis._selection import passed_over

    roster = [{"id": "T4", "pairs": "en>pt-BR"}, {"id": "T9", "pairs": "en>pt-PT"}]
    prompt = 'Pick one.\nJOB:{"target": "pt-PT"}\nROSTER:' + json.dumps(roster)
    [sel] = selections({"messages": [{"role": "user", "content": prompt}]}, '{"translator": "T4"}')
    assert sel.picked == frozenset({"t4"})
    assert passed_over(sel, "translator T4 cannot deliver into pt-PT")
    assert not passed_over(sel, "translator T4 cannot deliver into en")
