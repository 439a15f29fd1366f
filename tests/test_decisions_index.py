"""The indexed lost-update diagnoser finds exactly what a scan of every step for every writer finds."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.analysis.diagnosers import DiagnoseContext, Evidence
from trajdebug.analysis.diagnosers._decisions import _keys, _lost, _overlap, lost_update
from trajdebug.core.model import Run, Step


def _naive(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
    """The scan the index replaced (every step of the run, for every writer), kept as the reference."""
    writes = _keys(step, "state_writes")
    if not writes or step.end_ns is None:
        return
    reads = _keys(step, "state_reads")
    values = step.attributes.get("state_values")
    for other in ctx.run.steps:
        if other.step_id == step.step_id or not _overlap(step, other):
            continue
        if other.end_ns is None or other.end_ns > step.end_ns:
            continue
        for key in sorted(writes & _keys(other, "state_writes")):
            if key not in reads and key not in _keys(other, "state_reads"):
                continue
            lost: list[str] = []
            theirs = other.attributes.get("state_values")
            if (
                isinstance(theirs, Mapping)
                and isinstance(values, Mapping)
                and key in theirs
                and key in values
            ):
                lost = _lost(theirs[key], values[key])
                if not lost:
                    continue
            what = f" (e.g. {lost[0][:40]!r} is gone)" if lost else ""
            yield Evidence(
                step.step_id,
                0.6,
                f"wrote {key!r} while {other.name} was also updating it in parallel; this later write "
                f"overwrote the other's update{what}: a lost update (race)",
                "race",
            )
            return


_KEYS = st.lists(st.sampled_from(["a", "b", "c"]), max_size=2)
_VALUE = st.sampled_from(["alpha", "beta", "gamma", "al", ""])


@st.composite
def _runs(draw: Any) -> Run:
    steps = []
    for i in range(draw(st.integers(0, 14))):
        start = draw(st.one_of(st.none(), st.integers(0, 20)))
        end = None if start is None else draw(st.one_of(st.none(), st.integers(start, start + 8)))
        writes = draw(_KEYS)
        attributes: dict[str, Any] = {"state_writes": writes, "state_reads": draw(_KEYS)}
        if draw(st.booleans()):
            attributes["state_values"] = {k: [draw(_VALUE)] for k in writes}
        sid = f"s{draw(st.integers(0, 12)) if draw(st.integers(0, 9)) == 0 else i}"  # now and then a repeated id
        steps.append(Step(sid, f"w{i}", "state", start_ns=start, end_ns=end, attributes=attributes))
    return Run("r", "test", steps=steps)


@settings(max_examples=400, deadline=None)
@given(_runs())
def test_indexed_lost_update_equals_the_scan(run: Run) -> None:
    """On random runs of timed and untimed writers of few keys, every step gets the same race evidence either way."""
    ctx = DiagnoseContext.build(run)
    for step in run.steps:
        assert list(lost_update(step, ctx)) == list(_naive(step, ctx))


def test_the_index_finds_a_race_among_many_sequential_writers() -> None:
    """Two overlapping writers among thousands of sequential ones are found (the index is not only equal on small runs)."""
    steps = [
        Step(
            f"s{i}",
            "write",
            "state",
            start_ns=10 * i + 1,
            end_ns=10 * i + 5,
            attributes={"state_writes": ["k"], "state_reads": ["k"]},
        )
        for i in range(3000)
    ]
    steps.append(
        Step(
            "late",
            "write",
            "state",
            start_ns=15_003,
            end_ns=15_009,
            attributes={"state_writes": ["k"], "state_reads": ["k"]},
        )
    )
    ctx = DiagnoseContext.build(Run("r", "test", steps=steps))
    ev = list(lost_update(steps[-1], ctx))
    assert ev and "'k'" in ev[0].reason and ev == list(_naive(steps[-1], ctx))
