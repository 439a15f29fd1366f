"""Baseline localization methods: their rankings and the honest count of steps they examined."""

from __future__ import annotations

import pytest
from benchmarks.baselines import (
    BASELINES,
    METHODS,
    bfs,
    binary_search,
    first_error,
    last_error,
    linear_scan,
    synthetic_run,
)

from trajdebug.analysis._detect import Failure, detect
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


D = Dependency


def _pipeline_run() -> Run:
    """A malformed JSON extraction (s2) that a parser (s3) and the report (s5) trip over; s4 is an unrelated tool call."""
    return Run(
        "r",
        "extract-price",
        outcome="failure",
        metadata={"task": "Fetch the price of item 7"},
        steps=(
            Step("s0", "question", "input", output="Fetch the price of item 7", start_ns=0, end_ns=1),
            Step(
                "s1",
                "plan",
                "llm",
                input={"q": "Fetch the price of item 7"},
                output="Fetch the price of item 7",
                deps=(D("s0"),),
                start_ns=2,
                end_ns=3,
            ),
            Step(
                "s2",
                "extract",
                "llm",
                input={"plan": "Fetch the price of item 7"},
                output='{"price": 12,',
                deps=(D("s1"),),
                start_ns=4,
                end_ns=5,
            ),
            Step(
                "s3",
                "parse",
                "parse",
                status="error",
                error=ErrorInfo("JSONDecodeError", "Expecting value"),
                deps=(D("s2"),),
                start_ns=6,
                end_ns=7,
            ),
            Step(
                "s4",
                "inventory",
                "tool",
                output={"status": 200, "stock": 3},
                deps=(D("s0"),),
                start_ns=8,
                end_ns=9,
            ),
            Step(
                "s5",
                "report",
                "output",
                status="error",
                error=ErrorInfo("ValueError", "no price"),
                deps=(D("s3"), D("s4")),
                start_ns=10,
                end_ns=11,
            ),
        ),
    )


def _ids(loc: object) -> list[str]:
    return [c.step_id for c in loc.candidates]  # type: ignore[attr-defined]


@pytest.fixture
def case() -> tuple[Run, list[Failure]]:
    run = _pipeline_run()
    return run, detect(run)


class TestErrorScans:
    def test_last_error_scans_back_from_the_end(self, case: tuple[Run, list[Failure]]) -> None:
        """last-error blames the latest errored step, having looked at one step."""
        loc = last_error(*case, top=1)
        assert (_ids(loc), loc.stats.steps_examined, loc.method) == (["s5"], 1, "last-error")

    def test_first_error_scans_from_the_start(self, case: tuple[Run, list[Failure]]) -> None:
        """first-error blames the earliest errored step, having looked at every step up to it."""
        loc = first_error(*case, top=1)
        assert (_ids(loc), loc.stats.steps_examined) == (["s3"], 4)

    def test_full_error_ranking(self, case: tuple[Run, list[Failure]]) -> None:
        """With room for more, both scans list every errored step, in their own order."""
        assert _ids(last_error(*case)) == ["s5", "s3"]
        assert _ids(first_error(*case)) == ["s3", "s5"]
        assert last_error(*case).stats.steps_examined == 6


class TestDiagnosingBaselines:
    def test_linear_scan_diagnoses_backward_in_time(self, case: tuple[Run, list[Failure]]) -> None:
        """linear-scan stops at the first faulty step going back from the failure (the malformed extraction), counting each diagnosis."""
        loc = linear_scan(*case, top=1)
        assert (_ids(loc), loc.stats.steps_examined) == (["s2"], 4)

    def test_bfs_follows_dependencies(self, case: tuple[Run, list[Failure]]) -> None:
        """bfs walks the dependencies breadth-first from the failures; the unrelated tool is never blamed."""
        loc = bfs(*case, top=5)
        assert _ids(loc)[0] == "s2"
        assert "s4" not in _ids(loc)
        assert loc.stats.steps_examined <= len(DependencyGraph(case[0]).backward_slice(["s3", "s5"]))

    def test_binary_search_bisects_the_timeline(self, case: tuple[Run, list[Failure]]) -> None:
        """binary-search finds the first faulty step with logarithmically many probes."""
        loc = binary_search(*case)
        assert _ids(loc)[0] == "s2"
        assert loc.stats.steps_examined == 2

    def test_trajdebug_method_ranks_the_defect_first(self, case: tuple[Run, list[Failure]]) -> None:
        """Behind the same interface, trajdebug's search ranks the malformed extraction first."""
        assert _ids(METHODS["trajdebug"](*case))[0] == "s2"


class TestInterface:
    def test_every_method_shares_the_interface(self, case: tuple[Run, list[Failure]]) -> None:
        """Every method takes (run, failures), names itself and counts at most the run's steps."""
        assert set(BASELINES) == {"last-error", "first-error", "linear-scan", "bfs", "binary-search"}
        assert set(METHODS) == {"trajdebug", *BASELINES}
        for name, method in METHODS.items():
            loc = method(*case)
            assert loc.method == name
            assert 0 < loc.stats.steps_examined <= loc.stats.steps == 6
            scores = [c.score for c in loc.candidates]
            if name != "trajdebug":
                assert scores == sorted(scores, reverse=True)

    def test_methods_on_a_run_with_no_errors(self) -> None:
        """A failed run without errors still gets an answer from the failure node."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                Step("a", "plan", "llm", output="add"),
                Step("b", "answer", "output", output="42", deps=(D("a"),)),
            ),
        )
        failures = detect(run)
        assert _ids(last_error(run, failures)) == ["b"]
        assert _ids(bfs(run, failures)) == [] and bfs(run, failures).stats.steps_examined == 2


class TestSyntheticRuns:
    def test_planted_fault_is_an_ancestor_of_the_failure(self) -> None:
        """The synthetic fault lies in the backward slice of the failing last step, with ~3 edges per step."""
        run = synthetic_run(2000, seed=3)
        g = DependencyGraph(run)
        fault = run.metadata["fault"]["step_id"]
        assert fault in g.backward_slice([run.steps[-1].step_id])
        assert 2.5 < g.edge_count() / len(run.steps) < 3.5
        assert synthetic_run(2000, seed=3) == run
