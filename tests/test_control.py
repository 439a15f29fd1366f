"""Edges no value carries (trajdebug.analysis.inference._control): a plan's or a router's choice of the steps
that ran (control dependence), and a write's effect on the world that a later step read back (env)."""

from __future__ import annotations

import pytest
from tests.builders import step

from trajdebug.analysis.inference import control_edges, env_edges
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


_s = step


def _run(*steps: Step) -> Run:
    return Run("r", "t", outcome="failure", steps=steps)


def _slice(run: Run) -> set[str]:
    """The failures' backward slice over the edges the analysis used (the steps a search can reach)."""
    from trajdebug.analysis import analyze
    from trajdebug.core.graph import DependencyGraph

    a = analyze(run, top=50)
    return DependencyGraph(a.run).backward_slice([f.step_id for f in a.failures])


def _plan_run() -> Run:
    """A planner model's step list drives the run; it left the tide table out, so the berth is chosen on an
    assumed tide and the harbour refuses it. No value of the plan reaches the reservation."""
    return _run(
        _s("llm", "plan_shift", "llm", 0, "plan the shift", "Plan: load_arrivals, load_berths, allocate"),
        _s("plan", "parse_plan", "parse", 2, {"text": "Plan: ..."}, ["load_arrivals", "load_berths", "allocate"], "llm"),
        _s("arr", "load_arrivals", "tool", 4, {"shift": "mon"}, [{"vessel": "HMM ARIA", "eta_hour": 4}]),
        _s("brt", "load_berths", "retrieval", 6, {"port": "Leixoes"}, [{"berth": "B2", "depth_m": 14.0}]),
        _s("pick", "choose_berth", "condition", 8, {"eta": 4, "berths": [{"berth": "B2", "depth_m": 14.0}]},
           {"vessel": "HMM ARIA", "berth": "B2", "hour": 4}, "arr", "brt"),
        _s("res", "reserve_berth", "tool", 10, {"choice": {"vessel": "HMM ARIA", "berth": "B2", "hour": 4}}, None,
           "pick", status="error", error=ErrorInfo("HarbourRejected", "HMM ARIA at B2 04:00: under-keel clearance -0.3 m")),
    )


class TestControl:
    def test_the_steps_a_plan_lists_depend_on_the_plan_by_control_edges(self) -> None:
        """Each step a plan's list names, the first of that name after it, gets a control edge to the plan."""
        edges = control_edges(_plan_run())
        assert {sid: [(d.step_id, d.kind, d.key) for d in ds] for sid, ds in edges.items()} == {
            "arr": [("plan", "control", "chose:load_arrivals")],
            "brt": [("plan", "control", "chose:load_berths")],
        }

    def test_a_plan_that_left_a_step_out_is_on_the_failures_path(self) -> None:
        """The planner model, whose plan no value reaches the failure from, is in the failing step's slice."""
        assert {"llm", "plan"} <= _slice(_plan_run())

    def test_a_router_answer_names_the_node_it_sent_the_run_to_and_what_that_node_encloses(self) -> None:
        """A router answering `rank` (its words, in any order or case) chose the next `rank` node: that node and
        every step inside it (the failing `submit_panel`) depend on the router, and through it on the cursor
        whose count the router read."""
        run = _run(
            _s("cur", "advance_cursor", "other", 0, {"scored": 2, "total": 4}, {"scored": 3, "total": 4, "remaining": 0}),
            _s("route", "next_proposal", "other", 2, {"cursor": {"scored": 3, "total": 4, "remaining": 0}}, "rank", "cur"),
            _s("node", "Rank", "agent", 4, {"call": "call-open"}, {}),
            _s("sub", "submit_panel", "tool", 5, {"call_id": "call-open", "ranking": ["GR-104", "GR-108"]}, None,
               parent_id="node", status="error", error=ErrorInfo("PanelRejected", "proposal GR-102 was never scored")),
        )
        edges = control_edges(run)
        assert [d.step_id for d in edges["node"]] == ["route"]
        assert [d.step_id for d in edges["sub"]] == ["route"]
        # The steps inside share the one choice: their edges are weaker, so blame through many of them
        # does not add up past the choice's own share.
        assert edges["sub"][0].confidence < edges["node"][0].confidence
        assert {"route", "cur"} <= _slice(run)

    def test_a_name_the_chooser_was_given_or_a_later_repeat_chose_nothing(self) -> None:
        """A step handing on a name it was given (a tool name in a conversation) chose nothing, and a router
        chooses only the first step of that name after it, not every later one."""
        run = _run(
            _s("relay", "relay", "other", 0, {"tool": "lookup"}, "lookup"),
            _s("a", "lookup", "tool", 2, {"q": 1}, {"x": 1}),
            _s("route", "router", "other", 4, {"x": 1}, {"path": "emergency_release"}),
            _s("b", "release_emergency", "tool", 6, {"q": 2}, {"y": 2}),
            _s("c", "release_emergency", "tool", 8, {"q": 3}, {"y": 3}),
        )
        edges = control_edges(run)
        assert list(edges) == ["b"]
        assert edges["b"][0].step_id == "route"


class TestEnv:
    def test_a_read_after_a_write_to_the_same_resource_depends_on_the_write(self) -> None:
        """A fill-level check read from a server after two truck moves is linked to the moves whose stations
        it reads (their answers nobody read: they were writes), and through them to the parser that cut a
        move's count; a lookup whose answer was read is no write."""
        run = _run(
            _s("status", "get_station_status", "tool", 0, {"station": "O-3"}, {"station": "O-3", "bikes": 27}),
            _s("llm", "plan_moves", "llm", 2, "plan moves: O-3 has 27", "MOVE O-3 -> O-5: 12 bikes", "status"),
            _s("parse", "parse_moves", "other", 4, "MOVE O-3 -> O-5: 12 bikes", [{"from": "O-3", "to": "O-5", "bikes": 1}], "llm"),
            _s("move", "dispatch_move", "tool", 6, {"from": "O-3", "to": "O-5", "bikes": 1}, {"truck": "TRK-3", "moved": 1}, "parse"),
            _s("check", "verify_fill_levels", "other", 8, {"O-3": 26, "O-5": 4}, None,
               status="error", error=ErrorInfo("BalanceCheckFailed", "O-3 holds 26 of 30 docks after the moves")),
        )
        edges = env_edges(run, consumed={"status", "llm", "parse"})
        assert [(d.step_id, d.kind) for d in edges["check"]] == [("move", "env")]
        assert "status" not in {d.step_id for ds in edges.values() for d in ds}
        assert {"move", "parse"} <= _slice(run)

    def test_a_step_linked_to_nothing_and_given_no_id_read_what_the_writes_left(self) -> None:
        """A reserve check handed only a stock count, with no edge at all, is linked weakly to the writes
        before it (a release of units), so the router that sent a request to that release is on its path."""
        run = _run(
            _s("route", "route_request", "other", 0, {"request": "R-42"}, {"request": "R-42", "path": "emergency_release"}),
            _s("rel", "release_emergency", "tool", 2, {"request": "R-42", "units": ["U-3101"]}, {"issue": "EMR-42"}),
            _s("check", "check_reserve", "other", 4, {"units": 3}, None,
               status="error", error=ErrorInfo("LabRejected", "O-negative stock is 3 units, under the reserve of 4")),
        )
        edges = env_edges(run, consumed=set(), linked={"rel"})
        assert [(d.step_id, d.kind) for d in edges["check"]] == [("rel", "env")]
        assert {"rel", "route"} <= _slice(run)

    def test_a_failing_check_naming_a_resource_it_was_not_given_read_the_writes(self) -> None:
        """A drain check handed only a date, linked by that date to an earlier lookup, fails about cask `K7`
        it was never given: it read the casks from the world, so it is linked to the writes before it (the
        pumping of each batch) and through them to the planner that left the cask out; a failure naming only
        what the check was given (or a quantity, `12.5hl`) is no such read."""
        from trajdebug.analysis.inference import world_readers

        run = _run(
            _s("date", "cellar_calendar", "tool", 0, {"cellar": "north"}, {"day": "2026-05-02"}),
            _s("plan", "plan_pumping", "other", 2, {"casks": ["K3", "K5", "K7"]}, {"batches": [["K3", "K5"]]}),
            _s("pump", "pump_batch", "tool", 4, {"casks": ["K3", "K5"]}, {"pumped": True}, "plan"),
            _s("check", "verify_casks_drained", "tool", 6, {"day": "2026-05-02"}, None, "date",
               status="error", error=ErrorInfo("RuntimeError", "cask K7 still holds 12.5hl on 2026-05-02")),
        )
        assert world_readers(run, {"check": "cask K7 still holds 12.5hl on 2026-05-02"}) == {"check"}
        assert world_readers(run, {"check": "12.5hl left on 2026-05-02"}) == frozenset()
        edges = env_edges(run, consumed={"date", "plan"}, linked={"pump", "check"}, readers={"check"})
        assert [(d.step_id, d.kind) for d in edges["check"]] == [("pump", "env")]
        assert "check" not in env_edges(run, consumed={"date", "plan"}, linked={"pump", "check"})
        assert {"pump", "plan"} <= _slice(run)

    def test_a_url_segment_or_a_format_word_in_a_failure_names_no_resource(self) -> None:
        """A sensor read that fails on ``/v2/sensors?hive=H-4`` (its own hive), on a ``latin-1`` codec or a
        ``sha256`` mismatch names no record it was not given; a lower-case code is a record only when a step
        of the run returned it (``frame-9``)."""
        from trajdebug.analysis.inference import world_readers

        run = _run(
            _s("list", "list_frames", "tool", 0, {"hive": "H-4"}, {"frames": ["frame-9", "frame-11"]}),
            _s("read", "read_sensor", "tool", 2, {"hive": "H-4"}, None, status="error",
               error=ErrorInfo("ConnectionError", "x")),
        )
        for message in ("Max retries exceeded with url: /v2/sensors?hive=H-4",
                        "'latin-1' codec can't decode byte 0x9c", "sha256 digest mismatch", "md5sum v2 differs"):
            assert world_readers(run, {"read": message}) == frozenset(), message
        assert world_readers(run, {"read": "frame-9 is empty"}) == {"read"}
        assert world_readers(run, {"read": "comb C3 is empty"}) == {"read"}


class TestChangedInPlace:
    def _memory_run(self, key_written: str) -> Run:
        """A memory step creates the shared mapping (a recorded write), later memory steps fill it in place
        (recorded as reads), and each reader after them is given what the last one left."""
        def remember(sid: str, start: int, animal: str, key: str, **kw: object) -> Step:
            return _s(sid, "remember", "state", start, {"sheet": {"animal": animal, "excluded": ["nuts"]}},
                      {key: ["nuts"]}, **kw)  # type: ignore[arg-type]

        return _run(
            remember("m1", 0, "AX-0101", "AX-0101", attributes={"state_writes": ["memo"], "state_values": {"memo": {}}}),
            _s("r1", "context", "other", 2, {"animal": "AX-0101"}, {"avoid": ["nuts"]}, "m1",
               attributes={"state_reads": ["memo"]}),
            remember("m2", 4, "AX-0102", key_written, attributes={"state_reads": ["memo"]}),
            _s("r2", "context", "other", 6, {"animal": "AX-0102"}, {"avoid": []}, "m1",
               attributes={"state_reads": ["memo"]}),
            _s("chk", "review", "condition", 8, {"avoid": []}, None, "r2", status="error",
               error=ErrorInfo("AssertionError", "review: nuts are excluded for AX-0102")),
        )

    def test_a_state_step_changing_a_read_value_in_place_is_linked_to_the_next_reader(self) -> None:
        """A state step that read a shared key and recorded no write of it is what the next reader of that
        key depends on (not the first writer alone), and a key it stored under an id it was not given is its fault."""
        from trajdebug.analysis import analyze
        from trajdebug.analysis.inference import CHANGED_KEY, mutation_edges

        edges = mutation_edges(self._memory_run("AX-0102"))
        assert {d.step_id for d in edges["r2"]} == {"m2"} and edges["r2"][0].key == f"{CHANGED_KEY}:memo"
        assert "r1" not in edges
        wrong = self._memory_run("AX-0120")
        assert "m2" in _slice(wrong)
        assert analyze(wrong, top=3).localization.candidates[0].step_id == "m2"


def _retried_run() -> Run:
    """A greenhouse agent: the bed list, each bed's check, a model choosing two beds, a parser that keeps only the first, a
    reservation that timed out and was made again with the same bed, and the check that counts the holds."""
    beds = [{"bed": "BED-4", "rows": 6}, {"bed": "BED-9", "rows": 6}, {"bed": "BED-12", "rows": 4}]
    return _run(
        _s("req", "read_order", "input", 0, {"text": "two beds for tomato trays"}, {"trays": 2, "crop": "tomato"}),
        _s("list", "list_beds", "retrieval", 2, {"crop": "tomato"}, beds, "req"),
        *(
            _s(f"chk{i}", "check_bed", "tool", 3, {"row": b}, {"bed": b["bed"], "free": 6 - i}, "list")
            for i, b in enumerate(beds)
        ),
        _s("pick", "choose_beds", "llm", 4, {"beds": beds, "trays": 2}, "Chosen beds: BED-4, BED-9", "list", "req"),
        _s("parse", "parse_beds", "parse", 6, {"answer": "Chosen beds: BED-4, BED-9"}, ["BED-4"], "pick"),
        _s("try1", "reserve_bed", "tool", 8, {"bed": "BED-4"}, None, status="error",
           error=ErrorInfo("TimeoutError", "bed service timed out")),
        _s("try2", "reserve_bed", "tool", 10, {"bed": "BED-4"}, {"bed": "BED-4", "hold": "HLD-31"}),
        _s("check", "confirm_holds", "tool", 12, {"holds": [{"bed": "BED-4", "hold": "HLD-31"}], "trays": 2}, None,
           "try2", "req", status="error", error=ErrorInfo("ValueError", "rejected: 1 holds for 2 trays")),
    )


class TestRetries:
    def test_a_retry_takes_over_the_edges_found_for_the_failed_attempt_before_it(self) -> None:
        """A call made again with the same input right after it failed depends on what its attempt depended
        on: the parser whose pick the attempt was handed."""
        from trajdebug.analysis.inference import retry_edges

        run = _retried_run()
        every = {s.step_id: list(s.deps) for s in run.steps}
        every["try1"] = [*every["try1"], Dependency("parse", "data", "inferred", 0.6, "picked:bed")]
        edges = retry_edges(run, every)
        assert [(d.step_id, d.key) for d in edges["try2"]] == [("parse", "retried:picked:bed")]

    def test_a_parser_that_dropped_a_pick_before_a_retried_call_is_on_the_failures_path(self) -> None:
        """The parser that kept one bed of the two chosen reaches the failing check through the retried
        reservation, though only the retry's answer reached the check."""
        assert "parse" in _slice(_retried_run())

    def test_a_call_made_again_with_another_input_takes_over_nothing(self) -> None:
        """The next call of a loop (another bed) after a failed one is no retry of it."""
        from trajdebug.analysis.inference import retry_edges

        run = _retried_run()
        steps = [s if s.step_id != "try2" else Step(**{**_fields(s), "input": {"bed": "BED-9"}}) for s in run.steps]
        run = Run("r", "t", outcome="failure", steps=tuple(steps))
        every = {s.step_id: [*s.deps, Dependency("parse", "data", "inferred", 0.6)] if s.step_id == "try1" else list(s.deps)
                 for s in run.steps}
        assert "try2" not in retry_edges(run, every)


def _fields(s: Step) -> dict[str, object]:
    from dataclasses import fields

    return {f.name: getattr(s, f.name) for f in fields(s)}


def _register_run() -> Run:
    """A kiln log kept between calls: each firing's record is written by the same code step, which returns the
    whole log, the earlier firings' entries carried over.  The first call wrote the wrong glaze for its batch; the
    release check refuses the batch by that glaze."""
    return _run(
        _s("req", "read_batches", "input", 0, {"day": "mon"},
           [{"batch": "KB-7", "glaze": "celadon"}, {"batch": "KB-9", "glaze": "shino"}]),
        _s("w1", "log_firing", "other", 2, {"batch": "KB-7", "glaze": "celadon"}, {"KB-7": {"glaze": "tenmoku"}}, "req"),
        _s("w2", "log_firing", "other", 4, {"batch": "KB-9", "glaze": "shino"},
           {"KB-7": {"glaze": "tenmoku"}, "KB-9": {"glaze": "shino"}}, "req"),
        _s("ship", "release_ware", "tool", 6, {"log": {"KB-7": {"glaze": "tenmoku"}, "KB-9": {"glaze": "shino"}}}, None,
           "w2", status="error", error=ErrorInfo("ValueError", "batch KB-7 glazed tenmoku, the order asks for celadon")),
    )


class TestCarried:
    def test_a_later_call_that_returns_an_earlier_calls_entries_again_depends_on_that_call(self) -> None:
        """The log's second call carried the first call's entry: it depends on the first call, which is on the
        failure's path though no value the check was handed names it."""
        from trajdebug.analysis.inference import carried_edges

        edges = carried_edges(_register_run())
        assert [(d.step_id, d.key) for d in edges["w2"]] == [("w1", "carried:KB-7")]
        assert "w1" in _slice(_register_run())

    def test_an_entry_the_step_was_given_is_not_carried(self) -> None:
        """A call handed the earlier entry in its input was given it: no accumulator carried it."""
        from trajdebug.analysis.inference import carried_keys

        run = _register_run()
        w1, w2 = run.steps[1], run.steps[2]
        given = Step(**{**_fields(w2), "input": {"batch": "KB-9", "log": {"KB-7": {"glaze": "tenmoku"}}}})
        assert carried_keys(w2, [w1]) == {"KB-7": w1}
        assert carried_keys(given, [w1]) == {}

    def test_a_carried_entry_is_no_conflict_with_what_the_later_call_was_given(self) -> None:
        """Only the first call, which wrote tenmoku when given celadon, contradicts what it was given; the second
        call's copy of that entry answers the first call's input, not its own."""
        from trajdebug.analysis import analyze

        a = analyze(_register_run(), top=50)
        conflicts = {c.step_id for c in a.localization.ranked_all if "lineage:conflict" in c.signals}
        assert conflicts == {"w1"}


class TestCarriedGuards:
    @staticmethod
    def _builder_run() -> Run:
        """A request builder for a tide-gauge poll: every call returns the same header record beside the station's
        parameters (fresh each call)."""
        head = {"accept": "text/csv", "client": "tidepoll/1"}
        steps = [_s("req", "read_stations", "input", 0, {"day": "tue"}, {"stations": ["Wyk", "Husum", "Buesum"]})]
        for i, st in enumerate(["Wyk", "Husum", "Buesum"]):
            steps.append(_s(f"b{i}", "build_poll", "other", 2 + 2 * i, {"station": st},
                            {"headers": head, "params": {"station": st, "span": "6h"}}, "req"))
        return _run(*steps)

    def test_a_constant_record_every_call_returns_is_carried_by_none(self) -> None:
        """Headers the builder returns unchanged in every call answer nothing a call was given: no call depends on
        the one before it for them."""
        from trajdebug.analysis.inference import carried_edges

        assert carried_edges(self._builder_run()) == {}

    def test_a_call_adding_only_a_scalar_beside_an_earlier_entry_carries_nothing(self) -> None:
        """The log's second call returned the first call's entry again beside only a counter: no entry of it is
        new, so no accumulator is shown updating (a scalar is no update of a register)."""
        from trajdebug.analysis.inference import carried_keys

        run = _register_run()
        w1, w2 = run.steps[1], run.steps[2]
        counted = Step(**{**_fields(w2), "output": {"KB-7": {"glaze": "tenmoku"}, "firings": 2}})
        assert carried_keys(counted, [w1]) == {}
        assert carried_keys(w2, [w1]) == {"KB-7": w1}

    def test_each_entry_of_a_long_accumulator_run_is_written_out_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Over a thousand calls of one accumulator, each entry is serialised once, not once per earlier call (the
        pass stays linear in the run's length)."""
        from trajdebug.analysis.inference import _control

        steps = [_s(f"a{i}", "tally_reading", "other", i, {"i": i},
                    {"settings": {"mode": "slow"}, "last": {"i": i, "mm": i % 7}}) for i in range(1000)]
        calls: list[object] = []
        canon = _control._canon
        monkeypatch.setattr(_control, "_canon", lambda value: calls.append(value) or canon(value))
        _control.carried_map(steps)
        assert len(calls) <= 3 * len(steps)

