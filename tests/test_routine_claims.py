"""A model step that states new values on every call, and a state write filed under another item's key.

Two small agents recorded with the SDK (docs/recording.md): a greenhouse planner whose model names a
fertiliser for each bed (values found in none of its inputs, on every call: its job) while the failure is
about a bed its planner left out; and a kennel desk that files each dog's record under the key of the dog
before it (`trajdebug.analysis.diagnosers._decisions.misfiled_write`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.analysis._elsewhere import off_the_failure
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.diagnosers import DiagnoseContext
from trajdebug.analysis.diagnosers._decisions import misfiled_write
from trajdebug.analysis.lineage import Lineage
from trajdebug.core.model import Run
from trajdebug.testing import capture_runs, deterministic


_BEDS = {"B1": "tomato", "B2": "basil", "B3": "pepper", "B4": "lettuce"}
_FEEDS = {"tomato": "kelp meal", "basil": "fish emulsion", "pepper": "bone meal", "lettuce": "worm castings"}


def _greenhouse(drop: str | None) -> Run:
    """The planner lists the beds to sow (leaving out ``drop``); per bed a model names a fertiliser and a
    dose; a check fails when a bed of the order has no plan."""

    @trajdebug.step(kind="llm")
    def plan_beds(order: dict[str, Any]) -> str:
        return json.dumps({"beds": [b for b in order["beds"] if b != drop]})

    @trajdebug.step(kind="parse")
    def read_beds(text: str) -> list[str]:
        return list(json.loads(text)["beds"])

    @trajdebug.step(kind="llm")
    def choose_feed(messages: list[dict[str, str]]) -> str:
        crop = json.loads(messages[-1]["content"])["crop"]
        return json.dumps({"fertiliser": _FEEDS[crop], "grams": 40 + 7 * len(crop)})

    @trajdebug.step(kind="tool")
    def sowing_check(order: dict[str, Any], planned: list[str], feeds: list[str]) -> str:
        for bed in order["beds"]:
            if bed not in planned:
                raise ValueError(f"bed {bed} of order GH-7 has no sowing plan")
        return "ok"

    order = {"order": "GH-7", "beds": list(_BEDS)}
    with deterministic(), capture_runs() as runs, _raises(drop is not None), trajdebug.run("greenhouse-planner", task="GH-7"):
        beds = read_beds(plan_beds(order))
        feeds = []
        for bed in beds:
            ask = json.dumps({"bed": bed, "crop": _BEDS[bed]})
            feeds.append(
                choose_feed([{"role": "system", "content": "Name a fertiliser and a dose."}, {"role": "user", "content": ask}])
            )
        sowing_check(order, beds, feeds)
    return runs[0]


class _raises:
    """``pytest.raises(ValueError)`` when ``fails``, else nothing: the run's error escapes the run block."""

    def __init__(self, fails: bool) -> None:
        self.fails = fails

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> bool:
        assert (kind is ValueError) == self.fails
        return kind is ValueError


def test_routine_model_values_do_not_outrank_the_plan_that_left_a_bed_out() -> None:
    """Every call of the fertiliser model states values of its own (its job): none of them is what the
    failure speaks of, so they weigh as off the failure, and the planner that left B3 out is not outranked
    by them."""
    run = _greenhouse("B3")
    a = analyze(run, top=10, model=None)
    names = [run.step(c.step_id).name for c in a.root_causes]
    assert names[0] == "plan_beds" and names[1:4] == ["choose_feed"] * 3


def test_a_value_the_failure_names_keeps_its_weight() -> None:
    """The discount is for routine values only: a call whose value the failure's message names keeps its
    finding whole, routine or not."""
    run = _greenhouse("B3")
    lin = Lineage(run)
    fail = analyze(run, model=None).failures
    named = Evidence("x", 0.5, "states 'GH-7'", "llm-output", values=("'GH-7'",))
    other = Evidence("x", 0.5, "states 'kelp meal'", "llm-output", values=("'kelp meal'",))
    assert off_the_failure(named, lin, fail, (), 0.25, routine=True).suspicion == 0.5
    assert off_the_failure(other, lin, fail, (), 0.25, routine=True).suspicion == pytest.approx(0.125)


def _kennel(shift: bool) -> Run:
    """The desk files each dog's walk under ``walk:<dog>``; with ``shift`` the third dog's walk goes under
    the second dog's key (a key kept from the pass before), and the roster check finds the second dog's
    walk replaced."""
    dogs = [("D-101", "Biscuit", 30), ("D-102", "Pepper", 45), ("D-103", "Mango", 20)]

    @trajdebug.step(kind="tool")
    def lookup_dog(dog: str) -> dict[str, Any]:
        return next({"dog": d, "name": n, "minutes": m} for d, n, m in dogs if d == dog)

    @trajdebug.step(kind="state")
    def file_walk(dog: str, walk: dict[str, Any], key_dog: str) -> None:
        here = trajdebug.current_run()
        assert here is not None
        here.state[f"walk:{key_dog}"] = walk

    @trajdebug.step(kind="tool")
    def roster_check(expected: dict[str, int]) -> str:
        here = trajdebug.current_run()
        assert here is not None
        state = here.state
        for dog, minutes in expected.items():
            got = state.get(f"walk:{dog}")
            if got is None or got["minutes"] != minutes:
                raise ValueError(f"walk of {dog} is not on the roster as {minutes} minutes")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(shift), trajdebug.run("kennel-desk", task="walks"):
        previous = None
        for dog, _, _ in dogs:
            walk = lookup_dog(dog)
            file_walk(dog, walk, previous if shift and dog == "D-103" else dog)
            previous = dog
        roster_check({d: m for d, _, m in dogs})
    return runs[0]


def test_misfiled_write_is_blamed() -> None:
    """The write that filed D-103's walk under ``walk:D-102`` overwrote the entry D-102's write made."""
    run = _kennel(True)
    a = analyze(run, top=5, model=None)
    top = a.root_causes[0]
    assert run.step(top.step_id).name == "file_walk"
    assert any("walk:D-102" in r and "overwritten" in r for r in top.reasons)


def test_no_misfiled_write_in_a_passing_run() -> None:
    """Each dog filed under its own key: nothing is said."""
    run = _kennel(False)
    ctx = DiagnoseContext.build(run, diagnosers={"misfiled-write": misfiled_write})
    assert [e for s in run.steps for e in misfiled_write(s, ctx)] == []
