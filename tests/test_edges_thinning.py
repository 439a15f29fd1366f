"""Thinning inferred edges within a run-wide budget: exact while the budget lasts, near relays found after."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.analysis.inference import thin_inferred
from trajdebug.core.model import Dependency, Run, Step


@st.composite
def _dags(draw: Any) -> Run:
    n = draw(st.integers(2, 40))
    steps = []
    for i in range(n):
        parents = draw(st.lists(st.integers(0, max(0, i - 1)), max_size=4, unique=True)) if i else []
        deps = tuple(
            Dependency(f"s{p}", origin="inferred" if draw(st.booleans()) else "explicit", confidence=0.8)
            for p in parents
        )
        steps.append(Step(f"s{i}", f"n{i}", "other", deps=deps, start_ns=2 * i + 1, end_ns=2 * i + 2))
    return Run("r", "t", steps=tuple(steps))


@settings(max_examples=300, deadline=None)
@given(_dags())
def test_small_runs_are_thinned_as_without_a_budget(run: Run) -> None:
    """On runs whose walks fit the budget, the thinned edges are those an unbudgeted thinning keeps."""
    assert thin_inferred(run) == thin_inferred(run, budget=10**9)


def _chain_with_long_edges(n: int) -> Run:
    """A chain of state hand-offs where every 10th step also has an inferred edge 400 steps back (a value
    recurring by chance: the chain already joins them)."""
    steps = [Step("s0", "start", "other", start_ns=1, end_ns=2)]
    for i in range(1, n):
        deps = [Dependency(f"s{i - 1}", kind="state", origin="tracked")]
        if i % 10 == 0 and i > 400:
            deps.append(Dependency(f"s{i - 400}", origin="inferred", confidence=0.6))
        steps.append(Step(f"s{i}", f"w{i}", "other", deps=tuple(deps), start_ns=2 * i + 1, end_ns=2 * i + 2))
    return Run("r", "t", steps=tuple(steps))


def test_past_the_budget_long_edges_are_kept_and_near_relays_still_dropped() -> None:
    """With the budget spent, an edge whose path is thousands of steps long is kept, one with a near relay is dropped."""
    run = _chain_with_long_edges(6000)
    last = run.steps[-1]
    near = Step(
        "z",
        "end",
        "other",
        start_ns=10**7,
        end_ns=10**7 + 1,
        deps=(
            Dependency(last.step_id, kind="state", origin="tracked"),
            Dependency(run.steps[-3].step_id, origin="inferred", confidence=0.6),
        ),
    )
    run = Run("r", "t", steps=(*run.steps, near))
    exact = thin_inferred(run, budget=10**9)
    cheap = thin_inferred(run, budget=1)  # (its walks pass the minimum budget half-way)
    assert [d.step_id for d in exact.step("z").deps] == [last.step_id]
    assert [d.step_id for d in cheap.step("z").deps] == [last.step_id]
    far = "s5990"
    assert len(exact.step(far).deps) == 1 and len(cheap.step(far).deps) == 2
