"""Value lineage: origins of values, derived numbers, droppers, value edges and local anomalies."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from tests.builders import step

import trajdebug
from trajdebug.analysis import analyze
from trajdebug.analysis.lineage import (
    Lineage,
    anomalies,
    counted_loops,
    derivation,
    run_units,
    slips,
    state_keys,
    update_index,
)
from trajdebug.analysis.lineage._derivation import half_converted, misconverted, relabelled
from trajdebug.core.model import Dependency, Run, Step
from trajdebug.core.values import atoms
from trajdebug.testing import capture_runs, deterministic


D = Dependency


_s = step


def _failed(step: Step, message: str) -> Step:
    """The step, ended with an error of this message."""
    import dataclasses

    from trajdebug.core.model import ErrorInfo

    return dataclasses.replace(step, status="error", error=ErrorInfo("ValueError", message))


def replace_input(step: Step, value: Any) -> Step:
    import dataclasses

    return dataclasses.replace(step, input=value)


def _run(*steps: Step) -> Run:
    return Run("r", "t", outcome="failure", steps=steps)


class TestOrigins:
    def test_a_value_originates_where_it_first_appears_without_being_given(self) -> None:
        """The origin of a value is the earliest step that produced it from inputs that did not hold it."""
        run = _run(
            _s("u", "ask", "input", 1, None, "book four nights in Lisbon"),
            _s("l", "plan", "llm", 3, {"request": "book four nights in Lisbon"}, {"nights": 3}, "u"),
            _s("b", "book", "tool", 5, {"nights": 3}, {"booking": "B-1", "nights": 3}, "l"),
        )
        lin = Lineage(run)
        [three] = [a for a in lin.view("b").inputs if a.field == "nights"]
        assert lin.origin(three, before=2).step_id == "l"
        # "four" is a number the model was given: 4 is not introduced by it, 3 is.
        assert [a.raw for a in lin.introduced("l")] == ["3"]

    def test_a_value_keyed_by_a_name_originates_at_the_record_naming_it(self) -> None:
        """A small number kept under a person's name (a kiln rota's ``{"Ida Moss": 2}``) comes from the lookup
        whose record names that person, not from an earlier record holding the same number in another field."""
        run = _run(
            _s("a", "potter", "tool", 1, {"who": "Bo Reyes"}, {"name": "Bo Reyes", "kiln": 4, "glazes": 2}),
            _s("b", "potter", "tool", 3, {"who": "Ida Moss"}, {"name": "Ida Moss", "kiln": 2, "glazes": 5}),
            _s("r", "rota", "output", 5, {"rota": {"Bo Reyes": 4, "Ida Moss": 2}}, "ok", "a", "b"),
        )
        lin = Lineage(run)
        [two] = [a for a in lin.view("r").inputs if a.field == "ida moss"]
        assert lin.origin(two, before=2).step_id == "b"

    def test_a_value_the_run_was_given_has_no_origin_step(self) -> None:
        """A value every holder was given (the user's own) originates outside the run's steps."""
        run = _run(
            _s("u", "ask", "input", 1, {"city": "Paris"}, {"city": "Paris"}),
            _s("s", "search", "tool", 3, {"city": "Paris"}, [{"name": "Chez A", "city": "Paris"}], "u"),
        )
        lin = Lineage(run)
        [paris] = [a for a in lin.view("s").outputs if a.field == "city"]
        assert lin.origin(paris, before=2).step_id is None

    def test_a_value_the_outermost_step_was_given_by_name_has_no_origin_step(self) -> None:
        """A graph's initial state (the outermost step's input) gave ``B: 5``: a tool inside stating 5 under another
        name (``minutes``) did not introduce it; a 5 the failing step got under that other name still came from the tool."""
        roster = {"S": 8, "B": 5}
        run = _run(
            _s("g", "graph", "agent", 1, {"roster": roster, "ask": "plan"}, {"roster": roster}),
            _s("t", "get_piece", "tool", 2, {"piece_id": "rep-0004"}, {"minutes": 5}, parent_id="g"),
            _s("f", "assign", "tool", 4, {"roster": roster, "minutes": 5}, None, "t", parent_id="g"),
        )
        lin = Lineage(run)
        by_field = {a.field: a for a in lin.view("f").inputs if a.raw == "5"}
        assert lin.origin(by_field["b"], before=2).step_id is None
        assert lin.origin(by_field["minutes"], before=2).step_id == "t"

    def test_a_number_an_earlier_step_held_is_not_introduced_by_a_later_step_writing_it_again(self) -> None:
        """The booking gave age 14; a kart tool's ballast of 14 kg, later, is no origin of a 14 a failure's message
        names: the run had the value before.  A consumer holding it by the tool's own name took it from the tool."""
        run = _run(
            _s("b", "booking", "input", 1, {"text": "Tolu, age 14"}, {"age": 14}),
            _s("k", "allocate_kart", "tool", 3, {"driver": "Tolu"}, {"ballast_kg": 14}, "b"),
            _failed(_s("v", "validate", "condition", 5, {"age": 14, "ballast_kg": 14}, None, "b", "k"),
                    "Tolu (age 14) is allocated an adult kart"),
        )
        lin = Lineage(run)
        [said] = [a for a in atoms("Tolu (age 14) is allocated an adult kart") if a.kind == "number"]
        assert lin.origin(said, before=2).step_id is None
        [ballast] = [a for a in lin.view("v").inputs if a.field == "ballast_kg"]
        assert lin.origin(ballast, before=2).step_id == "k"

    def test_a_wrong_number_equal_to_an_earlier_id_still_originates_where_it_was_written(self) -> None:
        """The request's order id is 250 and the charge tool wrongly charged 250: "charged 250 is above the quoted price"
        names the charge, not the id (the message writes no ``order_id`` in front of it), so the tool introduced
        it, though the check was also handed the id (rev53l)."""
        run = _run(
            _s("o", "request", "input", 1, {"text": "order 250, 15 lamps"}, {"order_id": 250, "quantity": 15}),
            _s("c", "charge_card", "tool", 3, {"card": "visa"}, {"charged": 250}, "o"),
            _failed(_s("v", "validate", "condition", 5, {"order_id": 250, "charged": 250}, None, "o", "c"),
                    "charged 250 is above the quoted price"),
        )
        [said] = [a for a in atoms("charged 250 is above the quoted price") if a.kind == "number"]
        assert Lineage(run).origin(said, before=2).step_id == "c"

    def test_a_number_only_the_later_step_held_still_originates_there(self) -> None:
        """With age 12 in the booking, the kart tool's 14 is its own: a failure naming 14 traces to it; and a step
        that encloses the tool (given what it made) is no earlier holder."""
        run = _run(
            _s("b", "booking", "input", 1, {"text": "Tolu, age 12"}, {"age": 12}),
            _s("a", "karts", "agent", 2, {"driver": "Tolu"}, {"ballast_kg": 14}, "b"),
            _s("k", "allocate_kart", "tool", 3, {"driver": "Tolu"}, {"ballast_kg": 14}, parent_id="a"),
            _s("v", "validate", "condition", 5, {"age": 12, "ballast_kg": 14}, None, "b", "a"),
        )
        [said] = [a for a in atoms("Tolu is given 14 kg of ballast") if a.kind == "number"]
        assert Lineage(run).origin(said, before=3).step_id == "k"

    def test_a_number_the_consumer_got_from_the_later_step_alone_originates_there(self) -> None:
        """A model was given 3.2 hours; a pricing tool later answered a rate of 3.2 and the check was handed the rate
        alone: the 3.2 its failure names is the tool's, whatever an earlier step held by chance."""
        run = _run(
            _s("m", "plan", "llm", 1, {"hours": 3.2}, {"plan": "steam clean"}),
            _s("p", "price_job", "tool", 3, {"plan": "steam clean"}, {"rate_per_m2": 3.2}, "m"),
            _s("v", "submit", "tool", 5, {"rate_per_m2": 3.2}, None, "p"),
        )
        [said] = [a for a in atoms("rate 3.20 is not the wool rate") if a.kind == "number"]
        assert Lineage(run).origin(said, before=2).step_id == "p"

    def test_an_enclosing_step_does_not_introduce_what_its_children_made(self) -> None:
        """An agent span's output holds its child's value; the child, not the agent, introduced it."""
        run = _run(
            _s("a", "agent", "agent", 1, {"task": "rate?"}, {"rate": 1.0905}),
            _s("t", "get_rate", "tool", 2, {"pair": "USD/EUR"}, {"rate": 1.0905}, parent_id="a"),
        )
        lin = Lineage(run)
        assert [a.raw for a in lin.introduced("a")] == []
        assert [a.raw for a in lin.introduced("t")] == ["1.0905"]


class TestDerivations:
    def test_a_total_of_listed_items_is_derived_from_them(self) -> None:
        """A number equal to the sum of a run of given numbers, at its written precision, is computed from them."""
        run = _run(
            _s("s", "summarize", "other", 1, {"lines": [412.30, 38.40, 751.35]}, {"total": "1,202.05"})
        )
        lin = Lineage(run)
        [total] = lin.view("s").outputs
        d = derivation(lin.view("s"), total)
        assert d is not None and d.op == "sum" and len(d.operands) == 3

    def test_a_rounded_ratio_is_derived(self) -> None:
        """A density written with one decimal is the ratio of the given numbers rounded to that precision."""
        run = _run(
            _s("c", "density", "other", 1, {"population": 116000, "area_km2": 854300}, {"density": "0.1"})
        )
        lin = Lineage(run)
        d = derivation(lin.view("c"), lin.view("c").outputs[0])
        assert d is not None and d.formula == "div(population,area_km2)"

    def test_a_date_a_given_number_of_days_after_a_given_date_is_derived(self) -> None:
        """A check-out four nights after the check-in is computed from both; a date no given count reaches is not."""
        run = _run(
            _s("r", "reserve", "tool", 1, {"check_in": "2025-06-03", "nights": 4}, {"check_out": "2025-06-07"}),
            _s("q", "reserve", "tool", 3, {"check_in": "2025-06-03", "nights": 4}, {"check_out": "2025-06-20"}),
        )
        lin = Lineage(run)
        [out] = lin.view("r").outputs
        d = derivation(lin.view("r"), out)
        assert d is not None and d.op == "date+days" and {a.field for a in d.operands} == {"check_in", "nights"}
        [other] = lin.view("q").outputs
        assert derivation(lin.view("q"), other) is None

    def test_a_time_a_given_number_of_minutes_after_a_given_time_is_derived(self) -> None:
        """An arrival 32 minutes after a departure is computed from both, across midnight too; a time no given
        count of minutes reaches is not."""
        run = _run(
            _s("a", "arrive", "other", 1, {"start": "08:56", "minutes": 32}, {"end": "09:28"}),
            _s("n", "arrive", "other", 3, {"start": "23:50", "minutes": 25}, {"end": "00:15"}),
            _s("q", "arrive", "other", 5, {"start": "08:56", "minutes": 32}, {"end": "11:05"}),
        )
        lin = Lineage(run)
        for sid in ("a", "n"):
            d = derivation(lin.view(sid), lin.view(sid).outputs[0])
            assert d is not None and d.formula == "time+minutes(start,minutes)"
        assert derivation(lin.view("q"), lin.view("q").outputs[0]) is None

    def test_a_percentage_of_a_given_amount_is_derived(self) -> None:
        """A duty written with two decimals is a given value times a given rate in per cent; a whole number is so
        only when the product is exact (rounded, too many pairs would fit)."""
        run = _run(
            _s("d", "duty", "other", 1, {"value_eur": 3451.5, "rate_pct": 12.0}, {"duty_eur": "414.18"}),
            _s("w", "units", "other", 3, {"stock": 37.0, "share_pct": 11.0}, {"order": "4"}),
        )
        lin = Lineage(run)
        d = derivation(lin.view("d"), lin.view("d").outputs[0])
        assert d is not None and d.formula == "pct(value_eur,rate_pct)"
        assert derivation(lin.view("w"), lin.view("w").outputs[0]) is None

    def test_a_looked_up_number_has_no_derivation(self) -> None:
        """A number no simple formula of the inputs explains was made up or looked up."""
        run = _run(_s("t", "get_rate", "tool", 1, {"base": "USD", "quote": "EUR"}, {"rate": 1.0905}))
        lin = Lineage(run)
        assert derivation(lin.view("t"), lin.view("t").outputs[0]) is None


class TestDroppersAndEdges:
    def test_a_step_given_a_value_that_it_did_not_pass_on_dropped_it(self) -> None:
        """The droppers of a value are the steps whose input held it and whose output does not."""
        run = _run(
            _s("u", "ask", "input", 1, None, {"q": "GDP of Rome"}),
            _s("p", "plan", "llm", 3, {"q": "GDP of Rome"}, {"query": "history of Rome"}, "u"),
        )
        lin = Lineage(run)
        [gdp] = [a for a in atoms("the answer does not mention 'GDP'") if a.raw == "GDP"]
        assert lin.droppers(gdp, ["u", "p"]) == ["p"]

    def test_a_writer_that_stored_a_value_in_state_passed_it_on(self) -> None:
        """A state writer returning a count passed on the rows it was given through the state it wrote; one that
        stored other rows dropped them."""
        rows = {"rows": [{"time": "10:00", "height": 1.55}]}

        def write(sid: str, start: int, stored: Any) -> Step:
            return _s(sid, "store", "state", start, rows, "stored", attributes={"state_values": {"tides": stored}})

        run = _run(write("w", 1, rows["rows"]), write("x", 3, [{"time": "11:00", "height": 2.7}]))
        [ten] = [a for a in atoms("grounded at 10:00") if a.raw == "10:00"]
        assert Lineage(run).droppers(ten, ["w", "x"]) == ["x"]

    def test_small_values_give_value_edges(self) -> None:
        """A number a later step was given links it to the step that produced it, with no recorded edge."""
        run = _run(
            _s("a", "count_guests", "other", 1, {"text": "party of seven"}, {"guests": 7}),
            _s("b", "book", "tool", 3, {"table_for": 7}, "ok"),
        )
        edges = Lineage(run).value_edges()
        assert [(d.step_id, d.origin, d.kind) for d in edges["b"]] == [("a", "inferred", "data")]

    def test_a_value_made_inside_a_wrapper_of_a_wrapper_originates_inside(self) -> None:
        """A tool that runs a sub-agent (whose own span returned nothing) did not introduce what the sub-agent's tool computed."""
        run = _run(
            _s("w", "analyst", "tool", 1, {"input": "price it"}, {"saving": 17993.04}),
            _s("a", "analyst", "agent", 2, None, None, parent_id="w"),
            _s("c", "monthly_cost", "tool", 3, {"hourly": 2.054}, {"monthly": 17993.04}, parent_id="a"),
        )
        lin = Lineage(run)
        assert [a.raw for a in lin.introduced("w")] == []
        [saving] = [a for a in lin.view("w").outputs if a.field == "saving"]
        assert lin.origin(saving, before=10).step_id == "c"


class TestAnomalies:
    def _signals(self, step: Step) -> list[str]:
        lin = Lineage(_run(step))
        return [e.diagnoser for e in anomalies(step, lin.view(step.step_id))]

    def test_an_output_field_that_contradicts_the_input_is_a_conflict(self) -> None:
        """Items whose city is not the city the search was given are a conflict of the search."""
        step = _s(
            "s",
            "search",
            "tool",
            1,
            {"city": "Paris"},
            [{"name": "A", "city": "Lyon"}, {"name": "B", "city": "Lyon"}],
        )
        assert self._signals(step) == ["lineage:conflict"]

    def test_a_value_given_as_several_items_and_answered_split_is_no_conflict(self) -> None:
        """A booking given rooms='A1-A4' that answers the rooms A1 and A4 split what it was given; one given A1-A4
        that answers B12 and B14 did not."""

        def hold(rooms: list[str]) -> Step:
            return _s("h", "book_rooms", "tool", 1, {"site": "S-1", "rooms": "A1-A4"}, {"booking": "B-1", "rooms": rooms})

        assert "lineage:conflict" not in self._signals(hold(["A1", "A4"]))
        assert "lineage:conflict" in self._signals(hold(["B12", "B14"]))

    @staticmethod
    def _kennel_calls(answers: list[str]) -> list[Step]:
        """A graph node's calls walking the kennels by a counter: call i is handed the whole state (the list, the
        counter at i, the kennel it last worked on, none at first) and answers a kennel."""
        kennels = ["K-101", "K-205", "K-317"]
        return [
            _s(f"n{i}", "next_kennel", "other", 1 + 2 * i, {"kennels": kennels, "position": i, "kennel": kennels[i - 1] if i else None, "walker": "Ines"}, {"kennel": k})
            for i, k in enumerate(answers)
        ]

    def _loop_signals(self, calls: list[Step], at: int) -> list[str]:
        step = calls[at]
        lin = Lineage(_run(*calls))
        return [e.diagnoser for e in anomalies(step, lin.view(step.step_id), loops=counted_loops(calls))]

    def test_a_loop_whose_calls_walk_the_list_by_its_counter_contradicts_nothing(self) -> None:
        """A node whose calls see the counter rise (0, 1, 2) and each answer the kennel at it is a loop moving
        on: the call at 1 that replaces the kennel it last worked on with the one at the counter contradicts
        nothing."""
        calls = self._kennel_calls(["K-101", "K-205", "K-317"])
        assert counted_loops(calls) == {((), "kennels", "position")}
        assert self._loop_signals(calls, 1) == []

    def test_a_call_answering_an_item_its_counter_does_not_name_breaks_the_loop(self) -> None:
        """When the call at counter 1 answers the third kennel, the calls no longer walk the list by the counter:
        no loop is proven and that call answered another item of the list."""
        calls = self._kennel_calls(["K-101", "K-317", "K-317"])
        assert counted_loops(calls) == frozenset()
        assert self._loop_signals(calls, 1) != []

    def test_a_step_writing_its_counter_back_one_higher_moves_on(self) -> None:
        """A single call handed the counter at 1 that answers the kennel at it and writes the counter back as 2
        proves its own loop: it contradicts nothing."""
        state = {"kennels": ["K-101", "K-205", "K-317"], "position": 1, "kennel": "K-101", "walker": "Ines"}
        assert self._signals(_s("n", "next_kennel", "other", 1, state, {"kennel": "K-205", "position": 2})) == []

    def test_an_unrelated_int_beside_the_list_leaves_the_wrong_pick_flagged(self) -> None:
        """A watering step handed the beds, the bed to water (B-7) and an ``attempt: 1`` (or ``page: 1``) that
        answers the next bed (B-8) picked the wrong one: an int that equals the neighbour's position but never
        rises from call to call is no counter."""
        for extra in ({"attempt": 1}, {"page": 1}):
            given = {"beds": ["B-7", "B-8", "B-9"], "bed": "B-7", **extra}
            step = _s("w", "water_bed", "tool", 1, given, {"bed": "B-8", "litres": 4})
            again = _s("v", "water_bed", "tool", 3, given, {"bed": "B-8", "litres": 4})
            assert counted_loops([step, again]) == frozenset()
            assert {"lineage:conflict", "lineage:wrong-record"} <= set(self._signals(step))

    def test_a_retry_answering_the_item_it_holds_proves_no_loop(self) -> None:
        """A court booking tried at ``attempt: 0`` answers the court it was asked about (C-1), and its retry at
        ``attempt: 1``, still asked about C-1, answers the neighbour C-2: the first call did not move on, so the
        rising attempt is no loop's counter and the retry's pick stays flagged."""
        courts = ["C-1", "C-2", "C-3"]
        first = _s("r0", "book_court", "tool", 1, {"courts": courts, "court": "C-1", "attempt": 0}, {"court": "C-1", "player": "Noor"})
        retry = _s("r1", "book_court", "tool", 3, {"courts": courts, "court": "C-1", "attempt": 1}, {"court": "C-2", "player": "Yara"})
        assert counted_loops([first, retry]) == frozenset()
        assert {"lineage:conflict", "lineage:wrong-record"} <= set(self._loop_signals([first, retry], 1))

    def test_a_counter_field_answered_as_an_object_without_a_yes_no_compare_is_no_counter(self) -> None:
        """A bed-watering step built in Python whose answer holds, under its counter's key, an object whose ``==``
        raises is read without error: that object is no counter written back, and the neighbour bed it answered
        stays flagged."""

        class Gauge:
            def __eq__(self, other: object) -> bool:
                raise RuntimeError("no compare")

            __hash__ = object.__hash__

        given = {"beds": ["B-7", "B-8", "B-9"], "slot": 1, "bed": "B-7"}
        step = _s("w", "water_bed", "tool", 1, given, {"bed": "B-8", "slot": Gauge()})
        assert {"lineage:conflict", "lineage:wrong-record"} <= set(self._signals(step))

    def test_a_record_pairing_two_given_ids_across_their_records_is_crossed(self) -> None:
        """A ledger writer given O-5's payment PM-5 (and the previous one, PM-3 for O-3) that books O-5 with PM-3
        joined the wrong records; booking O-5 with PM-5 is faithful."""

        def log(payment: str) -> Step:
            given = {
                "log": [{"order": "O-3", "payment": "PM-3"}],
                "payment": {"order": "O-5", "payment": "PM-5"},
                "previous": {"order": "O-3", "payment": "PM-3"},
            }
            out = [{"order": "O-3", "payment": "PM-3"}, {"order": "O-5", "payment": payment}]
            return _s("l", "post_payment", "other", 1, given, out)

        assert "lineage:crossed" in self._signals(log("PM-3"))
        assert "lineage:crossed" not in self._signals(log("PM-5"))

    def test_an_answer_dated_from_another_record_of_its_kind_is_crossed(self) -> None:
        """A model scheduling a harvest crew for lot VH-2's press, given that lot and the previous one, that dates the
        schedule with the previous lot's start answered with a value of the wrong record; dating it with VH-2's
        own start, being given one lot only, or both as items of one list (a queue to walk), is no finding."""

        def schedule(meet: str, *, previous: bool = True, queue: bool = False) -> Step:
            this = {"lot": "VH-2", "estate": "Brookmere", "start": "2027-03-15", "press": "East Press"}
            last = {"lot": "VH-0", "estate": "Saltcombe", "start": "2027-03-09", "press": "Cellar Press"}
            ticket: dict[str, Any] = {"queue": [this, last]} if queue else {"lot": this}
            if previous and not queue:
                ticket["earlier"] = [last]
            msgs = [{"role": "user", "content": json.dumps(ticket)}]
            answer = {"role": "assistant", "content": json.dumps({"meet": f"{meet} 06:15", "press": "East Press"})}
            return _s("m", "ChatOpenAI", "llm", 1, {"messages": msgs}, answer)

        assert "lineage:crossed" in self._signals(schedule("2027-03-09"))
        assert "lineage:crossed" not in self._signals(schedule("2027-03-15"))
        assert "lineage:crossed" not in self._signals(schedule("2027-03-09", previous=False))
        assert "lineage:crossed" not in self._signals(schedule("2027-03-09", queue=True))

    def test_picking_a_record_another_matches_better_is_a_wrong_record(self) -> None:
        """A model picking the return of another order, when the list holds the one for the order asked about, picked the wrong record."""
        returns = json.dumps(
            [
                {"rma": "RMA-1", "order": "A-2", "sku": "GLV-L"},
                {"rma": "RMA-9", "order": "A-7", "sku": "JKT-M"},
            ]
        )

        def pick(rma: str) -> Step:
            msgs = [
                {"role": "user", "content": "Has the return for order A-7, item JKT-M, arrived?"},
                {"role": "tool", "content": returns},
            ]
            return _s(
                "m",
                "chat",
                "llm",
                1,
                {"messages": msgs},
                {"tool_calls": [{"name": "inspect", "arguments": {"rma": rma}}]},
            )

        assert self._signals(pick("RMA-1")) == ["lineage:wrong-record"]
        assert self._signals(pick("RMA-9")) == []

    def test_picking_the_namesake_born_on_another_day_is_a_wrong_record(self) -> None:
        """Of two people of one name, a model given the birth date of one (ISO dates, ``1991-09-30``) that picks
        the other picked the wrong record."""

        def pick(cid: str) -> Step:
            question = json.dumps(
                {
                    "name": "Anna Berg",
                    "date_of_birth": "1991-09-30",
                    "candidates": [
                        {"customer_id": "TC-1001", "name": "Anna Berg", "dob": "1984-02-11"},
                        {"customer_id": "TC-1002", "name": "Anna Berg", "dob": "1991-09-30"},
                    ],
                }
            )
            return _s("m", "pick_match", "llm", 1, {"question": question}, cid)

        assert self._signals(pick("TC-1001")) == ["lineage:wrong-record"]
        assert self._signals(pick("TC-1002")) == []

    def test_walking_a_list_in_a_conversation_picks_no_wrong_record(self) -> None:
        """A model taking the next line of an order, after its own calls for the first, picked nothing wrong: what is asked is what the user said."""
        lines = json.dumps({"lines": [{"sku": "BAG-1", "qty": 10}, {"sku": "BOT-7", "qty": 8}]})
        msgs = [
            {"role": "user", "content": "Pick order SO-4 in this wave."},
            {"role": "assistant", "tool_calls": [{"name": "get_order", "arguments": {"order_id": "SO-4"}}]},
            {"role": "tool", "content": lines},
            {"role": "assistant", "tool_calls": [{"name": "locate", "arguments": {"sku": "BAG-1"}}]},
            {"role": "tool", "content": json.dumps([{"bin": "E-1", "on_hand": 25}])},
            {
                "role": "assistant",
                "tool_calls": [{"name": "reserve", "arguments": {"sku": "BAG-1", "bin": "E-1"}}],
            },
        ]
        step = _s(
            "m",
            "chat",
            "llm",
            1,
            {"messages": msgs},
            {"tool_calls": [{"name": "locate", "arguments": {"sku": "BOT-7"}}]},
        )
        assert self._signals(step) == []

    def test_a_record_a_tool_looked_up_asks_what_the_pick_is_for(self) -> None:
        """A model that looked up the car the user named (one record: plug ccs) and then picks the chademo charger
        of two listed, where the other is ccs, picked the wrong record; picking the ccs one is right."""
        chargers = json.dumps([{"station": "ST-A1", "plug": "chademo"}, {"station": "ST-B2", "plug": "ccs"}])

        def pick(station: str) -> Step:
            msgs = [
                {"role": "user", "content": "Find a charger for car EV-311."},
                {"role": "assistant", "tool_calls": [{"id": "c1", "name": "get_car", "arguments": {"car": "EV-311"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"car": "EV-311", "plug": "ccs"})},
                {"role": "tool", "content": chargers},
            ]
            out = {"tool_calls": [{"name": "book", "arguments": {"station": station}}]}
            return _s("m", "chat", "llm", 1, {"messages": msgs}, out)

        assert self._signals(pick("ST-A1")) == ["lineage:wrong-record"]
        assert self._signals(pick("ST-B2")) == []

    def test_records_written_in_the_users_message_ask_nothing_about_themselves(self) -> None:
        """A prompt holding the slot list as JSON asks only what it says outside the list: the 09:00 slot it picked, as the note asks, is no wrong record."""
        slots = [
            {"slot": "RI-1207-09", "date": "2026-12-07", "time": "09:00", "minutes": 30},
            {"slot": "RI-1207-10", "date": "2026-12-07", "time": "10:00", "minutes": 60},
            {"slot": "RI-1207-14", "date": "2026-12-07", "time": "14:00", "minutes": 30},
        ]
        prompt = json.dumps({"notes": ["P-2201: available from 09:00."], "slots": slots})
        msgs = [{"role": "system", "content": "Pick the earliest slot."}, {"role": "user", "content": prompt}]
        step = _s("m", "chat", "llm", 1, {"messages": msgs}, {"content": "Book RI-1207-09 (2026-12-07 09:00)."})
        assert self._signals(step) == []
        # The user naming another record outside the list still asks about it.
        asked = json.dumps({"notes": ["P-2201: wants 10:00 on 2026-12-07."], "slots": slots})
        msgs2 = [msgs[0], {"role": "user", "content": asked}]
        picking = _s("m", "chat", "llm", 1, {"messages": msgs2}, {"content": "Book RI-1207-09 (2026-12-07 09:00)."})
        assert self._signals(picking) == ["lineage:wrong-record"]

    def test_passing_on_an_earlier_pick_is_no_second_wrong_record(self) -> None:
        """The turn that reports the inspection of the record an earlier turn picked passes that pick on; only the picking turn is flagged."""
        returns = json.dumps([{"rma": "RMA-1", "order": "A-2"}, {"rma": "RMA-9", "order": "A-7"}])
        msgs = [
            {"role": "user", "content": "Has the return for order A-7 arrived?"},
            {"role": "tool", "content": returns},
            {"role": "assistant", "tool_calls": [{"name": "inspect", "arguments": {"rma": "RMA-1"}}]},
            {"role": "tool", "content": json.dumps({"rma": "RMA-1", "condition": "unopened"})},
        ]
        step = _s("m", "chat", "llm", 1, {"messages": msgs}, {"content": "Return RMA-1 received, unopened."})
        assert self._signals(step) == []
        picking = _s("p", "chat", "llm", 1, {"messages": msgs[:2]}, {"tool_calls": [{"name": "inspect", "arguments": {"rma": "RMA-1"}}]})
        assert self._signals(picking) == ["lineage:wrong-record"]

    def test_a_record_let_through_a_filter_the_input_fixes_is_admitted(self) -> None:
        """A context builder listing a remembered Jersey City unit among Hoboken ones, for a Hoboken request, admitted it."""
        given = {
            "criteria": {"city": "Hoboken", "beds": 2},
            "memory": [{"id": "JC-244", "city": "Jersey City"}],
            "found": [{"id": "HB-101", "city": "Hoboken"}, {"id": "HB-114", "city": "Hoboken"}],
        }
        listed = given["found"] + given["memory"]  # type: ignore[operator]
        mixed = _s("c", "assemble", "other", 1, given, "RANK\n" + json.dumps({"candidates": listed}))
        clean = _s("c", "assemble", "other", 1, given, "RANK\n" + json.dumps({"candidates": given["found"]}))
        assert self._signals(mixed) == ["lineage:admitted"]
        assert self._signals(clean) == []

    def test_a_result_breaking_the_bound_its_request_set_is_admitted(self) -> None:
        """A room lookup asked for min_capacity 30 that returns a room of 24 seats let it through; 32 seats is fine."""

        def lookup(seats: int) -> Step:
            return _s("r", "room_lookup", "tool", 1, {"subject": "Chemistry", "min_capacity": 30}, {"room": "LAB-2", "capacity": seats})

        assert self._signals(lookup(24)) == ["lineage:admitted"]
        assert self._signals(lookup(32)) == []
        priced = _s("s", "search", "tool", 1, {"price_max": 100}, [{"id": "A", "price": 80}, {"id": "B", "price": 140}])
        assert self._signals(priced) == ["lineage:admitted"]

    def test_only_named_bounds_bound_and_both_sides_of_a_range_count(self) -> None:
        """min_/max_ fields (or minX/xMax) bound a result, both sides of one range at once; "minutes" or "admin" bound nothing; a huge int is no bound and no crash."""
        both = {"min_price": 50, "price_max": 100}
        assert self._signals(_s("s", "search", "tool", 1, both, [{"id": "A", "price": 40}])) == ["lineage:admitted"]
        assert self._signals(_s("s", "search", "tool", 1, both, [{"id": "A", "price": 140}])) == ["lineage:admitted"]
        assert self._signals(_s("s", "search", "tool", 1, both, [{"id": "A", "price": 80}])) == []
        words = {"minutes": 30, "admin": 1, "max_size": 10**400}
        assert self._signals(_s("s", "search", "tool", 1, words, [{"id": "A", "utes": 5, "size": 10**401}])) == []

    def test_a_sentinel_date_is_no_crash(self) -> None:
        """A "valid until 9999-12-31" beside a count of days is read, not pushed off the calendar."""
        run = _run(_s("r", "renew", "tool", 1, {"valid_until": "9999-12-31", "days": 30}, {"renewed": "2025-06-07"}))
        lin = Lineage(run)
        [out] = lin.view("r").outputs
        assert derivation(lin.view("r"), out) is None

    def test_a_dropped_sign_and_a_cut_separator_are_damaged_numbers(self) -> None:
        """A parser that drops a minus sign, or stops at a thousands separator, altered a given number."""
        sign = _s("p", "parse", "parse", 1, {"text": "refund -180.00"}, {"amount": 180.0})
        cut = _s("q", "parse", "parse", 1, {"text": "Total: 1,250.00"}, {"amount": 1.0})
        assert self._signals(sign) == ["lineage:altered"]
        assert self._signals(cut) == ["lineage:altered"]

    def test_a_counter_is_no_power_of_ten_of_a_length(self) -> None:
        """A one-letter field (a loop counter ``i=2``) is no relative of ``chainage_m=200``: the counter is not
        the length scaled by 10^-2; the same field scaled still is."""
        counter = _s("n", "next_alert", "other", 1, {"valve": {"chainage_m": 200}}, {"i": 2})
        assert self._signals(counter) == []
        scaled = _s("p", "parse", "parse", 1, {"chainage_m": 200}, {"chainage_m": 2})
        assert self._signals(scaled) == ["lineage:altered"]

    def test_a_given_one_scales_to_no_value(self) -> None:
        """A catalogue tool given the index ``i=1`` answering a line "SKU-220|1|249.00|10%": its 10% is no "1
        times 10^1" (every power of ten is), while a given quantity 2 answered as 20 still is a scaling (nu27)."""
        fetch = _s("f", "fetch", "tool", 1, {"i": 1}, "SKU-220|1|249.00|10%")
        assert "lineage:altered" not in self._signals(fetch)
        scaled = _s("q", "parse", "parse", 1, {"qty": 2}, {"qty": 20})
        assert self._signals(scaled) == ["lineage:altered"]
        # A given 1 under the field it is answered in is scaled all the same: a weight of 1 kg read as 1000 g
        # (rev54b, p6).
        grams = _s("n", "normalize", "parse", 1, {"id": "PX-1", "weight_kg": 1}, {"id": "PX-1", "weight_kg": 1000})
        assert self._signals(grams) == ["lineage:altered"]

    def test_a_wrapper_is_not_judged_for_what_it_answered_of_its_own(self) -> None:
        """A rate wrapper given city='NYC', currency='USD' answering city='New York', currency='EUR' (its call
        answered 'NYC' in dollars): it normalised an alias and converted a unit, its job, no contradiction.  A
        wrapper's values are not read for conflicts (rev54b, p4b: nu27's finding 6 dropped, no narrower reading
        told a served cached record from a normalised one)."""
        wrapper = _s("w", "fetch_rate", "other", 1, {"city": "NYC", "currency": "USD"}, {"city": "New York", "currency": "EUR", "per_night": 184.0})
        view = Lineage(_run(wrapper)).view("w")
        assert list(anomalies(wrapper, view, True)) == []

    def test_a_scaling_apart_from_the_steps_conversion_is_named_first(self) -> None:
        """A step that turns grams into kilograms for every field but one, scaled by another power of ten,
        names that one first; the others stay evidence, after it."""
        grams = {"oats_g": 2500, "honey_g": 1400, "salt_g": 300}
        step = _s("c", "to_kilos", "other", 1, grams, {"oats": 2.5, "honey": 14.0, "salt": 0.3})
        found = list(anomalies(step, Lineage(_run(step)).view("c")))
        assert [e.diagnoser for e in found] == ["lineage:altered"] * 3
        assert found[0].reason == "output honey=14.0 is the given 1400 times 10^-2"

    def test_a_column_the_output_records_lack_is_dropped(self) -> None:
        """A table's column missing from the records a parser returned, the others kept, is a dropped column."""
        step = _s(
            "p",
            "parse_stock",
            "parse",
            1,
            {"csv": "warehouse,on_hand,reserved,incoming\nLIS,50,30,0\n"},
            [{"warehouse": "LIS", "on_hand": 50, "incoming": 0}],
        )
        assert self._signals(step) == ["lineage:dropped-column"]

    def test_faithful_transformations_raise_nothing(self) -> None:
        """A search that kept its filter and a parser that kept its numbers give no signal."""
        ok_search = _s("s", "search", "tool", 1, {"city": "Paris"}, [{"name": "A", "city": "Paris"}])
        ok_parse = _s("p", "parse", "parse", 1, {"text": "refund -180.00"}, {"amount": -180.0})
        assert self._signals(ok_search) == [] and self._signals(ok_parse) == []


def _expense(rate: float, *, per_line_slip: float = 1.0) -> Run:
    """Receipts converted line by line (an amount times a looked-up rate), then totalled."""
    steps = [
        _s(
            "r",
            "load_receipts",
            "tool",
            1,
            {"id": "x"},
            [{"amount": 412.3, "currency": "EUR"}, {"amount": 689.0, "currency": "USD"}],
        ),
        _s("fx", "get_fx_rate", "tool", 2, {"base": "USD"}, {"rate": rate}),
        _s(
            "c",
            "convert_line",
            "other",
            3,
            {"amount": 689.0, "rate": rate},
            {"amount_eur": round(689.0 * rate, 2)},
            "r",
            "fx",
        ),
        _s(
            "t",
            "summarize",
            "other",
            4,
            {"lines": [{"amount_eur": 412.3}, {"amount_eur": round(689.0 * rate, 2)}]},
            {"total_eur": round(412.3 + round(689.0 * rate, 2), 2)},
            "c",
        ),
    ]
    return _run(*steps)


class TestWhatIf:
    def test_an_inverted_rate_is_found_by_replaying_the_total(self) -> None:
        """The total the failure expected comes back when the looked-up rate is inverted: the lookup (and the product) are named."""
        run = _expense(1.0905)
        lin = Lineage(run)
        total = next(a for a in lin.view("t").outputs if a.field == "total_eur")
        found = slips(lin, total, len(run.steps), round(412.3 + 689.0 / 1.0905, 2), "1,044.12")
        assert {(s.step_id, s.what) for s in found} == {
            ("fx", "inverted"),
            ("c", "computed by mul where div fits"),
        }

    def test_an_operand_taken_where_another_given_number_fits_is_the_operands_slip(self) -> None:
        """A fuel need worked out from a load in an old log line (36 kW) where the recent line it was also given
        (52.5 kW) gives the fuel the failure expects (525) is the log's slip; a target no given load reaches says nothing."""
        notes = ["load 36 kW at commissioning", "2026-03-14 load 52.5 kW"]
        run = _run(
            _s("n", "get_log", "tool", 1, {"unit": "GEN-3"}, {"notes": notes}),
            _s("d", "compute_fuel", "other", 3, {"notes": notes, "per_kw": 10.0}, {"fuel_l": 360.0}, "n"),
        )
        lin = Lineage(run)
        fuel = next(a for a in lin.view("d").outputs if a.field == "fuel_l")
        found = slips(lin, fuel, len(run.steps), 525.0, "525")
        assert [(s.step_id, s.fixed) for s in found] == [("n", 52.5)]
        assert slips(lin, fuel, len(run.steps), 445.0, "445") == []

    def test_a_correct_rate_divided_by_is_the_dividing_steps_slip(self) -> None:
        """A converter that divides by a correct rate (where it should multiply) did the inverting: the slip is named at it, not at the lookup."""
        rate = 0.92
        steps = [
            _s("fx", "get_fx_rate", "tool", 2, {"base": "USD"}, {"rate": rate}),
            _s("c", "convert_line", "other", 3, {"amount": 689.0, "rate": rate}, {"amount_eur": 748.91}, "fx"),
            _s("t", "summarize", "other", 4, {"lines": [{"amount_eur": 412.3}, {"amount_eur": 748.91}]},
               {"total_eur": 1161.21}, "c"),
        ]
        run = _run(*steps)
        lin = Lineage(run)
        total = next(a for a in lin.view("t").outputs if a.field == "total_eur")
        found = slips(lin, total, len(run.steps), round(412.3 + 689.0 * rate, 2), "1,046.18")
        assert {(s.step_id, s.what) for s in found} == {("c", "computed by div where mul fits")}

    def test_a_slip_that_only_makes_its_number_vanish_is_no_slip(self) -> None:
        """A difference of a small posted amount and a large approved one is not explained by inverting the large one (which only makes it vanish)."""
        run = _run(
            _s("p", "post", "tool", 1, {"invoice": "AP-1"}, {"posted": 324.23}),
            _s("o", "get_po", "tool", 3, {"po": "PO-1"}, {"approved": 6469.31}),
            _s("d", "diff", "other", 5, {"posted": 324.23, "approved": 6469.31}, {"difference": -6145.08}, "p", "o"),
        )
        lin = Lineage(run)
        [diff] = lin.view("d").outputs
        assert slips(lin, diff, 3, 324.23, "324.23") == []

    def test_a_slip_that_only_shrinks_a_number_under_an_expected_nought_is_no_slip(self) -> None:
        """A price per ml of 0.03 is not "100x too large" because the failure expects 0.00: any divisor made large
        enough gives nought at two decimals; a sign lost on one of two equal amounts summed gives nought itself."""
        run = _run(
            _s("k", "price_kits", "tool", 1, {"site": "S-1"}, {"cost": 312.32}),
            _s("v", "target_volume", "tool", 2, {"site": "S-1"}, {"ml": 10400.0}),
            _s("d", "per_ml", "other", 3, {"cost": 312.32, "ml": 10400.0}, {"per_ml": 0.03}, "k", "v"),
        )
        lin = Lineage(run)
        [per_ml] = lin.view("d").outputs
        assert slips(lin, per_ml, 3, 0.0, "0.00") == []
        even = _run(
            _s("a", "billed", "tool", 1, {"acct": "A-1"}, {"billed": 240.5}),
            _s("b", "paid", "tool", 2, {"acct": "A-1"}, {"paid": 240.5}),
            _s("d", "balance", "other", 3, {"billed": 240.5, "paid": 240.5}, {"balance": 481.0}, "a", "b"),
        )
        lin = Lineage(even)
        [balance] = lin.view("d").outputs
        found = slips(lin, balance, 3, 0.0, "0.00")
        assert {s.what for s in found} == {"sign lost"}

    def test_no_slip_explains_an_unrelated_number(self) -> None:
        """A number no single slip reaches names nothing."""
        run = _expense(0.917)
        lin = Lineage(run)
        total = next(a for a in lin.view("t").outputs if a.field == "total_eur")
        assert slips(lin, total, len(run.steps), 777.77, "777.77") == []

    def test_a_slip_repeated_in_every_call_of_a_step_is_found(self) -> None:
        """A converter 100x off in each of its calls is found as one slip repeated, at each call."""
        steps = [
            _s(f"f{i}", "fx_convert", "tool", i, {"amount": a}, a * 67.0)
            for i, a in enumerate((98.0, 28.6, 325.0))
        ]
        total = sum(a * 67.0 for a in (98.0, 28.6, 325.0))
        steps.append(_s("k", "reconcile", "tool", 9, {"lines": [{"usd": s.output} for s in steps]}, None))
        run = _run(*steps)
        lin = Lineage(run)
        [mine] = [a for a in atoms(f"receipts add up to {total:.2f}") if a.kind == "number"]
        found = slips(lin, mine, 3, total / 100, f"{total / 100:.2f}")
        assert {s.step_id for s in found} == {"f0", "f1", "f2"}
        assert {s.what for s in found} == {"100x too large"}


class TestWrittenValues:
    def test_a_word_a_model_wrote_in_a_sentence_is_its_value(self) -> None:
        """A tool given 'monthly' took it from the model that answered "Schedule: monthly. ...": its origin and a value edge."""
        run = _run(
            _s(
                "m",
                "choose_schedule",
                "llm",
                1,
                {"memo": "Bi-weekly payroll"},
                "Schedule: monthly. Reason: the memo.",
            ),
            _s(
                "g", "compute_gross", "tool", 2, {"salary": 104000, "schedule": "monthly"}, {"gross": 8666.67}
            ),
        )
        lin = Lineage(run)
        word = next(a for a in lin.view("g").inputs if a.field == "schedule")
        assert lin.origin(word, 1).step_id == "m"
        assert [d.step_id for d in lin.value_edges().get("g", [])] == ["m"]


class TestScaleCheck:
    @given(
        st.floats(-1e9, 1e9, allow_nan=False) | st.sampled_from([1e-12, -3e-10, 0.5, 2.0, 1234.5]),
        st.sampled_from([1, 2, 3, 6, -1, -2, -3, -6, 0, 4]),
        st.sampled_from([0.0, 1e-10, 5e-10, 1e-9, 2e-9, 1e-7]),
    )
    def test_a_power_of_ten_is_found_as_trying_every_power_finds_it(
        self, x: float, k: int, off: float
    ) -> None:
        """The scale check's shortcut (for outputs of 1 or more) answers as trying each power in turn."""
        from trajdebug.analysis.lineage import _anomalies

        y = x * 10.0**k * (1 + off)
        want = next(
            (
                p
                for p in _anomalies._POWERS
                if x and y and (x < 0) == (y < 0) and _anomalies._same(y, x * 10.0**p)
            ),
            0,
        )
        assert _anomalies._power_of_ten(y, x) == want


class TestWholeWords:
    @given(
        st.text(st.sampled_from(["a", "b", "-", "_", " ", "1", "é", "٣", "²", ".", "\n", "K"]), max_size=25),
        st.text(st.sampled_from(["a", "b", "-", "_", "1", "é", "."]), max_size=4),
    )
    def test_a_value_is_found_as_a_whole_word_as_the_pattern_finds_it(self, text: str, raw: str) -> None:
        """Counting and finding a record's value in the input's text agrees with the whole-word pattern."""
        import re

        from trajdebug.analysis.lineage import _anomalies

        pattern = r"(?<![\w-])" + re.escape(raw) + r"(?![\w-])"
        assert _anomalies._count(text, "s:" + raw) == len(re.findall(pattern, text))
        found = len(raw) >= 3 and re.search(pattern, text) is not None
        assert _anomalies._mentioned(text, {"s:" + raw}) == ({"s:" + raw} if found else set())


class TestReadsTheRecordingMissed:
    """Edges for values that flowed where the recording did not show them (suite H's off-path roots)."""

    @staticmethod
    def _slice(run: Run) -> set[str]:
        """The failures' backward slice over the edges the analysis used (the steps a search can reach)."""
        from trajdebug.analysis import analyze
        from trajdebug.core.graph import DependencyGraph

        a = analyze(run, top=50)
        return DependencyGraph(a.run).backward_slice([f.step_id for f in a.failures])

    def test_a_field_left_empty_links_to_the_step_whose_output_left_it_empty(self) -> None:
        """A tool given `reservation=""` depends on the latest earlier step whose output left `reservation`
        empty (a plan that skipped the budget step), and that step is ranked: empty values are no indexed
        values, so no value edge could find it."""
        from trajdebug.core.model import ErrorInfo

        run = _run(
            _s("plan", "plan_purchasing", "other", 0, {"task": "restock"}, {"plan": ["order"], "reservation": ""}),
            _s("draft", "draft_orders", "tool", 10, {"sku": "SKU-17"}, {"sku": "SKU-17", "qty": 200}),
            _s(
                "po", "submit_po", "tool", 20, {"sku": "SKU-17", "qty": 200, "reservation": ""}, None,
                status="error", error=ErrorInfo("ServiceError", "purchase order for SKU-17 has no budget reservation"),
            ),
        )
        edges = Lineage(run).empty_edges()
        assert [(d.step_id, d.key) for d in edges["po"]] == [("plan", "empty:reservation")]
        assert "plan" in self._slice(run)

    def test_an_output_nobody_consumed_links_to_the_computation_that_returned_more_than_it_was_given(self) -> None:
        """An OTLP-style run whose `build_bids` span recorded only the markup as input, yet returned one bid per
        forecast block: the forecast no step consumed is linked to it by a data edge and reaches the failing
        check."""
        from trajdebug.core.model import ErrorInfo

        forecast = {"mw": {"wind": [30.0, 35.0, 41.0], "solar": [8.0, 8000.0, 6.0]}}
        bids = [{"block": 0, "mw": 38.0, "limit": 59.68}, {"block": 1, "mw": 8035.0, "limit": 75.84},
                {"block": 2, "mw": 47.0, "limit": 82.19}]
        run = _run(
            _s("root", "desk", "agent", 0, {"task": "bid"}, None),
            _s("fc", "normalize_forecast", "other", 1, {"raw": "wind,solar"}, forecast, parent_id="root"),
            _s("llm", "ChatCompletion", "llm", 3, "markup?", "Use a markup 4%", parent_id="root"),
            _s("parse", "parse_strategy", "other", 5, "Use a markup 4%", {"markup": 0.04}, "llm", parent_id="root"),
            _s("build", "build_bids", "other", 7, {"markup": 0.04}, bids, "parse", parent_id="root"),
            _s(
                "risk", "risk_check", "condition", 9, bids, None, "build", parent_id="root",
                status="error", error=ErrorInfo("RiskLimitBreached", "block 1: offered 8,035.0 MW exceeds 180 MW"),
            ),
        )
        edges = Lineage(run).unread_edges(consumed={"llm", "parse", "build"})
        assert [(d.step_id, d.kind) for d in edges["build"]] == [("fc", "data")]
        assert "fc" in self._slice(run)

    def test_a_number_computed_in_the_enclosing_step_links_to_what_that_step_read(self) -> None:
        """A graph node's tool given `amount=2780.5`, which no step produced (the node summed it from the state),
        depends on what the node read: the stock scan whose short count made the total, which is ranked."""
        from trajdebug.core.model import ErrorInfo

        run = _run(
            _s("scan", "stock_level", "tool", 0, {"sku": "SKU-C3"}, {"sku": "SKU-C3", "on_hand": 410}),
            _s("node", "reserve_budget", "agent", 10, {"levels": {"SKU-C3": 410}, "cap": 2700.0}, {}, "scan"),
            _s(
                "hold", "hold_budget", "tool", 11, {"amount": 2780.5, "cap": 2700.0}, None, parent_id="node",
                status="error", error=ErrorInfo("ServiceError", "requested 2780.50 EUR exceeds the allowance 2700.00 EUR"),
            ),
        )
        lin = Lineage(run)
        edges = lin.inherited_edges({s.step_id: list(s.deps) for s in run.steps})
        assert [d.step_id for d in edges["hold"]] == ["scan"]
        assert "scan" in self._slice(run)

    def test_a_value_a_node_was_handed_in_one_state_field_links_to_what_wrote_that_field(self) -> None:
        """A graph node given the state (a booking window among its fields, written by the selector) calls its
        tool with one of the window's times: the tool depends on the selector, which reaches the failure; a
        child given none of the field's values gains no edge."""
        from trajdebug.core.model import ErrorInfo

        hours = [{"hour": h, "load_pct": w} for h, w in (("06:00", 41.0), ("07:00", 55.5), ("08:00", 62.5))]
        window = {"first": "07:00", "times": ["07:00", "08:00"]}
        # The time is held by five earlier outputs (two nodes relay what their steps made): too common a
        # value for content matching to say which one the tool took it from.
        run = _run(
            Step("fnode", "usage", "agent", input={"lab": "lab-2"}, output={"hours": hours}, start_ns=0, end_ns=5),
            _s("fc", "fetch_usage", "tool", 1, {"lab": "lab-2"}, {"hours": hours}, parent_id="fnode"),
            _s("conv", "normalize_usage", "other", 3, {"hours": hours}, hours, parent_id="fnode"),
            Step("tnode", "window", "agent", input={"hours": hours}, output={"window": window}, start_ns=6, end_ns=9),
            _s("sel", "select_window", "other", 7, {"hours": hours}, window, "conv", parent_id="tnode"),
            Step(
                "node", "booking", "agent", input={"hours": hours, "window": window}, output={},
                start_ns=10, end_ns=20, deps=(D("sel", "data", "inferred", 0.9, "window"),),
            ),
            _s("log", "log_request", "tool", 11, {"lab": "lab-2", "team": "assay"}, {"ok": True}, parent_id="node"),
            _s(
                "book", "reserve_bench", "tool", 13, {"team": "assay", "time": "08:00"}, None, parent_id="node",
                status="error", error=ErrorInfo("ServiceError", "reservation refused: bench load over the limit"),
            ),
        )
        edges = Lineage(run).handed_down_edges({s.step_id: list(s.deps) for s in run.steps})
        assert ("sel", "via window") in [(d.step_id, d.key) for d in edges["book"]]
        assert "log" not in edges
        assert "sel" in self._slice(run)

    def test_a_state_field_an_earlier_step_returned_whole_is_that_steps_for_a_nodes_children(self) -> None:
        """A node's state holds the `supplier` record a picker returned under that name (no edge of the node says
        so): the node's model call, given the record's values, depends on the picker; a record the picker did
        not return as it stands in the state names no writer."""
        supplier = {"supplier": "KX", "part": "73019864", "max_price": 30.0}
        msg = {"role": "user", "content": json.dumps({**supplier, "buyer": "Q-58213"})}

        def run_of(picked: dict[str, Any]) -> Run:
            return _run(
                _s("pick", "pick_supplier", "other", 0, {"order": "Q-58213"}, {"supplier": picked, "score": 1}),
                Step("node", "purchasing", "agent", input={"order": "Q-58213", "supplier": supplier}, output={},
                     start_ns=2, end_ns=9),
                _s("llm", "ChatOpenAI", "llm", 3, {"messages": [msg]}, {"content": "ok"}, parent_id="node"),
            )

        run = run_of(supplier)
        edges = Lineage(run).handed_down_edges({s.step_id: list(s.deps) for s in run.steps})
        assert [(d.step_id, d.key) for d in edges["llm"]] == [("pick", "via supplier")]
        other = run_of({**supplier, "max_price": 35.0})
        assert Lineage(other).handed_down_edges({s.step_id: list(s.deps) for s in other.steps}) == {}

    def test_a_loop_pass_links_to_the_writer_of_the_part_of_the_state_it_read_not_the_whole_field(self) -> None:
        """A graph's second pass of a letting loop is given the whole state (`data`: the request and the first
        pass's offer, which the first pass's parser wrote under `data.offers[0]`): its tool given the request's
        size took nothing from that parser (whose offer names another unit), and one given the offer's unit did."""
        request = {"enquiries": [{"name": "Peel", "sqft": 45, "weeks": 3}, {"name": "Sims", "sqft": 25, "weeks": 5}]}
        offer = {"name": "Peel", "unit": "A-07", "move_in": "2027-02-10"}
        data = {"request": request, "offers": [offer]}

        def run_of(tool_input: dict[str, Any]) -> Run:
            return _run(
                _s("parse", "parse_offer", "other", 0, "{...}", offer),
                Step("node", "letting", "agent", input={"data": data}, output={}, start_ns=2, end_ns=9,
                     deps=(D("parse", "data", "inferred", 0.6, "data.offers[0]"),)),
                _s("quote", "quote_rent", "tool", 3, tool_input, {"pence": 6000}, parent_id="node"),
            )

        weeks = run_of({"unit": "A-01", "sqft": 25})
        assert Lineage(weeks).handed_down_edges({s.step_id: list(s.deps) for s in weeks.steps}) == {}
        unit = run_of({"unit": "A-07", "sqft": 25})
        edges = Lineage(unit).handed_down_edges({s.step_id: list(s.deps) for s in unit.steps})
        assert [(d.step_id, d.key) for d in edges["quote"]] == [("parse", "via data")]

    def test_an_edge_keyed_by_a_leaf_hands_down_the_record_that_holds_it(self) -> None:
        """An edge keyed by one leaf of a record in the state (`data.offers[0].unit`) reads as the record's: the
        writer wrote the record, and a call given another of its values (the move-in date) took it there."""
        offer = {"name": "Peel", "unit": "A-07", "move_in": "2027-02-10"}
        run = _run(
            _s("parse", "parse_offer", "other", 0, "{...}", offer),
            Step("node", "letting", "agent", input={"data": {"request": {"task": "let"}, "offers": [offer]}}, output={},
                 start_ns=2, end_ns=9, deps=(D("parse", "data", "inferred", 0.6, "data.offers[0].unit"),)),
            _s("draft", "draft_offer", "tool", 3, {"from": "2027-02-10"}, {"ok": True}, parent_id="node"),
        )
        edges = Lineage(run).handed_down_edges({s.step_id: list(s.deps) for s in run.steps})
        assert [(d.step_id, d.key) for d in edges["draft"]] == [("parse", "via data")]

    def test_a_reader_of_the_next_record_a_list_writer_wrote_keeps_its_link(self) -> None:
        """A parser that wrote the whole list of offers, its edge keyed by the first record it matched
        (`data.offers[0]`, or a leaf of it): a call given the second offer's unit and date took them from that
        parser all the same (review rev54c: a narrowed edge lost the list writer's second record)."""
        offers = [{"name": "Peel", "unit": "A-07", "move_in": "2027-02-10"},
                  {"name": "Sims", "unit": "B-19", "move_in": "2027-03-22"}]
        for key in ("data.offers[0]", "data.offers[0].unit", "data.offers"):
            run = _run(
                _s("parse", "parse_offers", "other", 0, "{...}", offers),
                Step("node", "letting", "agent", input={"data": {"request": {"task": "let"}, "offers": offers}},
                     output={}, start_ns=2, end_ns=9, deps=(D("parse", "data", "inferred", 0.6, key),)),
                _s("quote", "quote_rent", "tool", 3, {"unit": "B-19", "from": "2027-03-22"}, {"pence": 6000},
                   parent_id="node"),
            )
            edges = Lineage(run).handed_down_edges({s.step_id: list(s.deps) for s in run.steps})
            assert [(d.step_id, d.key) for d in edges["quote"]] == [("parse", "via data")], key

    def test_a_value_its_writer_returned_beside_the_record_is_handed_down_from_it(self) -> None:
        """A parser that returned an offer and a deadline, the node storing the deadline beside the offers: its
        edge names the offer (`data.offers[0]`), and a reminder given the deadline took it from that parser; the
        values no record names that the parser never returned (the request's) are still not its."""
        offer = {"name": "Peel", "unit": "A-07", "move_in": "2027-02-10"}
        data = {"request": {"task": "let", "region": "north-east"}, "offers": [offer], "deadline": "2027-01-31"}

        def run_of(tool_input: dict[str, Any]) -> Run:
            return _run(
                _s("parse", "parse_offer", "other", 0, "{...}", {"offer": offer, "deadline": "2027-01-31"}),
                Step("node", "letting", "agent", input={"data": data}, output={}, start_ns=2, end_ns=9,
                     deps=(D("parse", "data", "inferred", 0.6, "data.offers[0]"),)),
                _s("remind", "send_reminder", "tool", 3, tool_input, {"ok": True}, parent_id="node"),
            )

        deadline = run_of({"by": "2027-01-31"})
        edges = Lineage(deadline).handed_down_edges({s.step_id: list(s.deps) for s in deadline.steps})
        assert [(d.step_id, d.key) for d in edges["remind"]] == [("parse", "via data")]
        region = run_of({"region": "north-east"})
        assert Lineage(region).handed_down_edges({s.step_id: list(s.deps) for s in region.steps}) == {}

    def test_a_narrowed_edge_still_links_a_read_of_its_record_by_another_pass_or_by_key(self) -> None:
        """The record an edge names is handed down wherever it sits: a later pass comparing with the first
        pass's offer (`prev_unit`), a record in a mapping keyed by name (`data.offers.Sims.unit`), and a key whose
        index the state no longer has (the whole field, as before)."""
        peel = {"name": "Peel", "unit": "A-07", "move_in": "2027-02-10"}
        sims = {"name": "Sims", "unit": "B-19", "move_in": "2027-03-22"}
        cases = [
            (peel, {"request": {"task": "let"}, "offers": [peel]}, "data.offers[0]", {"prev_unit": "A-07", "unit": "C-02"}),
            (sims, {"offers": {"Peel": peel, "Sims": sims}}, "data.offers.Sims.unit", {"unit": "B-19"}),
            (sims, {"offers": [sims]}, "data.offers[1]", {"unit": "B-19"}),
        ]
        for written, data, key, tool_input in cases:
            run = _run(
                _s("parse", "parse_offer", "other", 0, "{...}", written),
                Step("node", "letting", "agent", input={"data": data}, output={}, start_ns=2, end_ns=9,
                     deps=(D("parse", "data", "inferred", 0.6, key),)),
                _s("quote", "quote_rent", "tool", 3, tool_input, {"ok": True}, parent_id="node"),
            )
            edges = Lineage(run).handed_down_edges({s.step_id: list(s.deps) for s in run.steps})
            assert [(d.step_id, d.key) for d in edges["quote"]] == [("parse", "via data")], key

    def test_a_writer_with_several_edges_hands_down_through_its_surest(self) -> None:
        """A list writer linked to the node by a weak edge on one record and a sure one on another: a call given
        a value of either is linked at the sure edge's confidence, whichever edge the node listed first."""
        offers = [{"name": "Peel", "unit": "A-07", "move_in": "2027-02-10"},
                  {"name": "Sims", "unit": "B-19", "move_in": "2027-03-22"}]
        run = _run(
            _s("parse", "parse_offers", "other", 0, "{...}", offers),
            Step("node", "letting", "agent", input={"data": {"request": {"task": "let"}, "offers": offers}},
                 output={}, start_ns=2, end_ns=9,
                 deps=(D("parse", "data", "inferred", 0.5, "data.offers[1]"), D("parse", "data", "inferred", 0.9, "data.offers[0]"))),
            _s("quote", "quote_rent", "tool", 3, {"unit": "B-19"}, {"pence": 6000}, parent_id="node"),
        )
        edges = Lineage(run).handed_down_edges({s.step_id: list(s.deps) for s in run.steps})
        assert [(d.step_id, d.confidence) for d in edges["quote"]] == [("parse", 0.72)]

    def test_a_total_of_the_siblings_numbers_links_to_the_siblings_that_made_it(self) -> None:
        """A node that computed each lot's duty in its own step, then handed their sum (`duty_usd + excise_usd`
        of every lot, 21103.64) to the bond check: the check depends on every lot's computation, the one with
        the unit slip among them; a number that is no such sum links to none."""
        from trajdebug.analysis.lineage import total_edges
        from trajdebug.core.model import ErrorInfo

        lots = [(3564.0, 16164.0, 16603.2), (42.52, 191.02, 12452.4), (178.2, 808.2, 11760.6)]
        total = round(sum(d + e for d, e, _ in lots), 2)
        run = _run(
            _s("node", "duties", "agent", 0, {"shipment": "SHP-4102"}, {}),
            *(
                _s(f"lot{i}", "compute_lot_duty", "other", 1 + 2 * i, {"lot": f"L-{i}"},
                   {"lot": f"L-{i}", "duty_usd": d, "excise_usd": e, "value_usd": v}, parent_id="node")
                for i, (d, e, v) in enumerate(lots)
            ),
            _s("bond", "check_bond", "tool", 10, {"estimated_duties_usd": total, "bond_usd": 20000.0}, None,
               parent_id="node", status="error", error=ErrorInfo("BondExceeded", "duties exceed the bond")),
        )
        edges = total_edges(run)
        assert [(d.step_id, d.key) for d in edges["bond"]] == [(f"lot{i}", "total:estimated_duties_usd") for i in range(3)]
        assert "lot0" in self._slice(run)
        off = _run(*run.steps[:-1], replace_input(run.steps[-1], {"estimated_duties_usd": total + 1.0}))
        assert total_edges(off) == {}


    def test_an_empty_list_handed_on_under_another_name_links_the_step_that_returned_it(self) -> None:
        """A parser that found no bird sightings in a survey note returned `[]` whole; the tally given
        `sightings=[]` depends on it (no step left a field of that name empty), and so does the model call
        that wrote the note; a tally given a non-empty list links to no empty result."""
        from trajdebug.core.model import ErrorInfo

        note = {"role": "assistant", "content": "Heron at pond 2, 06h40"}
        run = _run(
            _s("node", "survey", "agent", 0, {"site": "marsh"}, {}),
            _s("m", "ChatCompletion", "llm", 1, {"messages": [{"role": "user", "content": "log sightings"}]},
               note, parent_id="node"),
            _s("p", "parse_sightings", "other", 3, {"text": note["content"]}, [], "m", parent_id="node"),
            _s("t", "tally_sightings", "other", 5, {"expected": 4, "sightings": []}, None, parent_id="node",
               status="error", error=ErrorInfo("ValueError", "survey incomplete: 4 sightings expected, 0 logged")),
        )
        edges = Lineage(run).empty_edges()
        assert [(d.step_id, d.key) for d in edges["t"]] == [("p", "empty:sightings")]
        assert {"p", "m"} <= self._slice(run)
        full = _run(*run.steps[:-1], replace_input(run.steps[-1], {"expected": 4, "sightings": ["heron"]}))
        assert "t" not in Lineage(full).empty_edges()

    def test_an_empty_default_links_to_no_unrelated_empty_result(self) -> None:
        """A greenhouse agent's alert lookup correctly found none (`[]`); the model request right after it
        carries `tools=[]` and a later tool is given `zones={}` after another step returned `{}` with a step in
        between: neither links to an empty result (only the step right before a non-model step hands its empty
        result on)."""
        run = _run(
            _s("al", "load_alerts", "tool", 0, {"house": "G-3"}, []),
            _s("m", "ChatCompletion", "llm", 2, {"messages": [{"role": "user", "content": "vent house 3"}],
                                               "tools": []}, {"role": "assistant", "content": "venting to 40%"}),
            _s("cf", "read_overrides", "tool", 4, {"house": "G-3"}, {}),
            _s("hum", "read_humidity", "tool", 6, {"house": "G-3"}, {"rh": 71}),
            _s("v", "set_vents", "tool", 8, {"open_pct": 40, "zones": {}}, None),
        )
        assert Lineage(run).empty_edges() == {}

    def test_a_step_inside_a_record_opened_node_depends_on_the_records_producer(self) -> None:
        """A loop opens one enclosing step per record of an allocation (`input={"boat": ..., "mooring": ...}`)
        and calls a tool with the record's fields: the tool depends on the allocation (through the enclosing
        step's whole-input edge), so the allocation is on the failing tool's path."""
        from trajdebug.core.graph import WHOLE_INPUT_KEY
        from trajdebug.core.model import ErrorInfo

        plan = [{"boat": "BT-410", "mooring": "M7"}, {"boat": "BT-422", "mooring": "M9"}]
        node = Step("node", "confirm_mooring", "agent", input=dict(plan[1]), output=None, start_ns=4, end_ns=9,
                    deps=(Dependency("alloc", "data", "inferred", 0.7, WHOLE_INPUT_KEY),))
        run = _run(
            _s("alloc", "allocate_moorings", "other", 0, {"boats": ["BT-410", "BT-422"]}, plan),
            node,
            _s("book", "book_mooring", "tool", 5, {"harbour": "Kettle Cove", "boat": "BT-422", "mooring": "M9"},
               None, parent_id="node", status="error", error=ErrorInfo("ValueError", "mooring M9 is too short")),
        )
        edges = Lineage(run).handed_down_edges({s.step_id: list(s.deps) for s in run.steps})
        assert [(d.step_id, d.key) for d in edges["book"]] == [("alloc", f"via {WHOLE_INPUT_KEY}")]

    def test_a_total_of_one_group_of_a_steps_calls_links_to_that_group(self) -> None:
        """A program that summed the catch of one vessel's hauls only (`vessel == "V2"`, a filter between the
        steps) and handed it to a quota check: the check depends on that vessel's hauls, not the other's; a
        step given a number no group sums to links to none."""
        from trajdebug.analysis.lineage import total_edges

        hauls = [("V1", 1240), ("V2", 860), ("V1", 930), ("V2", 1105), ("V2", 412)]
        run = _run(
            _s("node", "landings", "agent", 0, {"port": "Skerry"}, {}),
            *(
                _s(f"h{i}", "parse_haul", "other", 1 + 2 * i, {"line": f"{v} {kg} kg"},
                   {"haul": f"H-{i}", "vessel": v, "catch_kg": kg}, parent_id="node")
                for i, (v, kg) in enumerate(hauls)
            ),
            _s("q", "check_quota", "other", 20, {"landed_kg": 860 + 1105 + 412, "quota_kg": 2500}, None,
               parent_id="node"),
        )
        edges = total_edges(run)
        assert sorted(d.step_id for d in edges["q"]) == ["h1", "h3", "h4"]
        off = _run(*run.steps[:-1], replace_input(run.steps[-1], {"landed_kg": 2378, "quota_kg": 2500}))
        assert total_edges(off) == {}

    def test_a_setting_equal_to_a_groups_count_of_equal_values_links_no_group(self) -> None:
        """Three of four beehive inspections logged 12 frames each and a later, unrelated upload is given
        `batch_size=36`: a sum of equal values is a multiple of a round number, so the upload links to no
        inspection; a real one-group total in the same run still does."""
        from trajdebug.analysis.lineage import total_edges

        hives = [("sealed", 12), ("sealed", 12), ("open", 9), ("sealed", 12)]
        steps = [
            _s(f"i{i}", "inspect_hive", "tool", 1 + 2 * i, {"hive": i}, {"state": st, "frames": n})
            for i, (st, n) in enumerate(hives)
        ]
        run = _run(*steps, _s("up", "upload_log", "tool", 20, {"batch_size": 36, "dest": "apiary.csv"}, None))
        assert total_edges(run) == {}
        mixed = [("sealed", 12), ("sealed", 14), ("open", 9), ("sealed", 15)]
        steps = [
            _s(f"i{i}", "inspect_hive", "tool", 1 + 2 * i, {"hive": i}, {"state": st, "frames": n})
            for i, (st, n) in enumerate(mixed)
        ]
        run = _run(*steps, _s("up", "upload_log", "tool", 20, {"sealed_frames": 41, "dest": "apiary.csv"}, None))
        assert sorted(d.step_id for d in total_edges(run)["up"]) == ["i0", "i1", "i3"]

    def test_groups_read_each_steps_labels_once_and_equal_reading_them_anew(self) -> None:
        """`_groups` given the labels kept from earlier consumers (each sibling's short text fields, read once per
        run) builds the same groups as reading every sibling's output again, the `_MAX_GROUPS` bound included."""
        from trajdebug.analysis.lineage import _totals

        for fields in (4, 50):  # (50 fields of 3 steps' calls: more labels than the bound keeps)
            steps = [
                _s(f"t{i}", f"read_{i % 3}", "tool", 1 + 2 * i, {"i": i},
                   {f"f{j}": f"v{(i + j) % 2}" for j in range(fields)} | {"kg": 10 + i, "long": "x" * 41})
                for i in range(30)
            ]
            labels: dict[int, list[tuple[str, str, str]]] = {}
            for end in (5, 12, 30):
                fresh = _totals._groups(steps[:end], {})
                assert fresh or fields > 4 or end < 30
                assert _totals._groups(steps[:end], {}, labels) == fresh
                assert _totals._groups(steps[:end], {}, labels) == fresh  # (every label now kept)
            assert (len({k for t in steps for k in _totals._labels(t)}) > _totals._MAX_GROUPS) == (fields > 4)
            assert all(f != "long" for v in labels.values() for _, f, _ in v)


class TestSharedState:
    """A state graph's node is handed the state its earlier nodes' updates wrote: no request it must honour."""

    def _node(self, sid: str, start: int, prev: dict[str, Any] | None, dome: str) -> Step:
        reading = {"dome": dome, "seeing": 1.4}
        given: dict[str, Any] = {"raw": f"{dome} | seeing 1.4", "idx": start}
        if prev is not None:
            given["reading"] = prev["reading"]
        return _s(sid, "parse", "other", start, given, {"reading": reading})

    def test_a_node_overwriting_its_own_last_update_is_no_conflict(self) -> None:
        """A parser given the state's `reading` of the last dome (DM-3), which its own earlier call wrote, and
        answering this dome's DM-5 replaced the state's value: no conflict; given DM-3 by a caller, it is one."""
        first = self._node("p1", 1, None, "DM-3")
        second = self._node("p2", 3, first.output, "DM-5")
        run = _run(first, second)
        lin = Lineage(run)
        keys = state_keys(second, update_index(run.steps), 1)
        assert keys == {"reading"}
        assert [e.diagnoser for e in anomalies(second, lin.view("p2"), rewritten=keys)] == []
        assert "lineage:conflict" in [e.diagnoser for e in anomalies(second, lin.view("p2"))]

    def test_a_value_the_state_also_gave_under_that_name_is_a_choice(self) -> None:
        """A memory node given its request's last dose and, in the shared messages, a tool's fresh record
        answering with the fresh dose chose between given values: no conflict; with a dose neither
        part gave, the conflict stays."""
        ask = {"role": "assistant", "content": "looking up PX-1"}
        tool = {"role": "tool", "content": json.dumps({"mrn": "PX-1", "dose": "DZ-902"})}
        a = _s("a", "model", "other", 1, {}, {"messages": [ask]})
        b = _s("b", "tools", "other", 2, {}, {"messages": [tool]})
        given = {"messages": [ask, tool], "request": {"mrn": "PX-1", "last_visit": {"dose": "DZ-618"}}}
        fresh = _s("m", "remember", "other", 3, given, {"patient": {"mrn": "PX-1", "dose": "DZ-902"}})
        other = _s("m", "remember", "other", 3, given, {"patient": {"mrn": "PX-1", "dose": "DZ-777"}})
        for node, conflict in ((fresh, False), (other, True)):
            run = _run(a, b, node)
            keys = state_keys(node, update_index(run.steps), 2)
            assert keys == {"messages"}
            found = [e.diagnoser for e in anomalies(node, Lineage(run).view("m"), rewritten=keys)]
            assert ("lineage:conflict" in found) is conflict

    def test_one_value_handed_down_a_pipeline_is_no_state(self) -> None:
        """A planner's one booking handed to a tool that answers another court: the tool was given a value to
        keep, not a state (one part, not written back), so the conflict stays."""
        plan = _s("a", "plan", "llm", 1, {"q": "book court 4"}, {"booking": {"ref": "BK-40", "court": "C-4"}})
        book = _s("b", "reserve", "tool", 3, {"booking": {"ref": "BK-40", "court": "C-4"}}, {"ref": "BK-40", "court": "C-9"}, "a")
        run = _run(plan, book)
        keys = state_keys(book, update_index(run.steps), 1)
        assert keys == frozenset()
        assert "lineage:conflict" in [e.diagnoser for e in anomalies(book, Lineage(run).view("b"), rewritten=keys)]

    def test_the_runs_request_is_no_state(self) -> None:
        """Answers the run was given (an input step's) are a request the step must honour: a conflict stays."""
        ask = _s("u", "receive_request", "input", 0, {"household": "H-32"}, {"answers": {"heat_pump": True}})
        upd = _s("w", "update_household", "state", 2, {"answers": {"heat_pump": True}}, {"heat_pump": False})
        assert state_keys(upd, update_index((ask, upd)), 1) == frozenset()

    def test_a_list_the_state_appends_to_is_state(self) -> None:
        """A message list built by appending each update's items is the state's, not one step's request."""
        a = _s("a", "ask", "other", 1, {}, {"messages": [{"role": "user", "content": "DM-7 closed"}]})
        b = _s("b", "log", "other", 2, {}, {"messages": [{"role": "user", "content": "queued"}]})
        c = _s("c", "parse", "other", 3, {"messages": [*a.output["messages"], *b.output["messages"]]}, {"dome": "DM-2"})
        assert state_keys(c, update_index((a, b, c)), 2) == {"messages"}
        assert state_keys(c, update_index((c,)), 0) == frozenset()


class TestUnconverted:
    def test_a_number_kept_from_one_unit_under_a_field_named_for_another_is_suspect(self) -> None:
        """A parser keeping 'air 95.9 F' as air_c=95.9, in a run that writes temperatures in C, kept a unit
        unconverted; converting it to 35.5 is no finding, nor is a field named for no unit the run writes, a
        range's bound ('3 to 9') or a number equal to another one written otherwise (12 for '12.0 mL')."""

        def parse(out: dict[str, Any], raw: str = "PC-4 | air 95.9 F") -> list[str]:
            probe = _s("t", "probe", "tool", 1, {"cabinet": "PC-1"}, "PC-1 | air 27.6 C | every 6 hours")
            p = _s("p", "parse", "other", 2, {"raw": raw}, out)
            lin = Lineage(_run(probe, p))
            units = run_units(lin.view(s) for s in ("t", "p"))
            return [e.diagnoser for e in relabelled(lin.view("p"), units)]

        assert parse({"air_c": 95.9}) == ["lineage:altered"]
        assert parse({"air_c": 35.5}) == []
        assert parse({"air_k": 95.9}) == []
        # A range's joint is no unit, and a number not copied as written is a coincidence.
        assert parse({"air_c": 3}, "keep 3 to 9 C") == []
        assert parse({"every_hours": 12}, "add 12.0 mL") == []

    def test_a_parsers_float_of_a_number_glued_to_its_unit_is_the_number_kept_unconverted(self) -> None:
        """A parser reading 'air 95F' (the unit written against the number) or 'air 95 F' as air_c=95.0, its
        float() of the number written, kept the unit unconverted as surely as one writing air_c=95; a seat
        '12B' read as row 12 is no unit at all."""

        def parse(raw: str, out: dict[str, Any], probe_text: str = "PC-1 | air 27C | every 6 hours") -> list[str]:
            probe = _s("t", "probe", "tool", 1, {"cabinet": "PC-1"}, probe_text)
            p = _s("p", "parse", "other", 2, {"raw": raw}, out)
            lin = Lineage(_run(probe, p))
            units = run_units(lin.view(s) for s in ("t", "p"))
            return [e.diagnoser for e in relabelled(lin.view("p"), units)]

        assert parse("PC-4 | air 95F", {"air_c": 95.0}) == ["lineage:altered"]
        assert parse("PC-4 | air 95 F", {"air_c": 95.0}, "PC-1 | air 27.6 C") == ["lineage:altered"]
        assert parse("PC-4 | air 95F", {"air_c": 35.0}) == []
        assert parse("seat 12B", {"row": 12}) == []

    def test_a_field_named_for_a_part_of_a_compound_unit_kept_the_unit(self) -> None:
        """A seed price '3.45 EUR/kg' kept under per_kg kept its unit (the field names a part of it), where
        '55 lb' kept under sack_kg, in a run that writes kilograms, left pounds unconverted; a field of one
        word (kg, or an acidity's ta) names no unit."""

        def parse(raw: str, out: dict[str, Any]) -> list[str]:
            scale = _s("t", "weigh", "tool", 1, {"silo": "S-3"}, "silo S-3 holds 840 kg of barley")
            p = _s("p", "parse", "other", 2, {"raw": raw}, out)
            lin = Lineage(_run(scale, p))
            units = run_units(lin.view(s) for s in ("t", "p"))
            return [e.diagnoser for e in relabelled(lin.view("p"), units)]

        assert parse("seed 3.45 EUR/kg", {"per_kg": 3.45}) == []
        assert parse("sack 2: 55 lb", {"sack_kg": 55.0}) == ["lineage:altered"]
        assert parse("sack 2: 55 lb", {"sack_kg": 24.9}) == []
        assert parse("sack 2: 55 lb", {"kg": 55.0}) == []

    def test_a_field_naming_a_unit_outside_a_compound_unit_left_it_unconverted(self) -> None:
        """A seed price '3.45 EUR/kg' kept under chf_per_kg, in a run that writes francs, left the currency
        unconverted, and '0.8 g/L' kept under salt_mg_per_l left grams: kg or l being a part of the given unit
        says nothing of the other word; under eur_per_kg every unit word is a part and the unit was kept."""

        def parse(raw: str, out: dict[str, Any]) -> list[str]:
            scale = _s("t", "weigh", "tool", 1, {"silo": "S-3"}, "silo S-3 holds 840 kg, fee 12 CHF, brine 40 mg, tank 300 l")
            p = _s("p", "parse", "other", 2, {"raw": raw}, out)
            lin = Lineage(_run(scale, p))
            units = run_units(lin.view(s) for s in ("t", "p"))
            return [e.reason.split("named for ")[-1] for e in relabelled(lin.view("p"), units)]

        assert parse("seed 3.45 EUR/kg", {"chf_per_kg": 3.45}) == ["chf"]
        assert parse("brine 0.8 g/L", {"salt_mg_per_l": 0.8}) == ["mg"]
        assert parse("seed 3.45 EUR/kg", {"eur_per_kg": 3.45}) == []
        assert parse("seed 3.45 EUR/kg", {"price_per_kg": 3.45}) == []

    def test_a_span_of_time_kept_under_a_field_named_for_the_same_unit_spelt_longer_is_no_finding(self) -> None:
        """A tool given interval '60m' or '60 m' that returns period_min=60 kept minutes as minutes; one given
        '2 h' that returns period_min=2 left hours unconverted."""

        def inserts(interval: str, out: dict[str, Any]) -> list[str]:
            note = _s("n", "rule", "retrieval", 1, {"q": "gap"}, "station ID gap of 30 min at most; every 2 h a check")
            t = _s("t", "inserts", "tool", 2, {"slot": "03:00-04:00", "interval": interval}, out)
            lin = Lineage(_run(note, t))
            units = run_units(lin.view(s) for s in ("n", "t"))
            return [e.diagnoser for e in relabelled(lin.view("t"), units)]

        assert inserts("60m", {"period_min": 60}) == []
        assert inserts("60 m", {"period_min": 60}) == []
        assert inserts("2 h", {"period_min": 2}) == ["lineage:altered"]

    def test_a_span_written_against_its_unit_is_a_number_given_and_produced(self) -> None:
        """A model's tool call with interval '60m' produced the 60 a tool then returns as period_min=60: the
        tool was given it and the model is its origin; a seat '12b' is a word, not the number 12, and a
        '15m' window is no 15%."""
        m = _s("m", "plan", "llm", 1, {"brief": "slot 03:00-04:00"}, {"interval": "60m", "seat": "12b"})
        t = _s("t", "inserts", "tool", 2, {"interval": "60m", "seat": "12b"}, {"period_min": 60, "row": 12}, "m")
        lin = Lineage(_run(m, t))
        made = {a.raw for a in lin.introduced("t")}
        assert "60" not in made and "12" in made
        assert lin.holders("n:60") == [0, 1]
        # A share is no span: a '15m' window gives no 15%.
        w = Lineage(_run(_s("w", "status", "tool", 1, {"window": "15m"}, {"bikes": 3})))
        [pct] = [a for a in atoms({"fill": "15%"}) if a.kind == "number"]
        [mins] = [a for a in atoms({"gap": "15 min"}) if a.kind == "number"]
        assert not w.view("w").given(pct) and w.view("w").given(mins)

    def test_a_field_renamed_for_another_unit_beside_one_converted_was_left_unconverted(self) -> None:
        """A converter renaming burst_psi and rate_psi_s to burst_kpa and rate_kpa_s that turned 58 into 400 but
        returned 4350 as given left 4350 unconverted; converting both, or renaming one field alone, is no finding."""

        def convert(out: dict[str, Any]) -> list[str]:
            spec = {"hose": "HX-40", "burst_psi": 4350, "rate_psi_s": 58}
            lin = Lineage(_run(_s("c", "to_metric", "parse", 1, {"spec": spec}, out)))
            return [e.reason for e in half_converted(lin.view("c"))]

        [reason] = convert({"hose": "HX-40", "burst_kpa": 4350, "rate_kpa_s": 400})
        assert "burst_kpa=4350" in reason and "rate_kpa_s=400" in reason
        assert convert({"hose": "HX-40", "burst_kpa": 29992, "rate_kpa_s": 400}) == []
        assert convert({"hose": "HX-40", "burst_kpa": 4350}) == []


    def test_a_number_converted_with_the_factor_of_another_unit_is_suspect(self) -> None:
        """A card parser turning 'flour: 1.4 lb' into flour_g=1400.0, in a run that writes flour in kg and g,
        converted the pounds as if they were kilograms; 635.0 (the pound converted), 1400.0 from '1.4 kg', or a
        run that writes no kilograms (no unit whose factor it used) is no finding."""

        def parse(raw: str, out: dict[str, Any], other: str = "Baguette. flour: 0.28 kg; butter 55 g") -> list[str]:
            card = _s("t", "fetch_card", "tool", 1, {"product": "baguette"}, other)
            p = _s("p", "parse", "other", 2, {"card": raw}, out)
            lin = Lineage(_run(card, p))
            units = run_units(lin.view(s) for s in ("t", "p"))
            return [e.diagnoser for e in misconverted(lin.view("p"), units)]

        assert parse("Rye. flour: 1.4 lb per piece", {"flour_g": 1400.0}) == ["lineage:altered"]
        assert parse("Rye. flour: 1.4 lb per piece", {"flour_g": 635.0}) == []
        assert parse("Rye. flour: 1.4 kg per piece", {"flour_g": 1400.0}) == []
        assert parse("Rye. flour: 1.4 lb per piece", {"flour_g": 1400.0}, "Baguette. butter 55 g") == []

class TestRecordEdges:
    def test_a_value_two_steps_returned_is_linked_to_the_one_whose_record_it_came_in(self) -> None:
        """Two lookups answered rack RK-03; a launch list pairing boat KNRV 418262 (a value too many steps held
        to link by) with RK-03 took it from that boat's lookup, the earlier one, not only from the latest."""
        boats = ["KNRV 418262", "DELF 7730"]
        run = _run(
            _s("o", "order", "input", 0, None, {"boats": boats}),
            _s("w", "logbook", "tool", 1, {"boats": boats}, [f"LOG|{b}" for b in boats]),
            _s("p1", "parse", "parse", 2, {"line": "LOG|KNRV 418262"}, {"boat": "KNRV 418262"}),
            _s("l1", "lookup_boat", "tool", 3, {"boat": "KNRV 418262"}, {"boat": "KNRV 418262", "rack": "RK-03"}),
            _s("k1", "check", "condition", 4, {"boat": "KNRV 418262"}, {"boat": "KNRV 418262", "ok": True}),
            _s("p2", "parse", "parse", 4, {"line": "LOG|DELF 7730"}, {"boat": "DELF 7730"}),
            _s("l2", "lookup_boat", "tool", 5, {"boat": "DELF 7730"}, {"boat": "DELF 7730", "rack": "RK-03"}),
            _s("d", "draft", "llm", 6, {"boats": boats}, {"order": boats}),
            _s(
                "c",
                "confirm",
                "tool",
                7,
                {"launches": [{"boat": "KNRV 418262", "rack": "RK-03"}, {"boat": "DELF 7730", "rack": "RK-03"}]},
                None,
            ),
        )
        lin = Lineage(run)
        assert len(lin.holders("s:knrv 418262")) > 4 and len(lin.holders("n:418262")) > 4
        edges = {d.step_id for d in lin.value_edges().get("c", [])}
        assert {"l1", "l2"} <= edges


class TestNamedReads:
    """An imported span that recorded part of its arguments read, by name, the values an earlier step returned."""

    @staticmethod
    def _print_job(fmt: str | None, given: dict[str, Any] | None = None) -> Run:
        plan = _s("plan", "take_order", "other", 0, {"text": "PR-3, 40.0 kg"}, {"press": "PR-3", "paper_kg": 40.0})
        sheet = _s(
            "sheet",
            "save_ticket",
            "other",
            10,
            given if given is not None else {"job": "J-5512"},
            {"job": "J-5512", "press": "PR-3", "paper_kg": 40.0, "ticket_no": "TK-91"},
        )
        use = _s("use", "assign_press", "tool", 20, {"press": "PR-3"}, {"ok": True})
        meta = {"source_format": fmt} if fmt else {}
        return Run("r", "t", outcome="failure", steps=(plan, sheet, use), metadata=meta)

    def test_an_imported_span_read_the_fields_an_earlier_output_held_under_the_same_name(self) -> None:
        """A job ticket (OTLP span given only the job id) returning press=PR-3, as the order's parser did,
        read it there (a value edge to the parser) and introduced only the ticket number no step returned."""
        lin = Lineage(self._print_job("otlp"))
        press = next(a for a in lin.view("use").inputs if a.field == "press")
        assert lin.origin(press, 2).step_id is None
        assert [a.raw for a in lin.introduced("sheet")] == ["TK-91"]
        assert "plan" in [d.step_id for d in lin.value_edges().get("sheet", [])]

    def test_a_complete_recording_or_a_field_given_under_that_name_reads_nothing(self) -> None:
        """Without an imported format (trajdebug's recorder records every argument), or when the span was given
        a press under that name (a value it changed), the ticket introduced the press."""
        lin = Lineage(self._print_job(None))
        press = next(a for a in lin.view("use").inputs if a.field == "press")
        assert lin.origin(press, 2).step_id == "sheet"
        lin = Lineage(self._print_job("otlp", {"job": "J-5512", "press": "PR-6"}))
        assert lin.origin(press, 2).step_id == "sheet"

    def test_a_loops_earlier_call_is_no_step_a_later_call_read_its_constant_from(self) -> None:
        """Each call of a dose calculator (OTLP spans given the body weight only) returning its own factor=0.042 wrote
        it itself: no later call reads it from the call before, so every call introduced it."""
        calls = [
            _s(f"c{i}", "dose_calc", "other", 10 * i, {"body_kg": 5 + i}, {"ml": 7.9 + i, "factor": 0.042})
            for i in range(4)
        ]
        lin = Lineage(Run("r", "t", outcome="failure", steps=tuple(calls), metadata={"source_format": "otlp"}))
        for c in calls:
            assert [a.raw for a in lin.view(c.step_id).inputs if a.field == "factor"] == []
            assert "0.042" in [a.raw for a in lin.introduced(c.step_id)]


def test_a_view_reads_the_numbers_of_an_input_text_said_before_from_its_memo() -> None:
    """`build_view` with a memo of input texts gives the same input keys as without it, and keeps a short text's numbers."""
    from trajdebug.analysis.lineage._views import build_view

    steps = [Step(f"s{i}", "worker", "tool", input="ship twelve crates, 48.5 kg each") for i in range(3)]
    spoken: dict[str, frozenset[str]] = {}
    with_memo = [build_view(s, spoken=spoken).in_keys for s in steps]
    without = [build_view(s).in_keys for s in steps]
    assert with_memo == without
    assert "n:48.5" in with_memo[0] and "n:12" in with_memo[0]
    assert list(spoken) == ["ship twelve crates, 48.5 kg each"]


def test_json_text_too_deeply_nested_to_parse_is_read_as_text() -> None:
    """A tool's answer, or a prompt's text, holding JSON nested deeper than the parser goes is text to the
    conversation's reading and to the pairing of records: nothing raises."""
    from trajdebug.analysis.lineage._pairs import _parsed
    from trajdebug.analysis.lineage._records import _asking_text

    deep = "{" + '"a":' + "[" * 100_000 + "]" * 100_000 + "}"
    call = {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": '{"id": "P-17"}'}}
    messages = [
        {"role": "user", "content": "patient P-17"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": deep},
    ]
    assert _asking_text({"messages": messages}) == "patient p-17"
    assert _parsed(deep) == deep
    assert _parsed({"prompt": deep}) == {"prompt": deep}


class TestCounts:
    @staticmethod
    def _run(count: int, message: str, *, spare: bool = False) -> Run:
        """A farrier's agent: a parser reads the shoe sizes of a note (it kept two of the three), a model picks a
        forge, and the booking tool is handed the count of sizes, which its refusal names."""
        from trajdebug.core.model import ErrorInfo

        return _run(
            _s("note", "read_note", "input", 0, {"text": "3 shoes: 4.5, 5.0, 5.5"}, {"text": "3 shoes: 4.5, 5.0, 5.5"}),
            _s("p", "parse_sizes", "parse", 2, {"text": "3 shoes: 4.5, 5.0, 5.5"}, {"declared": 3, "sizes": [4.5, 5.0]},
               "note"),
            _s("f", "list_forges", "tool", 4, {"yard": "Tollgate"},
               [{"forge": "F-1"}, {"forge": "F-2"}, {"forge": "F-3"}, *([{"forge": "F-4"}] if spare else [])]),
            *([_s("x", "list_anvils", "tool", 5, {"yard": "Tollgate"}, ["A-1", "A-2"])] if spare else []),
            _s("b", "book_shoeing", "tool", 6, {"job": {"declared": 3, "shoes": count, "forge": "F-2"}}, None, "f",
               status="error", error=ErrorInfo("RuntimeError", message)),
        )

    def test_a_failing_steps_count_its_failure_names_links_the_list_it_counts(self) -> None:
        """The booking was handed 2, the length of the parser's size list, and its refusal names 2: it depends on
        the parser, which is on the failure's path though no value of its output reached the booking."""
        from trajdebug.analysis.lineage import count_edges

        run = self._run(2, "note declares 3 shoes, job carries 2")
        assert [(d.step_id, d.key) for d in count_edges(run, {"b": "note declares 3 shoes, job carries 2"})["b"]] == [
            ("p", "count:2")
        ]
        assert "p" in TestReadsTheRecordingMissed._slice(run)

    def test_a_count_the_failure_does_not_name_or_two_lists_share_links_nothing(self) -> None:
        """A count the refusal does not write links nothing; nor does one two lists of the run hold (which one
        was counted is not known)."""
        from trajdebug.analysis.lineage import count_edges

        assert count_edges(self._run(2, "job refused"), {"b": "job refused"}) == {}
        two = self._run(2, "note declares 3 shoes, job carries 2", spare=True)
        assert count_edges(two, {"b": "note declares 3 shoes, job carries 2"}) == {}

    def test_a_count_an_earlier_step_returned_as_a_value_is_handed_on_not_counted(self) -> None:
        """A kennel booking refused for 3 dogs was handed the 3 the request parser returned: an unrelated list of 3
        vaccines the intake model listed is no source of that number."""
        from trajdebug.analysis.lineage import count_edges
        from trajdebug.core.model import ErrorInfo

        message = "cannot board 3 dogs: kennel K-2 is full this week"
        run = _run(
            _s("req", "read_request", "input", 0, {"text": "board my dogs"}, {"text": "board my dogs"}),
            _s("p", "parse_request", "parse", 2, {"text": "board my dogs"}, {"dogs": 3, "town": "Lund"}, "req"),
            _s("v", "list_vaccines", "llm", 3, {"text": "board my dogs"}, {"vaccines": ["rabies", "parvo", "kennel cough"]}),
            _s("b", "book_kennel", "tool", 6, {"kennel": "K-2", "dogs": 3}, None, "p",
               status="error", error=ErrorInfo("RuntimeError", message)),
        )
        assert count_edges(run, {"b": message}) == {}


def test_a_value_quoted_in_a_json_error_body_is_named_by_the_failure() -> None:
    """A booking service refused with a JSON body whose detail sentence quotes the hall ('Aurora Hall'): the
    failure names the hall, as when the sentence is the whole message; a sentence's plain words name nothing new."""
    from trajdebug.analysis.lineage import message_atoms

    body = "HTTP 400: " + json.dumps({"error": "unknown_hall", "detail": "hall 'Aurora Hall' is not bookable on Sundays"})
    keys = {a.key for a in message_atoms(body)}
    assert "s:aurora hall" in keys
    assert keys >= {a.key for a in atoms(body)}
    assert not any(a.key == "s:aurora hall" for a in atoms(body))


def test_a_plain_message_names_each_value_once() -> None:
    """A refusal written as a sentence (no JSON body) names its hall, date and number once each, as the atoms of
    the sentence do: only a JSON body's sentences are read a second time."""
    from trajdebug.analysis.lineage import message_atoms

    message = "hall 'Cedar Loft' is not bookable on 2027-03-09 for 14 guests"
    assert [a.key for a in message_atoms(message)] == [a.key for a in atoms(message)]


class TestCountedItems:
    @staticmethod
    def _run(listed: int) -> Run:
        """A seed library's agent: a catalogue tool answers one page of a drawer's packets, a policy tool the
        loan's due date, and the loan desk, handed both, refuses a packet missing from the page and counts the page."""
        from trajdebug.core.model import ErrorInfo

        packets = {f"SP-10{i}": {"crop": crop, "grams": 5 + i} for i, crop in enumerate(["kale", "leek", "chard", "okra"][:listed])}
        message = f"no packet SP-104 in drawer D-7 ({listed} entries)"
        return _run(
            _s("u", "read_request", "input", 0, {"text": "lend SP-101 and SP-104"}, {"text": "lend SP-101 and SP-104"}),
            _s("c", "fetch_drawer", "tool", 2, {"drawer": "D-7"}, {"drawer": "D-7", "packets": packets}, "u"),
            _s("m", "loan_policy", "tool", 4, {"member": "M-12"}, {"member": "M-12", "due": "2026-05-01"}, "u"),
            _s("d", "lend_packets", "other", 6,
               {"asked": ["SP-101", "SP-104"], "drawer": {"packets": packets}, "due": "2026-05-01"},
               None, "c", "m", status="error", error=ErrorInfo("LookupError", message)),
        )

    def test_a_count_the_failure_names_of_a_collection_the_failing_step_was_given_marks_its_maker(self) -> None:
        """The loan desk's refusal counts the 3 packets of the page it was handed: the catalogue tool that
        answered a collection that long is where the failure points (a page cut short), above the policy tool
        whose due date the desk was also given."""
        from trajdebug.analysis import analyze

        a = analyze(self._run(3), top=10, model=None)
        top = a.root_causes[0]
        assert top.step_id == "c", [(c.step_id, c.reasons) for c in a.root_causes[:3]]
        assert any("one of the 3 items" in r for r in top.reasons)

    def test_plain_numbers_arguments_and_one_records_fields_are_no_collection(self) -> None:
        """A position ``[lat, lon, alt]`` is a reading, not three items; a step's own arguments and one booking's
        ``room``, ``date`` and ``guest`` are fields, not three items; a map is counted only when its keys share a
        shape (``T-1``, ``T-2``, ``T-3``), and a list of ids or records always."""
        from trajdebug.analysis.lineage import counted_items

        three = atoms({"n": 3})[0]
        assert counted_items({"pos": [51.5, -0.12, 14.0], "drones": 7}, three) == []
        assert counted_items({"route": "R-3", "day": "2026-05-01", "pilot": "Ana"}, three) == []
        assert counted_items({"booking": {"room": "R-3", "date": "2026-05-01", "guest": "Ana Ruiz"}}, three) == []
        assert counted_items({"tents": {"T-1": "dome", "T-2": "tunnel", "T-3": "bell"}}, three) != []
        assert [x.raw for x in counted_items({"tents": ["T-1", "T-2", "T-3"]}, three)] == ["T-1", "T-2", "T-3"]

    def test_odd_collections_are_read_without_crashing(self) -> None:
        """Records whose maps mix int and str keys are compared without sorting their keys, and a JSON text
        nested past the parser's depth, or longer than the cap, is no collection; neither stops the analysis."""
        from trajdebug.analysis.lineage import counted_items

        three = atoms({"n": 3})[0]
        mixed = [{1: "first", "name": n} for n in ("a", "b", "c")]
        assert len(counted_items({"rows": mixed, "copy": list(mixed)}, three)) == 3
        assert counted_items({"blob": "[" * 5000 + "]" * 5000}, three) == []
        assert counted_items({"tags": '["K-1", "K-2", "K-3"]'}, three) != []
        assert counted_items({"tags": '["K-1", "K-2", "K-3"]' + " " * 200_000}, three) == []

    def test_a_number_no_collection_has_as_its_size_counts_nothing(self) -> None:
        """A collection of two is no count (two of anything recur by chance), and a number that is the size of
        no collection the step was given, or of two of them, points at no items."""
        from trajdebug.analysis.lineage import counted_items

        six = atoms({"n": 6})[0]
        three = atoms({"n": 3})[0]
        assert counted_items({"a": [1, 2]}, atoms({"n": 2})[0]) == []
        assert counted_items({"a": [1, 2, 3, 4]}, six) == []
        assert counted_items({"a": ["x1", "x2", "x3"], "b": ["y1", "y2", "y3"]}, three) == []
        assert [x.raw for x in counted_items({"a": {"K-1": "kale", "K-2": "leek", "K-3": "chard"}}, three)] == ["kale", "leek", "chard"]


def test_a_view_holds_the_atoms_and_the_text_its_values_read_to() -> None:
    """A step's view holds what `atoms` and `iter_text` read of its values:
    the non-trivial atoms of input and output, and both values' strings joined and case-folded."""
    from trajdebug.analysis.lineage._views import build_view, trivial
    from trajdebug.core.values import atoms, iter_text

    given = {"city": "Lyon", "nights": 4, "note": "arrive 2027-03-02, room 'B12'", "cut": {"__trajdebug_truncated__": "More"}}
    got = {"booking": "BK-88120", "total": "EUR 1,240.50", "rows": [{"id": f"R-{i}", "kg": i * 2.5} for i in range(250)]}
    view = build_view(Step("s", "book", "tool", input=given, output=got))
    assert view.inputs == [a for a in atoms(given) if not trivial(a)]
    assert view.outputs == [a for a in atoms(got) if not trivial(a)]
    assert view.in_text == "\n".join(iter_text(given)).casefold()
    assert view.out_text == "\n".join(iter_text(got)).casefold()
    assert "more" in view.in_text and "n:1240.5" in view.out_keys


def test_what_a_step_read_from_run_state_is_among_what_it_was_given(tmp_path: Any) -> None:
    """A recorded step handed only an id, that read the record from ``run.state``, was given that record's
    values, and a step that read the estimates it totals from the state was given them: neither introduced
    what it copied, nor is the origin of a value it copied; the labour the quote priced at a rate of its own
    it still introduced (nu26 F1)."""
    from tests.builders import recorded_boiler_run

    run = recorded_boiler_run(tmp_path / "r.jsonl")
    lin = Lineage(run)
    norm = [s for s in run.steps if s.name == "normalise_reading"]
    assert [lin.introduced(s.step_id) for s in norm] == [[], []]
    [quote] = [s for s in run.steps if s.name == "price_quote"]
    assert [a.raw for a in lin.introduced(quote.step_id)] == ["488.0"]
    # (The estimate wrote a bare 5.0, too small a number to trace: who made it is not known, but not the quote.)
    [b2] = [a for a in lin.view(quote.step_id).outputs if a.field == "b2"]
    assert lin.origin(b2, len(run.steps)).step_id is None


def test_a_state_value_many_steps_read_is_read_once(monkeypatch: Any) -> None:
    """A catalog one step stored in ``run.state`` and many steps read is viewed once, not once per reader
    (analyze grew with readers x catalog size), and every reader is still given its values (rev53a M2)."""
    from tests.builders import reading_state

    from trajdebug.analysis.lineage import _views

    catalog = [{"sku": f"SKU-{i:04d}", "price": 1000 + i} for i in range(40)]
    load = step("load", "load", "tool", 0, {}, {"ok": True}, attributes={"state_values": {"catalog": catalog}})
    picks = [
        reading_state(step(f"p{i}", "pick", "llm", 10 + i, {"i": i}, {"sku": f"SKU-{i:04d}"}), "load", "catalog")
        for i in range(20)
    ]
    read: list[Any] = []
    real = _views.build_view

    def counted(s: Step, *args: Any, **kw: Any) -> Any:
        read.append(s.input)
        return real(s, *args, **kw)

    monkeypatch.setattr(_views, "build_view", counted)
    lin = Lineage(_run(load, *picks))
    assert sum(1 for x in read if isinstance(x, dict) and "catalog" in x) == 1
    assert all("n:1007" in lin.view(f"p{i}").in_keys for i in range(20))
    assert all(lin.introduced(f"p{i}") == [] for i in range(20))


def test_a_stale_store_read_is_where_the_old_record_came_from() -> None:
    """A memory write is handed a profile, then its update; the read answers the old one (a cache never
    invalidated) and the courier refuses it.  The record was handed to a step before, yet the read that answered
    it in place of the update is where the old address entered the run: it stays the first root cause (review
    rev55a: no store read is taken for a faithful read back)."""
    old = {"name": "Ada Brook", "address": "1 Old Road", "city": "Leeds"}
    new = {"name": "Ada Brook", "address": "9 New Street", "city": "York"}

    @trajdebug.step(kind="tool")
    def memory_write(key: str, record: dict[str, str]) -> dict[str, bool]:
        return {"ok": True}

    @trajdebug.step(kind="tool")
    def memory_read(key: str) -> dict[str, str]:
        return dict(old)

    @trajdebug.step(kind="tool")
    def ship(name: str, address: str, city: str) -> None:
        raise RuntimeError(f"courier: {name} does not live at {address}, {city}; current address 9 New Street, York")

    with deterministic(), capture_runs() as runs:
        try:
            with trajdebug.run("memory", task="handle ticket"):
                memory_write("profile", dict(old))
                memory_write("profile", dict(new))
                p = memory_read("profile")
                ship(p["name"], p["address"], p["city"])
        except RuntimeError:
            pass
    (run,) = runs
    a = analyze(run)
    assert a.root_causes[0].step_id == next(s.step_id for s in run.steps if s.name == "memory_read")
