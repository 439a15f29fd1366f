"""A sign a step sets by a rule of its input, as its other calls show, is no altered value."""

from __future__ import annotations

from typing import Any

import pytest
from tests.builders import step

from trajdebug.analysis import _sign_rule
from trajdebug.analysis._localize import localize
from trajdebug.analysis._sign_rule import CallRules, scaled_by_rule
from trajdebug.analysis.lineage import Lineage
from trajdebug.core.model import ErrorInfo, Run


def _book(second_side: str) -> Run:
    """Two trades marked by one step (a sale booked negative), summed, and a recon check that fails."""
    steps = (
        step("t1", "read_ticket", "tool", 1, {"id": "T-1"}, {"side": "sell", "mwh": 4032}),
        step("m1", "mark_position", "other", 3, {"side": "sell", "mwh": 4032}, {"mwh": -4032}, "t1"),
        step("t2", "read_ticket", "tool", 5, {"id": "T-2"}, {"side": second_side, "mwh": 6720}),
        step("m2", "mark_position", "other", 7, {"side": second_side, "mwh": 6720}, {"mwh": 6720}, "t2"),
        step("a", "aggregate", "other", 9, {"positions": [-4032, 6720]}, {"net_mwh": 2688}, "m1", "m2"),
        step(
            "c",
            "recon_check",
            "tool",
            11,
            {"net_mwh": 2688},
            None,
            "a",
            status="error",
            error=ErrorInfo("ReconBreak", "book net 2,688 vs broker confirms -10,752"),
        ),
    )
    return Run("r", "trading", outcome="failure", steps=steps)


def _altered(run: Run) -> set[str]:
    loc = localize(run)
    return {c.step_id for c in loc.ranked_all if "lineage:altered" in c.signals}


def test_a_sign_the_step_flips_for_one_side_and_keeps_for_the_other_is_its_rule() -> None:
    """A sell booked negative where the same step keeps a buy positive follows its input: no altered value."""
    assert "m1" not in _altered(_book("buy"))


def test_a_sign_flipped_where_another_call_with_the_same_input_kept_it_is_still_altered() -> None:
    """Two sells, one negated and one not: nothing in the input tells them apart, so the flip stays suspect."""
    assert "m1" in _altered(_book("sell"))


def _bakery(last_factor: float, out_field: str = "price_p") -> Run:
    """A bakery's price sheet read loaf by loaf: a step writes each loaf's price in pence (``price_p``) from
    its price in pounds (``price``), four loaves, the last by ``last_factor``; the order total is refused."""
    steps = []
    loaves = [("rye", 3.45), ("spelt", 4.1), ("sourdough", 5.25), ("barm", 2.35)]
    for i, (loaf, price) in enumerate(loaves):
        factor = last_factor if i == 3 else 100.0
        steps.append(step(f"r{i}", "read_loaf", "tool", 10 * i, {"loaf": loaf}, {"loaf": loaf, "price": price}))
        steps.append(
            step(f"p{i}", "to_pence", "other", 10 * i + 1, {"loaf": loaf, "price": price},
                 {"loaf": loaf, out_field: round(price * factor, 4)}, f"r{i}")
        )
    steps.append(
        step("o", "place_order", "tool", 50, {"lines": [s.output for s in steps if s.name == "to_pence"]}, None,
             "p0", "p1", "p2", "p3", status="error", error=ErrorInfo("Refused", "order total does not match the sheet"))
    )
    return Run("r", "bakery", outcome="failure", steps=tuple(steps))


def test_a_power_of_ten_every_call_of_the_step_applies_is_a_unit_converted_by_rule() -> None:
    """Pounds written as pence (x100) by every one of four calls is the step's conversion: no altered value."""
    assert not {"p0", "p1", "p2", "p3"} & _altered(_bakery(100.0))


def test_a_power_of_ten_one_call_applies_otherwise_stays_altered() -> None:
    """When the last call scales by 1000 where the other three scale by 100, it (and only it) slipped."""
    assert _altered(_bakery(1000.0)) & {"p0", "p1", "p2", "p3"} == {"p3"}


def test_a_power_of_ten_every_call_writes_back_under_the_same_name_stays_altered() -> None:
    """Every call writing ``price`` x100 back as ``price`` claims no new unit (a conversion renames what it
    converts): the ordinary shape of a units slip in a loop, each call keeps its altered value."""
    assert _altered(_bakery(100.0, out_field="price")) >= {"p0", "p1", "p2", "p3"}


def _converter(n: int) -> tuple[Run, Lineage]:
    """``n`` calls of one unit converter (litres to millilitres, x1000), each given its own tank's volume."""
    steps = [
        step(f"v{i}", "to_millilitres", "other", 2 * i, {"tank": f"T-{i}", "litres": 1.5 + i},
             {"tank": f"T-{i}", "volume_ml": (1.5 + i) * 1000})
        for i in range(n)
    ]
    run = Run("r", "brewery", outcome="failure", steps=tuple(steps))
    return run, Lineage(run)


def test_each_call_of_a_step_is_read_once_however_many_calls_the_step_has(monkeypatch: pytest.MonkeyPatch) -> None:
    """Judging every call of a step by its other calls reads each call's numbers a bounded number of times,
    so a step called many times costs in proportion to its calls, not their square."""
    reads = [0]
    real = _sign_rule._numbers

    def counted(atoms: Any) -> dict[str, float]:
        reads[0] += 1
        return real(atoms)

    monkeypatch.setattr(_sign_rule, "_numbers", counted)
    for n in (50, 200):
        run, lin = _converter(n)
        rules, calls = CallRules(lin), list(run.steps)
        reads[0] = 0
        assert all(rules.scaled(s, calls) == frozenset({"volume_ml"}) for s in calls)
        assert reads[0] <= 2 * n


def test_the_shared_reading_judges_each_call_as_the_call_alone_does() -> None:
    """One reading shared by a step's calls finds the same fields scaled by rule as each call judged alone."""
    run, lin = _converter(6)
    rules, calls = CallRules(lin), list(run.steps)
    assert [rules.scaled(s, calls) for s in calls] == [scaled_by_rule(s, calls, lin) for s in calls]
    assert rules.scaled(calls[0], calls[1:]) == scaled_by_rule(calls[0], calls[1:], lin) == frozenset({"volume_ml"})


def test_a_call_listed_twice_under_one_id_agrees_with_itself_once() -> None:
    """A run that lists one call twice (an integration re-emitting a span) still has two calls: the doubled one
    does not count as two calls that scale the same way, so a lone slip stays altered."""
    steps = []
    for i, (loaf, price) in enumerate([("rye", 3.45), ("spelt", 4.1)]):
        steps.append(step(f"r{i}", "read_loaf", "tool", 10 * i, {"loaf": loaf}, {"loaf": loaf, "price": price}))
        steps.append(
            step(f"p{i}", "to_pence", "other", 10 * i + 1, {"loaf": loaf, "price": price},
                 {"loaf": loaf, "price_p": round(price * 100, 4)}, f"r{i}")
        )  # fmt: skip
    calls = [s for s in steps if s.name == "to_pence"]
    lin = Lineage(Run("r", "bakery", outcome="failure", steps=tuple(steps)))
    once = scaled_by_rule(calls[0], calls, lin, least=2)
    twice = scaled_by_rule(calls[0], [calls[0], *calls], lin, least=3)
    assert once == frozenset({"price_p"}) and twice == frozenset()
