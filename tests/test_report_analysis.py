"""The analysis as text (`trajdebug.report.analysis`): how a candidate's path is written."""

from __future__ import annotations

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
