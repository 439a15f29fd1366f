"""A broken reference ratio moved through a step that only relays one of its operands (`reference._relations`
`relayed` and `_usual_copy`): built agents with four passing references and one failing run each (revmiss63b's
probes: the intended relay, and steps that did more than copy in a passing run, which are no relays)."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.analysis.reference import references
from trajdebug.core.model import Run
from trajdebug.sources.load import load_runs


# (order id, crates, kg per crate, unit of the shipment record); the last is the failing order.
ORDERS = [("ORD-1", 1, 40.0, "kg"), ("ORD-2", 1, 95.5, "kg"), ("ORD-3", 2, 60.0, "kg"), ("ORD-4", 1, 210.0, "kg"),
          ("ORD-9", 3, 54.4, "kg")]


def _recorded(path: Path, agent: str, jobs: list[tuple[str, Callable[[], None]]]) -> tuple[Run, list[Run]]:
    for task, body in jobs:
        with contextlib.suppress(ValueError), trajdebug.run(agent, path=path, metadata={"task": task}):
            body()
    pool = load_runs(path)
    [bad] = [r for r in pool if r.outcome != "success"]
    return bad, pool


@trajdebug.step(kind="other")
def check_quote(quote: dict[str, Any]) -> str:
    d, m = quote["declared_kg"], quote["measured_kg"]
    if abs(d - m) > 0.05 * m:
        raise ValueError(f"declared weight {d} kg differs from the carrier manifest {m} kg by more than 5 %")
    return "ok"


def customs(path: Path, *, bug: str, order: tuple[str, ...] = ("shipment", "rate", "manifest"),
            billed_round: bool = False, rename: bool = False, lb_text: bool = True) -> tuple[Run, list[Run]]:
    """A customs quote: parse the request (total weight), rate it, read the carrier's manifest, compute the quote
    (declared weight = the shipment's weight), check declared against measured.
    ``bug``: "parse" (parse forgets the crate count: the root is parse_request), "manifest" (the manifest tool
    answers pounds as kilograms: the root is carrier_manifest), "quote" (compute_quote is given the weight per
    crate and the count, and forgets to multiply by the count in the failing run: the root is compute_quote).
    ``order``: compute_quote's argument order; ``billed_round``: the rate tool answers the billed weight rounded
    up to a whole kg under ``weight``; ``rename``: a model relays parse's ``total_kg`` as ``weight``; ``lb_text``: the
    request states pounds per crate (parse converts: the kg numbers are new), else kilograms (the request holds them)."""

    @trajdebug.step(kind="tool")
    def parse_request(request: str, oid: str) -> dict[str, Any]:
        _, n, per, _ = next(o for o in ORDERS if o[0] == oid)
        failing = oid == "ORD-9"
        if bug == "quote":
            return {"order_id": oid, "weight": per, "crates": n}
        w = round(per if (bug == "parse" and failing) else per * n, 1)
        return {"order_id": oid, ("total_kg" if rename else "weight"): w, "crates": n}

    @trajdebug.step(kind="llm")
    def plan_shipment(parsed: dict[str, Any]) -> dict[str, Any]:
        return {"order_id": parsed["order_id"], "weight": parsed["total_kg"]}

    @trajdebug.step(kind="tool")
    def shipping_rate(weight: float) -> dict[str, Any]:
        billed = float(math.ceil(weight)) if billed_round else weight
        return {"weight": billed, "freight": round(3 * billed + 7, 2)}

    @trajdebug.step(kind="tool")
    def carrier_manifest(order_id: str) -> dict[str, Any]:
        _, n, per, _ = next(o for o in ORDERS if o[0] == order_id)
        kg = round(per * n, 1)
        return {"order_id": order_id, "measured_kg": round(kg * 2.2046, 1) if bug == "manifest" and order_id == "ORD-9" else kg}

    @trajdebug.step(kind="other")
    def compute_quote(**given: dict[str, Any]) -> dict[str, Any]:
        shipment, rate, manifest = given["shipment"], given["rate"], given["manifest"]
        w = shipment["weight"]
        if bug == "quote" and shipment["order_id"] != "ORD-9":
            w = round(w * shipment["crates"], 1)
        return {"declared_kg": w, "measured_kg": manifest["measured_kg"], "total": round(rate["freight"] + 12.5, 2)}

    def job(oid: str, n: int, per: float) -> Callable[[], None]:
        def body() -> None:
            each = f"{round(per / 0.45359237)} lb" if lb_text else f"{per} kg"
            shipment = parse_request(f"Ship {n} crates of tiles, {each} each, order {oid}", oid)
            if rename:
                shipment = plan_shipment(shipment)
            rate = shipping_rate(shipment["weight"])
            manifest = carrier_manifest(oid)
            parts = {"shipment": shipment, "rate": rate, "manifest": manifest}
            check_quote(compute_quote(**{k: parts[k] for k in order}))
        return body

    return _recorded(path, "customs", [(f"quote {o}", job(o, n, p)) for o, n, p, _ in ORDERS])


def declare(path: Path) -> tuple[Run, list[Run]]:
    """A model fills a customs declaration from the shipment record (weight and unit) and the manifest: kg weights it
    copies, lb weights it converts (one passing order of four was in lb).  In the failing order, in lb, it copies
    the pounds as kilograms: the root is declare_customs (the record tool answered right)."""
    orders = [("ORD-1", 40.0, "kg"), ("ORD-2", 95.5, "kg"), ("ORD-3", 264.6, "lb"), ("ORD-4", 210.0, "kg"),
              ("ORD-9", 360.0, "lb")]

    @trajdebug.step(kind="tool")
    def read_shipment(order_id: str) -> dict[str, Any]:
        _, w, unit = next(o for o in orders if o[0] == order_id)
        return {"order_id": order_id, "weight": w, "unit": unit}

    @trajdebug.step(kind="tool")
    def carrier_manifest(order_id: str) -> dict[str, Any]:
        _, w, unit = next(o for o in orders if o[0] == order_id)
        return {"order_id": order_id, "measured_kg": round(w * 0.4536, 1) if unit == "lb" else w}

    @trajdebug.step(kind="llm")
    def declare_customs(shipment: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
        w = shipment["weight"]
        if shipment["unit"] == "lb" and shipment["order_id"] != "ORD-9":
            w = round(w * 0.4536, 1)
        return {"declared_kg": w, "measured_kg": manifest["measured_kg"]}

    def job(oid: str) -> Callable[[], None]:
        def body() -> None:
            check_quote(declare_customs(read_shipment(oid), carrier_manifest(oid)))
        return body

    return _recorded(path, "declare", [(f"declare {o}", job(o)) for o, _, _ in orders])


def checkout(path: Path) -> tuple[Run, list[Run]]:
    """A checkout: the cart (subtotal), the coupon service (a discount, none for most orders), the payment
    pre-authorisation (the amount the bank approved: subtotal - discount), then price_order, whose total is the
    subtotal less the discount; the capture fails when the total is not the authorised amount.  One passing order
    of four had a coupon; the failing order has one and price_order forgets it: the root is price_order."""
    carts = [("C-1", 82.0, 0.0), ("C-2", 140.5, 0.0), ("C-3", 60.0, 15.0), ("C-4", 230.0, 0.0), ("C-9", 118.0, 20.0)]

    @trajdebug.step(kind="tool")
    def read_cart(cart_id: str) -> dict[str, Any]:
        _, sub, _ = next(c for c in carts if c[0] == cart_id)
        return {"cart_id": cart_id, "subtotal": sub}

    @trajdebug.step(kind="tool")
    def coupon_service(cart_id: str) -> dict[str, Any]:
        _, _, d = next(c for c in carts if c[0] == cart_id)
        return {"coupon": "SPRING" if d else "", "discount": d} if d else {"coupon": ""}

    @trajdebug.step(kind="tool")
    def preauthorize(cart_id: str) -> dict[str, Any]:
        _, sub, d = next(c for c in carts if c[0] == cart_id)
        return {"authorized": round(sub - d, 2)}

    @trajdebug.step(kind="other")
    def price_order(cart: dict[str, Any], coupon: dict[str, Any], payment: dict[str, Any]) -> dict[str, Any]:
        d = 0.0 if cart["cart_id"] == "C-9" else coupon.get("discount", 0.0)
        return {"total": round(cart["subtotal"] - d, 2), "authorized": payment["authorized"]}

    @trajdebug.step(kind="other")
    def capture(order: dict[str, Any]) -> str:
        if abs(order["total"] - order["authorized"]) > 0.01:
            raise ValueError(f"capture of {order['total']} exceeds the authorised {order['authorized']}")
        return "ok"

    def job(cid: str) -> Callable[[], None]:
        def body() -> None:
            capture(price_order(read_cart(cid), coupon_service(cid), preauthorize(cid)))
        return body

    return _recorded(path, "checkout", [(f"checkout {c}", job(c)) for c, _, _ in carts])


PROBES: dict[str, tuple[Callable[[Path], tuple[Run, list[Run]]], str]] = {
    "a parser drops the crate count, its weight given twice to the relay": (lambda p: customs(p, bug="parse"), "parse_request"),
    "the same, the relay given the manifest first": (
        lambda p: customs(p, bug="parse", order=("manifest", "shipment", "rate")), "parse_request"),
    "the relay forgets the crates it multiplied by in one passing run": (lambda p: customs(p, bug="quote"), "compute_quote"),
    "a model copies pounds as kilograms it converted in one passing run": (declare, "declare_customs"),
    "a pricing step forgets a coupon it took off in one passing run": (checkout, "price_order"),
}


def rank_of(bad: Run, pool: list[Run], root: str) -> tuple[int | None, list[str], list[str]]:
    """The true root's rank with references (1-based), the top three names, and the reasons naming a ratio."""
    a = analyze(bad, references=references(bad, pool), top=60)
    names = [bad.step(c.step_id).name for c in a.root_causes]
    rank = names.index(root) + 1 if root in names else None
    ratio = [f"{bad.step(c.step_id).name}: {r}" for c in a.root_causes for r in c.reasons if "passing occurrences it was" in r]
    return rank, names[:3], ratio


@pytest.mark.parametrize("probe", list(PROBES))
def test_the_step_that_went_wrong_ranks_first_and_a_relay_passes_the_ratio_on(probe: str, tmp_path: Path) -> None:
    """With references, a broken ratio a step only relayed goes to where the relayed value came from, and a step
    that did more than copy in any passing run keeps it: each case's true root ranks first."""
    build, root = PROBES[probe]
    bad, pool = build(tmp_path / "runs.jsonl")
    assert rank_of(bad, pool, root)[0] == 1


def _one_step(rid: str, name: str, inp: dict[str, Any], out: dict[str, Any], outcome: str) -> Run:
    from tests.builders import step

    return Run(rid, "kitchen", outcome=outcome, steps=(step(f"{rid}s", name, "tool", 0, inp, out),))


def _found(bad: Run, passing: list[Run]) -> list[Any]:
    from trajdebug.analysis.lineage import Lineage
    from trajdebug.analysis.reference import learn, violations

    return list(violations(bad.steps[0], Lineage(bad).view(bad.steps[0].step_id), learn(passing)))


def test_a_number_that_fits_the_usual_formula_is_no_formula_deviation_whatever_else_it_fits() -> None:
    """A scaled quantity computed as every passing run computed it (guests x grams) is no deviation because it
    is also the sum of two neighbouring given numbers (8 x 10 = 80 = 30 + 50), which the formula the lineage
    names first says."""

    def scale(rid: str, guests: int, grams: list[int], outcome: str) -> Run:
        lines = [{"item": f"i{k}", "grams": g} for k, g in enumerate(grams)]
        out = [{"item": f"i{k}", "grams": float(guests * g)} for k, g in enumerate(grams)]
        return _one_step(rid, "scale_recipe", {"guests": guests, "lines": lines}, {"lines": out}, outcome)

    passing = [scale(f"ok{k}", 3 + k, [310 + 7 * k, 45 + k, 120 + 3 * k], "success") for k in range(4)]
    bad = scale("bad", 8, [30, 50, 10], "failure")
    assert [e.reason for e in _found(bad, passing) if e.diagnoser == "reference:formula"] == []
