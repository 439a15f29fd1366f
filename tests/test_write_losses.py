"""Tests for trajdebug.analysis.diagnosers._write_losses: what a storing writer's left-out values mean."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from trajdebug.analysis._detect import detect
from trajdebug.analysis.diagnosers import DiagnoseContext, registered_diagnosers
from trajdebug.analysis.diagnosers._write_losses import _named, _restated
from trajdebug.core.model import Run


_ORDER = {"order_id": "A-1734", "sku": "KB-88", "qty": 150, "service": "express"}


def _recorded(path: Path, store: Callable[[dict[str, Any]], dict[str, Any]], after: Callable[[], None], reason: str, given: dict[str, Any] | None = None) -> Run:
    """Record one failing run: a tool fetches a record, a memory (`remember`) stores ``store(record)`` in
    ``run.state``, ``after()`` runs the later steps, a tool reads the memory, then the run fails with ``reason``."""
    import trajdebug
    from trajdebug.sources.load import load_runs

    record = dict(given or _ORDER)

    @trajdebug.step(kind="tool")
    def fetch(oid: str) -> dict[str, Any]:
        return dict(record)

    @trajdebug.step(kind="state")
    def remember(o: dict[str, Any]) -> None:
        trajdebug.current_run().state["record"] = store(o)

    @trajdebug.step(kind="tool")
    def ship(carrier: str) -> dict[str, Any]:
        return {"shipped": trajdebug.current_run().state["record"].get("sku"), "carrier": carrier}

    with trajdebug.run("shipper", path=path, metadata={"task": "ship A-1734"}) as run:
        remember(fetch("A-1734"))
        after()
        ship("DHL")
        run.fail(reason)
    [got] = load_runs(path)
    return got


def _said(run: Run) -> list[str]:
    """The suspicious state-write findings about the first `remember` step."""
    w = next(s for s in run.steps if s.name == "remember")
    ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers(), failures=tuple(detect(run)))
    return [e.reason for e in ctx.verdict(w.step_id).evidence if e.diagnoser == "state-write" and not e.sound]


def _without(field: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda o: {k: v for k, v in o.items() if k != field}


def _tool(name: str, kind: str = "tool") -> Callable[..., Any]:
    import trajdebug

    @trajdebug.step(name, kind=kind)
    def call(arg: Any) -> dict[str, Any]:
        return {"ok": True}

    return call


_MISMATCH = "the shipment does not match the order"


def test_a_dropped_value_a_later_step_gets_as_a_value_is_handed_on(tmp_path: Path) -> None:
    """A memory that dropped service='express' when a later step was given 'express' as a value left it out
    (a projection), not lost it."""
    run = _recorded(tmp_path / "r.jsonl", _without("service"), lambda: _tool("book_courier")({"service": "express"}), _MISMATCH)
    [said] = _said(run)
    assert said.startswith("what it wrote leaves out")


def test_a_dropped_value_handed_on_under_another_field_is_handed_on(tmp_path: Path) -> None:
    """A value a later step was given under another field name (an evensong time as a service's ``at``) was
    handed on all the same."""
    run = _recorded(tmp_path / "r.jsonl", _without("service"), lambda: _tool("book_courier")({"speed": "express"}), _MISMATCH)
    [said] = _said(run)
    assert said.startswith("what it wrote leaves out")


def test_a_dropped_value_later_steps_hold_only_as_a_key_is_lost(tmp_path: Path) -> None:
    """A later step given 'express' only as a key of a rates table (a menu of services) was not handed the
    order's service: the memory lost it."""
    rates = {"economy": 4.9, "standard": 7.5, "express": 19.0}
    run = _recorded(tmp_path / "r.jsonl", _without("service"), lambda: _tool("ship")({"rates": rates}), _MISMATCH)
    [said] = _said(run)
    assert said.startswith("it stores what it is given, but")


def test_a_dropped_value_only_in_a_model_prompt_is_lost(tmp_path: Path) -> None:
    """A model call whose system prompt lists 'express' among the services was not handed the order's service:
    the memory lost it."""
    prompt = [{"role": "system", "content": "You ship orders. Services: standard, express, economy."}]
    run = _recorded(tmp_path / "r.jsonl", _without("service"), lambda: _tool("plan_reply", "llm")(prompt), _MISMATCH)
    [said] = _said(run)
    assert said.startswith("it stores what it is given, but")


def test_a_loop_writers_own_later_call_does_not_hand_the_value_on(tmp_path: Path) -> None:
    """A memory that dropped the service of one order and stored it for the next (its own later call, same
    service) still lost the first order's service."""
    import trajdebug
    from trajdebug.sources.load import load_runs

    @trajdebug.step(kind="state")
    def remember(o: dict[str, Any]) -> None:
        trajdebug.current_run().state[o["order_id"]] = o if o["order_id"] != "A-1734" else _without("service")(o)

    @trajdebug.step(kind="tool")
    def ship(oid: str) -> dict[str, Any]:
        return {"service": trajdebug.current_run().state[oid].get("service", "economy")}

    with trajdebug.run("shipper", path=tmp_path / "r.jsonl") as run:
        remember(dict(_ORDER))
        remember({**_ORDER, "order_id": "A-1735", "sku": "KB-90", "qty": 250})
        ship("A-1734")
        run.fail(_MISMATCH)
    [got] = load_runs(tmp_path / "r.jsonl")
    [said] = _said(got)
    assert said.startswith("it stores what it is given, but")


def test_a_dropped_number_later_steps_hold_only_inside_prose_is_lost(tmp_path: Path) -> None:
    """A memory that dropped qty=150 when a later step was given only "ship within 150 minutes" lost it: a number
    is handed on as a whole value, not as a word of a sentence."""
    run = _recorded(tmp_path / "r.jsonl", _without("qty"), lambda: _tool("book_courier")({"note": "ship within 150 minutes"}), _MISMATCH)
    [said] = _said(run)
    assert said.startswith("it stores what it is given, but")


def test_a_dropped_number_a_later_step_gets_as_a_value_is_handed_on(tmp_path: Path) -> None:
    """The same drop, when a later step was given 150 as a value, left the quantity out: handed on."""
    run = _recorded(tmp_path / "r.jsonl", _without("qty"), lambda: _tool("book_courier")({"units": 150.0}), _MISMATCH)
    [said] = _said(run)
    assert said.startswith("what it wrote leaves out")


_INVOICE = {"invoice_id": "INV-7", "customer": "Acme", "amount": 19.999, "currency": "EUR"}


def test_a_store_that_rounds_a_value_the_failure_names_replaced_nothing(tmp_path: Path) -> None:
    """A store that wrote amount=20.0 for the 19.999 it was given (the failure quoting 19.999) rounded it: no
    replacement finding."""
    run = _recorded(
        tmp_path / "r.jsonl", lambda o: {**o, "amount": round(o["amount"], 2)}, lambda: None, "tax on 19.999 EUR is 3.2", _INVOICE
    )
    assert not any(s.startswith("it wrote") for s in _said(run))


def test_a_store_that_wrote_another_number_the_failure_names_replaced_it(tmp_path: Path) -> None:
    """A store that wrote amount=1.999 for the 19.999 it was given, the failure naming 19.999, replaced it."""
    run = _recorded(tmp_path / "r.jsonl", lambda o: {**o, "amount": 1.999}, lambda: None, "tax on 19.999 EUR is 3.2", _INVOICE)
    assert _said(run) == ["it wrote amount=1.999 where it was given amount=19.999, which the failure names"]


def test_a_deriving_writer_replaced_nothing(tmp_path: Path) -> None:
    """A writer that derived a ledger entry from an invoice (one field of the invoice kept as it was) wrote other
    values by design: no replacement finding though the failure names the invoice's amount."""
    run = _recorded(
        tmp_path / "r.jsonl",
        lambda o: {"entry": "L-77120", "amount": 20.5, "customer": o["customer"], "status": "booked"},
        lambda: None,
        "tax on 19.999 EUR is 3.2",
        _INVOICE,
    )
    assert not any(s.startswith("it wrote") for s in _said(run))


def test_a_replacement_compares_the_whole_field_path(tmp_path: Path) -> None:
    """A writer that kept the customer's name and dropped the product (whose name the failure quotes) wrote no
    other value for the product's name: ``customer.name`` is not ``product.name``."""
    deal = {"deal_id": "D-1", "stage": "won", "owner": "kim", "customer": {"name": "Acme GmbH"}, "product": {"name": "Widget Pro"}}
    run = _recorded(tmp_path / "r.jsonl", _without("product"), lambda: None, "invoice for 'Widget Pro' was not made", deal)
    assert not any(s.startswith("it wrote") for s in _said(run))


def test_a_failure_using_a_value_as_an_english_word_does_not_name_it() -> None:
    """'could not open scan.pdf' uses 'open' as a verb: it names no status 'open'; quoted, it does."""
    assert not _named("open", ["could not open scan.pdf"])
    assert _named("open", ["status 'open' was expected"])


def test_a_failure_names_numbers_and_ids_as_values() -> None:
    """A number is named as a number (19.999 in "tax on 19.999 EUR") and an id as a word of its own."""
    assert _named(19.999, ["tax on 19.999 EUR is 3.2"])
    assert not _named(19.999, ["tax on 19.9990001 EUR"])
    assert _named("T-9081", ["ticket T-9081 went to sales"])


def test_a_rounded_recased_or_reformatted_value_is_restated() -> None:
    """19.999 written as 20.0, 'Open' as 'open', a date re-formatted are the given values restated; 0.0 for
    0.02 or 'claimed' for 'open' are other values."""
    assert _restated(19.999, 20.0) and _restated("Open", "open") and _restated("2026-06-13", "13 June 2026")
    assert not _restated(0.02, 0.0) and not _restated("open", "claimed")


def test_a_memory_keeping_a_few_fields_that_changed_one_the_failure_names_replaced_it(tmp_path: Path) -> None:
    """A memory that kept three of six fields, two as given and the quantity changed (120 for the 720 the
    failure names), stores: the fields it left out altogether do not make it a deriving writer."""
    order = {"order_id": "A-1734", "sku": "KB-88", "qty": 720, "service": "express", "carrier": "DHL", "note": "fragile"}
    run = _recorded(
        tmp_path / "r.jsonl",
        lambda o: {"order_id": o["order_id"], "sku": o["sku"], "qty": 120},
        lambda: None,
        "shipped 120 of the 720 doses ordered",
        order,
    )
    assert "it wrote qty=120 where it was given qty=720, which the failure names" in _said(run)


def test_number_forms_of_many_texts_are_each_texts_own() -> None:
    """A writer's text read again after the whole run's other texts (`_lost_paths`, then `_stored_values`) gets its
    own forms back, and a text longer than the kept ones is read alone, as it would be first."""
    from trajdebug.analysis import _numerals as numerals
    from trajdebug.analysis.diagnosers._write_losses import _LONG_TEXT, _number_forms

    texts = [f"ledger {i}: {i * 1.5} and {i}%" for i in range(300)]
    long = "total 7911.79; " * (_LONG_TEXT // 10)
    for t in [*texts, long, *texts, long.upper(), long]:
        assert _number_forms(t) == numerals.number_forms(t)
