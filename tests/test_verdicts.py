"""Three-valued answers in the guided search (Naish 1997): erroneous vouches for the inputs, inadmissible
is never the root, a container's root is sought among its children, two-valued searches are unchanged."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.test_guided import STRATS, _chain, _truthful, _world, worlds

from trajdebug.analysis import Analysis, GuidedSearch, guided_search
from trajdebug.analysis._detect import Failure
from trajdebug.analysis._localize import Candidate, Localization, SearchStats
from trajdebug.analysis._verdicts import Verdicts
from trajdebug.core.model import Answer, Dependency, Run, Step


def _three(root: str, wrong: set[str], own: frozenset[str] = frozenset()):  # type: ignore[no-untyped-def]
    """The truthful three-valued oracle: the root (and what encloses it, ``own``) erroneous, every other
    wrong step inadmissible, the rest correct; it records the steps it was asked about."""
    asked: list[str] = []

    def oracle(step: Step, run: Run) -> Answer:
        asked.append(step.step_id)
        if step.step_id not in wrong:
            return Answer(step.step_id, True, "person")
        return Answer(step.step_id, False, "person", admissible=step.step_id == root or step.step_id in own)

    oracle.asked = asked  # type: ignore[attr-defined]
    return oracle


def test_an_erroneous_answer_about_a_leaf_proves_it_with_no_question_about_its_inputs() -> None:
    """One erroneous answer makes a leaf certain; the same step answered plain wrong is not, until its input is asked."""
    analysis, _ = _chain()
    search = GuidedSearch(analysis, audit=0)
    search.answer(Answer("c2", False, "person", admissible=True))
    g = search.result()
    assert (g.root, g.certain, g.asked) == ("c2", True, 1)
    assert [a.step_id for a in g.implied] == ["c1"] and "c2" in (g.implied[0].reason or "")
    plain = GuidedSearch(analysis, audit=0)
    plain.answer(Answer("c2", False, "person"))
    assert not plain.result().certain and plain.next_question() is not None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds, st.sampled_from(STRATS))
def test_a_truthful_three_valued_oracle_finds_the_planted_root_and_never_asks_its_inputs(
    w: tuple[int, int], strategy: str
) -> None:
    """On random DAGs the three-valued truth proves the planted root, and no input of the root is asked
    once the root was answered (the erroneous answer vouched for them)."""
    analysis, root, wrong = _world(*w)
    oracle = _three(root, wrong)
    g = guided_search(analysis, oracle, strategy=strategy)
    assert (g.root, g.certain) == (root, True)
    asked = oracle.asked  # type: ignore[attr-defined]
    if root in asked:
        inputs = {d.step_id for d in analysis.run.step_map()[root].deps}
        assert not inputs & set(asked[asked.index(root) + 1 :])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds, st.integers(0, 10**6), st.booleans())
def test_a_step_answered_inadmissible_is_never_the_root(w: tuple[int, int], seed: int, recheck: bool) -> None:
    """Whatever the answers (here drawn at random among the three), the root reported, certain or likeliest,
    is never a step whose standing answer says it was given a wrong input."""
    analysis, _root, _wrong = _world(*w)
    rng = random.Random(seed)
    search = GuidedSearch(analysis, recheck=recheck)
    while (sid := search.next_question()) is not None:
        pick = rng.randrange(3)
        search.answer(Answer(sid, pick == 0, "person", admissible=None if pick == 0 else pick == 1))
    g = search.result()
    if g.root is not None:
        assert search.admissible(search.index[g.root]) is not False
    if g.certain:
        i = search.index[g.root]  # type: ignore[index]
        assert search.verdict(i) is False and all(search.verdict(p) is True for p in search.parents[i])


def _agent_run() -> tuple[Analysis, set[str]]:
    """read -> agent (fetch, then decide inside it) -> submit (fails); ``decide`` is the root."""
    steps = (
        Step("r", "read", "tool", output={"q": "x"}, start_ns=0, end_ns=1),
        Step("ag", "planner", "agent", output={"plan": "bad"}, deps=(Dependency("r"),), start_ns=2, end_ns=9),
        Step("x", "fetch", "tool", parent_id="ag", output={"rows": 3}, start_ns=3, end_ns=4),
        Step("y", "decide", "llm", parent_id="ag", output={"plan": "bad"}, deps=(Dependency("x"),), start_ns=5,
             end_ns=6),
        Step("f", "submit", "tool", output="rejected", deps=(Dependency("ag"),), start_ns=10, end_ns=11),
    )
    run = Run("run1", "agent", 0, 12, "failure", "rejected", steps=steps)
    failures = (Failure("f", "outcome", "rejected", "x", "final"),)
    loc = Localization([Candidate("ag", 0.9, (), ()), Candidate("r", 0.3, (), ())], SearchStats(5, 5, 0.0),
                       failures=failures, ranking=("ag", "r"))
    return Analysis(run, failures, loc), {"ag", "y", "f"}


def test_a_container_answered_erroneous_is_searched_among_its_children() -> None:
    """An agent answered erroneous vouches for what it was given, not for the steps inside it: the search
    goes on into its children and proves the one that went wrong; the agent's input is never asked."""
    analysis, wrong = _agent_run()
    search = GuidedSearch(analysis, audit=0)
    search.answer(Answer("ag", False, "person", admissible=True))
    assert not search.result().certain
    assert search.verdict(search.index["r"]) is True
    assert search.verdict(search.index["y"]) is None
    oracle = _three("y", wrong, frozenset({"ag"}))
    g = guided_search(analysis, oracle, answers=[Answer("ag", False, "person", admissible=True)], audit=0)
    assert (g.root, g.certain) == ("y", True)
    assert "r" not in oracle.asked  # type: ignore[attr-defined]


def test_an_inadmissible_step_whose_recorded_inputs_are_all_right_sends_the_search_to_earlier_steps() -> None:
    """A step given a wrong input while every recorded input is right read something the recording missed:
    its root is sought among the steps that ran before it (here one no edge ties to it)."""
    steps = (
        Step("a", "load", "tool", output=1, start_ns=0, end_ns=1),
        Step("c", "lookup", "tool", output=2, start_ns=2, end_ns=3),
        Step("b", "compute", "other", output=3, deps=(Dependency("a"),), start_ns=4, end_ns=5),
        Step("f", "submit", "tool", output=4, deps=(Dependency("b"),), start_ns=6, end_ns=7),
    )
    run = Run("run1", "gap", 0, 8, "failure", "wrong", steps=steps)
    failures = (Failure("f", "outcome", "wrong", "x", "final"),)
    loc = Localization([Candidate("b", 0.9, (), ())], SearchStats(4, 4, 0.0), failures=failures, ranking=("b",))
    oracle = _three("c", {"c", "b", "f"})
    g = guided_search(Analysis(run, failures, loc), oracle)
    assert (g.root, g.certain) == ("c", True)
    two = guided_search(Analysis(run, failures, loc), _truthful({"c", "b", "f"}), audit=0)
    assert (two.root, two.certain) == ("b", True)  # two-valued, the recorded graph proves the wrong step


def test_a_two_valued_oracle_asks_exactly_the_questions_it_asked_before_three_valued_answers() -> None:
    """The question sequence of two-valued answers on fixed random DAGs, recorded on main at b9e3aac
    (before three-valued answers), is unchanged for every strategy."""
    before = {
        (7, 30, "prior"): "15,02,04,01,00", (7, 30, "top-down"): "15,04,02,01,00",
        (1234, 40, "prior"): "04,00,05,31,06", (1234, 40, "linear"): "31,24,06,05,04",
        (99, 25, "prior"): "05,02,06,08,03,04,09", (99, 25, "top-down"): "09,08,03,02",
    }
    for (seed, n, strategy), sequence in before.items():
        analysis, _root, wrong = _world(seed, n)
        search = GuidedSearch(analysis, strategy=strategy)
        asked = []
        while (sid := search.next_question()) is not None:
            asked.append(sid[1:])
            search.answer(Answer(sid, sid not in wrong, "person"))
        assert ",".join(asked) == sequence, (seed, n, strategy)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds, st.integers(0, 10**6))
def test_with_recheck_a_root_proven_by_an_erroneous_answer_was_asked_twice(w: tuple[int, int], seed: int) -> None:
    """With a noisy three-valued oracle and ``recheck``, a certain root rests on its erroneous answer given
    at least twice (a flipped one is outvoted or leaves the root unproven), and all its inputs stand correct."""
    analysis, root, wrong = _world(*w)
    rng = random.Random(seed)
    truth = _three(root, wrong)

    def noisy(step: Step, run: Run) -> Answer:
        a = truth(step, run)
        if rng.random() < 0.2:
            return Answer(a.step_id, not a.correct, "person", admissible=None if a.correct is False else rng.random() < 0.5)
        return a

    search = GuidedSearch(analysis, recheck=True)
    while (sid := search.next_question()) is not None:
        search.answer(noisy(search.graph.steps[sid], analysis.run))
    g = search.result()
    if g.certain:
        i = search.index[g.root]  # type: ignore[index]
        assert all(search.verdict(p) is True for p in search.parents[i])
        if search.admissible(i):
            assert sum(1 for a in search.votes[i] if a.correct is False and a.admissible) >= 2


def test_a_vouched_input_is_taken_back_when_the_answer_that_vouched_is_outvoted() -> None:
    """Vouching holds only while the erroneous answer stands: outvoted by two correct answers, its input is unknown again."""
    v = Verdicts([[], [0]], None, lambda p: (), [0, 1])
    v.add(1, Answer("b", False, "person", admissible=True))
    assert v.verdict(0) is True and v.admissible(1) is True
    v.add(1, Answer("b", True, "person"))
    v.add(1, Answer("b", True, "person"))
    assert v.verdict(0) is None and v.admissible(1) is None


def test_an_input_answered_wrong_is_not_overridden_by_a_consumer_answered_erroneous() -> None:
    """An erroneous answer vouches only for inputs nobody answered: an input answered wrong stays wrong."""
    v = Verdicts([[], [0]], None, lambda p: (), [0, 1])
    v.add(0, Answer("a", False, "person"))
    v.add(1, Answer("b", False, "person", admissible=True))
    assert v.verdict(0) is False


def test_the_result_says_which_answer_proved_the_root_and_how() -> None:
    """The JSON keeps what an answer said of the inputs, the text says the step erred for what it was given,
    and the inputs it vouched for are listed as implied, naming the step whose answer did."""
    import io

    from rich.console import Console

    from trajdebug.report.guided import guided_lines
    from trajdebug.report.question import render_guided

    analysis, _ = _chain()
    g = guided_search(analysis, lambda s, r: None, answers=[Answer("c2", False, "person", admissible=True)], audit=0)
    doc = g.to_dict()
    assert doc["certain"] and doc["questions"][0]["admissible"] is True
    assert [(i["step"], "c2" in i["reason"]) for i in doc["implied"]] == [("c1", True)]
    assert any("c2 -> wrong (its own fault)" in line for line in guided_lines(g))
    out = io.StringIO()
    render_guided(g, analysis.run, Console(file=out, width=200))
    assert "answered wrong for the inputs it was given" in out.getvalue()


def _mk(steps: tuple[Step, ...], fail: str) -> Analysis:
    run = Run("run1", "t", 0, 99, "failure", steps=steps)
    loc = Localization([], SearchStats(len(steps), len(steps), 0.0), failures=(Failure(fail, "outcome", "x", "x", "final"),))
    return Analysis(run, loc.failures, loc)


def _boxes() -> Analysis:
    """read_settings gives boxes of 0 jars (the root); pack_boxes is right for what it was given; ship fails."""
    steps = (
        Step("cfg", "read_settings", "tool", output={"per_box": 0, "jars": 12}, start_ns=1, end_ns=2),
        Step("pack", "pack_boxes", "other", input={"per_box": 0, "jars": 12}, output=[], deps=(Dependency("cfg"),),
             start_ns=3, end_ns=4),
        Step("f", "ship", "other", input=[], status="error", deps=(Dependency("pack"),), start_ns=5, end_ns=6),
    )
    return _mk(steps, "f")


def test_a_failing_relative_check_proves_no_root_and_vouches_for_no_input() -> None:
    """A check judging a step's output against its recorded input fails when the input was wrong too: alone it
    leaves the step the likeliest, not certain, and marks none of its inputs correct."""
    from trajdebug.analysis import ExpectationOracle

    check = ExpectationOracle({"pack_boxes": lambda boxes, given: len(boxes) * given["per_box"] >= given["jars"]})
    for audit in (0, None):
        g = guided_search(_boxes(), check, audit=audit)
        assert not g.certain and g.implied == ()
        assert all(a.admissible is None for a in g.questions)


def test_a_stored_check_answer_that_says_erroneous_is_read_as_plain_wrong() -> None:
    """An answer of a check (``check:...``) stored with ``admissible`` is read two-valued: it vouches for nothing."""
    search = GuidedSearch(_boxes(), [Answer("pack", False, "check:pack_boxes", admissible=True)], audit=0)
    assert search.admissible(search.index["pack"]) is None
    assert search.verdict(search.index["cfg"]) is None and not search.result().certain


def test_a_proof_on_an_oracles_erroneous_answer_is_audited_and_on_a_persons_is_not() -> None:
    """A step reading its rate from state the recording missed: an oracle's erroneous answer about it leaves the
    audit on, which finds the step that wrote the rate; a person's erroneous answer is taken as it is."""
    steps = (
        Step("rates", "load_tariffs", "tool", output={"rate": 9.0}, start_ns=1, end_ns=2),
        Step("x", "quote", "other", input={"units": 10}, output={"total": 90.0}, start_ns=3, end_ns=4),
        Step("f", "invoice", "other", input={"total": 90.0}, status="error", deps=(Dependency("x"),), start_ns=5, end_ns=6),
    )
    wrong = {"rates", "x", "f"}

    def oracle(by: str):  # type: ignore[no-untyped-def]
        def answer(step: Step, run: Run) -> Answer:
            if step.step_id == "x":
                return Answer("x", False, by, admissible=True)
            return Answer(step.step_id, step.step_id not in wrong, "person")
        return answer

    g = guided_search(_mk(steps, "f"), oracle("oracle:spec"))
    assert (g.root, g.certain, g.audited) == ("rates", True, ("rates",))
    g = guided_search(_mk(steps, "f"), oracle("person"))
    assert (g.root, g.certain, g.audited) == ("x", True, ())


def _convert(starts: tuple[int, int, int]) -> Analysis:
    steps = (
        Step("c0", "fetch", "tool", output=1, start_ns=starts[0], end_ns=starts[0]),
        Step("c1", "convert", "other", output=2, deps=(Dependency("c0"),), start_ns=starts[1], end_ns=starts[1]),
        Step("c2", "check", "other", output=None, status="error", deps=(Dependency("c1"),), start_ns=starts[2],
             end_ns=starts[2]),
    )
    return _mk(steps, "c2")


def test_an_inadmissible_step_never_makes_its_own_consumer_the_certain_root_whatever_the_clock() -> None:
    """convert given a wrong input no recorded step produced, fetch right: with distinct, coarse or no start
    times the answers admit no root, the failure consuming convert is not proven, and the conflict's two
    sides are the failure and the step whose answer contradicts it (never one step against itself)."""
    for starts in ((1, 2, 3), (1, 2, 2), (0, 0, 0)):
        search = GuidedSearch(_convert(starts))
        search.answer(Answer("c1", False, "person", admissible=False))
        search.answer(Answer("c0", True, "person"))
        g = search.result()
        assert not g.certain, starts
        assert g.conflict == ("c2", "c1"), starts


def test_a_failure_enclosing_a_step_answered_inadmissible_is_not_proven_while_that_input_stands_wrong() -> None:
    """An agent step (the failure) encloses load and compute and consumes compute: compute answered inadmissible
    and load correct leave no root the answers prove; the agent is not certain."""
    steps = (
        Step("F", "assistant", "agent", output={"x": 1}, status="error", start_ns=0, end_ns=9, deps=(Dependency("B"),)),
        Step("A", "load", "tool", parent_id="F", output=5, start_ns=1, end_ns=2),
        Step("B", "compute", "other", parent_id="F", output=7, start_ns=3, end_ns=4),
    )
    for audit in (0, None):
        search = GuidedSearch(_mk(steps, "F"), audit=audit)
        search.answer(Answer("B", False, "person", admissible=False))
        search.answer(Answer("A", True, "person"))
        assert not search.result().certain


def test_answers_about_the_failure_from_two_sources_list_what_the_standing_one_vouched() -> None:
    """A person's plain wrong and an oracle's erroneous about the failure: the person's stands (nothing vouched);
    two oracles of one trust, the erroneous one vouches and says so."""
    analysis, _ = _chain()
    g = GuidedSearch(analysis, [Answer("c5", False, "person"), Answer("c5", False, "oracle:x", admissible=True)],
                     audit=0).result()
    assert g.implied == ()
    g = GuidedSearch(analysis, [Answer("c5", False, "oracle:y"), Answer("c5", False, "oracle:x", admissible=True)],
                     audit=0).result()
    assert [(a.step_id, a.by) for a in g.implied] == [("c4", "oracle:x")]


def _kiln() -> tuple[Analysis, set[str]]:
    """A firing node (a container) calls set_kiln with the wrong temperature it worked out itself; set_kiln's
    recorded inputs (the glaze lookup) are right; the batch check fails on what the firing node returned."""
    steps = (
        Step("g", "glaze_lookup", "tool", output={"glaze": "celadon", "cone": 10}, start_ns=0, end_ns=1),
        Step("n", "firing", "agent", output={"fired": {"cone": 6}}, deps=(Dependency("g"),), start_ns=2, end_ns=9),
        Step("k", "set_kiln", "tool", parent_id="n", input={"cone": 6}, output={"cone": 6, "ok": True},
             deps=(Dependency("g"),), start_ns=3, end_ns=4),
        Step("f", "batch_check", "other", output=None, status="error", deps=(Dependency("n"),), start_ns=10, end_ns=11),
    )
    failures = (Failure("f", "outcome", "x", "x", "final"),)
    loc = Localization([Candidate("k", 0.9, (), ()), Candidate("g", 0.3, (), ())], SearchStats(4, 4, 0.0),
                       failures=failures, ranking=("k", "g"))
    return Analysis(Run("run1", "t", 0, 12, "failure", steps=steps), failures, loc), {"n", "k", "f"}


def test_a_container_that_called_a_step_with_a_wrong_input_is_its_likeliest_root_never_a_certain_one() -> None:
    """A step answered inadmissible whose recorded inputs are right was handed its wrong input unrecorded; the
    container that called it (though it consumed its answer) is among what may have fed it and, answered
    erroneous, ends the search as the likeliest root, named with that step, not certain: the recording cannot
    show that nothing else fed it.  The step is not asked again for it."""
    analysis, wrong = _kiln()
    oracle = _three("n", wrong)
    g = guided_search(analysis, oracle, timeout=None)  # no clock: a loaded machine must not turn answers into unknowns
    assert (g.root, g.certain, g.conflict, g.misled) == ("n", False, (), ("k",))
    assert oracle.asked.count("k") == 1  # type: ignore[attr-defined]
    assert g.to_dict()["misled"] == ["k"]


def test_a_container_named_through_a_misled_step_gives_way_when_the_step_is_answered_erroneous_after_all() -> None:
    """The step's inadmissible answer is what points at its container: answers calling it erroneous that outvote
    it prove the step itself, and the container is no longer named through it."""
    analysis, _ = _kiln()
    search = GuidedSearch(analysis)
    search.answer(Answer("k", False, "person", admissible=False))
    search.answer(Answer("g", True, "person"))
    search.answer(Answer("n", False, "person", admissible=True))
    g = search.result()
    assert (g.root, g.certain, g.misled) == ("n", False, ("k",))
    search.answer(Answer("k", False, "person", admissible=True))
    search.answer(Answer("k", False, "person", admissible=True))
    g = search.result()
    assert (g.root, g.certain, g.misled) == ("k", True, ())


def _nested_kiln(reads: tuple[str, ...] = ("o",)) -> Analysis:
    """The kiln run with the firing node inside a studio agent (a container with an output of its own); the batch
    check reads ``reads``."""
    analysis, _ = _kiln()
    outer = Step("o", "studio", "agent", output={"report": "fired"}, deps=(Dependency("n"),), start_ns=1, end_ns=9)
    steps = tuple(dataclasses.replace(s, parent_id="o") if s.step_id == "n" else s for s in analysis.run.steps)
    steps = (*steps[:1], outer, *steps[1:])
    f = dataclasses.replace(steps[-1], deps=tuple(Dependency(r) for r in reads))
    run = dataclasses.replace(analysis.run, steps=(*steps[:-1], f))
    return Analysis(run, analysis.failures, analysis.localization)


def test_of_nested_containers_answered_erroneous_none_is_certain_for_the_outer_one_may_have_fed_the_step() -> None:
    """A container around the caller may have written what the step inside read before it called the caller
    (shared state): with the whole nest answered erroneous and the step inadmissible, no root is certain."""
    _, wrong = _kiln()
    g = guided_search(_nested_kiln(), _three("n", wrong | {"o"}, frozenset({"o"})), timeout=None)
    assert g.root in {"n", "o"} and not g.certain


def test_of_nested_containers_the_caller_is_the_likeliest_root_once_the_outer_one_is_answered_correct() -> None:
    """The outer container cleared, the caller is the only node left that may have handed the step its wrong
    input: it is the likeliest root, named with the step, still not certain."""
    _, wrong = _kiln()
    g = guided_search(_nested_kiln(("n", "o")), _three("n", wrong), timeout=None)
    assert (g.root, g.certain, g.misled) == ("n", False, ("k",))


def _diamond() -> Analysis:
    """tide_table feeds both berth_plan and pilot_plan, and both feed the failing harbour_schedule."""
    steps = (
        Step("r", "tide_table", "tool", output=3.1, start_ns=1, end_ns=2),
        Step("x", "berth_plan", "other", output=7, deps=(Dependency("r"),), start_ns=3, end_ns=4),
        Step("y", "pilot_plan", "other", output=8, deps=(Dependency("r"),), start_ns=5, end_ns=6),
        Step("f", "harbour_schedule", "other", output=None, status="error", deps=(Dependency("x"), Dependency("y")),
             start_ns=7, end_ns=8),
    )
    return _mk(steps, "f")


def test_with_recheck_a_conflict_that_stands_re_asks_the_answer_that_cleared_the_shared_input() -> None:
    """Both plans wrong and the tide table they share answered correct admit no root; once both plans stand
    wrong when asked again, the tide table is asked again (one of those answers must be wrong), and a lead
    of two wrong answers proves it."""
    search = GuidedSearch(_diamond(), recheck=True, audit=0)
    for sid, ok in (("x", False), ("y", False), ("r", True)):
        search.answer(Answer(sid, ok, "model:m"))
    assert search.result().conflict
    for _ in range(2):
        sid = search.next_question()
        assert sid in ("x", "y")
        search.answer(Answer(sid, False, "model:m"))
    assert search.next_question() == "r"
    search.answer(Answer("r", False, "model:m"))
    assert search.next_question() == "r"  # one right, one wrong: asked until a side leads by two
    search.answer(Answer("r", False, "model:m"))
    g = search.result()
    assert (g.root, g.certain) == ("r", True)


def test_without_recheck_a_conflict_that_stands_after_both_sides_were_asked_again_is_reported() -> None:
    """Without recheck the answers are taken as true: both sides asked once more, the conflict is the result."""
    search = GuidedSearch(_diamond(), audit=0)
    for sid, ok in (("x", False), ("y", False), ("r", True)):
        search.answer(Answer(sid, ok, "model:m"))
    while (sid := search.next_question()) is not None:
        assert sid in ("x", "y")
        search.answer(Answer(sid, False, "model:m"))
    assert search.result().conflict


def test_with_recheck_an_input_only_vouched_for_is_asked_as_a_first_question_and_its_answer_rechecked() -> None:
    """With recheck, proving the failure asks its never-asked input (vouched for by another step's erroneous
    answer): that first answer is not a recheck, so a flipped "wrong, its own fault" is asked again and
    outvoted, and the search goes on to the true root instead of ending certain on one answer."""
    steps = (
        Step("w", "weigh_flour", "tool", output={"grams": 500}, start_ns=1, end_ns=2),
        Step("m", "mix_dough", "other", output={"water_ml": 900}, deps=(Dependency("w"),), start_ns=3, end_ns=4),
        Step("p", "proof_dough", "other", output={"minutes": 95}, deps=(Dependency("m"),), start_ns=5, end_ns=6),
        Step("f", "bake", "other", output=None, status="error", deps=(Dependency("w"), Dependency("p")),
             start_ns=7, end_ns=8),
    )
    truth = {"w": (True, None), "m": (False, True), "p": (False, False)}
    search = GuidedSearch(_mk(steps, "f"), recheck=True, audit=0)
    search.answer(Answer("m", False, "person", admissible=True))  # vouches for w
    search.answer(Answer("p", True, "person"))  # flipped: leaves only the failure
    assert search.next_question() == "w"
    search.answer(Answer("w", False, "person", admissible=True))  # flipped
    asked = []
    while (sid := search.next_question()) is not None:
        asked.append(sid)
        correct, admissible = truth[sid]
        search.answer(Answer(sid, correct, "person", admissible=admissible))
    g = search.result()
    assert (g.root, g.certain) == ("m", True) and asked[0] == "w"


def test_split_answers_are_settled_by_a_lead_of_two_with_recheck_and_by_a_majority_of_three_without() -> None:
    """Right, wrong, wrong about one step: without recheck the majority stands; with recheck it is asked a
    fourth time, and a fifth answer at most settles a tie."""
    for recheck, more in ((False, False), (True, True)):
        search = GuidedSearch(_diamond(), recheck=recheck, audit=0)
        for ok in (True, False, False):
            search.answer(Answer("x", ok, "model:m"))
        assert (search.next_question() == "x") is more
    search = GuidedSearch(_diamond(), recheck=True, audit=0)
    for ok in (True, False, True, False, True):
        search.answer(Answer("x", ok, "model:m"))
    assert search.verdict(search.index["x"]) is True and search.next_question() != "x"


def test_a_steps_tally_counts_every_answer_and_the_most_trusted_sources_answers_by_kind() -> None:
    """The counts the report page combines its own answers with: all answers given (unknowns and less trusted
    ones too), the top source's trust, and of its answers correct, erroneous, inadmissible, plain wrong and
    erroneous on a person's word."""
    v = Verdicts([[], [0]], 1, lambda p: (), [0, 1])
    for a in (Answer("x", True, "model:m"), Answer("x", None, "person"), Answer("x", False, "person", admissible=True),
              Answer("x", False, "person:ann", admissible=False), Answer("x", True, "person"),
              Answer("x", False, "person")):
        v.add(0, a)
    assert v.tally(0) == [6, 5, 1, 1, 1, 1, 1]
    assert v.tally(1) == [0, 0, 0, 0, 0, 0, 0]


# -- since ask45b: a step the search never asks may have fed the child (a container is never certain through it) ---


def _greenhouse(before: tuple[Step, ...]) -> Analysis:
    """A watering node (a container) calls set_valve, whose recorded input (the soil lookup) is right; the
    yield check fails on what the watering node returned; ``before`` ran first, outside the failure's slice."""
    steps = (
        Step("s", "soil_lookup", "tool", output={"bed": "b4", "litres": 12}, start_ns=0, end_ns=1),
        *before,
        Step("w", "watering", "agent", output={"watered": {"litres": 40}}, deps=(Dependency("s"),), start_ns=20, end_ns=29),
        Step("v", "set_valve", "tool", parent_id="w", input={"litres": 40}, output={"litres": 40, "ok": True},
             deps=(Dependency("s"),), start_ns=21, end_ns=22),
        Step("y", "yield_check", "other", output=None, status="error", deps=(Dependency("w"),), start_ns=30, end_ns=31),
    )
    return _mk(steps, "y")


def _said(labels: dict[str, str]):  # type: ignore[no-untyped-def]
    """A person answering each step as labelled ('err' erroneous, 'inad' inadmissible), the rest correct."""
    asked: list[str] = []

    def oracle(step: Step, run: Run) -> Answer:
        asked.append(step.step_id)
        lab = labels.get(step.step_id)
        return Answer(step.step_id, lab is None, "person", admissible=None if lab is None else lab == "err")

    oracle.asked = asked  # type: ignore[attr-defined]
    return oracle


_PLANNER = (
    Step("p", "irrigation_planner", "agent", output={"planned": True}, start_ns=2, end_ns=9),
    Step("p1", "forecast_read", "tool", parent_id="p", output={"rain_mm": 0}, start_ns=3, end_ns=4),
)


def test_a_container_whose_child_a_container_outside_the_slice_may_have_fed_is_the_likeliest_root_not_a_certain_one() -> None:
    """A planner outside the failure's slice (a container: never asked) may have written the valve's wrong
    amount to shared state: the watering node answered erroneous and the valve inadmissible leave the watering
    node the likeliest root, not a certain one, with or without the audit, and the valve is not asked again."""
    for audit in (None, 0):
        oracle = _said({"p": "err", "w": "err", "v": "inad"})
        g = guided_search(_greenhouse(_PLANNER), oracle, timeout=None, **({} if audit is None else {"audit": audit}))
        assert (g.root, g.certain, g.conflict) == ("w", False, ()), audit
        assert oracle.asked.count("v") == 1  # type: ignore[attr-defined]


def test_without_the_audit_a_container_whose_child_a_leaf_outside_the_slice_may_have_fed_is_not_certain() -> None:
    """With no audit the steps outside the slice are not asked: a memo written before the watering node ran may
    have fed the valve, so the watering node is the likeliest root only; with the audit the memo is asked, and,
    answered erroneous, it is the certain root."""
    memo = (Step("m", "memo_write", "tool", output={"saved": True}, start_ns=2, end_ns=9),)
    g = guided_search(_greenhouse(memo), _said({"m": "err", "w": "err", "v": "inad"}), timeout=None, audit=0)
    assert (g.root, g.certain) == ("w", False)
    g = guided_search(_greenhouse(memo), _said({"m": "err", "w": "err", "v": "inad"}), timeout=None)
    assert (g.root, g.certain) == ("m", True)


def test_a_hollow_turn_inside_the_container_whose_steps_were_cleared_leaves_the_container_the_likeliest_root() -> None:
    """A turn with no output of its own offers nothing to judge: its steps stand in for it, and once they are
    cleared the watering node answered erroneous, whose valve was given a wrong input, is the likeliest root."""
    analysis = _greenhouse(())
    turn = (Step("t", "turn", "agent", parent_id="w", output=None, start_ns=20, end_ns=21),
            Step("t1", "think", "llm", parent_id="t", output="open the valve for 40 litres", start_ns=20, end_ns=21))
    steps = (*analysis.run.steps[:2], *turn, *analysis.run.steps[2:])
    g = guided_search(_mk(steps, "y"), _said({"w": "err", "v": "inad"}), timeout=None)
    assert (g.root, g.certain, g.misled) == ("w", False, ("v",))


def test_the_terminal_names_the_child_that_points_at_its_container_and_says_it_is_not_certain() -> None:
    """A container named through a child it handed a wrong input is said to be the likeliest root for that
    reason, not certain (never for answers saying its inputs were right), and the child's answer is listed."""
    import io

    from rich.console import Console

    from trajdebug.report.question import proving, render_guided

    g = guided_search(_greenhouse(()), _said({"w": "err", "v": "inad"}), timeout=None)
    out = io.StringIO()
    g_run = _greenhouse(()).run
    render_guided(g, g_run, Console(file=out, width=200))
    text = out.getvalue()
    assert not g.certain and "likeliest, not certain: it called set_valve" in text and "given a wrong input" in text, text
    assert "answered wrong for the inputs it was given" not in text and "certain:" not in text.replace("not certain:", "")
    assert [a.step_id for a in proving(g, g_run)].count("v") == 1


# -- since ask46: every container around the child, and every step that ran with it, may have fed it -------------------


def _garden(reads: str, *extra: Step, clock: bool = True) -> Analysis:
    """The greenhouse run with the watering node inside a garden agent (a container with an output of its own,
    which may have written the valve's amount to shared state before it called the watering node); the yield
    check reads ``reads``; ``extra`` steps beside them; without ``clock`` every step starts at 0 and records no end."""
    agent = Step("a", "garden_agent", "agent", output={"report": "beds watered"}, start_ns=10, end_ns=29)
    steps = [dataclasses.replace(s, parent_id="a") if s.step_id == "w" else s for s in _greenhouse(()).run.steps]
    steps = [dataclasses.replace(s, deps=(Dependency(reads),)) if s.step_id == "y" else s for s in steps]
    steps = [*steps[:1], agent, *steps[1:], *extra]
    if not clock:
        steps = [dataclasses.replace(s, start_ns=0, end_ns=None) for s in steps]
    return _mk(tuple(steps), "y")


def test_a_container_is_not_certain_when_the_agent_around_it_outside_the_slice_may_have_fed_its_child() -> None:
    """The yield check reads the watering node, so the garden agent around it is no node (it consumed the node's
    answer): answered as a person would (the agent and the watering node erroneous, the valve inadmissible), the
    watering node is the likeliest root, never a certain one, with or without the audit."""
    for audit in (None, 0):
        g = guided_search(_garden("w"), _said({"a": "err", "w": "err", "v": "inad"}), timeout=None,
                          **({} if audit is None else {"audit": audit}))
        assert (g.root, g.certain) == ("w", False), audit


def test_an_agent_around_the_container_that_the_failure_reads_stays_a_candidate_beside_it() -> None:
    """The yield check reads the garden agent, a node: the valve inadmissible keeps the agent among the steps that
    may have fed it, so with both answered erroneous neither is certain; the agent answered inadmissible is no root,
    and the watering node is the likeliest root, named with the valve."""
    oracle = _said({"a": "err", "w": "err", "v": "inad"})
    g = guided_search(_garden("a"), oracle, timeout=None)
    assert g.root in {"a", "w"} and not g.certain and "a" in oracle.asked  # type: ignore[attr-defined]
    g = guided_search(_garden("a"), _said({"a": "inad", "w": "err", "v": "inad"}), timeout=None)
    assert (g.root, g.certain, g.misled) == ("w", False, ("v",))


def test_a_step_that_started_while_the_child_ran_may_have_fed_it() -> None:
    """A memo written by a step that started after the valve started and before it ended (a concurrent writer):
    without the audit it is no node and the watering node is not certain; with it, the memo is asked and, answered
    erroneous, is the certain root."""
    run = _greenhouse(()).run
    steps = [dataclasses.replace(s, end_ns=24) if s.step_id == "v" else s for s in run.steps]
    memo = Step("m", "memo_write", "tool", output={"saved": True}, start_ns=22, end_ns=23)
    analysis = _mk((*steps, memo), "y")
    labels = {"m": "err", "w": "err", "v": "inad"}
    g = guided_search(analysis, _said(labels), timeout=None, audit=0)
    assert (g.root, g.certain) == ("w", False)
    g = guided_search(analysis, _said(labels), timeout=None)
    assert (g.root, g.certain) == ("m", True)


def test_a_session_around_the_whole_run_may_have_fed_the_child_so_no_container_is_proven_through_it() -> None:
    """A session span with an output of its own encloses every step, the failure too (it is no node: it consumed
    the failure): it may have set the valve's amount, so the watering node is not certain."""
    session = Step("x", "session", "agent", output={"status": "failed"}, start_ns=0, end_ns=40)
    steps = tuple(s if s.parent_id else dataclasses.replace(s, parent_id="x") for s in _greenhouse(()).run.steps)
    g = guided_search(_mk((session, *steps), "y"), _said({"w": "err", "v": "inad"}), timeout=None)
    assert (g.root, g.certain) == ("w", False)


def test_with_no_clock_the_agent_around_the_container_still_keeps_it_from_proof() -> None:
    """Every step recorded at time 0 with no end (an importer with no times): the garden agent around the watering
    node may still have fed the valve, and the watering node is not certain."""
    g = guided_search(_garden("w", clock=False), _said({"a": "err", "w": "err", "v": "inad"}), timeout=None)
    assert (g.root, g.certain) == ("w", False)


# -- since ask46b: no answer proves a container through a child it called (rev46a's shapes) -------------------------


def test_a_container_is_not_certain_when_a_consumer_already_running_before_its_child_may_have_fed_the_child() -> None:
    """A scheduler that started before the watering node, may have written the valve's amount to shared state,
    then awaited the watering node's answer (it consumed it, the yield check reads it): answered as a person would
    (the scheduler and the valve inadmissible, the watering node erroneous), the watering node is the likeliest
    root, never a certain one, with or without recheck."""
    sched = Step("c", "bed_scheduler", "agent", output={"summary": "bed 4 watered"}, deps=(Dependency("w"),),
                 start_ns=10, end_ns=35)
    steps = [s if s.step_id != "y" else dataclasses.replace(s, deps=(Dependency("c"),), start_ns=40, end_ns=41)
             for s in _greenhouse(()).run.steps]
    for recheck in (False, True):
        oracle = _said({"c": "inad", "w": "err", "v": "inad"})
        g = guided_search(_mk((*steps, sched), "y"), oracle, timeout=None, recheck=recheck)
        assert (g.root, g.certain) == ("w", False), recheck
        assert g.misled == ("v",)


def test_a_container_whose_parent_span_was_lost_is_not_certain_through_its_child() -> None:
    """The watering node names a parent span the run does not hold (a truncated or imported trace): what that span
    wrote may have fed the valve, and nothing in the run can clear it, so the watering node answered erroneous and
    the valve inadmissible leave it the likeliest root, not a certain one."""
    steps = tuple(dataclasses.replace(s, parent_id="lost_span") if s.step_id == "w" else s for s in _greenhouse(()).run.steps)
    for audit in (None, 0):
        g = guided_search(_mk(steps, "y"), _said({"w": "err", "v": "inad"}), timeout=None,
                          **({} if audit is None else {"audit": audit}))
        assert (g.root, g.certain) == ("w", False), audit
        assert g.misled == ("v",)
