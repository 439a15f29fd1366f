"""Steps enclosing others judged against a passing run of the same input (`trajdebug.analysis.reference._enclosing`)."""

from __future__ import annotations

import contextlib
import datetime
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.analysis.reference import _enclosing as enclosing
from trajdebug.analysis.reference import references
from trajdebug.core.model import Dependency, Run, Step
from trajdebug.sources.load import load_runs


_FLAW: dict[str, bool] = {"on": False}
"""The switch every agent below reads: False in passing runs, True in the failing one."""
_TICK = itertools.count(1)
"""A counter: a fresh number on every call (a provider's message id, a clock)."""


def _record(tmp_path: Path, name: str, go: Callable[[str], object], tasks: tuple[str, ...] = ("T-2", "T-3", "T-1")) -> Run:
    """Passing runs of ``tasks``, then a failing run of the last task again with the flaw on: the failing run,
    with its references attached by `_ranked`."""
    path = tmp_path / f"{name}.jsonl"

    def once(task: str) -> None:
        with contextlib.suppress(ValueError), trajdebug.run(name, path=path, metadata={"task": task}):
            go(task)

    try:
        for task in tasks:
            once(task)
        _FLAW["on"] = True
        once(tasks[-1])
    finally:
        _FLAW["on"] = False
    pool = load_runs(path)
    [bad] = [r for r in pool if r.outcome != "success"]
    _POOLS[bad.run_id] = pool
    return bad


_POOLS: dict[str, list[Run]] = {}


def _ranked(bad: Run) -> list[tuple[str, set[str], str]]:
    """The failing run's candidates, best first: name, signals and first reason."""
    a = analyze(bad, references=references(bad, _POOLS[bad.run_id]), top=8)
    names = {s.step_id: s.name for s in bad.steps}
    return [(names[c.step_id], set(c.signals), c.reasons[0] if c.reasons else "") for c in a.root_causes]


def _own_code(ranked: list[tuple[str, set[str], str]]) -> list[str]:
    """The candidates blamed for their own code."""
    return [n for n, _, r in ranked if "its own code" in r]


# --- a nursery: a node relays its model call's message as is; a later price tool answers stale --------------


@trajdebug.step(kind="llm")
def _describe_bed(bed: str) -> dict[str, Any]:
    n = next(_TICK)
    return {"id": f"msg-{n}q7", "role": "assistant", "content": f"Bed {bed}: seedlings, east wall",
            "usage": {"input_tokens": 31, "output_tokens": 5 + n % 4}}


@trajdebug.step(kind="agent")
def _survey_bed(bed: str) -> dict[str, Any]:
    return {"messages": [_describe_bed(bed)]}


@trajdebug.step(kind="tool")
def _compost_price(bed: str) -> dict[str, Any]:
    return {"bed": bed, "per_bag": 0.4 if _FLAW["on"] else 6.5}


@trajdebug.step(kind="other")
def _order_compost(survey: dict[str, Any], price: dict[str, Any]) -> str:
    if price["per_bag"] < 2:
        raise ValueError(f"compost at {price['per_bag']} a bag is below cost")
    return "ordered"


def test_a_node_relaying_its_model_message_with_a_fresh_id_and_usage_is_no_divergence(tmp_path: Path) -> None:
    """A node that returns its model call's message as is, with the provider's fresh id and token counts, did
    not answer otherwise: the later tool that answered its same request otherwise ranks first, and no step is
    blamed for its own code."""
    bad = _record(tmp_path, "nursery", lambda t: _order_compost(_survey_bed(t), _compost_price(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_compost_price"
    assert _own_code(ranked) == []


# --- a library: a node stamps its result with the time; a later loan tool answers stale ---------------------


@trajdebug.step(kind="tool")
def _shelf_mark(title: str) -> dict[str, Any]:
    return {"title": title, "shelf": "C-4"}


@trajdebug.step(kind="agent")
def _find_copy(title: str) -> dict[str, Any]:
    at = datetime.datetime(2026, 2, 1, 8, 0) + datetime.timedelta(minutes=13 * next(_TICK))
    return {**_shelf_mark(title), "found_at": at.isoformat()}


@trajdebug.step(kind="tool")
def _loan_terms(title: str) -> dict[str, Any]:
    return {"title": title, "days": 0 if _FLAW["on"] else 21}


@trajdebug.step(kind="other")
def _issue_loan(copy: dict[str, Any], terms: dict[str, Any]) -> str:
    if terms["days"] < 1:
        raise ValueError(f"a loan of {terms['days']} days")
    return f"{copy['shelf']} until {copy['found_at']}"


def test_a_node_stamping_its_result_with_the_time_is_no_divergence(tmp_path: Path) -> None:
    """A node whose result differs from the passing run's only by the time it ran (a date-time stamp, new in every
    run) is not blamed for its own code; the tool that answered otherwise ranks first."""
    bad = _record(tmp_path, "library", lambda t: _issue_loan(_find_copy(t), _loan_terms(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_loan_terms"
    assert _own_code(ranked) == []


# --- a chandlery: a node lists its two lookups in the order they finish; a later quote tool answers stale ------


@trajdebug.step(kind="tool")
def _rope_stock(item: str) -> dict[str, Any]:
    return {"item": item, "coils": 4}


@trajdebug.step(kind="agent")
def _stock_both(order: str) -> dict[str, Any]:
    found = [_rope_stock(f"{order}-hemp"), _rope_stock(f"{order}-nylon")]
    # Completion order: which lookup finished first varies from run to run.
    return {"order": order, "stock": found if next(_TICK) % 2 else found[::-1]}


@trajdebug.step(kind="tool")
def _rope_quote(order: str) -> dict[str, Any]:
    return {"order": order, "per_metre": 0.0 if _FLAW["on"] else 1.8}


@trajdebug.step(kind="other")
def _invoice(stock: dict[str, Any], quote: dict[str, Any]) -> str:
    if quote["per_metre"] <= 0:
        raise ValueError("a free rope")
    return f"{len(stock['stock'])} lines"


def test_a_node_listing_its_lookups_in_completion_order_is_no_divergence(tmp_path: Path) -> None:
    """A node whose list holds the same entries as the passing run's in another order (the order its parallel
    lookups finished) did not answer otherwise; the tool that did ranks first."""
    for start in range(2):
        # Either parity of the counter: the failing run's list in the passing run's order or reversed.
        while next(_TICK) % 2 != start:
            pass
        bad = _record(tmp_path / str(start), "chandlery", lambda t: _invoice(_stock_both(t), _rope_quote(t)))
        ranked = _ranked(bad)
        assert ranked[0][0] == "_rope_quote"
        assert _own_code(ranked) == []


# --- a weighbridge: a node reports how long its weighing took (new every run); a later toll tool answers stale --


@trajdebug.step(kind="tool")
def _axle_loads(truck: str) -> dict[str, Any]:
    return {"truck": truck, "axles": [7.5, 9.0]}


@trajdebug.step(kind="agent")
def _weigh(truck: str) -> dict[str, Any]:
    loads = _axle_loads(truck)["axles"]
    return {"truck": truck, "tonnes": sum(loads), "took_s": round(0.37 * next(_TICK), 2)}


@trajdebug.step(kind="tool")
def _bridge_toll(truck: str) -> dict[str, Any]:
    return {"truck": truck, "toll": -3 if _FLAW["on"] else 12}


@trajdebug.step(kind="other")
def _pay_toll(weighed: dict[str, Any], toll: dict[str, Any]) -> str:
    if toll["toll"] < 0:
        raise ValueError(f"a negative toll after {weighed['took_s']} s")
    return "paid"


def test_a_node_part_that_varied_between_passing_runs_of_one_input_is_no_divergence(tmp_path: Path) -> None:
    """A part of a node's answer that differed between two passing runs given the same input, everything inside
    alike (a duration it reports), is written anew every run: a failing run of another input that differs only
    there does not blame the node; the tool that answered otherwise ranks first."""
    bad = _record(tmp_path, "weighbridge", lambda t: _pay_toll(_weigh(t), _bridge_toll(t)), ("T-1", "T-1", "T-2", "T-3"))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_bridge_toll"
    assert _own_code(ranked) == []


# --- a courier desk: a node asks a model for couriers and picks one; with the flaw it picks the last --------


@trajdebug.step(kind="llm")
def _list_couriers(parcel: str) -> dict[str, Any]:
    return {"role": "assistant", "couriers": ["Brisk", "Vantage"]}


@trajdebug.step(kind="agent")
def _pick_courier(parcel: str) -> dict[str, Any]:
    options = _list_couriers(parcel)["couriers"]
    return {"courier": options[-1] if _FLAW["on"] else options[0]}


@trajdebug.step(kind="other")
def _book(pick: dict[str, Any]) -> str:
    if pick["courier"] != "Brisk":
        raise ValueError(f"{pick['courier']} does not serve this route")
    return "booked"


def test_a_nodes_own_code_finding_stays_with_it_not_the_model_call_that_wrote_its_values(tmp_path: Path) -> None:
    """A node that picks the wrong entry of its model call's answer (every value it returns is the call's) made
    the difference itself, the call answering as in the passing run: the node ranks first for its own code,
    and the model call inside it is not handed that finding."""
    bad = _record(tmp_path, "courier", lambda t: _book(_pick_courier(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_pick_courier"
    assert _own_code(ranked) == ["_pick_courier"]
    assert all("reference:same-input" not in s for n, s, _ in ranked if n == "_list_couriers")


# --- a dye works: a node computes a note no later step reads wrongly -------------------------------------------


@trajdebug.step(kind="tool")
def _vat_volume(vat: str) -> dict[str, Any]:
    return {"vat": vat, "litres": 200.0}


@trajdebug.step(kind="agent")
def _mix_dye(vat: str) -> dict[str, Any]:
    v = _vat_volume(vat)["litres"]
    # The label is wrong with the flaw on, but the next step reads only the grams.
    return {"grams": v * 3, "label": f"{v / 3:.1f} per litre" if _FLAW["on"] else f"{v * 3:.1f} in all"}


@trajdebug.step(kind="tool")
def _mordant(vat: str) -> dict[str, Any]:
    return {"vat": vat, "alum_g": 0 if _FLAW["on"] else 90}


@trajdebug.step(kind="other")
def _dye_batch(grams: float, mordant: dict[str, Any]) -> str:
    if mordant["alum_g"] <= 0:
        raise ValueError("no mordant")
    return f"{grams} g"


def test_a_node_differing_only_in_a_part_no_later_step_reads_is_not_blamed(tmp_path: Path) -> None:
    """A node whose answer differs from the passing run's only in a part no later step was handed made no
    difference to the failure: it is not blamed for its own code, and the tool that answered otherwise ranks
    first."""
    def go(vat: str) -> str:
        return _dye_batch(_mix_dye(vat)["grams"], _mordant(vat))

    bad = _record(tmp_path, "dyeworks", go)
    ranked = _ranked(bad)
    assert ranked[0][0] == "_mordant"
    assert _own_code(ranked) == []


# --- a span whose inner call gets a long request; and one whose tool stamps its reading ----------------------


_GUIDE = " ".join(f"rule {i}: keep the sluice shut under {i % 40} cm." for i in range(700))


@trajdebug.step(kind="llm")
def _consult_guide(question: str, guide: str) -> dict[str, Any]:
    return {"role": "assistant", "content": "open the sluice" if _FLAW["on"] else "keep the sluice shut"}


@trajdebug.step(kind="other")
def _lock_keeper(question: str) -> dict[str, Any]:
    return {"advice": _consult_guide(question, _GUIDE)["content"]}


@trajdebug.step(kind="other")
def _operate(advice: dict[str, Any]) -> str:
    if advice["advice"].startswith("open"):
        raise ValueError("sluice opened at high water")
    return "done"


def test_a_long_request_never_hides_an_inner_calls_answer(tmp_path: Path) -> None:
    """A span relaying a model call handed a very long request (a guide of more than 20,000 characters): the
    call's changed answer is seen inside, so the span, which only passed it on, gets no same-input evidence."""
    assert len(_GUIDE) > 30_000
    bad = _record(tmp_path, "canal", lambda t: _operate(_lock_keeper(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_consult_guide"
    assert all("reference:same-input" not in s for n, s, _ in ranked if n == "_lock_keeper")


@trajdebug.step(kind="tool")
def _tide_gauge(harbour: str) -> dict[str, Any]:
    at = datetime.datetime(2026, 7, 1, 5, 0) + datetime.timedelta(minutes=11 * next(_TICK))
    return {"harbour": harbour, "depth_m": 4.0, "read_at": at.isoformat()}


@trajdebug.step(kind="other")
def _clearance(harbour: str) -> dict[str, Any]:
    d = _tide_gauge(harbour)["depth_m"]
    return {"harbour": harbour, "spare_m": d - 6.5 if _FLAW["on"] else 6.5 - d}


@trajdebug.step(kind="other")
def _berth(plan: dict[str, Any]) -> str:
    if plan["spare_m"] < 0:
        raise ValueError(f"negative clearance {plan['spare_m']}")
    return "berthed"


def test_a_span_keeps_its_same_input_evidence_when_its_tool_only_stamps_its_reading(tmp_path: Path) -> None:
    """A span that computes wrongly from a tool answer that differs from the passing run's only by the time of
    the reading (a stamp, no origin) keeps the same-input evidence of its own answer."""
    bad = _record(tmp_path, "harbour", lambda t: _berth(_clearance(t)))
    assert any(n == "_clearance" and "reference:same-input" in s for n, s, _ in _ranked(bad))


# --- odd text and deep nesting ---------------------------------------------------------------------------------


def _gallery(run_id: str, count: int, ok: bool) -> Run:
    text = "sunset \ud83d"  # cut in the middle of an emoji: a lone surrogate, as JSON may hold one
    steps = (
        Step("n", "album", "agent", input={"photo": "P-1"}, output={"caption": text, "count": count}, start_ns=1, end_ns=4),
        Step("t", "caption", "tool", input={"photo": "P-1"}, output={"text": text}, parent_id="n", start_ns=2, end_ns=3),
        Step("c", "publish", "other", input={"count": count}, output="ok" if ok else None, status="ok" if ok else "error",
             deps=(Dependency("n"),), start_ns=5, end_ns=6),
    )
    return Run(run_id, "gallery", outcome="success" if ok else "failure", steps=steps)


def test_a_lone_surrogate_inside_a_node_never_crashes_the_analysis() -> None:
    """Text cut in the middle of an emoji (a lone surrogate) inside a node's tool answer is hashed like any text:
    the analysis runs, and the node, which answered otherwise with everything inside it alike, holds the
    same-input evidence."""
    bad = _gallery("bad", 0, False)
    a = analyze(bad, references=[_gallery(f"p{i}", 1, True) for i in range(3)], top=3)
    assert any(c.step_id == "n" and "reference:same-input" in c.signals for c in a.root_causes)


def _chain(run_id: str, n: int, last: int) -> Run:
    steps = tuple(
        Step(f"s{i}", f"relay{i % 5}", "agent", input={"hop": i}, output={"hop": i, "v": last if i == n - 1 else i},
             parent_id=f"s{i - 1}" if i else None, start_ns=i, end_ns=2 * n - i)
        for i in range(n)
    )
    return Run(run_id, "relay", outcome="success", steps=steps)


def test_the_inside_of_a_deep_chain_is_hashed_once_per_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step's call is hashed once, however deep the nesting (one bottom-up pass, linear in the steps), and a
    change at the innermost step reaches the digest of every step enclosing it."""
    calls: list[str] = []
    real = enclosing._call
    monkeypatch.setattr(enclosing, "_call", lambda s, b, p: calls.append(s.step_id) or real(s, b, p))
    a, b = _chain("a", 1500, 7), _chain("b", 1500, 8)
    da = enclosing.inner_calls(a.steps, {s.step_id: s for s in a.steps}).digest
    assert sorted(calls) == sorted(s.step_id for s in a.steps)
    db = enclosing.inner_calls(b.steps, {s.step_id: s for s in b.steps}).digest
    assert len(da) == 1499 and all(da[k] != db[k] for k in da)


def test_the_inside_is_the_same_whatever_order_inner_steps_were_recorded_in() -> None:
    """Two runs whose inner steps were asked and answered alike but recorded in another order (parallel calls
    finishing in another order) have the same inside."""
    def run_of(order: list[int]) -> dict[str, str]:
        kids = [Step(f"k{i}", "probe", "tool", input={"n": i}, output={"n": i * 2}, parent_id="top") for i in order]
        steps = (Step("top", "fan", "agent", input={}, output={}), *kids)
        return dict(enclosing.inner_calls(steps, {s.step_id: s for s in steps}).digest)

    assert run_of([1, 2, 3]) == run_of([3, 1, 2])
