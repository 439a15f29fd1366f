"""The ranking's features: every ranked step as a candidate, with the values the ranking used, read-only."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
from benchmarks.baselines import synthetic_run
from tests.test_localize import sql_agent_run

from trajdebug.analysis import analyze
from trajdebug.analysis._detect import detect
from trajdebug.analysis._localize import localize
from trajdebug.analysis._ranking import FrozenMap
from trajdebug.core.model import ErrorInfo, Run, Step


def test_every_ranked_step_is_a_candidate_with_features(tmp_path: Path) -> None:
    """`ranked_all` holds one candidate per ranked step, in ranking order, its head the top candidates."""
    loc = localize(sql_agent_run(tmp_path), top=2)
    assert [c.step_id for c in loc.ranked_all] == list(loc.ranking)
    assert len(loc.ranked_all) > len(loc.candidates) == 2
    assert loc.ranked_all[:2] == tuple(loc.candidates)
    assert all(c.features for c in loc.ranked_all)


def test_features_say_kind_position_depth_distance_and_fan(tmp_path: Path) -> None:
    """A step's features name its kind, where it sits in the run and on the slice, and its edges."""
    run = sql_agent_run(tmp_path)
    loc = localize(run)
    by_id = {c.step_id: c.features for c in loc.ranked_all}
    steps = run.step_map()
    ids = [s.step_id for s in run.steps]
    for sid, f in by_id.items():
        assert f[f"kind:{steps[sid].kind}"] == 1.0
        assert f["position"] == ids.index(sid) / len(ids)
        assert f["fan_in"] >= 0 and f["fan_out"] >= 0
    failing = loc.failures[0].step_id
    assert by_id[failing]["depth"] == 0 and by_id[failing]["distance"] == 0
    assert by_id["w"]["depth"] > 0 and by_id["w"]["distance"] > 0


def test_features_carry_the_evidence_and_the_score(tmp_path: Path) -> None:
    """The top candidate's features hold each signal behind it and the score it was ranked by."""
    top = localize(sql_agent_run(tmp_path)).candidates[0]
    for signal in top.signals:
        if signal != "lineage:origin":
            assert top.features[f"evidence:{signal}"] > 0
    assert top.features["score"] == pytest.approx(top.score, abs=1e-6)
    assert top.features["root"] == float(top.root)
    assert 0 < top.features["suspicion"] <= 1


def test_features_cannot_be_changed() -> None:
    """A candidate's features are read-only, and survive pickling (analyses cross process pools)."""
    run = synthetic_run(60, seed=3)
    loc = localize(run, failures=detect(run))
    f = loc.ranked_all[-1].features
    assert isinstance(f, FrozenMap)
    with pytest.raises(TypeError):
        f["score"] = 1.0  # type: ignore[index]
    assert pickle.loads(pickle.dumps(f)) == f and hash(f) == hash(FrozenMap(dict(f)))


def test_analysis_keeps_every_ranked_step_with_the_ids_of_its_own_run(tmp_path: Path) -> None:
    """`analyze` keeps `ranked_all` beside `ranking`, the same steps in the same order."""
    a = analyze(sql_agent_run(tmp_path))
    assert [c.step_id for c in a.localization.ranked_all] == list(a.localization.ranking)


def test_the_runs_input_is_taken_as_given() -> None:
    """The run's input step ranks below what the agent did with it: the same step recorded as a tool would score higher."""
    from tests.builders import step

    from trajdebug.core.model import ErrorInfo, Run

    def run_of(kind: str) -> Run:
        return Run(
            "r",
            "orders",
            outcome="failure",
            steps=(
                step("i", "receive_order", kind, 1, None, {"qty": 12, "sku": "S-4"}),
                step("p", "plan", "other", 3, {"qty": 12}, {"qty": 12, "packs": 2}, "i"),
                step("o", "order", "tool", 5, {"qty": 12, "packs": 2}, None, "p", status="error",
                     error=ErrorInfo("Rejected", "qty 12 exceeds the stock of 10")),
            ),
        )

    given = {c.step_id: c.score for c in localize(run_of("input")).ranked_all}
    tool = {c.step_id: c.score for c in localize(run_of("tool")).ranked_all}
    assert given["i"] < 0.5 * tool["i"]


def test_a_conversations_user_turns_keep_the_prior_of_any_step() -> None:
    """In a run with several input steps (a user's turns), a turn is an act that can be wrong: it ranks as a tool would."""
    from tests.builders import step

    from trajdebug.core.model import ErrorInfo, Run

    def run_of(kind: str) -> Run:
        return Run(
            "r",
            "support",
            outcome="failure",
            steps=(
                step("u0", "user", "input", 1, None, {"text": "I want to return an order"}),
                step("i", "user", kind, 2, None, {"order": "W-12"}),
                step("p", "agent_turn", "other", 3, {"order": "W-12"}, {"order": "W-12", "action": "return"}, "i"),
                step("o", "return_order", "tool", 5, {"order": "W-12"}, None, "p", status="error",
                     error=ErrorInfo("Rejected", "order W-12 was never delivered")),
            ),
        )

    turn = {c.step_id: c.score for c in localize(run_of("input")).ranked_all}
    tool = {c.step_id: c.score for c in localize(run_of("tool")).ranked_all}
    assert turn["i"] >= 0.9 * tool["i"]


def test_a_steps_path_to_the_failure_continues_as_the_next_steps_path() -> None:
    """On a chain, each ranked step's path is itself followed by the path of the step it leads to, ending at the failure."""
    from tests.builders import step

    from trajdebug.core.model import ErrorInfo, Run

    ids = [f"s{i}" for i in range(8)]
    steps = [step(ids[0], "fetch", "tool", 1, None, {"qty": 12, "sku": "S-4"})]
    for i in range(1, 7):
        steps.append(step(ids[i], f"stage{i}", "other", 1 + 2 * i, {"qty": 12 + i}, {"qty": 13 + i}, ids[i - 1]))
    steps.append(step(ids[7], "order", "tool", 20, {"qty": 19}, None, ids[6], status="error",
                      error=ErrorInfo("Rejected", "qty 19 exceeds the stock of 10")))
    loc = localize(Run("r", "chain", outcome="failure", steps=tuple(steps)))
    paths = {c.step_id: c.path for c in loc.ranked_all}
    long = [p for p in paths.values() if len(p) > 2]
    assert long, "the chain gives paths of several hops"
    for p in long:
        assert p[-1] == ids[7]
        assert paths.get(p[1], p[1:]) == p[1:]


def _sub_agent_run(first: str) -> Run:
    """A tool running a sub-agent (search, then a model answering for it), whose answer a later filing refuses.

    ``first``: the kind of the step inside the sub-agent before its answering model (``llm`` or ``tool``), which
    picked the record it answered with."""
    from tests.builders import step

    hits = [{"code": "9005.80", "text": "Telescope mount", "unit": "pcs"}, {"code": "9005.90", "text": "Mount parts", "unit": "crate"}]
    answer = {"sku": "TM-330", "code": "9005.90", "unit": "crate"}
    earlier = [
        step(f"w{i}", "classify", "tool", 10 * i, {"input": f"SKU-{i}: item {i}"}, {"sku": f"SKU-{i}", "code": f"90{i}0.10", "unit": "pcs"})
        for i in (1, 2, 3)
    ]
    pick = {"picked": hits[1]} if first == "llm" else hits
    return Run(
        "r",
        "purchasing",
        outcome="failure",
        steps=(
            *earlier,
            step("w", "classify", "tool", 100, {"input": "TM-330: Telescope mount, 2.4 m"}, answer),
            step("s", "search", first, 101, {"query": "Telescope mount, 2.4 m"}, pick, parent_id="w"),
            step("a", "model", "llm", 102, {"messages": [{"role": "tool", "content": str(pick)}]},
                 {"role": "assistant", "content": '{"sku": "TM-330", "code": "9005.90", "unit": "crate"}'}, "s", parent_id="w"),
            step("f", "file_entry", "tool", 200, {"lines": [answer]}, None, "w", status="error",
                 error=ErrorInfo("Rejected", "line TM-330 code 9005.90 is in crate but the order is in pcs")),
        ),
    )


def test_a_finding_about_a_sub_agents_answer_goes_to_the_model_that_wrote_it() -> None:
    """The answer a tool running a sub-agent returned is its last model call's: a finding about it is that call's."""
    loc = localize(_sub_agent_run("tool"))
    cands = {c.step_id: c for c in loc.ranked_all}
    moved = [k for k in cands["a"].features if k.startswith("evidence:sibling:")]
    assert moved and not [k for k in cands["w"].features if k.startswith("evidence:sibling:")]
    assert loc.ranking[0] == "a"


def test_a_model_inside_that_erred_first_keeps_the_finding_on_the_wrapper() -> None:
    """When a model call inside the sub-agent, before its last one, is faulty on its own, the last one only restated it."""
    loc = localize(_sub_agent_run("llm"))
    cands = {c.step_id: c for c in loc.ranked_all}
    assert not [k for k in cands["a"].features if k.startswith("evidence:sibling:")]


def _relayed_run(nested: bool) -> Run:
    """A tool running a sub-agent whose model's answer lacks what the request and the tool's other calls hold;
    ``nested``: the tool hands the work to a second tool that runs the sub-agent, both returning the answer."""
    from tests.builders import step

    def calls(sid: str, at: int, ask: str, out: object) -> list[Step]:
        inner = f"{sid}i" if nested else sid
        own = [step(inner, "fit_frame", "tool", at, {"input": ask}, out, parent_id=sid)] if nested else []
        return [
            step(sid, "pick_frame", "tool", at, {"input": ask}, out),
            *own,
            step(f"{sid}m", "model", "llm", at + 1, {"messages": [{"role": "user", "content": ask}]},
                 {"role": "assistant", "content": json.dumps(out)}, parent_id=inner),
        ]

    earlier = [
        s
        for i in (1, 2, 3)
        for s in calls(f"w{i}", 10 * i, f"BK-{i}: bike {i}", {"ref": f"BK-{i}", "frame": f"F-1{i}", "size": "m"})
    ]
    answer = {"ref": "BK-31", "frame": "F-77"}
    return Run(
        "r",
        "bikes",
        outcome="failure",
        steps=(
            *earlier,
            *calls("w", 100, "BK-31: road bike, 54 cm", answer),
            step("f", "order_frame", "tool", 200, {"lines": [answer]}, None, "w", status="error",
                 error=ErrorInfo("Rejected", "line BK-31 frame F-77 has no size")),
        ),
    )


def test_two_wrappers_of_one_answer_hand_a_signal_down_once() -> None:
    """Two wrappers passing on one model answer give it each signal once: no stronger than one wrapper's."""
    one = {c.step_id: c for c in localize(_relayed_run(False)).ranked_all}["wm"].features
    two = {c.step_id: c for c in localize(_relayed_run(True)).ranked_all}["wm"].features
    moved = {k: v for k, v in two.items() if k.startswith("evidence:")}
    assert moved, "the answer's findings reach the model that wrote it"
    assert moved == {k: v for k, v in one.items() if k.startswith("evidence:")}


def _bindery_run(calls: int) -> Run:
    """A bookbindery: each book's binding is looked up by the material asked ('full leather'), which the
    catalogue answers as its category ('leather'), then a pricer that drops a book and the order check."""
    from tests.builders import step

    books = [f"BK-{i}" for i in range(1, calls + 1)]
    steps = [step("req", "read_order", "input", 0, None, {"books": books, "material": "full leather"})]
    for i, b in enumerate(books):
        steps.append(step(f"lk{i}", "lookup_binding", "tool", 2 + 2 * i, {"book": b, "material": "full leather"},
                          {"book": b, "material": "leather", "sewing": f"SW-{40 + i}"}, "req"))
    priced = {"lines": [{"book": b, "eur": 80.0} for b in books[:-1]], "total": 80.0 * (calls - 1)}
    steps.append(step("price", "price_order", "other", 20, {"books": books}, priced, *[f"lk{i}" for i in range(calls)]))
    steps.append(step("sub", "submit_order", "tool", 22, priced, None, "price", status="error",
                      error=ErrorInfo("ValueError", f"order rejected: {calls} books ordered, {calls - 1} priced")))
    return Run("r", "bindery", outcome="failure", steps=tuple(steps))


def test_a_lineage_finding_every_call_of_a_step_shares_is_the_steps_rule_and_weighs_less() -> None:
    """A lookup answering 'leather' for the 'full leather' it was given in each of its three calls has the same
    finding on every call: it keeps a share of it, and none of its calls outweighs the pricer that dropped a
    book; with one call, the finding keeps its whole weight."""
    from trajdebug.analysis._evidence import Evidence
    from trajdebug.analysis._weights import DEFAULT_WEIGHTS, shared_findings

    run = _bindery_run(3)
    found = {f"lk{i}": [Evidence(f"lk{i}", 0.45, "was given material='full leather' but its output says "
                                 "material='leather'", "lineage:conflict")] for i in range(3)}
    found["price"] = [Evidence("price", 0.4, "dropped BK-3", "lineage:dropped")]
    damped = shared_findings(found, run, DEFAULT_WEIGHTS["shared"])
    assert [round(damped[f"lk{i}"][0].suspicion, 3) for i in range(3)] == [0.135] * 3
    assert damped["price"][0].suspicion == 0.4
    one = _bindery_run(1)
    alone = {"lk0": found["lk0"]}
    assert shared_findings(alone, one, DEFAULT_WEIGHTS["shared"])["lk0"][0].suspicion == 0.45


def test_only_the_calls_with_a_finding_of_their_own_have_their_input_written_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Comparing calls writes out the input of each call that has a finding about its own transformation, and of
    the other calls of its step, never of a step none of whose calls has one (an input is a whole conversation):
    with findings on the pricer only, no input is written and nothing is damped."""
    from trajdebug.analysis import _weights
    from trajdebug.analysis._evidence import Evidence

    written: list[object] = []
    key = _weights._input_key
    monkeypatch.setattr(_weights, "_input_key", lambda v: written.append(v) or key(v))
    run = _bindery_run(3)
    quiet = {"price": [Evidence("price", 0.4, "dropped BK-3", "lineage:dropped")], "lk1": []}
    assert _weights.shared_findings(quiet, run, _weights.DEFAULT_WEIGHTS["shared"]) == quiet
    assert written == []
    found = {f"lk{i}": [Evidence(f"lk{i}", 0.45, "was given material='full leather' but its output says "
                                 "material='leather'", "lineage:conflict")] for i in range(3)}
    damped = _weights.shared_findings(found, run, _weights.DEFAULT_WEIGHTS["shared"])
    assert [round(damped[f"lk{i}"][0].suspicion, 3) for i in range(3)] == [0.135] * 3
    assert len(written) == 6  # the three lookups' inputs, for the rule and for the repeats


def test_a_step_whose_every_call_answers_a_category_is_no_structural_root() -> None:
    """Ranked, none of the three lookups that each map 'full leather' to 'leather' is a structural root."""
    a = analyze(_bindery_run(3), top=50)
    roots = {c.step_id for c in a.localization.ranked_all if c.root}
    assert not roots & {"lk0", "lk1", "lk2"}


def test_a_step_whose_shared_finding_was_damped_says_so_in_its_features() -> None:
    """The learned ranker reads the damping as the `shared` feature: 1 on each call of the lookup, 0 elsewhere."""
    a = analyze(_bindery_run(3), top=50)
    shared = {c.step_id: c.features.get("shared") for c in a.localization.ranked_all}
    assert shared["lk0"] == shared["lk2"] == 1.0
    assert shared["price"] == 0.0


def test_a_finding_about_the_failure_that_every_call_repeats_keeps_its_weight() -> None:
    """A finding about the failure ("was given 3, which the failure expects") reads the same on every call because
    the failure is one: it is no rule of the step, and keeps its weight."""
    from trajdebug.analysis._evidence import Evidence
    from trajdebug.analysis._weights import DEFAULT_WEIGHTS, shared_findings

    found = {f"lk{i}": [Evidence(f"lk{i}", 0.45, "was given 'BK-3', which the failure expects, and did not pass it on",
                                 "lineage:dropped")] for i in range(3)}
    damped = shared_findings(found, _bindery_run(3), DEFAULT_WEIGHTS["shared"])
    assert [damped[f"lk{i}"][0].suspicion for i in range(3)] == [0.45] * 3


def _glazing(message: str, frames: list[str] | None = None, odd: dict[str, str] | None = None) -> Run:
    """A glazier: each frame's glass is looked up by the grade asked ('float clear'), which the catalogue answers as
    'clear' (one call per frame in ``frames``; ``odd``: one more frame, given and answered as written), a cutter
    plans the panes and the supplier refuses the order with ``message``."""
    from tests.builders import step

    frames = frames or ["FR-1", "FR-2", "FR-3"]
    calls = [(f, "float clear", "clear") for f in frames] + ([(odd["frame"], odd["given"], odd["answered"])] if odd else [])
    steps = [step("req", "read_order", "input", 0, None, {"frames": sorted(set(frames)), "glass": "float clear"})]
    for i, (f, given, answered) in enumerate(calls):
        steps.append(step(f"lk{i}", "lookup_glass", "tool", 2 + 2 * i, {"frame": f, "glass": given},
                          {"frame": f, "glass": answered, "edge": f"ED-{50 + i}"}, "req"))
    panes = {"panes": [{"frame": f, "glass": a, "m2": 1.5} for f, _, a in calls]}
    steps.append(step("cut", "plan_panes", "other", 30, {"frames": frames}, panes, *[f"lk{i}" for i in range(len(calls))]))
    steps.append(step("sub", "order_glass", "tool", 32, panes, None, "cut", status="error",
                      error=ErrorInfo("ValueError", message)))
    return Run("r", "glazing", outcome="failure", steps=tuple(steps))


def _shared(run: Run) -> dict[str, float | None]:
    return {c.step_id: c.features.get("shared") for c in analyze(run, top=50).localization.ranked_all}


def test_a_shared_finding_whose_value_or_field_the_failure_names_keeps_its_weight() -> None:
    """A lookup that answers 'clear' for every 'float clear' it is given shares its finding on every call, but a
    failure refusing 'clear' (or saying the glass does not match the order) is about that very change: no call
    is damped, and the lookup ranks above the cutter that passed 'clear' on.  A failure that writes only the
    given 'float clear' (or speaks of neither) does not speak of the change: the calls share the step's rule."""
    for message in ("order refused: glass 'clear' is not the ordered grade", "order refused: glass does not match the order"):
        a = analyze(_glazing(message), top=50)
        shared = {c.step_id: c.features.get("shared") for c in a.localization.ranked_all}
        assert shared["lk0"] == shared["lk1"] == shared["lk2"] == 0.0, message
        assert a.localization.ranked_all[0].step_id.startswith("lk"), message
    assert _shared(_glazing("order refused: 3 frames ordered, 2 panes cut"))["lk0"] == 1.0
    assert _shared(_glazing("order refused: float clear is out of stock"))["lk0"] == 1.0


def test_a_finding_repeated_on_the_same_input_is_one_slip_and_no_rule_of_the_step() -> None:
    """Two calls given the same frame and grade share their slip only because they were asked the same thing:
    with a third call given another grade and answering it as written, that is no rule of the step, and the
    first call keeps its finding whole; the repeat says nothing new and keeps a share of it."""
    run = _glazing("order refused: 2 frames ordered, 1 pane cut", frames=["FR-1", "FR-1"],
                   odd={"frame": "FR-2", "given": "wired", "answered": "wired"})
    shared = _shared(run)
    assert shared["lk0"] == 0.0 and shared["lk1"] == 1.0


def test_all_inputs_but_one_count_only_when_the_odd_one_was_answered_otherwise() -> None:
    """Three frames answered 'clear' for 'float clear' and a fourth given 'wired' answered as written: the odd
    frame shows no other answer, so the three keep their findings; when the fourth answers 'laminated' for the
    'float clear' it was given, it stands out and the three share the step's rule (damped)."""
    kept = _glazing("order refused: 4 frames ordered, 3 panes cut", odd={"frame": "FR-4", "given": "wired", "answered": "wired"})
    assert _shared(kept)["lk0"] == 0.0
    odd = _glazing("order refused: 4 frames ordered, 3 panes cut",
                   odd={"frame": "FR-4", "given": "float clear", "answered": "laminated"})
    shared = _shared(odd)
    assert shared["lk0"] == shared["lk2"] == 1.0 and shared["lk3"] == 0.0


def test_frozen_map_views_and_lookups_are_its_dicts() -> None:
    """A `FrozenMap`'s keys, values, items, ``get`` and ``in`` answer as its dict does, in its order, and it still
    equals a dict with the same items."""
    f = FrozenMap({"b": 2.0, "a": 1.0})
    assert list(f.items()) == [("b", 2.0), ("a", 1.0)] and list(f.keys()) == ["b", "a"] and list(f.values()) == [2.0, 1.0]
    assert f.get("a") == 1.0 and f.get("z") is None and f.get("z", 0.0) == 0.0
    assert "a" in f and "z" not in f and f == {"b": 2.0, "a": 1.0} and f != {"a": 1.0}
