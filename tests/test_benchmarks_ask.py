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
