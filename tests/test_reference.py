"""References: likely invariants from an agent's passing runs, and the failing run's violations of them."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.builders import step

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.lineage import Lineage, holds_empty
from trajdebug.analysis.reference import (
    _answers,
    _first_picks,
    learn,
    producers_of,
    references,
    sibling_profiles,
    step_key,
    unkeyed,
    violations,
)
from trajdebug.analysis.reference._first_picks import first_picks
from trajdebug.analysis.reference._profile import _apply, _FieldObs, _Obs, _record, _StepStats
from trajdebug.analysis.reference._routes import _route as route_of
from trajdebug.analysis.reference._siblings import _Occurrences
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step
from trajdebug.sources.load import load_runs
from trajdebug.testing import capture_runs, deterministic


D = Dependency


def test_an_odd_sign_among_a_steps_calls_that_passing_runs_had_is_no_violation() -> None:
    """A reading negative once among positive ones in this run is odd to its other calls, but not when the
    agent's passing runs had negative readings of that field too."""

    def run(rid: str, values: list[float], outcome: str) -> Run:
        steps = [
            Step(f"{rid}{i}", "read_level", "tool", input={"gauge": g}, output={"level_m": v}, start_ns=i, end_ns=i + 1)
            for i, (g, v) in enumerate(zip("ABCDE", values))
        ]
        return Run(rid, "levels", outcome=outcome, steps=tuple(steps))

    bad = run("f", [3.0, 4.0, -2.0, 5.0, 6.0], "failure")
    lin = Lineage(bad)
    own = sibling_profiles(bad, lin)["f2"]
    assert [e.diagnoser for e in violations(bad.steps[2], lin.view("f2"), own)] == ["reference:sign"]
    passing = learn([run(f"ok{k}", [2.0, -1.0 - k, 3.0, 4.0, 5.0], "success") for k in range(3)])
    assert list(violations(bad.steps[2], lin.view("f2"), own, passing=passing)) == []
    only_positive = learn([run(f"ok{k}", [2.0, 1.0 + k, 3.0, 4.0, 5.0], "success") for k in range(3)])
    assert [e.diagnoser for e in violations(bad.steps[2], lin.view("f2"), own, passing=only_positive)] == [
        "reference:sign"
    ]


def _converter_run(rid: str, amount: float, rate: float, *, fail: bool = False, meta: Any = None) -> Run:
    """An expense agent: parse an amount, convert it, check the total against a limit."""
    converted = round(amount * rate, 2)
    steps = [
        Step(
            "p",
            "parse_receipt",
            "parse",
            input={"text": f"Total {amount} USD"},
            output={"amount": amount},
            start_ns=1,
            end_ns=2,
        ),
        Step(
            "c",
            "convert",
            "tool",
            input={"amount": amount, "from": "USD", "to": "EUR"},
            output={"amount_eur": converted},
            deps=(D("p"),),
            start_ns=3,
            end_ns=4,
        ),
        Step(
            "k",
            "check_limit",
            "condition",
            input={"total": converted},
            output=None if fail else "ok",
            status="error" if fail else "ok",
            error=ErrorInfo("LimitExceeded", f"total {converted} EUR is over the limit") if fail else None,
            deps=(D("c"),),
            start_ns=5,
            end_ns=6,
        ),
    ]
    return Run(
        rid,
        "expenses",
        start_ns=int(rid[-1]) if rid[-1].isdigit() else 0,
        outcome="failure" if fail else "success",
        steps=tuple(steps),
        metadata=meta or {},
    )


def _passing() -> list[Run]:
    return [_converter_run(f"ok{i}", a, 0.92) for i, a in enumerate((100.0, 250.0, 80.0, 40.0, 310.0))]


class TestSelection:
    def test_references_are_passing_original_runs_of_the_same_agent(self) -> None:
        """Replays, runs recorded to verify another, failures and other agents are not references."""
        bad = _converter_run("bad", 400.0, 1.5, fail=True)
        pool = [
            bad,
            *_passing(),
            _converter_run("replay", 400.0, 0.92, meta={"replay_of": "bad"}),
            _converter_run("twin", 400.0, 0.92, meta={"reference_for": "bad"}),
            Run("other", "another-agent", outcome="success"),
        ]
        assert sorted(r.run_id for r in references(bad, pool)) == [f"ok{i}" for i in range(5)]


class TestInvariants:
    def test_a_constant_output_over_a_constant_input_is_no_ratio(self) -> None:
        """A search that found 2 items for a threshold of 7.5 in every passing run and 3 now (other inputs, other
        items) breaks no ratio: 2/7.5 was two constants, not a relation between them."""

        def search(rid: str, found: int, fail: bool = False) -> Run:
            s = Step("s", "search", "tool", input={"section": rid, "min_score": 7.5},
                     output={"total": found, "section": rid}, start_ns=1, end_ns=2)
            return Run(rid, "scout", outcome="failure" if fail else "success", steps=(s,))

        profile = learn([search(f"ok{i}", 2) for i in range(4)])
        bad = search("bad", 3, fail=True)
        found = list(violations(bad.steps[0], Lineage(bad).view("s"), profile))
        assert not [e for e in found if e.diagnoser == "reference:ratio"]

    def test_a_total_of_given_values_is_no_value_made_up(self) -> None:
        """An order step whose qty was given in every passing run, here the total of the seats it was given
        (88 + 60 = 148), made nothing up; a qty of 150, no total of them, is not among the values it was given."""

        def order(rid: str, seats: list[int], qty: int, total: int | None = None, fail: bool = False) -> Run:
            inp: dict[str, Any] = {"sections": [{"seats": n} for n in seats]}
            if total is not None:
                inp["total"] = total
            s = Step("o", "order", "tool", input=inp, output={"qty": qty}, start_ns=1, end_ns=2)
            return Run(rid, "store", outcome="failure" if fail else "success", steps=(s,))

        profile = learn([order(f"ok{i}", [30 + i, 20], 50 + i, total=50 + i) for i in range(4)])

        def grounded(qty: int) -> list[Evidence]:
            bad = order("bad", [88, 60], qty, fail=True)
            found = violations(bad.steps[0], Lineage(bad).view("o"), profile)
            return [e for e in found if e.diagnoser == "reference:grounded"]

        assert not grounded(148)
        assert grounded(150)

    def test_a_rate_that_changed_breaks_the_ratio_invariant(self) -> None:
        """A converter whose output/input ratio was constant in passing runs and differs now violates it."""
        bad = _converter_run("bad", 400.0, 1.5, fail=True)
        found = list(violations(bad.steps[1], Lineage(bad).view("c"), learn(_passing())))
        assert [e.diagnoser for e in found] == ["reference:ratio"]
        assert "0.92" in found[0].reason

    def test_a_ratio_broken_by_a_copy_of_a_field_given_twice_is_relayed(self) -> None:
        """A quote that always copied the shipment's weight (given in the shipment and again in the rate) as its
        declared weight, equal to the manifest's in passing runs, relayed the wrong weight: the broken ratio
        says it passed the weight on unchanged, and came in with its input."""

        def quote(rid: str, weight: float, measured: float, fail: bool = False) -> Run:
            given = {"shipment": {"weight": weight}, "rate": {"weight": weight, "freight": 3 * weight + 7}, "manifest": {"measured": measured}}
            s = Step("q", "quote", "other", input=given, output={"declared": weight, "manifest_kg": measured}, start_ns=1, end_ns=2)
            return Run(rid, "customs", outcome="failure" if fail else "success", steps=(s,))

        profile = learn([quote(f"ok{i}", w, w) for i, w in enumerate((40.0, 95.5, 120.0, 210.0))])
        bad = quote("bad", 54.4, 163.3, fail=True)
        [ratio] = [e for e in violations(bad.steps[0], Lineage(bad).view("q"), profile) if e.diagnoser == "reference:ratio"]
        assert "passed on its input's weight unchanged" in ratio.reason
        assert ratio.given and ratio.values == ("54.4",)

    def test_the_same_request_answered_differently(self) -> None:
        """A tool given exactly a request a passing run made, answering otherwise, is suspect."""
        bad = _converter_run("bad", 100.0, 1.5, fail=True)
        found = {e.diagnoser for e in violations(bad.steps[1], Lineage(bad).view("c"), learn(_passing()))}
        assert "reference:same-input" in found

    def test_an_answer_differing_only_in_an_id_minted_per_call_is_the_same_answer(self) -> None:
        """A booking tool that mints a new booking id on every call (new in each passing call, never given) is
        not answering the same request otherwise when only that id differs; another status still is."""

        def book(rid: str, night: str, n: int, status: str = "confirmed", *, fail: bool = False) -> Run:
            s = Step("b", "book_room", "tool", input={"hotel": "HT-1", "night": night},
                     output={"booking": f"BK-{700 + n}", "night": night, "status": status}, start_ns=1, end_ns=2)
            return Run(rid, "travel", outcome="failure" if fail else "success", steps=(s,))

        profile = learn([book(f"ok{i}", f"N-0{i}", i) for i in range(1, 5)])

        def changed(run: Run) -> bool:
            return "reference:same-input" in {e.diagnoser for e in violations(run.steps[0], Lineage(run).view("b"), profile)}

        assert not changed(book("bad", "N-01", 38, fail=True))
        assert changed(book("bad", "N-01", 38, "waitlisted", fail=True))

    def test_an_answer_differing_only_in_a_date_stamp_new_in_every_run_is_the_same_answer(self) -> None:
        """A lookup stamping its answer with the run's snapshot date (shared by a run's calls, new in every passing
        run, never given) is not answering the same request otherwise when only that stamp differs; another
        count still is."""

        def stock(rid: str, day: int, items: tuple[int, int], n: int = 12, *, fail: bool = False) -> Run:
            steps = tuple(
                Step(f"s{i}", "get_stock", "tool", input={"item": f"SKU-{item}"},
                     output={"item": f"SKU-{item}", "as_of": f"2026-04-{day:02d}T07:30", "on_hand": n + item},
                     start_ns=2 * i + 1, end_ns=2 * i + 2)
                for i, item in enumerate(items)
            )
            return Run(rid, "stock", outcome="failure" if fail else "success", steps=steps)

        profile = learn([stock(f"ok{d}", d, (d, d + 1)) for d in (3, 5, 9, 11)])

        def changed(run: Run) -> bool:
            return "reference:same-input" in {e.diagnoser for e in violations(run.steps[0], Lineage(run).view("s0"), profile)}

        assert not changed(stock("bad", 20, (3, 7), fail=True))
        assert changed(stock("bad", 20, (3, 7), 30, fail=True))

    def test_a_step_passing_runs_answered_one_request_two_ways_deviates_weaker_never_not(self) -> None:
        """A gauge reader whose passing runs read one tank two ways (a live reading) answers from more than its
        request: another reading for a tank read once in passing runs is weaker evidence than from a reader that
        answered each tank one way in every passing run, but still a same-input deviation (weighed, never masked:
        rev48r3)."""

        def gauge(rid: str, readings: dict[str, int], *, fail: bool = False) -> Run:
            steps = tuple(
                Step(f"s{i}", "read_gauge", "tool", input={"tank": t}, output={"tank": t, "litres": v},
                     start_ns=2 * i + 1, end_ns=2 * i + 2)
                for i, (t, v) in enumerate(readings.items())
            )
            return Run(rid, "depot", outcome="failure" if fail else "success", steps=steps)

        steady = [gauge("ok0", {"TK-1": 400, "TK-2": 520, "TK-3": 300})] + [
            gauge(f"ok{i}", {"TK-1": 400, "TK-2": 520}) for i in range(1, 3)
        ]
        live = [*steady[:2], gauge("ok9", {"TK-1": 400, "TK-2": 610})]
        bad = gauge("bad", {"TK-3": 90, "TK-2": 520}, fail=True)

        def changed(profile: Any) -> float:
            found = violations(bad.steps[0], Lineage(bad).view("s0"), profile)
            return max((e.suspicion for e in found if e.diagnoser == "reference:same-input"), default=0.0)

        assert 0 < changed(learn(live)) < changed(learn(steady))

    def test_a_change_in_a_field_that_changed_on_every_repeat_weighs_less_than_one_that_changed_once(self) -> None:
        """A gauge reader's finding for a new reading of a tank read once in passing runs is weighed by how often
        readings changed when a passing run repeated a request: less where another tank read otherwise on every
        repeat (a live gauge) than where it read otherwise once, and at half or more in both."""

        def gauge(rid: str, readings: list[tuple[str, int]], *, fail: bool = False) -> Run:
            steps = tuple(
                Step(f"s{i}", "read_gauge", "tool", input={"tank": t}, output={"tank": t, "litres": v},
                     start_ns=2 * i + 1, end_ns=2 * i + 2)
                for i, (t, v) in enumerate(readings)
            )
            return Run(rid, "depot", outcome="failure" if fail else "success", steps=steps)

        once = learn([gauge("ok1", [("TK-3", 300), ("TK-2", 520)]), gauge("ok2", [("TK-1", 400), ("TK-2", 520)]),
                      gauge("ok3", [("TK-1", 400), ("TK-2", 520)]), gauge("ok4", [("TK-1", 400), ("TK-2", 610)])])
        live = learn([gauge("ok1", [("TK-3", 300), ("TK-2", 520)]), gauge("ok2", [("TK-1", 400), ("TK-2", 530)]),
                      gauge("ok3", [("TK-1", 400), ("TK-2", 540)]), gauge("ok4", [("TK-1", 400), ("TK-2", 550)])])
        bad = gauge("bad", [("TK-3", 90)], fail=True)

        def weight(profile: Any) -> float:
            found = violations(bad.steps[0], Lineage(bad).view("s0"), profile)
            return max((e.suspicion for e in found if e.diagnoser == "reference:same-input"), default=0.0)

        assert 0.65 / 2 <= weight(live) < weight(once) < 0.65

    def test_an_answer_too_long_to_keep_whole_differing_only_in_its_minted_id_is_unchanged(self) -> None:
        """A seed catalogue answering with a long list and a batch id it mints per call is unchanged when only the id
        is new, though its answer is cut for its size; a catalogue whose listed seeds changed still deviates."""

        def catalogue(rid: str, calls: list[tuple[str, str, int]], *, fail: bool = False) -> Run:
            steps = tuple(
                Step(f"s{i}", "list_seeds", "tool", input={"grower": g},
                     output={"batch": t, "seeds": [{"n": k, "seed": f"{g} heirloom bean lot {k + shift} sown in trays"} for k in range(400)]},
                     start_ns=2 * i + 1, end_ns=2 * i + 2)
                for i, (g, t, shift) in enumerate(calls)
            )
            return Run(rid, "nursery", outcome="failure" if fail else "success", steps=steps)

        profile = learn([catalogue("ok1", [("GR-1", "TK-4a11", 0), ("GR-1", "TK-4a12", 0)]),
                         catalogue("ok2", [("GR-2", "TK-4b21", 0)]), catalogue("ok3", [("GR-3", "TK-4c31", 0)]),
                         catalogue("ok4", [("GR-4", "TK-4d41", 0), ("GR-5", "TK-4d42", 0)])])
        bad = catalogue("bad", [("GR-3", "TK-4e51", 0), ("GR-2", "TK-4e52", 5)], fail=True)

        def changed(step: Step) -> bool:
            return "reference:same-input" in {e.diagnoser for e in violations(step, Lineage(bad).view(step.step_id), profile)}

        assert not changed(bad.steps[0])
        assert changed(bad.steps[1])

    def test_an_answer_differing_in_a_field_that_never_varied_still_deviates(self) -> None:
        """A hive scale whose passing runs weighed one hive two ways (the weight varies) deviates in full when a
        hive weighed once in passing runs now gets an answer about another hive (its ``hive`` never varied); a new
        weight alone is weighed lower, not dropped."""

        def scale(rid: str, readings: list[tuple[str, str, int]], *, fail: bool = False) -> Run:
            steps = tuple(
                Step(f"s{i}", "weigh_hive", "tool", input={"hive": h}, output={"hive": said, "kg": kg},
                     start_ns=2 * i + 1, end_ns=2 * i + 2)
                for i, (h, said, kg) in enumerate(readings)
            )
            return Run(rid, "apiary", outcome="failure" if fail else "success", steps=steps)

        profile = learn([scale(f"ok{i}", [("HV-1", "HV-1", 31), ("HV-2", "HV-2", 28)]) for i in range(3)]
                        + [scale("ok9", [("HV-1", "HV-1", 31), ("HV-1", "HV-1", 30), ("HV-3", "HV-3", 25)])])

        def changed(bad: Run) -> float:
            found = violations(bad.steps[0], Lineage(bad).view("s0"), profile)
            return max((e.suspicion for e in found if e.diagnoser == "reference:same-input"), default=0.0)

        assert changed(scale("bad", [("HV-3", "HV-1", 25)], fail=True)) == 0.65
        assert 0 < changed(scale("bad", [("HV-3", "HV-3", 24)], fail=True)) < 0.65

    def test_a_date_one_request_gets_is_no_stamp_even_when_new_in_every_run(self) -> None:
        """A parcel's delivery date (one per parcel, each seen in one passing run) changing for the same parcel is
        answering the same request otherwise: no call of a run shares it, so it is no stamp of the run."""

        def track(rid: str, parcels: tuple[int, int], due: Any, *, fail: bool = False) -> Run:
            steps = tuple(
                Step(f"s{i}", "track_parcel", "tool", input={"parcel": f"PX-{p}"},
                     output={"parcel": f"PX-{p}", "due": due(p), "pieces": 2}, start_ns=2 * i + 1, end_ns=2 * i + 2)
                for i, p in enumerate(parcels)
            )
            return Run(rid, "parcels", outcome="failure" if fail else "success", steps=steps)

        def due(p: int) -> str:
            return f"2025-09-{p:02d}"

        profile = learn([track(f"ok{d}", (d, d + 1), due) for d in (4, 8, 12, 16)])
        bad = track("bad", (4, 21), lambda p: "2025-09-27" if p == 4 else due(p), fail=True)
        found = {e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("s0"), profile)}
        assert "reference:same-input" in found

    def test_a_reader_of_other_state_was_not_asked_the_same(self) -> None:
        """A step given the same arguments as in a passing run but reading other shared state is not "the same input"."""

        def planner(rid: str, table: list[float], start: str, *, fail: bool = False) -> Run:
            steps = (
                Step("w", "store_table", "state", input={"rows": table}, output=len(table),
                     attributes={"state_values": {"table": table}}, start_ns=1, end_ns=2),
                Step("r", "plan", "condition", input={"leg": 4}, output={"start": start},
                     deps=(D("w", kind="state", key="table"),), start_ns=3, end_ns=4),
            )
            return Run(rid, "planner", outcome="failure" if fail else "success", steps=steps)

        good = planner("ok1", [0.3, 0.9], "12:00")
        for table, expected in (([1.0, 3.0], set()), ([0.3, 0.9], {"reference:same-input"})):
            bad = planner("bad", table, "10:00", fail=True)
            by_id = {s.step_id: s for s in bad.steps}
            found = {e.diagnoser for e in violations(bad.steps[1], Lineage(bad).view("r"), learn([good]), steps=by_id)}
            assert found & {"reference:same-input"} == expected

    def test_answers_differing_only_in_minted_ids_are_alike(self) -> None:
        """Two answers to one request that differ only in UUIDs (message ids a framework mints) answered alike."""

        def routed(rid: str, msg_id: str, node: str) -> Run:
            out = f"Send(node='{node}', arg={{'messages': [Message(id='{msg_id}')]}})"
            step = Step("s", "route", "other", input={"n": 1}, output=[out], start_ns=1, end_ns=2)
            return Run(rid, "router", outcome="success", steps=(step,))

        good = routed("ok1", "c396e37f-f83c-4880-b4f4-a72756461c24", "tools")
        same = routed("bad", "e42b99df-95a4-42c1-9991-d0b877456e07", "tools")
        other = routed("bad", "e42b99df-95a4-42c1-9991-d0b877456e07", "end")
        seen = [{e.diagnoser for e in violations(r.steps[0], Lineage(r).view("s"), learn([good]))} for r in (same, other)]
        assert "reference:same-input" not in seen[0] and "reference:same-input" in seen[1]

    def test_a_faithful_step_breaks_nothing(self) -> None:
        """The same converter with its usual rate, on a new amount, violates no invariant."""
        fine = _converter_run("new", 777.0, 0.92)
        assert list(violations(fine.steps[1], Lineage(fine).view("c"), learn(_passing()))) == []

    def test_a_step_called_many_times_is_its_own_reference(self) -> None:
        """An occurrence far outside the magnitude of the step's other calls in the same run is flagged."""
        steps = [
            Step(
                f"a{i}",
                "fetch_area",
                "tool",
                input={"region": r},
                output={"area_km2": v},
                start_ns=i,
                end_ns=i + 1,
            )
            for i, (r, v) in enumerate(
                [("A", 5308.0), ("B", 6200.0), ("C", 854300.0), ("D", 4990.0), ("E", 7100.0)]
            )
        ]
        run = Run("r", "density", outcome="failure", steps=tuple(steps))
        lin = Lineage(run)
        profiles = sibling_profiles(run, lin)
        odd = list(violations(steps[2], lin.view("a2"), profiles["a2"]))
        assert [e.diagnoser for e in odd] == ["reference:magnitude"]
        assert list(violations(steps[0], lin.view("a0"), profiles["a0"])) == []


def _observed(obs: list[_Obs]) -> _StepStats:
    """The stats of observing these occurrences one by one (the definition leave-one-out must match)."""
    stats = _StepStats()
    for ob in obs:
        _apply(stats, ob)
    return stats


def _same_stats(a: _StepStats, b: _StepStats) -> None:
    """Equal, and every dict in the same (first-seen) order: `violations` reads them in that order."""
    assert a == b
    assert list(a.fields) == list(b.fields) and list(a.present) == list(b.present)
    assert list(a.schemas) == list(b.schemas) and list(a.ratios) == list(b.ratios)
    assert list(a.unit_ratios) == list(b.unit_ratios)
    for f in a.fields:
        x, y = a.fields[f], b.fields[f]
        assert list(x.values) == list(y.values) and list(x.formulas) == list(y.formulas)
        assert list(x.fits) == list(y.fits)


# Small alphabets, so keys repeat across occurrences and the caps (30 values, 20 shapes) fill.
_field_obs = st.builds(
    _FieldObs,
    st.sampled_from("abcd"),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.lists(st.sampled_from(["copy(x)", "sum(y)", "given-by-no-formula"]), max_size=3).map(tuple),
    st.lists(st.sampled_from(["copy(x)", "copy(z)", "sum(y)", "given-by-no-formula"]), max_size=5).map(tuple),
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=3).map(tuple),
    st.lists(st.integers(0, 40).map(lambda n: (f"s:v{n}", f"V{n}")), max_size=8).map(tuple),
    st.lists(st.integers(0, 40).map(lambda n: f"s:v{n}"), max_size=4).map(tuple),
    st.none() | st.booleans(),
    st.none() | st.frozensets(st.sampled_from(["messages", "request", "record"]), min_size=1),
    dated=st.booleans(),
)
_obs = st.builds(
    _Obs,
    st.text("pqrs", min_size=1, max_size=2),
    st.booleans(),
    st.frozensets(st.sampled_from("abcdefgh"), max_size=3),
    st.lists(_field_obs, max_size=4).map(lambda fs: tuple({f.name: f for f in fs}.values())),
    st.lists(
        st.tuples(st.tuples(st.sampled_from("ab"), st.sampled_from("xy")), st.floats(-10, 10, allow_nan=False)),
        max_size=3,
    ).map(lambda rs: tuple(dict(rs).items())),
    st.none() | st.floats(0, 5, allow_nan=False),
    st.lists(
        st.tuples(
            st.tuples(st.sampled_from("ab"), st.sampled_from("xy"), st.sampled_from(["unit=lb", "unit=oz"])),
            st.tuples(st.floats(-10, 10, allow_nan=False), st.floats(-10, 10, allow_nan=False)),
        ),
        max_size=3,
    ).map(lambda rs: tuple((k, r, x) for k, (r, x) in dict(rs).items())),
)


class TestSiblingProfiles:
    @settings(max_examples=300, deadline=None)
    @given(st.lists(_obs, min_size=1, max_size=30))
    def test_leaving_one_out_equals_observing_the_others(self, obs: list[_Obs]) -> None:
        """Each leave-one-out profile equals observing the other occurrences one by one, dict order included."""
        every = _Occurrences(obs)
        for i in range(len(obs)):
            _same_stats(every.without(i), _observed(obs[:i] + obs[i + 1 :]))

    def test_a_field_with_many_values_fills_its_tally_as_direct_counting_does(self) -> None:
        """With more distinct values than the tally keeps, leaving out an early occurrence admits a later value."""
        obs = [
            _Obs(f"o{i}", False, frozenset("a"), (_FieldObs("a", True, False, False, (), (), (), ((f"s:{i}", str(i)), ("s:x", "x")), (f"s:{i}",)),), (), None)
            for i in range(40)
        ]
        every = _Occurrences(obs)
        for i in (0, 5, 28, 29, 39):
            _same_stats(every.without(i), _observed(obs[:i] + obs[i + 1 :]))

    def test_profiles_of_a_recorded_step_match_its_other_calls(self) -> None:
        """Each occurrence's profile is what observing the step's other calls in the run gives."""
        steps = [
            Step(f"a{i}", "lookup", "tool", input={"sku": f"SKU-{i % 7}", "qty": i}, output={"sku": f"SKU-{i % 7}", "price": 1.5 * i, "unit": "eur" if i % 5 else "usd"}, start_ns=i, end_ns=i + 1)
            for i in range(12)
        ]
        run = Run("r", "shop", outcome="failure", steps=tuple(steps))
        lin = Lineage(run)
        profiles = sibling_profiles(run, lin)
        obs = [_record(s, lin.view(s.step_id), s.step_id) for s in steps]
        for i, s in enumerate(steps):
            (got,) = profiles[s.step_id].steps.values()
            _same_stats(got, _observed(obs[:i] + obs[i + 1 :]))


class TestAnalysisWithReferences:
    def test_references_put_the_silent_converter_first(self) -> None:
        """With passing runs, the converter with the wrong rate ranks above the check that raised."""
        bad = _converter_run("bad", 400.0, 1.5, fail=True)
        alone = analyze(bad)
        compared = analyze(bad, references=_passing())
        assert compared.references == tuple(r.run_id for r in _passing())
        assert compared.root_causes[0].step_id == "c"
        assert "reference:ratio" in compared.root_causes[0].signals
        assert alone.references == ()


class TestOldAnswers:
    def test_a_lookup_serving_another_requests_answer_is_flagged(self) -> None:
        """A tool answering a new request with what a passing run got for another one (a cache keyed wrong)."""

        def lookup_run(rid: str, claim: str, receipts: list[str], *, fail: bool = False) -> Run:
            return Run(
                rid,
                "claims",
                outcome="failure" if fail else "success",
                steps=(
                    Step(
                        "f",
                        "fetch_receipts",
                        "tool",
                        input={"claim_id": claim},
                        output={"receipts": receipts},
                    ),
                ),
            )

        jan = ["Airline 2025-01-20 TOTAL USD 310.20", "Hotel 2025-01-21 TOTAL USD 289.00"]
        passing = [lookup_run("p1", "CLM-1", jan)] + [
            lookup_run(f"p{i}", f"CLM-{i}", [f"Taxi 2025-03-0{i} TOTAL EUR {20 + i}.00 receipt"])
            for i in range(2, 6)
        ]
        bad = lookup_run("bad", "CLM-9", jan, fail=True)
        found = [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("f"), learn(passing))]
        assert "reference:old-answer" in found
        fresh = lookup_run("new", "CLM-8", ["Train 2025-04-02 TOTAL EUR 88.00 receipt"])
        assert "reference:old-answer" not in [
            e.diagnoser for e in violations(fresh.steps[0], Lineage(fresh).view("f"), learn(passing))
        ]


    def test_the_record_of_an_item_both_requests_asked_for_is_no_old_answer(self) -> None:
        """A stock lookup answering SKU-1001's record, as a passing run got it for another list that also named
        SKU-1001, answers the same thing; the record served under an item that list never named still is one."""

        def stock_run(rid: str, answer: dict[str, Any], *, fail: bool = False) -> Run:
            step = Step("s", "lookup_stock", "tool", input={"skus": sorted(answer)}, output=answer)
            return Run(rid, "picker", outcome="failure" if fail else "success", steps=(step,))

        def record(desc: str, aisle: int) -> dict[str, Any]:
            return {"desc": desc, "bin": f"A-0{aisle}-2", "aisle": aisle, "on_hand": 100 + aisle}

        bolts, tape = record("M6 hex bolts (box of 100)", 1), record("duct tape 50 m", 2)
        passing = [stock_run("p1", {"SKU-1001": bolts, "SKU-4500": tape})] + [
            stock_run(f"p{i}", {f"SKU-{i}00{i}": record(f"part number {i}", i)}) for i in range(2, 6)
        ]
        profile = learn(passing)
        ties = record("cable ties 300 mm", 3)
        bad = stock_run("bad", {"SKU-1001": bolts, "SKU-2040": ties, "SKU-4500": tape}, fail=True)
        found = [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("s"), profile)]
        assert "reference:old-answer" not in found
        wrong = stock_run("bad", {"SKU-2040": bolts}, fail=True)
        found = [e.diagnoser for e in violations(wrong.steps[0], Lineage(wrong).view("s"), profile)]
        assert "reference:old-answer" in found

    def test_an_answer_following_from_a_value_both_requests_share_is_no_old_answer(self) -> None:
        """A price list answering the north region's prices a passing run got for another store in the north answers
        what both asked (the region), no stale entry; the same prices served for the south are one."""

        def price_list(rid: str, store: str, region: str, prices: list[str], *, fail: bool = False) -> Run:
            s = Step("m", "get_price_list", "tool", input={"store": store, "region": region},
                     output={"store": store, "prices": prices})
            return Run(rid, "pricing", outcome="failure" if fail else "success", steps=(s,))

        north = [f"SKU-{i}" for i in range(8, 24)]
        passing = [price_list("p1", "ST-1", "north", north)] + [
            price_list(f"p{i}", f"ST-{i}", f"zone {i}", [f"Z{i}-{j}" for j in range(16)]) for i in range(2, 6)
        ]
        profile = learn(passing)

        def old(run: Run) -> bool:
            return "reference:old-answer" in [e.diagnoser for e in violations(run.steps[0], Lineage(run).view("m"), profile)]

        assert not old(price_list("bad", "ST-9", "north", north, fail=True))
        assert old(price_list("bad", "ST-9", "south", north, fail=True))

    def test_a_whole_answer_got_for_another_id_is_old_even_when_the_request_carries_that_id(self) -> None:
        """A customer lookup asked for C-1 (handed C-2 as its cache key) that answers C-2's record, as a passing
        run got it when it asked for C-2, served a stale entry: the request's other value does not excuse it."""

        def lookup(rid: str, asked: str, cached: str | None, answer: str, *, fail: bool = False) -> Run:
            step = Step("s", "lookup_customer", "tool", input={"customer_id": asked, "cached": cached},
                        output={"account": answer, "tier": f"tier of {answer} account"})
            return Run(rid, "triage", outcome="failure" if fail else "success", steps=(step,))

        profile = learn([lookup(f"p{i}", f"C-{i}", None, f"C-{i}") for i in range(1, 6)])
        stale = lookup("bad", "C-7", "C-2", "C-2", fail=True)
        found = [e.diagnoser for e in violations(stale.steps[0], Lineage(stale).view("s"), profile)]
        assert "reference:old-answer" in found


    def test_an_answer_echoing_this_requests_fields_is_no_old_answer(self) -> None:
        """A fare tool whose passing runs got one fare for one route asked at two hours answered this request with
        the fare a passing run got for its route at another hour: the hour is not what the fare follows.  Two other
        routes so (rev48r, M1) only weaken the finding for a route asked at one hour (its fare may still follow
        the hour: rev49r, H2); the same fare for another route is another request's answer in full."""

        def fare(rid: str, route: str, hour: str, echoed: str, *, fail: bool = False) -> Run:
            s = Step("q", "quote_fare", "tool", input={"route": route, "hour": hour},
                     output={"route": echoed, "fare_eur": 42.5, "operator": f"{echoed} shuttle line"})
            return Run(rid, "ferry", outcome="failure" if fail else "success", steps=(s,))

        passing = [fare("p1", "harbour to isle", "07:40", "harbour to isle")] + [
            fare(f"p{i}", f"pier {i} to cove", f"1{i}:00", f"pier {i} to cove") for i in range(2, 6)
        ] + [fare("p6", "pier 2 to cove", "16:30", "pier 2 to cove")] + [
            fare(f"p{i}", "skerry to north bay", hour, "skerry to north bay") for i, hour in ((7, "09:15"), (8, "14:45"))
        ]
        profile = learn(passing)

        def old(run: Run) -> float:
            found = violations(run.steps[0], Lineage(run).view("q"), profile)
            return max((e.suspicion for e in found if e.diagnoser == "reference:old-answer"), default=0.0)

        assert old(fare("bad", "pier 2 to cove", "18:05", "pier 2 to cove", fail=True)) == 0
        assert 0 < old(fare("bad", "harbour to isle", "18:05", "harbour to isle", fail=True)) < 0.5
        assert old(fare("bad", "pier 9 to cove", "18:05", "harbour to isle", fail=True)) == 0.5

    def test_a_sub_agent_answer_naming_no_word_only_its_sentence_has_is_an_old_answer(self) -> None:
        """A sub-agent asked in words about account AC-12 on a day no passing run asked, answering with the cover a
        passing run got for AC-12 on another day, names no word only its own sentence has (the day may be what the
        answer followed): another request's answer, as AC-13's cover served for AC-17 is."""

        def cover(rid: str, account: str, day: str, answered: str, *, fail: bool = False) -> Run:
            s = Step("c", "cover_agent", "tool", input={"input": f"Check cover for account {account} on {day}."},
                     output={"account": answered, "policy": f"POL-{answered}-2027", "valid_until": "2027-12-31"})
            return Run(rid, "insurer", outcome="failure" if fail else "success", steps=(s,))

        days = ["3 May", "9 June", "1 July", "4 August", "2 September"]
        passing = [cover(f"p{i}", f"AC-1{i}", days[i], f"AC-1{i}") for i in range(5)]
        profile = learn(passing)

        def old(run: Run) -> bool:
            return "reference:old-answer" in [e.diagnoser for e in violations(run.steps[0], Lineage(run).view("c"), profile)]

        assert old(cover("bad", "AC-12", "7 October", "AC-12", fail=True))
        assert old(cover("bad", "AC-17", "7 October", "AC-13", fail=True))

    def test_a_listing_naming_this_requests_item_is_no_old_answer_but_one_naming_only_the_others_is(self) -> None:
        """A name search that lists both the quay asked for and the one another request asked for (one listing for
        two like names) answered this request too; a letter about the other request's person, sharing only the
        surname asked, is another request's answer."""

        def search(rid: str, name: str, listed: list[str], *, fail: bool = False) -> Run:
            out = {"hits": [{"name": n, "berth": f"B-{len(n)}{i}"} for i, n in enumerate(listed)]}
            s = Step("s", "find_quay", "tool", input={"name": f"{name}"}, output=out)
            return Run(rid, "harbour", outcome="failure" if fail else "success", steps=(s,))

        twin = ["North Quay East", "North Quay West"]
        passing = [search("p1", "North Quay East", twin)] + [
            search(f"p{i}", f"Dock {i} Slip", [f"Dock {i} Slip"]) for i in range(2, 6)
        ]
        profile = learn(passing)

        def old(run: Run) -> bool:
            return "reference:old-answer" in [e.diagnoser for e in violations(run.steps[0], Lineage(run).view("s"), profile)]

        assert not old(search("bad", "North Quay West", twin, fail=True))
        assert old(search("bad", "North Quay Central", twin, fail=True))

    def test_an_answer_echoing_only_a_field_both_requests_share_is_an_old_answer(self) -> None:
        """A tide tool that echoes the day asked but ignores the harbour, answering harbour Kelmor with what a
        passing run got for harbour Vashti on that day, names nothing only this request asked: an old answer."""

        def tide(rid: str, harbour: str, day: str, answered: str, *, fail: bool = False) -> Run:
            s = Step("t", "tide_table", "tool", input={"harbour": harbour, "day": day},
                     output={"day": day, "tide": f"high water {len(answered)}:{ord(answered[0]) % 60:02d}, neap range, swell south-west"})
            return Run(rid, "pilots", outcome="failure" if fail else "success", steps=(s,))

        ports = ["vashti", "orlen", "brisk", "tamber", "kelmor"]
        profile = learn([tide(f"p{i}", h, f"2031-04-0{i + 1}", h) for i, h in enumerate(ports)])
        bad = tide("bad", "kelmor", "2031-04-01", "vashti", fail=True)
        assert "reference:old-answer" in [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("t"), profile)]

    def test_a_function_word_only_this_sentence_has_does_not_name_it(self) -> None:
        """A sentence request served another sentence's cached summary is an old answer even when the summary holds
        a function word ("for") that only this request's sentence holds among the requests."""

        def brief(rid: str, ask: str, said: str, *, fail: bool = False) -> Run:
            s = Step("b", "digest", "tool", input={"query": ask}, output={"digest": said})
            return Run(rid, "desk", outcome="failure" if fail else "success", steps=(s,))

        asks = ["orchard yields in the valley", "glassworks output this year", "ferry timetable changes",
                "quarry permits granted", "mill closures expected"]
        said = [f"Summary: {a} rose for the year, per the council." for a in asks]
        profile = learn([brief(f"p{i}", a, t) for i, (a, t) in enumerate(zip(asks, said, strict=True))])
        bad = brief("bad", "outlook for beekeepers", said[1], fail=True)
        assert "reference:old-answer" in [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("b"), profile)]


class TestExpectedProducer:
    @staticmethod
    def _booking(rid: str, code: str, *, fail: bool = False) -> Run:
        """A planner asks for offers, a model picks one, a booking tool takes the picked code."""
        steps = (
            Step(
                "o",
                "get_offers",
                "tool",
                input={"hotel": "H-1"},
                output={"offers": [{"code": code}]},
                start_ns=1,
                end_ns=2,
            ),
            Step(
                "m",
                "pick",
                "llm",
                input={"prompt": f"offers: {code}"},
                output={"tool": "book", "args": {"code": code}},
                deps=(D("o"),),
                start_ns=3,
                end_ns=4,
            ),
            Step(
                "b",
                "book",
                "tool",
                input={"code": code},
                status="error" if fail else "ok",
                output=None if fail else {"booked": True},
                error=ErrorInfo("Refused", f"rate {code} is no longer offered (current DEC-RATE-A)")
                if fail
                else None,
                deps=(D("m"),),
                start_ns=5,
                end_ns=6,
            ),
        )
        return Run(rid, "booker", outcome="failure" if fail else "success", steps=steps)

    def test_the_producer_of_a_value_is_the_step_that_brought_it_in(self) -> None:
        """In passing runs, the step that brought a value in produces it; a model that repeated it does not."""
        profile = learn([self._booking(f"ok{i}", "DEC-RATE-A") for i in range(4)])
        assert [k[1] for k in producers_of(profile, "i:dec-rate-a")] == ["get_offers"]

    def test_a_producer_that_produced_the_value_this_time_is_not_blamed_for_its_absence(self) -> None:
        """When the usual producer did produce the expected value this time (another step lost it), it gets no 'expected' evidence."""
        bad = self._booking("bad", "OCT-RATE-C", fail=True)
        offers = {"offers": [{"code": "OCT-RATE-C"}, {"code": "DEC-RATE-A"}]}
        steps = (dataclasses.replace(bad.steps[0], output=offers), *bad.steps[1:])
        bad = Run("bad", "booker", outcome="failure", steps=steps)
        found = analyze(bad, references=[self._booking(f"ok{i}", "DEC-RATE-A") for i in range(4)])
        offers_step = next(c for c in found.root_causes if c.step_id == "o")
        assert "reference:expected" not in offers_step.signals

    def test_a_step_called_again_that_produced_the_value_this_time_leaves_its_other_calls_unblamed(self) -> None:
        """A lookup called once per hotel, one call of which brought the expected code in, did not fail to
        produce it: its call about the other hotel gets no 'expected' evidence."""
        bad = self._booking("bad", "OCT-RATE-C", fail=True)
        other = dataclasses.replace(bad.steps[0], step_id="o2", input={"hotel": "H-2"},
                                    output={"offers": [{"code": "DEC-RATE-A"}]}, start_ns=2, end_ns=3)
        pick = dataclasses.replace(bad.steps[1], deps=(*bad.steps[1].deps, Dependency("o2")), start_ns=4, end_ns=5)
        steps = (bad.steps[0], other, pick, dataclasses.replace(bad.steps[2], start_ns=6, end_ns=7))
        bad = Run("bad", "booker", outcome="failure", steps=steps)
        found = analyze(bad, references=[self._booking(f"ok{i}", "DEC-RATE-A") for i in range(4)])
        first = next(c for c in found.root_causes if c.step_id == "o")
        assert "reference:expected" not in first.signals

    def test_a_value_the_failure_expects_points_at_its_usual_producer(self) -> None:
        """A failure naming the value passing runs had points at the step that brings it in, not at the model."""
        bad = self._booking("bad", "OCT-RATE-C", fail=True)
        found = analyze(bad, references=[self._booking(f"ok{i}", "DEC-RATE-A") for i in range(4)])
        assert found.root_causes[0].step_id == "o"
        assert "reference:expected" in found.root_causes[0].signals


class TestCategories:
    @staticmethod
    def _router(rid: str, queue: str) -> Run:
        return Run(
            rid,
            "router",
            outcome="success",
            steps=(Step("q", "route", "condition", input={"tier": "pro"}, output={"queue": queue}),),
        )

    def test_a_category_unseen_in_few_observations_says_little(self) -> None:
        """A label never seen in 3 passing observations weighs nothing (the rule of three); in 30 it weighs."""
        bad = self._router("bad", "billing")
        few = learn([self._router(f"p{i}", "standard") for i in range(3)])
        many = learn([self._router(f"p{i}", "standard") for i in range(30)])

        def weight(profile: Any) -> float:
            found = [
                e
                for e in violations(bad.steps[0], Lineage(bad).view("q"), profile)
                if e.diagnoser == "reference:category"
            ]
            return max((e.suspicion for e in found), default=0.0)

        assert weight(few) == 0.0
        assert weight(many) > 0.3

    def test_a_stamp_passing_runs_wrote_on_several_days_is_no_category(self) -> None:
        """A tide table's publication stamp holding a day, which passing runs on other days wrote differently, is
        not a category when a new day shows up; one stamp every passing run shared still is."""

        def run_of(rid: str, published: str) -> Run:
            step = Step("q", "tide_table", "tool", input={"port": "B"}, output={"published": published, "cm": 140})
            return Run(rid, "a", outcome="success", steps=(step,))

        def weight(refs: list[Run]) -> float:
            bad = run_of("bad", "2027-05-11T06Z")
            found = violations(bad.steps[0], Lineage(bad).view("q"), learn(refs))
            return max((e.suspicion for e in found if e.diagnoser == "reference:category"), default=0.0)

        days = [run_of(f"p{i}", f"2027-05-1{2 + i % 2}T06Z") for i in range(30)]
        assert weight(days) == 0.0
        assert weight([run_of(f"p{i}", "2027-05-13T06Z") for i in range(30)]) > 0.3


class TestGivenValues:
    @staticmethod
    def _one(rid: str, name: str, kind: str, inp: Any, out: Any) -> Run:
        return Run(rid, "a", outcome="success", steps=(Step("s", name, kind, input=inp, output=out),))

    @staticmethod
    def _found(bad: Run, refs: list[Run], signal: str) -> list[Any]:
        return [e for e in violations(bad.steps[0], Lineage(bad).view("s"), learn(refs)) if e.diagnoser == signal]

    def test_an_id_not_given_is_ungrounded_only_when_the_step_was_given_an_id_of_its_shape(self) -> None:
        """A lookup that always echoed the id it was asked about breaks that habit when asked about AX-0102 and
        answering AX-0101; asked for every record (no id given), the ids it answers are the world's."""
        refs = [self._one(f"p{i}", "weights", "tool", {"ids": f"AX-010{i}"}, {"animal": f"AX-010{i}", "kg": 40 + i})
                for i in range(1, 6)]
        assert self._found(self._one("b", "weights", "tool", {"ids": "AX-0102"}, {"animal": "AX-0101", "kg": 41}),
                           refs, "reference:grounded")
        assert not self._found(self._one("b", "weights", "tool", {"ids": "all"}, {"animal": "AX-0101", "kg": 41}),
                               refs, "reference:grounded")

    def test_a_reading_for_another_day_than_asked_is_ungrounded(self) -> None:
        """A greenhouse sensor lookup whose sample was always taken on the day it was asked for (at a time of
        its own) answering with the previous evening's sample names a day it was not given; the morning's does not."""
        days = ("2027-03-03", "2027-03-17", "2027-03-24", "2027-03-31")
        refs = [self._one(f"p{i}", "sensor", "tool", {"house": f"G{i}", "date": d},
                          {"house": f"G{i}", "sampled_at": f"{d}T07:2{i}", "soil_pct": 61.0 + i})
                for i, d in enumerate(days)]

        def sample(at: str) -> Run:
            return self._one("b", "sensor", "tool", {"house": "G9", "date": "2027-03-10"},
                             {"house": "G9", "sampled_at": at, "soil_pct": 61.0})

        [e] = self._found(sample("2027-03-09T23:05"), refs, "reference:grounded")
        assert "sampled_at=2027-03-09T23:05" in e.reason
        assert not self._found(sample("2027-03-10T07:25"), refs, "reference:grounded")

    def test_a_value_taken_from_another_part_of_the_input_than_in_passing_runs(self) -> None:
        """A memory node handed the conversation (with the fresh patient record) and the request (with the last
        visit's record) always took the dose from the conversation in passing runs; taking the last visit's
        dose from the request is a finding, taking the fresh one is not."""

        def node(rid: str, fresh: str, old: str, kept: str) -> Run:
            record = {"role": "tool", "content": json.dumps({"mrn": "PX-1", "dose": fresh})}
            inp = {"messages": [record], "request": {"mrn": "PX-1", "last_visit": {"dose": old}}}
            return self._one(rid, "remember", "other", inp, {"patient": {"mrn": "PX-1", "dose": kept}})

        refs = [node(f"p{i}", f"DZ-{i}01", f"DZ-{i}09", f"DZ-{i}01") for i in range(1, 5)]
        [e] = self._found(node("b", "DZ-701", "DZ-709", "DZ-709"), refs, "reference:source")
        assert "DZ-709" in e.reason and "request" in e.reason and "messages" in e.reason
        assert not self._found(node("b", "DZ-701", "DZ-709", "DZ-701"), refs, "reference:source")

    def test_a_field_passing_runs_left_empty_is_no_new_field(self) -> None:
        """A field every passing occurrence had empty (``excluded: []``) is part of the output's shape: filled
        in the failing run it is no new field; a field none of them had at all is."""
        refs = [self._one(f"p{i}", "sheet", "retrieval", {"id": f"AX-{i}"}, {"id": f"AX-{i}", "excluded": []})
                for i in range(1, 6)]
        filled = self._one("b", "sheet", "retrieval", {"id": "AX-9"}, {"id": "AX-9", "excluded": ["nuts"]})
        extra = self._one("b", "sheet", "retrieval", {"id": "AX-9"}, {"id": "AX-9", "excluded": [], "note": "nuts"})
        assert not self._found(filled, refs, "reference:new-field")
        assert self._found(extra, refs, "reference:new-field")

    def test_a_new_category_a_step_was_given_weighs_half(self) -> None:
        """A parse answering a label never seen in passing runs keeps half the finding when its input held that
        label (it copied it), all of it when the label is its own."""

        def run_of(rid: str, text: str, treat: str, *, fail: bool = False) -> Run:
            steps = (
                Step("s", "read", "parse", input={"text": text}, output={"treat": treat, "n": 7}, start_ns=1, end_ns=2),
                Step("c", "check", "condition", input={"treat": treat}, output=None if fail else "ok",
                     status="error" if fail else "ok", deps=(D("s"),), start_ns=3, end_ns=4,
                     error=ErrorInfo("Rejected", f"treat {treat} is not allowed") if fail else None),
            )
            return Run(rid, "a", outcome="failure" if fail else "success", steps=steps)

        refs = [run_of(f"p{i}", f"treat: apple, n: {i}", "apple") for i in range(30)]

        def weight(text: str) -> float:
            a = analyze(run_of("b", text, "nuts", fail=True), references=refs, top=5)
            [c] = [c for c in a.localization.ranked_all if c.step_id == "s"]
            return c.features.get("evidence:reference:category", 0.0)

        copied, own = weight("treat: nuts, n: 7"), weight("treat: apple, n: 7")
        assert 0 < copied < own


class TestModelSource:
    @staticmethod
    def _run(rid: str, plan: str, *, fail: bool = False, asked: str = "") -> Run:
        """A model writes a plan, a tool records it as ``plan recorded: <plan>``, a submit checks the job."""
        call = {"role": "assistant", "tool_calls": [{"name": "record_plan", "arguments": {"plan": plan}}]}
        steps = (
            Step("m", "generation", "llm", input={"messages": [{"role": "user", "content": f"quote job {rid} {asked}"}]},
                 output=call, start_ns=1, end_ns=2),
            Step("r", "record_plan", "tool", input={"plan": plan}, output=f"plan recorded: {plan}",
                 deps=(D("m"),), start_ns=3, end_ns=4),
            Step("s", "submit", "tool", input={"job": 7}, output=None if fail else "accepted",
                 status="error" if fail else "ok", deps=(D("r"),), start_ns=5, end_ns=6,
                 error=ErrorInfo("Rejected", "job 7 has no pricing line") if fail else None),
        )
        return Run(rid, "a", outcome="failure" if fail else "success", steps=steps)

    def _source(self, usual: str, odd: str, asked: str = "") -> float:
        refs = [self._run(f"p{i}", usual) for i in range(30)]
        a = analyze(self._run("b", odd, fail=True, asked=asked), references=refs, top=5)
        [c] = [c for c in a.localization.ranked_all if c.step_id == "m"]
        return c.features.get("evidence:reference:category-source", 0.0)

    def test_a_tool_echoing_a_new_model_argument_passes_the_finding_to_the_model(self) -> None:
        """A tool echoing a plan never seen in passing runs inside its usual wording was given the new part: the
        model call that wrote the plan carries the finding; a label the model picked, or a plan its prompt
        held (it copied it), stays with the tool."""
        assert self._source("survey, match, price, submit", "survey, match, submit") > 0
        assert self._source("approve", "reject") == 0.0
        assert self._source("survey, match, price, submit", "survey, match, submit", "survey, match, submit") == 0.0


class TestFormulaExceptions:
    @staticmethod
    def _manifest(rid: str, base: float, closing: int = 1, *, fail: bool = False) -> Run:
        """A formatter writing seven given start depths, then ``closing`` numbers computed no usual way."""
        starts = [base + 10.0 * i for i in range(7)]
        tail = " ".join(f"end {base + 7.37 * (j + 11):.2f}" for j in range(closing))
        text = " | ".join(f"{s:.1f}" for s in starts) + " " + tail
        step = Step("f", "format_manifest", "other", input={"starts": starts}, output={"text": text}, start_ns=1, end_ns=2)
        return Run(rid, "lab", outcome="failure" if fail else "success", steps=(step,))

    def test_an_exception_every_passing_occurrence_had_is_no_deviation(self) -> None:
        """A number computed no usual way, written as often as every passing occurrence wrote one (a closing
        total), breaks no formula invariant; more of them than passing occurrences ever had still do."""
        profile = learn([self._manifest(f"ok{i}", 100.0 + 13 * i) for i in range(4)])
        same = self._manifest("bad", 500.0, fail=True)
        assert [e.diagnoser for e in violations(same.steps[0], Lineage(same).view("f"), profile)] == []
        more = self._manifest("bad", 500.0, closing=3, fail=True)
        found = [e.diagnoser for e in violations(more.steps[0], Lineage(more).view("f"), profile)]
        assert found == ["reference:formula"]


class TestFormulaCoincidences:
    @staticmethod
    def _reserve(rid: str, qty: int, aisle: int, *, fail: bool = False) -> Run:
        """A step reserving stock: it copies the aisle from the stock record beside the quantity."""
        step = Step(
            "r",
            "reserve",
            "state",
            input={"qty": qty, "stock": {"aisle": aisle, "on_hand": 400 + qty}},
            output={"aisle": aisle, "reserved": True},
            start_ns=1,
            end_ns=2,
        )
        return Run(rid, "picker", outcome="failure" if fail else "success", steps=(step,))

    @staticmethod
    def _render(rid: str, qtys: list[int], stated: int, *, fail: bool = False) -> Run:
        """A step writing the total of the listed quantities, given the total the order states."""
        step = Step(
            "t",
            "render",
            "output",
            input={"stated_total": stated, "lines": [{"qty": q} for q in qtys]},
            output={"total": sum(qtys)},
            start_ns=1,
            end_ns=2,
        )
        return Run(rid, "picker", outcome="failure" if fail else "success", steps=(step,))

    def test_a_value_that_still_fits_the_usual_formula_is_no_deviation(self) -> None:
        """An aisle copied from the record as in every passing run, equal to the quantity by coincidence (so
        `derivation` names copy(qty) first), breaks no formula invariant; an aisle from nowhere still does."""
        profile = learn([self._reserve(f"ok{i}", 3 + i, 20 + i) for i in range(6)])
        same = self._reserve("bad", 5, 5, fail=True)
        found = [e.diagnoser for e in violations(same.steps[0], Lineage(same).view("r"), profile)]
        assert "reference:formula" not in found
        wrong = dataclasses.replace(
            same, steps=(dataclasses.replace(same.steps[0], output={"aisle": 77, "reserved": True}),)
        )
        found = [e.diagnoser for e in violations(wrong.steps[0], Lineage(wrong).view("r"), profile)]
        assert "reference:formula" in found

    def test_a_formula_only_some_passing_values_fit_is_no_passing_formula(self) -> None:
        """A prompt that copies the previous proposal's budget, where the passing prompts copied the current
        one's budget and cap (the cap shared with the previous proposal, so half their values fit a copy of
        it), still deviates: a copy of the previous proposal was no way the passing runs computed theirs."""

        def prompt(rid: str, budget: int, before: int, *, fail: bool = False) -> Run:
            cap = 500000
            given = {"current": [budget, cap], "previous": [before, cap]}
            said = before if fail else budget
            step = Step("c", "compose", "other", input=given, output=f"budget {said}, cap {cap}")
            return Run(rid, "panel", outcome="failure" if fail else "success", steps=(step,))

        profile = learn([prompt(f"ok{i}", 300000 + 1000 * i, 200000 + 1000 * i) for i in range(5)])
        bad = prompt("bad", 310000, 240000, fail=True)
        found = [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("c"), profile)]
        assert "reference:formula" in found

    def test_a_number_of_three_operands_is_said_to_fit_no_simple_formula_not_none(self) -> None:
        """A line amount converted at a rate (price x kg x rate), where passing runs multiplied two inputs, may
        deviate, but the reason says it fits no simple formula of its inputs, never "no formula" (a new
        user's roastery: 39.1 = 23 x 2 x 0.85, all three given)."""

        def convert(rid: str, price: float, kg: float, rate: float, *, fail: bool = False) -> Run:
            amount = round(price * kg * rate, 2)
            step = Step("c", "convert_line", "tool", input={"eur_per_kg": price, "kg": kg, "rate": rate},
                        output={"amount": amount}, start_ns=1, end_ns=2)
            return Run(rid, "roastery", outcome="failure" if fail else "success", steps=(step,))

        profile = learn([convert(f"ok{i}", 17.0 + 3 * i, 3.0 + i, 1.0) for i in range(6)])
        bad = convert("bad", 23.0, 2.0, 0.85, fail=True)
        reasons = [e.reason for e in violations(bad.steps[0], Lineage(bad).view("c"), profile)
                   if e.diagnoser == "reference:formula"]
        assert reasons and all("no simple formula of its inputs" in r for r in reasons)

    def test_a_formula_the_passing_values_fit_as_well_is_no_deviation(self) -> None:
        """A total summed from the quantities, where every passing run's sum equalled the stated total (so
        theirs were named copies of it), is computed as theirs were when the two part in the failing run."""
        profile = learn([self._render(f"ok{i}", [2 + i, 5, 7], 14 + i) for i in range(4)])
        bad = self._render("bad", [3, 5, 10], 21, fail=True)
        found = [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("t"), profile)]
        assert "reference:formula" not in found


class TestMapEntries:
    def test_an_entry_of_a_map_keyed_by_ids_is_no_operand_of_a_rule(self) -> None:
        """A priority equal to a growing memory's first entry in every call but one breaks no ratio or formula."""
        memory: dict[str, int] = {}
        steps = []
        for i in range(8):
            unit = f"U-{100 + i}"
            priority = 1 if i == 5 else 3
            steps.append(
                Step(
                    f"m{i}",
                    "remember",
                    "other",
                    input={"unit": unit, "memory": dict(memory), "track": "urgent" if i == 5 else "usual"},
                    output={"unit": unit, "priority": priority},
                    start_ns=i,
                    end_ns=i + 1,
                )
            )
            memory[unit] = priority
        run = Run("r", "planner", outcome="failure", steps=tuple(steps))
        lin = Lineage(run)
        profiles = sibling_profiles(run, lin)
        found = list(violations(steps[5], lin.view("m5"), profiles["m5"]))
        assert [e.diagnoser for e in found if e.diagnoser in ("reference:ratio", "reference:formula")] == []


class TestPresence:
    @staticmethod
    def _lookups(last: dict[str, Any]) -> tuple[Run, Lineage]:
        rows = [("r1", "SAB"), ("r2", "SATB"), ("r3", "TTBB"), ("r4", "SSA")]
        steps = [
            Step(f"g{i}", "get_record", "tool", input={"record_id": rid},
                 output={"id": rid, "title": f"Record number {i}", "code": code}, start_ns=i, end_ns=i + 1)
            for i, (rid, code) in enumerate(rows)
        ]
        steps.append(Step("g9", "get_record", "tool", input={"record_id": "r9"}, output=last, start_ns=9, end_ns=10))
        run = Run("r", "lookups", outcome="failure", steps=tuple(steps))
        return run, Lineage(run)

    def test_a_field_holding_a_two_letter_value_is_not_lacking(self) -> None:
        """A call whose field holds a value too short to trace (``"SA"``) has the field: no presence finding;
        a call without the field still lacks it."""
        run, lin = self._lookups({"id": "r9", "title": "Record number 9", "code": "SA"})
        found = list(violations(run.steps[-1], lin.view("g9"), sibling_profiles(run, lin)["g9"]))
        assert [e for e in found if e.diagnoser == "reference:presence"] == []
        run, lin = self._lookups({"id": "r9", "title": "Record number 9"})
        found = list(violations(run.steps[-1], lin.view("g9"), sibling_profiles(run, lin)["g9"]))
        assert [e.reason for e in found if e.diagnoser == "reference:presence"] == [
            "its output lacks 'code', present in all 4 passing occurrences"
        ]

    def test_a_field_recorded_as_null_is_called_empty_not_lacking(self) -> None:
        """A call whose field holds null is as absent to the checks, but the reason says the field is empty:
        the person finds the key in the output."""
        run, lin = self._lookups({"id": "r9", "title": "Record number 9", "code": None})
        found = list(violations(run.steps[-1], lin.view("g9"), sibling_profiles(run, lin)["g9"]))
        assert [e.reason for e in found if e.diagnoser == "reference:presence"] == [
            "its output's 'code' is empty, filled in all 4 passing occurrences"
        ]

    def test_a_field_held_empty_in_a_json_text_answer_is_called_empty_not_lacking(self) -> None:
        """A tool answering JSON text (as a framework's tools do) whose field holds an empty list has the field,
        empty: the reason says so, not that the output lacks it."""
        run, lin = self._lookups('{"id": "r9", "title": "Record number 9", "code": []}')  # type: ignore[arg-type]
        found = list(violations(run.steps[-1], lin.view("g9"), sibling_profiles(run, lin)["g9"]))
        assert [e.reason for e in found if e.diagnoser == "reference:presence"] == [
            "its output's 'code' is empty, filled in all 4 passing occurrences"
        ]

    def test_a_field_null_only_in_a_nested_record_is_still_lacking(self) -> None:
        """A call whose output lacks the field at its top level, where its other calls held it, lacks it even when
        a record nested inside holds a field of that name as null: that is another record's field."""
        run, lin = self._lookups({"id": "r9", "title": "Record number 9", "parent": {"id": "r1", "code": None}})
        found = list(violations(run.steps[-1], lin.view("g9"), sibling_profiles(run, lin)["g9"]))
        assert [e.reason for e in found if e.diagnoser == "reference:presence"] == [
            "its output lacks 'code', present in all 4 passing occurrences"
        ]

    def test_a_field_blank_in_a_returned_record_list_is_called_empty(self) -> None:
        """A call returning a list of records, one of which holds the field as a blank text, is said to have it
        empty, as a record returned alone is."""
        assert holds_empty([{"id": "r1", "code": "SAB"}, {"id": "r2", "code": "  "}], "code")


class TestHeldParts:
    def test_a_value_is_from_no_wrong_part_when_its_usual_part_holds_no_other(self) -> None:
        """A patient's insurer taken from the request is a wrong source only while the conversation it always
        came from holds another insurer; a conversation with none (a returning patient, no lookup) leaves none."""

        def intake(rid: str, msgs: list[Any], request: dict[str, Any], kept: str) -> Run:
            inp = {"messages": msgs, "request": request}
            out = {"patient": {"mrn": "MR-88", "insurer": kept}}
            return TestGivenValues._one(rid, "register", "other", inp, out)

        def rec(plan: str) -> dict[str, str]:
            return {"role": "tool", "content": json.dumps({"mrn": "MR-88", "insurer": plan})}

        refs = [intake(f"p{i}", [rec(f"HP-{i}40")], {"mrn": "MR-88"}, f"HP-{i}40") for i in range(1, 5)]
        returning = intake("b", [{"role": "user", "content": "admit"}], {"mrn": "MR-88", "insurer": "HP-930"}, "HP-930")
        assert not TestGivenValues._found(returning, refs, "reference:source")
        stale = intake("b", [rec("HP-940")], {"mrn": "MR-88", "insurer": "HP-930"}, "HP-930")
        assert TestGivenValues._found(stale, refs, "reference:source")


class TestZonedDays:
    def test_a_utc_stamp_on_the_day_after_the_asked_one_is_the_same_evening(self) -> None:
        """A tide gauge always read on the day asked, stamped in UTC, answering at 02:10Z on the next day (the
        evening asked, west of Greenwich) names no other day; a stamp two days off still does."""
        days = ("2025-06-03", "2025-06-10", "2025-06-17", "2025-06-24")
        refs = [TestGivenValues._one(f"p{i}", "gauge", "tool", {"station": f"G{i}", "date": d},
                                     {"station": f"G{i}", "read_at": f"{d}T14:1{i}:00Z", "level_m": 2.1 + i})
                for i, d in enumerate(days)]

        def reading(at: str) -> Run:
            return TestGivenValues._one("b", "gauge", "tool", {"station": "G9", "date": "2025-07-01"},
                                        {"station": "G9", "read_at": at, "level_m": 2.4})

        assert not TestGivenValues._found(reading("2025-07-02T02:10:00Z"), refs, "reference:grounded")
        assert TestGivenValues._found(reading("2025-07-03T02:10:00Z"), refs, "reference:grounded")



def _graph_run(rid: str, level: float, outcome: str, frame: str) -> Run:
    """A graph whose planner and router each make one model call, named after the client alone; both answer
    a ``level`` (the planner's in the thousands, the router's in units).  ``frame``: what tells the calls
    apart, their enclosing nodes, the tools they were offered, or nothing."""

    def llm(sid: str, parent: str, out: Any, tools: list[str], t: int) -> Step:
        inp: dict[str, Any] = {"messages": [{"role": "user", "content": f"{sid} for {rid}"}]}
        if frame == "tools":
            inp["tools"] = [{"type": "function", "function": {"name": n}} for n in tools]
        return Step(sid, "ChatOpenAI", "llm", parent_id=parent, input=inp, output=out, start_ns=t, end_ns=t + 1)

    routed = 1 + int(rid[-1]) if rid[-1].isdigit() else 2
    plan = llm("p", "pn" if frame == "nodes" else "g", {"level": level}, ["plan_flight"], 2)
    route = llm("r", "rn" if frame == "nodes" else "g", {"level": routed}, ["pick_route"], 4)
    nodes = [Step("pn", "planner", "agent", parent_id="g", start_ns=1, end_ns=3)] if frame == "nodes" else []
    nodes += [Step("rn", "router", "agent", parent_id="g", start_ns=3, end_ns=5)] if frame == "nodes" else []
    root = Step("g", "graph", "agent", start_ns=0, end_ns=6)
    return Run(rid, "flights", outcome=outcome, steps=(root, *nodes, plan, route))


def test_model_calls_named_after_their_client_are_matched_by_the_node_or_tools_that_frame_them() -> None:
    """Model calls with no agent and one client name are keyed by their enclosing node (else the tools they
    were offered), so a planner's answer off by three orders of magnitude breaks the planner's invariant; with
    nothing to tell the calls apart, the planner's and router's answers blend and nothing stands out."""
    for frame in ("nodes", "tools", "none"):
        profile = learn([_graph_run(f"ok{k}", 1000 + 100 * k, "success", frame) for k in range(4)])
        bad = _graph_run("f", 12, "failure", frame)
        by_id = {s.step_id: s for s in bad.steps}
        apart = step_key(by_id["p"], by_id) != step_key(by_id["r"], by_id)
        assert apart == (frame != "none")
        assert step_key(by_id["p"]) == step_key(by_id["r"])  # without the run's steps, the plain key
        assert profile.knows(by_id["p"], by_id) and profile.knows(by_id["r"], by_id)
        found = [e.diagnoser for e in violations(by_id["p"], Lineage(bad).view("p"), profile, steps=by_id)]
        assert ("reference:magnitude" in found) == apart


def test_a_number_given_with_a_minus_sign_and_answered_without_one_is_grounded() -> None:
    """A step whose passing answers were always values it was given is not flagged for answering 7 when it
    was given -7 (a shortfall restated as an amount), but is for answering 8, which it was not given."""

    def run(rid: str, bikes: int, short: int, move: int, outcome: str) -> Run:
        step = Step("m", "plan_moves", "other", input={"bikes": bikes, "short": short}, output={"move": move})
        return Run(rid, "moves", outcome=outcome, steps=(step,))

    profile = learn([run(f"ok{k}", 10 + k, -3 - k, 10 + k, "success") for k in range(4)])
    for move, flagged in ((7, False), (8, True)):
        bad = run("f", 10, -7, move, "failure")
        found = [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("m"), profile)]
        assert ("reference:grounded" in found) == flagged, (move, found)


def _weigh(rid: str, calls: list[tuple[float, str, float]], fail: bool = False) -> Run:
    """A run of a unit converter called once per (amount, unit, grams) triple."""
    steps = [
        Step(f"c{i}", "to_grams", "tool", input={"amount": a, "unit": u}, output={"grams": g},
             start_ns=2 * i + 1, end_ns=2 * i + 2)
        for i, (a, u, g) in enumerate(calls)
    ]
    return Run(rid, "kitchen", outcome="failure" if fail else "success", steps=tuple(steps))


class TestSettingRatios:
    PASSING: ClassVar[list[Run]] = [
        _weigh("ok0", [(2.0, "lb", 907.2), (3.0, "oz", 85.05)]),
        _weigh("ok1", [(5.0, "lb", 2268.0), (1.0, "oz", 28.35)]),
        _weigh("ok2", [(4.0, "lb", 1814.4), (8.0, "oz", 226.8)]),
    ]

    def _ratio(self, run: Run, sid: str) -> list[Evidence]:
        found = violations(run.step(sid), Lineage(run).view(sid), learn(self.PASSING))
        return [e for e in found if e.diagnoser == "reference:ratio"]

    def test_a_factor_constant_per_unit_is_broken_by_a_call_with_another_factor(self) -> None:
        """A converter whose grams/amount was always 453.6 for unit=lb (and 28.35 for oz) breaks that relation
        when a pound call answers with the ounce factor, though over all calls the ratio was never constant."""
        bad = _weigh("bad", [(7.5, "lb", 212.6), (10.0, "oz", 283.5)], fail=True)
        [ev] = self._ratio(bad, "c0")
        assert "unit=lb" in ev.reason and "453.6" in ev.reason
        assert not self._ratio(bad, "c1")

    def test_one_repeated_call_per_setting_shows_no_factor(self) -> None:
        """Passing calls that all gave the same amount for a unit prove no factor: a new amount's ratio is no violation."""
        same = [_weigh(f"ok{i}", [(2.0, "cup", 480.0)]) for i in range(4)]
        bad = _weigh("bad", [(3.0, "cup", 300.0)], fail=True)
        found = violations(bad.steps[0], Lineage(bad).view("c0"), learn(same))
        assert not [e for e in found if e.diagnoser == "reference:ratio"]


class TestAnswersOfWholeTools:
    @staticmethod
    def _lab(rid: str, site: str, *, fail: bool = False, shift: int = 0) -> Run:
        """One run of a soil-assay lookup per sample: sample ``i`` of any site gets the ``i``-th day's result."""
        steps = tuple(
            Step(
                f"l{i}",
                "soil_assay",
                "tool",
                input={"sample_id": f"K-{site}{i}"},
                output={"taken": f"2026-03-{9 + i + (shift if i == 1 else 0):02d}T08:40", "nitrate": 8 + 3 * i},
                start_ns=i,
                end_ns=i + 1,
            )
            for i in range(1, 4)
        )
        return Run(rid, "survey", outcome="failure" if fail else "success", steps=steps)

    def test_a_tool_whose_every_call_shares_another_requests_answer_answers_by_something_else(self) -> None:
        """A soil-assay lookup whose every call answers what a passing run's lookup got for another sample answers by the
        sample's place, not by its id: no call is a stale entry; one call alone sharing another's answer is."""
        profile = learn([self._lab("p1", "NW")])
        every = self._lab("bad", "SE", fail=True)
        assert unkeyed(every.steps, profile, {s.step_id: s for s in every.steps}) == {step_key(every.steps[0])}
        one = self._lab("bad2", "SE", fail=True, shift=0)
        one = dataclasses.replace(
            one,
            steps=tuple(
                dataclasses.replace(s, output={"taken": f"2026-04-0{i}T10:00", "nitrate": 30 + i}) if i else s
                for i, s in enumerate(one.steps)
            ),
        )
        assert unkeyed(one.steps, profile, {s.step_id: s for s in one.steps}) == frozenset()

    def test_a_span_whose_children_read_more_than_its_recorded_input_has_no_same_input(self) -> None:
        """A span recorded with its site alone, whose model call is handed the season's assays, answers by those
        results: another answer to the same recorded input is no changed answer; a span whose call is handed
        only its own input and answers otherwise differs through that call, which holds the changed answer."""

        def run_of(rid: str, samples: list[int], flagged: bool, *, handed: bool = True, fail: bool = False) -> Run:
            given = {"site": "Harrowgate", "results": samples} if handed else {"site": "Harrowgate"}
            steps = (
                Step("a", "assess", "other", input={"site": "Harrowgate"}, output={"compliant": not flagged}, start_ns=1, end_ns=4),
                Step("m", "ChatCompletion", "llm", input=given, output={"compliant": not flagged}, parent_id="a", start_ns=2, end_ns=3),
            )
            return Run(rid, "survey", outcome="failure" if fail else "success", steps=steps)

        for handed, expected in ((True, False), (False, True)):
            profile = learn([run_of(f"p{i}", [8 + i, 11], False, handed=handed) for i in range(3)])
            bad = run_of("bad", [40, 11], True, handed=handed, fail=True)
            by_id = {s.step_id: s for s in bad.steps}
            found = [e.diagnoser for e in violations(bad.steps[0], Lineage(bad).view("a"), profile, steps=by_id)]
            assert "reference:same-input" not in found
            found = [e.diagnoser for e in violations(bad.steps[1], Lineage(bad).view("m"), profile, steps=by_id)]
            assert ("reference:same-input" in found) is expected


def test_whether_a_span_read_more_than_its_input_follows_each_run_s_own_children() -> None:
    """Asked about two runs in turn (their steps sharing ids), whether a span's children were handed values
    its recorded input lacks is read from that run's steps each time, never from the other run's."""
    from trajdebug.analysis.reference._answers import _reads_unrecorded

    def steps_of(handed: bool) -> dict[str, Step]:
        inner = {"site": "Harrowgate", "results": [9, 11]} if handed else {"site": "Harrowgate"}
        return {
            "a": Step("a", "assess", "other", input={"site": "Harrowgate"}, start_ns=1, end_ns=4),
            "m": Step("m", "ChatCompletion", "llm", input=inner, parent_id="a", start_ns=2, end_ns=3),
            "z": Step("z", "assess", "other", input={"site": "Kelby"}, start_ns=5, end_ns=6),
        }

    handed, alone = steps_of(True), steps_of(False)
    for _ in range(2):
        assert _reads_unrecorded(handed["a"], handed) is True
        assert _reads_unrecorded(alone["a"], alone) is False
        assert _reads_unrecorded(handed["z"], handed) is False


def _gauge_run(rid: str, texts: list[str], outcome: str) -> Run:
    """A tank farm's gauge reader answering in free text, one call per tank."""
    steps = [
        Step(f"{rid}{i}", "read_gauge", "tool", input={"tank": t}, output=x, start_ns=i, end_ns=i + 1)
        for i, (t, x) in enumerate(zip("ABC", texts))
    ]
    return Run(rid, "tanks", outcome=outcome, steps=tuple(steps))


def test_a_count_beside_a_reading_in_range_is_said_to_be_a_new_quantity_not_an_outlier() -> None:
    """A text that states the reading passing runs stated (in their unit, in their range) and also a number
    in a unit word they never wrote is flagged with the same weight, but said to state a new quantity, not
    a reading out of their range.  A reading that is itself out of range is still said to be out of range."""
    passing = learn(
        [
            _gauge_run(
                f"ok{k}",
                [f"gauge G{k} level {30 + 5 * k}% at 07:1{k}", f"gauge H{k} level {50 + k}% at 08:00",
                 f"gauge J{k} level {40 + k}% at 09:00"],
                "success",
            )
            for k in range(4)
        ]
    )
    counted = _gauge_run("f", ["gauge G1 level 44% at 07:10", "3 gauges avg level 41% at 07:12", "x"], "failure")
    [found] = violations(counted.steps[1], Lineage(counted).view("f1"), passing)
    assert found.diagnoser == "reference:magnitude"
    assert found.reason == "(output) states 3 gauges, a quantity passing runs never wrote (its 41% is as theirs were)"
    low = _gauge_run("g", ["gauge G1 level 44% at 07:10", "gauge G3 level 3% at 07:12", "x"], "failure")
    [found_low] = violations(low.steps[1], Lineage(low).view("g1"), passing)
    assert found_low.reason.startswith("(output)=3 is about 10x outside what passing runs had")
    assert found_low.suspicion == found.suspicion


def test_a_bare_number_in_range_does_not_vouch_for_a_reading_in_a_new_unit() -> None:
    """Passing runs wrote a bare tank count beside their reading; a reading in a unit they never wrote
    (3560 F beside counts that are as theirs were) is still flagged, said to be in a unit they never wrote:
    only a number in a unit word vouches for the text, and a number in another unit is no reading out of
    their range (the text after it differs: not comparable; nu26 F3)."""
    passing = learn(
        [_gauge_run(f"ok{k}", [f"oven {175 + 5 * k} C batch {11 + k}", f"oven {180 + k} C batch 12", "x"], "success")
         for k in range(4)]
    )
    bad = _gauge_run("h", ["oven 180 C batch 12", "oven 3560 F batch 12", "x"], "failure")
    [found] = violations(bad.steps[1], Lineage(bad).view("h1"), passing)
    assert found.reason == "(output) states 3560 f, a unit passing runs never wrote it (they wrote c)"


def _dose_run(rid: str, strengths: list[str], outcome: str) -> Run:
    """A pharmacy's repeat lookup answering each medicine's strength as text, unit and all, one call per item."""
    steps = [
        step(f"{rid}{i}", "get_repeat", "tool", i, {"item": i}, {"drug": f"D{i}", "strength": x})
        for i, x in enumerate(strengths)
    ]
    return Run(rid, "repeats", outcome=outcome, steps=tuple(steps))


def _strength_findings(passing: list[list[str]], failing: str) -> list[str]:
    profile = learn([_dose_run(f"ok{k}", xs, "success") for k, xs in enumerate(passing)])
    bad = _dose_run("f", [failing], "failure")
    found = violations(bad.steps[0], Lineage(bad).view("f0"), profile)
    return [e.reason for e in found if e.diagnoser in ("reference:magnitude", "reference:sign")]


def test_a_strength_whose_passing_unit_varied_has_no_range() -> None:
    """Passing runs wrote a strength in milligrams and in micrograms (20 mg, 50 micrograms, 50 mg, 5 mg): its
    numbers' scale follows the unit the writer chose, so 500 mg is no number "10x outside" them (nu26 F3)."""
    assert _strength_findings([["20 mg"], ["50 micrograms"], ["50 mg"], ["5 mg"]], "500 mg") == []


def test_a_strength_always_written_in_one_unit_keeps_its_range() -> None:
    """Where every passing strength was written in milligrams, one a hundred times their largest, in
    milligrams too, is still out of their range."""
    found = _strength_findings([["20 mg"], ["40 mg"], ["50 mg"], ["5 mg"]], "5000 mg")
    assert found == ["strength=5000 is about 100x outside what passing runs had (5 to 50)"]


def test_a_unit_written_in_the_singular_and_the_plural_is_one_unit() -> None:
    """Passing runs wrote a lead time as 1 day, 3 days, 5 days and 2 days: one unit, singular or plural, so
    300 days is still a hundred times their range (rev53a M1)."""
    found = _strength_findings([["1 day"], ["3 days"], ["5 days"], ["2 days"]], "300 days")
    assert found == ["strength=300 is about 100x outside what passing runs had (1 to 5)"]


def test_a_unit_written_with_a_synonym_is_one_unit() -> None:
    """Passing runs wrote a rate as 12%, 15 %, 9% and 20 percent: ``percent`` is ``%``, so 900% is still a
    hundred times their range (rev53a M1)."""
    found = _strength_findings([["12%"], ["15 %"], ["9%"], ["20 percent"]], "900%")
    assert found == ["strength=900 is about 100x outside what passing runs had (9 to 20)"]


def test_each_quantity_of_a_text_is_compared_with_the_passing_values_in_its_unit() -> None:
    """A text stating two quantities, each in its unit word (a count of probes and a level in mm), has each
    compared with the passing values in that unit: a level ten times too low is out of the levels' range,
    though the probe counts beside them span down to it."""
    passing = [[f"{p} probes, level {level} mm"] for p, level in ((2, 310), (3, 340), (2, 325), (3, 350))]
    found = _strength_findings(passing, "2 probes, level 31 mm")
    assert [r.split(" is about")[0] for r in found] == ["strength=31"]


def _pantry_run(rid: str, kilos: dict[str, float], outcome: str) -> Run:
    """A pantry check: what is missing of each ingredient, against stock the tool holds."""
    have = {"oats": 20.0, "honey": 8.0, "salt": 5.0}
    short = {k: round(max(0.0, v - have[k]), 2) for k, v in kilos.items()}
    step = Step(f"{rid}0", "check_pantry", "tool", input={"kilos": kilos}, output=short, start_ns=0, end_ns=1)
    return Run(rid, "pantry", outcome=outcome, steps=(step,))


def test_a_field_passing_runs_held_at_one_value_has_no_usual_formula() -> None:
    """When passing runs always had the same value in a field (nothing missing: 0), the formulas that value
    happens to fit are coincidences: a different value, or the same one fitting another formula, is not
    "computed another way" (its sign may still be new)."""
    amounts = [(0.9, 2.2, 0.16), (1.5, 0.6, 0.15), (1.8, 0.44, 0.32)]
    passing = learn(
        [_pantry_run(f"k{k}", {"oats": o, "honey": h, "salt": s}, "success") for k, (o, h, s) in enumerate(amounts)]
    )
    bad = _pantry_run("kb", {"oats": 2.5, "honey": 14.0, "salt": 0.3}, "failure")
    found = list(violations(bad.steps[0], Lineage(bad).view("kb0"), passing))
    assert [e.diagnoser for e in found] == ["reference:sign"]


def _tide_run(rid: str, low: int, span: int, outcome: str) -> Run:
    """A harbour's tide window: how many hours between low water and the next safe crossing."""
    step = Step(f"{rid}0", "window", "tool", input={"low_hour": low, "cross_hour": low + 4},
                output={"hours": span}, start_ns=0, end_ns=1)
    return Run(rid, "tides", outcome=outcome, steps=(step,))


def test_a_field_held_at_one_nonzero_value_by_a_rule_keeps_its_formula() -> None:
    """A window of four hours every time, computed from hours that vary (cross - low), is a rule, not a
    coincidence of a zero: a run that counts it inclusively (five) was computed another way."""
    passing = learn([_tide_run(f"t{k}", low, 4, "success") for k, low in enumerate((2, 7, 11, 5, 14))])
    bad = _tide_run("tb", 9, 5, "failure")
    found = list(violations(bad.steps[0], Lineage(bad).view("tb0"), passing))
    assert "reference:formula" in [e.diagnoser for e in found]


_BAKE: dict[str, Any] = {"flaw": "", "orders": {"O-1": 3.0, "O-2": 5.0, "O-3": 2.5}}
"""The bakery agent's switches: ``flaw`` is '' (correct), 'divide' (its node divides by the factor) or
'stale' (the factor tool answers a stale factor)."""


@trajdebug.step(kind="tool")
def _order_sheet(order: str) -> dict[str, Any]:
    return {"order": order, "cups": _BAKE["orders"][order]}


@trajdebug.step(kind="tool")
def _unit_factor(unit: str) -> dict[str, Any]:
    return {"unit": unit, "ml_per_unit": 24.0 if _BAKE["flaw"] == "stale" else 240.0}


@trajdebug.step(kind="agent")
def _scale_recipe(sheet: dict[str, Any]) -> dict[str, Any]:
    f = _unit_factor("cup")
    ml = sheet["cups"] / f["ml_per_unit"] if _BAKE["flaw"] == "divide" else sheet["cups"] * f["ml_per_unit"]
    return {"order": sheet["order"], "water_ml": round(ml, 3)}


@trajdebug.step(kind="other")
def _plan_batches(scaled: dict[str, Any]) -> dict[str, Any]:
    return {"order": scaled["order"], "batches": max(1, int(scaled["water_ml"] // 400)), "water_ml": scaled["water_ml"]}


@trajdebug.step(kind="other")
def _check_mixer(plan: dict[str, Any]) -> str:
    if plan["water_ml"] < 300:
        raise ValueError(f"mixer needs at least 300 ml of water, plan has {plan['water_ml']} ml")
    return "ok"


def _bakery(tmp_path: Path, flaw: str) -> tuple[Run, list[Run]]:
    """Passing runs of three orders, then a failing run of the first order again with ``flaw`` on: the
    failing run and every run recorded."""
    path = tmp_path / f"bakery-{flaw}.jsonl"

    def bake(order: str) -> None:
        with contextlib.suppress(ValueError), trajdebug.run("bakery", path=path, metadata={"task": order}):
            _check_mixer(_plan_batches(_scale_recipe(_order_sheet(order))))

    try:
        for order in ("O-2", "O-3", "O-1"):
            bake(order)
        _BAKE["flaw"] = flaw
        bake("O-1")
    finally:
        _BAKE["flaw"] = ""
    pool = load_runs(path)
    [bad] = [r for r in pool if r.outcome != "success"]
    return bad, pool


def _same_input(analysis: Any, name: str) -> bool:
    """Whether the analysis's candidate named ``name`` holds same-input evidence."""
    steps = {s.step_id: s.name for s in analysis.run.steps}
    return any(steps[c.step_id] == name and "reference:same-input" in c.signals for c in analysis.root_causes)


def test_a_node_that_computes_wrongly_from_a_tool_answer_alike_is_the_same_input_divergence(tmp_path: Path) -> None:
    """A graph node (a container) given the same input as in a passing run of that input, whose inner tool
    call was asked and answered alike, that returned something else is where the runs diverge: it ranks
    first on same-input evidence of its own, and neither its tool nor the steps after it get any."""
    bad, pool = _bakery(tmp_path, "divide")
    analysis = analyze(bad, references=references(bad, pool), top=5)
    first = bad.step(analysis.root_causes[0].step_id)
    assert (first.name, first.kind) == ("_scale_recipe", "agent")
    assert "its own code" in analysis.root_causes[0].reasons[0]
    assert not any(_same_input(analysis, n) for n in ("_unit_factor", "_plan_batches", "_check_mixer"))


def test_a_node_whose_output_differs_because_its_tool_answered_otherwise_is_not_the_divergence(tmp_path: Path) -> None:
    """When the node's inner tool answered the same request otherwise (a stale factor), the node's output
    differs only through it: the tool holds the same-input evidence, the node none."""
    bad, pool = _bakery(tmp_path, "stale")
    analysis = analyze(bad, references=references(bad, pool), top=5)
    assert _same_input(analysis, "_unit_factor")
    assert not _same_input(analysis, "_scale_recipe")


def test_a_models_first_tool_call_names_a_tool_it_was_offered_not_a_value_made_up() -> None:
    """A model's first call picks a tool no message names yet (its later calls' history does): the tools it
    was offered ground the name, so only a first call offered no such tool states a name none of its inputs
    held."""

    def run(offered: list[str]) -> Run:
        history: list[dict[str, Any]] = [{"role": "user", "content": "Level the canal lock at Brimscombe."}]
        steps = []
        for i, tool in enumerate(["read_gauge"] * 4):  # the gauge read again after each sluice move
            call = {"role": "assistant", "content": None,
                    "tool_calls": [{"id": f"c{i}", "name": tool, "arguments": {"lock": "Brimscombe"}}]}
            steps.append(Step(f"m{i}", "lock_keeper", "llm", input={"messages": list(history)}, output=call,
                              start_ns=2 * i + 1, end_ns=2 * i + 2, attributes={"llm.tools": offered}))
            history += [call, {"role": "tool", "tool_call_id": f"c{i}", "content": f"done {i}"}]
        return Run("r1", "canal-lock", 0, 99, "failure", steps=tuple(steps))

    def grounded(offered: list[str]) -> list[Evidence]:
        bad = run(offered)
        lin = Lineage(bad)
        own, within = sibling_profiles(bad, lin)["m0"], {s.step_id: s for s in bad.steps}
        found = violations(bad.steps[0], lin.view("m0"), own, within=within)
        return [e for e in found if e.diagnoser.endswith(":grounded")]

    assert not grounded(["read_gauge", "open_sluice", "close_sluice"])
    assert grounded(["open_sluice", "close_sluice"])


def test_a_first_tool_call_that_picks_another_tool_than_the_one_the_request_names_is_ungrounded() -> None:
    """A first call whose request names the offered tool to use ("call read_gauge") and that picks another
    offered tool (a basin nobody asked to drain) states a name none of its inputs held: the tools offered ground
    a first pick only when the request names none of them."""
    msgs = [{"role": "user", "content": "Call read_gauge on the Brimscombe lock."}]
    call = {"role": "assistant", "content": None,
            "tool_calls": [{"id": "c0", "name": "drain_basin", "arguments": {"lock": "Brimscombe"}}]}
    first = Step("m0", "lock_keeper", "llm", input={"messages": msgs}, output=call, start_ns=1, end_ns=2,
                 attributes={"llm.tools": ["read_gauge", "drain_basin"]})
    assert first_picks(first, {"m0": first}) == frozenset()
    named_none = dataclasses.replace(first, input={"messages": [{"role": "user", "content": "Level the Brimscombe lock."}]})
    assert first_picks(named_none, {"m0": named_none}) == frozenset({"drain_basin"})


def test_the_first_pick_check_reads_each_model_call_of_a_long_run_once() -> None:
    """Asked of every call of a long run of text-only turns, whether a call is its agent's first tool call reads
    each earlier call once for the whole run, not once per call asked: the check stays linear in the run."""
    reads = [0]
    real = _first_picks.normalize_llm_step

    def counted(*args: Any, **kw: Any) -> Any:
        reads[0] += 1
        return real(*args, **kw)

    def turns(n: int) -> dict[str, Step]:
        history: list[dict[str, Any]] = []
        steps: dict[str, Step] = {}
        for i in range(n):
            history.append({"role": "user", "content": f"How full is the cistern at hour {i}?"})
            said = {"role": "assistant", "content": f"About {i % 7} tenths."}
            steps[f"m{i}"] = Step(f"m{i}", "cistern_warden", "llm", input={"messages": list(history)}, output=said,
                                  start_ns=2 * i + 1, end_ns=2 * i + 2, attributes={"llm.tools": ["read_level"]})
            history.append(said)
        return steps

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_first_picks, "normalize_llm_step", counted)
        for n in (40, 160):
            steps = turns(n)
            reads[0] = 0
            assert all(first_picks(s, steps) == frozenset() for s in steps.values())
            assert reads[0] <= 2 * n


def test_a_later_tool_call_naming_a_tool_no_message_mentions_is_still_ungrounded() -> None:
    """Past its first call a model's history holds the tools it called: a call that picks another offered tool
    no message mentions (a basin nobody asked to drain) still states a name none of its inputs held."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "Call read_gauge on the Brimscombe lock."}]
    steps = []
    for i, tool in enumerate(["read_gauge", "read_gauge", "read_gauge", "drain_basin"]):
        call = {"role": "assistant", "content": None,
                "tool_calls": [{"id": f"c{i}", "name": tool, "arguments": {"lock": "Brimscombe"}}]}
        steps.append(Step(f"m{i}", "lock_keeper", "llm", input={"messages": list(history)}, output=call,
                          start_ns=2 * i + 1, end_ns=2 * i + 2, attributes={"llm.tools": ["read_gauge", "drain_basin"]}))
        history += [call, {"role": "tool", "tool_call_id": f"c{i}", "content": f"level {i}"}]
    bad = Run("r1", "canal-lock", 0, 99, "failure", steps=tuple(steps))
    lin = Lineage(bad)
    found = violations(bad.steps[3], lin.view("m3"), sibling_profiles(bad, lin)["m3"])
    assert any(e.diagnoser.endswith(":grounded") and "drain_basin" in e.reason for e in found)


def _lock_grounded(steps: list[Step]) -> list[str]:
    """The grounded evidence on the last model call of a canal-lock run whose drain then fails the check."""
    steps.append(Step("t", "drain_basin", "tool", input={"lock": "Brimscombe"}, output={"drained": True},
                      start_ns=20, end_ns=21, deps=(Dependency("m3"),)))
    bad = Run("r1", "canal-lock", 0, 99, "failure", steps=tuple(steps))
    lin, within = Lineage(bad), {s.step_id: s for s in bad.steps}
    found = violations(bad.steps[3], lin.view("m3"), sibling_profiles(bad, lin)["m3"], within=within)
    return [e.reason for e in found if e.diagnoser.endswith(":grounded")]


def test_a_later_tool_call_in_anthropic_blocks_naming_a_tool_no_message_mentions_is_ungrounded() -> None:
    """A model whose history holds its tool calls as Anthropic tool_use/tool_result blocks is past its first
    call: a call that picks another offered tool no message mentions still states a name none of its inputs
    held."""
    tools = [{"name": "read_gauge", "input_schema": {"type": "object"}}, {"name": "drain_basin", "input_schema": {}}]
    history: list[dict[str, Any]] = [{"role": "user", "content": "Call read_gauge on the Brimscombe lock."}]
    steps = []
    for i, tool in enumerate(["read_gauge", "read_gauge", "read_gauge", "drain_basin"]):
        blocks = [{"type": "tool_use", "id": f"tu{i}", "name": tool, "input": {"lock": "Brimscombe"}}]
        out = {"role": "assistant", "type": "message", "stop_reason": "tool_use", "content": blocks}
        steps.append(Step(f"m{i}", "lock_keeper", "llm", output=out, start_ns=2 * i + 1, end_ns=2 * i + 2,
                          input={"model": "m-x", "max_tokens": 512, "messages": list(history), "tools": tools}))
        history += [{"role": "assistant", "content": blocks},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{i}", "content": f"{i}"}]}]
    assert any("drain_basin" in r for r in _lock_grounded(steps))


def test_a_stateless_planners_later_pick_of_a_tool_no_message_mentions_is_ungrounded() -> None:
    """A planner asked afresh each turn (no tool-call history) made tool calls earlier in the run: its later
    call is no first call, and picking an offered tool no message mentions still states a name none of its
    inputs held."""
    steps = []
    for i, tool in enumerate(["read_gauge", "read_gauge", "read_gauge", "drain_basin"]):
        msgs = [{"role": "user", "content": f"Lock Brimscombe. Last action: read_gauge, level {i}. Next action?"}]
        call = {"role": "assistant", "content": None,
                "tool_calls": [{"id": f"c{i}", "name": tool, "arguments": {"lock": "Brimscombe"}}]}
        steps.append(Step(f"m{i}", "lock_keeper", "llm", input={"messages": msgs}, output=call, start_ns=2 * i + 1,
                          end_ns=2 * i + 2, attributes={"llm.tools": ["read_gauge", "drain_basin"]}))
    assert any("drain_basin" in r for r in _lock_grounded(steps))


def test_runs_whose_first_inputs_hold_an_int_key_beside_a_str_key_are_paired_without_error() -> None:
    """Two greenhouse runs built in Python, without task metadata, whose first step's input holds an int key beside
    a str key (JSON cannot sort them) are compared without raising: equal inputs pair, different ones do not."""
    from trajdebug.analysis.reference import same_request

    def run(rid: str, bed: str) -> Run:
        first = Step(f"{rid}-s", "read_sensor", "tool", input={7: "tray", "bed": bed}, output={"ok": 1}, start_ns=1, end_ns=2)
        return Run(rid, "greenhouse", steps=(first,), outcome="success")

    assert same_request(run("a", "B-2"), run("b", "B-2"))
    assert not same_request(run("a", "B-2"), run("c", "B-3"))


class TestClaimsSayWhatWasMeasured:
    """Issue 23 (a new user's trial, nu22): a reference finding states only what the passing runs showed."""

    @staticmethod
    def _found(bad: Run, refs: list[Run], signal: str, sid: str = "s") -> list[Evidence]:
        step = next(s for s in bad.steps if s.step_id == sid)
        return [e for e in violations(step, Lineage(bad).view(sid), learn(refs)) if e.diagnoser == signal]

    def test_a_ratio_that_varied_is_said_as_its_range_and_weighs_less_than_one_that_held(self) -> None:
        """Passing converters at 0.90 to 0.92 EUR per USD were never "always 0.9113" (their mean): a rate of
        0.85 is reported against the range they spanned, at half the weight of a rate that held at 0.92."""
        bad = _converter_run("bad", 400.0, 0.85, fail=True)
        held = [_converter_run(f"ok{i}", a, 0.92) for i, a in enumerate((100.0, 250.0, 80.0, 40.0, 310.0))]
        varied = [_converter_run(f"ok{i}", a, r) for i, (a, r) in
                  enumerate(((100.0, 0.90), (250.0, 0.91), (80.0, 0.92), (40.0, 0.915), (310.0, 0.905)))]
        [always] = self._found(bad, held, "reference:ratio", "c")
        [ranged] = self._found(bad, varied, "reference:ratio", "c")
        assert always.reason.endswith("it was always 0.92")
        assert ranged.reason.endswith("it was 0.9 to 0.92") and "always" not in ranged.reason
        assert ranged.suspicion == pytest.approx(always.suspicion / 2, abs=1e-3)

    def test_ratios_parting_by_whole_unit_rounding_or_far_from_the_rate_keep_the_whole_finding(self) -> None:
        """Conversions rounded to whole dollars (1.08: ratios 1.073 to 1.086, review of issue 23) part by their
        rounding, not by a varying rate: a rate of 1.8 keeps the weight of a rate that held; so does 1.8 against
        cent-precision rates of 0.90 to 0.92, too far outside their range for their variation to matter."""
        def fx(rid: str, eur: int, usd: float) -> Run:
            step = Step("c", "convert", "other", input={"amount_eur": eur}, output={"amount_usd": usd},
                        start_ns=1, end_ns=2)
            return Run(rid, "fx", outcome="success", steps=(step,))

        amounts = (41, 58, 63, 39, 52)
        whole = [fx(f"ok{i}", a, round(a * 1.08)) for i, a in enumerate(amounts)]
        exact = [fx(f"ok{i}", a, round(a * 1.08, 6)) for i, a in enumerate(amounts)]
        [rounded] = self._found(fx("bad", 47, 85), whole, "reference:ratio", "c")
        [held] = self._found(fx("bad", 47, 85), exact, "reference:ratio", "c")
        assert rounded.reason.endswith("it was 1.073 to 1.086")
        assert rounded.suspicion == pytest.approx(held.suspicion, abs=1e-3)
        bad = _converter_run("bad", 400.0, 1.5, fail=True)
        varied = [_converter_run(f"ok{i}", a, r) for i, (a, r) in
                  enumerate(((100.0, 0.90), (250.0, 0.91), (80.0, 0.92), (40.0, 0.915), (310.0, 0.905)))]
        held_rate = [_converter_run(f"ok{i}", a, 0.92) for i, a in enumerate((100.0, 250.0, 80.0, 40.0, 310.0))]
        [far] = self._found(bad, varied, "reference:ratio", "c")
        [always] = self._found(bad, held_rate, "reference:ratio", "c")
        assert far.suspicion == pytest.approx(always.suspicion, abs=1e-3)

    def test_a_number_that_reads_two_ways_is_no_outlier_when_the_other_reading_is_usual(self) -> None:
        """A model that wrote the budget "1.250" as the user did (1250 with a dot between thousands) is not
        "1000x outside" passing budgets of 900 to 1400: only the step that read it as 1.25 is; "0.125" reads
        one way only."""
        def extract(rid: str, written: object) -> Run:
            step = Step("s", "extract", "tool", input={"text": f"flats up to {written} a month"},
                        output={"max_rent": written}, start_ns=1, end_ns=2)
            return Run(rid, "flats", outcome="success", steps=(step,))

        refs = [extract(f"p{i}", str(v)) for i, v in enumerate((900, 1000, 1100, 1400))]
        assert not self._found(extract("b", "1.250"), refs, "reference:magnitude")
        assert self._found(extract("b", "0.125"), refs, "reference:magnitude")  # (no thousands start with 0)
        [e] = self._found(extract("b", 1.25), refs, "reference:magnitude")
        assert e.reason.startswith("max_rent=1.25 is about 1000x outside")

    def test_a_thousands_value_a_step_wrote_itself_stays_an_outlier_unless_passing_runs_wrote_decimal_commas(
        self,
    ) -> None:
        """A unit step that forgot to divide grams by 1000 and printed 1250 as "1,250" (review of issue 23)
        made a 1000x error: that "1,250" also reads 1.25 excuses it only when passing runs wrote the field
        with a decimal comma ("2,4"), not when they wrote "2.4"."""
        def to_kg(rid: str, grams: float, written: str) -> Run:
            step = Step("s", "to_kg", "other", input={"weight": grams, "unit": "grams"},
                        output={"weight_kg": written}, start_ns=1, end_ns=2)
            return Run(rid, "parcels", outcome="success", steps=(step,))

        dotted = [to_kg(f"p{i}", g, w) for i, (g, w) in enumerate(((2400, "2.4"), (900, "0.9"), (3100, "3.1"), (1800, "1.8")))]
        commas = [to_kg(f"p{i}", g, w) for i, (g, w) in enumerate(((2400, "2,4"), (900, "0,9"), (3100, "3,1"), (1800, "1,8")))]
        [e] = self._found(to_kg("b", 1250, "1,250"), dotted, "reference:magnitude")
        assert e.reason.startswith("weight_kg=1250 is about 1000x outside")
        assert not self._found(to_kg("b", 1250, "1,250"), commas, "reference:magnitude")

    def test_a_date_given_only_by_month_and_day_is_said_so_and_weighs_less(self) -> None:
        """A warranty check whose passing ends fell two years after the purchase (2026-08-01 for 2024-08-01)
        was never given them: the finding on an end of 2024-04-10 says they matched by month and day only, and
        weighs less than when the step was given the very date (an end copied from the record); when some were
        given whole, it says how many were not."""
        def check(rid: str, bought: str, end: str, record: str | None = None) -> Run:
            inp = {"purchased": bought, "months": 24} | ({"ends": record} if record else {})
            step = Step("s", "check_warranty", "tool", input=inp, output={"expires": end}, start_ns=1, end_ns=2)
            return Run(rid, "repairs", outcome="success", steps=(step,))

        days = (("2024-08-01", "2026-08-01"), ("2022-06-30", "2024-06-30"), ("2023-01-20", "2025-01-20"),
                ("2024-10-05", "2026-10-05"))
        by_day = [check(f"p{i}", b, e) for i, (b, e) in enumerate(days)]
        copied = [check(f"p{i}", b, e, record=e) for i, (b, e) in enumerate(days)]
        [loose] = self._found(check("b", "2024-02-10", "2024-04-10"), by_day, "reference:grounded")
        [strict] = self._found(check("b", "2024-02-10", "2024-04-10", "2026-02-10"), copied, "reference:grounded")
        assert loose.reason.endswith("expires had the month and day of a date it was given, never its year")
        assert strict.reason.endswith("expires always was")
        assert loose.suspicion < strict.suspicion
        [mixed] = self._found(check("b", "2024-02-10", "2024-04-10", "2026-02-10"), by_day[:2] + copied[2:],
                              "reference:grounded")
        assert mixed.reason.endswith("expires always was (in 2 of them only by month and day, not by year)")

    def test_a_formula_of_two_small_counts_fit_by_chance_is_not_named(self) -> None:
        """40 portions = 8 servings x 5 lemons (or 45 guests - 5 lemons) is a coincidence (5 is also the number
        of batches): passing portions copied the guests, so the finding says 40 is not that, without naming a
        formula of small counts; a sum of a rate and a deposit explains the number and is named."""
        def scale(rid: str, guests: int, servings: int, lemons: int, portions: int) -> Run:
            step = Step("s", "scale", "other", input={"guests": guests, "base_servings": servings, "lemons": lemons},
                        output={"portions": portions}, start_ns=1, end_ns=2)
            return Run(rid, "catering", outcome="success", steps=(step,))

        refs = [scale(f"p{i}", g, 8, 5, g) for i, g in enumerate((16, 24, 32, 48))]
        [e] = self._found(scale("b", 45, 8, 5, 40), refs, "reference:formula")
        assert e.reason == "portions=40 is not a copy of a number in guests, as 4 of 4 passing values were"

        def bill(rid: str, nights: int, rate: float, total: float) -> Run:
            step = Step("s", "bill", "other", input={"nights": nights, "rate": rate, "deposit": 50.0},
                        output={"total": total}, start_ns=1, end_ns=2)
            return Run(rid, "hotel", outcome="success", steps=(step,))

        paid = [bill(f"p{i}", n, 89.5, n * 89.5) for i, n in enumerate((2, 3, 4, 6))]
        [named] = self._found(bill("b", 3, 89.5, 139.5), paid, "reference:formula")
        assert named.reason == "total=139.5 is a sum of consecutive values of deposit and rate; 4 of 4 passing values were nights x rate"


def _recorded(path: Path, agent: str, jobs: list[tuple[str, Any]]) -> tuple[Run, list[Run]]:
    """Record one run of ``agent`` per ``(task, body)`` into the JSONL file ``path``, a raised ValueError failing
    the run, and load them back: the failed run and every run recorded."""
    for task, body in jobs:
        with contextlib.suppress(ValueError), trajdebug.run(agent, path=path, metadata={"task": task}):
            body()
    pool = load_runs(path)
    [bad] = [r for r in pool if r.outcome != "success"]
    return bad, pool


def _signals_of(bad: Run, pool: list[Run], name: str) -> set[str]:
    """The kinds of evidence the analysis with references holds against the steps named ``name``."""
    analysis = analyze(bad, references=references(bad, pool), top=20)
    ids = {s.step_id for s in bad.steps if s.name == name}
    return {sig for c in analysis.root_causes if c.step_id in ids for sig in c.signals}


def _same_input_weight(bad: Run, pool: list[Run], name: str) -> float | None:
    """The weight the analysis with references gave its same-input finding on the step named ``name`` (1.0 in
    full, None: no such finding), read from the finding's reason."""
    analysis = analyze(bad, references=references(bad, pool), top=20)
    ids = {s.step_id for s in bad.steps if s.name == name}
    said = [r for c in analysis.root_causes if c.step_id in ids for r in c.reasons if "answered differently" in r]
    if not said:
        return None
    weighed = re.search(r"weighed x(\d\.\d+)", said[0])
    return float(weighed.group(1)) if weighed else 1.0


class TestRecordedAgentsNarrowings:
    """Recorded agents on which the narrowed reference findings (rf47, fix47r) must still see a stale answer
    (review rev47r2: shapes H-a to H-d)."""

    def test_a_notice_every_fare_carries_does_not_hide_another_routes_fare(self, tmp_path: Path) -> None:
        """A fare tool whose every answer carries the same notice, asked for two routes on one day and one route on
        two days, answers route Skerry with the fare a passing run got for route Brae: the notice follows no field
        of the request, but the fare follows the route, so the answer is another request's (H-a)."""
        fares = {"Lerwick": 18.5, "Brae": 64.0, "Skerry": 21.0, "Unst": 33.5}
        cache: dict[str, str] = {}

        @trajdebug.step(kind="tool")
        def quote_fare(route: str, day: str) -> dict[str, Any]:
            said = cache.get(route, route)
            return {"route": said, "fare": {"adult_eur": fares[said], "child_eur": fares[said] / 2, "cabin": "standard saloon"},
                    "notice": "Fares include harbour dues and may change without notice."}

        @trajdebug.step(kind="other")
        def pay(quote: dict[str, Any], wallet: float) -> str:
            if quote["fare"]["adult_eur"] > wallet:
                raise ValueError(f"wallet holds {wallet} EUR, the fare is {quote['fare']['adult_eur']} EUR")
            return "paid"

        def trip(route: str, day: str, *, stale: bool = False) -> tuple[str, Any]:
            def body() -> None:
                cache.clear()
                if stale:
                    cache[route] = "Brae"
                pay(quote_fare(route, day), 40.0 if route != "Brae" else 80.0)
            return f"{route} {day}", body

        passing = [trip("Unst", "2031-05-03"), trip("Skerry", "2031-05-04"), trip("Lerwick", "2031-05-01"),
                   trip("Brae", "2031-05-01"), trip("Lerwick", "2031-05-02")]
        bad, pool = _recorded(tmp_path / "ferry.jsonl", "ferry-desk", [*passing, trip("Skerry", "2031-05-01", stale=True)])
        assert "reference:old-answer" in _signals_of(bad, pool, "quote_fare")

    def test_a_small_id_nested_in_another_requests_answer_does_not_name_this_request(self, tmp_path: Path) -> None:
        """A kennel lookup asked for dog 3 answers with the record a passing run got for dog 8, whose kennel
        happens to be number 3: a small number nested in the answer is no echo of the request (H-b)."""
        dogs = {3: ("Bramble", 1, 40), 5: ("Juniper", 2, 22), 8: ("Pepper", 3, 12), 11: ("Moss", 4, 30), 14: ("Fern", 5, 25)}
        cache: dict[int, int] = {}

        @trajdebug.step(kind="tool")
        def get_dog(id: int) -> dict[str, Any]:
            said = cache.get(id, id)
            name, kennel, kilos = dogs[said]
            return {"id": said, "name": name, "weight_kg": kilos, "kennel": {"id": kennel, "block": "east run"}}

        @trajdebug.step(kind="tool")
        def weigh(id: int) -> float:
            return float(dogs[id][2])

        @trajdebug.step(kind="other")
        def dose(record: dict[str, Any], scale_kg: float) -> str:
            if abs(record["weight_kg"] - scale_kg) > 5:
                raise ValueError(f"the record says {record['weight_kg']} kg, the scale {scale_kg} kg")
            return "dosed"

        def visit(dog: int, *, stale: bool = False) -> tuple[str, Any]:
            def body() -> None:
                cache.clear()
                if stale:
                    cache[dog] = 8
                dose(get_dog(dog), weigh(dog))
            return f"dog {dog}", body

        passing = [visit(5), visit(8), visit(11), visit(14), visit(5)]
        bad, pool = _recorded(tmp_path / "kennel.jsonl", "kennel-vet", [*passing, visit(3, stale=True)])
        assert "reference:old-answer" in _signals_of(bad, pool, "get_dog")

    def test_one_word_a_sentence_request_shares_with_another_requests_article_does_not_name_it(self, tmp_path: Path) -> None:
        """A help-desk search asked about a cracked kettle's warranty answers with the refund article a passing run got
        for a damaged kettle, which mentions the warranty in passing: one rare word of the question is not enough
        to say the article answers it (H-c)."""
        articles = {
            "refund for a damaged kettle": "Refunds: a damaged kettle is refunded in full within 30 days; the warranty is unaffected.",
            "delivery times to Orkney": "Orkney deliveries take four working days by the Thursday ferry.",
            "warranty on the toaster": "Toasters carry a two-year warranty against element failure.",
            "exchange a faulty blender": "Faulty blenders are exchanged in store with the receipt.",
            "gift wrapping options": "Gift wrapping costs two pounds and comes in three papers.",
            "warranty on a cracked kettle": "Kettles carry a one-year warranty; cracks from a fall are not covered.",
        }
        cache: dict[str, str] = {}

        @trajdebug.step(kind="tool")
        def search_help(query: str) -> dict[str, Any]:
            return {"article": articles[cache.get(query, query)]}

        @trajdebug.step(kind="other")
        def reply(found: dict[str, Any], query: str) -> str:
            if "refund" in found["article"].lower() and "refund" not in query:
                raise ValueError("the customer asked about a warranty and was told about a refund")
            return found["article"]

        def ask(query: str, *, stale: bool = False) -> tuple[str, Any]:
            def body() -> None:
                cache.clear()
                if stale:
                    cache[query] = "refund for a damaged kettle"
                reply(search_help(query), query)
            return query, body

        passing = [ask(q) for q in list(articles)[:5]]
        bad, pool = _recorded(tmp_path / "desk.jsonl", "help-desk", [*passing, ask("warranty on a cracked kettle", stale=True)])
        assert "reference:old-answer" in _signals_of(bad, pool, "search_help")

    def test_a_text_answer_whose_time_line_varied_still_deviates_in_its_price_line(self, tmp_path: Path) -> None:
        """A price board answering in lines, whose passing runs read the lamp's board at two times (its "Checked"
        line varies), answers the kettle's request with another price now: the price line never varied, so the
        deviation counts in full (H-d); a kettle board differing only in its time line is weighed lower."""
        prices = {"lamp": 42, "kettle": 25, "toaster": 31}
        state = {"clock": 0, "stale": 0}

        @trajdebug.step(kind="tool")
        def price_board(item: str) -> str:
            state["clock"] += 7
            price = state["stale"] or prices[item]
            return f"Item: {item}\nPrice: {price} EUR\nChecked: 10:{state['clock'] % 60:02d}"

        @trajdebug.step(kind="other")
        def checkout(board: str, budget: int) -> str:
            price = int(board.split("Price: ")[1].split()[0])
            if price > budget:
                raise ValueError(f"price {price} EUR is over the budget of {budget} EUR")
            return "bought"

        def buy(item: str, stale: int = 0, budget: int = 45) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                checkout(price_board(item), budget)
            return item, body

        passing = [buy("lamp"), buy("kettle"), buy("toaster"), buy("lamp")]
        bad, pool = _recorded(tmp_path / "shop.jsonl", "shop", [*passing, buy("kettle", stale=52)])
        assert _same_input_weight(bad, pool, "price_board") == 1.0
        bad, pool = _recorded(tmp_path / "short.jsonl", "shop", [*passing, buy("kettle", budget=20)])
        assert 0 < (_same_input_weight(bad, pool, "price_board") or 0) < 1

    def test_a_json_text_answer_whose_time_varied_still_deviates_in_its_price(self, tmp_path: Path) -> None:
        """A quote tool answering JSON as text (``json.dumps``), whose passing runs read the lamp's quote at two
        times (its ``checked`` varies), answers the kettle's request with another price: the text is read as the
        fields it holds, and only ``checked`` varied, not the price (rev48r, H1)."""
        prices = {"lamp": 42, "kettle": 25, "toaster": 31, "fan": 19}
        state = {"clock": 0, "stale": 0}

        @trajdebug.step(kind="tool")
        def get_quote(item: str) -> str:
            state["clock"] += 7
            price = state["stale"] or prices[item]
            return json.dumps({"item": item, "price_eur": price, "currency": "EUR", "checked": f"10:{state['clock'] % 60:02d}"})

        @trajdebug.step(kind="other")
        def checkout(quote: str, budget: int) -> str:
            price = json.loads(quote)["price_eur"]
            if price > budget:
                raise ValueError(f"price {price} EUR is over the budget of {budget} EUR")
            return "bought"

        def buy(item: str, stale: int = 0) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                checkout(get_quote(item), 45)
            return item, body

        passing = [buy("lamp"), buy("kettle"), buy("toaster"), buy("lamp"), buy("fan")]
        bad, pool = _recorded(tmp_path / "shop.jsonl", "shop", [*passing, buy("kettle", stale=52)])
        assert _same_input_weight(bad, pool, "get_quote") == 1.0

    def test_a_list_whose_order_or_count_varied_still_deviates_in_a_record_present_in_both(self, tmp_path: Path) -> None:
        """A room-rate tool listing a hotel's rooms most-booked first (or leaving out a sold-out suite): hotel A's
        list came in two orders (and counts) in passing runs, and hotel B's double room now has another rate.  The
        records are lined up by their room, so a reorder, or a room more or fewer, varies nothing of the rooms
        present in both: the rate never varied (rev48r2, H1).  A reordered list alike otherwise is weighed lower."""
        rates = {"H-A": {"single": 80, "double": 110, "suite": 220}, "H-B": {"single": 70, "double": 95, "suite": 180}}
        booked = {h: dict.fromkeys(v, 0) for h, v in rates.items()}
        state: dict[str, Any] = {"stale": None, "drop": False}

        @trajdebug.step(kind="tool")
        def room_rates(hotel: str) -> dict[str, Any]:
            rooms = sorted(rates[hotel], key=lambda r: -booked[hotel][r])
            if state["drop"]:
                rooms = [r for r in rooms if r != "suite" or booked[hotel][r] < 1]
            stale = state["stale"]
            return {"hotel": hotel, "rooms": [{"room": r, "rate_eur": stale if stale and r == "double" else rates[hotel][r]} for r in rooms]}

        @trajdebug.step(kind="other")
        def book(offer: dict[str, Any], room: str, budget: int) -> str:
            rate = next(x["rate_eur"] for x in offer["rooms"] if x["room"] == room)
            if rate * 2 > budget:
                raise ValueError(f"{rate * 2} EUR is over the budget of {budget} EUR")
            booked[offer["hotel"]][room] += 1
            return "booked"

        def trip(hotel: str, room: str, budget: int = 300, stale: int | None = None) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                book(room_rates(hotel), room, budget)
            return f"{hotel} {room}", body

        for drop in (False, True):
            for b in booked.values():
                b.update(dict.fromkeys(b, 0))
            state["drop"] = drop
            passing = [trip("H-A", "suite", 500), trip("H-B", "single"), trip("H-A", "double"), trip("H-B", "double")]
            name = f"hotel-{drop}"
            bad, pool = _recorded(tmp_path / f"{name}.jsonl", name, [*passing, trip("H-B", "double", 200, stale=125)])
            assert _same_input_weight(bad, pool, "room_rates") == 1.0
        for b in booked.values():
            b.update(dict.fromkeys(b, 0))
        state["drop"] = False
        passing = [trip("H-A", "double"), trip("H-B", "single"), trip("H-A", "suite", 500), trip("H-B", "double")]
        bad, pool = _recorded(tmp_path / "reordered.jsonl", "hotel", [*passing, trip("H-A", "double", 100)])
        assert (_same_input_weight(bad, pool, "room_rates") or 0) < 1

    @pytest.mark.parametrize("form", ["repr", "xml", "csv", "markdown"])
    def test_a_one_line_answer_whose_time_varied_still_deviates_in_its_price(self, tmp_path: Path, form: str) -> None:
        """A quote tool answering one line of text as agent tools give it (``str(dict)``, one XML element, a CSV or
        markdown table's row), whose passing runs read the lamp's quote at two times: the text is read as its
        fields (by `ast.literal_eval`, an XML parser, the table's header), so only ``checked`` varied, and the
        kettle's quote with another price now deviates in full (rev48r2, H2); one differing in its time only is
        weighed lower."""
        prices = {"lamp": 42, "kettle": 25, "toaster": 31, "fan": 19}
        state = {"clock": 0, "stale": 0}

        def render(quote: dict[str, Any]) -> str:
            cells = [str(v) for v in quote.values()]
            if form == "repr":
                return str(quote)
            if form == "xml":
                return "<quote>" + "".join(f"<{k}>{v}</{k}>" for k, v in quote.items()) + "</quote>"
            if form == "csv":
                return ",".join(quote) + "\r\n" + ",".join(cells) + "\r\n"
            return "| " + " | ".join(quote) + " |\n|---|---|---|---|\n| " + " | ".join(cells) + " |"

        @trajdebug.step(kind="tool")
        def get_quote(item: str) -> str:
            state["clock"] += 7
            price = state["stale"] or prices[item]
            return render({"item": item, "price_eur": price, "currency": "EUR", "checked": f"10:{state['clock'] % 60:02d}"})

        @trajdebug.step(kind="other")
        def checkout(quote: str, budget: int) -> str:
            price = int(re.findall(r"\b\d\d\b", quote)[0])
            if price > budget:
                raise ValueError(f"price {price} EUR is over the budget of {budget} EUR")
            return "bought"

        def buy(item: str, stale: int = 0, budget: int = 45) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                checkout(get_quote(item), budget)
            return item, body

        passing = [buy("lamp"), buy("kettle"), buy("toaster"), buy("lamp"), buy("fan")]
        bad, pool = _recorded(tmp_path / "shop.jsonl", "shop", [*passing, buy("kettle", stale=52)])
        assert _same_input_weight(bad, pool, "get_quote") == 1.0
        bad, pool = _recorded(tmp_path / "short.jsonl", "shop", [*passing, buy("kettle", budget=20)])
        assert 0 < (_same_input_weight(bad, pool, "get_quote") or 0) < 1

    def test_a_sentence_answer_whose_stock_phrase_varied_still_ranks_its_stale_price_first(self, tmp_path: Path) -> None:
        """A quote tool answering a sentence ("Kettle (in stock) costs 25 EUR incl. VAT."), whose passing runs got
        the lamp's sentence with a longer stock phrase once ("only 5 left"), shifting every later token: the
        kettle's stale price now (the kettle's own repeat unchanged) counts in full, never masked, and ranks first
        with references as it does without the narrowing (reviews rev48r3, rev49r H1)."""
        prices = {"lamp": 42, "kettle": 25, "toaster": 31, "fan": 19}
        stock = {"lamp": 9, "kettle": 20, "toaster": 12, "fan": 30}
        state = {"stale": 0}

        @trajdebug.step(kind="tool")
        def get_quote(item: str) -> str:
            n = stock[item]
            status = "in stock" if n > 5 else f"only {n} left"
            return f"{item.title()} ({status}) costs {state['stale'] or prices[item]} EUR incl. VAT."

        @trajdebug.step(kind="tool")
        def shipping(item: str) -> dict[str, Any]:
            return {"item": item, "fee_eur": 6, "eta_days": 2}

        @trajdebug.step(kind="llm")
        def decide(quote: str, ship: dict[str, Any], budget: int) -> dict[str, Any]:
            total = int(quote.split(" costs ")[1].split()[0]) * 2 + ship["fee_eur"]
            return {"buy": total <= budget, "total": total}

        @trajdebug.step(kind="other")
        def checkout(d: dict[str, Any], item: str) -> str:
            if not d["buy"]:
                raise ValueError(f"{item} at {d['total']} EUR is over budget")
            stock[item] -= 2
            return "bought"

        def buy(item: str, stale: int = 0) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                checkout(decide(get_quote(item), shipping(item), 100), item)
            return item, body

        passing = [buy(i) for i in ("lamp", "kettle", "toaster", "lamp", "lamp", "kettle", "fan")]
        bad, pool = _recorded(tmp_path / "shop.jsonl", "shop", [*passing, buy("kettle", stale=52)])
        first = analyze(bad, references=references(bad, pool), top=5).root_causes[0]
        assert next(s.name for s in bad.steps if s.step_id == first.step_id) == "get_quote"
        assert _same_input_weight(bad, pool, "get_quote") == 1.0

    def test_an_id_nested_in_another_requests_record_does_not_name_this_request(self, tmp_path: Path) -> None:
        """An HR lookup whose cache is keyed by team answers the manager's request with her report's record, which
        names the manager's ``employee_id`` in its nested ``manager``: a value names the request only at the top
        of the answer, so the record is another request's (rev48r, H2)."""
        people = {
            "E-1042": ("Ada Brennan", "payments", None, 50000), "E-1077": ("Tom Okafor", "payments", "E-1042", 2000),
            "E-2010": ("Lin Hart", "search", None, 50000), "E-2031": ("Rui Sousa", "search", "E-2010", 1000),
            "E-3005": ("Mo Adeyemi", "infra", None, 20000), "E-3020": ("Ines Varga", "infra", "E-3005", 2000),
        }
        cache: dict[str, dict[str, Any]] = {}
        state = {"buggy": False}

        @trajdebug.step(kind="tool")
        def get_employee(employee_id: str) -> dict[str, Any]:
            name, team, manager, limit = people[employee_id]
            key = team if state["buggy"] else employee_id
            if key not in cache:
                rec: dict[str, Any] = {"employee_id": employee_id, "name": name, "team": team, "approval_limit": limit}
                if manager:
                    rec["manager"] = {"employee_id": manager, "name": people[manager][0]}
                cache[key] = rec
            return cache[key]

        @trajdebug.step(kind="other")
        def approve(approver: dict[str, Any], amount: int) -> str:
            if amount > approver["approval_limit"]:
                raise ValueError(f"{approver['name']} can approve up to {approver['approval_limit']}, not {amount}")
            return "approved"

        def expense(requester: str, approver: str, amount: int, *, buggy: bool = False) -> tuple[str, Any]:
            def body() -> None:
                cache.clear()
                state["buggy"] = buggy
                get_employee(requester)
                approve(get_employee(approver), amount)
            return f"expense {amount} by {requester}", body

        passing = [expense("E-2031", "E-2010", 8000), expense("E-3020", "E-3005", 5000), expense("E-1077", "E-3005", 12000),
                   expense("E-2031", "E-2010", 700), expense("E-3020", "E-3005", 15000)]
        bad, pool = _recorded(tmp_path / "hr.jsonl", "expenses", [*passing, expense("E-1077", "E-1042", 9000, buggy=True)])
        assert "reference:old-answer" in _signals_of(bad, pool, "get_employee")

    def test_one_skus_price_alike_on_two_dates_does_not_make_every_price_ignore_the_date(self, tmp_path: Path) -> None:
        """A price tool asked for (sku, date), one sku's price unchanged on two passing dates, answers another sku
        with the price its earlier date had: one subject alike on two dates is no sign the price ignores the
        date; the answer is still another request's (rev48r, M1)."""
        book = {"SKU-4411": [("2031-04-01", 18.0)], "SKU-5520": [("2031-04-01", 64.0), ("2031-05-02", 71.5)],
                "SKU-6603": [("2031-04-01", 9.5)], "SKU-7120": [("2031-04-01", 120.0)]}
        warm: dict[str, str] = {}

        def price_on(sku: str, day: str) -> float:
            return [p for d, p in book[sku] if d <= day][-1]

        @trajdebug.step(kind="tool")
        def get_price(sku: str, date: str) -> dict[str, Any]:
            return {"sku": sku, "unit_price": price_on(sku, warm.get(sku, date)), "currency": "EUR", "vat_rate": 0.2}

        @trajdebug.step(kind="other")
        def invoice(price: dict[str, Any], qty: int, paid: float) -> str:
            due = round(price["unit_price"] * qty * 1.2, 2)
            if abs(due - paid) > 0.01:
                raise ValueError(f"invoice says {due} EUR, the customer paid {paid} EUR")
            return "ok"

        def order(sku: str, date: str, qty: int, stale: str | None = None) -> tuple[str, Any]:
            def body() -> None:
                warm.clear()
                if stale:
                    warm[sku] = stale
                invoice(get_price(sku, date), qty, round(price_on(sku, date) * qty * 1.2, 2))
            return f"order {sku} {date}", body

        passing = [order("SKU-4411", "2031-04-10", 3), order("SKU-4411", "2031-04-20", 1), order("SKU-5520", "2031-04-12", 2),
                   order("SKU-6603", "2031-04-15", 5), order("SKU-7120", "2031-04-18", 1)]
        bad, pool = _recorded(tmp_path / "prices.jsonl", "invoicer", [*passing, order("SKU-5520", "2031-05-06", 2, "2031-04-12")])
        assert "reference:old-answer" in _signals_of(bad, pool, "get_price")

    def test_a_stock_that_varied_in_a_name_value_list_does_not_hide_the_price_beside_it(self, tmp_path: Path) -> None:
        """A product API answering its attributes as name/value pairs, whose stock falls as runs sell, answers the
        lamp with a stale price: each pair is its own unit (by its name), so the stock that varied says nothing
        of the price, which never did (rev48r, M2)."""
        prices = {"lamp": 42.0, "kettle": 25.0, "toaster": 31.0, "fan": 19.0}
        stock = {"lamp": 9, "kettle": 14, "toaster": 6, "fan": 30}
        state: dict[str, float | None] = {"stale": None}

        @trajdebug.step(kind="tool")
        def product(item: str) -> dict[str, Any]:
            price = state["stale"] if state["stale"] and item == "lamp" else prices[item]
            return {"item": item, "attributes": [{"name": "price_eur", "value": price},
                                                 {"name": "stock", "value": stock[item]}, {"name": "vat_rate", "value": 0.2}]}

        @trajdebug.step(kind="other")
        def pay(products: list[dict[str, Any]], budget: float) -> str:
            total = sum(a["value"] for p in products for a in p["attributes"] if a["name"] == "price_eur")
            if total > budget:
                raise ValueError(f"the basket costs {total} EUR, over the budget of {budget} EUR")
            for p in products:
                stock[p["item"]] -= 1
            return "paid"

        def shop(items: list[str], budget: float = 100.0, stale: float | None = None) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                pay([product(i) for i in items], budget)
            return " ".join(items), body

        passing = [shop(["lamp", "kettle"]), shop(["toaster", "fan"]), shop(["kettle", "fan"]), shop(["toaster"])]
        bad, pool = _recorded(tmp_path / "kv.jsonl", "kv-shop", [*passing, shop(["lamp", "toaster"], budget=80, stale=58.0)])
        assert "reference:same-input" in _signals_of(bad, pool, "product")


    @staticmethod
    def _shop(tmp_path: Path, name: str, mode: str) -> tuple[Run, list[Run]]:
        """The review's quote tool (rev49r, a_pool): a lamp priced live (``live``) or a toaster on sale once
        (``once``), the kettle's stale price in the failing run."""
        prices = {"lamp": 42.0, "kettle": 25.0, "toaster": 31.0, "fan": 19.0}
        state = {"n": 0, "stale": 0.0, "sale": False}

        @trajdebug.step(kind="tool")
        def get_quote(item: str) -> dict[str, Any]:
            price = prices[item]
            if mode == "live" and item == "lamp":
                state["n"] += 1
                price += (0.0, 0.4, -0.3, 0.7)[int(state["n"]) % 4]
            if mode == "once" and item == "toaster" and state["sale"]:
                price = 29.0
            return {"item": item, "price_eur": state["stale"] or price, "currency": "EUR"}

        @trajdebug.step(kind="other")
        def checkout(quote: dict[str, Any], budget: float) -> str:
            if quote["price_eur"] * 2 > budget:
                raise ValueError(f"order total {quote['price_eur'] * 2} EUR is over the budget of {budget} EUR")
            return "bought"

        def buy(item: str, stale: float = 0.0, sale: bool = False) -> tuple[str, Any]:
            def body() -> None:
                state["stale"], state["sale"] = stale, sale
                checkout(get_quote(item), 100.0)
            return item, body

        if mode == "live":
            passing = [buy("lamp"), buy("kettle"), buy("lamp"), buy("toaster"), buy("lamp"), buy("kettle"), buy("fan")]
        else:
            passing = [buy("lamp"), buy("kettle"), buy("toaster"), buy("toaster", sale=True), buy("fan")]
        return _recorded(tmp_path / f"{name}.jsonl", name, [*passing, buy("kettle", stale=52.0)])

    def test_a_request_repeated_alike_in_passing_runs_deviates_in_full_whatever_other_requests_did(self, tmp_path: Path) -> None:
        """A quote tool whose passing runs asked the kettle twice and got one price, while the lamp's live price
        moved on every repeat, answers the kettle with a stale price: the kettle's own rate of change, nought,
        decides, and the finding counts in full and ranks first (review rev49r, H1)."""
        bad, pool = self._shop(tmp_path, "live-shop", "live")
        assert _same_input_weight(bad, pool, "get_quote") == 1.0
        first = analyze(bad, references=references(bad, pool), top=5).root_causes[0]
        assert next(s.name for s in bad.steps if s.step_id == first.step_id) == "get_quote"

    def test_a_request_made_once_is_weighed_gently_by_other_requests_changes(self, tmp_path: Path) -> None:
        """A quote tool whose passing runs asked the kettle once and saw the toaster's price change once (a sale)
        answers the kettle with a stale price: with no repeat of its own the toaster's rate weakens the finding,
        to no less than half, and it still ranks first (review rev49r, H1)."""
        bad, pool = self._shop(tmp_path, "sale-shop", "once")
        assert 0.5 <= (_same_input_weight(bad, pool, "get_quote") or 0) < 1
        first = analyze(bad, references=references(bad, pool), top=5).root_causes[0]
        assert next(s.name for s in bad.steps if s.step_id == first.step_id) == "get_quote"

    def test_a_weighed_same_input_finding_says_the_change_was_on_other_requests(self, tmp_path: Path) -> None:
        """The reason of a same-input finding weighed by other requests' changes says the request was asked once
        and that the change was on other requests of the tool, not on this one (review rev49r, M1)."""
        bad, pool = self._shop(tmp_path, "said-shop", "once")
        analysis = analyze(bad, references=references(bad, pool), top=20)
        ids = {s.step_id for s in bad.steps if s.name == "get_quote"}
        [said] = [r for c in analysis.root_causes if c.step_id in ids for r in c.reasons if "weighed x" in r]
        assert "asked once" in said and "other requests" in said

    def test_two_other_skus_prices_held_across_dates_weaken_an_old_record_never_hide_it(self, tmp_path: Path) -> None:
        """A price tool keyed by SKU alone serves SKU-C's record of an earlier date after its price changed, while
        two other SKUs' prices held across two passing dates: the date may be what SKU-C's price follows, so the
        old-answer finding is weighed, never dropped, and the tool ranks first (review rev49r, H2)."""
        book = {("SKU-A", "05-01"): 42.0, ("SKU-A", "05-02"): 42.0, ("SKU-B", "05-01"): 19.0, ("SKU-B", "05-02"): 19.0,
                ("SKU-C", "05-01"): 52.0, ("SKU-C", "05-03"): 25.0, ("SKU-D", "05-02"): 31.0}
        state: dict[str, str | None] = {"stale": None}

        @trajdebug.step(kind="tool")
        def get_price(sku: str, date: str) -> dict[str, Any]:
            price = book[(sku, state["stale"] or date)]
            return {"sku": sku, "price_eur": price, "currency": "EUR", "unit": "piece", "vat_incl": True}

        @trajdebug.step(kind="other")
        def checkout(quote: dict[str, Any], budget: float) -> str:
            if quote["price_eur"] * 2 > budget:
                raise ValueError(f"order total {quote['price_eur'] * 2} EUR is over the budget of {budget} EUR")
            return "ok"

        def buy(sku: str, date: str, budget: float = 120.0, stale: str | None = None) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                checkout(get_price(sku, date), budget)
            return sku, body

        passing = [buy("SKU-A", "05-01"), buy("SKU-B", "05-01"), buy("SKU-C", "05-01"), buy("SKU-A", "05-02"),
                   buy("SKU-B", "05-02"), buy("SKU-D", "05-02")]
        bad, pool = _recorded(tmp_path / "dates.jsonl", "dated-prices", [*passing, buy("SKU-C", "05-03", 100.0, "05-01")])
        analysis = analyze(bad, references=references(bad, pool), top=20)
        ids = {s.step_id for s in bad.steps if s.name == "get_price"}
        said = [r for c in analysis.root_causes if c.step_id in ids for r in c.reasons if "another request" in r]
        assert said and "weighed x0.50" in said[0]
        assert analysis.root_causes[0].step_id in ids

    def test_two_users_with_one_empty_cart_never_hide_a_cart_served_to_the_wrong_user(self, tmp_path: Path) -> None:
        """A cart looked up by the user alone: two passing users both had an empty cart, which says nothing of
        whether carts follow the user (every request shares the lookup's one other field, none), so a cache that
        serves U-5 the cart U-3 got stays an old answer, and the lookup ranks first above the model that added
        tax to it (review rev49r2)."""
        empty = {"items": [], "total": 0.0, "currency": "EUR", "note": "cart is empty"}
        carts = {"U-1": empty, "U-2": empty, "U-3": {"items": [{"sku": "SKU-KET", "price": 39.0}], "total": 39.0},
                 "U-4": {"items": [{"sku": "SKU-TOA", "price": 25.0}], "total": 50.0},
                 "U-5": {"items": [{"sku": "SKU-LMP", "price": 22.0}], "total": 22.0},
                 "U-6": {"items": [{"sku": "SKU-PAN", "price": 30.0}], "total": 30.0}}
        state: dict[str, str | None] = {"stale": None}

        @trajdebug.step(kind="tool")
        def get_cart(user_id: str) -> dict[str, Any]:
            return carts[state["stale"] or user_id]

        @trajdebug.step(kind="llm")
        def summarize(cart: dict[str, Any]) -> dict[str, Any]:
            return {"amount": round(cart["total"] * 1.2, 2), "lines": len(cart["items"])}

        @trajdebug.step(kind="tool")
        def charge(user_id: str, amount: float) -> str:
            if amount != round(carts[user_id]["total"] * 1.2, 2):
                raise ValueError(f"amount {amount} does not match checkout session for {user_id}")
            return "charged"

        def job(user: str, stale: str | None = None) -> tuple[str, Any]:
            def body() -> None:
                state["stale"] = stale
                charge(user, summarize(get_cart(user))["amount"])
            return user, body

        passing = [job("U-1"), job("U-2"), job("U-3"), job("U-4"), job("U-6"), job("U-4")]
        bad, pool = _recorded(tmp_path / "carts.jsonl", "shop", [*passing, job("U-5", stale="U-3")])
        analysis = analyze(bad, references=references(bad, pool), top=20)
        ids = {s.step_id for s in bad.steps if s.name == "get_cart"}
        assert analysis.root_causes[0].step_id in ids
        assert "reference:old-answer" in analysis.root_causes[0].signals


def test_a_request_answered_otherwise_on_every_repeat_reads_as_changing_on_every_repeat() -> None:
    """A live reading asked six times with six answers is counted over the answers kept (four): three changes in
    three repeats, not three in five, so its rate reads as a unit changing on every repeat (review rev49r, L1)."""
    steps = tuple(
        Step(f"s{i}", "read_meter", "tool", input={"meter": "M-1"}, output={"meter": "M-1", "kwh": 100 + i},
             start_ns=2 * i + 1, end_ns=2 * i + 2)
        for i in range(6)
    )
    profile = learn([Run("ok", "meters", outcome="success", steps=steps)])
    [stats] = profile.steps.values()
    changes, repeats = _answers._variation_of(stats)
    assert (list(changes.values()), repeats) == ([3], 3)


def test_the_narrowed_answer_checks_read_each_passing_request_and_answer_once() -> None:
    """Asked of every call of a long failing run, which fields an answer follows (`_requests_of`) and which fields
    varied (`_varied_of`) are read once for the profile, each passing request and answer once, and each call's
    own request and answer a bounded number of times: the checks stay linear in the calls."""
    reads = {"asked": 0, "units": 0}
    real_asked, real_units = _answers._asked_units, _answers._units

    def asked(*args: Any, **kw: Any) -> Any:
        reads["asked"] += 1
        return real_asked(*args, **kw)

    def units(*args: Any, **kw: Any) -> Any:
        reads["units"] += len(args) == 1  # an answer read whole, not the recursion into its parts
        return real_units(*args, **kw)

    def shelf(i: int, count: int) -> dict[str, Any]:
        return {"shelf": f"SH-{i}", "count": count, "note": f"restocked by crew {i % 3} on the night shift"}

    def run(rid: str, answers: list[tuple[int, dict[str, Any]]], *, fail: bool = False) -> Run:
        steps = tuple(Step(f"s{j}", "read_shelf", "tool", input={"shelf": f"SH-{i}", "aisle": "north"}, output=out,
                           start_ns=2 * j + 1, end_ns=2 * j + 2) for j, (i, out) in enumerate(answers))
        return Run(rid, "store", outcome="failure" if fail else "success", steps=steps)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_answers, "_asked_units", asked)
        mp.setattr(_answers, "_units", units)
        for n in (40, 160):
            steady = [(i, shelf(i, i % 5)) for i in range(n)]
            profile = learn([run("ok1", steady), run("ok2", steady), run("ok3", [(0, shelf(0, 9))])])
            bad = run("bad", [(i, shelf(i + 1, (i + 1) % 5)) for i in range(n - 1)], fail=True)
            lin = Lineage(bad)
            reads.update(asked=0, units=0)
            found = [e.diagnoser for s in bad.steps for e in violations(s, lin.view(s.step_id), profile)]
            assert found.count("reference:same-input") == n - 2  # shelf 0's passing counts varied
            assert found.count("reference:old-answer") == n - 1
            assert reads["asked"] <= 4 * n and reads["units"] <= 4 * n


def _claim_run(rid: str, category: str, rate: float, value: float, *, fail: bool = False) -> Run:
    """An insurance agent as the OpenAI Agents SDK records it: a rate lookup whose dict result is kept as its
    printed text (``str(result)``), then a payout computed from it, which raises when the payout is too high."""
    payout = round(value * (1 - rate) ** 3, 2)
    error = ErrorInfo("ValueError", f"payout {payout} is above the depreciated ceiling") if fail else None
    steps = (
        step("r", "depreciation_rate", "tool", 1, {"category": category}, str({"category": category, "annual_rate": rate})),
        step("p", "compute_payout", "tool", 3, {"value": value, "annual_rate": rate, "years": 3},
             None if fail else {"payout": payout}, "r", status="error" if fail else "ok", error=error),
    )
    return Run(rid, "claims", outcome="failure" if fail else "success", steps=steps)


_RATES = (("furniture", 0.08, 900.0), ("electronics", 0.15, 1200.0), ("appliances", 0.12, 700.0), ("tools", 0.1, 300.0))


class TestZeros:
    def test_a_zero_where_every_passing_run_had_a_nonzero_rate_is_the_steps_violation(self) -> None:
        """A rate looked up as 0.0 (a key missed on its case) where four passing runs had 0.08 to 0.15 is a
        violation of the lookup, said as such; the step ranks first with it."""
        refs = [_claim_run(f"ok{i}", c, r, v) for i, (c, r, v) in enumerate(_RATES)]
        bad = _claim_run("bad", "Electronics", 0.0, 1200.0, fail=True)
        found = list(violations(bad.steps[0], Lineage(bad).view("r"), learn(refs)))
        [zero] = [e for e in found if e.diagnoser == "reference:zero"]
        assert zero.reason == "annual_rate=0 where every one of 4 passing runs had a non-zero value (0.08 to 0.15)"
        top = analyze(bad, references=refs).root_causes[0]
        assert (top.step_id, "reference:zero" in top.signals) == ("r", True)

    def test_a_zero_some_passing_run_also_had_is_no_violation(self) -> None:
        """A rate of 0 is no finding when a passing run had a rate of 0 too (a category that does not depreciate)."""
        refs = [_claim_run(f"ok{i}", c, r, v) for i, (c, r, v) in enumerate((*_RATES[:3], ("land", 0.0, 5000.0)))]
        bad = _claim_run("bad", "Electronics", 0.0, 1200.0, fail=True)
        found = list(violations(bad.steps[0], Lineage(bad).view("r"), learn(refs)))
        assert not [e for e in found if e.diagnoser in ("reference:zero", "reference:magnitude", "reference:sign")]

    def test_a_zero_among_a_runs_own_nonzero_calls_is_no_sibling_violation(self) -> None:
        """One reading of five at 0 (a dry station among rainy ones) is what a run's calls do: the zero check,
        which would find it against the other calls, is asked of passing runs only."""
        gauges = [step(f"s{i}", "read_rain", "tool", 2 * i, {"station": f"ST-{i}"}, {"rain_mm": x})
                  for i, x in enumerate((4.2, 7.5, 0.0, 3.1, 5.6))]
        bad = Run("bad", "weather", outcome="failure", failure_reason="the flood report for ST-2 is wrong",
                  steps=tuple(gauges))
        lin = Lineage(bad)
        own = sibling_profiles(bad, lin)["s2"]
        assert [e.diagnoser for e in violations(bad.steps[2], lin.view("s2"), own)] == ["reference:zero"]
        assert [e.diagnoser for e in violations(bad.steps[2], lin.view("s2"), own, zeros=False)] == []
        assert not [c for c in analyze(bad).root_causes if "sibling:zero" in c.signals]

    def test_a_zero_of_a_field_passing_runs_held_whole_is_no_violation(self) -> None:
        """A count's zero is "none" (no loans out), which any count reaches: no finding where passing runs had
        only whole numbers (1 to 5 loans), though none had zero."""
        def patron(rid: str, loans: int) -> Run:
            return Run(rid, "library", outcome="success",
                       steps=(step("p", "get_patron", "tool", 1, {"card": rid}, {"loans_out": loans}),))

        profile = learn([patron(f"ok{i}", n) for i, n in enumerate((1, 3, 5, 2))])
        bad = patron("bad", 0)
        assert not [e for e in violations(bad.steps[0], Lineage(bad).view("p"), profile) if e.diagnoser == "reference:zero"]

    def test_a_zero_read_out_of_a_text_is_no_violation(self) -> None:
        """A zero a text states ("0 km away") is a quantity that text may well state, not a bare number gone to zero."""
        def search(rid: str, text: str) -> Run:
            return Run(rid, "finder", outcome="success", steps=(step("s", "search", "tool", 1, {"q": rid}, {"note": text}),))

        profile = learn([search(f"ok{i}", f"{x} km away") for i, x in enumerate((3.5, 8.2, 5.1, 2.4))])
        bad = search("bad", "0 km away")
        assert not [e for e in violations(bad.steps[0], Lineage(bad).view("s"), profile) if e.diagnoser == "reference:zero"]


def _ticket_runs(path: Path) -> tuple[Run, Run]:
    """A passing and a failing run of a refund agent recorded with no task, whose input step takes no argument
    (it pops its ticket from a queue: T-1 for 40, then T-2 for 400) and whose ``decide`` approves every refund."""
    for ticket, amount in (("T-1", 40), ("T-2", 400)):
        with trajdebug.run("refunds", path=str(path)) as r:
            with trajdebug.step("next_ticket", kind="input") as t:
                t.output = {"id": ticket, "amount": amount}
            with trajdebug.step("decide", kind="other", input={"ticket": t.output}) as d:
                d.output = {"approve": True}
            if amount > 100:
                r.fail(f"approved a refund of {amount} above the limit 100")
    good, bad = load_runs(path)
    return good, bad


def test_an_entry_step_given_nothing_gets_no_same_input_finding_from_a_passing_run_of_another_ticket(
    tmp_path: Path,
) -> None:
    """An input step that takes no argument answers with what its run was asked: a passing run that popped
    another ticket is a run of another input, so the step's other answer is no "given the same input as in
    passing run ..., it answered differently" (review rev51u M1: the entry step was ranked first, at 50 %)."""
    good, bad = _ticket_runs(tmp_path / "runs.jsonl")
    a = analyze(bad, references=[good])
    [entry] = [c for c in a.localization.ranked_all if c.step_id == bad.steps[0].step_id]
    assert bad.steps[0].name == "next_ticket" and "reference:same-input" not in entry.signals
    assert not [r for r in entry.reasons if "same input" in r]


@pytest.mark.parametrize("given", [None, "", "  ", {}, []])
def test_a_run_that_states_an_empty_input_is_the_same_input_as_no_other_run(given: Any) -> None:
    """An empty task (None, a blank text, an empty mapping or list) or a first step given nothing states no
    input: `input_key` is None and `same_request` pairs two such runs never, whatever each was asked."""
    from trajdebug.analysis.reference import input_key, same_request

    def run(rid: str, asked: str) -> Run:
        steps = (Step("1", "next_ticket", "input", input=given, output={"id": asked}, start_ns=1, end_ns=2),)
        return Run(rid, "refunds", metadata={"task": given}, steps=steps)

    a, b = run("a", "T-1"), run("b", "T-2")
    assert input_key(a) is None and not same_request(a, b) and not same_request(a, a)
    stated = dataclasses.replace(a, metadata={"task": "T-1"})
    assert input_key(stated) == ("task", '"T-1"') and same_request(stated, dataclasses.replace(b, metadata={"task": "T-1"}))


def _refund_agent(
    path: Path, *, relay_field: str = "refund_eur", computed: bool = True, cents: bool = False, memo: bool = False
) -> tuple[Run, list[Run]]:
    """A recorded refund desk: an order lookup (the amount paid), a ticket list, a refund tool, then a model
    step that hands the refund on as its call's ``amount_eur``, and an audit that raises on a refund short of
    what was paid.  Four passing orders; the failing one has 7 tickets of which the list gives 5 (page one).
    ``computed``: the refund tool sums the tickets it is given (else it reads the refund from a table, wrong for
    the failing order); ``relay_field``: what the model hands on in the failing run (``refund_eur``: as always);
    ``cents``: the lookup answers the failing order's amount paid in cents, and the list gives every ticket;
    ``memo``: the table tool is also handed a note of the deposit held, and its table's refund for the failing
    order is that deposit's number (a wrong refund that equals another field's value upstream)."""
    paid = {"O-1": (2, 40.0), "O-2": (3, 55.0), "O-3": (4, 30.0), "O-4": (5, 62.5), "O-9": (7, 62.0)}
    table = {o: n * p for o, (n, p) in paid.items()} | {"O-9": 90.5 if memo else 310.0}

    @trajdebug.step(kind="tool")
    def lookup_order(order_id: str) -> dict[str, Any]:
        n, price = paid[order_id]
        scale = 100 if cents and order_id == "O-9" else 1
        return {"order_id": order_id, "paid_eur": n * price * scale, "deposit_eur": 12.5 * n + 3, "tickets": n}

    @trajdebug.step(kind="tool")
    def list_tickets(order_id: str) -> list[dict[str, Any]]:
        n, price = paid[order_id]
        return [{"ticket": f"{order_id}-T{k}", "price_eur": price} for k in range(n if cents else min(n, 5))]

    @trajdebug.step(kind="tool")
    def calculate_refund(tickets: list[dict[str, Any]]) -> dict[str, Any]:
        return {"refund_eur": sum(t["price_eur"] for t in tickets)}

    @trajdebug.step(kind="tool")
    def quote_refund(order_id: str, note: str = "") -> dict[str, Any]:
        return {"refund_eur": table[order_id]}

    @trajdebug.step(kind="llm")
    def decide_refund(order: dict[str, Any], refund: dict[str, Any], field: str) -> dict[str, Any]:
        return {"order_id": order["order_id"], "amount_eur": (order | refund)[field]}

    @trajdebug.step(kind="other")
    def audit_refund(order: dict[str, Any], decision: dict[str, Any]) -> str:
        if decision["amount_eur"] != order["paid_eur"]:
            raise ValueError(f"refund {decision['amount_eur']} EUR does not match the amount paid for {order['order_id']}")
        return "ok"

    def job(order_id: str) -> Any:
        def body() -> None:
            order = lookup_order(order_id)
            note = f"a deposit of {order['deposit_eur']} EUR is held" if memo else ""
            refund = calculate_refund(list_tickets(order_id)) if computed else quote_refund(order_id, note)
            audit_refund(order, decide_refund(order, refund, relay_field if order_id == "O-9" else "refund_eur"))
        return body

    return _recorded(path, "refunds", [(f"refund order {o}", job(o)) for o in paid])


class TestRelayedRatio:
    """A broken ratio on a number the step handed on unchanged (nu24 F4)."""

    def test_a_model_handing_a_computed_refund_on_keeps_only_the_inherited_share(self, tmp_path: Path) -> None:
        """A model that hands the refund tool's answer on as it always did holds the refund's broken ratio to the
        amount paid as a finding it was given (it says it passed the number on), and weighs less than a model
        that handed on a number it never handed on; no step that computed the refund is said to have produced it."""

        def relay(**kw: Any) -> Any:
            bad, pool = _refund_agent(tmp_path / f"{len(kw)}.jsonl", **kw)
            analysis = analyze(bad, references=references(bad, pool), top=20)
            [c] = [c for c in analysis.root_causes if bad.step(c.step_id).name == "decide_refund"]
            return c, analysis

        passed, analysis = relay()
        [said] = [r for r in passed.reasons if r.startswith("amount_eur/paid_eur")]
        assert "passed on its input's refund_eur unchanged" in said
        assert not any("passed on unchanged" in r for c in analysis.root_causes for r in c.reasons)
        chose, _ = relay(relay_field="deposit_eur")
        assert passed.score < chose.score

    def test_a_refund_read_from_a_table_is_blamed_on_the_table_tool(self, tmp_path: Path) -> None:
        """A refund tool that read the number from a table (computed from nothing it was given) carries the ratio
        its number broke when the model handed it on unchanged: it is the top suspect."""
        bad, pool = _refund_agent(tmp_path / "runs.jsonl", computed=False)
        top = analyze(bad, references=references(bad, pool), top=20).root_causes[0]
        assert bad.step(top.step_id).name == "quote_refund"
        assert any("which decide_refund passed on unchanged: amount_eur/paid_eur" in r for r in top.reasons)

    def test_a_number_an_earlier_step_held_under_another_field_is_not_moved_onto_it(self, tmp_path: Path) -> None:
        """A refund that equals the deposit the order lookup answered (the table tool was handed the deposit in a
        note) was not produced by the lookup as a refund: the ratio's finding is not moved onto the lookup."""
        bad, pool = _refund_agent(tmp_path / "runs.jsonl", computed=False, memo=True)
        analysis = analyze(bad, references=references(bad, pool), top=20)
        assert bad.step(analysis.root_causes[0].step_id).name != "lookup_order"
        [lookup] = [c for c in analysis.root_causes if bad.step(c.step_id).name == "lookup_order"]
        assert not any("passed on unchanged" in r for r in lookup.reasons)

    def test_a_divisor_an_order_of_magnitude_off_keeps_the_ratio_where_it_broke(self, tmp_path: Path) -> None:
        """A model that hands the right refund on, measured against an amount paid a hundred times what passing
        runs were given (cents for euros), relayed nothing wrong: the ratio's finding stays its own, unmoved."""
        bad, pool = _refund_agent(tmp_path / "runs.jsonl", cents=True)
        analysis = analyze(bad, references=references(bad, pool), top=20)
        said = [r for c in analysis.root_causes for r in c.reasons if "amount_eur/paid_eur" in r]
        assert said and not any("passed on" in r for r in said)

    def test_a_model_handing_on_a_field_it_never_handed_on_keeps_the_ratio(self, tmp_path: Path) -> None:
        """A model that hands on the deposit where it always handed on the refund chose the wrong number: the
        ratio's finding stays its own, in full, and it is the top suspect."""
        bad, pool = _refund_agent(tmp_path / "runs.jsonl", relay_field="deposit_eur")
        top = analyze(bad, references=references(bad, pool), top=20).root_causes[0]
        assert bad.step(top.step_id).name == "decide_refund"
        assert any(r.startswith("amount_eur/paid_eur") and "passed on" not in r for r in top.reasons)


# --- a loop's exit among a step's calls in its run (nu25 F4) ---------------------------------------------------------

_STOCK = [("bolt", 4), ("nut", 9), ("washer", 2), ("clip", 7), ("pin", 3), ("hinge", 5)]


@trajdebug.step(kind="other")
def _route(state: dict[str, Any]) -> str:
    return "_price_line" if state["i"] < len(_STOCK) else "_bill"


@trajdebug.step(kind="other")
def _grade(item: str) -> str:
    return "reject" if item == "hinge" else "keep"


@trajdebug.step(kind="tool")
def _price_line(item: str, qty: int, grade: str = "keep") -> dict[str, Any]:
    return {"item": item, "amount": qty * (0.0 if item == "washer" else 1.5), "grade": grade}


@trajdebug.step(kind="output")
def _bill(lines: list[dict[str, Any]]) -> float:
    return float(sum(line["amount"] for line in lines))


def _restock(path: Path, grade: bool) -> Run:
    """A loop over stock lines, its router run after each line (and once more to leave); ``grade``: a grader
    called per line too, whose last call answers a value its other calls never did."""
    with contextlib.suppress(ValueError), trajdebug.run("restock", path=path) as run:
        lines, state = [], {"i": 0}
        while _route(state) == "_price_line":
            item, qty = _STOCK[state["i"]]
            lines.append(_price_line(item, qty, _grade(item)) if grade else _price_line(item, qty))
            state = {"i": state["i"] + 1}
        total, due = _bill(lines), 1.5 * sum(q for _, q in _STOCK)
        if total != due:
            run.fail(f"bill of {total} differs from the order's {due}")
    [bad] = load_runs(path)
    return bad


def _categories(bad: Run, name: str) -> list[str]:
    names = {s.step_id: s.name for s in bad.steps}
    a = analyze(bad, top=20)
    return [r for c in a.root_causes if names[c.step_id] == name for r in c.reasons if "never seen" in r]


def test_a_routers_last_call_naming_the_step_that_ran_next_is_no_new_category(tmp_path: Path) -> None:
    """Every loop ends once: the router's last call, whose value names the step that ran next (the loop's
    exit), is no value "never seen in its other calls"."""
    bad = _restock(tmp_path / "r.jsonl", grade=False)
    assert _categories(bad, "_route") == []


def test_a_last_call_answering_a_new_value_that_names_no_step_is_still_a_new_category(tmp_path: Path) -> None:
    """A grader whose last call answers a value its other calls never did, naming no step of the run, still
    has it found (the last call is not excused for being last)."""
    bad = _restock(tmp_path / "g.jsonl", grade=True)
    assert [r for r in _categories(bad, "_grade") if r.startswith("(output)=reject")]


def test_a_formulas_shape_is_said_in_words() -> None:
    """A formula is said as what it computes: a copy of a number in a field, two fields' difference, a number
    of a field divided by another of it; a shape not known is kept as written."""
    from trajdebug.analysis.reference._relations import spoken

    assert spoken("copy(line)") == "a copy of a number in line"
    assert spoken("sub(on_hand,reserved)") == "on_hand - reserved"
    assert spoken("div(request,request)") == "a number of request / another number of request"
    assert spoken("given-by-no-formula") == "given-by-no-formula"


@trajdebug.step(kind="parse")
def _parse_qty(line: str) -> dict[str, Any]:
    return {"quantity": int(line.rsplit("qty ", 1)[1].split(",")[0])}


def test_a_formula_finding_among_a_steps_own_calls_speaks_of_them_not_of_passing_values(tmp_path: Path) -> None:
    """Alone (no passing run), a parse whose quantity is no copy of a number in its line, as its other calls'
    were, says so of its other calls in this run: no "passing values" (nu25 F6)."""
    path = tmp_path / "p.jsonl"
    lines = ["bolts, qty 40", "leads, qty 1,200", "nuts, qty 12", "pins, qty 300", "clips, qty 75", "rings, qty 9"]
    with contextlib.suppress(ValueError), trajdebug.run("customs", path=path) as run:
        total = sum(_parse_qty(line)["quantity"] for line in lines)
        run.fail(f"{total} units declared, the invoice lists 1636")
    [bad] = load_runs(path)
    reasons = [r for c in analyze(bad, top=10).root_causes for r in c.reasons if "quantity=1 " in r]
    assert any("values of its other calls in this run were a copy of a number in line" in r for r in reasons)
    assert not any("passing values" in r for r in reasons)


# --- a loop's exit, narrowed (review rev52u M2) ----------------------------------------------------------------------

_TICKETS = {
    "B-1": ["reset", "invoice", "reset", "address", "invoice", "reset", "address", "invoice"],
    "B-2": ["invoice", "address", "reset", "reset", "invoice", "address", "reset", "address"],
    "B-3": ["address", "reset", "invoice", "invoice", "address", "reset", "invoice", "reset"],
}
_PARCELS = {
    "P-1": [2.0, 3.5, 1.0, 2.5, 4.0, 1.5, 3.0, 26.0],
    "P-2": [1.0, 27.0, 2.0, 3.0, 1.5, 2.5, 3.5, 4.0],
    "P-3": [3.0, 2.0, 28.0, 1.0, 4.5, 2.0, 1.5, 3.5],
}
_BUG = {"on": False}


@trajdebug.step(kind="condition")
def _triage(ticket: dict[str, Any], remaining: int) -> str:
    return "_escalate" if _BUG["on"] and remaining == 0 else "_auto_reply"


@trajdebug.step(kind="tool")
def _auto_reply(ticket: dict[str, Any]) -> dict[str, Any]:
    return {"id": ticket["id"], "cost": 0.1}


@trajdebug.step(kind="tool")
def _escalate(ticket: dict[str, Any]) -> dict[str, Any]:
    return {"id": ticket["id"], "cost": 6.0}


@trajdebug.step(kind="tool")
def _note(ticket: dict[str, Any]) -> dict[str, Any]:
    return {"id": ticket["id"], "noted": True}


def _tickets(path: Path, batch: str, bug: bool, note: bool = False) -> None:
    """A per-ticket router whose value names the handler that runs next (``note``: a note step runs between);
    ``bug``: its last call sends the last ticket to an agent."""
    _BUG["on"] = bug
    with contextlib.suppress(ValueError), trajdebug.run("triage", path=path, task=f"triage {batch}") as run:
        tickets = [{"id": f"T-{i}", "topic": t} for i, t in enumerate(_TICKETS[batch])]
        costs = []
        for i, t in enumerate(tickets):
            handler = {"_auto_reply": _auto_reply, "_escalate": _escalate}[_triage(t, len(tickets) - 1 - i)]
            if note:
                _note(t)
            costs.append(handler(t)["cost"])
        if sum(costs) > 1.0:
            run.fail(f"triage {batch} cost {sum(costs):.1f}: a self-service ticket went to an agent")
    _BUG["on"] = False


def _triage_reasons(bad: Run, refs: Sequence[Run] = ()) -> list[str]:
    names = {s.step_id: s.name for s in bad.steps}
    last = [s.step_id for s in bad.steps if s.name == "_triage"][-1]
    a = analyze(bad, references=list(refs), top=30)
    return [r for c in a.root_causes if c.step_id == last and names[c.step_id] == "_triage" for r in c.reasons]


def test_a_routers_last_call_naming_the_next_step_is_still_new_to_the_passing_runs(tmp_path: Path) -> None:
    """A loop's exit is excused among the router's own calls only: a value the passing runs never had (no ticket
    ever went to an agent) stays a finding against them, whatever step it names."""
    _tickets(tmp_path / "bad.jsonl", "B-1", bug=True)
    for b in ("B-2", "B-3"):
        _tickets(tmp_path / "ok.jsonl", b, bug=False)
    [bad] = load_runs(tmp_path / "bad.jsonl")
    reasons = _triage_reasons(bad, load_runs(tmp_path / "ok.jsonl"))
    assert any("=_escalate, never seen in passing runs" in r for r in reasons)


def test_a_routers_last_call_naming_a_step_that_ran_later_not_next_is_still_new_among_its_calls(tmp_path: Path) -> None:
    """A router's last call whose value names a step that ran later but not next (a note step ran between) is
    no exit of its loop: the value never seen in its other calls is still found."""
    _tickets(tmp_path / "bad.jsonl", "B-1", bug=True, note=True)
    [bad] = load_runs(tmp_path / "bad.jsonl")
    assert any("=_escalate, never seen in its other calls" in r for r in _triage_reasons(bad))


@trajdebug.step(kind="other")
def _classify(weight: float) -> str:
    return "freight" if weight > (25.0 if _BUG["on"] else 26.5) else "parcel"


@trajdebug.step(kind="output")
def _ship(classes: list[str]) -> float:
    return float(sum(40.0 if c == "freight" else 5.0 for c in classes))


def _parcels(path: Path, batch: str, bug: bool) -> None:
    """Per-parcel classes, ``bug``: the freight threshold read 1.5 kg low, so the last parcel (26 kg) is freight."""
    _BUG["on"] = bug
    with contextlib.suppress(ValueError), trajdebug.run("ship", path=path, task=f"ship {batch}") as run:
        total = _ship([_classify(w) for w in _PARCELS[batch]])
        if bug:
            run.fail(f"shipping {total:.0f} for {batch}, above the quoted 40")
    _BUG["on"] = False


def test_a_last_calls_value_the_passing_runs_had_is_still_new_among_its_calls(tmp_path: Path) -> None:
    """A per-item category the passing runs had (freight) is a possible value, not an exit: a classifier's last
    call answering it, where its other calls never did, keeps its finding among them."""
    for b in ("P-2", "P-3"):
        _parcels(tmp_path / "ok.jsonl", b, bug=False)
    _parcels(tmp_path / "bad.jsonl", "P-1", bug=True)
    [bad] = load_runs(tmp_path / "bad.jsonl")
    names = {s.step_id: s.name for s in bad.steps}
    last = [s.step_id for s in bad.steps if s.name == "_classify"][-1]
    a = analyze(bad, references=load_runs(tmp_path / "ok.jsonl"), top=30)
    reasons = [r for c in a.root_causes if c.step_id == last and names[last] == "_classify" for r in c.reasons]
    assert any("=freight, never seen in its other calls" in r for r in reasons)


_WX: dict[str, Any] = {}


@trajdebug.step(kind="tool")
def fetch_weather(city: str) -> dict[str, Any]:
    return {"city": city, "temp_c": _WX["temp"], "observed_at": _WX["ts"], "trace": _WX["trace"]}


@trajdebug.step(kind="tool")
def pick_clothes(temp_c: int) -> dict[str, bool]:
    return {"coat": False if _WX["bug"] else temp_c < 10}


@trajdebug.step(kind="output")
def advise(city: str, clothes: dict[str, bool], temp_c: int, seen: str) -> str:
    if temp_c < 10 and not clothes["coat"]:
        raise ValueError(f"no coat advised in {city} at {temp_c} C" + (f" (observed {seen})" if seen else ""))
    return "ok"


def _weather(path: Path, city: str, ts: str, bug: bool, temp: int = 4, name: bool = False) -> str:
    _WX.update(ts=ts, bug=bug, temp=temp, name=name, trace=str(uuid.uuid4()))
    with contextlib.suppress(ValueError), trajdebug.run("weather-agent", path=path) as h:
        w = fetch_weather(city)
        advise(city, pick_clothes(w["temp_c"]), w["temp_c"], w["observed_at"] if name else "")
    return h.run_id


def _weather_top(path: Path, failing: str, refs: list[str]) -> tuple[str, list[str]]:
    runs = {r.run_id: r for r in load_runs(path)}
    a = analyze(runs[failing], top=3, references=[runs[i] for i in refs])
    names = {s.step_id: s.name for s in a.run.steps}
    marked = [names[c.step_id] for c in a.localization.candidates if "reference:same-input" in c.signals]
    return names[a.localization.candidates[0].step_id], marked


def test_an_answer_new_only_in_its_stamp_and_trace_id_is_no_changed_answer(tmp_path: Path) -> None:
    """A weather tool given the same city as in a passing run, answering the same temperature with a new
    ``observed_at`` stamp and trace id (values new on every call by their form) that no later step read, is not
    marked as having answered differently; the step that chose no coat for the same temperature is, and stays
    the best candidate (review rev53c, MEDIUM-3)."""
    path = tmp_path / "wx.jsonl"
    failing = _weather(path, "oslo", "2026-12-06T11:40:01Z", True)
    others = [_weather(path, "bergen", "2026-12-06T11:41:07Z", False), _weather(path, "riga", "2026-12-06T11:42:13Z", False)]
    same = [_weather(path, "oslo", "2026-12-06T11:43:19Z", False)]
    for refs in (others + same, same):
        assert _weather_top(path, failing, refs) == ("pick_clothes", ["pick_clothes"])


def test_a_same_input_answer_whose_value_changed_beside_a_new_stamp_is_still_marked(tmp_path: Path) -> None:
    """The same city answered 4 C in the failing run and 14 C in the passing run, each with its own stamp: the
    value changed, so the weather tool keeps the same-input mark."""
    path = tmp_path / "wx.jsonl"
    failing = _weather(path, "oslo", "2026-12-06T11:40:01Z", True)
    same = [_weather(path, "oslo", "2026-12-06T11:43:19Z", True, temp=14)]
    assert _weather_top(path, failing, same)[1] == ["fetch_weather"]


def test_a_new_stamp_the_failure_names_is_a_changed_answer(tmp_path: Path) -> None:
    """When the failure's message names the stamp the weather tool answered (a later step was handed it), the
    stamp mattered to the run: the difference is kept as a changed answer."""
    path = tmp_path / "wx.jsonl"
    failing = _weather(path, "oslo", "2026-12-06T11:40:01Z", True, name=True)
    same = [_weather(path, "oslo", "2026-12-06T11:43:19Z", False, name=True)]
    assert "fetch_weather" in _weather_top(path, failing, same)[1]


@pytest.mark.parametrize(
    ("now", "old", "volatile"),
    [
        ('{"t": 4, "at": "2026-12-06T11:40:01Z"}', '{"t": 4, "at": "2026-12-06T11:43:19.5+01:00"}', True),
        ('{"t": 4, "took": "0.31s"}', '{"t": 4, "took": "0.27s"}', True),
        ('{"t": 4, "id": "01HZX3K9Q2M4N5P6R7S8T9V0WY"}', '{"t": 4, "id": "01HZX3K9Q2M4N5P6R7S8T9V0WZ"}', True),
        ('{"t": 4, "etag": "9f86d081884c7d659a2feaa0c55ad015"}', '{"t": 4, "etag": "60303ae22b998861bce3b28f33eec1be"}', False),
        ('"Report at 11:40:01: 4 C"', '"Report at 11:43:19: 4 C"', True),
        ('{"t": 5, "at": "2026-12-06T11:40:01Z"}', '{"t": 4, "at": "2026-12-06T11:43:19Z"}', False),
        ('{"slot": "2026-12-07T09:00:00"}', '{"slot": "2026-12-07T14:00:00"}', False),
        ('{"slot": "10:00"}', '{"slot": "11:00"}', False),
        ('{"ship": "2026-12-07"}', '{"ship": "2026-12-09"}', False),
    ],
)
def test_only_values_volatile_by_form_make_a_volatile_difference(now: str, old: str, volatile: bool) -> None:
    """A stamp to the second, a duration, a ULID differ harmlessly; a changed value beside a stamp, a content
    digest, an appointment on the hour, a slot to the minute or a ship date do not."""
    from trajdebug.analysis.reference._fields import volatile_difference

    assert (volatile_difference(now, old) is not None) is volatile


def test_a_new_stamp_a_later_step_was_handed_is_a_changed_answer() -> None:
    """An answer new only in its stamp is the same answer unless a step that started after it ended was handed
    the stamp (or a failure's message names it): a step that ran before it ended, or its own input, does not
    count, and a second run's steps are read afresh."""
    from trajdebug.analysis.reference._answers import _volatile_only
    from trajdebug.core.model import ErrorInfo, Step

    now, old = '{"t": 4, "at": "2026-12-06T11:40:01Z"}', '{"t": 4, "at": "2026-12-06T11:43:19Z"}'
    stamp = "2026-12-06T11:40:01Z"
    fetch = Step("f", "fetch", kind="tool", input={"at": stamp}, start_ns=10, end_ns=20)
    early = Step("e", "plan", input={"at": stamp}, start_ns=15, end_ns=16)
    late = Step("l", "log", input={"seen": stamp}, start_ns=30, end_ns=31)
    other = Step("o", "log", input={"seen": "nothing"}, start_ns=30, end_ns=31)
    assert _volatile_only(fetch, {"f": fetch, "e": early, "o": other}, now, {old: ""})
    assert not _volatile_only(fetch, {"f": fetch, "e": early, "l": late}, now, {old: ""})
    named = Step("n", "check", input={}, start_ns=5, end_ns=6, status="error",
                 error=ErrorInfo("ValueError", f"reading at {stamp} is older than the order"))
    assert not _volatile_only(fetch, {"f": fetch, "n": named}, now, {old: ""})


def _router_run(last: str, then: str) -> Run:
    """A graph's tool loop: a model node whose router (a conditional edge's function, run inside the node)
    answers ``tools`` four times, a word of the system prompt it was handed, then ``last``; the step named
    ``then`` runs after the last pass."""
    prompt = {"role": "system", "content": "Price the repair. Use the tools, then answer the quote."}
    steps: list[Step] = []
    for i in range(5):
        node = Step(f"n{i}", "estimator", "agent", input={"messages": [prompt]}, output={"pass": i},
                    start_ns=10 * i, end_ns=10 * i + 5)
        route = Step(f"r{i}", "more_tools", "other", parent_id=f"n{i}", input={"messages": [prompt], "pass": i},
                     output="tools" if i < 4 else last, start_ns=10 * i + 1, end_ns=10 * i + 2)
        after = Step(f"t{i}", "tools" if i < 4 else then, "agent", input={"pass": i}, output={"pass": i},
                     start_ns=10 * i + 6, end_ns=10 * i + 8)
        steps += [node, route, after]
    return Run("r1", "roof-quotes", 0, 99, "failure", steps=tuple(steps))


def _route_grounded(run: Run) -> list[str]:
    lin, within = Lineage(run), {s.step_id: s for s in run.steps}
    found = violations(within["r4"], lin.view("r4"), sibling_profiles(run, lin)["r4"], within=within)
    return [e.reason for e in found if e.diagnoser.endswith(":grounded")]


def test_a_route_a_router_took_out_of_its_loop_is_no_value_made_up() -> None:
    """A router whose every pass answered a name it was handed by chance (``tools``, a word of the prompt) and
    whose last pass names the step that ran next (``draft_quote``, leaving the loop) chose a route of the program:
    no value it should have copied.  The same answer with another step run next is still a value it was not given."""
    assert not _route_grounded(_router_run("draft_quote", "draft_quote"))
    assert any("draft_quote" in r for r in _route_grounded(_router_run("draft_quote", "price_quote")))


def test_a_model_naming_the_step_that_ran_next_is_still_held_to_what_it_was_told() -> None:
    """A model's answer naming the next step is a pick among the routes its prompt told it of: one it was not
    told of is still ungrounded (`chose_next` reads code's routes only)."""
    run = _router_run("draft_quote", "draft_quote")
    steps = tuple(dataclasses.replace(s, kind="llm") if s.name == "more_tools" else s for s in run.steps)
    assert any("draft_quote" in r for r in _route_grounded(dataclasses.replace(run, steps=steps)))


def _triage_run(label: str, ticket: str, fail: bool) -> Run:
    """A ticket desk: a model labels the ticket, a code router passes a known label on as the desk to run next
    and falls back to ``billing`` for any other (the bug), the desk answers."""

    @trajdebug.step(kind="llm")
    def classify(text: str) -> dict[str, str]:
        return {"label": label}

    @trajdebug.step(kind="condition")
    def route(c: dict[str, str]) -> str:
        return c["label"] if c["label"] in ("billing", "tech") else "billing"

    @trajdebug.step(kind="tool")
    def billing(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "billing", "reply": "refund issued"}

    @trajdebug.step(kind="tool")
    def tech(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "tech", "reply": "reinstall the app"}

    with deterministic(), capture_runs() as runs, trajdebug.run("triage", task="handle ticket") as r:
        desk = route(classify("the app crashes on start"))
        (billing if desk == "billing" else tech)(ticket)
        if fail:
            r.fail(f"ticket {ticket} about an app crash was answered by the billing desk")
    (run,) = runs
    return run


def test_a_router_making_up_a_route_its_passing_runs_were_always_given_is_confidently_blamed() -> None:
    """Passing runs' router always passed on the label it was given (``billing``, ``tech``); the failing run's
    fell back to ``billing``, given nothing saying so (the model said ``Tech``).  Though ``billing`` names the
    step that ran next, held to those passing runs it is a made-up route: `reference:grounded` keeps it, and the
    router is blamed with confidence (review rev55a)."""
    refs = [_triage_run(lab, f"T-{i}", False) for i, lab in enumerate(("billing", "tech", "billing", "tech"), 1)]
    a = analyze(_triage_run("Tech", "T-9", True), references=refs)
    top = a.root_causes[0]
    assert top.step_id == next(s.step_id for s in a.run.steps if s.name == "route")
    assert "reference:grounded" in top.signals
    assert a.verdict == "confident"


def _desk_run(labels: Sequence[str], bug: bool) -> Run:
    """A desk: a model labels each ticket, a code router passes the label on as the desk to run next; with
    ``bug`` it makes up ``escalate`` for a refund (a route its passing runs never chose), and that desk runs."""

    @trajdebug.step(kind="llm")
    def classify(text: str) -> dict[str, str]:
        return {"label": labels[int(text.split()[-1])]}

    @trajdebug.step(kind="condition")
    def dispatch(c: dict[str, str]) -> str:
        return "escalate" if bug and c["label"] == "refund" else c["label"]

    @trajdebug.step(kind="tool")
    def refund(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "refund", "reply": "refund issued"}

    @trajdebug.step(kind="tool")
    def shipping(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "shipping", "reply": "parcel re-sent"}

    @trajdebug.step(kind="tool")
    def escalate(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "escalate", "reply": "a manager will call"}

    desks = {"refund": refund, "shipping": shipping, "escalate": escalate}
    with deterministic(), capture_runs() as runs, trajdebug.run("desk", task="answer tickets") as r:
        for i in range(len(labels)):
            desks[dispatch(classify(f"ticket {i}"))](f"T-{i}")
        if bug:
            r.fail("a refund request got 'a manager will call' instead of a refund")
    (run,) = runs
    return run


def test_a_router_inventing_a_route_its_passing_runs_never_chose_is_blamed_with_references() -> None:
    """The route the router made up names the desk that ran next (``escalate``), yet its passing runs only ever
    passed on the label they were given: held to them it made a value up (`chose_next` reads the step's own
    calls only), and the router ranks first (fix56a probe)."""
    refs = [_desk_run(k, False) for k in (["shipping", "refund"], ["refund", "shipping"],
                                          ["refund", "refund", "shipping"], ["shipping", "shipping"])]
    a = analyze(_desk_run(["shipping", "refund", "shipping"], True), references=refs)
    top = a.root_causes[0]
    assert top.step_id == next(s.step_id for s in a.run.steps if s.output == "escalate" and s.name == "dispatch")
    assert "reference:grounded" in top.signals


def test_a_code_router_passing_on_given_labels_is_held_to_them_alone() -> None:
    """Alone, the router's other calls each passed on the whole label they were given: the route it made up
    (``escalate``, which ran next) is held to them, though it names the next step (`chose_next` skips only calls
    grounded by a word inside a longer text: review rev56a, HIGH; its probe ``a_desk_alone``)."""
    a = analyze(_desk_run(["shipping", "refund", "shipping", "shipping"], True))
    top = a.root_causes[0]
    assert top.step_id == next(s.step_id for s in a.run.steps if s.output == "escalate" and s.name == "dispatch")
    assert "sibling:grounded" in top.signals


def _desk_record_run(labels: Sequence[str], bug: bool) -> Run:
    """`_desk_run` with a plain code router answering a one-field record (``{"desk": "refund"}``)."""

    @trajdebug.step(kind="llm")
    def classify(text: str) -> dict[str, str]:
        return {"label": labels[int(text.split()[-1])]}

    @trajdebug.step(kind="other")
    def dispatch(c: dict[str, str]) -> dict[str, str]:
        return {"desk": "escalate" if bug and c["label"] == "refund" else c["label"]}

    @trajdebug.step(kind="tool")
    def refund(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "refund", "reply": "refund issued"}

    @trajdebug.step(kind="tool")
    def shipping(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "shipping", "reply": "parcel re-sent"}

    @trajdebug.step(kind="tool")
    def escalate(t: str) -> dict[str, str]:
        return {"ticket": t, "desk": "escalate", "reply": "a manager will call"}

    desks = {"refund": refund, "shipping": shipping, "escalate": escalate}
    with deterministic(), capture_runs() as runs, trajdebug.run("desk2", task="answer tickets") as r:
        for i in range(len(labels)):
            desks[dispatch(classify(f"ticket {i}"))["desk"]](f"T-{i}")
        if bug:
            r.fail("a refund request got 'a manager will call' instead of a refund")
    (run,) = runs
    return run


def test_a_code_router_answering_a_record_that_makes_up_a_route_stays_named_alone() -> None:
    """The router as a plain code step answering ``{"desk": c["label"]}``: the made-up ``escalate`` is held to its
    other calls, which each copied a whole given label, and the router stays among the first four (review
    rev56a, HIGH; its probe ``a2_desk_alone``)."""
    a = analyze(_desk_record_run(["shipping", "refund", "shipping", "shipping"], True))
    bad = next(s.step_id for s in a.run.steps if s.name == "dispatch" and s.output == {"desk": "escalate"})
    top4 = a.root_causes[:4]
    assert bad in [c.step_id for c in top4]
    assert "sibling:grounded" in next(c for c in top4 if c.step_id == bad).signals


def test_a_one_field_record_holding_an_id_is_no_route() -> None:
    """A code step picking the account of each order (``{"account": "C-101"}``), each account's sub-step named by
    it: the default account it made up (``C-100``) names the step that ran next, yet an id is data, not a route,
    and the step's other calls each copied a given id (review rev56a, MEDIUM; its probe ``b3_accounts``)."""
    orders = [{"order": f"O-{i}", "customer": f"C-10{i}"} for i in range(1, 5)]

    @trajdebug.step(kind="other")
    def pick_account(o: dict[str, str]) -> dict[str, str]:
        return {"account": "C-100"} if o["order"] == "O-3" else {"account": o["customer"]}

    @trajdebug.step(kind="tool")
    def charge(acct: dict[str, str], order: str) -> dict[str, Any]:
        return {"charged": acct, "order": order, "ok": True}

    with deterministic(), capture_runs() as runs, trajdebug.run("acct3", task="handle tickets") as r:
        for o in orders:
            c = pick_account(o)
            with trajdebug.step(c["account"], kind="agent", input=c):
                charge(dict(c), o["order"])
        r.fail("order O-3 was charged to account C-100, not its customer C-103")
    (run,) = runs
    a = analyze(run)
    bad = next(s.step_id for s in run.steps if s.name == "pick_account" and s.output == {"account": "C-100"})
    top4 = a.root_causes[:4]
    assert bad in [c.step_id for c in top4]
    assert "sibling:grounded" in next(c for c in top4 if c.step_id == bad).signals
    assert route_of({"account": "C-100"}) is None
    assert route_of({"next": "agent_2"}) == "agent_2"


class TestSameInputNeedsTheFirstInput:
    """nu29 finding 2: a constant ``task`` over runs given other entry arguments is not the same input."""

    @staticmethod
    def _run(rid: str, first: Any, task: str = "expense report", outcome: str = "success") -> Run:
        steps = (
            Step(f"{rid}1", "receipts", "input", input=first, output=first, start_ns=1, end_ns=2),
            Step(f"{rid}2", "total", "tool", input={"n": 1}, output={"eur": 3.0}, start_ns=3, end_ns=4),
        )
        return Run(rid, "expenses", metadata={"task": task}, outcome=outcome, steps=steps)

    def test_one_task_with_other_receipts_is_another_input_in_the_analysis_and_the_diff(self) -> None:
        from trajdebug.analysis.reference import same_request
        from trajdebug.api import same_input
        from trajdebug.replay.align import input_difference

        bad = self._run("f", {"text": "Delta | 612.40 | USD"}, outcome="failure")
        other = self._run("o", {"text": "Dishoom | 64.20 | GBP"})
        assert not same_request(bad, other) and same_input(bad, [bad, other]) is None
        differ = input_difference(other, bad)
        assert differ is not None and differ.what == "first step receipts's input"
        twin = self._run("t", {"text": "Delta | 612.40 | USD"})
        assert same_request(bad, twin) and same_input(bad, [bad, other, twin]) is twin
        assert input_difference(twin, bad) is None
        assert not same_request(bad, self._run("x", {"text": "Delta | 612.40 | USD"}, task="another report"))

    def test_a_retry_stamped_with_its_own_request_id_and_time_is_the_same_input(self) -> None:
        """A retry of one request whose first input carries a new request id and receipt time is the same input;
        the same stamps over other receipts are not."""
        from trajdebug.analysis.reference import same_request

        def first(rid: str, at: str, text: str) -> dict[str, Any]:
            return {"request_id": rid, "receivedAt": at, "receipts": {"text": text, "trace_id": rid}}

        a = self._run("a", first("rq-1", "2026-12-06T10:00", "Delta | 612.40 | USD"), outcome="failure")
        b = self._run("b", first("rq-2", "2026-12-06T10:05", "Delta | 612.40 | USD"))
        c = self._run("c", first("rq-3", "2026-12-06T10:09", "Dishoom | 64.20 | GBP"))
        assert same_request(a, b) and not same_request(a, c)


def test_a_same_input_answer_names_both_values_where_they_differ(tmp_path: Path) -> None:
    """The same-input reason shows what the step answered and what the passing run of that input answered, cut
    around where they first differ (nu30 finding 5: "it answered differently" named no value)."""
    import trajdebug
    from trajdebug.api import analyze_source

    path = tmp_path / "runs.jsonl"
    for income, fail in ((62400.0, False), (5200.0, True)):
        with trajdebug.run("loan-screen", path=str(path), task="screen app-3301") as r:
            with trajdebug.step("read_form", kind="tool", input={"app": "app-3301"}) as f:
                f.output = {"income": "EUR 5,200 / month", "note": "x" * 200}
            with trajdebug.step("parse_income", kind="parse", input=f.output) as p:
                p.output = {"annual_income": income}
            with trajdebug.step("compute_dti", kind="other", input=p.output) as c:
                c.output = {"dti": round(4800 / income, 3)}
            if fail:
                r.fail(f"DTI {c.output['dti']} over the limit")
    [analysis] = analyze_source(path).analyses
    names = {s.step_id: s.name for s in analysis.run.steps}
    reasons = [r for c in analysis.root_causes if names.get(c.step_id) == "parse_income" for r in c.reasons]
    said = [r for r in reasons if "answered differently" in r]
    assert said and '5200.0} where the passing run answered {"annual_income": 62400.0}' in said[0].replace("\n", "")


class TestCategoryPeers:
    """A number among a step's calls is compared only with the calls of its category when the numbers follow the
    category and the category holds enough calls (nu29 finding 4; review rev56b)."""

    @staticmethod
    def _run(calls: list[tuple[str, float]], key: str = "currency") -> tuple[Run, Lineage]:
        steps = tuple(
            Step(f"c{i}", "to_eur", "tool", input={"receipt": {"line": i, key: cur, "amount": 10.0 * (i + 1)}},
                 output={"line": i, "rate": rate}, start_ns=i, end_ns=i + 1)
            for i, (cur, rate) in enumerate(calls)
        )
        run = Run("r", "expenses", outcome="failure", steps=steps)
        return run, Lineage(run)

    @staticmethod
    def _magnitude(run: Run, lin: Lineage, sid: str) -> list[str]:
        step = next(s for s in run.steps if s.step_id == sid)
        own = sibling_profiles(run, lin)[sid]
        return [e.reason for e in violations(step, lin.view(sid), own) if e.diagnoser == "reference:magnitude"]

    def test_an_outlier_within_its_category_is_found_where_other_categories_widen_the_range(self) -> None:
        """A dollar rate of 0.0091 among dollar rates near 0.92 is about 100x outside them, though yen rates near
        0.006 put it inside the range of all the calls."""
        calls = [("USD", 0.91), ("JPY", 0.0061), ("USD", 0.93), ("USD", 0.0091), ("JPY", 0.0062), ("USD", 0.92),
                 ("USD", 0.94), ("JPY", 0.0060)]
        run, lin = self._run(calls)
        [reason] = self._magnitude(run, lin, "c3")
        assert "100x outside" in reason and "0.91 to 0.94" in reason
        assert self._magnitude(run, lin, "c1") == []

    def test_a_call_alone_in_its_category_is_compared_with_all_the_others(self) -> None:
        """rev56b HIGH: a call with no other of its category keeps its check against every other call, as before
        categories (a yen rate of 16200, a hundred times the right 162, among dollar and pound rates); and so does a
        call whose category holds fewer calls than a check needs."""
        usd_gbp = [("USD", 1.08), ("GBP", 0.86), ("USD", 1.07), ("USD", 1.09), ("GBP", 0.87), ("USD", 1.08)]
        run, lin = self._run([*usd_gbp[:3], ("JPY", 16200.0), *usd_gbp[3:]])
        [reason] = self._magnitude(run, lin, "c3")
        assert "10000x outside" in reason and "0.86 to 1.09" in reason
        run, lin = self._run([*usd_gbp[:3], ("JPY", 16200.0), *usd_gbp[3:], ("JPY", 162.0)])
        [reason] = self._magnitude(run, lin, "c3")
        assert "100x outside" in reason and "0.86 to 162" in reason

    def test_a_loop_over_unique_ids_stays_one_series(self) -> None:
        """Calls each given its own id (no value repeats) are compared with all the others, as before."""
        run, lin = self._run(
            [("alpha", 0.91), ("bravo", 0.93), ("charlie", 0.0091), ("delta", 0.92), ("echo", 0.94)], key="account"
        )
        [reason] = self._magnitude(run, lin, "c2")
        assert "100x outside" in reason


def _fx_run(quotes: Sequence[str], off: int) -> Run:
    """A small agent converting invoices: one rate call and one conversion per invoice; the call at ``off``
    answers a rate a hundred times the right one (rev56b's probe p4, reduced)."""
    rates = {"USD": 1.08, "GBP": 0.86, "JPY": 162.0}

    @trajdebug.step(kind="tool")
    def fx(base: str, quote: str, i: int) -> dict[str, Any]:
        return {"base": base, "quote": quote, "rate": rates[quote] * (100 if i == off else 1)}

    @trajdebug.step(kind="parse")
    def convert(amount: float, q: dict[str, Any]) -> dict[str, Any]:
        return {"amount_eur": amount, "converted": round(amount * q["rate"], 2)}

    @trajdebug.step(kind="output")
    def total(items: list[dict[str, Any]]) -> dict[str, float]:
        return {"sum": sum(x["converted"] for x in items)}

    with deterministic(), capture_runs() as runs, trajdebug.run("fx", task="convert invoices") as r:
        total([convert(100.0 + i, fx("EUR", q, i)) for i, q in enumerate(quotes)])
        r.fail("the total is wrong")
    (run,) = runs
    return run


@pytest.mark.parametrize(
    ("off", "name"),
    [(4, "USD 100x among USD calls, JPY widening the range"), (3, "the one JPY call 100x off (rev56b HIGH)")],
)
def test_a_rate_off_among_its_calls_is_ranked_first(off: int, name: str) -> None:
    """Recorded: a rate a hundred times off is ranked first whether its currency has peers (compared with them)
    or not (compared with every other call)."""
    run = _fx_run(["USD", "GBP", "USD", "JPY", "USD", "USD", "GBP", "USD"], off)
    a = analyze(run)
    bad_fx = [s for s in run.steps if s.name == "fx"][off]
    bad_convert = [s for s in run.steps if s.name == "convert"][off]
    top = a.root_causes[0]
    assert top.step_id in (bad_fx.step_id, bad_convert.step_id), name
    assert {"sibling:magnitude", "sibling:ratio"} & set(top.signals), name
