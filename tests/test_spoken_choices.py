"""A routing choice the failure speaks of: the router that chose a branch whose name the failure's message uses.

Real LangGraph graphs recorded by `TrajdebugTracer`: a conditional edge's function is recorded as a step
inside the node before it, answering the next node's name; the analysis links it to the node it chose
(`inference.control_edges`) and, when the failure speaks of that node by a word of its name, puts the
router on the failure's thin slice (`analysis._spoken._spoken_choices`).
"""

from __future__ import annotations

from typing import Any, TypedDict

import pytest


pytest.importorskip("langgraph", reason="langgraph is not installed")

from trajdebug.analysis import analyze
from trajdebug.core.model import Run
from trajdebug.integrations.langchain import TrajdebugTracer


SPEAKS = "a branch the failure at"


class Load(TypedDict, total=False):
    contract: str
    market: str
    beds: list[str]
    method: str
    loads: list[dict[str, Any]]


class Order(TypedDict, total=False):
    qty: int
    total: int


class Rota(TypedDict, total=False):
    weeks: list[str]
    i: int
    grade: str
    rota: list[dict[str, Any]]


def _harvest(market: str) -> Run:
    """A fresh-fruit contract the router sends to the wet harvest; the receiving check refuses the wet load."""
    from langgraph.graph import END, StateGraph

    def plan(state: Load) -> dict[str, Any]:
        return {"beds": ["W-01", "W-02"]}

    def pick_method(state: Load) -> str:
        return "wet_harvest"  # the fault: a fresh contract needs the dry harvest

    def wet_harvest(state: Load) -> dict[str, Any]:
        return {"method": "wet", "loads": [{"bed": b, "barrels": 700} for b in state["beds"]]}

    def dry_harvest(state: Load) -> dict[str, Any]:
        return {"method": "dry", "loads": [{"bed": b, "barrels": 500} for b in state["beds"]]}

    def receiving_check(state: Load) -> dict[str, Any]:
        if state["market"] == "fresh" and state["method"] != "dry":
            raise ValueError("a fresh contract takes dry-picked fruit; the load from W-01 was wet-harvested")
        return {}

    graph = StateGraph(Load)
    for name, fn in [
        ("plan", plan),
        ("wet_harvest", wet_harvest),
        ("dry_harvest", dry_harvest),
        ("receiving_check", receiving_check),
    ]:
        graph.add_node(name, fn)  # type: ignore[call-overload]
    graph.set_entry_point("plan")
    graph.add_conditional_edges("plan", pick_method, {"wet_harvest": "wet_harvest", "dry_harvest": "dry_harvest"})
    graph.add_edge("wet_harvest", "receiving_check")
    graph.add_edge("dry_harvest", "receiving_check")
    graph.add_edge("receiving_check", END)
    tracer = TrajdebugTracer()
    with pytest.raises(ValueError):
        graph.compile().invoke({"contract": "C-124", "market": market}, config={"callbacks": [tracer]})
    return tracer.to_run()


def _reasons(run: Run, name: str) -> list[str]:
    a = analyze(run, top=50, model=None)
    return [r for c in a.localization.candidates if a.run.step(c.step_id).name == name for r in c.reasons]


def test_the_router_that_chose_the_branch_the_failure_speaks_of_ranks_first() -> None:
    """``pick_method`` answered ``wet_harvest``; the failure says the load "was wet-harvested": the choice is
    the failure's subject, and the router ranks first, before the node it chose, which introduced the value the
    check refused (before, the router ranked last but for the check)."""
    run = _harvest("fresh")
    a = analyze(run, top=5, model=None)
    top = a.run.step(a.localization.candidates[0].step_id)
    assert top.name == "pick_method"
    assert any(SPEAKS in r for r in a.localization.candidates[0].reasons)


def test_no_mark_for_a_branch_named_only_by_a_word_of_the_failing_step() -> None:
    """A word the chosen node shares with the failing step's own name (``check``) says where the failure showed,
    not which branch ran."""
    from langgraph.graph import END, StateGraph

    def route(state: Order) -> str:
        return "price_check"

    def price_check(state: Order) -> dict[str, Any]:
        return {"total": state["qty"] * 3}

    def final_check(state: Order) -> dict[str, Any]:
        raise ValueError(f"check failed: total {state['total']} is over the limit")

    graph = StateGraph(Order)
    graph.add_node("start", lambda s: {"qty": 40})
    graph.add_node("price_check", price_check)
    graph.add_node("final_check", final_check)
    graph.set_entry_point("start")
    graph.add_conditional_edges("start", route, {"price_check": "price_check"})
    graph.add_edge("price_check", "final_check")
    graph.add_edge("final_check", END)
    tracer = TrajdebugTracer()
    with pytest.raises(ValueError):
        graph.compile().invoke({"qty": 0}, config={"callbacks": [tracer]})
    assert not any(SPEAKS in r for r in _reasons(tracer.to_run(), "route"))


def test_no_mark_for_a_loop_going_back_to_its_first_node() -> None:
    """A router at a loop's end answering the loop's first node (``grade_week`` again, "week" in the message) chose
    the next pass, not a branch: only the router of the branch (``staffing_route``) may be marked."""
    from langgraph.graph import END, StateGraph

    def grade_week(state: Rota) -> dict[str, Any]:
        return {"grade": "very high" if state["i"] == 1 else "low"}

    def single_watch(state: Rota) -> dict[str, Any]:
        week = state["weeks"][state["i"]]
        return {"rota": [*state.get("rota", []), {"week": week, "lookouts": 1}], "i": state["i"] + 1}

    def more_weeks(state: Rota) -> str:
        return "grade_week" if state["i"] < len(state["weeks"]) else "review"

    def review(state: Rota) -> dict[str, Any]:
        first = state["rota"][-1]
        raise ValueError(f"{first['week']} is a burn-ban week: tower L2 needs 2 lookouts, has {first['lookouts']}")

    graph = StateGraph(Rota)
    graph.add_node("grade_week", grade_week)
    graph.add_node("single_watch", single_watch)
    graph.add_node("review", review)
    graph.set_entry_point("grade_week")
    graph.add_conditional_edges("grade_week", lambda s: "single_watch", {"single_watch": "single_watch"})
    graph.add_conditional_edges("single_watch", more_weeks, {"grade_week": "grade_week", "review": "review"})
    graph.add_edge("review", END)
    tracer = TrajdebugTracer()
    with pytest.raises(ValueError):
        graph.compile().invoke({"weeks": ["2026-W30", "2026-W31"], "i": 0}, config={"callbacks": [tracer]})
    assert not any(SPEAKS in r for r in _reasons(tracer.to_run(), "more_weeks"))


class Alert(TypedDict, total=False):
    flow: float
    queue: str
    order: str


def test_no_mark_for_a_choice_the_router_was_handed() -> None:
    """A router answering ``planned_works`` from the state's ``queue: planned`` (a triage step's decision) passed
    that decision on: the failure speaking of "planned works" points at the triage, not at the router."""
    from langgraph.graph import END, StateGraph

    def route(state: Alert) -> str:
        return f"{state['queue']}_works"

    def issue_order(state: Alert) -> dict[str, Any]:
        raise ValueError(f"planned works: {state['flow']} L/s exceeds the 5.0 L/s ceiling for a repair order")

    graph = StateGraph(Alert)
    graph.add_node("triage", lambda s: {"queue": "planned"})
    graph.add_node("planned_works", lambda s: {"order": "PWO-7"})
    graph.add_node("urgent_works", lambda s: {"order": "UWO-7"})
    graph.add_node("issue_order", issue_order)
    graph.set_entry_point("triage")
    graph.add_conditional_edges("triage", route, {"planned_works": "planned_works", "urgent_works": "urgent_works"})
    graph.add_edge("planned_works", "issue_order")
    graph.add_edge("urgent_works", "issue_order")
    graph.add_edge("issue_order", END)
    tracer = TrajdebugTracer()
    with pytest.raises(ValueError):
        graph.compile().invoke({"flow": 14.2}, config={"callbacks": [tracer]})
    run = tracer.to_run()
    assert _by(run, "route").output == "planned_works"
    assert not any(SPEAKS in r for r in _reasons(run, "route"))


def _by(run: Run, name: str) -> Any:
    return next(s for s in run.steps if s.name == name)


class Sale(TypedDict, total=False):
    qty: int
    price: float
    total: float
    note: str
    beds: list[str]
    loads: list[dict[str, Any]]


def _failed(graph: Any, state: dict[str, Any]) -> Run:
    tracer = TrajdebugTracer()
    with pytest.raises(ValueError):
        graph.compile().invoke(state, config={"callbacks": [tracer]})
    return tracer.to_run()


def _first(run: Run) -> str:
    a = analyze(run, top=5, model=None)
    return a.run.step(a.localization.candidates[0].step_id).name


def test_no_mark_for_the_right_branch_before_a_tool_that_misweighed() -> None:
    """Review rev56g: ``pick_method`` rightly chose ``dry_harvest``; a tool inside it weighed the load tenfold, and the
    failure ("the dry-harvested load ... weighs 7000.0 barrels") speaks of the branch only to say which load: a
    quantity the failure names came from the tool, so the failure is about that value, and the tool ranks first."""
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import tool
    from langgraph.graph import END, StateGraph

    @tool
    def weigh_load(bed: str) -> float:
        """Weigh a bed's load in barrels."""
        return 7000.0  # the fault

    def dry_harvest(state: Sale, config: RunnableConfig) -> dict[str, Any]:
        return {"loads": [{"bed": b, "barrels": weigh_load.invoke({"bed": b}, config=config)} for b in state["beds"]]}

    def receiving_check(state: Sale) -> dict[str, Any]:
        barrels = state["loads"][0]["barrels"]
        raise ValueError(f"the dry-harvested load from W-01 weighs {barrels} barrels, over the 900 a bed yields")

    graph = StateGraph(Sale)
    graph.add_node("plan", lambda s: {"beds": ["W-01"]})
    graph.add_node("dry_harvest", dry_harvest)  # type: ignore[call-overload]
    graph.add_node("wet_harvest", lambda s: {"loads": []})
    graph.add_node("receiving_check", receiving_check)
    graph.set_entry_point("plan")
    graph.add_conditional_edges("plan", lambda s: "dry_harvest", {"dry_harvest": "dry_harvest", "wet_harvest": "wet_harvest"})
    graph.add_edge("dry_harvest", "receiving_check")
    graph.add_edge("wet_harvest", "receiving_check")
    graph.add_edge("receiving_check", END)
    run = _failed(graph, {})
    assert _first(run) == "weigh_load"
    assert not any(SPEAKS in r for s in run.steps if s.kind == "other" for r in _reasons(run, s.name))


def test_no_mark_for_the_right_branch_before_a_wrong_total() -> None:
    """Review rev56g: ``route_pricing`` rightly chose ``total_standard``; a later node computed a wrong total, which
    the failure names ("order total 150.0 does not match"): that node, not the router, ranks first."""
    from langgraph.graph import END, StateGraph

    def invoice_guard(state: Sale) -> dict[str, Any]:
        raise ValueError(f"order total {state['total']} does not match 4 x 25.0 = 100.0")

    graph = StateGraph(Sale)
    graph.add_node("start", lambda s: {"qty": 4, "price": 25.0})
    graph.add_node("total_standard", lambda s: {"note": "standard"})
    graph.add_node("total_bulk", lambda s: {"note": "bulk"})
    graph.add_node("apply_discount", lambda s: {"total": s["qty"] * s["price"] * 1.5})  # the fault
    graph.add_node("invoice_guard", invoice_guard)
    graph.set_entry_point("start")

    def route_pricing(state: Sale) -> str:
        return "total_standard"

    graph.add_conditional_edges("start", route_pricing, {"total_standard": "total_standard", "total_bulk": "total_bulk"})
    graph.add_edge("total_standard", "apply_discount")
    graph.add_edge("total_bulk", "apply_discount")
    graph.add_edge("apply_discount", "invoice_guard")
    graph.add_edge("invoice_guard", END)
    run = _failed(graph, {})
    assert _first(run) == "apply_discount"
    assert not any(SPEAKS in r for r in _reasons(run, "route_pricing"))


def test_no_mark_for_a_router_that_followed_an_upstream_wrong_quantity() -> None:
    """Review rev56g: ``set_qty`` wrote 400 for 40 and the router, reading it, rightly sent the order on to
    ``place_order``; the failure names the 400 and the branch's word ("order"): the choice followed the wrong
    value, so the router takes no mark."""
    from langgraph.graph import END, StateGraph

    def limit_guard(state: Sale) -> dict[str, Any]:
        raise ValueError(f"order ORD-3 for {state['qty']} units is over the 100 unit limit")

    def route_order(state: Sale) -> str:
        return "place_order" if state["qty"] > 0 else "hold_order"

    graph = StateGraph(Sale)
    graph.add_node("set_qty", lambda s: {"qty": 400})  # the fault: 400 for 40
    graph.add_node("place_order", lambda s: {"total": s["qty"] * 2.0})
    graph.add_node("hold_order", lambda s: {"note": "held"})
    graph.add_node("limit_guard", limit_guard)
    graph.set_entry_point("set_qty")
    graph.add_conditional_edges("set_qty", route_order, {"place_order": "place_order", "hold_order": "hold_order"})
    graph.add_edge("place_order", "limit_guard")
    graph.add_edge("hold_order", "limit_guard")
    graph.add_edge("limit_guard", END)
    run = _failed(graph, {})
    assert not any(SPEAKS in r for r in _reasons(run, "route_order"))
    assert _first(run) != "route_order"


class Repair(TypedDict, total=False):
    ticket: str
    diagnosis: str
    parts: list[str]


def test_no_mark_for_a_choice_headed_in_a_text_the_router_was_handed() -> None:
    """A router answering ``valve_work`` from a diagnosis ``valve: replace the valves`` (a model's label heading its
    answer) passed that label on: the failure's "valve set" speaks of the parts, not of a choice the router made."""
    from langgraph.graph import END, StateGraph

    def route_repair(state: Repair) -> str:
        return f"{state['diagnosis'].split(':')[0]}_work"

    def approve_quote(state: Repair) -> dict[str, Any]:
        raise ValueError(f"{state['parts'][0]} VS-Richter does not fit Paddy Richter tuning")

    graph = StateGraph(Repair)
    graph.add_node("diagnose", lambda s: {"diagnosis": "valve: replace the valves"})
    graph.add_node("valve_work", lambda s: {"parts": ["valve set"]})
    graph.add_node("reed_work", lambda s: {"parts": ["reed plate"]})
    graph.add_node("approve_quote", approve_quote)
    graph.set_entry_point("diagnose")
    graph.add_conditional_edges("diagnose", route_repair, {"valve_work": "valve_work", "reed_work": "reed_work"})
    graph.add_edge("valve_work", "approve_quote")
    graph.add_edge("reed_work", "approve_quote")
    graph.add_edge("approve_quote", END)
    run = _failed(graph, {"ticket": "Seydel 1847, Paddy Richter tuning: air leaks on holes 7 to 10"})
    assert _by(run, "route_repair").output == "valve_work"
    assert not any(SPEAKS in r for r in _reasons(run, "route_repair"))


class Parcel(TypedDict, total=False):
    order: str
    carrier: str
    cover: str
    status: str


def _shipping(set_cover: Any, message: str) -> Run:
    """``route_service`` rightly chooses ``express_ship`` (the order paid for express); ``set_cover``, after the
    branches join, makes the value the dispatch check refuses, with the branch's word in its message."""
    from langgraph.graph import END, StateGraph

    def route_service(state: Parcel) -> str:
        return "express_ship"

    def dispatch_check(state: Parcel) -> dict[str, Any]:
        raise ValueError(message.format(**state))

    graph = StateGraph(Parcel)
    graph.add_node("intake", lambda s: {"order": "ORD-77"})
    graph.add_node("express_ship", lambda s: {"carrier": "SkyPost"})
    graph.add_node("ground_ship", lambda s: {"carrier": "RoadCo"})
    graph.add_node("set_cover", set_cover)
    graph.add_node("dispatch_check", dispatch_check)
    graph.set_entry_point("intake")
    graph.add_conditional_edges("intake", route_service, {"express_ship": "express_ship", "ground_ship": "ground_ship"})
    graph.add_edge("express_ship", "set_cover")
    graph.add_edge("ground_ship", "set_cover")
    graph.add_edge("set_cover", "dispatch_check")
    graph.add_edge("dispatch_check", END)
    return _failed(graph, {})


def test_no_mark_for_the_right_branch_before_a_step_that_made_the_word_the_failure_speaks_of() -> None:
    """Review rev57g (HIGH): the failure "express shipments need cover, this one has none" speaks of the branch only
    to say which rule; ``set_cover`` made ``cover=none``, a value of the field it speaks of: the router, right, takes
    no mark, and ``set_cover`` ranks first (before, the router did)."""
    run = _shipping(lambda s: {"cover": "none"}, "express shipments need cover, this one has none")
    assert not any(SPEAKS in r for r in _reasons(run, "route_service"))
    assert _first(run) == "set_cover"


def test_no_mark_for_the_right_branch_before_a_step_that_made_the_label_the_failure_says() -> None:
    """Review rev57g (HIGH): ``set_cover`` wrote ``status=held`` and the failure says the shipment "is held": a label
    made after the choice, past the chosen step, so the failure is about that value, not the branch."""
    run = _shipping(lambda s: {"status": "held"}, "express shipment {order} is held; express parcels must leave today")
    assert not any(SPEAKS in r for r in _reasons(run, "route_service"))


class League(TypedDict, total=False):
    fixtures: list[str]
    i: int
    bookings: list[str]
    markers: list[str]


def test_no_mark_for_a_loop_exit() -> None:
    """Review rev57g (HIGH 2, ZZO ``dl_c4``): ``more`` chose ``book`` again twice, then ``markers``: it decides how
    often the booking loop runs, no branch between alternatives, so the failure's "markers" gives it no mark."""
    from langgraph.graph import END, StateGraph

    def book(state: League) -> dict[str, Any]:
        return {"bookings": [*state.get("bookings", []), state["fixtures"][state["i"]]], "i": state["i"] + 1}

    def more(state: League) -> str:
        return "book" if state["i"] < len(state["fixtures"]) else "markers"

    def validate(state: League) -> dict[str, Any]:
        raise ValueError("the markers were named before the venues confirmed their boards")

    graph = StateGraph(League)
    graph.add_node("intake", lambda s: {"i": 0})
    graph.add_node("book", book)
    graph.add_node("markers", lambda s: {"markers": ["R. Kaur", "E. Wren", "D. Moss"]})
    graph.add_node("validate", validate)
    graph.set_entry_point("intake")
    graph.add_edge("intake", "book")
    graph.add_conditional_edges("book", more, {"book": "book", "markers": "markers"})
    graph.add_edge("markers", "validate")
    graph.add_edge("validate", END)
    run = _failed(graph, {"fixtures": ["Red Lion A v Ship Inn", "Crown Arrows v Fox Flights", "Bull & Gate v Anchor"]})
    assert [s.output for s in run.steps if s.name == "more"] == ["book", "book", "markers"]
    assert not any(SPEAKS in r for r in _reasons(run, "more"))


class Ticket(TypedDict, total=False):
    ticket: str
    text: str
    severity: str
    action: str
    order: str
    zone: str
    carrier: str
    code: str
    lane: str
    mode: str
    note: str
    page: int
    pages: list[str]
    has_more: bool
    summary: str
    dye: str


def _express(out: dict[str, Any], message: str) -> Run:
    """``pick_service`` rightly chooses ``express_ship``; that node itself writes the wrong value (``out``)."""
    from langgraph.graph import END, StateGraph

    def dispatch_check(state: Ticket) -> dict[str, Any]:
        raise ValueError(message.format(**state))

    def pick_service(state: Ticket) -> str:
        return "express_ship"

    graph = StateGraph(Ticket)
    graph.add_node("intake", lambda s: {"order": "ORD-77", "zone": "Z3"})
    graph.add_node("express_ship", lambda s: out)
    graph.add_node("ground_ship", lambda s: {"carrier": "RoadCo"})
    graph.add_node("dispatch_check", dispatch_check)
    graph.set_entry_point("intake")
    graph.add_conditional_edges("intake", pick_service, {"express_ship": "express_ship", "ground_ship": "ground_ship"})
    graph.add_edge("express_ship", "dispatch_check")
    graph.add_edge("ground_ship", "dispatch_check")
    graph.add_edge("dispatch_check", END)
    return _failed(graph, {})


@pytest.mark.parametrize(
    ("out", "message"),
    [
        ({"carrier": "CR-19"}, "express shipment {order} was booked with carrier {carrier}, which does not serve zone {zone}"),
        ({"code": "LBL-5521"}, "express order {order}: label {code} is not valid for zone {zone}"),
    ],
)
def test_no_mark_for_the_right_branch_whose_own_step_made_the_value(out: dict[str, Any], message: str) -> None:
    """Review rev58g (HIGH 1, probes p7a, p7c): a value the chosen step made, and the failure names, cancels the mark:
    the right router no longer outranks the wrong step it chose."""
    run = _express(out, message)
    assert not any(SPEAKS in r for r in _reasons(run, "pick_service"))
    assert _first(run) == "express_ship"


def _severity(message: str) -> Run:
    """``classify`` rates a cosmetic scratch ``high``; ``route_severity`` follows its rule to ``urgent_repair``."""
    from langgraph.graph import END, StateGraph

    def route_severity(state: Ticket) -> str:
        return "urgent_repair" if state["severity"] == "high" else "routine_repair"

    def close_ticket(state: Ticket) -> dict[str, Any]:
        raise ValueError(message.format(**state))

    graph = StateGraph(Ticket)
    graph.add_node("intake", lambda s: {"ticket": "T-4471", "text": "cosmetic scratch on the door panel"})
    graph.add_node("classify", lambda s: {"severity": "high"})
    graph.add_node("urgent_repair", lambda s: {"action": "dispatch crew tonight"})
    graph.add_node("routine_repair", lambda s: {"action": "schedule next week"})
    graph.add_node("close_ticket", close_ticket)
    graph.set_entry_point("intake")
    graph.add_edge("intake", "classify")
    graph.add_conditional_edges("classify", route_severity, {"urgent_repair": "urgent_repair", "routine_repair": "routine_repair"})
    graph.add_edge("urgent_repair", "close_ticket")
    graph.add_edge("routine_repair", "close_ticket")
    graph.add_edge("close_ticket", END)
    return _failed(graph, {})


def test_no_mark_for_a_router_that_followed_an_upstream_label() -> None:
    """Review rev58g (HIGH 2, probe p1d): the router was handed ``high``, a one-word label the failure says and an
    earlier step made: it followed that label, so it takes no mark and does not outrank the steps before it."""
    run = _severity("a cosmetic scratch was rated severity {severity} and sent for urgent repair")
    assert not any(SPEAKS in r for r in _reasons(run, "route_severity"))
    assert _first(run) != "route_severity"


def test_no_mark_for_a_second_router_that_followed_the_first_ones_label() -> None:
    """Review rev58g (HIGH 2, probe p4b): ``pick_lane`` wrongly chose ``express_lane``, whose node wrote
    ``note=priority``; ``pick_mode`` rightly chose ``air_freight`` for it.  ``pick_mode`` takes no mark."""
    from langgraph.graph import END, StateGraph

    def pick_mode(state: Ticket) -> str:
        return "air_freight" if state["note"] == "priority" else "road_freight"

    def dispatch_check(state: Ticket) -> dict[str, Any]:
        raise ValueError(f"order {state['order']} paid for standard shipping but went express by air freight")

    graph = StateGraph(Ticket)
    graph.add_node("intake", lambda s: {"order": "ORD-88", "zone": "Z5", "lane": "standard"})
    graph.add_node("express_lane", lambda s: {"note": "priority"})
    graph.add_node("standard_lane", lambda s: {"note": "normal"})
    graph.add_node("air_freight", lambda s: {"mode": "air"})
    graph.add_node("road_freight", lambda s: {"mode": "road"})
    graph.add_node("dispatch_check", dispatch_check)
    graph.set_entry_point("intake")
    graph.add_conditional_edges("intake", lambda s: "express_lane", {"express_lane": "express_lane", "standard_lane": "standard_lane"})
    for lane in ("express_lane", "standard_lane"):
        graph.add_conditional_edges(lane, pick_mode, {"air_freight": "air_freight", "road_freight": "road_freight"})
    graph.add_edge("air_freight", "dispatch_check")
    graph.add_edge("road_freight", "dispatch_check")
    graph.add_edge("dispatch_check", END)
    run = _failed(graph, {})
    assert not any(SPEAKS in r for r in _reasons(run, "pick_mode"))
    assert _first(run) != "pick_mode"


def test_a_router_leading_by_its_mark_alone_gets_no_verdict_above_unsure() -> None:
    """Review rev58g (HIGH 3, probe p3b): ``fetch_page`` wrongly said there were no more pages; ``more_pages``, the
    loop's controller, never went back in this run, so it carries the mark for ``write_summary``.  It may lead, but
    on that mark alone the verdict stays unsure (before: ``likely``)."""
    from langgraph.graph import END, StateGraph

    def fetch_page(state: Ticket) -> dict[str, Any]:
        p = state.get("page", 0) + 1
        return {"page": p, "pages": [*state.get("pages", []), f"page {p} text"], "has_more": False}

    def more_pages(state: Ticket) -> str:
        return "fetch_page" if state["has_more"] else "write_summary"

    def publish(state: Ticket) -> dict[str, Any]:
        raise ValueError("the summary leaves out the later pages of the report")

    graph = StateGraph(Ticket)
    graph.add_node("fetch_page", fetch_page)
    graph.add_node("write_summary", lambda s: {"summary": " / ".join(s["pages"])})
    graph.add_node("publish", publish)
    graph.set_entry_point("fetch_page")
    graph.add_conditional_edges("fetch_page", more_pages, {"fetch_page": "fetch_page", "write_summary": "write_summary"})
    graph.add_edge("write_summary", "publish")
    graph.add_edge("publish", END)
    run = _failed(graph, {})
    a = analyze(run, top=5)
    assert a.verdict == "unsure"
    best = a.localization.candidates[0]
    if a.run.step(best.step_id).name == "more_pages":
        assert any("at most unsure" in r for r in best.reasons)


def test_a_text_holding_a_word_of_the_branch_keeps_the_mark() -> None:
    """A text made after the choice, of a field the failure speaks of (``dye``), cancels the mark unless it holds a
    word of the branch's name: ``Acid Yellow`` after ``acid_line`` is what running that branch does, so the router
    that wrongly chose it for a cotton batch keeps its mark."""
    from langgraph.graph import END, StateGraph

    def pick_line(state: Ticket) -> str:
        return "acid_line"  # the fault: cotton takes reactive dyes

    def dye_check(state: Ticket) -> dict[str, Any]:
        raise ValueError("a cotton batch went down the acid line, and its dye does not take on cotton")

    graph = StateGraph(Ticket)
    graph.add_node("intake", lambda s: {"order": "C-7"})
    graph.add_node("acid_line", lambda s: {"dye": "Acid Yellow"})
    graph.add_node("reactive_line", lambda s: {"dye": "Reactive Red"})
    graph.add_node("dye_check", dye_check)
    graph.set_entry_point("intake")
    graph.add_conditional_edges("intake", pick_line, {"acid_line": "acid_line", "reactive_line": "reactive_line"})
    graph.add_edge("acid_line", "dye_check")
    graph.add_edge("reactive_line", "dye_check")
    graph.add_edge("dye_check", END)
    run = _failed(graph, {})
    assert any(SPEAKS in r for r in _reasons(run, "pick_line"))


class Draw(TypedDict, total=False):
    i: int
    results: list[str]


def test_a_blocked_choice_still_shares_the_branch_mark() -> None:
    """``pick`` chose ``record_match`` on both passes of a loop (``again`` goes back); a value made after the first
    choice cancels that choice's mark, yet it still counts among the branch's choices sharing the mark: the second
    choice's mark is ``origin_chosen`` over the square root of two, not the whole of it."""
    from langgraph.graph import END, StateGraph

    from trajdebug.analysis._weights import DEFAULT_WEIGHTS

    def pick(state: Draw) -> str:
        return "record_match"

    def again(state: Draw) -> str:
        return "round" if state["i"] < 2 else "check"

    def check(state: Draw) -> dict[str, Any]:
        raise ValueError("the match was recorded although the round was late")

    graph = StateGraph(Draw)
    graph.add_node("round", lambda s: {"i": s.get("i", 0) + 1})
    graph.add_node("record_match", lambda s: {"results": [*s.get("results", []), "1-0"]})
    graph.add_node("walkover", lambda s: {"results": [*s.get("results", []), "w/o"]})
    graph.add_node("check", check)
    graph.set_entry_point("round")
    graph.add_conditional_edges("round", pick, {"record_match": "record_match", "walkover": "walkover"})
    graph.add_conditional_edges("record_match", again, {"round": "round", "check": "check"})
    graph.add_edge("walkover", "check")
    graph.add_edge("check", END)
    run = _failed(graph, {})
    a = analyze(run, top=50, model=None)
    picks = [c for c in a.localization.candidates if a.run.step(c.step_id).name == "pick"]
    marked = [c for c in picks if any(SPEAKS in r for r in c.reasons)]
    assert len(picks) == 2 and len(marked) == 1
    assert marked[0].features["thin"] == pytest.approx(DEFAULT_WEIGHTS["origin_chosen"] / 2**0.5)


def test_a_reused_router_choosing_after_its_loop_exited_keeps_its_mark() -> None:
    """Review rev58p (probe q6): one function is the page loop's way back at ``fetch_page`` and, after that loop
    exited, the (wrong) branch at ``triage_step``: the second choice is its own and takes the mark."""
    from langgraph.graph import END, StateGraph

    def route(state: Ticket) -> str:
        if state.get("ticket") is None:
            return "fetch_page" if state["page"] < 2 else "triage_step"
        return "urgent_repair"  # the fault

    def close_ticket(state: Ticket) -> dict[str, Any]:
        raise ValueError(f"ticket {state['ticket']}: a minor scuff was sent for urgent repair")

    graph = StateGraph(Ticket)
    graph.add_node("fetch_page", lambda s: {"page": s.get("page", 0) + 1})
    graph.add_node("triage_step", lambda s: {"ticket": "T-3"})
    graph.add_node("urgent_repair", lambda s: {"action": "dispatch crew"})
    graph.add_node("routine_repair", lambda s: {"action": "schedule visit"})
    graph.add_node("close_ticket", close_ticket)
    graph.set_entry_point("fetch_page")
    graph.add_conditional_edges("fetch_page", route, {"fetch_page": "fetch_page", "triage_step": "triage_step"})
    graph.add_conditional_edges("triage_step", route, {"urgent_repair": "urgent_repair", "routine_repair": "routine_repair"})
    graph.add_edge("urgent_repair", "close_ticket")
    graph.add_edge("routine_repair", "close_ticket")
    graph.add_edge("close_ticket", END)
    run = _failed(graph, {})
    a = analyze(run, top=10)
    best = a.root_causes[0]
    assert a.run.step(best.step_id).name == "route"
    assert a.run.step(a.run.step(best.step_id).parent_id or "").name == "triage_step"
    assert any(SPEAKS in r for r in best.reasons)


class Squash(TypedDict, total=False):
    subs: list[str]
    i: int
    kind: str
    table: list[str]


def test_no_mark_for_a_loop_routers_exit_from_its_other_node() -> None:
    """``more`` routes back from both ``record_match`` and ``record_walkover``; the last submission is a walkover,
    so its exit to ``ladder`` is taken at the node it never went back from: still the loop's exit, no branch."""
    from langgraph.graph import END, StateGraph

    def next_sub(state: Squash) -> dict[str, Any]:
        i = state.get("i", -1) + 1
        return {"i": i, "kind": state["subs"][i]}

    def route_result(state: Squash) -> str:
        return "record_walkover" if state["kind"] == "w/o" else "record_match"

    def more(state: Squash) -> str:
        return "next_sub" if state["i"] + 1 < len(state["subs"]) else "ladder"

    def validate(state: Squash) -> dict[str, Any]:
        raise ValueError("the ladder is out of order after the round")

    graph = StateGraph(Squash)
    graph.add_node("next_sub", next_sub)
    graph.add_node("record_match", lambda s: {"table": [*s.get("table", []), "match"]})
    graph.add_node("record_walkover", lambda s: {"table": [*s.get("table", []), "walkover"]})
    graph.add_node("ladder", lambda s: {"table": sorted(s.get("table", []))})
    graph.add_node("validate", validate)
    graph.set_entry_point("next_sub")
    graph.add_conditional_edges("next_sub", route_result, {"record_match": "record_match", "record_walkover": "record_walkover"})
    graph.add_conditional_edges("record_match", more, {"next_sub": "next_sub", "ladder": "ladder"})
    graph.add_conditional_edges("record_walkover", more, {"next_sub": "next_sub", "ladder": "ladder"})
    graph.add_edge("ladder", "validate")
    graph.add_edge("validate", END)
    run = _failed(graph, {"subs": ["3-1", "3-0", "w/o"]})
    assert [s.output for s in run.steps if s.name == "more"] == ["next_sub", "next_sub", "ladder"]
    assert not any(SPEAKS in r for r in _reasons(run, "more"))
