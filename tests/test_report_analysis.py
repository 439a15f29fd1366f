"""The analysis as text (`trajdebug.report.analysis`): how a candidate's path is written."""

from __future__ import annotations

from pathlib import Path

from trajdebug.analysis import Candidate
from trajdebug.core.model import Step
from trajdebug.report.analysis import PATH_SHOWN, _path


def test_a_long_path_through_an_agent_loop_names_its_ends_and_counts_the_turns_between() -> None:
    """A path longer than PATH_SHOWN steps (a tool call, then every later turn of an orchard
    agent's loop) is written as its first three and last four steps with the count left out; a short one whole."""
    names = ["prune_plan", *[f"turn_{i}" for i in range(12)], "orchard_report"]
    steps = {f"s{i}": Step(f"s{i}", n, "other", start_ns=i, end_ns=i + 1) for i, n in enumerate(names)}

    def path(k: int) -> str:
        return _path(Candidate(step_id="s0", score=1.0, reasons=(), path=tuple(f"s{i}" for i in range(k))), steps)

    assert path(PATH_SHOWN) == " → ".join(names[:PATH_SHOWN])
    assert path(14) == "prune_plan → turn_0 → turn_1 → … 7 more … → turn_9 → turn_10 → turn_11 → orchard_report"


def test_an_unsure_verdict_never_advises_the_same_input_passing_run_already_compared(tmp_path: Path) -> None:
    """F8 (nu22): with a passing run of the same input among the references, the unsure verdict's advice names
    that run as compared already and points to ``--ask``; without one it advises recording one."""
    import dataclasses

    from trajdebug.analysis import analyze
    from trajdebug.core.model import Run, Step
    from trajdebug.report.analysis import SETTLE, verdict_note

    def run(rid: str, out: float, outcome: str) -> Run:
        steps = (Step("a", "read", "llm", input={"ask": "rent"}, output={"rent": "1.250"}, start_ns=0, end_ns=1),
                 Step("b", "norm", "other", output=out, start_ns=2, end_ns=3))
        return Run(rid, "flats", 0, 4, outcome, None if outcome == "success" else "empty", steps=steps,
                   metadata={"task": "rent"})

    failed = run("f1", 1.25, "failure")
    same = analyze(failed, references=[run("p1", 1250.0, "success")])
    assert same.same_input == ("p1",)
    unsure = dataclasses.replace(same, verdict="unsure")
    note = verdict_note(unsure) or ""
    assert "p1" in note and "compared already" in note and SETTLE not in note
    alone = dataclasses.replace(analyze(failed), verdict="unsure")
    assert alone.same_input == () and SETTLE in (verdict_note(alone) or "")


def test_after_answers_the_proved_root_and_the_steps_they_ruled_out_are_tagged_so_not_by_the_ranking() -> None:
    """Once a person's answers prove the root, the text tags it "proved root" with no ranker's confidence, and a
    step the answers ruled out is tagged so, never "suspect" beside "cleared by the answers" (nu24, F5: a proved
    root read "confidence 2%")."""
    import dataclasses

    from tests.builders import quote_runs

    from trajdebug.analysis import analyze, guided_search, settled
    from trajdebug.core.model import Answer
    from trajdebug.report.analysis import analysis_lines

    _, bad = quote_runs()
    a = analyze(bad)
    answers = [Answer("5", False, "person", admissible=False), Answer("4", False, "person", admissible=True)]
    after = settled(dataclasses.replace(a, guided=guided_search(a, lambda step, run: None, answers=answers)))
    assert after.verdict == "proved"
    lines = [" ".join(line.split()) for line in analysis_lines(after, width=400)]
    [root] = [line for line in lines if line.startswith("1. ")]
    assert root.startswith("1. pick_rate#") and "proved root" in root and "confidence" not in root
    others = [line for line in lines if line[:2] in {f"{i}." for i in range(2, 10)}]
    assert others and all("ruled out" in line and "suspect" not in line for line in others if "compute_savings#" not in line)
    # The person said compute_savings is wrong: it passed the root's value on, so it is wrong, not the root.
    [passed] = [line for line in others if "compute_savings#" in line]
    assert "wrong, not the root" in passed and "ruled out" not in passed


def test_a_same_input_passing_run_answering_for_guided_tags_no_step_proved_or_ruled_out() -> None:
    """When the answers are a passing run's of the same input (an automatic oracle under ``--guided``), no step
    is tagged "proved root", "ruled out" or "wrong, not the root": its proof is no verdict, so the root it
    singles out is tagged so, with no confidence and never "proved", and a step it cleared is "set aside" with
    the ranking's confidence named as the ranking's, never headed "suspect" (review rev51u H3: a reference
    differing in a timestamp tagged its step "proved root" and the true root "ruled out"; nu25 F10: "proved by
    2 answer(s)" beside "confidence 0%" and "not a proof"; nu26 F8: "suspect, confidence 4%" above "cleared by
    the answers")."""
    import dataclasses

    from tests.builders import quote_runs

    from trajdebug.analysis import ReferenceOracle, analyze, guided_search, settled
    from trajdebug.report.analysis import analysis_lines

    good, bad = quote_runs()
    a = analyze(bad, references=[good])
    after = settled(dataclasses.replace(a, guided=guided_search(a, ReferenceOracle(good))))
    g = after.guided
    assert g is not None and g.certain and {q.by for q in g.questions} == {"reference:good"}
    assert after.verdict != "proved"
    lines = [" ".join(line.split()) for line in analysis_lines(after, width=400)]
    ranked = [line for line in lines if line[:2] in {f"{i}." for i in range(1, 10)}]
    root, *others = ranked
    assert "singled out by the answers, not a person's: no proof" in root and "confidence" not in root
    assert others and all("confidence" in line for line in others)
    aside = [line for line in others if "set aside by the answers, not a person's: no proof" in line]
    assert aside and all("suspect" not in line and "the ranking's confidence" in line for line in aside)
    assert not [line for line in ranked if "proved" in line or "ruled out" in line or "not the root" in line]
    assert not [line for line in lines if "proved by" in line]


def test_the_verdict_under_answers_that_single_out_another_step_names_the_rankings_own_best_candidate() -> None:
    """When the answers move a step the ranking put low to the head of the list, the verdict's confidence is
    the ranking's own best candidate's, named, never read off the step now first (nu25 F10: "likely (the best
    candidate's calibrated confidence is 0%)" above a root the answers single out)."""
    import dataclasses

    from tests.builders import quote_runs

    from trajdebug.analysis import ReferenceOracle, analyze, guided_search, settled
    from trajdebug.report.analysis import verdict_note

    good, bad = quote_runs()
    a = analyze(bad, references=[good])
    after = settled(dataclasses.replace(a, guided=guided_search(a, ReferenceOracle(good))))
    top = a.root_causes[0]
    assert after.root_causes[0].step_id != top.step_id and top.confidence is not None
    note = " ".join((verdict_note(after) or "").split())
    own = f"(the ranking's own best candidate, {top.step_id and bad.step(top.step_id).name}#{top.step_id}, has"
    assert own in note and f"calibrated confidence {top.confidence:.0%};" in note  # the thresholds follow it
    assert note.endswith("single out pick_rate#4, no person's: not a proof")


def test_answers_that_place_candidates_say_so_in_the_json_beside_the_rankings_confidence() -> None:
    """Each candidate of an analysis the answers re-ordered carries ``standing``, the word the reports show in
    place of its confidence (``proved``, ``singled out``, ``ruled out``, ``wrong, not the root``, ``set aside``
    or null); an analysis with no answers has no such key."""
    import dataclasses

    from tests.builders import quote_runs

    from trajdebug.analysis import ReferenceOracle, analyze, guided_search, settled
    from trajdebug.core.model import Answer

    good, bad = quote_runs()
    a = analyze(bad, references=[good])
    assert all("standing" not in c for c in a.to_dict()["root_causes"])
    auto = settled(dataclasses.replace(a, guided=guided_search(a, ReferenceOracle(good)))).to_dict()["root_causes"]
    assert auto[0]["standing"] == "singled out" and {c["standing"] for c in auto[1:]} <= {None, "set aside"}
    answers = [Answer("5", False, "person", admissible=False), Answer("4", False, "person", admissible=True)]
    mine = settled(dataclasses.replace(a, guided=guided_search(a, lambda step, run: None, answers=answers)))
    causes = mine.to_dict()["root_causes"]
    assert causes[0]["standing"] == "proved" and isinstance(causes[0]["confidence"], float)
    assert {c["standing"] for c in causes[1:]} <= {"ruled out", "wrong, not the root"}


def test_the_guided_json_words_its_root_as_the_text_does() -> None:
    """The ``guided`` member of an analysis's JSON says the root's standing as the text does: answers a passing
    run of the same input gave single it out, ``proof`` false, beside ``certain`` (the answers leave one root);
    a person's answers that prove it say ``proved``, ``proof`` true (nu26 F8: "no proof" in the text,
    ``"certain": true`` alone in the JSON)."""
    import dataclasses

    from tests.builders import quote_runs

    from trajdebug.analysis import ReferenceOracle, analyze, guided_search, settled
    from trajdebug.core.model import Answer
    from trajdebug.report.analysis import analysis_lines

    good, bad = quote_runs()
    a = analyze(bad, references=[good])
    auto = settled(dataclasses.replace(a, guided=guided_search(a, ReferenceOracle(good))))
    g = auto.to_dict()["guided"]
    assert g["certain"] is True and g["standing"] == "singled out" and g["proof"] is False
    assert g["by"] == "reference:good"
    text = " ".join(" ".join(analysis_lines(auto, width=400)).split())
    assert "singled out by the answers, not a person's: no proof" in text and "proved root" not in text
    answers = [Answer("5", False, "person", admissible=False), Answer("4", False, "person", admissible=True)]
    mine = settled(dataclasses.replace(a, guided=guided_search(a, lambda step, run: None, answers=answers)))
    g = mine.to_dict()["guided"]
    assert (g["certain"], g["standing"], g["proof"]) == (True, "proved", True)
    assert "proved root" in " ".join(analysis_lines(mine, width=400))


def test_a_path_names_a_step_whose_name_repeats_in_the_run_with_its_id() -> None:
    """Where two steps of the run share a name (a profile fetched for each of two customers), the path names each
    such step with its id, as `show --step` takes it, and a step of a name of its own by name alone (nu32
    finding 8: "crm_lookup → get_profile → compute_invoice" did not say which customer's steps it meant)."""
    names = ["get_profile", "compute_invoice", "get_profile", "compute_invoice", "submit"]
    steps = {f"r7-00000{i}": Step(f"r7-00000{i}", n, "other", start_ns=i, end_ns=i + 1) for i, n in enumerate(names, 1)}
    cand = Candidate(step_id="r7-000003", score=1.0, reasons=(), path=("r7-000003", "r7-000004", "r7-000005"))
    assert _path(cand, steps) == "get_profile#000003 → compute_invoice#000004 → submit"


def test_the_verdict_line_names_the_thresholds_of_the_runs_setting() -> None:
    """The verdict says where its words begin for the run's setting, from the model's thresholds: with references
    ``confident`` from the model's ``confident_references`` (77 % likely beside 78 % confident read as a threshold
    between them, not two words for one confidence: nu62 bug 5); alone, never confident when the model says so;
    ``--json`` carries the same numbers."""
    from trajdebug.analysis import analyze
    from trajdebug.analysis.learned import load_model
    from trajdebug.core.model import Run
    from trajdebug.report.analysis import verdict_note

    def run(rid: str, out: float, outcome: str) -> Run:
        steps = (Step("a", "read", "llm", input={"ask": "rent"}, output={"rent": "1.250"}, start_ns=0, end_ns=1),
                 Step("b", "norm", "other", output=out, start_ns=2, end_ns=3))
        return Run(rid, "flats", 0, 4, outcome, None if outcome == "success" else "empty", steps=steps,
                   metadata={"task": "rent"})

    m = load_model("default")
    assert m is not None
    likely, sure = m.thresholds(references=True)
    with_refs = analyze(run("f1", 1.25, "failure"), references=[run("p1", 1250.0, "success")])
    assert with_refs.verdict_thresholds == (likely, sure)
    assert f"with references: likely from {likely:.0%}, confident from {sure:.1%}" in (verdict_note(with_refs) or "")
    assert with_refs.to_dict()["verdict_thresholds"] == {"likely": likely, "confident": sure}
    alone = analyze(run("f1", 1.25, "failure"))
    assert alone.verdict_thresholds == m.thresholds(references=False)
    words = "never confident" if m.thresholds(references=False)[1] > 1 else "confident from"
    assert f"alone: likely from {likely:.0%}, {words}" in (verdict_note(alone) or "")


def test_ordered_by_the_answers_each_score_is_named_the_evidences_from_before_them() -> None:
    """When the answers order the list, each candidate's number reads "evidence score" and the order line says it
    is the ranking's from before the answers, so a cleared step with a higher score than the proved root above it
    does not read as ranked above it (newuser64 F12: "score 0.518 proved root" over "score 0.620 ruled out")."""
    import dataclasses

    from tests.builders import quote_runs

    from trajdebug.analysis import analyze, guided_search, settled
    from trajdebug.core.model import Answer
    from trajdebug.report.analysis import analysis_lines

    _, bad = quote_runs()
    a = analyze(bad)
    answers = [Answer("5", False, "person", admissible=False), Answer("4", False, "person", admissible=True)]
    after = settled(dataclasses.replace(a, guided=guided_search(a, lambda step, run: None, answers=answers)))
    lines = [" ".join(line.split()) for line in analysis_lines(after, width=400)]
    causes = [line for line in lines if line[:2] in {f"{i}." for i in range(1, 10)}]
    assert causes and all(" evidence score 0." in line or " evidence score 1." in line for line in causes)
    [order] = [line for line in lines if line.startswith("order: ")]
    assert order.endswith("the evidence score beside each is the ranking's, from before the answers")
    before = [" ".join(line.split()) for line in analysis_lines(a, width=400)]
    assert not any("evidence score" in line for line in before)
