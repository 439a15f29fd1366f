"""A model step that states new values on every call, and a state write filed under another item's key.

Two small agents recorded with the SDK (docs/recording.md): a greenhouse planner whose model names a
fertiliser for each bed (values found in none of its inputs, on every call: its job) while the failure is
about a bed its planner left out; and a kennel desk that files each dog's record under the key of the dog
before it (`trajdebug.analysis.diagnosers._misfiled.misfiled_write`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import trajdebug
from trajdebug.analysis import _elsewhere, analyze
from trajdebug.analysis._elsewhere import Routine, _in_text, off_the_failure
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis.diagnosers import DiagnoseContext, _misfiled
from trajdebug.analysis.diagnosers._misfiled import misfiled_write
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
    theirs = Routine.of({"b2": ("'fish emulsion'",), "b3": ("'bone meal'",)})
    assert off_the_failure(named, lin, fail, (), 0.25, routine=theirs).suspicion == 0.5
    assert off_the_failure(other, lin, fail, (), 0.25, routine=theirs).suspicion == pytest.approx(0.125)


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


_WEIGHTS = {"A-11": ("cast iron skillet", 2.4), "A-12": ("wool blanket", 1.8), "A-13": ("ceramic teapot", 96.0)}


def _parcels() -> Run:
    """A model estimates each parcel's weight (a new value on every call: its job); a check given that
    parcel's estimate alone fails on the teapot's 96 kg, naming the courier's limit, not the estimate."""

    @trajdebug.step(kind="llm")
    def estimate_weight(messages: list[dict[str, str]]) -> str:
        sku = json.loads(messages[-1]["content"])["sku"]
        return json.dumps({"sku": sku, "estimated_kg": _WEIGHTS[sku][1]})

    @trajdebug.step(kind="parse")
    def read_estimate(text: str) -> dict[str, Any]:
        return dict(json.loads(text))

    @trajdebug.step(kind="tool")
    def courier_rules(courier: str) -> dict[str, Any]:
        return {"courier": courier, "max_kg": 30, "service": "ground"}

    @trajdebug.step(kind="tool")
    def parcel_check(est: dict[str, Any], rules: dict[str, Any]) -> str:
        if est["estimated_kg"] > rules["max_kg"]:
            raise ValueError(f"parcel {est['sku']} is over the {rules['max_kg']} kg limit of courier {rules['courier']}")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("parcel-desk", task="Q-6"):
        rules = courier_rules("Q-6")
        for sku, (name, _) in _WEIGHTS.items():
            ask = json.dumps({"sku": sku, "name": name})
            est = estimate_weight([{"role": "system", "content": "Estimate the weight."}, {"role": "user", "content": ask}])
            parcel_check(read_estimate(est), rules)
    return runs[0]


def test_a_routine_value_the_failing_step_was_given_alone_keeps_its_weight() -> None:
    """The failing check was given the teapot's estimate and none of the other calls': the made-up 96 kg
    reached the failure (a per-item check, not a checker given the whole record)."""
    run = _parcels()
    top = analyze(run, top=5, model=None).root_causes[0]
    assert run.step(top.step_id).name == "estimate_weight"
    assert "A-13" in json.dumps(run.step(top.step_id).input)


_ASSIGNEES = {"T-501": "Ravi Okafor", "T-502": "Lena Brandt", "T-503": "Dana Whitfield"}


def _helpdesk(mode: str) -> Run:
    """Per ticket a model names an assignee (made up on every call); a hand-off step either keeps a cursor
    (``cursor``) or closes the previous ticket's status entry before the ticket's own is opened (``close``);
    the rota check, given every assignee, fails naming the third in a sentence."""

    @trajdebug.step(kind="tool")
    def fetch_ticket(ticket: str) -> dict[str, Any]:
        return {"ticket": ticket, "text": f"printer jam on floor {list(_ASSIGNEES).index(ticket) + 2}"}

    @trajdebug.step(kind="llm")
    def triage(messages: list[dict[str, str]]) -> str:
        t = json.loads(messages[-1]["content"])["ticket"]
        return json.dumps({"ticket": t, "priority": "P3", "assignee": _ASSIGNEES[t]})

    @trajdebug.step(kind="state")
    def open_ticket(ticket: str, info: dict[str, Any]) -> None:
        here = trajdebug.current_run()
        assert here is not None
        here.state[f"status:{ticket}"] = {"open": True, "priority": info["priority"]}

    @trajdebug.step(kind="state")
    def handoff(ticket: str, previous: str | None) -> None:
        here = trajdebug.current_run()
        assert here is not None
        if mode == "close" and previous:
            here.state[f"status:{previous}"] = {"open": False, "closed_before": ticket}
        elif mode == "cursor":
            here.state["current_item"] = ticket

    @trajdebug.step(kind="tool")
    def rota_check(assignees: dict[str, str]) -> str:
        for t, who in assignees.items():
            if who not in ("Ravi Okafor", "Lena Brandt"):
                raise ValueError(f"ticket {t} is assigned to {who}, who is not on the rota")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("helpdesk-" + mode, task="shift"):
        previous, assignees = None, {}
        for t in _ASSIGNEES:
            ask = json.dumps(fetch_ticket(t))
            info = json.loads(triage([{"role": "system", "content": "Triage the ticket."}, {"role": "user", "content": ask}]))
            if mode != "close":
                open_ticket(t, info)
            handoff(t, previous)
            if mode == "close":
                open_ticket(t, info)
            assignees[t] = info["assignee"]
            previous = t
        rota_check(assignees)
    return runs[0]


def test_a_routine_value_the_failure_names_in_a_sentence_keeps_its_weight() -> None:
    """``Dana Whitfield`` is written in the failure's sentence (no value of it on its own): that call's
    finding stays whole, its sibling calls' weigh as off the failure."""
    run = _helpdesk("cursor")
    lin = Lineage(run)
    fail = analyze(run, model=None).failures
    dana = Evidence("x", 0.5, "states 'Dana Whitfield'", "llm-output", values=("'Dana Whitfield'",))
    lena = Evidence("x", 0.5, "states 'Lena Brandt'", "llm-output", values=("'Lena Brandt'",))
    ravi = ("'Ravi Okafor'",)
    dana_routine = Routine.of({"t1": ravi, "t2": ("'Lena Brandt'",)})
    assert off_the_failure(dana, lin, fail, (), 0.25, routine=dana_routine).suspicion == 0.5
    lena_off = off_the_failure(lena, lin, fail, (), 0.25, routine=Routine.of({"t1": ravi, "t3": ("'Dana Whitfield'",)}))
    assert lena_off.suspicion == pytest.approx(0.125)


def test_a_handoff_closing_the_previous_item_is_no_misfiled_write() -> None:
    """The hand-off writes the previous ticket's key on purpose, and the ticket's own entry is written right
    after by another step: no item is left without an entry."""
    run = _helpdesk("close")
    ctx = DiagnoseContext.build(run, diagnosers={"misfiled-write": misfiled_write})
    assert [e for s in run.steps for e in misfiled_write(s, ctx)] == []


def _booking(blurbs: bool, wrap: bool = False, topics: tuple[str, ...] = ("location", "rooms"), notes: bool = False) -> Run:
    """A graph's nodes call models of one class (named after it, as LangChain names them): the extract node's
    call makes up 12 nights (the root), a describe node's two calls write blurbs stating new values (their
    job); the budget check fails naming only the dollar total.  With ``wrap`` each node calls the model through
    a chain of one name (LCEL's ``RunnableSequence``, as ``prompt | model`` records it); with ``notes`` the blurbs
    go to the check with the booking."""

    answers = {
        "Book Hotel Lumen for the weekend.": "The guest wants Hotel Lumen for 12 nights.",
        "Describe the location of Hotel Lumen.": "Hotel Lumen sits 400 metres from the Rijksmuseum, breakfast from 7:30.",
        "Describe the rooms of Hotel Lumen.": "Rooms face the Prinsengracht canal, with 14 square metres each.",
        "Describe the spa of Hotel Lumen.": "The spa has 3 saunas and a 25 metre pool.",
    }

    @trajdebug.step("ChatModel", kind="llm")
    def chat(messages: list[dict[str, str]]) -> str:
        return answers[messages[-1]["content"]]

    @trajdebug.step("RunnableSequence", kind="chain")
    def sequence(question: str) -> str:
        return chat([{"role": "user", "content": question}])

    def ask(question: str) -> str:
        return sequence(question) if wrap else chat([{"role": "user", "content": question}])

    @trajdebug.step(kind="chain")
    def extract(request: str) -> dict[str, Any]:
        text = ask(request)
        return {"hotel": "Hotel Lumen", "nights": int(text.split(" for ")[1].split()[0])}

    @trajdebug.step(kind="chain")
    def describe(hotel: str) -> list[str]:
        return [ask(f"Describe the {topic} of {hotel}.") for topic in topics]

    @trajdebug.step(kind="tool")
    def price_eur(hotel: str, nights: int) -> float:
        return 118.0 * nights

    @trajdebug.step(kind="tool")
    def to_usd(eur: float) -> float:
        return round(eur * 1.0837, 2)

    @trajdebug.step(kind="tool")
    def budget_check(booking: dict[str, Any], usd: float) -> str:
        if usd > 1000:
            raise ValueError(f"the stay costs {usd} USD, over the 1000 USD budget")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("hotel-graph", task="stay"):
        booking = extract("Book Hotel Lumen for the weekend.")
        written = describe(booking["hotel"]) if blurbs else []
        checked = dict(booking, notes=written) if notes else booking
        budget_check(checked, to_usd(price_eur(booking["hotel"], booking["nights"])))
    return runs[0]


def test_model_calls_of_one_class_in_other_nodes_make_no_routine() -> None:
    """The blurb calls share the extract call's name, not its node: the extract call's made-up nights keep
    the weight they have without the blurbs."""
    scores = []
    for blurbs in (False, True):
        run = _booking(blurbs)
        extract = next(s.step_id for s in run.steps if s.name == "extract")
        call = next(s.step_id for s in run.steps if s.name == "ChatModel" and s.parent_id == extract)
        scores += [c.score for c in analyze(run, top=10, model=None).root_causes if c.step_id == call]
    assert len(scores) == 2 and scores[1] == pytest.approx(scores[0], abs=0.02)


def test_a_chain_wrapper_around_every_call_does_not_make_one_node_of_them() -> None:
    """Every node calls the model through a wrapper of one name: the calls are told apart by the node around
    the wrapper, so the three blurbs are routine and the extract call's made-up nights keep their weight (it
    ranks first, above the blurbs).  Grouped by the wrapper, all four calls were routine."""
    run = _booking(True, wrap=True, topics=("location", "rooms", "spa"), notes=True)
    extract = next(s.step_id for s in run.steps if s.name == "extract")
    top = analyze(run, top=10, model=None).root_causes[0]
    assert run.step(top.step_id).name == "ChatModel"
    assert run.step(run.step(top.step_id).parent_id or "").parent_id == extract


_PARCELS = {"A-11": ("cast iron skillet", 2.4, "Standard"), "A-12": ("wool blanket", 1.8, "Express")}
_PARCELS["A-13"] = ("ceramic teapot", 96.0, "Freight")


def _shipper() -> Run:
    """A model estimates each item's weight and names a packaging (new values on every call: its job); the
    quote on the total fails a budget in a sentence that uses the word ``standard`` in passing."""

    @trajdebug.step(kind="llm")
    def estimate_weight(messages: list[dict[str, str]]) -> str:
        sku = json.loads(messages[-1]["content"])["sku"]
        return json.dumps({"sku": sku, "estimated_kg": _PARCELS[sku][1], "packaging": _PARCELS[sku][2]})

    @trajdebug.step(kind="parse")
    def read_estimate(text: str) -> dict[str, Any]:
        return dict(json.loads(text))

    @trajdebug.step(kind="tool")
    def total_weight(estimates: list[dict[str, Any]]) -> dict[str, float]:
        return {"total_kg": round(sum(e["estimated_kg"] for e in estimates), 2)}

    @trajdebug.step(kind="tool")
    def shipping_quote(total: dict[str, float]) -> dict[str, float]:
        return {"cost_usd": round(12.5 + total["total_kg"] * 3.75, 2)}

    @trajdebug.step(kind="tool")
    def budget_check(quote: dict[str, float]) -> str:
        if quote["cost_usd"] > 60:
            raise ValueError("order Q-5 is over the shipping budget; standard service only")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("shipper", task="Q-5"):
        ests = []
        for sku, (name, _, _) in _PARCELS.items():
            ask = json.dumps({"sku": sku, "name": name})
            ests.append(read_estimate(estimate_weight([{"role": "system", "content": "Estimate."}, {"role": "user", "content": ask}])))
        budget_check(shipping_quote(total_weight(ests)))
    return runs[0]


def test_a_common_word_of_the_failure_does_not_name_a_routine_value() -> None:
    """``Standard`` (one call's packaging) is a word of the failure's prose, not a name in it: that call's
    finding weighs as its siblings' do (it was not raised a fifth above them)."""
    assert not _in_text("Standard", "order Q-5 is over the shipping budget; standard service only")
    assert not _in_text("standard service", "order Q-5 is over the shipping budget; standard service only")
    assert _in_text("Dana Whitfield", "ticket T-503 is assigned to Dana Whitfield, who is not on the rota")
    assert _in_text("QX-7", "van qx-7 is full")
    run = _shipper()
    a = analyze(run, top=5, model=None)
    calls = [c for c in a.root_causes if run.step(c.step_id).name == "estimate_weight"]
    scores = {json.loads(run.step(c.step_id).input["messages"][-1]["content"])["sku"]: c.score for c in calls}
    assert scores["A-11"] == pytest.approx(scores["A-12"], abs=0.05)


def _bulk(n: int) -> Run:
    """``n`` model estimates (made up on every call), each filed by item; a total check fails."""

    @trajdebug.step(kind="llm")
    def estimate(messages: list[dict[str, str]]) -> str:
        sku = json.loads(messages[-1]["content"])["sku"]
        return json.dumps({"sku": sku, "estimated_kg": round(1.1 + (int(sku[2:]) * 37 % 101) / 10, 1)})

    @trajdebug.step(kind="tool")
    def total_check(estimates: list[str]) -> str:
        raise ValueError(f"the total of {len(estimates)} parcels is over the van limit")

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("bulk", task="V-9"):
        ests = [estimate([{"role": "user", "content": json.dumps({"sku": f"A-{1000 + i}"})}]) for i in range(n)]
        total_check(ests)
    return runs[0]


def test_routine_values_are_read_once_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Checking each call of a loop against the others' values reads every call's values once: twice the
    calls, about twice the reading (not four times)."""
    read = [0]
    real = _elsewhere.atoms

    def counted(value: Any, *args: Any, **kwargs: Any) -> Any:
        read[0] += 1
        return real(value, *args, **kwargs)

    monkeypatch.setattr(_elsewhere, "atoms", counted)
    counts = []
    for n in (30, 60):
        run = _bulk(n)
        read[0] = 0
        analyze(run, top=5, model=None)
        counts.append(read[0])
    assert counts[1] < 2.5 * counts[0]


def _threads() -> Run:
    """Per ticket a model names a team or the ticket it duplicates; a duplicate's note is appended to the
    original's thread (on purpose: the write holds the thread it replaced); the third ticket's made-up team
    fails the routing check."""
    tickets = {"T-501": "printer jam floor 2", "T-502": "printer jam floor 2 again", "T-503": "vpn down"}

    @trajdebug.step(kind="tool")
    def fetch_ticket(ticket: str) -> dict[str, str]:
        return {"ticket": ticket, "text": tickets[ticket]}

    @trajdebug.step(kind="llm")
    def triage(messages: list[dict[str, str]]) -> str:
        t = json.loads(messages[-1]["content"])["ticket"]
        if t == "T-502":
            return json.dumps({"ticket": t, "duplicate_of": "T-501"})
        return json.dumps({"ticket": t, "team": {"T-501": "facilities", "T-503": "Quantum Ops"}[t]})

    @trajdebug.step(kind="state")
    def file_note(ticket: str, thread: str, text: str) -> None:
        here = trajdebug.current_run()
        assert here is not None
        here.state[f"thread:{thread}"] = [*here.state.get(f"thread:{thread}", []), text]

    @trajdebug.step(kind="tool")
    def route_check(team: str, ticket: str) -> str:
        if team not in ("network", "facilities"):
            raise ValueError(f"ticket {ticket} routed to a team that does not exist")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("helpdesk-threads", task="triage"):
        for t in tickets:
            info = fetch_ticket(t)
            ans = json.loads(triage([{"role": "system", "content": "Triage."}, {"role": "user", "content": json.dumps(info)}]))
            file_note(t, ans.get("duplicate_of", t), info["text"])
            if "team" in ans:
                route_check(ans["team"], t)
    return runs[0]


def test_a_note_appended_to_another_items_thread_is_no_misfiled_write() -> None:
    """The duplicate's note goes to the original's thread with the original's note kept: a merge, not an
    entry overwritten."""
    run = _threads()
    ctx = DiagnoseContext.build(run, diagnosers={"misfiled-write": misfiled_write})
    assert [e for s in run.steps for e in misfiled_write(s, ctx)] == []


_MEETINGS = {"M-1": "Weekly sync of the design team about the new logo.",
             "M-2": "Board meeting on the annual budget with the auditors.",
             "M-3": "Kick-off of the warehouse move with the logistics crew.",
             "M-4": "Quarterly review of the sales pipeline with the regional leads."}


def _rooms(clash: bool) -> Run:
    """Per meeting a model makes up a headcount (its job); a per-item check given that meeting's summary and
    the room's capacity (20 seats) fails on the last one's 26.  With ``clash`` the first meeting's made-up
    headcount is 20 too: equal to the capacity the check was given from the room, not handed on by that call."""
    heads = {"M-1": 20 if clash else 17, "M-2": 13, "M-3": 15, "M-4": 26}

    @trajdebug.step(kind="tool")
    def fetch_notes(meeting: str) -> dict[str, str]:
        return {"meeting": meeting, "notes": _MEETINGS[meeting]}

    @trajdebug.step(kind="llm")
    def summarise(messages: list[dict[str, str]]) -> str:
        m = json.loads(messages[-1]["content"])["meeting"]
        return json.dumps({"meeting": m, "headcount": heads[m]})

    @trajdebug.step(kind="parse")
    def read_summary(text: str) -> dict[str, Any]:
        return dict(json.loads(text))

    @trajdebug.step(kind="tool")
    def room_capacity(room: str) -> dict[str, Any]:
        return {"room": room, "seats": 20}

    @trajdebug.step(kind="tool")
    def check_room(summary: dict[str, Any], room: dict[str, Any]) -> str:
        if summary["headcount"] > room["seats"]:
            raise ValueError("the quarterly review needs more seats than room R-4 has (20)")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("offsite", task="offsite week 49"):
        room = room_capacity("R-4")
        for m in _MEETINGS:
            ask = [{"role": "system", "content": "Summarise the meeting notes as JSON."},
                   {"role": "user", "content": json.dumps(fetch_notes(m))}]
            check_room(read_summary(summarise(ask)), room)
    return runs[0]


@pytest.mark.parametrize("clash", [False, True])
def test_an_equal_value_from_elsewhere_is_not_another_calls_value_given(clash: bool) -> None:
    """The per-item check was given the last meeting's made-up 26 and the room's 20; another call's made-up 20
    equals the capacity by chance and never reached the check from that call: the 26 keeps its weight."""
    run = _rooms(clash)
    top = analyze(run, top=5, model=None).root_causes[0]
    assert run.step(top.step_id).name == "summarise"
    assert "M-4" in json.dumps(run.step(top.step_id).input)


_TICKETS = {"T-501": "printer jam floor 2", "T-502": "printer jam floor 2 again", "T-503": "vpn down for sales"}


def _duplicates(change: str) -> Run:
    """Per ticket a model names a team, or the ticket it duplicates; a duplicate updates the original's entry
    (``ticket:T-501``, its step given ``original='T-501'``): its priority rewritten as a float, or lowered, or
    its status escalated.  The third ticket's made-up team fails the dispatch."""

    @trajdebug.step(kind="tool")
    def fetch_ticket(ticket: str) -> dict[str, Any]:
        return {"ticket": ticket, "text": _TICKETS[ticket], "teams": ["facilities", "network", "identity"]}

    @trajdebug.step(kind="llm")
    def triage(messages: list[dict[str, str]]) -> str:
        t = json.loads(messages[-1]["content"])["ticket"]
        if t == "T-502":
            return json.dumps({"ticket": t, "duplicate_of": "T-501"})
        return json.dumps({"ticket": t, "team": {"T-501": "facilities", "T-503": "Quantum Ops"}[t], "priority": 3})

    @trajdebug.step(kind="state")
    def file_ticket(ticket: str, entry: dict[str, Any]) -> None:
        here = trajdebug.current_run()
        assert here is not None
        here.state[f"ticket:{ticket}"] = entry

    @trajdebug.step(kind="state")
    def note_duplicate(ticket: str, original: str) -> None:
        here = trajdebug.current_run()
        assert here is not None
        old = here.state[f"ticket:{original}"]
        new = dict(old)
        if change == "float":
            new["priority"] = float(old["priority"])
        elif change == "counter":
            new["priority"] = old["priority"] - 1
        else:
            new["status"] = "escalated"
        here.state[f"ticket:{original}"] = new

    @trajdebug.step(kind="tool")
    def dispatch(board: dict[str, Any]) -> str:
        if any(e["team"] not in ("facilities", "network", "identity") for e in board.values()):
            raise ValueError("dispatch failed: a ticket is assigned to a team that does not exist")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("helpdesk", task="triage queue 7"):
        for t in _TICKETS:
            info = fetch_ticket(t)
            ans = json.loads(triage([{"role": "system", "content": "Triage."}, {"role": "user", "content": json.dumps(info)}]))
            if "duplicate_of" in ans:
                note_duplicate(t, ans["duplicate_of"])
            else:
                file_ticket(t, {"team": ans["team"], "priority": ans["priority"], "status": "open"})
        here = trajdebug.current_run()
        assert here is not None
        dispatch(dict(here.state))
    return runs[0]


@pytest.mark.parametrize("change", ["float", "counter", "status"])
def test_an_update_of_the_original_items_entry_is_no_misfiled_write(change: str) -> None:
    """The duplicate's step was given the original's id (``original='T-501'``) and changed a field of its
    record: an update, not another item's entry overwritten; the made-up team stays the top cause."""
    run = _duplicates(change)
    ctx = DiagnoseContext.build(run, diagnosers={"misfiled-write": misfiled_write})
    assert [e for s in run.steps for e in misfiled_write(s, ctx)] == []
    top = analyze(run, top=5, model=None).root_causes[0]
    assert run.step(top.step_id).name == "triage"
    assert "T-503" in json.dumps(run.step(top.step_id).input)


def test_a_kept_record_with_a_number_rewritten_is_carried() -> None:
    """Numbers compare by value (``3`` is ``3.0``); a record with a field changed and the rest kept is an
    update; a record of the same fields with its id and values changed is not."""
    assert _misfiled._carries({"priority": 3}, {"priority": 3.0})
    assert _misfiled._updated({"team": "a", "priority": 3, "status": "open"}, {"team": "a", "priority": 2, "status": "open"})
    assert not _misfiled._updated({"dog": "D-102", "minutes": 45}, {"dog": "D-103", "minutes": 20})


def _cursor(n: int) -> Run:
    """A loop of ``n`` items, each writing a shared cursor and its own entry; the last check fails."""

    @trajdebug.step(kind="state")
    def save(item: str, kg: int) -> None:
        here = trajdebug.current_run()
        assert here is not None
        here.state["cursor"] = {"item": item, "kg": kg}
        here.state[f"est:{item}"] = {"item": item, "kg": kg}

    @trajdebug.step(kind="tool")
    def check(item: str, kg: int) -> str:
        if kg > 1000 + 7 * (n - 2):
            raise ValueError(f"item {item} is too heavy")
        return "ok"

    with deterministic(), capture_runs() as runs, _raises(True), trajdebug.run("weights", task="north line"):
        for k in range(n):
            save(f"I-{k}", 1000 + 7 * k)
            check(f"I-{k}", 1000 + 7 * k)
    return runs[0]


def test_misfiled_write_reads_each_steps_ids_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key every pass writes (a cursor) costs one scan of its writers, not one per pass: twice the items,
    about twice the ids read (not four times)."""
    read = [0]
    real = _misfiled._item_ids

    def counted(step: Any) -> Any:
        read[0] += 1
        return real(step)

    monkeypatch.setattr(_misfiled, "_item_ids", counted)
    counts = []
    for n in (40, 80):
        run = _cursor(n)
        ctx = DiagnoseContext.build(run, diagnosers={"misfiled-write": misfiled_write})
        read[0] = 0
        assert [e for s in run.steps for e in misfiled_write(s, ctx)] == []
        counts.append(read[0])
    assert counts[1] < 2.5 * counts[0]
