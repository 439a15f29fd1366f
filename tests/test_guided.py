"""The guided search: Shapiro's algorithmic debugging over the failure's slice, proved on random DAGs."""

from __future__ import annotations

import dataclasses
import random
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajdebug.analysis import Analysis, Guided, GuidedSearch, guided_search
from trajdebug.analysis._detect import Failure
from trajdebug.analysis._localize import Candidate, Localization, SearchStats
from trajdebug.core.model import Answer, Dependency, Run, Step


STRATS = ("prior", "top-down", "linear")


def _world(seed: int, n: int) -> tuple[Analysis, str, set[str]]:
    """A random DAG run ending in a failure, a planted root, and the truthful set of wrong steps.

    Wrong steps: the root, then steps downstream of it that consumed a wrong
    input (some masked: a wrong input does not always give a wrong output),
    with one fully wrong path forced from the root to the failure.
    """
    rng = random.Random(seed)
    ids = [f"s{i:02d}" for i in range(n)]
    parents: dict[str, list[str]] = {ids[0]: []}
    for i in range(1, n):
        k = rng.randint(1, min(3, i))
        parents[ids[i]] = sorted(rng.sample(ids[:i], k))
    fail = ids[-1]
    # the failure's backward slice, to plant the root inside it
    inside = {fail}
    stack = [fail]
    while stack:
        for p in parents[stack.pop()]:
            if p not in inside:
                inside.add(p)
                stack.append(p)
    root = rng.choice(sorted(inside))
    # a forced path root -> failure
    forward: dict[str, list[str]] = {s: [] for s in ids}
    for c, ps in parents.items():
        for p in ps:
            forward[p].append(c)
    path = _any_path(root, fail, forward)
    wrong = {root}
    for s in ids:
        if s == root:
            continue
        if (s in path or rng.random() < 0.7) and any(p in wrong for p in parents[s]):
            wrong.add(s)
    steps = tuple(
        Step(s, f"step{s[1:]}", "other", output=i, deps=tuple(Dependency(p) for p in parents[s]), start_ns=2 * i,
             end_ns=2 * i + 1)
        for i, s in enumerate(ids)
    )
    run = Run("run1", "random", 0, 2 * n, "failure", "wrong", steps=steps)
    cands = [Candidate(s, rng.random(), (), ()) for s in rng.sample(sorted(inside), min(5, len(inside)))]
    cands.sort(key=lambda c: -c.score)
    loc = Localization(cands, SearchStats(n, n, 0.0), failures=(Failure(fail, "outcome", "wrong", "x", "final"),),
                       ranking=tuple(c.step_id for c in cands))
    return Analysis(run, loc.failures, loc), root, wrong


def _any_path(a: str, b: str, forward: dict[str, list[str]]) -> list[str]:
    prev: dict[str, str | None] = {a: None}
    todo = [a]
    while todo:
        x = todo.pop()
        for c in forward[x]:
            if c not in prev:
                prev[c] = x
                todo.append(c)
    out: list[str] = []
    at: str | None = b
    while at is not None:
        out.append(at)
        at = prev[at]
    return out


def _truthful(wrong: set[str]):  # type: ignore[no-untyped-def]
    def oracle(step: Step, run: Run) -> bool:
        return step.step_id not in wrong

    return oracle


worlds = st.tuples(st.integers(0, 10**6), st.integers(2, 40))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds, st.sampled_from(STRATS))
def test_a_truthful_oracle_finds_the_planted_root_with_certainty(w: tuple[int, int], strategy: str) -> None:
    analysis, root, wrong = _world(*w)
    g = guided_search(analysis, _truthful(wrong), strategy=strategy)
    assert g.root == root
    assert g.certain
    assert g.path[0] == root and g.path[-1] == analysis.failures[0].step_id


@settings(max_examples=60, deadline=None)
@given(worlds, st.sampled_from(STRATS))
def test_correct_clears_what_reaches_the_failure_only_through_it_and_wrong_moves_into_its_ancestors(
    w: tuple[int, int], strategy: str
) -> None:
    analysis, root, wrong = _world(*w)
    search = GuidedSearch(analysis, strategy=strategy, audit=0)  # the rules over the recorded graph
    oracle = _truthful(wrong)
    steps = analysis.run.step_map()
    while (sid := search.next_question()) is not None:
        cand_before = {s for s, _ in search.result().candidates}
        assert sid in cand_before, "only a remaining candidate is asked"
        ok = oracle(steps[sid], analysis.run)
        search.answer(Answer(sid, ok, "check:truth"))
        cand_after = {s for s, _ in search.result().candidates}
        assert root in cand_after, "exact pruning never drops the true root"
        if ok:
            assert sid not in cand_after
        else:
            ancestors = search.graph.backward_slice([sid])
            assert cand_after <= ancestors


@settings(max_examples=60, deadline=None)
@given(worlds, st.integers(0, 4), st.sampled_from(STRATS))
def test_max_questions_is_respected_and_the_root_stays_among_the_ranked_candidates(
    w: tuple[int, int], cap: int, strategy: str
) -> None:
    analysis, root, wrong = _world(*w)
    g = guided_search(analysis, _truthful(wrong), strategy=strategy, max_questions=cap)
    assert g.asked <= cap
    assert root in {s for s, _ in g.candidates}
    probs = [p for _, p in g.candidates]
    assert probs == sorted(probs, reverse=True)
    if g.certain:
        assert g.root == root


@settings(max_examples=80, deadline=None)
@given(worlds, st.integers(0, 10**6), st.booleans())
def test_a_noisy_oracle_ends_with_a_root_its_answers_prove_or_a_conflict_reported(
    w: tuple[int, int], noise_seed: int, recheck: bool
) -> None:
    analysis, _root, wrong = _world(*w)
    rng = random.Random(noise_seed)

    def noisy(step: Step, run: Run) -> bool:
        truth = step.step_id not in wrong
        return (not truth) if rng.random() < 0.25 else truth

    search = GuidedSearch(analysis, recheck=recheck)
    while (sid := search.next_question()) is not None:
        search.answer(Answer(sid, noisy(search.graph.steps[sid], analysis.run), "model:noisy"))
    g = search.result()
    if g.certain:
        i = search.index[g.root]  # type: ignore[index]
        assert search.verdict(i) is False
        assert all(search.verdict(p) is True for p in search.parents[i])
        assert not g.conflict
    else:
        assert g.conflict or g.candidates
        if g.conflict:
            assert len(g.conflict) == 2 and g.root is None


def _chain() -> tuple[Analysis, set[str]]:
    steps = tuple(
        Step(f"c{i}", f"c{i}", "other", output=i, deps=(Dependency(f"c{i - 1}"),) if i else (), start_ns=i, end_ns=i)
        for i in range(6)
    )
    run = Run("run1", "chain", 0, 9, "failure", steps=steps)
    loc = Localization([], SearchStats(6, 6, 0.0), failures=(Failure("c5", "outcome", "x", "x", "final"),))
    return Analysis(run, loc.failures, loc), {"c2", "c3", "c4", "c5"}


def test_the_answer_of_a_more_trusted_source_overrides_a_less_trusted_one() -> None:
    analysis, _ = _chain()
    given_ = [Answer("c2", True, "model:m"), Answer("c2", False, "person")]
    search = GuidedSearch(analysis, given_)
    assert search.verdict(search.index["c2"]) is False


def test_answers_given_beforehand_are_not_asked_again() -> None:
    analysis, wrong = _chain()
    asked: list[str] = []

    def oracle(step: Step, run: Run) -> bool:
        asked.append(step.step_id)
        return step.step_id not in wrong

    g = guided_search(analysis, oracle, answers=[Answer("c1", True, "person"), Answer("c2", False, "person")])
    assert g.root == "c2" and g.certain
    assert asked == []


def test_an_oracle_that_raises_hangs_or_returns_a_string_counts_as_unknown_and_is_reported() -> None:
    analysis, _ = _chain()
    release = threading.Event()

    def boom(step: Step, run: Run) -> bool:
        raise RuntimeError("no")

    def hang(step: Step, run: Run) -> bool:
        release.wait(5)
        return True

    def word(step: Step, run: Run) -> str:
        return "yes"

    for oracle, said in ((boom, "raised"), (word, "returned str"), (hang, "did not answer")):
        t0 = time.perf_counter()
        g = guided_search(analysis, oracle, timeout=0.2)  # type: ignore[arg-type]
        assert any(said in p for p in g.problems), g.problems
        assert not g.certain
        assert all(a.correct is None for a in g.questions)
        if oracle is hang:
            assert time.perf_counter() - t0 < 2.0, "a hung oracle is given up on once, not per question"
    release.set()


def test_a_check_answers_before_a_model_when_both_are_given() -> None:
    analysis, wrong = _chain()
    calls: list[str] = []

    class Model:
        by = "model:fake"

        def __call__(self, step: Step, run: Run) -> bool:
            calls.append("model")
            return True

    class Check:
        by = "check:truth"

        def __call__(self, step: Step, run: Run) -> bool:
            calls.append("check")
            return step.step_id not in wrong

    g = guided_search(analysis, [Model(), Check()])
    assert g.root == "c2" and g.certain
    assert set(calls) == {"check"}
    assert {a.by for a in g.questions} == {"check:truth"}


def test_an_unknown_strategy_is_refused() -> None:
    analysis, _ = _chain()
    with pytest.raises(ValueError, match="strategy"):
        GuidedSearch(analysis, strategy="random")


def test_to_dict_names_the_root_the_answers_and_the_path() -> None:
    analysis, wrong = _chain()
    d = guided_search(analysis, _truthful(wrong)).to_dict()
    assert d["root"] == "c2" and d["certain"] is True
    assert d["path"] == ["c2", "c3", "c4", "c5"]
    assert {q["answer"] for q in d["questions"]} <= {"correct", "wrong"}
    assert {"step", "name", "answer", "by", "reason"} <= set(d["questions"][0])


def test_two_wrong_steps_no_single_root_explains_are_asked_again_then_reported_as_a_conflict() -> None:
    steps = (
        Step("a", "a", output=1, start_ns=1, end_ns=2),
        Step("b", "b", output=2, start_ns=3, end_ns=4),
        Step("c", "c", output=3, deps=(Dependency("a"), Dependency("b")), start_ns=5, end_ns=6),
    )
    run = Run("run1", "fork", 0, 9, "failure", steps=steps)
    loc = Localization([], SearchStats(3, 3, 0.0), failures=(Failure("c", "outcome", "x", "x", "final"),))
    analysis = Analysis(run, loc.failures, loc)
    asked: list[str] = []

    def stubborn(step: Step, run: Run) -> bool:
        asked.append(step.step_id)
        return False

    given_ = [Answer("a", False, "model:m"), Answer("b", False, "model:m")]
    g = guided_search(analysis, stubborn, answers=given_)
    assert sorted(asked) == ["a", "b"], "each side of the conflict is asked once more"
    assert sorted(g.conflict) == ["a", "b"] and g.root is None and not g.certain

    def relents(step: Step, run: Run) -> bool:
        return step.step_id == "a"  # a second (and third) look finds a correct: the conflict resolves

    g = guided_search(analysis, relents, answers=given_)
    assert not g.conflict


def _unrecorded_input() -> tuple[Analysis, set[str]]:
    """a -> b -> fail inferred from content; c ran before b and fed it, but nothing tied c to b."""
    steps = (
        Step("a", "load", "tool", output=1, start_ns=0, end_ns=1),
        Step("c", "lookup", "tool", output=2, start_ns=2, end_ns=3),
        Step("b", "compute", "other", output=3, deps=(Dependency("a", origin="inferred"),), start_ns=4, end_ns=5),
        Step("f", "submit", "tool", output=4, deps=(Dependency("b", origin="inferred"),), start_ns=6, end_ns=7),
    )
    run = Run("run1", "gap", 0, 8, "failure", "wrong", steps=steps)
    failures = (Failure("f", "outcome", "wrong", "x", "final"),)
    loc = Localization([Candidate("b", 0.9, (), ()), Candidate("a", 0.5, (), ())], SearchStats(4, 4, 0.0),
                       failures=failures, ranking=("b", "a"))
    return Analysis(run, failures, loc), {"c", "b", "f"}


def test_an_audit_finds_a_root_the_recording_did_not_tie_to_the_failure() -> None:
    """A proof over the recorded graph is tested against the earlier steps outside the root's reach: a wrong
    one becomes the proved step's input and the search proves it instead; with no audit the gap stays."""
    analysis, wrong = _unrecorded_input()
    trusting = guided_search(analysis, _truthful(wrong), audit=0)
    assert (trusting.root, trusting.certain) == ("b", True)
    audited = guided_search(analysis, _truthful(wrong), audit=1)
    assert (audited.root, audited.certain) == ("c", True)
    assert audited.path == ("c", "b", "f")
    assert "c" in {q.step_id for q in audited.questions}


def test_a_root_whose_inputs_were_traced_is_not_audited() -> None:
    """Where the recorder traced (or the agent declared) the root's inputs, the proof is not questioned."""
    analysis, wrong = _unrecorded_input()
    steps = tuple(
        dataclasses.replace(s, deps=tuple(dataclasses.replace(d, origin="tracked") for d in s.deps))
        for s in analysis.run.steps
    )
    traced = dataclasses.replace(analysis, run=dataclasses.replace(analysis.run, steps=steps))
    g = guided_search(traced, _truthful(wrong), audit=2)
    assert (g.root, g.certain) == ("b", True) and "c" not in {q.step_id for q in g.questions}


def test_an_audit_that_finds_nothing_keeps_the_proof_and_costs_at_most_its_budget() -> None:
    """When every audited step is correct the recorded proof stands, after no more than ``audit`` extra questions."""
    analysis, _ = _unrecorded_input()
    base = guided_search(analysis, _truthful({"b", "f"}), audit=0)
    audited = guided_search(analysis, _truthful({"b", "f"}), audit=2)
    assert (audited.root, audited.certain) == (base.root, base.certain) == ("b", True)
    assert base.asked < audited.asked <= base.asked + 2


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds, st.sampled_from(STRATS))
def test_on_an_inferred_graph_the_audit_never_moves_a_truthful_search_off_the_root(
    w: tuple[int, int], strategy: str
) -> None:
    """With every edge inferred, each proof is audited; a truthful oracle still ends certain on the planted root."""
    analysis, root, wrong = _world(*w)
    steps = tuple(
        dataclasses.replace(s, deps=tuple(dataclasses.replace(d, origin="inferred") for d in s.deps))
        for s in analysis.run.steps
    )
    inferred = dataclasses.replace(analysis, run=dataclasses.replace(analysis.run, steps=steps))
    g = guided_search(inferred, _truthful(wrong), strategy=strategy, audit=2)
    assert (g.root, g.certain) == (root, True)


def _ranked_chain() -> Analysis:
    """The chain c0..c5 failing at c5, ranked c4, c3, c2, c1 (the ranker's guess), as `analyze` would give it."""
    analysis, _ = _chain()
    order = ["c4", "c3", "c2", "c1"]
    cands = [Candidate(s, 1.0 - i / 10, (f"evidence of {s}",), (s, "c5")) for i, s in enumerate(order)]
    loc = dataclasses.replace(analysis.localization, candidates=cands, ranking=tuple(order), ranked_all=tuple(cands))
    return dataclasses.replace(analysis, localization=loc)


def test_settled_puts_the_proven_root_first_and_the_steps_answered_correct_last() -> None:
    """After answers prove c2 (wrong, its input c1 correct), the ranking opens on c2 and says why; c1,
    answered correct, is last; c4 and c3, which the answers cleared, come between, each saying so."""
    from trajdebug.analysis import settled

    analysis = _ranked_chain()
    answers = [Answer("c3", False, "person"), Answer("c2", False, "person"), Answer("c1", True, "person")]
    g = guided_search(analysis, lambda step, run: None, answers=answers)
    assert g.certain and g.root == "c2"
    after = settled(dataclasses.replace(analysis, guided=g))
    names = [c.step_id for c in after.root_causes]
    assert names == ["c2", "c4", "c3", "c1"]
    assert after.root_causes[0].reasons[0].startswith("proved by 2 answer(s)") and after.root_causes[0].root
    assert after.root_causes[-1].reasons[0] == "answered correct by person" and not after.root_causes[-1].root
    assert after.localization.ranking == ("c2", "c4", "c3", "c1")
    assert after.root_causes[0].reasons[1] == "evidence of c2"  # the ranker's own evidence is kept


def test_the_proved_roots_sentence_counts_the_answers_that_prove_it_as_the_verdict_does() -> None:
    """The proved root's reason counts the answers that prove it (its own and its inputs'), the count the
    verdict gives, not every answer used (nu24, F5: "proven by 6 answer(s)" beside "a person's 1 answer(s)")."""
    from trajdebug.analysis import person_proof, settled

    analysis = _ranked_chain()
    answers = [Answer("c4", False, "person"), Answer("c3", False, "person"), Answer("c2", False, "person"),
               Answer("c1", True, "person")]
    after = settled(dataclasses.replace(analysis, guided=guided_search(analysis, lambda step, run: None, answers=answers)))
    assert len(person_proof(after)) == 2
    assert after.root_causes[0].reasons[0].startswith("proved by 2 answer(s)")


def test_the_path_shown_for_the_likeliest_root_runs_through_no_step_answered_correct() -> None:
    """A step answered correct passed on no wrong value: the path from the likeliest root to the failure goes
    around it when another one does, not along the ranking's path through it (nu24, F5: size_face's path ran
    through the choose_panel just answered right)."""
    deps = {"a": (), "b": ("a",), "c": ("a",), "f": ("b", "c")}
    steps = tuple(
        Step(s, s, "other", output=i, deps=tuple(Dependency(d) for d in ds), start_ns=i, end_ns=i)
        for i, (s, ds) in enumerate(deps.items())
    )
    run = Run("run1", "fork", 0, 9, "failure", steps=steps)
    cands = [Candidate("a", 0.9, ("evidence of a",), ("a", "b", "f")), Candidate("c", 0.5, (), ("c", "f"))]
    loc = Localization(cands, SearchStats(4, 4, 0.0), failures=(Failure("f", "outcome", "x", "x", "final"),),
                       ranking=("a", "c"), ranked_all=tuple(cands))
    g = guided_search(Analysis(run, loc.failures, loc), lambda step, run: None, answers=[Answer("b", True, "person")])
    assert g.root == "a" and not g.certain
    assert g.path == ("a", "c", "f")


def test_settled_leaves_a_ranking_without_answers_as_it_was() -> None:
    """No guided result, or one with no answers, changes nothing."""
    from trajdebug.analysis import settled

    analysis = _ranked_chain()
    assert settled(analysis) is analysis
    g = guided_search(analysis, lambda step, run: None)
    assert [c.step_id for c in settled(dataclasses.replace(analysis, guided=g)).root_causes] == ["c4", "c3", "c2", "c1"]


def test_a_root_proven_below_the_cut_of_top_still_heads_the_list() -> None:
    """The proven root is brought in from the whole ranking when `top` had cut it off (the list keeps its length)."""
    from trajdebug.analysis import settled

    analysis = _ranked_chain()
    loc = analysis.localization
    short = dataclasses.replace(analysis, localization=dataclasses.replace(loc, candidates=loc.candidates[:2]))
    g = guided_search(short, lambda step, run: None, answers=[Answer("c1", False, "person"), Answer("c0", True, "person")])
    assert g.certain and g.root == "c1"
    assert [c.step_id for c in settled(dataclasses.replace(short, guided=g)).root_causes] == ["c1", "c4"]


def test_an_agent_turn_that_recorded_no_output_is_never_asked_and_its_steps_stand_in_for_it() -> None:
    """A sub-agent's turns record no output of their own, so there is nothing to judge in them: the search
    asks about the model and tool steps inside them and proves the turn that made the wrong answer."""
    steps = (
        Step("ag", "scout", "agent", output={"pick": "FLM-106"}, start_ns=0, end_ns=9),
        Step("t1", "turn 1", "agent", parent_id="ag", start_ns=1, end_ns=4),
        Step("d", "details", "tool", parent_id="t1", output={"rating": "PG-13"}, start_ns=2, end_ns=3),
        Step("t2", "turn 2", "agent", parent_id="ag", start_ns=5, end_ns=8),
        Step("p", "pick", "llm", parent_id="t2", output={"pick": "FLM-106"}, deps=(Dependency("d"),),
             start_ns=6, end_ns=7),
        Step("b", "book", "tool", output={"booked": "FLM-106"}, deps=(Dependency("ag"),), start_ns=10, end_ns=11),
        Step("f", "validate", "tool", output="rejected", deps=(Dependency("b"),), start_ns=12, end_ns=13),
    )
    run = Run("run1", "festival", 0, 14, "failure", "rejected", steps=steps)
    failures = (Failure("f", "outcome", "rejected", "x", "final"),)
    loc = Localization([Candidate("ag", 0.9, (), ()), Candidate("t2", 0.8, (), ()), Candidate("t1", 0.7, (), ())],
                       SearchStats(7, 7, 0.0), failures=failures, ranking=("ag", "t2", "t1"))
    g = guided_search(Analysis(run, failures, loc), _truthful({"ag", "p", "b", "f"}))
    assert (g.root, g.certain) == ("p", True)
    assert not {"t1", "t2"} & {q.step_id for q in g.questions}


def test_a_step_whose_parent_the_recording_lost_is_searched_like_any_other() -> None:
    """A step naming a parent that was never recorded (its record dropped under load) neither crashes the
    search nor hides the root: the chain is searched and the root proven as if the parent were absent."""
    analysis, wrong = _chain()
    lost = tuple(dataclasses.replace(s, parent_id="gone") if s.step_id == "c3" else s for s in analysis.run.steps)
    run = dataclasses.replace(analysis.run, steps=lost)
    g = guided_search(Analysis(run, analysis.failures, analysis.localization), _truthful(wrong))
    assert (g.root, g.certain) == ("c2", True)


def _relay_run(converted: object, relayed: object, parent: str | None = "w") -> Analysis:
    """read -> convert (inside summarise, a wrapper answering with it) -> plan (reads both) -> validate (fails)."""
    steps = (
        Step("r", "read_gauge", "tool", output={"depth_ft": 12.5, "site": "north basin"}, start_ns=0, end_ns=1),
        Step("w", "summarise", "agent", output=relayed, deps=(Dependency("c"),), start_ns=1, end_ns=5),
        Step("c", "convert", "other", output=converted, deps=(Dependency("r"),), start_ns=2, end_ns=3,
             parent_id=parent),
        Step("m", "plan", "llm", output={"dive": "go"}, deps=(Dependency("w"), Dependency("c")), start_ns=6,
             end_ns=7),
        Step("f", "validate", "tool", output="rejected", deps=(Dependency("m"),), start_ns=8, end_ns=9),
    )
    run = Run("run1", "gauges", 0, 10, "failure", "rejected", steps=steps)
    failures = (Failure("f", "outcome", "rejected", "x", "final"),)
    loc = Localization([Candidate("m", 0.9, (), ()), Candidate("c", 0.2, (), ()), Candidate("r", 0.1, (), ())],
                       SearchStats(5, 5, 0.0), failures=failures, ranking=("m", "c", "r"))
    return Analysis(run, failures, loc)


def _asking(analysis: Analysis, correct: set[str]) -> tuple[Guided, list[str]]:
    """The guided search with a truthful oracle (``correct``: the steps whose output is right), and the steps asked."""
    asked: list[str] = []

    def oracle(step: Step, run: Run) -> bool:
        asked.append(step.step_id)
        return step.step_id in correct

    return guided_search(analysis, oracle), asked


def test_a_wrapper_answered_correct_vouches_for_the_step_inside_it_whose_whole_answer_it_relays() -> None:
    """A wrapper answered correct whose answer holds the conversion inside it whole marks the conversion
    correct without a question: proving the plan wrong takes two questions, and the implied answer says why."""
    converted = {"depth_m": 3.81, "site": "north basin"}
    g, asked = _asking(_relay_run(converted, {"report": [converted], "note": "levels normal"}), {"r", "c", "w"})
    assert (g.root, g.certain) == ("m", True)
    assert asked == ["m", "w"]
    assert [a.step_id for a in g.implied] == ["c"] and "summarise" in (g.implied[0].reason or "")
    assert g.to_dict()["implied"][0]["name"] == "convert"


def test_a_wrong_step_whose_output_equals_its_input_implies_nothing_about_that_input() -> None:
    """A conversion that handed its input on unchanged is wrong for doing so: its input stays to be asked,
    and the conversion is proven the root."""
    same = {"depth_ft": 12.5, "site": "north basin"}
    g, asked = _asking(_relay_run(same, {"report": [same]}), {"r"})
    assert (g.root, g.certain) == ("c", True)
    assert "r" in asked and g.implied == ()


def test_a_correct_check_that_quotes_a_value_beside_its_verdict_vouches_for_nothing() -> None:
    """A check that returns the stale reading it flagged may be right while the reading is wrong: a step that
    does not enclose the input and answers more than it implies nothing, and the reading is proven the root."""
    stale = {"depth_ft": 12.5, "site": "north basin"}
    g, asked = _asking(_relay_run(stale, {"checked": stale, "fresh": False}, parent=None), {"w"})
    assert (g.root, g.certain) == ("r", True)
    assert "c" in asked and g.implied == ()


def test_a_short_value_carried_by_a_correct_step_is_still_asked() -> None:
    """A value of a few characters recurs by chance: a correct step holding it vouches for nothing."""
    g, asked = _asking(_relay_run(3.81, {"depth_m": 3.81}), {"r", "c", "w"})
    assert (g.root, g.certain) == ("m", True)
    assert "c" in asked and g.implied == ()


def test_a_container_that_passes_a_wrong_childs_output_on_unchanged_is_not_asked() -> None:
    """A wrapper whose output is its child's, unchanged, is asked after the child: a wrong child stands for
    the wrapper (the child proven the root, the wrapper never asked), a right one leaves the wrapper to be
    asked (the plan proven wrong past it)."""
    converted = {"depth_m": 3.81, "site": "north basin"}
    for correct, root in (({"r", "c", "w"}, "m"), ({"r"}, "c")):
        g, asked = _asking(_relay_run(converted, dict(converted)), correct)
        assert (g.root, g.certain) == (root, True)
        assert "c" in asked and ("w" in asked) == ("c" in correct)
        stood = [a for a in g.implied if a.step_id == "w"]
        assert [a.correct for a in stood] == ([] if "c" in correct else [False])
        assert all("convert" in (a.reason or "") for a in stood)


def _wrap_run() -> Analysis:
    """read -> to_metres (a wrapper that should convert, answering with its child fetch_reading's output
    unchanged) -> plan -> validate (fails)."""
    raw = {"depth_ft": 12.5, "site": "north basin"}
    steps = (
        Step("r", "read_gauge", "tool", output=raw, start_ns=0, end_ns=1),
        Step("w", "to_metres", "agent", output=dict(raw), deps=(Dependency("r"),), start_ns=1, end_ns=5),
        Step("c", "fetch_reading", "tool", output=dict(raw), deps=(Dependency("r"),), start_ns=2, end_ns=3,
             parent_id="w"),
        Step("m", "plan", "llm", output={"dive": "go"}, deps=(Dependency("w"),), start_ns=6, end_ns=7),
        Step("f", "validate", "tool", output="rejected", deps=(Dependency("m"),), start_ns=8, end_ns=9),
    )
    run = Run("run1", "gauges", 0, 10, "failure", "rejected", steps=steps)
    failures = (Failure("f", "outcome", "rejected", "x", "final"),)
    loc = Localization([Candidate("m", 0.9, (), ()), Candidate("w", 0.3, (), ()), Candidate("c", 0.2, (), ()),
                        Candidate("r", 0.1, (), ())], SearchStats(5, 5, 0.0), failures=failures,
                       ranking=("m", "w", "c", "r"))
    return Analysis(run, failures, loc)


def test_a_wrapper_that_passes_a_right_childs_value_on_unconverted_is_asked_and_proven_the_root() -> None:
    """A wrapper that should have converted its child's right value but passed it on unchanged is not
    cleared by the child's answer: it is asked, and proven the root (not the plan it fed)."""
    g, asked = _asking(_wrap_run(), {"r", "c"})
    assert (g.root, g.certain) == ("w", True)
    assert "w" in asked and "c" in asked
    assert all(a.step_id != "w" for a in g.implied)


def test_a_pass_through_container_is_asked_when_its_child_gets_no_answer() -> None:
    """When nobody knows the child's answer, the wrapper passing it on is asked itself, and its own answer
    stands."""
    converted = {"depth_m": 3.81, "site": "north basin"}
    asked: list[str] = []

    def oracle(step: Step, run: Run) -> bool | None:
        asked.append(step.step_id)
        return None if step.step_id == "c" else step.step_id in {"r", "w"}

    g = guided_search(_relay_run(converted, dict(converted)), oracle)
    assert asked.index("c") < asked.index("w")
    assert [a.correct for a in g.questions if a.step_id == "w"] == [True] and all(a.step_id != "w" for a in g.implied)


def test_the_path_to_the_failure_is_the_one_the_analysis_gives_its_root() -> None:
    """The guided search shows the path from its root to the failure that the analysis printed for that root, not
    a one-hop shortcut through the failing container that encloses both."""
    steps = (
        Step("h", "harvest_agent", "agent", output=None, start_ns=0, end_ns=20),
        Step("w", "weigh_crate", "tool", output=7.5, parent_id="h", start_ns=1, end_ns=2),
        Step("p", "price_crate", "llm", output=30.0, parent_id="h", deps=(Dependency("w"),), start_ns=3, end_ns=4),
        Step("s", "sell_crate", "tool", output=None, parent_id="h", deps=(Dependency("p"),), start_ns=5, end_ns=6,
             status="error"),
    )
    run = Run("run1", "orchard", 0, 21, "failure", "sale refused", steps=steps)
    failures = (Failure("s", "step-error", "sale refused", "x", "step"),)
    loc = Localization([Candidate("w", 0.9, (), ("w", "p", "s", "h"))], SearchStats(4, 4, 0.0), failures=failures,
                       ranking=("w",))
    g = guided_search(Analysis(run, failures, loc), _truthful({"w", "p", "s", "h"}))
    assert g.root == "w"
    assert g.path == ("w", "p", "s", "h")


def test_before_any_answer_the_likeliest_root_is_the_rankers_first_not_the_runs_first_step() -> None:
    """With no answer given, a step with no recorded input (the request that opens the run) is not made
    likelier than the ranker's first candidate: nothing is proven about inputs it does not have."""
    steps = (
        Step("q", "visitor_request", "other", output="plan a tour", start_ns=0, end_ns=1),
        Step("t", "corridor_time", "tool", output={"minutes": 45}, deps=(Dependency("q"),), start_ns=2, end_ns=3),
        Step("a", "tour_answer", "llm", output="99 minutes", deps=(Dependency("t"),), start_ns=4, end_ns=5),
    )
    run = Run("museum", "tours", 0, 6, "failure", "too long", steps=steps)
    cands = [Candidate("t", 0.44, (), ()), Candidate("q", 0.40, (), ())]
    loc = Localization(cands, SearchStats(3, 3, 0.0), failures=(Failure("a", "outcome", "long", "x", "final"),),
                       ranking=("t", "q"))
    g = guided_search(Analysis(run, loc.failures, loc), lambda step, run: None)
    assert not g.certain and g.root == "t"
    assert g.candidates[0][0] == "t"


def test_every_step_on_the_proven_roots_path_is_named_even_one_never_asked_about(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The path from the root to the failure can pass through a step that was never a candidate (a turn that
    encloses the call and holds no output of its own): the result names it, so no raw id is printed."""
    import trajdebug
    from trajdebug.api import analyze_source
    from trajdebug.report.guided import guided_lines

    path = tmp_path / "kiln.jsonl"
    for peak in (1222, 1022):
        with trajdebug.run("kiln-firing", task="fire batch 9", path=str(path)) as run:
            with trajdebug.step("firing_agent", kind="agent", input={"batch": 9}) as outer:
                with (
                    trajdebug.step("round 1", kind="agent"),
                    trajdebug.step("read_cone_chart", kind="tool", input={"cone": 6}) as t,
                ):
                    t.output = {"peak_c": peak, "hold_min": 15}
                outer.output = {"peak_c": t.output["peak_c"]}
            if peak < 1200:
                run.fail("peak below cone 6")
    [a] = analyze_source(path, oracle=lambda step, run: None).analyses
    g = a.guided
    assert g is not None and g.path and len(g.path) >= 3
    names = dict(g.names)
    assert all(s in names for s in g.path)
    assert "round 1" in "\n".join(guided_lines(g))


def _drive(search: GuidedSearch, answer, *, by_done: bool) -> list[str]:  # type: ignore[no-untyped-def]
    """Ask until done: by ``next_question`` alone, or by ``done()`` then ``next_question`` (a driver's two ways)."""
    asked: list[str] = []
    while not by_done or not search.done():
        sid = search.next_question()
        if sid is None:
            break
        asked.append(sid)
        search.answer(answer(sid))
    return asked


def _kiln_chain() -> Analysis:
    steps = (
        Step("clay", "wedge_clay", "tool", output={"kg": 4}, start_ns=1, end_ns=2),
        Step("pot", "throw_pot", "other", output={"walls_mm": 2}, deps=(Dependency("clay"),), start_ns=3, end_ns=4),
        Step("glaze", "dip_glaze", "other", output={"coats": 5}, deps=(Dependency("pot"),), start_ns=5, end_ns=6),
        Step("fire", "fire_kiln", "other", output=None, status="error", deps=(Dependency("glaze"),), start_ns=7, end_ns=8),
    )
    run = Run("run1", "kiln", 0, 9, "failure", steps=steps)
    loc = Localization([], SearchStats(4, 4, 0.0), failures=(Failure("fire", "outcome", "x", "x", "final"),))
    return Analysis(run, loc.failures, loc)


def test_next_question_has_no_side_effect_so_a_done_driven_loop_still_rechecks() -> None:
    """Asking for the next question any number of times gives the same step, so a loop on ``done()`` rechecks a
    flipped answer as the plain loop does and proves the true root, not the step the flip called its own fault."""
    flips: dict[str, int] = {}

    def answer(sid: str) -> Answer:
        flips[sid] = flips.get(sid, 0) + 1
        if sid == "pot" and flips[sid] == 1:
            return Answer(sid, False, "person", admissible=True)  # flipped: "its own fault"
        return Answer(sid, False, "person", admissible=sid == "clay")

    runs = []
    for by_done in (False, True):
        flips.clear()
        search = GuidedSearch(_kiln_chain(), recheck=True, audit=0)
        first = search.next_question()
        assert [search.next_question() for _ in range(3)] == [first] * 3 and not search.done()
        runs.append((_drive(search, answer, by_done=by_done), search.result().root, search.result().certain))
    assert runs[0] == runs[1] and runs[1][1:] == ("clay", True) and runs[1][0].count("pot") == 2


def test_a_done_driven_loop_spends_an_audit_only_when_it_is_answered() -> None:
    """An audit question is marked when answered, not when chosen: a loop on ``done()`` still audits the proof
    and finds the root the recording did not tie to the failure."""
    analysis, wrong = _unrecorded_input()
    search = GuidedSearch(analysis, audit=1)
    asked = _drive(search, lambda sid: Answer(sid, sid not in wrong, "person"), by_done=True)
    assert "c" in asked and (search.result().root, search.result().certain) == ("c", True)


def test_a_step_recorded_as_its_own_parent_does_not_hide_a_containers_child_from_the_search() -> None:
    """A step recorded as its own parent is read as a top-level step: the container whose child read it still
    takes that child's output, so a truthful person leads the search to the wrong child, not the container."""
    steps = (
        Step("seed", "count_seed", "tool", output={"packets": 3}, parent_id="seed", start_ns=1, end_ns=2),
        Step("plot", "plan_plot", "agent", output={"rows": 9}, start_ns=3, end_ns=20),
        Step("rows", "space_rows", "tool", output={"cm": 90}, deps=(Dependency("seed"),), parent_id="plot", start_ns=4, end_ns=9),
        Step("sow", "sow_field", "other", output=None, status="error", deps=(Dependency("plot"),), start_ns=21, end_ns=22),
    )
    run = Run("run1", "garden", 0, 30, "failure", steps=steps)
    failures = (Failure("sow", "outcome", "x", "x", "final"),)
    loc = Localization([Candidate("plot", 0.9, (), ()), Candidate("seed", 0.5, (), ()), Candidate("rows", 0.4, (), ())],
                       SearchStats(4, 4, 0.0), failures=failures, ranking=("plot", "seed", "rows"))
    wrong = {"plot", "rows", "sow"}
    g = guided_search(Analysis(run, failures, loc), lambda s, r: Answer(s.step_id, s.step_id not in wrong, "person",
                      admissible=None if s.step_id not in wrong else s.step_id != "sow"), timeout=None)
    assert (g.root, g.certain) == ("rows", True)


def test_a_child_reading_state_its_container_wrote_is_found_as_the_root() -> None:
    """A turn writes shared state that its tool child then reads (a recorded state edge into the still-running
    turn): the child's output still feeds the turn, so a truthful person is led to the wrong child, not the turn."""
    import trajdebug
    from trajdebug.record import MemorySink

    with trajdebug.run("greenhouse", sinks=[MemorySink()]) as h:
        with trajdebug.step("read_sensor", kind="tool") as s:
            s.output = {"temp": "71", "unit": "F"}
        with trajdebug.step("tend_house", kind="agent") as turn:
            h.state["unit"] = "C"  # the turn sets up state for its tools
            with trajdebug.step("convert_temp", kind="tool") as c:
                c.output = {"temp_c": 71.0, "unit": h.state["unit"]}  # wrong: never converted (the root)
            turn.output = {"vent": c.output["temp_c"] > 30}
        with trajdebug.step("report", kind="llm") as f:
            f.output = "vents opened"
        h.fail("vents opened in the cold")
    run = h.load()
    names = {s.step_id: s.name for s in run.steps}
    wrong = {"convert_temp": True, "tend_house": None, "report": False}

    def truthful(step: Step, run: Run) -> Answer:
        if step.name in wrong:
            return Answer(step.step_id, False, "person", admissible=wrong[step.name])
        return Answer(step.step_id, True, "person")

    analysis = trajdebug.analyze(run)
    for recheck in (False, True):
        g = guided_search(analysis, truthful, timeout=None, recheck=recheck)
        assert g.root is not None and (names[g.root], g.certain) == ("convert_temp", True)


def test_an_answer_volunteered_between_a_recheck_and_its_answer_keeps_the_recheck_marked() -> None:
    """A recheck stays pending through an answer volunteered about another step, so the rechecked step is marked
    when its own answer comes and is not asked a third time."""
    n: dict[str, int] = {}

    def answer(sid: str) -> Answer:
        n[sid] = n.get(sid, 0) + 1
        flipped = sid == "pot" and n[sid] == 1  # "its own fault", then the truth
        return Answer(sid, False, "person", admissible=flipped or sid == "clay")

    search = GuidedSearch(_kiln_chain(), recheck=True, audit=0)
    asked: list[str] = []
    while (sid := search.next_question()) is not None and len(asked) < 20:
        asked.append(sid)
        if asked.count("pot") == 2 and sid == "pot":
            search.answer(Answer("glaze", False, "person", admissible=False))  # volunteered meanwhile
        search.answer(answer(sid))
    assert asked.count("pot") == 2 and (search.result().root, search.result().certain) == ("clay", True)
    assert search.index["pot"] in search.rechecked


@settings(max_examples=60, deadline=None)
@given(worlds, st.sampled_from(STRATS))
def test_an_inadmissible_answer_sends_the_next_question_to_what_fed_that_step(w: tuple[int, int], strategy: str) -> None:
    """A person's ``i`` (the step was given a wrong value) keeps the search among the steps that produced that
    step's input and theirs: the next question is one of them, never an earlier step that did not feed it
    (three-valued and truthful: the root erroneous, every other wrong step inadmissible)."""
    analysis, root, wrong = _world(*w)
    search = GuidedSearch(analysis, strategy=strategy)
    fed = {s.step_id: {d.step_id for d in s.deps} for s in analysis.run.steps}

    def ancestors(sid: str) -> set[str]:
        out, todo = set(), [sid]
        while todo:
            for p in fed[todo.pop()] - out:
                out.add(p)
                todo.append(p)
        return out

    given_wrong: str | None = None
    while (sid := search.next_question()) is not None:
        if given_wrong is not None:
            assert sid in ancestors(given_wrong)
            given_wrong = None
        bad = sid in wrong and sid != root
        search.answer(Answer(sid, sid not in wrong, "person", admissible=None if sid not in wrong else not bad))
        given_wrong = sid if bad else None
        if bad:  # never the root (a plain wrong answer, ``n``, would keep it a candidate)
            assert sid not in dict(search.result().candidates)
    assert search.result().root == root and search.result().certain


def test_stored_answers_are_taken_without_working_out_the_search_before_each(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search built over many stored answers takes each as it says it was asked (`Answer.asked`): no candidate
    set is worked out per answer, even where every step's inputs were only inferred (an audit possible anywhere),
    so the cost grows with the answers plus the steps, not their product; an audit's answer still counts as one."""
    n = 300
    ids = [f"s{i:03d}" for i in range(n)]
    steps = tuple(
        Step(s, f"stage{i}", "other", output=i, deps=(Dependency(ids[i - 1], origin="inferred"),) if i else (),
             start_ns=2 * i, end_ns=2 * i + 1)
        for i, s in enumerate(ids)
    )
    run = Run("run1", "chain", 0, 2 * n, "failure", "wrong", steps=steps)
    loc = Localization([Candidate(ids[100], 0.9, (), ())], SearchStats(n, n, 0.0),
                       failures=(Failure(ids[-1], "outcome", "wrong", "x", "final"),), ranking=(ids[100],))
    analysis = Analysis(run, loc.failures, loc)
    rng = random.Random(5)
    answers = [Answer(s, int(s[1:]) < 100, "person", k + 1) for k, s in enumerate(rng.sample(ids[:-1], 200))]
    worked: list[int] = []
    real = GuidedSearch._reaches
    monkeypatch.setattr(GuidedSearch, "_reaches", lambda self: worked.append(1) or real(self))
    GuidedSearch(analysis, answers, once=True)
    assert worked == []
    audit = Answer(ids[20], True, "person", 999, asked=f"audit:{ids[150]}")
    search = GuidedSearch(analysis, [*answers, audit], once=True)
    assert worked == [] and search.audited == {20: 150}
    search.next_question()
    assert len(worked) == 1


def test_recheck_with_an_interactive_oracle_says_that_nothing_was_rechecked() -> None:
    """A person is never asked a step twice (``once``): ``recheck=True`` then rechecks nothing, and says so."""
    analysis, _, wrong = _world(3, 12)

    def person(step: Step, run: Run) -> bool:
        return step.step_id not in wrong

    person.interactive = True  # type: ignore[attr-defined]
    said = guided_search(analysis, person, recheck=True).problems
    assert any("no answer was rechecked" in p for p in said)
    assert not any("rechecked" in p for p in guided_search(analysis, person, recheck=False).problems)


# -- since ask49 (nu22): like steps asked at once; no certainty before the proof is tested ---------------------------


def _lookups() -> Analysis:
    """A request normalized (``n``, the bug), seven like lookups the ranker suspects more, a filter fed by all of
    them, and a failing booking fed by the filter."""
    steps = [
        Step("q", "read_request", "llm", output={"max_rent": "1.250"}, start_ns=0, end_ns=1),
        Step("n", "normalize_budget", "other", output={"max_rent": 1.25}, deps=(Dependency("q"),), start_ns=2, end_ns=3),
    ]
    looks = [f"g{k}" for k in range(7)]
    steps += [Step(g, "get_details", "tool", output={"id": g, "rent": 900 + k}, start_ns=4 + k, end_ns=5 + k)
              for k, g in enumerate(looks)]
    steps += [
        Step("f", "filter_budget", "other", output=[], deps=tuple(Dependency(x) for x in ("n", *looks)), start_ns=20, end_ns=21),
        Step("b", "book_viewing", "tool", output=None, deps=(Dependency("f"),), start_ns=22, end_ns=23, status="error"),
    ]
    run = Run("flats", "flat-finder", 0, 24, "failure", "no viewing", steps=tuple(steps))
    prior = {**dict.fromkeys(looks, 0.1), "f": 0.1, "n": 0.05, "q": 0.05}
    cands = [Candidate(s, p, (), (s, "b"), confidence=p) for s, p in prior.items()]
    failures = (Failure("b", "step-error", "IndexError", "exception:IndexError", "step"),)
    return Analysis(run, failures, Localization(cands, SearchStats(11, 11, 0.0), failures=failures, ranking=tuple(prior)))


def test_like_lookups_are_one_question_when_that_is_expected_to_cost_fewer_questions() -> None:
    """F11 (nu22): seven like lookups, each asked in turn, would cost seven questions; under one root they are
    all right with the prior's odds, so the search offers them as one question (Dorfman's group testing),
    whose "all right" clears every one of them and counts as one question."""
    search = GuidedSearch(_lookups(), once=True)
    sid = search.next_question()
    while sid is not None and sid.startswith("g") is False:
        search.answer(search.stamp(Answer(sid, sid not in ("f", "n"), "person", admissible=None if sid != "f" else False)))
        sid = search.next_question()
    assert sid is not None
    group = search.group(sid)
    assert sorted(group) == [f"g{k}" for k in range(7)] and group[0] == sid
    before = search.asked
    search.answer_group([search.stamp(Answer(g, True, "person", 7)) for g in group])
    assert search.asked == before + 1 and all(search.verdict(search.index[g]) is True for g in group)
    assert search.next_question() not in group


def test_a_group_is_not_offered_for_a_name_a_person_already_answered_or_for_an_audit() -> None:
    """After a group's "not all", the step asked on its own holds a person's answer and no group of that name is
    offered again (a resumed search keeps no group answer); a single like step is never a group."""
    search = GuidedSearch(_lookups(), [Answer("f", False, "person", 1, admissible=False), Answer("g3", True, "person", 2)],
                          once=True)
    sid = search.next_question()
    assert sid is not None and search.group(sid) == [sid]


def test_a_failing_step_with_no_recorded_input_is_not_certain_while_its_audit_is_left_to_ask() -> None:
    """F1 (nu22): before any answer, a failing step nothing recorded feeds is the likeliest root, never certain:
    its audit (the earlier steps that may have fed it) is still to ask; with no audit allowed, no answer
    proves it either; a person's answers to the audit do."""
    a = _lookups()
    run = dataclasses.replace(a.run, steps=tuple(dataclasses.replace(s, deps=()) if s.step_id == "b" else s for s in a.run.steps))
    a = dataclasses.replace(a, run=run)
    for audit in (2, 0):
        g = GuidedSearch(a, audit=audit).result()
        assert g.root == "b" and not g.certain
    search = GuidedSearch(a, once=True)
    while (sid := search.next_question()) is not None:
        search.answer(search.stamp(Answer(sid, True, "person")))
    g = search.result()
    assert g.root == "b" and g.certain and len(g.audited) == 2


# -- since fix49a: an audit proves a root only by an answer that stands correct; its budget is per proof ----------


def _unfed(*leaves: str) -> Analysis:
    """Leaf lookups ``leaves`` (in that order, none recorded as anyone's input), then a failing booking with no
    recorded input: whichever of them ran before may have fed it.  No ranking: every step weighs the same."""
    steps = [Step(s, "lookup", "tool", output={"id": s}, start_ns=2 * k, end_ns=2 * k + 1) for k, s in enumerate(leaves)]
    steps.append(Step("z", "book", "tool", output=None, start_ns=99, end_ns=100, status="error"))
    run = Run("r1", "unfed", 0, 101, "failure", "no booking", steps=tuple(steps))
    failures = (Failure("z", "step-error", "IndexError", "exception:IndexError", "step"),)
    return Analysis(run, failures, Localization([], SearchStats(len(steps), len(steps), 0.0), failures=failures))


def test_audits_answered_dont_know_prove_no_root_and_say_what_would() -> None:
    """HIGH 1 (rev49a): a failing step with no recorded input is tested by its audit; "don't know" to each audit
    question clears no step that may have fed it, so the root is the likeliest, never certain, and the result
    names those steps (`Guided.unproven`); one audit answered correct proves it."""
    search = GuidedSearch(_unfed("a", "b", "c"), once=True)
    asked = []
    while (sid := search.next_question()) is not None:
        asked.append(sid)
        search.answer(search.stamp(Answer(sid, None, "person")))
    g = search.result()
    assert len(asked) == 2 and (g.root, g.certain) == ("z", False) and g.unproven == tuple(asked)
    resumed = GuidedSearch(_unfed("a", "b", "c"), search.log, once=True)
    assert resumed.next_question() is None and not resumed.result().certain
    right = GuidedSearch(_unfed("a", "b", "c"), once=True)
    sid = right.next_question()
    assert sid is not None
    right.answer(right.stamp(Answer(sid, True, "person")))
    while (sid := right.next_question()) is not None:
        right.answer(right.stamp(Answer(sid, None, "person")))
    assert (right.result().root, right.result().certain, right.result().unproven) == ("z", True, None)


def test_the_audit_budget_is_per_proof_so_a_root_its_audit_found_is_audited_in_turn() -> None:
    """MEDIUM 2 (rev49a): with one audit question a proof, the failing step's audit finds the root (the latest
    earlier lookup, answered wrong, no recorded input either); that root's proof gets its own audit, answered
    correct, and is certain.  A budget for the whole search, spent on the first proof, left it unproven with
    nothing left to ask."""
    search = GuidedSearch(_unfed("a", "c", "b"), audit=1, once=True)
    asked = []
    while (sid := search.next_question()) is not None:
        asked.append((sid, search.asked_as()))
        search.answer(search.stamp(Answer(sid, sid not in ("b", "z"), "person")))
    g = search.result()
    assert asked == [("b", "audit:z"), ("c", "audit:b")]
    assert (g.root, g.certain) == ("b", True)


def test_a_groups_not_all_is_a_record_a_resumed_search_reads_as_the_live_one_did() -> None:
    """LOW 3 (rev49a): a group's "not all" is stored as a record that judges no step (`ASKED_GROUP`): the live
    search asks the group's first step on its own next and offers no group of its name again; a search resumed
    over the stored answers does the same, and a reader keeps the record beside the answer about that step."""
    from trajdebug.core.model import ASKED_GROUP
    from trajdebug.core.schema import latest_answers

    live = GuidedSearch(_lookups(), once=True)
    while (sid := live.next_question()) is not None and not sid.startswith("g"):
        live.answer(live.stamp(Answer(sid, sid not in ("f", "n"), "person", 1, admissible=None if sid != "f" else False)))
    stored, before = list(live.log), live.asked
    assert sid is not None and len(live.group(sid)) > 1
    record = live.not_all(live.group(sid), 2)
    assert record.asked == ASKED_GROUP and record.correct is None and live.asked == before + 1
    assert live.next_question() == sid and live.group(sid) == [sid]
    assert live.verdict(live.index[sid]) is None and sid not in live.votes
    resumed = GuidedSearch(_lookups(), [*stored, record], once=True)
    assert resumed.next_question() == sid and resumed.group(sid) == [sid]
    answered = Answer(sid, True, "person", 3, asked="question")
    assert latest_answers([*stored, record, answered])[-2:] == (record, answered)


def test_a_groups_not_all_record_names_the_whole_group_not_one_step_asked_with_others() -> None:
    """A group's "not all" record says it was one question about all its steps, with every id: the retired
    "asked at once with N more NAME step(s)" read as a question about the first step alone (nu26 F10, rev53b)."""
    live = GuidedSearch(_lookups(), once=True)
    while (sid := live.next_question()) is not None and not sid.startswith("g"):
        live.answer(live.stamp(Answer(sid, sid not in ("f", "n"), "person", 1, admissible=None if sid != "f" else False)))
    assert sid is not None
    group = live.group(sid)
    why = live.not_all(group, 2).reason or ""
    name = live.graph.steps[sid].name
    assert why.startswith(f"asked in one question about all {len(group)} {name} steps (")
    assert all(f"#{g[-6:]}" in why for g in group) and "at once" not in why


def _proved_by_answers(by: str = "person") -> tuple[Analysis, Analysis]:
    """A parse that misreads a bill, the sizing after it, a check that raises; the answers (the sizing wrong for
    a wrong input, the parse wrong on its own) prove the parse the root.  The analysis before and after
    `settled`, the parse's candidate carrying the ranking's "not a structural root" beside it."""
    from tests.builders import step

    from trajdebug.analysis import analyze, settled
    from trajdebug.core.model import ErrorInfo

    run = Run(
        "r-proof",
        "solar",
        steps=(
            step("req", "load_request", "input", 1, {"id": "C-1"}, {"line": "1,340 kWh"}),
            step("parse", "parse_statement", "parse", 2, {"line": "1,340 kWh"}, {"kwh": 1.0}, "req"),
            step("size", "size_system", "other", 3, {"kwh": 1.0}, {"panels": 1}, "parse"),
            step("chk", "check_offset", "condition", 4, {"panels": 1}, None, "size",
                 error=ErrorInfo("ValueError", "quote offsets 8% of billed usage")),
        ),
        outcome="failure",
    )
    a = analyze(run)
    loc = a.localization
    hedged = tuple(
        dataclasses.replace(c, reasons=(*c.reasons, "not a structural root: size_system is at least as suspect"))
        if c.step_id == "parse" else c
        for c in loc.candidates
    )
    a = dataclasses.replace(a, localization=dataclasses.replace(loc, candidates=hedged))
    answers = [Answer("size", False, by, admissible=False), Answer("parse", False, by, admissible=True)]
    return a, settled(dataclasses.replace(a, guided=GuidedSearch(a, answers).result()))


def test_answers_that_prove_the_root_make_the_verdict_proved_and_keep_the_rankers_beside_it() -> None:
    """Once stored answers prove the root, the verdict is ``proved`` (text: with the answers' count, and never
    what would settle it), the ranker's own verdict and confidence stay in fields of their own, and the proven
    root no longer says it is "not a structural root" (issue 23, nu23: "verdict: unsure" beside a proof)."""
    from trajdebug.report.analysis import verdict_note

    before, after = _proved_by_answers()
    assert after.guided is not None and after.guided.certain and after.guided.root == "parse"
    assert before.verdict in ("confident", "likely", "unsure")
    assert after.verdict == "proved" and after.ranker_verdict == before.verdict
    doc = after.to_dict()
    assert doc["verdict"] == "proved" and doc["ranker_verdict"] == before.verdict
    assert doc["ranker_confidence"] == before.localization.candidates[0].confidence
    note = verdict_note(after) or ""
    assert note.startswith("verdict: proved parse_statement#parse by a person's 1 answer(s) (parse_statement#parse wrong (its own fault))")
    assert "settle" not in note
    [root] = [c for c in after.root_causes if c.step_id == "parse"]
    assert not any(r.startswith("not a structural root") for r in root.reasons)
    assert before.to_dict()["ranker_verdict"] == before.verdict  # unproven: the two agree


def test_the_guided_search_listing_names_each_step_with_its_short_id() -> None:
    """Two calls of one tool answered differently are told apart in the listing: each step is named with its
    short id, as the ranked list names it (issue 23, nu23: "depreciation_rate -> correct" then
    "depreciation_rate -> wrong")."""
    from trajdebug.report.guided import guided_lines

    _, after = _proved_by_answers()
    assert after.guided is not None
    lines = guided_lines(after.guided)
    assert any(line.strip().startswith("parse_statement#parse -> wrong") for line in lines), lines
    assert any(line.strip().startswith("size_system#size -> wrong") for line in lines)
    assert lines[1].strip() == "root: parse_statement#parse, proved by 2 answer(s) of person"


def test_a_proof_by_automatic_oracles_leaves_the_rankers_verdict_and_says_whose_answers_single_the_step_out() -> None:
    """Answers from a passing run of the same input (or an expectation, a judge) that prove a root are no
    person's: the verdict stays the ranker's, the root still heads the list saying who answered, and the
    verdict line says whose answers single it out and that it is no proof (round 50 review: a reference
    differing only in a timestamp "proved" the step that fetched it)."""
    from trajdebug.report.analysis import verdict_note
    from trajdebug.report.guided import guided_lines

    before, after = _proved_by_answers("reference:r-good")
    assert after.guided is not None and after.guided.certain and after.guided.root == "parse"
    assert after.verdict == before.verdict != "proved" and after.ranker_verdict is None
    assert after.to_dict()["ranker_verdict"] == before.verdict
    note = verdict_note(after) or ""
    assert note.startswith(f"verdict: {before.verdict}") and "proved" not in note
    assert note.endswith("the answers of reference:r-good single out parse_statement#parse, no person's: not a proof")
    assert after.root_causes[0].step_id == "parse" and "of reference:r-good" in after.root_causes[0].reasons[0]
    assert after.root_causes[0].reasons[0].startswith("singled out by 1 answer(s) of reference:r-good")
    # Rendered as the CLI renders it (with the proof), the guided line counts what the reason counts.
    from trajdebug.analysis import proof

    line = guided_lines(after.guided, proof=proof(after))[1].strip()
    assert line == "root: parse_statement#parse, singled out by 1 answer(s) of reference:r-good (2 answers in all), not a person's: no proof"
    assert not [r for c in after.root_causes for r in c.reasons if r.startswith("proved")]


def test_a_root_the_answers_prove_has_no_reason_saying_it_has_no_evidence_of_its_own() -> None:
    """The answers that prove a root (or single it out) are its evidence: the ranking's "no evidence of its own"
    goes from its reasons (nu25 F10 read "proved by 2 answer(s)" and "no evidence of its own" on one
    candidate)."""
    for by in ("person", "reference:r-good"):
        before, after = _proved_by_answers(by)
        [was] = [c for c in before.root_causes if c.step_id == "parse"]
        hedged = dataclasses.replace(was, reasons=("no evidence of its own: ranked by its place", *was.reasons))
        loc = before.localization
        a = dataclasses.replace(
            before,
            localization=dataclasses.replace(
                loc, candidates=tuple(hedged if c.step_id == "parse" else c for c in loc.candidates)
            ),
        )
        from trajdebug.analysis import settled

        moved = settled(dataclasses.replace(a, guided=after.guided))
        [root] = [c for c in moved.root_causes if c.step_id == "parse"]
        assert not any(r.startswith("no evidence of its own") for r in root.reasons), by


# -- a new user's meeting scheduler (nu62 agent B: tests/builders.py, `recorded_meeting_run`) -------------


def _meeting_oracle(step: Step, run: Run) -> bool | None:
    from tests.builders import tz_applied

    return tz_applied(step.output, step.input) if step.name == "parse_calendar" else None


def _meeting(tmp_path: object, name: str = "m.jsonl") -> tuple[str, dict[str, str]]:
    from pathlib import Path

    from tests.builders import recorded_meeting_run

    path = Path(str(tmp_path)) / name
    run = recorded_meeting_run(path)
    ids: dict[str, str] = {}
    for s in run.steps:  # each step as its name and its call's number: parse_calendar 2 is Bo Chen's
        ids[f"{s.name} {sum(k.startswith(s.name + ' ') for k in ids) + 1}"] = s.step_id
    return str(path), ids


def test_how_many_candidates_are_shown_changes_nothing_the_guided_search_concludes(tmp_path: object) -> None:
    """--top is display only: the same answers leave the same root and the same probabilities with 1, 3 or 25
    candidates shown (nu62 bug 1: policy#02 at 81 % with --top 3, parse_calendar#07 at 44 % with --top 10)."""
    import shutil

    from trajdebug.api import analyze_source

    src, _ = _meeting(tmp_path)
    seen = set()
    for top in (1, 3, 25):
        copy = f"{src}.{top}.jsonl"
        shutil.copy(src, copy)
        g = analyze_source(copy, top=top, oracle=_meeting_oracle).analyses[0].guided
        assert g is not None
        seen.add((g.root, g.certain, tuple((s, round(p, 9)) for s, p in g.candidates)))
    assert len(seen) == 1


def test_root_causes_open_on_the_root_the_guided_search_names(tmp_path: object) -> None:
    """With the guided search run, `root_causes` lists the suspects the answers leave in the search's order, so it
    opens on the guided root even when the answers prove none (nu62 bug 3: policy#02 first above the guided
    root parse_calendar#07 with --top 25), whatever the number of candidates shown."""
    import shutil

    from trajdebug.api import analyze_source

    src, _ = _meeting(tmp_path)
    for top in (1, 3, 25):
        copy = f"{src}.{top}.jsonl"
        shutil.copy(src, copy)
        a = analyze_source(copy, top=top, oracle=_meeting_oracle).analyses[0]
        assert a.guided is not None and not a.guided.certain and a.guided.root is not None
        assert a.root_causes[0].step_id == a.guided.root, top
        suspects = [c.step_id for c in a.root_causes if c.run_id is None]
        order = [sid for sid, _ in a.guided.candidates if sid in suspects]
        assert suspects[: len(order)] == order, top


def _fed_twice(n: int = 6) -> GuidedSearch:
    """A chain u0..u{n-1} and a step v both feeding m, which feeds the failure f; a flat prior over the slice."""
    from tests.builders import step

    steps = [step("u0", "u", "other", 0, {}, {"o": 0})]
    steps += [step(f"u{k}", "u", "other", 2 * k, {}, {"o": k}, f"u{k - 1}") for k in range(1, n)]
    steps += [step("v", "v", "other", 40, {}, {"o": 2}), step("m", "m", "other", 42, {}, {"o": 3}, f"u{n - 1}", "v")]
    steps += [step("f", "f", "other", 50, {}, {"o": 5}, "m")]
    names = [s.step_id for s in steps[:-1]]
    # Scores doubling per rank undo the prior's halving per rank: each step weighs alike.
    cands = [Candidate(s, 2.0**k, (), (s, "f")) for k, s in enumerate(names)]
    loc = Localization(cands, SearchStats(n + 3, n + 3, 0.0), failures=(Failure("f", "outcome", "wrong", "x", "final"),),
                       ranking=tuple(names), ranked_all=tuple(cands))
    return GuidedSearch(Analysis(Run("r", "t", 0, 60, "failure", "wrong", steps=tuple(steps)), loc.failures, loc), once=True)


def test_after_a_wrong_input_the_next_question_is_one_of_that_steps_producers_and_a_lone_one_is_not_walked() -> None:
    """Answered "wrong input" on m, the search asks next about one of m's producers (v), not a step up the
    chain the least mass expected left alone would ask (u2: Shapiro, a wrong input puts the fault among the
    producers); with v answered right, the one open producer left (u5) is wrong by that answer alone, so the
    chain above it is bisected, not walked, and the root is still proved."""
    gs = _fed_twice()
    gs.answer(Answer("m", False, "person", 1, admissible=False))
    assert gs.next_question() == "v"
    gs.answer(Answer("v", True, "person", 1))
    asked = []
    while (sid := gs.next_question()) is not None:
        asked.append(sid)
        gs.answer(Answer(sid, int(sid[1:]) < 1 if sid.startswith("u") else True, "person", 1))
    g = gs.result()
    assert asked[0] != "u5" and g.root == "u1" and g.certain


def _support_log() -> Run:
    """A billing chat whose second assistant turn looked up the wrong invoice, and the customer said so."""
    from trajdebug.sources.formats.messages import messages_to_run

    def call(cid: str, name: str, args: str) -> dict[str, object]:
        return {"role": "assistant", "content": None,
                "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}]}

    messages = [
        {"role": "system", "content": "Refund a duplicate charge only when the invoice shows two payments."},
        {"role": "user", "content": "I was charged twice for my March bill. My number is +43 660 1234567."},
        call("c1", "lookup_customer", '{"phone": "+43 660 1234567"}'),
        {"role": "tool", "tool_call_id": "c1", "name": "lookup_customer",
         "content": '{"customer_id": "C-88412", "invoices": ["INV-2026-03-88412", "INV-2026-02-88412"]}'},
        call("c2", "get_invoice", '{"invoice_id": "INV-2026-02-88412"}'),
        {"role": "tool", "tool_call_id": "c2", "name": "get_invoice",
         "content": '{"invoice_id": "INV-2026-02-88412", "payments": [{"amount": 29.9}]}'},
        {"role": "assistant", "content": "Invoice INV-2026-02-88412 was paid only once, so there is nothing to refund."},
        {"role": "user", "content": "That's wrong. My bank shows two debits of 29.90 for March."},
        {"role": "assistant", "content": "I am sorry, I cannot refund anything for this invoice."},
    ]
    run, problems = messages_to_run(messages, run_id="support", outcome="failure")
    assert not problems
    return run


def test_a_right_reply_to_a_turn_proves_nothing_of_the_turn_after_it() -> None:
    """A customer's truthful complaint answered right does not prove the assistant turn after it the root: that
    turn read the earlier assistant turn too (a turn-order edge), which is still to be answered."""
    from trajdebug.analysis import analyze

    analysis = analyze(_support_log())
    last = analysis.run.steps[-1].step_id
    complaint = analysis.run.steps[-2].step_id

    def oracle(step: Step, run: Run) -> bool | None:
        return True if step.step_id == complaint else None

    g = guided_search(analysis, oracle)
    assert not (g.certain and g.root == last)
