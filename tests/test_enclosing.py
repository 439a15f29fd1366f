"""Steps enclosing others judged against a passing run of the same input (`trajdebug.analysis.reference._enclosing`)."""

from __future__ import annotations

import contextlib
import datetime
import itertools
import json
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.analysis.reference import _enclosing as enclosing
from trajdebug.analysis.reference import _reach as reach
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


# --- a seed bank: a node counts its packets and adds one value that is new in every run; a later price tool ----
# --- answers stale.  One passing run of the failing run's input (the others are of other inputs). -----------


_NOTE = {"kind": "const", "n": 0}
"""Which per-run value `_count_packets` writes, and how many times it ran."""


def _per_run(kind: str, n: int) -> Any:
    """A value every run writes anew, of one kind (the review's list): none is the node's fault."""
    rnd = random.Random(n)
    names = ["aster", "borage", "cosmos", "dill"]
    rnd.shuffle(names)
    vals = [0.1, 0.2, 0.3]
    rnd.shuffle(vals)
    return {
        "bare_date": f"2026-03-{n + 1:02d}",
        "epoch": 1764892800 + 37 * n,
        "epoch_float": 1764892800.25 + 37 * n,
        "counter": n,
        "elapsed_ms": 12 + 7 * n,
        "http_date": f"Sun, {n + 1:02d} Mar 2026 09:03:00 GMT",
        "compact_iso": f"202603{n + 1:02d}T090300Z",
        "time_only": f"09:{n:02d}:11",
        "hex_id": f"{rnd.getrandbits(48):012x}",
        "req_id": f"req_{rnd.randrange(10**6)}ab",
        "joined": ", ".join(names),
        "float_sum": sum(vals),
        "str_dict": str(dict.fromkeys(names, 1)),
        "sample": names[:2],
        "const": "fixed",
        "float_order": sum([0.1, 0.2, 0.3] if n % 2 else [0.3, 0.2, 0.1]),
    }[kind]


@trajdebug.step(kind="tool")
def _packet_count(variety: str, shelf: str) -> dict[str, Any]:
    return {"shelf": shelf, "packets": 5}


@trajdebug.step(kind="agent")
def _count_packets(variety: str) -> dict[str, Any]:
    got = _packet_count(variety, "north")
    _NOTE["n"] += 1
    return {"variety": variety, "stock": got, "note": _per_run(str(_NOTE["kind"]), int(_NOTE["n"]))}


@trajdebug.step(kind="tool")
def _seed_price(variety: str) -> dict[str, Any]:
    return {"variety": variety, "eur": 0.0 if _FLAW["on"] else 2.5}


@trajdebug.step(kind="other")
def _sell_seeds(counted: dict[str, Any], price: dict[str, Any]) -> str:
    if price["eur"] <= 0:
        raise ValueError("a free packet")
    return "sold"


_KINDS = ["bare_date", "epoch", "epoch_float", "counter", "elapsed_ms", "http_date", "compact_iso", "time_only",
          "hex_id", "req_id", "joined", "float_sum", "str_dict", "float_order", "const"]


@pytest.mark.parametrize(
    "kind",
    [*_KINDS, pytest.param("sample", marks=pytest.mark.xfail(
        strict=True, reason="two of the three passing runs drew the same sample: nothing tells it from a choice"))],
)
def test_a_node_writing_a_per_run_value_the_failing_step_is_handed_is_not_blamed(tmp_path: Path, kind: str) -> None:
    """A node handed to the failing step whole, whose answer differs from its one same-input passing run only by a
    value every run writes anew (a date, a clock reading, a count of its calls, a minted id, a set's order, a
    float summed in another order), is not blamed for its own code; the tool that answered otherwise ranks first."""
    _NOTE.update(kind=kind, n=0)
    bad = _record(tmp_path, "seedbank", lambda t: _sell_seeds(_count_packets(t), _seed_price(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_seed_price"
    assert _own_code(ranked) == []


@trajdebug.step(kind="agent")
def _draw_tasters(variety: str) -> dict[str, Any]:
    got = _packet_count(variety, "south")
    _NOTE["n"] += 1
    # A random pick of the node's own list, different in every run.
    pairs = [["aster", "borage"], ["cosmos", "dill"], ["aster", "dill"], ["borage", "cosmos"]]
    return {"variety": variety, "stock": got, "tasters": pairs[int(_NOTE["n"]) % 4]}


def test_a_node_drawing_words_of_its_own_anew_in_every_run_is_not_blamed(tmp_path: Path) -> None:
    """Words a node writes that it was never given nor told by a step inside it, new in every passing run
    whatever the input (a random pick of its own list), are learned as its own draws: a failing run differing
    there does not blame it."""
    _NOTE.update(n=0)
    bad = _record(tmp_path, "tasters", lambda t: _sell_seeds(_draw_tasters(t), _seed_price(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_seed_price"
    assert _own_code(ranked) == []


# --- a bindery: a node's flag differs; the next step is handed only another part of it (M3) -------------------


@trajdebug.step(kind="tool")
def _glue_stock(job: str) -> dict[str, Any]:
    return {"job": job, "pots": 5, "usable": True}


@trajdebug.step(kind="agent")
def _check_glue(job: str) -> dict[str, Any]:
    _NOTE["n"] += 1
    return {"glue": _glue_stock(job), "rechecked": int(_NOTE["n"]) % 2 == 1}


@trajdebug.step(kind="tool")
def _binding_rate(job: str) -> dict[str, Any]:
    return {"job": job, "per_book": 0.0 if _FLAW["on"] else 3.2}


@trajdebug.step(kind="other")
def _bind(glue: dict[str, Any], rate: dict[str, Any]) -> str:
    if rate["per_book"] <= 0:
        raise ValueError("binding for nothing")
    return "bound"


def test_a_flag_no_step_on_the_failures_path_was_handed_is_not_followed_into_an_unrelated_true(tmp_path: Path) -> None:
    """A node differing only in a flag, whose next step is handed another part of its answer (holding an unrelated
    true), is not blamed: a flag, a null or one digit is followed only under its own field, never found inside
    any text."""
    _NOTE.update(n=0)
    bad = _record(tmp_path, "bindery", lambda t: _bind(_check_glue(t)["glue"], _binding_rate(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_binding_rate"
    assert _own_code(ranked) == []


@trajdebug.step(kind="agent")
def _shelve(job: str) -> dict[str, Any]:
    got = _glue_stock(job)
    return {"job": job, "shelf": "K-77" if _FLAW["on"] else "K-12", "pots": got["pots"]}


def test_a_node_nothing_on_the_failures_path_depends_on_is_not_blamed(tmp_path: Path) -> None:
    """A node that answered otherwise (a wrong shelf) where no step on the failure's path was handed its answer
    made no difference to that failure: no recorded or inferred dependent is no pass."""
    def go(job: str) -> str:
        _shelve(job)
        return _bind({"pots": 1}, _binding_rate(job))

    bad = _record(tmp_path, "shelving", go)
    assert _own_code(_ranked(bad)) == []


@trajdebug.step(kind="agent")
def _cut_boards(job: str) -> dict[str, Any]:
    got = _glue_stock(job)
    return {"job": job, "board_mm": 187 if _FLAW["on"] else 210, "pots": got["pots"]}


@trajdebug.step(kind="other")
def _case_in(job: str, size: int) -> str:
    if size < 200:
        raise ValueError(f"boards of {size} mm are too small for the block")
    return "cased"


def test_a_node_whose_differing_value_the_failure_names_is_blamed(tmp_path: Path) -> None:
    """A node whose answer differs by a value the failing step was handed and its message names (a board cut
    too small), everything inside alike, ranks first for its own code."""
    bad = _record(tmp_path, "casing", lambda t: _case_in(t, _cut_boards(t)["board_mm"]))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_cut_boards"
    assert _own_code(ranked) == ["_cut_boards"]


def test_the_failures_path_is_indexed_once_per_run_not_once_per_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every node of a run asks one index of what the failure's path was handed (built once per run): the
    cost is linear in the run, not its nodes times its steps."""
    built: list[int] = []
    real = enclosing.Reach.of
    monkeypatch.setattr(enclosing.Reach, "of", staticmethod(lambda steps: built.append(1) or real(steps)))
    turns = [Step(f"t{i}", "turn", "agent", input={"i": i}, output={"n": 1000 + i}, start_ns=2 * i, end_ns=2 * i + 1)
             for i in range(300)]
    fail = Step("f", "close", "other", input={"n": 1299}, status="error", start_ns=900, end_ns=901,
                deps=tuple(Dependency(t.step_id) for t in turns))
    steps = {s.step_id: s for s in [*turns, fail]}
    assert all(enclosing._made_the_difference(t, [("n", t.output["n"], 1)], steps) == (t.step_id == "t299") for t in turns)
    assert built == [1]


@pytest.mark.parametrize(
    ("field", "now", "then", "varies"),
    [
        ("stamp", 1764892800, 1764892837, True),
        ("stamp", 1764892800123, 1764892837000, True),
        ("latencyMs", 41, 57, True),
        ("total", 41, 57, False),
        ("ref", "9f3a0c61be27", "0b71e4d2a9c8", True),
        ("ref", "req_4471ab", "req_9902cd", True),
        ("sku", "SKU-1001", "SKU-1002", False),
        ("who", "ana, bo, cy", "cy, ana, bo", True),
        ("sum", 0.6000000000000001, 0.6, True),
        ("sum", 0.61, 0.6, False),
        ("day", "2026-03-05", "2026-03-04", True),
        ("city", "Lyon", "Nice", False),
    ],
)
def test_a_difference_every_run_makes_is_told_by_its_shape(field: str, now: Any, then: Any, varies: bool) -> None:
    """Clock readings near the run's start, timing fields, minted ids, reorderings and float summation order
    vary in every run; a total, a catalogue id, a float off by more than rounding and a city do not."""
    assert reach.run_varying(field, now, then, 1764892900 * 10**9) is varies


# --- a dam: a span computes wrongly from a gauge that stamps its reading in epoch seconds (M2) --------------------


@trajdebug.step(kind="tool")
def _reservoir_gauge(dam: str) -> dict[str, Any]:
    return {"dam": dam, "level_m": 31.0, "read_at": int(time.time()) + 420 * next(_TICK)}


@trajdebug.step(kind="other")
def _spillway(dam: str) -> dict[str, Any]:
    level = _reservoir_gauge(dam)["level_m"]
    return {"dam": dam, "release_m3": level - 40 if _FLAW["on"] else 40 - level}


@trajdebug.step(kind="other")
def _open_gates(plan: dict[str, Any]) -> str:
    if plan["release_m3"] < 0:
        raise ValueError(f"negative release {plan['release_m3']}")
    return "open"


def test_a_span_keeps_its_same_input_evidence_when_its_tool_stamps_epoch_seconds(tmp_path: Path) -> None:
    """A tool stamping its reading with the clock in seconds since the epoch (new every run) is masked as a
    date-time stamp is: the span that computed wrongly from the reading keeps its same-input evidence and ranks
    first, and the gauge is not taken for a changed answer."""
    bad = _record(tmp_path, "dam", lambda t: _open_gates(_spillway(t)))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_spillway" and "reference:same-input" in ranked[0][1]
    assert all("reference:same-input" not in s for n, s, _ in ranked if n == "_reservoir_gauge")


# --- a translation desk: a sub-agent as a tool fetches a document (cut short) and a model answers its count -----

_DOCS = {
    "D-1": "the supplier shall deliver the goods within thirty days and notify the buyer of any delay " * 3,
    "D-2": "either party may end this agreement with ninety days notice and the supplier keeps its liability " * 6,
}
"""Documents of prose, their numbers in words (no digit, date or id): a text field whose only values read are
numbers."""


@trajdebug.step(kind="tool")
def _fetch_document(doc_id: str) -> dict[str, Any]:
    text = _DOCS[doc_id]
    return {"doc_id": doc_id, "text": text[:120] if _FLAW["on"] and doc_id == "D-2" and not _BETWEEN else text}


_BETWEEN: list[bool] = []
"""Non-empty while the flaw is in code between the recorded steps rather than in the document tool."""


@trajdebug.step(kind="tool")
def _count_words(text: str) -> dict[str, Any]:
    return {"words": len(text.split())}


@trajdebug.step(kind="llm")
def _analyst_model(messages: list[dict[str, Any]]) -> dict[str, Any]:
    words = json.loads(messages[-1]["content"])["words"]
    return {"role": "assistant", "content": f"The document holds {words} words."}


@trajdebug.step(kind="tool")
def _doc_analyst(request: str, cut: bool = False) -> str:
    """The agent as a tool (the Agents SDK records the sub-agent's run as an agent span inside it)."""
    return _analyst_run(request, cut)


@trajdebug.step(kind="agent")
def _analyst_run(request: str, cut: bool) -> str:
    """The sub-agent: fetch, count, and its model's answer returned as is.  ``cut``: code between the steps
    (unrecorded) shortens the text before counting."""
    doc = _fetch_document(request)
    text = doc["text"][:120] if cut and _FLAW["on"] and request == "D-2" else doc["text"]
    counted = _count_words(text)
    answer = _analyst_model([{"role": "user", "content": f"count {request}"}, {"role": "tool", "content": json.dumps(counted)}])
    return str(answer["content"])


def _quote(task: str, cut: bool = False) -> None:
    said = [_doc_analyst(d, cut) for d in ("D-1", "D-2")]
    words, portal = sum(int(s.split()[3]) for s in said), sum(len(t.split()) for t in _DOCS.values())
    if words != portal:
        raise ValueError(f"quote bills {words} words but the portal counts {portal}")


def test_a_tool_inside_a_sub_agent_answering_its_same_request_otherwise_is_blamed_not_the_model(tmp_path: Path) -> None:
    """A document tool inside an agent-as-tool that answered its same request with a shorter text (a document
    of prose, whose text field holds no value read) is where the run parts from the passing run of the same
    input; the model call handed the shorter count, whose request differs, never says it was given the same
    input (nu25 F2)."""
    bad = _record(tmp_path, "desk", _quote, tasks=("J-1", "J-2"))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_fetch_document" and "reference:same-input" in ranked[0][1]
    assert not [n for n, s, _ in ranked if n == "_analyst_model" and "reference:same-input" in s]


def test_a_sub_agents_same_input_finding_stays_with_it_when_its_model_was_asked_otherwise(tmp_path: Path) -> None:
    """Code between recorded steps that shortens the text (no inner step answered its request otherwise): the
    sub-agent, given the same request, answered otherwise, and says so itself; the model call that wrote its
    answer was handed another count, and is not said to have had the same input."""
    _BETWEEN.append(True)
    try:
        bad = _record(tmp_path, "desk_cut", lambda t: _quote(t, cut=True), tasks=("J-1", "J-2"))
    finally:
        _BETWEEN.clear()
    ranked = _ranked(bad)
    same = [n for n, s, _ in ranked if "reference:same-input" in s]
    assert same == ["_doc_analyst"]


# --- a heat-load graph: a node computes each room's load; its routing function runs nested under it ------------

_ROOMS = [("Living", 30.0, "south"), ("Bedroom", 20.0, "North"), ("Study", 10.0, "west")]
_FACTORS = {"south": 70.0, "north": 95.0, "west": 80.0}


@trajdebug.step(kind="other")
def _more_rooms(state: dict[str, Any]) -> str:
    return "room_load" if state["idx"] < len(_ROOMS) else "sum_loads"


@trajdebug.step(kind="other")
def _room_load(state: dict[str, Any]) -> dict[str, Any]:
    name, area, exposure = _ROOMS[state["idx"]]
    factor = _FACTORS.get(exposure if _FLAW["on"] else exposure.lower(), 0.0)
    out = {"loads": [*state["loads"], {"name": name, "watts": area * factor}], "idx": state["idx"] + 1}
    _more_rooms({**state, **out})  # the framework runs the routing function under the node, on what it returned
    return out


@trajdebug.step(kind="other")
def _sum_loads(loads: list[dict[str, Any]]) -> float:
    return float(sum(r["watts"] for r in loads))


def _size(task: str) -> None:
    state: dict[str, Any] = {"house": task, "idx": 0, "loads": []}
    while state["idx"] < len(_ROOMS):
        state = {**state, **_room_load(state)}
    total = _sum_loads(state["loads"])
    if total < 4500:
        raise ValueError(f"design load {total} W is below the house's minimum")


def test_a_node_whose_nested_routing_function_reads_its_answer_is_judged_by_the_same_input_run(tmp_path: Path) -> None:
    """A graph node whose only inner step is its routing function, handed the state the node returned, read
    nothing beyond its own input: the node that answered its same request otherwise is blamed first with the
    same-input finding (nu25 F3), and the loop's exit to the sum is no finding."""
    bad = _record(tmp_path, "heat", _size, tasks=("H-1", "H-1"))
    ranked = _ranked(bad)
    assert ranked[0][0] == "_room_load" and "reference:same-input" in ranked[0][1]
    assert not [r for n, _, r in ranked if n == "_more_rooms" and "never seen" in r]
