"""The ask benchmark: an oracle simulated from a fault-free twin, and the guided search it drives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks import ask  # noqa: E402
from benchmarks.faults import Case  # noqa: E402

from trajdebug.core.model import Run, Step  # noqa: E402


def test_the_simulated_oracle_is_wrong_only_where_the_output_differs_at_or_after_the_root() -> None:
    bad = Run("b", "a", steps=(Step("1", "x", output=9), Step("2", "y", output=1), Step("3", "z", output=5)))
    twin = Run("t", "a", steps=(Step("4", "x", output=0), Step("5", "y", output=2), Step("6", "z", output=5)))
    oracle = ask.control_oracle(bad, twin, "2")
    assert [oracle(s, bad) for s in bad.steps] == [True, False, True]


def test_flipping_every_answer_inverts_the_oracle() -> None:
    bad = Run("b", "a", steps=(Step("1", "x", output=1), Step("2", "y", output=1)))
    twin = Run("t", "a", steps=(Step("3", "x", output=1), Step("4", "y", output=2)))
    oracle = ask.control_oracle(bad, twin, "2", flip=1.0)
    assert [oracle(s, bad) for s in bad.steps] == [False, True]


@pytest.mark.parametrize(("workflow", "fault"), [("sql-report", "json-repair-drop"), ("rag-qa", "wrong-branch")])
def test_a_case_with_its_twin_is_solved_by_the_prior_strategy_with_certainty(workflow: str, fault: str) -> None:
    r = ask.run_case(Case(workflow, fault, 0))
    assert r.skipped is None and r.on_graph
    assert r.found["prior"]
    assert r.questions["prior"] <= r.questions["linear"]


def test_the_summary_counts_only_cases_on_the_graph() -> None:
    rows = [
        ask.AskCase("a", 20, True, {"prior": 2, "top-down": 4, "linear": 4},
                    {"prior": True, "top-down": False, "linear": False}, [True], [True], [3]),
        ask.AskCase("b", 20, False, {"prior": 9, "top-down": 9, "linear": 9},
                    {"prior": False, "top-down": False, "linear": False}, [False], [False], [9]),
    ]
    s = ask.summarize(rows)
    assert s["cases"] == 1 and s["prior"]["found_pct"] == 100.0 and s["prior"]["median"] == 2
    assert "| prior |" in "\n".join(ask.render_section({
        "date": "d", "seconds": 1, "quick": True, "suites": {"x": ask._suite(rows)}, "judge": None,
    }))


def test_the_three_valued_oracle_calls_the_root_and_its_container_erroneous_and_later_wrong_steps_inadmissible() -> None:
    """What the two-valued oracle calls wrong is erroneous on the root and what encloses it, inadmissible
    elsewhere; what it calls correct stays correct; flipping every answer never gives the truthful label."""
    bad = Run("b", "a", steps=(Step("1", "x", output=9), Step("0", "agent", output=4),
                               Step("2", "y", output=1, parent_id="0"), Step("3", "z", output=6)))
    twin = Run("t", "a", steps=(Step("4", "x", output=0), Step("8", "agent", output=5),
                                Step("5", "y", output=2, parent_id="8"), Step("6", "z", output=5)))
    truth = ask.control_oracle3(bad, twin, "2")
    said = [truth(s, bad) for s in bad.steps]
    assert [(a.correct, a.admissible) for a in said] == [(True, None), (False, True), (False, True), (False, False)]
    flipped = ask.control_oracle3(bad, twin, "2", flip=1.0)
    assert all((f.correct, f.admissible) != (a.correct, a.admissible) for f, a in zip([flipped(s, bad) for s in bad.steps], said))


def test_the_summary_and_the_printed_lines_keep_the_two_oracles_apart() -> None:
    """A case's three-valued searches are summarised under ``three_valued`` and printed on a line of their own."""
    three = {"questions": {"prior": 1, "top-down": 1, "linear": 1}, "found": {"prior": True, "top-down": True, "linear": True},
             "noisy": [True], "noisy_recheck": [True], "noisy_recheck_questions": [2]}
    rows = [ask.AskCase("a", 20, True, {"prior": 4, "top-down": 4, "linear": 4},
                        {"prior": False, "top-down": False, "linear": False}, [False], [False], [9], three=three)]
    s = ask.summarize(rows)
    assert s["prior"]["median"] == 4 and s["three_valued"]["prior"]["median"] == 1
    lines = ask.guided_lines("suite_x", s)
    assert len(lines) == 2 and "two-valued" in lines[0] and "three-valued" in lines[1]
