"""The analysis as named stages over one typed state: the order, inserting a stage, the runs kept apart."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from tests.test_localize import sql_agent_run

from trajdebug.analysis import _pipeline
from trajdebug.analysis._pipeline import STAGES, analyze, insert_stage
from trajdebug.analysis._state import AnalysisState, Options


def test_the_stages_run_in_the_documented_order() -> None:
    """STAGES names the analysis from declaring the outcome to mapping candidates home and the learned re-ranking, evidence before ranking."""
    assert [s.__name__ for s in STAGES] == [
        "declare_outcome",
        "infer_edges",
        "detect_failures",
        "learn_references",
        "settle_failures",
        "trace_values",
        "build_graph",
        "lifecycle",
        "collect_evidence",
        "rank",
        "map_home",
        "learned_rank",
        "finish",
    ]


def test_an_inserted_stage_sees_the_ranking_and_can_replace_it(tmp_path: Path) -> None:
    """A stage inserted after "rank" reads the localization and what it returns is the analysis's."""
    seen: list[AnalysisState] = []

    def reverse(state: AnalysisState) -> AnalysisState:
        seen.append(state)
        assert state.localization is not None
        loc = state.localization
        return replace(state, localization=replace(loc, candidates=loc.candidates[::-1]), extras={"reversed": True})

    run = sql_agent_run(tmp_path)
    # The hand ranking: the learned re-ranking (a later stage) would re-sort what the inserted stage returns.
    plain = analyze(run, model=None)
    flipped = analyze(run, stages=insert_stage(reverse, after="rank"), model=None)
    assert len(seen) == 1 and seen[0].extras == {}
    assert [c.step_id for c in flipped.root_causes] == [c.step_id for c in plain.root_causes][::-1]


def test_inserting_after_an_unknown_stage_says_which_exist() -> None:
    """A misspelled stage name is an error that lists the stages."""
    with pytest.raises(ValueError, match="rank"):
        insert_stage(lambda s: s, after="rnk")


def test_a_stage_left_out_is_named(tmp_path: Path) -> None:
    """Leaving out a stage a later one needs is an error that names the missing field."""
    stages = tuple(s for s in STAGES if s.__name__ != "build_graph")
    with pytest.raises(RuntimeError, match="own_graph"):
        analyze(sql_agent_run(tmp_path), stages=stages)


def test_the_state_keeps_each_version_of_the_run_apart(tmp_path: Path) -> None:
    """recorded is the run as given; annotated adds inferred edges; own is what the analysis reports."""
    run = replace(sql_agent_run(tmp_path), outcome="incomplete")
    state = _pipeline.run_stages(AnalysisState(run, Options(outcome="failure")), STAGES)
    assert state.recorded.outcome == "failure" and run.outcome == "incomplete"
    assert state.annotated is not None and state.own is not None and state.searched is state.own
    assert {s.step_id for s in state.recorded.steps} == {s.step_id for s in state.own.steps}
    assert state.graph is state.own_graph
    assert _pipeline.result(state).run is state.own
