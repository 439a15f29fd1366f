"""Tests of the power-of-ten slip read from the failure's numbers (analysis/_scale.py), in invented domains."""

from __future__ import annotations

from trajdebug.analysis._localize import Localization, localize
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


D = Dependency


def _flagged(loc: Localization) -> set[str]:
    return {c.step_id for c in loc.candidates if "lineage:whatif" in c.signals}


def _hive_run(message: str, kg: float) -> Run:
    """A hive weigher's grams converted to kilograms, handed on to a registry that refuses with ``message``."""
    steps = (
        Step("w", "weigh_hive", "tool", input={"hive": "H-9"}, output={"mass_g": 3400}, start_ns=1, end_ns=2),
        Step(
            "c", "to_kilograms", "other", input={"reading": {"mass_g": 3400}}, output={"mass_kg": kg},
            deps=(D("w"),), start_ns=3, end_ns=4,
        ),
        Step(
            "r", "register_hive", "tool", input={"hive": "H-9", "mass_kg": kg}, status="error",
            error=ErrorInfo("Rejected", message), deps=(D("c"),), start_ns=5, end_ns=6,
        ),
    )
    return Run("r", "apiary", outcome="failure", steps=steps)


def test_a_number_only_loosely_a_power_of_ten_from_a_single_limit_is_no_slip() -> None:
    """A run's number a power of ten from the limit beside it only within a loose margin (0.034 against a 0.3
    minimum: 0.34, 13 % off) is a limit that happens to lie near, not a slip; the same number a power of ten from
    the expected value itself (0.34) is one."""
    assert _flagged(localize(_hive_run("hive mass 0.034 kg is under the 0.3 kg margin", 0.034))) == set()
    assert _flagged(localize(_hive_run("hive mass 0.034 kg disagrees with the scale (0.34 kg)", 0.034))) == {"c"}


def test_a_percentage_beside_a_number_without_one_is_no_scaled_value() -> None:
    """A fare of 3,012.50 that "is not within 3%" of a quote is not the 3 a thousand times over: a percentage is
    never the same quantity as a number written without one."""
    steps = (
        Step("q", "quote_fare", "tool", input={"route": "F-2"}, output={"fare": 3012.5}, start_ns=1, end_ns=2),
        Step(
            "b", "book_ferry", "tool", input={"fare": 3012.5}, status="error",
            error=ErrorInfo("Rejected", "fare 3,012.50, not within 3% of the timetable's quote"),
            deps=(D("q"),), start_ns=3, end_ns=4,
        ),
    )
    assert _flagged(localize(Run("r", "ferries", outcome="failure", steps=steps))) == set()


def _humidity_run(others: tuple[float, ...]) -> Run:
    """A greenhouse's humidity computed once per house (the last 0.67, the others ``others``), checked against
    the history's 68 % beside it."""
    steps: list[Step] = [
        Step("h", "get_history", "tool", input={"house": "G-3"}, output={"last_pct": 68}, start_ns=1, end_ns=2)
    ]
    for n, v in enumerate((*others, 0.67)):
        steps.append(
            Step(
                f"c{n}", "compute_humidity", "other", input={"house": f"G-{n + 1}"}, output={"humidity_pct": v},
                start_ns=3 + 2 * n, end_ns=4 + 2 * n,
            )
        )
    last = f"c{len(others)}"
    steps.append(
        Step(
            "k", "review_house", "tool", input={"humidity_pct": 0.67, "last_pct": 68}, status="error",
            error=ErrorInfo("Held", "G-3 humidity 0.67% is far from the history's 68%"),
            deps=(D(last), D("h")), start_ns=20, end_ns=21,
        )
    )
    return Run("r", "greenhouse", outcome="failure", steps=tuple(steps))


def test_two_of_the_runs_numbers_a_power_apart_name_the_slip_only_where_a_step_broke_its_habit() -> None:
    """When the failure states two numbers the failing step was given, a power of ten apart, they say the two
    disagree, not which slipped: the step whose other calls gave numbers at the other's scale (66, 71 against
    68) is the odd one out and has the finding; with no other calls to compare, nobody has it."""
    assert _flagged(localize(_humidity_run((66.0, 71.0)))) == {"c2"}
    assert _flagged(localize(_humidity_run(()))) == set()


def test_a_number_handed_on_under_a_new_name_without_a_unit_was_not_relabelled() -> None:
    """A step that hands a lab's salt_g=2.1 on as ``checked_value`` converts nothing, so a salt 2.1 a power of
    ten short of the expected 21 g is the lab's slip; handed on as ``salt_mg`` it would be the relabeller's."""

    def run_of(field: str) -> Run:
        steps = (
            Step("l", "lab_salt", "tool", input={"lot": "CH-2"}, output={"lot": "CH-2", "salt_g": 2.1}, start_ns=1, end_ns=2),
            Step(
                "c", "prepare_label", "other", input={"assay": {"lot": "CH-2", "salt_g": 2.1}},
                output={"lot": "CH-2", field: 2.1}, deps=(D("l"),), start_ns=3, end_ns=4,
            ),
            Step(
                "d", "file_label", "tool", input={"label": {"lot": "CH-2", field: 2.1}}, status="error",
                error=ErrorInfo("Rejected", "declared salt 2.1 differs from the lab sheet's 21"),
                deps=(D("c"),), start_ns=5, end_ns=6,
            ),
        )
        return Run("r", "cheese", outcome="failure", steps=steps)

    assert _flagged(localize(run_of("checked_value"))) == {"l"}
    assert _flagged(localize(run_of("salt_mg"))) == {"c"}


def test_a_converter_that_scaled_by_its_habit_passes_the_slip_to_its_input() -> None:
    """A parser that reads "2,450 g" as 2.45 hands a converter that divides grams by 1000 in every call (1800 to
    1.8 before): the 0.00245 kg a thousandth of the expected 2.45 kg is the parser's slip, not the converter's;
    a converter with no other call to show its habit keeps the finding."""

    def run_of(before: bool) -> Run:
        steps: list[Step] = []
        if before:
            steps += [
                Step("p0", "parse_crate", "parse", input={"text": "crate=C1 mass=1800 g"}, output={"mass_g": 1800.0}, start_ns=1, end_ns=2),
                Step("k0", "to_kg", "other", input={"crate": {"mass_g": 1800.0}}, output={"mass_kg": 1.8}, deps=(D("p0"),), start_ns=3, end_ns=4),
            ]
        steps += [
            Step("p1", "parse_crate", "parse", input={"text": "crate=C2 mass=2,450 g"}, output={"mass_g": 2.45}, start_ns=5, end_ns=6),
            Step("k1", "to_kg", "other", input={"crate": {"mass_g": 2.45}}, output={"mass_kg": 0.00245}, deps=(D("p1"),), start_ns=7, end_ns=8),
            Step(
                "s", "ship_crate", "tool", input={"mass_kg": 0.00245}, status="error",
                error=ErrorInfo("Rejected", "crate C2 declares 0.00245 kg, the dock scale 2.45 kg"),
                deps=(D("k1"),), start_ns=9, end_ns=10,
            ),
        ]
        return Run("r", "orchard", outcome="failure", steps=tuple(steps))

    assert _flagged(localize(run_of(True))) == {"p1"}
    assert _flagged(localize(run_of(False))) == {"k1"}
