"""Diagnosers: the evidence each finds on a faulty step, and the sound verdict on a correct one."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from trajdebug.analysis._detect import Failure, detect
from trajdebug.analysis._localize import localize
from trajdebug.analysis.diagnosers import (
    BUILTIN_DIAGNOSERS,
    FAULTY_THRESHOLD,
    DiagnoseContext,
    Evidence,
    Verdict,
    diagnose,
    fold,
    registered_diagnosers,
)
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


def _run(*steps: Step, **kw: Any) -> Run:
    return Run("r", "test", steps=steps, **kw)


def _verdict(run: Run, step_id: str, failures: Iterable[Failure] = (), sql_db: str | None = None) -> Verdict:
    ctx = DiagnoseContext.build(
        run, diagnosers=registered_diagnosers(), failures=tuple(failures), sql_db=sql_db
    )
    return ctx.verdict(step_id)


def _from(v: Verdict, diagnoser: str) -> list[Evidence]:
    return [e for e in v.evidence if e.diagnoser == diagnoser]


D = Dependency


class TestFold:
    def test_noisy_or_and_sound_damping(self) -> None:
        """Contributions combine by noisy-OR; sound evidence damps the result in proportion to its share."""
        ev = [Evidence("s", 0.5, "a", "x"), Evidence("s", 0.5, "b", "y")]
        assert fold("s", ev).suspicion == pytest.approx(0.75)
        damped = fold("s", [*ev, Evidence("s", 0.0, "ok", "z", sound=True)])
        assert damped.suspicion == pytest.approx(0.75 * (1 - 0.3 / 3))
        assert fold("s", [Evidence("s", 0.0, "ok", "z", sound=True)]).suspicion == 0.0
        assert fold("s", []).faulty is False
        assert fold("s", [Evidence("s", FAULTY_THRESHOLD, "r", "x")]).faulty is True

    def test_reasons_are_strongest_first(self) -> None:
        """A verdict lists the reasons of its suspicious evidence, strongest first, without the sound ones."""
        v = fold(
            "s",
            [
                Evidence("s", 0.2, "weak", "x"),
                Evidence("s", 0.7, "strong", "y"),
                Evidence("s", 0.0, "fine", "z", sound=True),
            ],
        )
        assert v.reasons == ("strong", "weak")


class TestToolCalls:
    def test_argument_contradicting_upstream_output(self) -> None:
        """A tool argument with the same field as an upstream output but another value is suspect."""
        run = _run(
            Step("u", "lookup_user", "tool", output={"user_id": 42, "name": "Ada"}),
            Step("t", "cancel_order", "tool", input={"user_id": 43}, deps=(D("u"),)),
        )
        [e] = _from(_verdict(run, "t"), "tool-arguments")
        assert e.suspicion >= 0.5
        assert "user_id=43" in e.reason and "42" in e.reason

    def test_arguments_from_nowhere_in_an_imported_trace(self) -> None:
        """In a run with only inferred edges, an argument found in no earlier output is suspect."""
        run = _run(
            Step("a", "llm", "llm", output="Look up order #W2378156 for the user."),
            Step("t", "get_order", "tool", input={"order_id": "#W9999999"}),
        )
        [e] = _from(_verdict(run, "t"), "tool-arguments")
        assert not e.sound and "#W9999999" in e.reason

    def test_arguments_that_come_from_upstream_are_sound(self) -> None:
        """Arguments copied from an upstream output are sound evidence."""
        run = _run(
            Step("a", "llm", "llm", output="Look up order #W2378156 for the user."),
            Step("t", "get_order", "tool", input={"order_id": "#W2378156"}, deps=(D("a"),)),
        )
        [e] = _from(_verdict(run, "t"), "tool-arguments")
        assert e.sound

    def test_a_setting_argument_comes_from_nowhere_without_blame(self) -> None:
        """A tool argument that is a setting of the call (a window ``24h``, a page size of 50) found in no
        earlier output is the caller's choice; a made-up order id beside it is still named."""
        run = _run(
            Step("a", "llm", "llm", output="Look up order #W2378156 for the user."),
            Step("t", "get_order", "tool", input={"order_id": "#W2378156", "window": "24h", "limit": 50}),
        )
        assert not [e for e in _from(_verdict(run, "t"), "tool-arguments") if not e.sound]
        bad = _run(
            Step("a", "llm", "llm", output="Look up order #W2378156 for the user."),
            Step("t", "get_order", "tool", input={"order_id": "#W9999999", "window": "24h", "limit": 50}),
        )
        [e] = _from(_verdict(bad, "t"), "tool-arguments")
        assert not e.sound and "#W9999999" in e.reason and "24h" not in e.reason and "50" not in e.reason

    def test_an_argument_before_any_model_spoke_is_the_programs(self) -> None:
        """A tool called before any model call, with an argument no step produced (today's date), was given
        it by the program: not a made-up value; after a model spoke, the same call is suspect."""
        first = _run(
            Step("i", "ingest", "other", input={"feed": "DMA=DMA-11"}, output={"dma": "DMA-11"}),
            Step("t", "get_roster", "tool", input={"date": "2026-03-02"}),
            Step("a", "llm", "llm", output="Triage DMA-11."),
        )
        assert not [e for e in _from(_verdict(first, "t"), "tool-arguments") if not e.sound]
        later = _run(
            Step("i", "ingest", "other", input={"feed": "DMA=DMA-11"}, output={"dma": "DMA-11"}),
            Step("a", "llm", "llm", output="Triage DMA-11."),
            Step("t", "get_roster", "tool", input={"date": "2026-03-02"}),
        )
        [e] = _from(_verdict(later, "t"), "tool-arguments")
        assert not e.sound and "2026-03-02" in e.reason

    def test_an_argument_computed_from_one_upstream_answer_comes_from_upstream(self) -> None:
        """A number the agent's code worked out from one upstream answer (4 replicates of 50 seeds: 200) is
        accounted for; a number no pair of that answer's numbers makes is still named."""

        def run_of(seeds: int) -> Run:
            return _run(
                Step("p", "plan", "other", output={"lot": "ACC-1", "replicates": 4, "per_replicate": 50}),
                Step("t", "withdraw", "tool", input={"lot": "ACC-1", "seeds": seeds}, deps=(D("p"),)),
            )

        assert not [e for e in _from(_verdict(run_of(200), "t"), "tool-arguments") if not e.sound]
        [e] = _from(_verdict(run_of(230), "t"), "tool-arguments")
        assert not e.sound and "seeds=230" in e.reason

    def test_a_json_text_argument_comes_from_upstream_when_its_values_do(self) -> None:
        """An argument that is JSON text (an agent used as a tool) is checked value by value: each found
        upstream makes it sound; one found nowhere is named."""

        def run_of(arg: str) -> Run:
            return _run(
                Step("a", "llm", "llm", output="Forecast the night of 2026-12-23."),
                Step("t", "forecaster", "tool", input={"input": arg}),
            )

        [e] = _from(_verdict(run_of('{"night": "2026-12-23"}'), "t"), "tool-arguments")
        assert e.sound
        [e] = _from(_verdict(run_of('{"night": "2026-12-29"}'), "t"), "tool-arguments")
        assert not e.sound and "2026-12-29" in e.reason and "input.night" in e.reason

    def test_server_error_blames_the_tool_client_error_its_arguments(self) -> None:
        """A 5xx marks the tool strongly; a 4xx only mildly (its arguments are the likelier cause)."""
        run = _run(
            Step("a", "api", "tool", output={"status": 503}), Step("b", "api", "tool", output={"status": 404})
        )
        [five] = _from(_verdict(run, "a"), "tool-result")
        [four] = _from(_verdict(run, "b"), "tool-result")
        assert five.suspicion > four.suspicion
        assert "arguments" in four.reason

    def test_tool_error_text_tells_environment_from_arguments(self) -> None:
        """A timeout blames the tool; a business-rule rejection blames the arguments."""
        run = _run(
            Step("a", "api", "tool", status="error", error=ErrorInfo("ToolError", "connection timed out")),
            Step(
                "b",
                "api",
                "tool",
                status="error",
                error=ErrorInfo("ToolError", "non-delivered order cannot be exchanged"),
            ),
        )
        [env] = _from(_verdict(run, "a"), "tool-result")
        [args] = _from(_verdict(run, "b"), "tool-result")
        assert env.suspicion > args.suspicion and "arguments" in args.reason

    def test_a_wrapper_answering_in_place_of_a_failed_call_swallowed_its_error(self) -> None:
        """A step around one tool call that caught the call's timeout and answered a placeholder is the
        suspect, and the timeout only weakly; a wrapper that retried to success, or passed the error on, is not."""

        def run_of(*kids: Step, answer: object = None) -> Run:
            wrap = Step("w", "book_slot", "other", input={"slot": "S-4"},
                        output={"slot": "S-4", "confirmed": False} if answer is None else answer)
            return _run(wrap, *(Step(k.step_id, k.name, k.kind, status=k.status, error=k.error, output=k.output,
                                     parent_id="w") for k in kids))

        timeout = ErrorInfo("TimeoutError", "booking service timed out after 5 s")
        failed = Step("t1", "slot_api", "tool", status="error", error=timeout)
        run = run_of(failed)
        [caught] = _from(_verdict(run, "w"), "swallowed-error")
        [tool] = _from(_verdict(run, "t1"), "tool-result")
        assert caught.suspicion > tool.suspicion and "TimeoutError" in caught.reason
        retried = run_of(failed, Step("t2", "slot_api", "tool", output={"slot": "S-4", "confirmed": True}))
        assert not _from(_verdict(retried, "w"), "swallowed-error")
        told = run_of(failed, answer={"error": "booking service timed out after 5 s"})
        assert not _from(_verdict(told, "w"), "swallowed-error")

    def test_another_source_asked_in_place_of_a_failed_call_is_the_suspect_not_the_failed_call(self) -> None:
        """A price-feed lookup that timed out, followed in the same scope by a read of the stored quote for the same
        symbol: the timeout was handled (weak evidence) and the stored read is suspect; a next call about
        something else, or one that failed too, is no fallback."""
        timeout = ErrorInfo("TimeoutError", "quote feed gave no reply after 5000 ms")
        failed = Step("t1", "fetch_quote", "tool", input={"symbol": "ACME", "mode": "live"},
                      status="error", error=timeout)
        cache = Step("c1", "read_stored_quote", "tool", input={"symbol": "ACME"}, output={"price": 8.0})
        plan = Step("p1", "place_order", "other", input={"limit_price": 8.0}, output="placed")
        [fallback] = _from(_verdict(_run(failed, cache, plan), "c1"), "swallowed-error")
        [tool] = _from(_verdict(_run(failed, cache, plan), "t1"), "tool-result")
        assert fallback.suspicion > tool.suspicion and "fetch_quote" in fallback.reason
        other = Step("c1", "read_calendar", "tool", input={"desk": "equities"}, output={"hours": 17.6})
        assert not _from(_verdict(_run(failed, other), "c1"), "swallowed-error")
        [still] = _from(_verdict(_run(failed, other), "t1"), "tool-result")
        assert still.suspicion > tool.suspicion
        broken = Step("c1", "read_stored_quote", "tool", input={"symbol": "ACME"}, status="error",
                      error=ErrorInfo("KeyError", "no stored quote"))
        assert not _from(_verdict(_run(failed, broken), "c1"), "swallowed-error")

    @pytest.mark.parametrize(
        ("message", "environment"),
        [
            ("connection refused by 10.0.0.7:443", True),
            ("upstream returned status 503", True),
            ("billing service is down", True),
            ("refund refused: the order is not on this account", False),
            ("no service plan named premium-plus", False),
            ("quantity 502 exceeds the stock", False),
            ("Overloaded", True),
            ("the model is currently overloaded, retry later", True),
            ("trailer T4 overloaded: 1,220 kg on a 1,000 kg axle", False),
        ],
    )
    def test_only_a_refused_connection_or_a_5xx_speaks_of_the_environment(
        self, message: str, environment: bool
    ) -> None:
        """A refusal of what the tool was given is a rejection; a refused connection, a 5xx or a service said to be down is the environment."""
        from trajdebug.analysis.diagnosers import environmental

        assert environmental(f"ToolError: {message}") is environment

    def test_the_next_item_of_a_given_list_in_a_sentence_is_no_contradiction(self) -> None:
        """A model asking about the second account of a listed team ("Analyse acct-2") after the first does not contradict "Analyse acct-1"; another amount in the same sentence does."""
        from trajdebug.analysis.diagnosers._conflicts import contradictions

        team = {"accounts": ["acct-1", "acct-2"]}
        before = {"input": "Analyse acct-1 for May, budget 300"}
        assert contradictions({"input": "Analyse acct-2 for May, budget 300"}, [team, before]) == []
        assert contradictions({"input": "Analyse acct-1 for May, budget 900"}, [team, before]) != []

    def test_a_request_written_as_json_text_is_read_field_by_field(self) -> None:
        """A sub-agent's one ``input`` argument carrying a JSON request contradicts nothing by differing from another
        sub-agent's ``input`` sentence; a field inside it that differs from the same field upstream still does."""
        from trajdebug.analysis.diagnosers._conflicts import contradictions

        asked = {"input": "Tide table for Harwich on 2026-05-03"}
        survey = {"depth_m": 48.9, "trip": "out-and-back"}
        ok = {"input": json.dumps({"depth_m": 48.9, "trip": "out-and-back"})}
        off = {"input": json.dumps({"depth_m": 48.9, "trip": "one-way"})}
        assert contradictions(ok, [asked, survey]) == []
        assert contradictions(off, [asked, survey]) == [("trip", "one-way", "out-and-back")]

    def test_a_model_answer_written_as_json_is_held_to_its_labels_not_its_numbers(self) -> None:
        """A model's JSON answer in a message's ``content`` contradicts its input by a label (``side=buy`` for a
        ``sell`` ticket), never by a number it may have worked out by a formula unknown here."""
        from trajdebug.analysis.diagnosers._conflicts import contradictions

        ticket = {"ticket": "T-7", "side": "sell", "fee": 14.0}
        said = {"role": "assistant", "content": json.dumps({"ticket": "T-7", "side": "buy", "fee": 230.48})}
        assert contradictions(said, [ticket]) == [("side", "buy", "sell")]

    def test_a_model_answer_is_held_only_to_its_own_records_labels(self) -> None:
        """A JSON answer about kennel K-12 contradicts nothing by another breed than kennel K-9's record; it does
        by another than K-12's own; an answer naming no id is held to no value reached by a guessed edge."""
        from trajdebug.analysis.diagnosers._conflicts import contradictions

        other = {"kennel": "K-9", "breed": "whippet"}
        own = {"kennel": "K-12", "breed": "saluki"}
        said = {"role": "assistant", "content": json.dumps({"kennel": "K-12", "breed": "borzoi"})}
        assert contradictions(said, [other]) == []
        assert contradictions(said, [other, own]) == [("breed", "borzoi", "saluki")]
        plain = {"role": "assistant", "content": json.dumps({"breed": "borzoi"})}
        assert contradictions(plain, [own], labels_against=[]) == []
        assert contradictions(plain, [own], labels_against=[own]) == [("breed", "borzoi", "saluki")]

    def test_a_total_worked_out_from_the_inputs_is_no_contradiction(self) -> None:
        """A model summing two receipts into amount=84700 where one receipt said amount=18500 restates its inputs."""
        receipts = [{"id": "R1", "amount": 18500}, {"id": "R3", "amount": 66200}]
        chat = {"messages": [{"role": "tool", "content": json.dumps(receipts)}]}
        run = _run(
            Step("s", "search", "tool", output=receipts),
            Step("m", "plan", "llm", input=chat, output={"amount": 84700}, deps=(D("s"),)),
        )
        from dataclasses import replace

        from trajdebug.analysis.lineage import Lineage

        ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
        alone = _from(ctx.verdict("m"), "llm-output")
        # (Two receipts give amount two values: the field fixes none, so the sum contradicts nothing; alone, it is
        # a number found nowhere.)
        assert [e.reason for e in alone if not e.sound] == ["states 84700, found in none of its inputs"]
        # With the run's value lineage (as the localizer gives it) the sum is seen for what it is.
        fresh = replace(DiagnoseContext.build(run, diagnosers=registered_diagnosers()), lineage=Lineage(run))
        assert all(e.sound for e in _from(fresh.verdict("m"), "llm-output"))

    def test_a_tool_calls_name_argument_is_a_claim_and_its_tool_name_is_not(self) -> None:
        """A model given the applicant "Keller Broadband Ltd" that calls its lookup with name="Keller Broadcasting"
        states a name found in none of its inputs; one passing the given name on states nothing of its own, and
        the tool it calls is never a claim."""

        def turn(name: str) -> Run:
            chat = {"messages": [{"role": "user", "content": '{"applicant": "Keller Broadband Ltd"}'}]}
            out = {"role": "assistant", "content": None,
                   "tool_calls": [{"id": "c1", "name": "lookup_licensee", "arguments": {"name": name}}]}
            return _run(Step("m", "ChatModel", "llm", input=chat, output=out))

        bad = [e for e in _from(_verdict(turn("Keller Broadcasting"), "m"), "llm-output") if not e.sound]
        assert bad and "Keller Broadcasting" in bad[0].reason and "lookup_licensee" not in bad[0].reason
        assert all(e.sound for e in _from(_verdict(turn("Keller Broadband Ltd"), "m"), "llm-output"))

    def test_an_argument_the_enclosing_step_was_given_comes_from_upstream(self) -> None:
        """A tool inside an agent called with the client id the agent was given took it from upstream; an id nobody gave is flagged."""

        def run_of(client: str) -> Run:
            return _run(
                Step("a", "coach", "agent", input={"client": "CL-303", "date": "2025-04-10"}),
                Step("t", "get_profile", "tool", parent_id="a", input={"client_id": client}, output={"target": 1800}),
            )

        assert all(e.sound for e in _from(_verdict(run_of("CL-303"), "t"), "tool-arguments"))
        assert any(not e.sound for e in _from(_verdict(run_of("CL-909"), "t"), "tool-arguments"))

    def test_a_tool_at_the_top_level_of_a_tracked_run_was_called_by_the_runs_code(self) -> None:
        """In a run whose recorder tracked its values (recorded edges), a tool at the top level was called by the
        run's own code: a key it was given that no step wrote (``plan``) is the code's constant, unless a model's
        answer named the tool.  In a trace with no tracked value, who called a top-level tool is unknown: the same
        key found nowhere is still named (rev55)."""
        plan = {"tasks": ["check_paperwork", "book_cremator"], "date": "2026-12-17"}

        def run_of(said: str, tracked: bool) -> Run:
            deps = (Dependency("p", "data", "recorded"),) if tracked else ()
            return _run(
                Step("m", "plan_service", "llm", input={"ref": "D-6211"}, output=said),
                Step("p", "parse_plan", "parse", input={"text": said}, output=plan),
                Step("t", "memory_write", "tool", input={"key": "plan", "value": plan}, output={"stored": "plan"},
                     deps=deps),
            )

        said = json.dumps(plan)
        assert not [e for e in _from(_verdict(run_of(said, True), "t"), "tool-arguments") if not e.sound]
        assert any(not e.sound for e in _from(_verdict(run_of(said, False), "t"), "tool-arguments"))
        asked = json.dumps({**plan, "next": "memory_write"})
        assert any(not e.sound for e in _from(_verdict(run_of(asked, True), "t"), "tool-arguments"))

    def test_a_top_level_tool_of_a_tracked_run_handed_another_id_of_an_upstream_shape_is_still_named(self) -> None:
        """The run's code at the top level of a tracked run hands a tool a case id no step wrote, of the shape of
        the one its plan holds (``D-6212`` for ``D-6211``: a constant in the wrong place): no model named the
        tool, yet the argument is still named, as one put in another's place (fix56a probe)."""
        plan = {"case": "D-6211", "tasks": ["check_paperwork", "book_cremator"]}
        said = json.dumps(plan)

        def run_of(case: str) -> Run:
            return _run(
                Step("m", "plan_service", "llm", input={"ref": "D-6211"}, output=said),
                Step("p", "parse_plan", "parse", input={"text": said}, output=plan),
                Step("t", "close_case", "tool", input={"case": case, "plan": plan}, output={"closed": case},
                     deps=(Dependency("p", "data", "recorded"),)),
            )

        assert not [e for e in _from(_verdict(run_of("D-6211"), "t"), "tool-arguments") if not e.sound]
        assert any(not e.sound for e in _from(_verdict(run_of("D-6212"), "t"), "tool-arguments"))

    def test_a_short_code_inside_another_word_is_not_found_upstream(self) -> None:
        """A finish ``AT`` written where the record upstream says ``ZN`` contradicts it, though the letters "at"
        occur inside an upstream word ("batch"); written upstream as a word of its own, it is a choice. A number
        is written where a longer form of it is ("3.5" in "3.50")."""
        from trajdebug.analysis.diagnosers._conflicts import contradictions

        record = {"part": "bracket", "finish": "ZN", "note": "from the spring batch"}
        assert contradictions({"finish": "AT"}, [record]) != []
        assert contradictions({"finish": "AT"}, [dict(record, note="AT or ZN")]) == []
        priced = {"item": "bracket", "price": 4.0, "note": "list price is 3.50 this week"}
        assert contradictions({"price": 3.5}, [priced]) == []

    def test_choosing_another_given_value_is_not_a_contradiction(self) -> None:
        """An argument differing from one upstream field but present elsewhere upstream is a choice, not a contradiction."""
        run = _run(
            Step("u", "orders", "tool", output={"orders": [{"order_id": "#W1"}, {"order_id": "#W2"}]}),
            Step("t", "cancel", "tool", input={"order_id": "#W2"}, deps=(D("u"),)),
        )
        assert all(e.sound for e in _from(_verdict(run, "t"), "tool-arguments"))

    def test_sql_tool_rows_checked_against_the_real_database(self, tmp_path: Path) -> None:
        """Recorded rows fewer than re-running the query on the SQLite file yields are suspect; equal rows are sound."""
        db = tmp_path / "s.db"
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE t (x INTEGER)")
        con.executemany("INSERT INTO t VALUES (?)", [(i,) for i in range(5)])
        con.commit()
        con.close()
        sql = {"sql": "SELECT x FROM t ORDER BY x"}
        run = _run(
            Step("short", "run_sql", "tool", input=sql, output=[{"x": 0}, {"x": 1}]),
            Step("full", "run_sql", "tool", input=sql, output=[{"x": i} for i in range(5)]),
        )
        [bad] = _from(_verdict(run, "short", sql_db=str(db)), "sql-result")
        [good] = _from(_verdict(run, "full", sql_db=str(db)), "sql-result")
        assert _from(_verdict(run, "short"), "sql-result") == []  # the file is opened only when named
        assert "2 rows" in bad.reason and "5" in bad.reason and not bad.sound
        assert good.sound


class TestCutShort:
    @staticmethod
    def _parallel(model_end: int) -> Run:
        """Two branches of one agent run side by side; the tool in one raises at t=50 and fails the run, while the
        other branch's model call (no output) ends at `model_end` and its enclosing tool call returns nothing."""
        err = ErrorInfo("ValueError", "cannot adjust binding to a 290 mm sole")
        return _run(
            Step("a", "fitter", "agent", status="error", error=err, start_ns=0, end_ns=100),
            Step("ta", "technician", "tool", parent_id="a", start_ns=10, end_ns=model_end + 1),
            Step("m", "generation", "llm", parent_id="ta", input={"messages": [{"role": "user", "content": "set it"}]},
                 start_ns=40, end_ns=model_end),
            Step("tb", "technician", "tool", parent_id="a", status="error", error=err, start_ns=10, end_ns=55),
            Step("x", "set_binding", "tool", parent_id="tb", status="error", error=err, start_ns=45, end_ns=50),
            Step("n", "next", "llm", parent_id="a", deps=(D("ta", "data"),), start_ns=120, end_ns=130),
        )

    def test_a_step_the_failure_interrupted_did_not_return_nothing(self) -> None:
        """A step beside the failing one that ended with no output after the failing error was raised was cut
        short by the failure: neither the model nor the tool enclosing it is said to have returned nothing."""
        failures = [Failure("x", "step-error", "cannot adjust", "x"), Failure("a", "step-error", "cannot adjust", "x")]
        run = self._parallel(model_end=70)
        assert not [e for e in _from(_verdict(run, "m", failures), "llm-output") if not e.sound]
        assert not _from(_verdict(run, "ta", failures), "tool-result")

    def test_a_step_that_ended_empty_before_the_error_returned_nothing(self) -> None:
        """The same model call ending with no output before the error was raised returned nothing by itself, and
        the enclosing error does not count: it ends after everything it encloses."""
        failures = [Failure("x", "step-error", "cannot adjust", "x"), Failure("a", "step-error", "cannot adjust", "x")]
        [e] = _from(_verdict(self._parallel(model_end=48), "m", failures), "llm-output")
        assert "returned nothing" in e.reason
        [e] = _from(_verdict(self._parallel(model_end=70), "m", failures[1:]), "llm-output")
        assert "returned nothing" in e.reason


class TestLLMOutputs:
    def test_sql_failing_explain_on_the_schema(self) -> None:
        """Generated SQL naming a column the schema lacks is malformed output."""
        run = _run(
            Step("w", "write_sql", "llm", output="SELECT SUM(price) FROM orders"),
            metadata={"sql_schema": "CREATE TABLE orders (amount REAL);"},
        )
        [e] = _from(_verdict(run, "w"), "malformed-output")
        assert e.suspicion >= 0.6 and "price" in e.reason

    def test_malformed_json(self) -> None:
        """A JSON-looking output that does not parse is malformed."""
        run = _run(Step("w", "extract", "llm", output='```json\n{"a": 1,\n```'))
        assert _from(_verdict(run, "w"), "malformed-output")

    def test_malformed_json_a_program_read_into_data_was_recovered(self) -> None:
        """A model's JSON with a trailing comma that the next step (a JSON repair) read into a record keeping
        every value is a slip recovered, weak; left unread, or read losing a value, it stays malformed."""
        text = '{"name": "Anna Berg", "amount": 3200.0,}'

        def read_into(out: Any) -> Run:
            return _run(
                Step("w", "extract", "llm", output=text),
                Step("p", "repair_json", "parse", input={"text": text}, output=out, deps=(D("w"),)),
            )

        [e] = _from(_verdict(read_into({"name": "Anna Berg", "amount": 3200.0}), "w"), "malformed-output")
        assert e.suspicion < 0.3 and "repair_json" in e.reason
        [e] = _from(_verdict(read_into({"name": "Anna Berg"}), "w"), "malformed-output")
        assert e.suspicion >= 0.6
        [e] = _from(_verdict(_run(Step("w", "extract", "llm", output=text)), "w"), "malformed-output")
        assert e.suspicion >= 0.6

    def test_a_record_a_program_printed_relayed_word_for_word_is_no_malformed_json(self) -> None:
        """A sub-agent answering with the very text its tool returned, a dict printed by Python (the Agents SDK
        keeps a function tool's result as ``str(result)``), wrote no JSON of its own; the same text no program
        returned before it is still malformed."""
        text = str({"lot": "LT-31", "grade": "B", "weight_kg": 12.5})
        tool = Step("t", "weigh_lot", "tool", input={"lot": "LT-31"}, output=text, start_ns=1, end_ns=2)
        answer = Step("a", "grader", "agent", input={"input": "Weigh LT-31"}, output=text, start_ns=3, end_ns=4,
                      deps=(D("t"),))
        assert not _from(_verdict(_run(tool, answer), "a"), "malformed-output")
        [e] = _from(_verdict(_run(answer), "a"), "malformed-output")
        assert e.suspicion >= 0.6

    def test_a_wrapper_returning_its_model_s_printed_text_relays_no_record(self) -> None:
        """A model that wrote a dict printed by Python where JSON was asked, inside a chain step (kind other)
        that returns the model's text after it, wrote malformed JSON itself: the wrapper relayed the model,
        not a record a tool printed, and the model's finding stays as strong as without the wrapper."""
        text = str({"hive": "HV-2", "frames": 9, "queen": True})
        ask = {"messages": [{"role": "user", "content": "Inspect HV-2; answer in JSON"}]}
        chain = Step("w", "inspect_chain", "other", input=ask, output=text, start_ns=1, end_ns=5)
        model = Step("m", "inspect", "llm", input=ask, output=text, start_ns=2, end_ns=4, parent_id="w")
        [e] = _from(_verdict(_run(chain, model), "m"), "malformed-output")
        assert e.suspicion >= 0.6

    def test_a_percentage_of_a_given_amount_and_its_working_are_no_claims(self) -> None:
        """A duty of 12 % on a given value, and a 3 % deduction on a gross the same answer worked out from hours
        and a rate, are computed from the input; a number no such working reaches is still a claim."""
        inp = {"messages": [{"role": "tool", "content": "{'rate_pct': 12.0, 'eur': 3451.5}"},
                            {"role": "tool", "content": '{"hours": 152.3, "hourly_rate": 22.5, "pension_pct": 3.0}'}]}

        def answer(**args: float) -> list[Evidence]:
            from dataclasses import replace

            from trajdebug.analysis.lineage import Lineage

            out = {"tool_calls": [{"name": "submit", "arguments": args}]}
            run = _run(Step("m", "clerk", "llm", input=inp, output=out))
            ctx = replace(DiagnoseContext.build(run, diagnosers=registered_diagnosers()), lineage=Lineage(run))
            return _from(ctx.verdict("m"), "llm-output")

        assert all(e.sound for e in answer(duty_eur=414.18))
        assert all(e.sound for e in answer(gross_eur=3426.75, deductions_eur=102.8))
        [e] = answer(gross_eur=3426.75, deductions_eur=188.4)
        assert "188.4" in e.reason and not e.sound

    def test_a_currency_code_whose_one_symbol_is_written_is_restated(self) -> None:
        """``GBP`` for an amount written ``£2,950.00`` (or ``USD`` for ``US$``) is the amount's own currency; ``USD``
        for ``C$ 4,200.00`` is a claim (a bare ``$`` names no one currency)."""

        def state(code: str, written: str) -> list[Evidence]:
            inp = {"invoice_total": written}
            return _from(_verdict(_run(Step("m", "m", "llm", input=inp, output={"currency": code, "note": "ok"})), "m"),
                         "llm-output")

        assert all(e.sound for e in state("GBP", "£2,950.00"))
        assert all(e.sound for e in state("USD", "US$ 6,100.00"))
        assert not all(e.sound for e in state("USD", "C$ 4,200.00"))
        assert not all(e.sound for e in state("SGD", "US$ 6,100.00"))

    def test_stated_values_absent_from_inputs(self) -> None:
        """Numbers an LLM states that none of its inputs hold are suspect; restated ones (rounded, as %) are not."""
        inp = {"totals": {"east": 5118.450000000001}, "growth": 0.0226}
        made_up = _run(Step("r", "report", "llm", input=inp, output="East: 5,118.45 (+2.3%), west: 9,999.00"))
        faithful = _run(Step("r", "report", "llm", input=inp, output="East: 5,118.45 (+2.3%)"))
        [e] = _from(_verdict(made_up, "r"), "llm-output")
        assert "9999" in e.reason and not e.sound
        assert all(e.sound for e in _from(_verdict(faithful, "r"), "llm-output"))

    def test_a_count_glued_to_a_multiplication_sign_is_a_number_of_the_input(self) -> None:
        """A quantity written "12x SKU-2040" gives 12: a model extracting it states a value of its input; the
        digits of an id ("x12", "12xl", "0x1F") still give none, so 12 read from those is still made up."""
        def extract(text: str) -> Run:
            out = {"lines": [{"sku": "SKU-2040", "qty": 12}]}
            return _run(Step("e", "extract", "llm", input={"text": text}, output=out))

        assert not [e for e in _from(_verdict(extract("PO: 12x SKU-2040"), "e"), "llm-output") if not e.sound]
        for ids in ("PO: x12 SKU-2040", "PO: 12xl SKU-2040", "PO: 0x12 SKU-2040"):
            [e] = _from(_verdict(extract(ids), "e"), "llm-output")
            assert "12" in e.reason and not e.sound

    def test_a_json_text_argument_is_no_claimed_value(self) -> None:
        """A tool call whose argument is JSON text (an agent used as a tool) is an expression, found whole in
        no input: never a made-up value itself, while a plain argument the input lacks still is one."""
        inp = {"messages": [{"role": "user", "content": '{"hotel": "HTL-LIS", "nights": ["2026-12-23"]}'}]}

        def call(arg: str) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "forecaster", "arguments": {"input": arg}}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(call('{"night": "2026-12-23"}'), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(call("HTL-PAR"), "g"), "llm-output")
        assert "HTL-PAR" in e.reason and not e.sound

    def test_a_bound_is_a_setting_where_the_numbers_given_measure_other_quantities(self) -> None:
        """A model that read a boat's fuel and battery readings and searches moorings with min_depth_m=9.5 chose
        how to ask: no number it was given measures a depth.  Given a draft reading (``depth_m``) under the
        bound's quantity, or a number written in its request, the bound may restate it: still a claim."""

        def search(request: str, reading: dict[str, Any]) -> Run:
            inp = {"messages": [{"role": "user", "content": request}, {"role": "tool", "content": json.dumps(reading)}]}
            out = {"role": "assistant", "tool_calls": [{"name": "find_moorings", "arguments": {"harbour": "Kettle Bay", "min_depth_m": 9.5}}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        chose = search('{"harbour": "Kettle Bay"}', {"fuel_pct": 64, "battery_v": 12.6})
        assert not [e for e in _from(_verdict(chose, "g"), "llm-output") if not e.sound]
        for request, reading in (('{"harbour": "Kettle Bay"}', {"fuel_pct": 64, "depth_m": 2.1}),
                                 ("Kettle Bay, we draw 1.8 metres", {"fuel_pct": 64})):
            [e] = _from(_verdict(search(request, reading), "g"), "llm-output")
            assert "9.5" in e.reason and not e.sound

    def test_a_bound_is_a_setting_only_where_no_number_was_given(self) -> None:
        """A model asked for a genre and a date that searches with min_rating=4.2 chose how to ask; one given a
        650,000 budget that searches with max_price=850000 states a value none of its inputs holds."""

        def search(request: str, args: dict[str, Any]) -> Run:
            inp = {"messages": [{"role": "user", "content": request}]}
            out = {"role": "assistant", "tool_calls": [{"name": "search", "arguments": args}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        chose = search('{"genre": "jazz", "date": "2027-03-04"}', {"genre": "jazz", "min_rating": 4.2})
        assert not [e for e in _from(_verdict(chose, "g"), "llm-output") if not e.sound]
        misread = search("Houses in Leeds, budget 650,000", {"city": "Leeds", "max_price": 850000})
        [e] = _from(_verdict(misread, "g"), "llm-output")
        assert "850000" in e.reason and not e.sound
        # A small budget counts as much as a large one: given 8.50, a bound of 9.75 is no setting of the model's.
        small = search("Paperbacks up to 8.50 pounds, any author", {"format": "paperback", "max_price": 9.75})
        [e] = _from(_verdict(small, "g"), "llm-output")
        assert "9.75" in e.reason and not e.sound

    def test_a_bound_restates_a_number_given_under_a_field_of_no_unit(self) -> None:
        """A model given a 300 spend cap as a field (a graph's state, a JSON request), not in prose, that
        searches glamping pitches with max_rate=420 states a value none of its inputs holds, whatever the field
        is called; only numbers under fields of a unit (a reading, ``charge_pct``) leave the bound its choice."""

        def search(state: dict[str, Any], request: str = "Glamping near Loch Tay") -> Run:
            inp = {"messages": [{"role": "user", "content": request}], "state": state}
            out = {"role": "assistant", "tool_calls": [{"name": "find_pitches", "arguments": {"area": "Loch Tay", "max_rate": 420}}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        for field in ("cap", "spend_gbp", "allowance"):
            [e] = _from(_verdict(search({"area": "Loch Tay", field: 300}), "g"), "llm-output")
            assert "420" in e.reason and not e.sound
        [e] = _from(_verdict(search({}, json.dumps({"area": "Loch Tay", "cap": 300})), "g"), "llm-output")
        assert "420" in e.reason and not e.sound
        read = search({"area": "Loch Tay", "charge_pct": 80, "cabin_c": 17.5})
        assert not [e for e in _from(_verdict(read, "g"), "llm-output") if not e.sound]

    def test_a_chat_message_states_the_numbers_of_its_text_as_a_bare_string_does(self) -> None:
        """A model's text recorded as a chat message (OTLP, the Agents SDK) is read as the same text recorded
        bare (the SDK): a sentence with no number in it claims no value; a number its input lacks is claimed."""
        inp = {"messages": [{"role": "user", "content": "Query each station: O-1, O-2"}]}

        def said(text: str) -> Run:
            out = {"role": "assistant", "content": text, "tool_calls": []}
            return _run(Step("g", "ChatCompletion", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(said("Every station reported."), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(said("Every station reported, 17 bikes short."), "g"), "llm-output")
        assert "17" in e.reason and not e.sound

    def test_a_label_is_a_choice_not_a_claim(self) -> None:
        """A classifier's label ("how-to", "on_hold") found in none of its inputs is a choice among options, not a made-up value."""
        run = _run(
            Step(
                "c",
                "classify",
                "llm",
                input={"ticket": "How do I change my avatar?"},
                output={"category": "how-to", "urgency": "normal", "queue": "self_service"},
            )
        )
        assert not [e for e in _from(_verdict(run, "c"), "llm-output") if not e.sound]

    def test_a_given_name_under_a_label_of_the_models_own_is_no_claim(self) -> None:
        """A model that asks a sub-agent about "Vessel: Kestrel", for a user who named the yacht Kestrel, put a
        label of its own before a given name: no made-up value; a name under that label no input holds (a
        boat it made up) still is one (nu26 F7)."""
        inp = {"messages": [{"role": "user", "content": "Berth for the yacht Kestrel, 3 nights from 2027-06-12."}]}

        def asked(text: str) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "vessel_surveyor", "arguments": {"input": text}}]}
            return _run(Step("g", "response", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(asked("Vessel: Kestrel"), "g"), "llm-output") if not e.sound]
        [e] = [e for e in _from(_verdict(asked("Vessel: Osprey"), "g"), "llm-output") if not e.sound]
        assert e.reason == "states 'Vessel: Osprey', found in none of its inputs"

    def test_a_number_under_a_label_is_given_only_when_written_whole(self) -> None:
        """A number under a label of the writer's own ("Total: 100", "Id: 100") is given only when the input
        writes that number whole: an input's "1000" or "10045" does not hold 100 (rev53a L2)."""
        from trajdebug.analysis.diagnosers._conflicts import present

        hay = "user: berth for vessel kestrel ii; order ref 10045; price 1000 eur"
        assert present("Vessel: Kestrel", hay, set())
        assert not present("Total: 100", hay, set()) and not present("Id: 100", hay, set())
        assert present("Total: 1000", hay, set())

    def test_the_steps_of_a_plan_in_plain_words_are_no_claim(self) -> None:
        """A model that saves a plan of plain lowercase phrases ("sand hull", "check rudder") its inputs never
        write names steps of its own, it claims nothing; a dock code it made up in the same call still is."""
        inp = {"messages": [{"role": "user", "content": "Refit job RF-12 for the dinghy, please."}]}

        def plan(steps: list[str]) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "save_plan", "arguments": {"steps": steps}}]}
            return _run(Step("g", "ChatCompletion", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(plan(["sand hull", "check rudder", "varnish"]), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(plan(["sand hull", "dock D-77"]), "g"), "llm-output")
        assert "D-77" in e.reason and "sand hull" not in e.reason and not e.sound

    def test_plain_lowercase_words_as_a_call_argument_are_still_a_claim(self) -> None:
        """A model that asks a ferry booking for ``deck="upper lounge"`` when the passenger named no deck states a
        fact no input gave, lowercase or not: only the items of a list it writes (a plan's steps) are its
        own labels."""
        inp = {"messages": [{"role": "user", "content": "Book ferry crossing FX-4 for two adults."}]}

        def call(args: dict[str, object]) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "book_crossing", "arguments": args}]}
            return _run(Step("g", "ChatCompletion", "llm", input=inp, output=out))

        [e] = _from(_verdict(call({"crossing": "FX-4", "deck": "upper lounge"}), "g"), "llm-output")
        assert "upper lounge" in e.reason and not e.sound
        listed = call({"crossing": "FX-4", "todo": ["upper lounge", "check tickets"]})
        assert not [e for e in _from(_verdict(listed, "g"), "llm-output") if not e.sound]

    def test_an_end_time_worked_out_from_a_start_and_a_given_length_is_no_claim(self) -> None:
        """A tool call asking for a slot from 21:00 to 00:30, when the model was given a 3.5-hour length, works
        the end out from the start (across midnight); an end no given length explains (01:15) is still a claim."""
        lesson = "{'student': 'Mira', 'start': '21:00', 'hours': 3.5}"
        inp = {"messages": [{"role": "user", "content": "Book the observatory night lesson " + lesson}]}

        def call(end: str) -> Run:
            args = {"student": "Mira", "start": "21:00", "end": end}
            out = {"role": "assistant", "tool_calls": [{"name": "reserve_dome", "arguments": args}]}
            return _run(Step("g", "ChatCompletion", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(call("00:30"), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(call("01:15"), "g"), "llm-output")
        assert "01:15" in e.reason and not e.sound

    def test_an_end_time_is_worked_out_only_from_the_length_of_that_booking(self) -> None:
        """A pottery wheel booked from 19:00 for the record's ``'hours': 2`` rightly ends at 21:00, in any call
        format (``args``, an OpenAI ``function`` with JSON-text arguments); an end of 19:45 is a claim, though
        the request says elsewhere "come 45 min early": a length written beside the booking is no span of it."""
        rental = "{'renter': 'Ola', 'start': '19:00', 'hours': 2}"
        inp = {"messages": [{"role": "user", "content": "Rent me the wheel " + rental + ". I will come 45 min early to wedge clay."}]}

        def call(end: str, shape: str = "arguments") -> Run:
            args = {"renter": "Ola", "start": "19:00", "end": end}
            made: dict[str, object] = {"name": "rent_wheel", shape: args}
            if shape == "function":
                made = {"id": "c1", "type": "function", "function": {"name": "rent_wheel", "arguments": json.dumps(args)}}
            return _run(Step("g", "ChatCompletion", "llm", input=inp, output={"role": "assistant", "tool_calls": [made]}))

        for shape in ("arguments", "args", "function"):
            assert not [e for e in _from(_verdict(call("21:00", shape), "g"), "llm-output") if not e.sound], shape
        [e] = _from(_verdict(call("19:45"), "g"), "llm-output")
        assert "19:45" in e.reason and not e.sound

    def test_a_huge_run_of_digits_before_a_unit_of_time_is_read_without_failing(self) -> None:
        """A request holding a 400-digit "uptime ... hours" and a call from 08:00 to 09:00 is judged like any
        other (the end is still a claim: no length of that booking explains it), not an overflow."""
        inp = {"messages": [{"role": "user", "content": "Server uptime " + "9" * 400 + " hours; book the rack check."}]}
        out = {"role": "assistant", "tool_calls": [{"name": "book_check", "arguments": {"start": "08:00", "end": "09:00"}}]}
        [e] = _from(_verdict(_run(Step("g", "ChatCompletion", "llm", input=inp, output=out)), "g"), "llm-output")
        assert "09:00" in e.reason and not e.sound

    def test_a_setting_of_a_tool_call_is_a_choice_not_a_claim(self) -> None:
        """A model's tool call that sets a time window (``window='15m'``) or a field named for a span of time
        (``every_hours=24``) its inputs never mention chose a setting, it claimed nothing; an id it made up in
        the same call is still a claim."""
        inp = {"messages": [{"role": "user", "content": "Query station R-1 of zone riverside"}]}

        def call(args: dict[str, Any]) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "get_station_status", "arguments": args}]}
            return _run(Step("g", "ChatCompletion", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(call({"station": "R-1", "window": "15m"}), "g"), "llm-output") if not e.sound]
        assert not [e for e in _from(_verdict(call({"station": "R-1", "every_hours": 24}), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(call({"station": "R-9", "window": "15m"}), "g"), "llm-output")
        assert "R-9" in e.reason and "15m" not in e.reason and not e.sound

    def test_a_value_joined_from_given_values_is_no_claim(self) -> None:
        """A tool-call argument that joins values the input holds (a language pair ``en-US>de-DE`` from a
        source ``en-US`` and a target ``de-DE``) expresses them, it claims nothing; a part the input lacks
        (``fr-FR``) is still made up."""
        task = '{"job": "TJ-1", "source": "en-US", "target": "de-DE"}'
        inp = {"messages": [{"role": "user", "content": "New job: " + task}]}

        def call(pair: str) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "find_linguist", "arguments": {"pair": pair}}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(call("en-US>de-DE"), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(call("en-US>fr-FR"), "g"), "llm-output")
        assert "fr-FR" in e.reason and not e.sound

    def test_a_one_line_record_of_given_values_under_a_capitalised_keyword_is_no_claim(self) -> None:
        """A request to a sub-agent written as one line, a keyword of its format then values the input holds
        (``HOLD|BK-7|2027-05-02|Ostend``), states those values and nothing made up; a value the input lacks in
        it (``Bruges``), or a lowercase word no input holds, is still a claim."""
        booking = str({"ref": "BK-7", "day": "2027-05-02", "port": "Ostend", "berths": 2})
        inp = {"messages": [{"role": "user", "content": "hold a berth for BK-7"}, {"role": "tool", "content": booking}]}

        def call(line: str) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "harbour_agent", "arguments": {"input": line}}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(call("HOLD|BK-7|2027-05-02|Ostend"), "g"), "llm-output") if not e.sound]
        for line in ("HOLD|BK-7|2027-05-02|Bruges", "moor|BK-7|2027-05-02|Ostend"):
            [e] = _from(_verdict(call(line), "g"), "llm-output")
            assert line in e.reason and not e.sound

    def test_a_one_line_record_opens_with_its_keyword_and_holds_whole_given_values(self) -> None:
        """Only the first part of a one-line record may be a keyword no input holds, and it is longer than a
        code: a made-up currency or port in capitals at its end or in the middle (``NOK``, ``OST``), or at its
        start as three capitals, is a claim, and so is an amount given only inside another (``12.5`` of
        ``312.5``); the record of the keyword and given values is none."""
        booking = str({"ref": "FR-4", "fare": 312.5, "currency": "EUR", "from": "HAR", "to": "DUN"})
        inp = {"messages": [{"role": "user", "content": "rebook FR-4"}, {"role": "tool", "content": booking}]}

        def call(line: str) -> Run:
            out = {"role": "assistant", "tool_calls": [{"name": "ferry_agent", "arguments": {"input": line}}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(call("REBOOK|FR-4|312.5"), "g"), "llm-output") if not e.sound]
        for line in ("FR-4|312.5|NOK", "HAR/OST/DUN", "OST|FR-4|312.5", "REBOOK|FR-4|12.5"):
            [e] = _from(_verdict(call(line), "g"), "llm-output")
            assert line in e.reason and not e.sound

    def test_a_day_a_call_sets_after_every_given_day_is_a_choice(self) -> None:
        """A model booking a visit names the day it plans it for: a day after every day its input states is its
        choice, and a field that takes several values in its input (each past visit has its date) fixes none,
        so the booking contradicts nothing; a day before the latest given one is still a claim."""
        alarm = '{"unit": "RC-1", "raised": "2026-03-05"}'
        history = '{"visits": [{"date": "2026-01-12"}, {"date": "2025-11-03"}]}'
        inp = {"messages": [{"role": "user", "content": "Alarm: " + alarm}, {"role": "tool", "content": history}]}

        def call(day: str) -> Run:
            args = {"unit": "RC-1", "date": day}
            out = {"role": "assistant", "tool_calls": [{"name": "schedule_technician", "arguments": args}]}
            return _run(Step("g", "generation", "llm", input=inp, output=out))

        assert not [e for e in _from(_verdict(call("2026-03-06"), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(call("2026-02-20"), "g"), "llm-output")
        assert "2026-02-20" in e.reason and "but its input says" not in e.reason

    def test_a_tool_called_again_sets_the_fields_its_last_call_set(self) -> None:
        """A model booking one slot after another sets each call's start time anew: the earlier call's
        arguments and the result echoing them answered another request, so the new time neither contradicts
        them nor is a made-up claim; another field (the room) differing from the earlier call's, or one no
        earlier call of that tool set, still contradicts."""
        first = {"name": "book_slot", "arguments": {"room": "B", "start": "10:00"}}
        booked = Step("t", "book_slot", "tool", input={"room": "B", "start": "10:00"},
                      output={"booked": True, "room": "B", "start": "10:00", "guest": "Ada Lovelace"})

        def call(tool: str, guest: str, room: str = "B") -> Run:
            inp = {"messages": [{"role": "user", "content": "Book room B from 10:00, then the next slot"},
                                {"role": "assistant", "tool_calls": [first]},
                                {"role": "tool", "content": json.dumps(booked.output)}]}
            args = {"room": room, "start": "11:37", "guest": guest}
            out = {"role": "assistant", "tool_calls": [{"name": tool, "arguments": args}]}
            gen = Step("g", "generation", "llm", input=inp, output=out, deps=(Dependency("t", "data"),))
            return _run(booked, gen)

        assert not [e for e in _from(_verdict(call("book_slot", "Ada Lovelace"), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(call("book_slot", "Ada Byron"), "g"), "llm-output")
        assert "guest='Ada Byron'" in e.reason
        [e] = _from(_verdict(call("book_slot", "Ada Lovelace", "Suite-9"), "g"), "llm-output")
        assert "room='Suite-9'" in e.reason
        [e] = _from(_verdict(call("cancel_slot", "Ada Lovelace"), "g"), "llm-output")
        assert "11:37" in e.reason

    def test_a_tool_called_again_for_the_next_month_sets_the_month_anew(self) -> None:
        """A model reading a lease month by month asks for the next month after the result echoing the last one
        (nu25 F1): the month is that call's own setting, neither a contradiction nor a made-up value; the lease
        id differing from the earlier call's, or a month another tool is called with, is still a finding."""
        first = {"name": "month_charges", "arguments": {"lease_id": "L-88", "month": "2026-05"}}
        charges = Step("t", "month_charges", "tool", input={"lease_id": "L-88", "month": "2026-05"},
                       output={"lease_id": "L-88", "month": "2026-05", "rent": 1150.0})

        def call(tool: str, month: str, lease: str = "L-88") -> Run:
            inp = {"messages": [{"role": "user", "content": "Draft the arrears letter for lease L-88"},
                                {"role": "assistant", "tool_calls": [first]},
                                {"role": "tool", "content": json.dumps(charges.output)}]}
            out = {"role": "assistant", "tool_calls": [{"name": tool, "arguments": {"lease_id": lease, "month": month}}]}
            return _run(charges, Step("g", "generation", "llm", input=inp, output=out, deps=(Dependency("t", "data"),)))

        assert not [e for e in _from(_verdict(call("month_charges", "2026-06"), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(call("month_charges", "2026-06", "L-99"), "g"), "llm-output")
        assert "lease_id='L-99'" in e.reason
        [e] = _from(_verdict(call("late_fees", "2026-06"), "g"), "llm-output")
        assert "2026-06" in e.reason

    def test_a_tool_called_again_for_a_month_a_year_back_is_still_a_finding(self) -> None:
        """A model that read 2026-05 and asks the same tool for 2025-06, a stale year rather than the next month,
        is not stepping through months (review rev52u M1): the month it states against its input is a finding."""
        first = {"name": "month_charges", "arguments": {"lease_id": "L-88", "month": "2026-05"}}
        charges = Step("t", "month_charges", "tool", input={"lease_id": "L-88", "month": "2026-05"},
                       output={"lease_id": "L-88", "month": "2026-05", "rent": 1150.0})
        inp = {"messages": [{"role": "user", "content": "Draft the arrears letter for lease L-88"},
                            {"role": "assistant", "tool_calls": [first]},
                            {"role": "tool", "content": json.dumps(charges.output)}]}
        out = {"role": "assistant", "tool_calls": [{"name": "month_charges", "arguments": {"lease_id": "L-88", "month": "2025-06"}}]}
        run = _run(charges, Step("g", "generation", "llm", input=inp, output=out, deps=(Dependency("t", "data"),)))
        [e] = _from(_verdict(run, "g"), "llm-output")
        assert "2025-06" in e.reason

    def test_a_field_set_only_by_its_own_earlier_message_is_no_contradiction(self) -> None:
        """A model that checked the kayaks and now checks the paddles for the same hire sets ``item`` anew: its
        earlier call in the conversation was its own decision, not a fact it was given (the tool's answer came
        back as text).  A field the booking it read fixes is still held to it."""
        booking = Step("b", "read_hire", "tool", input={"hire": "HR-5"}, output={"hire": "HR-5", "people": 2})
        earlier = {"role": "assistant", "tool_calls": [{"name": "check_stock", "arguments": {"hire": "HR-5", "item": "kayak"}}]}

        def call(hire: str) -> Run:
            inp = {"messages": [{"role": "user", "content": "Equip hire HR-5 for two"}, earlier,
                                {"role": "tool", "content": str({"item": "kayak", "free": 3})}]}
            out = {"role": "assistant", "tool_calls": [{"name": "check_stock", "arguments": {"hire": hire, "item": "paddle"}}]}
            return _run(booking, Step("g", "generation", "llm", input=inp, output=out, deps=(D("b"),)))

        assert not [e for e in _from(_verdict(call("HR-5"), "g"), "llm-output") if "but its input says" in e.reason]
        [e] = [e for e in _from(_verdict(call("HR-9"), "g"), "llm-output") if "but its input says" in e.reason]
        assert "hire='HR-9'" in e.reason

    def test_an_option_of_the_recorded_tool_schema_is_a_choice(self) -> None:
        """A value the tool's recorded JSON schema offered (an enum, as OpenInference keeps it) is a choice
        among options the model was shown, not a made-up value."""
        schema = json.dumps(
            {"type": "function", "function": {"name": "get_rates", "parameters": {"type": "object", "properties": {
                "basis": {"type": "string", "enum": ["SPOT", "FWD-3M"]}}}}}
        )
        inp = {"messages": [{"role": "user", "content": "Rates for EUR"}]}
        out = {"role": "assistant", "tool_calls": [{"name": "get_rates", "arguments": {"basis": "FWD-3M"}}]}
        shown = _run(Step("g", "ChatCompletion", "llm", input=inp, output=out,
                          attributes={"llm.tools.0.tool.json_schema": schema}))
        unshown = _run(Step("g", "ChatCompletion", "llm", input=inp, output=out))
        assert not [e for e in _from(_verdict(shown, "g"), "llm-output") if not e.sound]
        assert [e for e in _from(_verdict(unshown, "g"), "llm-output") if not e.sound]

    def test_a_duration_in_prose_and_what_it_works_out_are_choices(self) -> None:
        """A span of time a model's text sets ("every 24 hours", "for 18 min") is its setting, and so are a time
        of day it writes (05:30) and a number worked out from a span and a given rate (18 min at 40 L/min:
        720 L); another number its input lacks, and a bare span ("ran 45 minutes"), are still claimed."""
        inp = {"zone": "A1", "flow_lpm": 40, "dose_ml": 3.5}

        def said(text: str) -> Run:
            return _run(Step("w", "draft", "llm", input=inp, output=text))

        assert not [e for e in _from(_verdict(said("Give 3.5 mL every 24 hours."), "w"), "llm-output") if not e.sound]
        assert not [e for e in _from(_verdict(said("A1: 05:30 for 18 min (720 L)"), "w"), "llm-output") if not e.sound]
        [e] = _from(_verdict(said("A1: 05:30 for 18 min (730 L)"), "w"), "llm-output")
        assert "730" in e.reason and not e.sound
        [e] = _from(_verdict(said("The pump ran 45 minutes."), "w"), "llm-output")
        assert "45" in e.reason and not e.sound

    def test_a_value_the_world_answered_first_is_no_invention(self) -> None:
        """A model that names a site in the same turn it asks for the customer record, which then returns that
        site, invented nothing; a site no tool returned before it was handed on is still a made-up value."""
        inp = {"messages": [{"role": "user", "content": '{"customer_id": "C-5512"}'}]}

        def turn(site: str, answered: str) -> Run:
            out = {"role": "assistant", "tool_calls": [
                {"name": "get_customer", "arguments": {"customer_id": "C-5512"}},
                {"name": "get_roof", "arguments": {"site_id": site}},
            ]}
            return _run(
                Step("g", "generation", "llm", input=inp, output=out),
                Step("c", "get_customer", "tool", input={"customer_id": "C-5512"},
                     output={"customer_id": "C-5512", "site": answered}, deps=(D("g"),)),
                Step("r", "get_roof", "tool", input={"site_id": site}, output={"site": site}, deps=(D("g"),)),
            )

        assert not [e for e in _from(_verdict(turn("S-88", "S-88"), "g"), "llm-output") if not e.sound]
        [e] = _from(_verdict(turn("S-88", "S-17"), "g"), "llm-output")
        assert "S-88" in e.reason and not e.sound

    def test_contradiction_comes_with_a_correction(self) -> None:
        """An LLM output contradicting its input on a field proposes the input's value as a correction."""
        run = _run(
            Step(
                "p",
                "plan",
                "llm",
                input={"metric": "revenue"},
                output={"metric": "units", "group_by": "region"},
            )
        )
        v = _verdict(run, "p")
        assert v.faulty
        assert v.correction == {"metric": "revenue", "group_by": "region"}

    def test_lost_value_named_by_the_failure(self) -> None:
        """A step whose input holds the value a failure misses, and whose output lacks it, lost it."""
        run = _run(
            Step(
                "w",
                "write_sql",
                "llm",
                input={"plan": "quarters 2025-Q2 and 2025-Q3"},
                output="SELECT * FROM t WHERE q IN ('2025-Q3')",
            ),
            Step(
                "c",
                "compute",
                input={"rows": []},
                status="error",
                error=ErrorInfo("KeyError", "'2025-Q2'"),
                deps=(D("w"),),
            ),
        )
        failures = [Failure("c", "step-error", "KeyError: '2025-Q2'", "exception:KeyError")]
        [w] = [c for c in localize(run, failures=failures).candidates if c.step_id == "w"]
        assert "lineage:dropped" in w.signals
        assert any("2025-Q2" in r and "did not pass it on" in r for r in w.reasons)


class TestDataSteps:
    def test_parse_dropping_items(self) -> None:
        """A parse step returning fewer items than it was given dropped them."""
        run = _run(
            Step("p", "parse", "parse", input={"text": '[{"a": 1}, {"a": 2}, {"a": 3}]'}, output=[{"a": 1}])
        )
        [e] = _from(_verdict(run, "p"), "parse-dropped")
        assert "dropped 2 of 3" in e.reason

    def test_a_sentence_its_numbers_were_read_out_of_is_no_lost_value(self) -> None:
        """A parser reading 6 and 36 out of a model's one-line plan loses no value; one that read nothing out
        of it (an empty plan) still lost the sentence."""

        def run_of(out: Any) -> Run:
            msg = {"role": "assistant", "content": "Cut 6cm strips: 36 per quilt, pressed with steam."}
            return _run(Step("p", "read_cutting", "parse", input={"message": msg}, output=out))

        found = _from(_verdict(run_of({"strip_cm": 6, "strips": 36}), "p"), "parse-dropped")
        assert not [e for e in found if e.suspicion > 0]
        [e] = [e for e in _from(_verdict(run_of({"strip_cm": 0, "method": "steam"}), "p"), "parse-dropped")
               if e.suspicion > 0]
        assert "dropped 1" in e.reason

    def test_a_request_whose_failure_named_values_were_parsed_is_no_lost_value(self) -> None:
        """A parser that read a request sentence into fields lost nothing when the failure names values it
        parsed (the quantity, the stain); one whose output lacks a value the failure names still lost it."""
        request = "Garden benches, 140 units, slats 3x8 in, stain: Oak 214, due 2026-07-11"
        failed = [Failure("x", "step-error", "loading dock: counted 132 units, order is for 140", "x")]

        def run_of(out: dict[str, Any]) -> list[Evidence]:
            run = _run(Step("p", "parse_order", "parse", input={"msg": {"role": "user", "content": request}}, output=out),
                       Step("x", "dock_count", "tool", input={"units": 132}, status="error"))
            return [e for e in _from(_verdict(run, "p", failed), "parse-dropped") if e.suspicion > 0]

        assert run_of({"title": "Garden benches", "quantity": 140, "stain": ["Oak 214"], "due": "2026-07-11"}) == []
        [e] = run_of({"title": "Garden benches", "quantity": 14, "stain": ["Oak 214"], "due": "2026-07-11"})
        assert "dropped 1" in e.reason

    def test_a_quantity_whose_number_a_parse_kept_is_no_lost_value(self) -> None:
        """A parser turning '11.5 C' into temp_c=11.5 (or a number beside its unit) loses nothing; one that kept another
        number, or kept 11.5 under a field named for another unit, lost the reading."""

        def run_of(out: dict[str, Any]) -> Run:
            raw = {"cave": "A", "reading": "11.5 C", "rh": 91}
            return _run(Step("p", "parse_reading", "parse", input={"raw": raw}, output={"cave": "A", "rh": 91, **out}))

        for kept in ({"temp_c": 11.5}, {"temp": 11.5, "unit": "C"}):
            assert not [e for e in _from(_verdict(run_of(kept), "p"), "parse-dropped") if e.suspicion > 0]
        for lost in ({"temp_c": 1.5}, {"temp_f": 11.5}):
            [e] = [e for e in _from(_verdict(run_of(lost), "p"), "parse-dropped") if e.suspicion > 0]
            assert "11.5 C" in e.reason

    def test_a_record_a_parse_was_given_beside_the_text_it_parsed_is_consulted_not_dropped(self) -> None:
        """A parser given a text of lines and, beside it, the record of the item (its id and its fabric) that
        none of its records holds consulted the record: no "dropped the values of its input" finding; a parser
        of two parts that kept nothing of either still lost them."""
        text = "Wear found:\n- seam: 4 cm split\n- fade: 2 cm patch\n- pilling: overall"
        record = {"coat": "CT-7731", "fabric": "wool twill", "years": ["1998 lined", "2011 relined"]}
        out = [{"type": "seam", "units": 4.0}, {"type": "fade", "units": 2.0}, {"type": "pilling", "units": 1.0}]
        run = _run(Step("p", "parse_wear", "parse", input={"text": text, "record": record}, output=out))
        assert not [e for e in _from(_verdict(run, "p"), "parse-dropped") if "values of its input" in e.reason]
        empty = _run(Step("p", "parse_wear", "parse", input={"a": {"coat": "CT-7731"}, "b": {"fabric": "wool twill"}},
                          output={"ok": 1}))
        assert [e for e in _from(_verdict(empty, "p"), "parse-dropped") if "values of its input" in e.reason]

    def test_the_word_after_a_number_a_parse_read_is_its_unit_and_no_cut(self) -> None:
        """Lines such as "- moth: 14 holes" parsed into counts leave 'holes', the number's unit when it follows
        the numbers of most lines (or is a known measure, ``cm``): no cut value; a word left in one line that
        follows no number ("- seam: 4 cm left sleeve") still is one."""

        def found(lines: list[str]) -> list[str]:
            text = "Wear found:\n" + "\n".join(lines)
            out = [{"coat": "CT-7731", "type": ln.split(":")[0].strip("- "), "units": float(ln.split()[2])} for ln in lines]
            run = _run(Step("p", "parse_wear", "parse", input={"text": text, "coat": "CT-7731"}, output=out))
            return [e.reason for e in _from(_verdict(run, "p"), "parse-dropped") if e.suspicion > 0]

        assert found(["- seam: 4 holes", "- fade: 2 cm", "- moth: 14 holes"]) == []
        [reason] = found(["- seam: 4 cm left", "- fade: 2 cm", "- moth: 14 cm"])
        assert "'left'" in reason

    def test_a_word_after_a_number_in_one_line_only_is_a_cut_of_the_value(self) -> None:
        """A parser reading "- Ketch: mooring 12 East" as mooring 12, where the other lines hold a number alone,
        cut 'East' from the value (no unit: it follows a number in one line only and is no measure); the
        failure names that line's mooring."""
        text = "Moorings:\n- Sloop: mooring 8\n- Yawl: mooring 15\n- Ketch: mooring 12 East\n- Dory: mooring 3"
        out = [{"marina": "Otterby", "boat": b, "mooring": n} for b, n in (("Sloop", 8), ("Yawl", 15), ("Ketch", 12), ("Dory", 3))]
        run = _run(Step("p", "parse_moorings", "parse", input={"text": text, "marina": "Otterby"}, output=out))
        failure = Failure("b", "exception", "ValueError: mooring 12 is occupied (Ketch)", "exception:ValueError")
        [e] = [e for e in _from(_verdict(run, "p", [failure]), "parse-dropped") if e.suspicion > 0]
        assert "'east'" in e.reason and e.suspicion >= 0.6

    def test_a_record_beside_the_parsed_text_whose_value_the_failure_names_was_dropped(self) -> None:
        """A parser given a courier's note and, beside it, the parcel's address record, none of which it kept,
        consulted the record, unless the failure names one of its values that no later step was handed (the
        refusal quotes the lost postcode): then the record was needed on, and losing it is the parser's finding.
        A postcode a later step was handed by another path needed no parse to get there."""
        note = "Courier note:\n- slot: evening\n- entry: back yard\n- bell: broken"
        address = {"street": "Quarry Row 9", "postcode": "YO4 2PX"}
        out = {"slot": "evening", "entry": "back yard", "bell": "broken"}

        def dropped(failure: Failure, handed: dict[str, Any]) -> list[Evidence]:
            run = _run(
                Step("p", "parse_courier_note", "parse", input={"note": note, "address": address}, output=out),
                Step("d", "dispatch_parcel", "tool", input={"parcel": "PC-31", **out, **handed}, status="error"),
            )
            return [e for e in _from(_verdict(run, "p", [failure]), "parse-dropped") if "values of its input" in e.reason]

        refusal = Failure("d", "exception", "ValueError: parcel PC-31 has no address (expected YO4 2PX)", "exception:ValueError")
        other = Failure("d", "exception", "ValueError: parcel PC-31 is overweight", "exception:ValueError")
        assert dropped(refusal, {})
        assert not dropped(other, {})
        assert not dropped(refusal, {"zone": "YO4 2PX"})

    def test_parsing_json_a_chat_message_holds_loses_nothing(self) -> None:
        """A parser of a model's message whose content is JSON keeps every value: its input is read as the JSON, not as one string."""
        content = '{"attendees": ["Ana", "Raj"], "day": "Tuesday", "earliest": "10:00"}'
        run = _run(
            Step(
                "p",
                "JsonOutputParser",
                "parse",
                input={"input": {"role": "assistant", "content": content}},
                output={"attendees": ["Ana", "Raj"], "day": "Tuesday", "earliest": "10:00"},
            )
        )
        assert all(e.sound for e in _from(_verdict(run, "p"), "parse-dropped"))

    def test_a_lenient_parser_of_json_after_a_lead_in_loses_nothing(self) -> None:
        """A parser reading "Here is the profile: {..., }" (a trailing comma) into the record keeps every value."""
        raw = 'Here is the profile:\n{\n  "applicant": "Ivan Petrov",\n  "price": 480000,\n}'
        run = _run(
            Step(
                "p",
                "LenientJsonParser",
                "parse",
                input={"input": {"role": "assistant", "content": raw}},
                output={"applicant": "Ivan Petrov", "price": 480000},
            )
        )
        assert all(e.sound for e in _from(_verdict(run, "p"), "parse-dropped"))

    def test_a_step_picking_one_samples_rows_drops_nothing_of_the_others(self) -> None:
        """A step given every sample's rows and one sample, answering about that sample, is judged on that
        sample's rows: the other samples' values were never its to pass on (a failure naming one of them
        says nothing of it)."""
        rows = [
            {"sample": "S-1", "analyte": "Au", "value": 3.5},
            {"sample": "S-2", "analyte": "Au", "value": 4.5},
            {"sample": "S-3", "analyte": "Au", "value": 5.5},
        ]
        run = _run(
            Step("p", "normalize", "parse", input={"sample": "S-1", "rows": rows}, output={"sample": "S-1", "Au": 3.5})
        )
        failures = [Failure("p", "step-error", "S-2 has no Au value", "x")]
        found = _from(_verdict(run, "p", failures), "parse-dropped")
        assert found and all(e.sound for e in found)

    def test_a_number_written_with_separators_parsed_into_a_number_is_kept(self) -> None:
        """A parser turning the text ``"1,429.00"`` into ``1429.0`` kept it (no drop); leaving it out is a drop."""
        reply = {"role": "assistant", "content": '{"invoice": "INV-4410", "currency": "CHF", "total": "1,429.00"}'}

        def parse(out: dict[str, Any]) -> list[Evidence]:
            return _from(_verdict(_run(Step("p", "parse_invoice", "parse", input={"reply": reply}, output=out)), "p"),
                         "parse-dropped")

        assert all(e.sound for e in parse({"invoice": "INV-4410", "currency": "CHF", "total": 1429.0}))
        [e] = parse({"invoice": "INV-4410", "currency": "CHF"})
        assert "1,429.00" in e.reason and not e.sound

    def test_parse_reshaping_without_loss_is_sound(self) -> None:
        """Reshaping rows into a nested mapping keeps every value: sound."""
        rows = [
            {"region": "east", "quarter": "Q2", "total": 4108.89},
            {"region": "east", "quarter": "Q3", "total": 5118.45},
        ]
        run = _run(
            Step("p", "parse", "parse", input={"rows": rows}, output={"east": {"Q2": 4108.89, "Q3": 5118.45}})
        )
        assert all(e.sound for e in _from(_verdict(run, "p"), "parse-dropped"))
        assert not _verdict(run, "p").faulty

    def test_a_parser_of_lines_is_judged_on_the_words_each_line_left_behind(self) -> None:
        """A parser reading lines of one format into records keeps the text (its format's words aside),
        and a word it cut from one line's value is a drop, strong when the failure names that line's values."""
        lines = [("Ash Lane", "Birch Row", "2026-05-02"), ("Cedar Park II", "Dale End", "2026-05-03"),
                 ("Elm Yard", "Fir Close", "2026-05-04")]
        text = "Schedule:\n" + "\n".join(f"{a} vs {b} | {d}" for a, b, d in lines)

        def parse(records: list[dict[str, str]], message: str = "x") -> list[Evidence]:
            step = Step("p", "parse_schedule", "parse", input={"message": {"role": "assistant", "content": text}},
                        output=records)
            return _from(_verdict(_run(step), "p", [Failure("p", "step-error", message, "x")]), "parse-dropped")

        whole = [{"home": a, "away": b, "day": d} for a, b, d in lines]
        assert all(e.sound for e in parse(whole))
        cut = [dict(r) for r in whole]
        cut[1]["home"] = "Cedar Park"
        [e] = parse(cut, "club 'Cedar Park' unknown")
        assert not e.sound and "'ii'" in e.reason and e.suspicion >= 0.5
        [weak] = parse(cut)
        assert not weak.sound and weak.suspicion < 0.5

    def test_state_write_that_readers_never_saw(self) -> None:
        """A state write whose readers see none of some values it was given lost them."""
        run = _run(
            Step("w", "save", "state", input={"totals": {"Q2": 4108.89, "Q3": 5118.45}}, output=2),
            Step("r", "read", input={"state": "{'Q2': 4108.89, 'Q3': 4108.89}"}, deps=(D("w", "state"),)),
        )
        [e] = _from(_verdict(run, "w"), "state-write")
        assert "5118.45" in e.reason and not e.sound

    def test_a_check_writing_the_items_it_flags_loses_nothing(self) -> None:
        """A check that writes some of the records it was given (the ones it flags), or none, selects: the rest are not lost."""
        items = [
            {"merchant": m, "category": c, "amount_eur": a}
            for m, c, a in (("Delta", "flight", 665.22), ("Omni", "hotel", 314.13), ("Cab Co", "taxi", 44.57))
        ]

        def writer(flags: list[dict[str, object]]) -> list[Evidence]:
            run = _run(
                Step("w", "check_policy", "condition", input={"items": items}, output=flags,
                     attributes={"state_writes": ["flags"], "state_values": {"flags": flags}}),
                Step("r", "decide", input={"n": 1}, deps=(D("w", "state"),)),
            )
            return [e for e in _from(_verdict(run, "w"), "state-write") if not e.sound]

        assert writer([items[1]]) == [] and writer([]) == []
        # A writer that rewrites what it was given and keeps only part of it still loses the rest.
        assert writer([{"merchant": "Delta", "category": "flight", "amount_eur": 1.5, "note": "rebooked"}])

    def test_an_empty_container_filled_in_place_is_no_loss(self) -> None:
        """A memory step recorded writing an empty mapping (created with setdefault, filled in place) that
        answered with what it stored lost nothing its readers missed; one whose answer is empty too is judged."""

        def writer(out: object) -> list[Evidence]:
            run = _run(
                Step("w", "remember", "state", input={"sheet": {"animal": "AX-0101", "species": "Okapi", "kg": 240}},
                     output=out, attributes={"state_writes": ["memo"], "state_values": {"memo": {}}}),
                Step("r", "use", input={"animal": "AX-0101"}, output={"avoid": []}, deps=(D("w", "state"),)),
            )
            return [e for e in _from(_verdict(run, "w"), "state-write") if not e.sound]

        assert writer({"AX-0101": []}) == []
        assert writer({})

    def test_a_stored_model_message_is_judged_on_what_its_content_says(self) -> None:
        """A writer handed a model's message whose content is JSON stored its values when it wrote the decoded
        record (the message's role is no value to store); one that wrote only part of the record lost the rest."""
        said = {"hive": "H-7", "action": "treat", "mite_pct": 4.5}
        message = {"role": "assistant", "content": json.dumps(said)}

        def writer(stored: dict[str, object]) -> list[Evidence]:
            run = _run(
                Step("w", "record", "state", input={"verdict": message}, output=stored,
                     attributes={"state_writes": ["ledger"], "state_values": {"ledger": {"H-7": stored}}}),
                Step("r", "report", input={"n": 1}, deps=(D("w", "state"),)),
            )
            return [e for e in _from(_verdict(run, "w"), "state-write") if not e.sound]

        assert writer(said) == []
        [lost] = writer({"hive": "H-7", "mite_pct": 4.5})
        assert "treat" in lost.reason and "assistant" not in lost.reason

    def test_a_writer_leaving_out_what_its_other_calls_leave_out_stores_a_summary(self) -> None:
        """A memory that stores each rank's closing reading, not the notes it was measured on, leaves the
        same fields out on every call: no suspect; the one call that stored the reading before the
        correction, leaving out the corrected one its other calls keep, is."""

        def call(i: int, stored_from: str) -> Step:
            given = {"rank": f"R{i}", "reading": {"notes": [f"N{i}a", f"N{i}b"], "hz": 441.5 + i, "temp": 16.5 + i},
                     "result": {"hz": 440.08 + i, "slide": 1.2 + i}}
            stored = {"rank": f"R{i}", "closing_hz": given[stored_from]["hz"]}  # type: ignore[index]
            return Step(f"w{i}", "remember", "state", input=given, output=stored, start_ns=10 * i, end_ns=10 * i + 1,
                        attributes={"state_writes": ["ranks"], "state_values": {f"rank:R{i}": stored}})

        steps = [call(1, "result"), call(2, "reading"), call(3, "result"), call(4, "result")]
        run = _run(*steps, Step("r", "report", input={"n": 1}, deps=tuple(D(s.step_id, "state") for s in steps),
                                start_ns=100, end_ns=101))
        suspect = {s.step_id for s in steps if any(not e.sound for e in _from(_verdict(run, s.step_id), "state-write"))}
        assert suspect == {"w2"}

    def test_the_sibling_check_decides_as_comparing_each_other_call(self) -> None:
        """Whether a writer's call left out only what its other calls leave out is decided as comparing it
        with each other call one by one (calls counted by what they left out, some calls leaving nothing)."""
        import random

        from trajdebug.analysis.diagnosers._dataflow import _lost_as_siblings, _lost_paths

        def call(i: int, kept: str) -> Step:
            given = {"rank": f"R{i}", "reading": {"hz": 441.5 + i, "temp": 16.5 + i}, "result": {"hz": 440.08 + i}}
            stored = {"rank": f"R{i}", **({} if kept == "none" else {"hz": given[kept]["hz"]})}  # type: ignore[index]
            return Step(f"w{i}", "remember", "state", input=given, output=stored, start_ns=10 * i, end_ns=10 * i + 1,
                        attributes={"state_writes": ["ranks"], "state_values": {f"rank:R{i}": stored}})

        def pairwise(step: Step, calls: list[Step]) -> bool:
            others = [s for s in calls if s.step_id != step.step_id]
            mine = _lost_paths(step)
            theirs = [p for p in map(_lost_paths, others) if p is not None]
            return len(others) >= 2 and bool(mine) and len(theirs) >= 2 and 2 * sum(mine <= p for p in theirs) >= len(theirs)

        rng = random.Random(27)
        seen = set()
        for _ in range(25):
            calls = [call(i, rng.choice(["result", "reading", "none"])) for i in range(rng.randint(1, 7))]
            ctx = DiagnoseContext.build(_run(*calls), diagnosers=registered_diagnosers())
            for s in calls:
                seen.add(pairwise(s, calls))
                assert _lost_as_siblings(s, ctx) == pairwise(s, calls)
        assert seen == {True, False}

    def test_a_memory_keyed_under_an_id_it_was_not_given_is_suspect(self) -> None:
        """A state step storing a record under an id of the shape of the one it was given, but another,
        wrote its own key; keyed under the given id (or under a plain word) it is not suspect."""

        def keyed(key: str) -> list[Evidence]:
            run = _run(Step("w", "remember", "state", input={"sheet": {"animal": "AX-0112", "excluded": ["nuts"]}},
                            output={key: ["nuts"]}))
            return _from(_verdict(run, "w"), "state-values")

        [e] = keyed("AX-0121")
        assert "AX-0121" in e.reason and "AX-0112" in e.reason and not e.sound
        assert keyed("AX-0112") == [] and keyed("latest") == []

    def test_a_record_written_under_another_items_key_is_suspect(self) -> None:
        """A seed bank's memory keys each tray by its species; the write handed the sorrel tray stored it under
        the clover key (the clover tray lost): suspect.  Keyed under its own species it is not."""

        def wrote(key: str) -> list[Evidence]:
            trays = {
                "yarrow": {"species": "yarrow", "cells": 40},
                "vetch": {"species": "vetch", "cells": 36},
                "clover": {"species": "clover", "cells": 32},
                key: {"species": "sorrel", "cells": 24},
            }
            run = _run(Step("w", "remember_tray", "state", input={"tray": {"species": "sorrel", "cells": 24}},
                            attributes={"state_writes": ["trays"], "state_values": {"trays": trays}}))
            return [e for e in _from(_verdict(run, "w"), "state-values") if "keyed" in e.reason]

        [e] = wrote("clover")
        assert "sorrel" in e.reason and "clover" in e.reason
        assert wrote("sorrel") == []

    def test_a_keyed_map_of_records_with_number_keys_is_read_without_fault(self) -> None:
        """A loom's memory keys each warp record by number fields (``{1: "wool", 2: "linen"}``), as an in-process
        recording keeps them: the misfiled-write check reads the records' own keys and finds nothing to say."""
        warps = {"w1": {1: "wool", 2: "linen"}, "w2": {1: "wool", 2: "silk"}, "w3": {1: "hemp", 2: "linen"}}
        run = _run(Step("w", "remember_warps", "state", input={"warp": {1: "wool"}},
                        attributes={"state_writes": ["warps"], "state_values": {"warps": warps}}))
        assert [e for e in _from(_verdict(run, "w"), "state-values") if "keyed" in e.reason] == []

    def test_state_write_rejected_by_a_reader_precondition(self) -> None:
        """A reader's failed pre-condition on shared state makes the writer suspect."""
        run = _run(
            Step("w", "save", "state", input={"x": 1}, output=1),
            Step(
                "r",
                "read",
                deps=(D("w", "state"),),
                attributes={"checks": [{"name": "fresh", "passed": False, "when": "pre"}]},
            ),
        )
        assert any("rejected" in e.reason for e in _from(_verdict(run, "w"), "state-write"))

    def test_retry_returning_different_data(self) -> None:
        """A successful retry whose data differs from the earlier attempt's is suspect."""
        run = _run(
            Step(
                "a1",
                "fetch",
                "tool",
                output={"price": 10},
                status="error",
                error=ErrorInfo("Timeout", "slow"),
            ),
            Step("a2", "fetch", "tool", output={"price": 12}, attempt=2, retry_of="a1"),
        )
        [e] = _from(_verdict(run, "a2"), "retry-divergence")
        assert "attempt 2" in e.reason


class TestErrorsAndContracts:
    def test_error_on_input_is_weaker_than_own_error(self) -> None:
        """A KeyError raised on the input is weaker evidence than a step's own RuntimeError."""
        run = _run(
            Step("a", "x", status="error", error=ErrorInfo("KeyError", "'k'")),
            Step("b", "y", status="error", error=ErrorInfo("RuntimeError", "boom")),
        )
        assert _verdict(run, "a").suspicion < _verdict(run, "b").suspicion

    def test_contracts_post_and_consumer_pre(self) -> None:
        """A failed post-condition marks the step; a consumer's failed pre-condition marks its producer."""
        run = _run(
            Step(
                "p",
                "produce",
                output=[],
                attributes={"checks": [{"name": "non-empty", "passed": False, "when": "post"}]},
            ),
            Step(
                "c",
                "consume",
                deps=(D("p"),),
                attributes={"checks": [{"name": "has rows", "passed": False, "when": "pre"}]},
            ),
        )
        reasons = [e.reason for e in _from(_verdict(run, "p"), "contract")]
        assert any("non-empty failed" in r for r in reasons)
        assert any("pre-condition has rows of consume" in r for r in reasons)

    def test_a_step_that_returned_a_value_after_its_last_call_raised_swallowed_the_error(self) -> None:
        """A reader whose only gauge call raised, returning a placeholder a later step used, is suspect, once
        (`swallowed-error` for a tool call, `step-error` for a code step inside it); the same reader whose
        second call succeeded, or whose value nobody used, is not."""

        def run(*kids: Step, used: bool = True) -> Run:
            reader = Step("r", "read_level", output={"level": 0.0}, start_ns=1, end_ns=10)
            use = Step("u", "plan", input={"level": 0.0}, deps=(D("r"),), start_ns=11, end_ns=12)
            return _run(reader, *kids, *((use,) if used else ()))

        def gauge(sid: str, start: int, ok: bool) -> Step:
            err = None if ok else ErrorInfo("ConnectionError", "link dropped")
            return Step(sid, "gauge", "tool", parent_id="r", status="ok" if ok else "error", error=err,
                        output={"level": 3.0} if ok else None, start_ns=start, end_ns=start + 1)

        def findings(r: Run) -> list[str]:
            v = _verdict(r, "r")
            return [e.diagnoser for e in (*_from(v, "step-error"), *_from(v, "swallowed-error"))]

        # One finding, not two: the wrapper around one tool call is `swallowed-error`'s to say.
        assert findings(run(gauge("g1", 2, False))) == ["swallowed-error"]
        assert findings(run(gauge("g1", 2, False), gauge("g2", 4, True))) == []
        # A step whose last inner call is no tool (a code step) is step-error's reading.
        code = Step("g1", "convert", "other", parent_id="r", status="error", error=ErrorInfo("ValueError", "bad"),
                    start_ns=2, end_ns=3)
        swallowed = _from(_verdict(run(code), "r"), "step-error")
        assert [e.reason.split(" after ")[0] for e in swallowed] == ["returned a value"]
        assert _from(_verdict(run(code, used=False), "r"), "step-error") == []

    def test_passed_checks_are_sound(self) -> None:
        """A step whose checks all passed is not faulty."""
        run = _run(
            Step("p", "produce", attributes={"checks": [{"name": "ok", "passed": True, "when": "post"}]})
        )
        v = _verdict(run, "p")
        assert not v.faulty and any(e.sound for e in v.evidence)


class TestRegistry:
    def test_custom_diagnoser(self) -> None:
        """A plain callable diagnoser is run and its evidence named after it."""

        def shouting(step: Step, ctx: DiagnoseContext) -> Iterable[Evidence]:
            if isinstance(step.output, str) and step.output.isupper():
                yield Evidence(step.step_id, 0.4, "shouts", "")

        run = _run(Step("a", "x", output="HELLO"), Step("b", "y", output="hello"))
        verdicts = diagnose(run, diagnosers=[shouting])
        assert verdicts["a"].faulty and not verdicts["b"].faulty
        assert verdicts["a"].evidence[0].diagnoser == "shouting"

    def test_each_step_is_diagnosed_once(self) -> None:
        """The context counts each diagnosed step once, however often it is asked."""
        ctx = DiagnoseContext.build(_run(Step("a", "x"), Step("b", "y")))
        ctx.verdict("a")
        ctx.verdict("a")
        assert ctx.diagnosed == 1
        assert ctx.known("b") is None
        assert set(BUILTIN_DIAGNOSERS) >= {
            "tool-arguments",
            "tool-result",
            "llm-output",
            "parse-dropped",
            "state-write",
            "retry-divergence",
        }

    def test_tool_diagnosers_registered(self) -> None:
        """The tool diagnosers are registered by name, and every name a rule module exports exists."""
        from trajdebug.analysis.diagnosers import _claims as claims
        from trajdebug.analysis.diagnosers import _steps as evidence
        from trajdebug.analysis.diagnosers import _tool_arguments as arguments
        from trajdebug.analysis.diagnosers import _tools as tools

        assert all(hasattr(evidence, name) for name in evidence.__all__)
        assert all(hasattr(claims, name) for name in claims.__all__)
        assert all(hasattr(tools, name) for name in tools.__all__)
        assert all(hasattr(arguments, name) for name in arguments.__all__)
        for name, fn in {
            "starved-consumer": tools.starved_consumer,
            "tool-result": tools.tool_result,
            "sql-result": tools.sql_result,
            "tool-arguments": arguments.tool_arguments,
        }.items():
            assert BUILTIN_DIAGNOSERS[name] is fn


def _t(sid: str, name: str, kind: str, start: int, **kw: Any) -> Step:
    """A timed step (start..start+1)."""
    return Step(sid, name, kind, start_ns=start, end_ns=kw.pop("end", start + 1), **kw)  # type: ignore[arg-type]


class TestObservations:
    def test_output_marked_as_truncated(self) -> None:
        """A tool result ending in a truncation marker is suspect; an intact one is not."""
        cut = _t("t", "run_suite", "tool", 1, output="FAILED a - x\nFAILED b - y\n[output truncated]")
        whole = _t("u", "run_suite", "tool", 3, output="FAILED a - x\n2 failed, 10 passed")
        run = _run(cut, whole)
        assert _from(_verdict(run, "t"), "truncated-output")[0].suspicion >= 0.5
        assert _from(_verdict(run, "u"), "truncated-output") == []

    def test_a_message_signed_with_a_name_after_its_last_sentence_is_not_cut(self) -> None:
        """A customer's e-mail fetched whole ends "... refund 42.50 EUR. Thanks, Ana": a sentence finished, a
        closing word, a comma and a name after it is how a letter ends, not a cut (nu27, finding 3)."""
        for body in (
            "Hi, order A-1001 arrived damaged. Please refund 42.50 EUR. Thanks, Ana",
            "Hello. My order A-1009 had a broken blender. Please refund the blender, 54.00 EUR. Kind regards, Ana Silva",
        ):
            run = _run(_t("m", "fetch_email", "tool", 1, output={"id": "m1", "body": body}))
            assert _from(_verdict(run, "m"), "truncated-output") == [], body

    def test_a_message_stopping_inside_its_last_sentence_is_cut(self) -> None:
        """The same e-mail cut at a size limit stops inside a sentence's words ("... Thanks, and we look forw", or
        a sentence just begun, "... EUR. Thanks for the qui"): still cut short.  So is one stopping after a few
        capitalised words or one word after the full stop ("... EUR. Refund to Maria", "... EUR. Please"): no
        closing word and comma before them, no signature (rev54b, p1)."""
        for body in (
            "Hi, order A-1001 arrived damaged. Please refund 42.50 EUR. Thanks, and we look forw",
            "Hi, order A-1001 arrived damaged. Please refund 42.50 EUR. Thanks for the qui",
            "Hi, order A-1001 arrived damaged. The jug was cracked. Please send the refund of 54.00 EUR. Refund to Maria",
            "Hi, order A-1001 arrived damaged. The jug was cracked. Please send the refund of 54.00 EUR. Please",
            "Hello. My order A-1009 had a broken blender. Please refund the blender, 54.00 EUR. Ben",
        ):
            run = _run(_t("m", "fetch_email", "tool", 1, output={"id": "m1", "body": body}))
            [e] = _from(_verdict(run, "m"), "truncated-output")
            assert "stops mid-sentence" in e.reason, body

    def test_ragged_last_group_of_records(self) -> None:
        """Records grouped by a field whose last group is shorter than all others look cut at a page limit."""
        rows = [{"cat": c, "month": m, "total": 1.0} for c in ("a", "b", "c") for m in ("01", "02", "03")]
        run = _run(
            _t("q", "run_sql", "tool", 1, output=rows[:-2]), _t("r", "run_sql", "tool", 3, output=rows)
        )
        ev = _from(_verdict(run, "q"), "truncated-output")
        assert ev and "last group has only 1" in ev[0].reason
        assert _from(_verdict(run, "r"), "truncated-output") == []

    def test_pairs_then_one_record_is_not_a_cut_tail(self) -> None:
        """Records in pairs by a field, then a single one, are any odd count (a last day with one charge): not cut off."""
        rows = [{"date": d, "amount": float(i)} for i, d in enumerate(("03", "03", "04", "04", "05"))]
        run = _run(_t("q", "fetch_statement", "tool", 1, output=rows))
        assert not [e for e in _from(_verdict(run, "q"), "truncated-output") if "last group" in e.reason]

    def test_result_lacking_the_tail_every_sibling_has(self) -> None:
        """A text result shorter than every other result of the same tool, missing their closing sentences."""

        def page(name: str, cut: bool) -> str:
            text = f"{name} annual report. Revenue was 12.5 million dollars this year. "
            tail = "The company employed many people at year end. Forward looking statements follow here."
            return text if cut else text + tail

        run = _run(
            _t("a", "fetch", "tool", 1, output=page("Acme", False)),
            _t("b", "fetch", "tool", 3, output=page("Globex", False)),
            _t("c", "fetch", "tool", 5, output=page("Initech", True)),
        )
        assert _from(_verdict(run, "c"), "truncated-output")
        assert _from(_verdict(run, "a"), "truncated-output") == []

    def test_retry_serving_cached_data_after_a_timeout(self) -> None:
        """The attempt after a timeout that returns data flagged as cached is suspect."""
        err = ErrorInfo("TimeoutError", "timed out after 5 s")
        run = _run(
            _t("a", "check", "tool", 1, input={"svc": "x"}, status="error", error=err),
            _t(
                "b",
                "check",
                "tool",
                3,
                input={"svc": "x"},
                output={"status": "ok", "cached": "true"},
                attempt=2,
                retry_of="a",
            ),
        )
        ev = _from(_verdict(run, "b"), "stale-retry")
        assert ev and "cached" in ev[0].reason

    def test_retry_returning_another_period_than_asked(self) -> None:
        """A retry asked for 2025 that returns a 2024 document is suspect; a fresh one is not."""
        err = ErrorInfo("TimeoutError", "read timed out")
        url = {"url": "https://x.example/ir/2025"}
        stale = _run(
            _t("a", "fetch", "tool", 1, input=url, status="error", error=err),
            _t("b", "fetch", "tool", 3, input=url, output="Annual report 2024.", attempt=2, retry_of="a"),
        )
        fresh = _run(
            _t("a", "fetch", "tool", 1, input=url, status="error", error=err),
            _t("b", "fetch", "tool", 3, input=url, output="Annual report 2025.", attempt=2, retry_of="a"),
        )
        assert _from(_verdict(stale, "b"), "stale-retry")
        assert _from(_verdict(fresh, "b"), "stale-retry") == []

    def test_environment_value_changed_since_an_earlier_read(self) -> None:
        """An environment read that differs from an earlier read of the same key is suspect."""
        run = _run(
            _t("a", "open_index", "tool", 1, attributes={"env_reads": {"config:INDEX": "v2"}}),
            _t("b", "open_index", "tool", 3, attributes={"env_reads": {"config:INDEX": "v1"}}),
        )
        ev = _from(_verdict(run, "b"), "environment")
        assert ev and "'v1'" in ev[0].reason and "'v2'" in ev[0].reason
        assert _from(_verdict(run, "a"), "environment") == []

    def test_environment_value_named_by_the_failure(self) -> None:
        """A failure message naming a value a step read from the environment implicates that step."""
        reader = _t("e", "load_env", "tool", 1, attributes={"env_reads": {"config:TZ": "Pacific/Kiritimati"}})
        run = _run(reader)
        failure = Failure("e", "step-error", "off by one day (TZ=Pacific/Kiritimati)", "exception:X")
        assert _from(_verdict(run, "e", [failure]), "environment")


class TestDecisionsAndState:
    def _decisions(self, choice: str) -> Run:
        alike = [
            _t(
                f"d{i}",
                "classify",
                "condition",
                2 * i,
                input={"error": f"AssertionError: f{i}() returned the wrong value"},
                output="code",
            )
            for i in range(4)
        ]
        odd = _t(
            "x",
            "classify",
            "condition",
            20,
            input={"error": "AssertionError: g() returned the wrong value"},
            output=choice,
        )
        return _run(*alike, odd)

    def test_decision_unlike_alike_decisions(self) -> None:
        """A decision that went the other way from most decisions on alike inputs is suspect."""
        ev = _from(_verdict(self._decisions("flaky"), "x"), "decision")
        assert ev and not ev[0].sound and "'code'" in ev[0].reason
        assert all(e.sound for e in _from(_verdict(self._decisions("code"), "x"), "decision"))

    def test_choice_not_grounded_in_its_input(self) -> None:
        """A choice its input never mentions is suspect; one its input names is sound."""
        q = {"question": "Revenue per month for books in 2025-Q3"}
        wrong = _run(_t("c", "granularity", "condition", 1, input=q, output="quarterly"))
        right = _run(_t("c", "granularity", "condition", 1, input=q, output="monthly"))
        assert not _from(_verdict(wrong, "c"), "decision")[0].sound
        assert _from(_verdict(right, "c"), "decision")[0].sound

    def test_a_write_keeps_what_earlier_writes_left_in_the_state(self) -> None:
        """A writer records the whole value of its key: the payslips earlier writes stored there are not this
        write's values (none found in its inputs), only the one it adds is."""
        first = {"employee": "E-1", "gross": 3780.0}
        second = {"employee": "E-2", "gross": 2430.0}

        def write(sid: str, start: int, given: dict[str, Any], state: dict[str, Any]) -> Step:
            return _t(sid, "remember", "state", start, input={"payslip": given},
                      attributes={"state_writes": ["payslips"], "state_values": {"payslips": state}})

        run = _run(
            write("a", 1, first, {"E-1": first}),
            write("b", 3, second, {"E-1": first, "E-2": second}),
            write("c", 5, second, {"E-1": first, "E-2": {"employee": "E-2", "gross": 9999.0}}),
        )
        assert all(e.sound for e in _from(_verdict(run, "b"), "state-values"))
        [e] = _from(_verdict(run, "c"), "state-values")
        assert "9999" in e.reason and "E-1" not in e.reason

    def test_a_clock_advanced_by_given_minutes_is_computed_not_made_up(self) -> None:
        """A writer storing a time its given start plus its given minutes reaches computed it; a time no
        formula of its inputs reaches is found in none of them."""
        import dataclasses

        from trajdebug.analysis.lineage import Lineage

        def advance(sid: str, start: int, clock: str) -> Step:
            return _t(sid, "advance_clock", "state", start, input={"plan": {"start": "08:56", "minutes": 32}},
                      output=clock, attributes={"state_writes": ["clock"], "state_values": {"clock": clock}})

        run = _run(advance("a", 1, "09:28"), advance("b", 3, "11:05"))
        ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
        ctx = dataclasses.replace(ctx, lineage=Lineage(run))
        assert all(e.sound for e in _from(ctx.verdict("a"), "state-values"))
        [e] = _from(ctx.verdict("b"), "state-values")
        assert "11:05" in e.reason and not e.sound

    def test_a_tool_storing_what_it_fetched_writes_the_worlds_values(self) -> None:
        """A tool that stores the record it fetched wrote values its own answer holds: not made up."""
        po = {"po": "PO-7731", "budget_eur": 2120.64, "invoiced_eur": 605.9}
        run = _run(
            _t("t", "fetch_po", "tool", 1, input={"po_id": "PO-7731"}, output=po,
               attributes={"state_writes": ["po_ledger"],
                           "state_values": {"po_ledger": {"PO-7731": {"budget_eur": 2120.64, "invoiced_eur": 605.9}}}})
        )
        assert all(e.sound for e in _from(_verdict(run, "t"), "state-values"))

    def test_a_write_that_recorded_no_input_is_judged_on_the_earlier_outputs(self) -> None:
        """A state block that recorded no input (it stored the program's variables) wrote the values earlier
        steps produced: not made up; a value no earlier step produced still is."""
        spec = {"job": "J-41", "blank_mm": [508.0, 711.2], "stock": "Corvo 300gsm"}

        def block(stored: dict[str, Any]) -> list[Evidence]:
            run = _run(
                _t("p", "parse_order", "parse", 1, input={"text": "J-41 20x28 in on Corvo 300gsm"}, output=spec),
                _t("w", "store_card", "state", 3, output=stored,
                   attributes={"state_writes": ["ticket"], "state_values": {"ticket": stored}}),
            )
            return _from(_verdict(run, "w"), "state-values")

        assert all(e.sound for e in block({"blank_mm": [508.0, 711.2], "stock": "Corvo 300gsm"}))
        [e] = block({"blank_mm": [508.0, 911.2], "stock": "Corvo 300gsm"})
        assert "911.2" in e.reason and "508" not in e.reason and not e.sound

    def test_lost_update_between_parallel_writers(self) -> None:
        """Of two overlapping read-modify-writes of one key, the later write that dropped the other's value is blamed."""
        a = _t(
            "a",
            "register",
            "state",
            1,
            end=5,
            attributes={
                "state_reads": ["sources"],
                "state_writes": ["sources"],
                "state_values": {"sources": ["https://a.example"]},
            },
        )
        b = _t(
            "b",
            "register",
            "state",
            2,
            end=6,
            attributes={
                "state_reads": ["sources"],
                "state_writes": ["sources"],
                "state_values": {"sources": ["https://b.example"]},
            },
        )
        run = _run(a, b)
        ev = _from(_verdict(run, "b"), "race")
        assert ev and "https://a.example" in ev[0].reason
        assert _from(_verdict(run, "a"), "race") == []

    def test_sub_agent_contradicting_its_child(self) -> None:
        """An agent step returning a value its own child step produced differently is suspect."""
        run = _run(
            _t("g", "researcher", "agent", 1, end=9, output={"market": "wind", "growth": 1.2}),
            _t("n", "take_notes", "llm", 2, parent_id="g", output={"market": "wind", "growth": 12.0}),
        )
        assert _from(_verdict(run, "g"), "sub-agent")

    def test_a_sub_agent_returning_one_of_the_records_its_child_listed_is_a_pick(self, tmp_path: Path) -> None:
        """A recorded fitting sub-agent whose child step listed the household's three guest records, and which
        returned the second (its student's), picked from its child's list: nothing contradicts it.  Returning a
        guest its child listed nowhere still contradicts the child."""
        import trajdebug
        from trajdebug.sources.load import load_runs

        household = [{"guest": f"G-70{i}", "name": n} for i, n in enumerate(("Mia", "Leo", "Ava"), 1)]

        @trajdebug.step(kind="tool")
        def list_guests(family: str) -> dict[str, Any]:
            return {"family": family, "guests": household}

        @trajdebug.step(kind="agent")
        def fit_skis(student: str, answer: str | None = None) -> dict[str, Any]:
            found = list_guests("Berger")
            guest = answer or next(g["guest"] for g in found["guests"] if g["name"] == student)
            return {"fits": [{"name": student, "guest": guest, "ski_cm": 130}]}

        def said(answer: str | None) -> list[Evidence]:
            path = tmp_path / f"{answer}.jsonl"
            with trajdebug.run("ski-school", path=path):
                fit_skis("Leo", answer)
            [run] = load_runs(path)
            agent = next(s for s in run.steps if s.name == "fit_skis")
            return _from(_verdict(run, agent.step_id), "sub-agent")

        assert said(None) == []
        [e] = said("G-7099")
        assert "G-7099" in e.reason and "list_guests" in e.reason

    @pytest.mark.parametrize("flat", [False, True])
    def test_a_sub_agent_returning_another_record_than_the_one_its_input_names_contradicts_its_child(
        self, tmp_path: Path, flat: bool
    ) -> None:
        """A recorded sub-agent asked for Mia, whose child listed Mia Berger's and Leo Berger's records (or
        stated Mia's beside the candidates), and which returned Leo's id, did not pick from the list: its input
        names Mia's record by a word only that record has (``Berger`` is both records' and names neither), so
        the child's answer contradicts it.  Asked for Leo, the same return is a pick and nothing is said."""
        import trajdebug
        from trajdebug.sources.load import load_runs

        family = [{"customer_id": "C-701", "name": "Mia Berger"}, {"customer_id": "C-702", "name": "Leo Berger"}]

        @trajdebug.step(kind="tool")
        def list_customers(family_name: str) -> dict[str, Any]:
            if flat:
                return {"family": family_name, "customer_id": "C-701", "candidates": family}
            return {"family": family_name, "customers": family}

        @trajdebug.step(kind="agent")
        def resolve_customer(first: str, family_name: str) -> dict[str, Any]:
            list_customers(family_name)
            return {"name": first, "customer_id": "C-702"}

        def said(first: str) -> list[Evidence]:
            path = tmp_path / f"{first}.jsonl"
            with trajdebug.run("order-desk", path=path):
                resolve_customer(first, "Berger")
            [run] = load_runs(path)
            agent = next(s for s in run.steps if s.name == "resolve_customer")
            return _from(_verdict(run, agent.step_id), "sub-agent")

        [e] = said("Mia")
        assert "C-702" in e.reason and "list_customers" in e.reason and "C-701" in e.reason
        assert said("Leo") == []

    def test_a_sub_agent_returning_a_value_its_child_lists_twice_picked_it_from_the_list_its_input_names(
        self, tmp_path: Path
    ) -> None:
        """A recorded kart sub-agent whose child answered the booked class, the fleet (every kart of that class)
        and the allocation (a driver per kart), and which returned the first allocation's kart: the kart sits in
        both lists and its input names that allocation's driver, so it picked it; the booked class (the child's
        first ``kart``) is no contradiction."""
        import trajdebug
        from trajdebug.sources.load import load_runs

        @trajdebug.step(kind="tool")
        def plan_karts(drivers: list[str]) -> dict[str, Any]:
            fleet = [{"kart": f"K0{i}", "class": "390cc"} for i in range(1, 4)]
            allocation = [{"driver": d, "kart": k["kart"]} for d, k in zip(drivers, fleet)]
            return {"booking": {"kart": "390cc"}, "fleet": fleet, "allocation": allocation}

        @trajdebug.step(kind="agent")
        def allocate(drivers: list[str]) -> dict[str, Any]:
            plan = plan_karts(drivers)
            return {"driver": drivers[0], "kart": plan["allocation"][0]["kart"]}

        path = tmp_path / "karts.jsonl"
        with trajdebug.run("karting", path=path):
            allocate(["Mo Berg", "Ben Gold"])
        [run] = load_runs(path)
        agent = next(s for s in run.steps if s.name == "allocate")
        assert _from(_verdict(run, agent.step_id), "sub-agent") == []

    def test_a_sub_agent_agreeing_with_its_last_answer_is_not_contradicting_its_prompt(self) -> None:
        """An agent whose answer is its model's answer does not contradict the prompt template before it (envelope fields are not values)."""
        run = _run(
            _t("g", "router", "agent", 1, end=9, output={"role": "assistant", "content": "TRACK: refinance"}),
            _t(
                "p",
                "ChatPromptTemplate",
                "other",
                2,
                parent_id="g",
                output={"role": "system", "content": "Choose the track."},
            ),
            _t(
                "m",
                "ChatOpenAI",
                "llm",
                3,
                parent_id="g",
                output={"role": "assistant", "content": "TRACK: refinance"},
            ),
        )
        assert _from(_verdict(run, "g"), "sub-agent") == []

    def test_a_model_choosing_the_option_its_data_contradicts(self) -> None:
        """A router told to choose "purchase or refinance" that says refinance for a profile whose purpose is purchase is suspect."""
        profile = '{"applicant": "I. P.", "purpose": "purchase", "price": 480000}'

        def router(answer: str) -> Run:
            msgs = [
                {
                    "role": "system",
                    "content": "You are a loan officer. Choose the track: purchase or refinance.",
                },
                {"role": "user", "content": "PROFILE: " + profile},
            ]
            return _run(
                _t("r", "route", "llm", 1, input={"messages": msgs}, output={"content": f"TRACK: {answer}"})
            )

        [e] = _from(_verdict(router("refinance"), "r"), "option-choice")
        assert "purpose='purchase'" in e.reason
        assert _from(_verdict(router("purchase"), "r"), "option-choice") == []

    def test_a_gate_that_let_through_a_number_the_failure_says_breaks_a_limit(self) -> None:
        """A model told to route "go or hold", given a gust of 13, that chose go before a check inside the
        go branch refused 13 m/s as over its 10 m/s limit is suspect; given 8, before a failure that states no
        limit, or before a check outside the branch it chose, it is not."""

        def run_of(gust: int, message: str, branch: str = "go") -> Run:
            msgs = [
                {"role": "system", "content": "Decide whether the crane lift goes ahead: go or hold."},
                {"role": "user", "content": f'{{"gust_ms": {gust}, "load_t": 34.5}}'},
            ]
            return _run(
                _t("r", "route", "llm", 1, input={"messages": msgs}, output={"content": "ROUTE: go"}),
                _t("g", branch, "agent", 3, end=6, input={"gust_ms": gust}, status="error"),
                _t("f", "file_permit", "tool", 4, input={"gust_ms": gust}, status="error", parent_id="g",
                   error=ErrorInfo("ValueError", message), deps=(D("r"),)),
            )

        def found(run: Run) -> list[Evidence]:
            return _from(_verdict(run, "r", detect(run)), "option-choice")

        [e] = found(run_of(13, "gust 13 m/s above the 10 m/s lifting limit"))
        assert "13" in e.reason and "'go'" in e.reason
        assert found(run_of(8, "gust 13 m/s above the 10 m/s lifting limit")) == []
        assert found(run_of(13, "permit office closed for 13 days")) == []
        assert found(run_of(13, "gust 13 m/s above the 10 m/s lifting limit", branch="report")) == []


    def test_a_hand_off_away_from_the_agent_its_input_names(self) -> None:
        """A model that hands a request to an agent its input never names, while it names another agent it
        could hand to (``domain=medical``: ``medical_desk``, not ``general_desk``), routed it wrong; handing
        it to the named one, or options its input names none of, say nothing."""
        task = '{"job": "TJ-1", "domain": "medical"}'

        def route(to: str, domain: str = "medical") -> Run:
            msgs = [{"role": "user", "content": "New job: " + task.replace("medical", domain)}]
            out = {"role": "assistant", "tool_calls": [{"name": f"transfer_to_{to}", "arguments": {}}]}
            desks = ["legal_desk", "medical_desk", "general_desk"]
            return _run(
                _t("a", "intake", "agent", 0, attributes={"handoffs": desks}),
                _t("g", "generation", "llm", 1, parent_id="a", input={"messages": msgs}, output=out),
            )

        [e] = _from(_verdict(route("general_desk"), "g"), "option-choice")
        assert "general_desk" in e.reason and "medical_desk" in e.reason
        assert _from(_verdict(route("medical_desk"), "g"), "option-choice") == []
        assert _from(_verdict(route("general_desk", domain="retail"), "g"), "option-choice") == []


    def test_a_hand_off_named_by_its_agent_and_contradicted_by_the_failure(self) -> None:
        """A hand-off to an agent recorded by its display name (``Phone Support``, called as
        ``transfer_to_phone_support``) whose input names neither desk, followed by a failure that names the
        other desk's own word ("refunds go to billing"), routed it wrong; a failure naming no desk says nothing."""

        def route(to: str, message: str) -> tuple[Run, list[Failure]]:
            msgs = [{"role": "user", "content": "Ticket T-1: money back for order O-9"}]
            out = {"role": "assistant", "tool_calls": [{"name": f"transfer_to_{to}", "arguments": {}}]}
            run = _run(
                _t("a", "Intake", "agent", 0, attributes={"handoffs": ["Billing Support", "Phone Support"]}),
                _t("g", "generation", "llm", 1, parent_id="a", input={"messages": msgs}, output=out),
                _t("r", "refund", "tool", 2, status="error", error=ErrorInfo("ToolError", message)),
            )
            return run, [Failure("r", "step-error", f"ToolError: {message}", "exception:ToolError", "step")]

        def found(to: str, message: str) -> list[Evidence]:
            run, failures = route(to, message)
            return _from(_verdict(run, "g", failures), "option-choice")

        [e] = found("phone_support", "only billing can issue refunds")
        assert "'Phone Support'" in e.reason and "'Billing Support'" in e.reason
        assert found("billing_support", "only billing can issue refunds") == []
        assert found("phone_support", "the refund system is down") == []

    def test_a_failure_sharing_only_a_common_word_with_another_agent_says_nothing_of_the_hand_off(self) -> None:
        """A wrapper's "Error in agent run" does not name ``Billing Agent`` (a kind of step, not the agent's own
        word), nor does "and" name ``Sales and Returns``: a hand-off to another agent stays unblamed."""

        def found(handoffs: list[str], to: str, message: str) -> list[Evidence]:
            msgs = [{"role": "user", "content": "Ticket T-1: the printer jams"}]
            out = {"role": "assistant", "tool_calls": [{"name": f"transfer_to_{to}", "arguments": {}}]}
            run = _run(
                _t("a", "Intake", "agent", 0, attributes={"handoffs": handoffs}),
                _t("g", "generation", "llm", 1, parent_id="a", input={"messages": msgs}, output=out),
                _t("r", "run_fix", "tool", 2, status="error", error=ErrorInfo("ToolError", message)),
            )
            failures = [Failure("r", "step-error", f"ToolError: {message}", "exception:ToolError", "step")]
            return _from(_verdict(run, "g", failures), "option-choice")

        agents = ["Billing Agent", "Technical Support"]
        assert found(agents, "technical_support", "Error in agent run: the fix did not apply") == []
        assert found(["Sales and Returns", "Technical Support"], "technical_support", "paper and toner are out") == []
        assert found(agents, "technical_support", "only billing can apply a credit") != []


class TestSharedAnswer:
    def test_a_lookup_answering_another_calls_record_id_is_suspect(self) -> None:
        """Of four lookups that each answered a sheet of their own but one, the call asked about the item
        the failure names, answering the sheet another call got, is suspect; the other call, and a run where
        sheets repeat anyway, are not."""

        def run_of(sheets: list[str]) -> Run:
            return _run(*(Step(f"l{i}", "lookup_sheet", "retrieval", input={"item": f"IT-010{i}"},
                               output={"item": f"IT-010{i}", "sheet": sh}) for i, sh in enumerate(sheets, 1)))

        failures = [Failure("x", "step-error", "store: sheet SH-101 is not registered to IT-0102", "x")]
        run = run_of(["SH-101", "SH-101", "SH-103", "SH-104"])
        [e] = _from(_verdict(run, "l2", failures), "shared-answer")
        assert "SH-101" in e.reason and "IT-0102" in e.reason
        assert not _from(_verdict(run, "l1", failures), "shared-answer")
        shared = run_of(["SH-101", "SH-101", "SH-103", "SH-103"])
        assert not _from(_verdict(shared, "l2", failures), "shared-answer")


class TestRepeatedOption:
    def test_a_plan_using_a_given_name_twice_and_another_never_is_suspect(self) -> None:
        """A model given names to arrange one each that answers one of them twice and leaves another out is
        suspect when the failure names the repeated one; an answer using each once, or a failure about
        something else, leaves it alone (a name inside a longer one counts for the longer)."""
        names = ["Oak Hall", "Pine Room", "Oak", "Elm Suite"]
        prompt = "Assign one talk to each room, one line each.\n" + json.dumps({"rooms": names})

        def found(answer: str, message: str) -> list[Evidence]:
            run = _run(Step("m", "plan", "llm", input={"messages": [{"role": "user", "content": prompt}]},
                            output={"role": "assistant", "content": answer}))
            return _from(_verdict(run, "m", [Failure("m", "step-error", message, "x")]), "repeated-option")

        twice = "Talks:\nOak Hall: keynote\nPine Room: panel\nOak: demo\nOak Hall: closing"
        [e] = found(twice, "check: Oak Hall is booked 2 times")
        assert "'oak hall' 2 times" in e.reason and "'elm suite'" in e.reason
        assert not found(twice, "check: the demo has no speaker")
        assert not found("Talks:\nOak Hall: keynote\nPine Room: panel\nOak: demo\nElm Suite: closing",
                         "check: Oak Hall is booked 2 times")


class TestSymptoms:
    def test_check_rejecting_its_input_is_a_symptom(self) -> None:
        """A step whose error is a failed check on what it was given gets little suspicion of its own."""
        err = ErrorInfo("CheckFailed", "report check failed: total 12.0 does not match the database (14.0)")
        own = ErrorInfo("RuntimeError", "worker crashed")
        check = _run(_t("c", "check_report", "output", 1, status="error", error=err))
        crash = _run(_t("c", "check_report", "output", 1, status="error", error=own))
        assert _verdict(check, "c").suspicion < 0.1 < _verdict(crash, "c").suspicion

    def test_error_handled_by_a_later_call_is_weak(self) -> None:
        """A tool error followed by a clean call of the same tool on the same target is handled, not a cause."""
        err = ErrorInfo("ToolErrorPayload", "AssertionError: f() returned the wrong value")
        run = _run(
            _t(
                "a",
                "run_test",
                "tool",
                1,
                input={"test": "tests/test_x.py::test_f"},
                status="error",
                error=err,
            ),
            _t(
                "b",
                "run_test",
                "tool",
                3,
                input={"test": "tests/test_x.py::test_f"},
                output={"status": "passed"},
            ),
        )
        assert _verdict(run, "a").suspicion < 0.1


class TestDelegatedResult:
    def _loop(self, last_supplier: str) -> Run:
        lines = [{"sku": "A1", "supplier": "NORDFAB"}, {"sku": "C3", "supplier": "LUMEN"}]
        return _run(
            Step("node", "draft_orders", "agent", output={"lines": lines}, start_ns=0, end_ns=9),
            Step("p1", "parse_reply", "parse", parent_id="node", output={"supplier": "NORDFAB"}, start_ns=1, end_ns=2),
            Step("p2", "parse_reply", "parse", parent_id="node", output={"supplier": last_supplier}, start_ns=3, end_ns=4),
        )

    def test_a_loop_returning_one_record_per_child_does_not_contradict_its_last_child(self) -> None:
        """An enclosing step that returns one record per iteration (first NORDFAB, then LUMEN) holds what its last
        child produced among its records: no sub-agent contradiction, though its first record differs."""
        assert _from(_verdict(self._loop("LUMEN"), "node"), "sub-agent") == []

    def test_an_enclosing_step_returning_a_value_none_of_its_records_holds_still_contradicts(self) -> None:
        """When no record of the enclosing step's output holds the last child's value, it still contradicts it."""
        ev = _from(_verdict(self._loop("KARLSSON"), "node"), "sub-agent")
        assert ev and "KARLSSON" in ev[0].reason


class TestStaleAndCutSiblings:
    def test_a_freshness_field_older_than_every_sibling_is_flagged(self) -> None:
        """One call answered as_of 05:40 where every other call of the tool answered 07:29: a stale copy."""
        steps = [
            _t(f"s{i}", "station_status", "tool", i, input={"station": f"H-{i}"}, output={"bikes": i, "as_of": "07:29"})
            for i in range(3)
        ]
        steps.append(_t("s9", "station_status", "tool", 9, input={"station": "H-9"}, output={"bikes": 9, "as_of": "05:40"}))
        run = _run(*steps)
        ev = _from(_verdict(run, "s9"), "stale-sibling")
        assert ev and "05:40" in ev[0].reason and "07:29" in ev[0].reason
        assert _from(_verdict(run, "s0"), "stale-sibling") == []

    def test_an_older_value_asked_for_or_without_consensus_is_no_tell(self) -> None:
        """A version the call asked for, or siblings that disagree among themselves, raise nothing."""
        asked = _run(
            _t("a", "record", "tool", 1, input={"pid": "P-1"}, output={"record_version": 5}),
            _t("b", "record", "tool", 2, input={"pid": "P-2"}, output={"record_version": 5}),
            _t("c", "record", "tool", 3, input={"pid": "P-3", "record_version": 3}, output={"record_version": 3}),
        )
        assert _from(_verdict(asked, "c"), "stale-sibling") == []
        mixed = _run(
            _t("a", "record", "tool", 1, input={"pid": "P-1"}, output={"record_version": 5}),
            _t("b", "record", "tool", 2, input={"pid": "P-2"}, output={"record_version": 4}),
            _t("c", "record", "tool", 3, input={"pid": "P-3"}, output={"record_version": 3}),
        )
        assert _from(_verdict(mixed, "c"), "stale-sibling") == []

    def test_a_field_written_in_another_format_than_every_sibling_wrote_it_is_flagged(self) -> None:
        """One call answered a shipment's code in another digit pattern (``BX-2291-7``) where the four other calls
        of the tool wrote ``BX-2291``: its format drifted; a field whose calls disagree among themselves, or a
        value the call was asked for, raises nothing."""

        def calls(codes: list[str], asked: bool = False) -> Run:
            return _run(*[
                _t(f"s{i}", "pack", "tool", i, input={"order": f"O-{i}", **({"box": c} if asked else {})},
                   output=json.dumps({"order": f"O-{i}", "box": c}))
                for i, c in enumerate(codes)
            ])

        drift = calls(["BX-2291", "BX-2304", "BX-2291-7", "BX-2318", "BX-2325"])
        ev = _from(_verdict(drift, "s2"), "format-sibling")
        assert ev and "BX-2291-7" in ev[0].reason
        assert _from(_verdict(drift, "s0"), "format-sibling") == []
        mixed = calls(["BX-2291", "2291/B", "BX-2291-7", "BX-2318", "BX-2325"])
        assert _from(_verdict(mixed, "s2"), "format-sibling") == []
        asked = calls(["BX-2291", "BX-2304", "BX-2291-7", "BX-2318", "BX-2325"], asked=True)
        assert _from(_verdict(asked, "s2"), "format-sibling") == []

    def test_a_text_stopping_on_a_word_where_longer_siblings_end_cleanly_is_cut(self) -> None:
        """A shorter result whose last line stops mid-word, where the tool's other results end with a line
        break, looks cut short (its last line is too short for the prose rule)."""
        full = "Proposal: A\nSummary: the work. It goes on. It ends.\nBudget justification: staff costs.\nBudget: EUR 9\n"
        cut = "Proposal: B\nSummary: the work. It goes on. It ends.\nBudget justification: the sta"
        run = _run(_t("a", "get_proposal", "tool", 1, output=full), _t("b", "get_proposal", "tool", 2, output=cut))
        ev = _from(_verdict(run, "b"), "truncated-output")
        assert ev and "the sta" in ev[0].reason
        assert _from(_verdict(run, "a"), "truncated-output") == []

    def test_an_answer_that_says_it_came_from_a_cache_is_suspect(self) -> None:
        """A result with ``cached_at``, or a freshness field saying ``cache``, is suspected of being stale;
        a fresh one with an ``as_of`` time is not."""
        cached = _t("a", "fetch_profile", "tool", 1, output='{"candidate_id": "C-1", "cached_at": "2025-10-14"}')
        fetched = _t("b", "sponsors", "tool", 2, output={"active": ["X"], "fetched": "cache"})
        fresh = _t("c", "sponsors", "tool", 3, output={"active": ["X"], "as_of": "07:29"})
        run = _run(cached, fetched, fresh)
        assert _from(_verdict(run, "a"), "stale-cache") and _from(_verdict(run, "b"), "stale-cache")
        assert _from(_verdict(run, "c"), "stale-cache") == []


class TestStepFact:
    def test_a_fact_is_computed_once_per_step_and_again_for_the_next(self) -> None:
        """A step fact is computed on its first reading for a step, served from then on, and computed anew for another step."""
        a, b = Step("a", "t", kind="tool"), Step("b", "t", kind="tool")
        ctx = DiagnoseContext.build(_run(a, b))
        calls: list[str] = []

        def fact(step: Step) -> str:
            calls.append(step.step_id)
            return step.step_id.upper()

        assert ctx.step_fact(a, "k", lambda: fact(a)) == "A"
        assert ctx.step_fact(a, "k", lambda: fact(a)) == "A"
        assert ctx.step_fact(b, "k", lambda: fact(b)) == "B"
        assert calls == ["a", "b"]

    def test_input_text_is_the_input_without_markers_as_lower_case_text(self) -> None:
        """A step's input text leaves out the recorder's markers and is read in lower case, the same on every reading."""
        s = Step("a", "t", kind="tool", input={"City": "Oslo", "client": {"__trajdebug_repr__": "<Client X>"}})
        ctx = DiagnoseContext.build(_run(s))
        assert ctx.input_text(s) == '{"city":"oslo"}'
        assert ctx.input_text(s) is ctx.input_text(s)

    def test_a_long_input_text_is_kept_only_while_its_step_is_read(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An input text longer than INPUT_TEXT_KEPT is served again for its own step, built anew once another long
        one was read, and never held for the whole diagnosis; a short one is."""
        from trajdebug.analysis.diagnosers import _context

        monkeypatch.setattr(_context, "INPUT_TEXT_KEPT", 20)
        long_, other = Step("a", "t", kind="llm", input={"prompt": "A" * 40}), Step("b", "t", kind="llm", input="B" * 40)
        short = Step("c", "t", kind="tool", input={"q": "x"})
        ctx = DiagnoseContext.build(_run(long_, other, short))
        first = ctx.input_text(long_)
        assert first == '{"prompt":"' + "a" * 40 + '"}' and ctx.input_text(long_) is first
        assert ctx.input_text(short) is ctx.input_text(short)
        assert ctx.input_text(other) == "b" * 40
        again = ctx.input_text(long_)
        assert again == first and again is not first
        assert ctx.input_text(long_) is again


class TestStateLeaves:
    def test_state_leaves_are_the_leaves_of_what_was_written_read_once_per_value(self) -> None:
        """The state values' leaves read key by key are `content.leaves` of the whole, each with its repr, and a value read
        twice (written by one step, found there by the next) is read once."""
        from trajdebug.analysis import _content as content
        from trajdebug.analysis.diagnosers._state_values import _state_leaves

        ledger = [{"ticket": 1, "amount": 12.5}, {"ticket": 2, "amount": 7.25, "tags": ["a", None, True]}]
        written = {"ledger": ledger, "total": 19.75, "owner": {"id": "C-1", "deep": {"x": [1, {"y": 2}]}}}
        ctx = DiagnoseContext.build(_run(Step("a", "t", kind="state")))
        got = _state_leaves(written, ctx)
        assert got == [(p, v, repr(v)) for p, v in content.leaves(written)]
        again = _state_leaves({"ledger": ledger}, ctx)
        assert again == [(p, v, repr(v)) for p, v in content.leaves({"ledger": ledger})]
        assert len(ctx.memo("state-leaves", dict)) == 3
        assert _state_leaves({"__trajdebug_truncated__": 3, "total": 1.5}, ctx) == []


class TestLoops:
    """A loop over a list: each call is about the next item, which no earlier call's answer contradicts."""

    def test_a_model_asking_about_the_next_item_contradicts_no_earlier_request(self) -> None:
        """A model whose conversation holds calls about three items asks about a fourth: no contradiction."""
        asked = [{"role": "assistant", "tool_calls": [{"name": "classify", "arguments": {"input": f"SKU-{i}: item {i}"}}]} for i in (1, 2, 3)]
        prev = {"role": "assistant", "tool_calls": [{"name": "classify", "arguments": {"input": "SKU-3: item 3"}}]}
        run = _run(
            Step("p", "model", "llm", input={"messages": asked[:2]}, output=prev),
            Step(
                "m", "model", "llm", input={"messages": [{"role": "user", "content": "SKU-4: item 4"}, *asked]},
                output={"role": "assistant", "tool_calls": [{"name": "classify", "arguments": {"input": "SKU-4: item 4, 350 ml"}}]},
                deps=(D("p"),),
            ),
        )
        assert not [e for e in _from(_verdict(run, "m"), "llm-output") if "but its input says" in e.reason]
        # With the earlier call alone (one value for the field), the other value still contradicts it.
        alone = _run(run.steps[0], Step("m", "model", "llm", input={"messages": asked[2:]}, output=run.steps[1].output, deps=(D("p"),)))
        assert [e for e in _from(_verdict(alone, "m"), "llm-output") if "but its input says" in e.reason]

    def test_an_earlier_call_of_the_same_tool_is_no_fact_about_the_next_item(self) -> None:
        """A loop's locker call for M-219 after the one for M-214 (linked by the tier both were given) contradicts nothing."""
        first = Step("a", "locker", "tool", input={"member": "M-214", "tier": "GOLD"}, output={"member": "M-214", "tier": "GOLD", "fee": 48.5})
        run = _run(first, Step("b", "locker", "tool", input={"member": "M-219", "tier": "GOLD"}, deps=(D("a"),)))
        assert not [e for e in _from(_verdict(run, "b"), "tool-arguments") if "contradicts" in e.reason]
        # Another tool's answer about M-214 is a fact the argument contradicts.
        lookup = Step("a", "lookup_member", "tool", input={"card": 77}, output={"member": "M-214", "tier": "GOLD"})
        other = _run(lookup, Step("b", "locker", "tool", input={"member": "M-219", "tier": "GOLD"}, deps=(D("a"),)))
        assert [e for e in _from(_verdict(other, "b"), "tool-arguments") if "contradicts" in e.reason]

    def test_a_planners_earlier_answer_is_no_fact_its_next_answer_contradicts(self) -> None:
        """A kiln planner called once per turn picks firing after glazing (its last answer reached by an edge):
        the next decision, no contradiction; the same field set otherwise by another model is still one."""
        memory = {"goal": "fire pot P-19", "memory": {"pot": {"id": "P-19", "glazed": True}}}
        last = Step("a", "plan_next", "llm", input={"goal": "fire pot P-19"}, output={"action": "apply_glaze", "pot": "P-19"})
        nxt = Step("b", "plan_next", "llm", input=memory, output={"action": "fire_kiln", "pot": "P-19"}, deps=(D("a"),))
        assert not [e for e in _from(_verdict(_run(last, nxt), "b"), "llm-output") if "but its input says" in e.reason]
        critic = Step("a", "review_plan", "llm", input={"goal": "fire pot P-19"}, output={"action": "apply_glaze", "pot": "P-19"})
        assert [e for e in _from(_verdict(_run(critic, nxt), "b"), "llm-output") if "but its input says" in e.reason]

    def test_a_planner_turn_whose_input_counts_turns_is_still_its_own_last_turn(self) -> None:
        """A planner loop whose input carries a counter that changes each turn (the turn, the steps left) and
        keeps its goal decides anew: its next action differs from its last answer without contradicting it;
        a counter alone kept beside a changed goal is another request."""
        def says(a_in: dict[str, Any], b_in: dict[str, Any]) -> list[str]:
            last = Step("a", "choose_move", "llm", input=a_in, output={"action": "water_bed", "bed": "B-4"})
            nxt = Step("b", "choose_move", "llm", input=b_in, output={"action": "prune_bed", "bed": "B-4"},
                       deps=(D("a"),))
            return [e.reason for e in _from(_verdict(_run(last, nxt), "b"), "llm-output") if "but its input says" in e.reason]

        tended = {"bed": {"id": "B-4", "watered": True}}
        assert says({"goal": "tend bed B-4", "turn": 1}, {"goal": "tend bed B-4", "turn": 2, "notes": tended}) == []
        assert says({"goal": "tend bed B-4", "steps_left": 6, "budget": 2.5},
                    {"goal": "tend bed B-4", "steps_left": 5, "budget": 1.0, "notes": tended}) == []
        assert says({"goal": "report on bed B-4", "turn": 1}, {"goal": "tend bed B-4", "turn": 2, "notes": tended})

    def test_two_model_calls_sharing_a_name_but_not_a_conversation_still_contradict(self) -> None:
        """Every model call named alike (as an SDK names them): a reading call that answers 40 litres and a
        billing call given another request that answers 70 contradict each other; the same billing call
        continuing the reading's conversation (its answer handed back as the assistant's message) decides anew."""
        ask = {"role": "user", "content": "read tank T-8"}
        read = Step("a", "completion", "llm", input={"messages": [ask]},
                    output={"role": "assistant", "content": "tank T-8 holds 40 litres", "tank": "T-8", "litres": 40})

        def bill(messages: list[dict[str, Any]]) -> Step:
            return Step("b", "completion", "llm", input={"messages": messages},
                        output={"tank": "T-8", "litres": 70}, deps=(D("a"),))

        def says(run: Run) -> list[str]:
            return [e.reason for e in _from(_verdict(run, "b"), "llm-output") if "but its input says" in e.reason]

        assert says(_run(read, bill([{"role": "user", "content": "bill the tank reading"}])))
        assert says(_run(read, bill([ask, {"role": "assistant", "content": "tank T-8 holds 40 litres"},
                                     {"role": "user", "content": "now bill it"}]))) == []


class TestLookedUp:
    def test_a_made_up_key_whose_lookup_found_the_request_is_no_claim(self) -> None:
        """A model looking a client up by a phone number it was never shown, answered with the bicycle its request names, made nothing up."""

        def run_of(bike: str) -> Run:
            return _run(
                Step(
                    "m", "model", "llm", start_ns=1, end_ns=2,
                    input={"messages": [{"role": "user", "content": "Job J-614: Gazelle (slipping gear)"}]},
                    output={"role": "assistant", "tool_calls": [{"name": "lookup_client", "arguments": {"phone": "+1 555 0174"}}]},
                ),
                Step(
                    "t", "lookup_client", "tool", start_ns=3, end_ns=4, input={"phone": "+1 555 0174"},
                    output={"client_id": "C-174", "bikes": [{"make": bike, "kind": "city"}]}, deps=(D("m"),),
                ),
            )

        assert not [e for e in _from(_verdict(run_of("Gazelle"), "m"), "llm-output") if e.suspicion > 0]
        # A key that found another client's record stays a made-up value.
        [e] = [e for e in _from(_verdict(run_of("Batavus"), "m"), "llm-output") if e.suspicion > 0]
        assert "555 0174" in e.reason

    def test_a_common_word_or_a_date_in_the_answer_names_no_record(self) -> None:
        """A lookup that found another record is not excused by a capitalised common word the request writes in
        lower case ("Dog" for "a dog"), nor by a date the request also holds."""

        def run_of(extra: dict[str, str], asked: str) -> Run:
            return _run(
                Step(
                    "m", "model", "llm", start_ns=1, end_ns=2,
                    input={"messages": [{"role": "user", "content": asked}]},
                    output={"role": "assistant", "tool_calls": [{"name": "find_member", "arguments": {"card": "C 7710 2291"}}]},
                ),
                Step(
                    "t", "find_member", "tool", start_ns=3, end_ns=4, input={"card": "C 7710 2291"},
                    output={"member_id": "M-771", "name": "Ilse Varga", **extra}, deps=(D("m"),),
                ),
            )

        for extra, asked in (
            ({"pet": "Dog"}, "Renew the pass for Tomas Brandt, who brings a dog"),
            ({"since": "2026-03-14"}, "Today is 2026-03-14: renew the pass for Tomas Brandt"),
        ):
            assert [e for e in _from(_verdict(run_of(extra, asked), "m"), "llm-output") if e.suspicion > 0], extra


class TestLoopKeys:
    def test_a_loop_key_another_call_of_the_tool_echoed_is_no_made_up_argument(self) -> None:
        """A code loop's next call of a tool, keyed by the field the earlier call was given and echoed (hive H-12,
        then H-19), gets no "comes from no upstream output" finding for that key; another unseen field still does.
        (The edges are inferred, an imported trace's: at the top level of a run whose values were tracked, the
        run's own code called the tool and its unseen values are its constants, rev55.)"""
        plan = Step("p", "model", "llm", start_ns=1, end_ns=2, input="inspect the north apiary", output={"apiary": "north"})
        first = Step("a", "inspect_hive", "tool", start_ns=3, end_ns=4, input={"hive": "H-12", "apiary": "north"},
                     output={"hive": "H-12", "apiary": "north", "frames": 9}, deps=(D("p", origin="inferred"),))
        later = {"start_ns": 5, "end_ns": 6, "deps": (D("a", origin="inferred"),)}
        run = _run(plan, first, Step("b", "inspect_hive", "tool", input={"hive": "H-19", "apiary": "north"}, **later))
        assert not [e for e in _from(_verdict(run, "b"), "tool-arguments") if e.suspicion > 0]
        odd = _run(plan, first, Step("b", "inspect_hive", "tool", input={"hive": "H-19", "apiary": "east"}, **later))
        [e] = [e for e in _from(_verdict(odd, "b"), "tool-arguments") if e.suspicion > 0]
        assert "east" in e.reason and "H-19" not in e.reason


class TestCodeCalledTools:
    def test_a_graph_nodes_own_roster_is_no_made_up_argument(self) -> None:
        """A tool called by a graph node that holds no model call, with a name no step produced (the node's own
        roster), gets no "comes from no upstream output" finding; the same call inside a node whose model
        spoke, or one a model named, still does."""
        model = Step("m", "ChatOpenAI", "llm", start_ns=1, end_ns=2, input="book TR-7",
                     output={"role": "assistant", "content": "booking TR-7 on 2027-02-20"})
        node = Step("n", "roster_check", "agent", start_ns=3, end_ns=9, input={"trek": "TR-7"})
        call = {"input": {"guide": "Ilari", "start": "2027-02-20"}, "output": {"free": True}, "deps": (D("m"),)}
        tool = Step("t", "guide_availability", "tool", start_ns=4, end_ns=5, parent_id="n", **call)
        assert not [e for e in _from(_verdict(_run(model, node, tool), "t"), "tool-arguments") if e.suspicion > 0]
        inner = Step("m2", "ChatOpenAI", "llm", start_ns=3, end_ns=4, parent_id="n", input="who guides?",
                     output={"role": "assistant", "content": "ask the roster"})
        later = Step("t", "guide_availability", "tool", start_ns=5, end_ns=6, parent_id="n", **call)
        [e] = [e for e in _from(_verdict(_run(model, node, inner, later), "t"), "tool-arguments") if e.suspicion > 0]
        assert "Ilari" in e.reason
        named = Step("m", "ChatOpenAI", "llm", start_ns=1, end_ns=2, input="book TR-7",
                     output={"role": "assistant", "content": "call guide_availability for TR-7 on 2027-02-20"})
        [e] = [e for e in _from(_verdict(_run(named, node, tool), "t"), "tool-arguments") if e.suspicion > 0]
        assert "Ilari" in e.reason

    def test_a_call_beside_a_model_that_asked_for_no_tool_is_the_programs(self) -> None:
        """A tool called in the same enclosing step as a model whose answer recorded an empty list of tool calls
        (it answered text and asked for none) gets its constant argument from the program: no "comes from no
        upstream output" finding; beside a model whose answer records no such list, the finding stays."""
        agent = Step("a", "kiln_desk", "agent", start_ns=0, end_ns=9, input="Fire 12 mugs")
        quiet = Step("m", "read_request", "llm", start_ns=1, end_ns=2, parent_id="a", input="Fire 12 mugs",
                     output={"role": "assistant", "content": "mugs | 12", "tool_calls": []})
        tool = Step("t", "get_kiln_rates", "tool", start_ns=3, end_ns=4, parent_id="a",
                    input={"studio": "Eastside clay works"}, output={"per_piece_eur": 1.5})
        assert not [e for e in _from(_verdict(_run(agent, quiet, tool), "t"), "tool-arguments") if e.suspicion > 0]
        silent = Step("m", "read_request", "llm", start_ns=1, end_ns=2, parent_id="a", input="Fire 12 mugs",
                      output={"role": "assistant", "content": "mugs | 12"})
        [e] = [e for e in _from(_verdict(_run(agent, silent, tool), "t"), "tool-arguments") if e.suspicion > 0]
        assert "Eastside" in e.reason


class TestProseFields:
    """A model writing a sub-agent's request in prose restates its inputs' fields by name."""

    def test_a_field_restated_in_prose_with_another_value_contradicts_the_input(self) -> None:
        """'(Mara Lind, rank: Senior Warden)' from a record saying rank 'none' contradicts it;
        restating 'none', or a name no input has as a field ('Note: Senior Warden'), does not."""

        def brief(text: str) -> list[str]:
            record = Step("r", "apprentice_record", "tool", input={"apprentice": "AP-5120"}, output={"name": "Mara Lind", "rank": "none"})
            model = Step(
                "m", "desk", "llm", input={"messages": [{"role": "user", "content": "Enrol AP-5120."}]},
                output={"role": "assistant", "tool_calls": [{"name": "shift_planner", "arguments": {"input": text}}]},
                deps=(D("r"),),
            )
            return [e.reason for e in _from(_verdict(_run(record, model), "m"), "llm-output") if "but its input says" in e.reason]

        assert brief("Place apprentice AP-5120 (Mara Lind, rank: Senior Warden) on a shift.") == [
            "states rank='Senior Warden' but its input says 'none'"
        ]
        assert brief("Place apprentice AP-5120 (Mara Lind, rank: none) on a shift.") == []
        assert brief("Place apprentice AP-5120 on a shift. Note: Senior Warden course next spring.") == []

    def test_a_field_restated_as_a_sentence_states_no_one_word_value(self) -> None:
        """'Reason: Because the card was declined.' rewords a reason; it does not state reason='Because', and a
        free-text field of more than a few words is not set against a prose restatement."""

        def brief(given: dict[str, Any], text: str) -> list[str]:
            record = Step("r", "order_record", "tool", input={"order": "A-1"}, output=given)
            model = Step(
                "m", "desk", "llm", input={"messages": [{"role": "user", "content": "Check order A-1."}]},
                output={"role": "assistant", "content": text}, deps=(D("r"),),
            )
            return [e.reason for e in _from(_verdict(_run(record, model), "m"), "llm-output") if "but its input says" in e.reason]

        assert brief({"reason": "card declined", "status": "failed"}, "Reason: Because the card was declined.") == []
        assert brief({"notes": "refund requested", "status": "open"}, "Notes: A refund was requested.") == []
        assert brief({"summary": "parcel shipped on Monday"}, "Summary: The parcel was shipped on Monday, as asked.") == []
        assert brief({"summary": "parcel shipped to the depot on Monday"}, "Summary: Delayed, see below.") == []
        assert brief({"status": "open", "carrier": "DHL"}, "Carrier: UPS, as requested.") == [
            "states carrier='UPS' but its input says 'DHL'"
        ]


class TestStateReaders:
    def test_an_argument_a_state_reader_found_as_a_key_of_the_state_it_read_comes_from_upstream(self) -> None:
        """A hive inspection called for H-31, reading the notes a state step wrote (H-31's entry, its output
        None), has an argument that comes from upstream; an id the notes never held still comes from nowhere."""

        def run_of(hive: str) -> Run:
            note = Step(
                "w", "file_note", "state", input={"hive": "H-31", "frames": 9}, output=None, start_ns=1, end_ns=2,
                attributes={"state_writes": ["notes"], "state_values": {"notes": {"H-31": {"frames": 9}}}},
            )
            read = Step(
                "t", "inspect_hive", "tool", input={"hive_id": hive}, output={"queen": "seen"}, start_ns=3,
                end_ns=4, deps=(D("w", "state", "tracked", key="notes"),), attributes={"state_reads": ["notes"]},
            )
            return _run(note, read)

        def nowhere(run: Run) -> list[str]:
            return [e.reason for e in _from(_verdict(run, "t"), "tool-arguments") if "from no upstream output" in e.reason]

        assert nowhere(run_of("H-31")) == []
        assert nowhere(run_of("H-77"))


class TestGraphChannelEdges:
    """Declared state edges keyed by a graph's state key, from a writer that recorded no store of its own."""

    def test_a_graph_node_whose_readers_each_take_one_key_lost_nothing(self) -> None:
        """A node that turned a sighting log into a count under `tally` (its update), read by a later node under that
        key, is not said to have lost the log's values; the same write recorded as a store still is judged."""
        given = {"log": [{"bird": "dunlin", "at": "spit"}, {"bird": "knot", "at": "creek"}], "site": "Warden Flats"}
        update = {"tally": {"dunlin": 41, "knot": 17}}

        def reasons(deps: tuple[Dependency, ...], **attrs: Any) -> list[str]:
            run = _run(
                Step("w", "count_birds", "other", input=given, output=update, attributes=attrs),
                Step("r", "report", "other", input={"tally": update["tally"]}, output={"ok": True}, deps=deps),
            )
            return [e.reason for e in _from(_verdict(run, "w"), "state-write") if not e.sound]

        assert reasons((D("w", "state", "declared", key="tally"),)) == []
        assert reasons((D("w", "state"),)) != []  # no key: a resource written, judged as before

    def test_a_tool_reading_one_key_of_an_update_contradicts_no_other_key(self) -> None:
        """A ferry booking handed the slot of the `sailing` key a node wrote (and a vessel named in the request) does
        not contradict the vessel of the `refit` record the node wrote beside it; an edge with no key reads the
        whole output, and does."""
        update = {"sailing": {"slot": "07:40", "pier": "North"}, "refit": {"vessel": "Lochan Belle", "dock": 2}}

        def reasons(dep: Dependency) -> list[str]:
            run = _run(
                Step("w", "plan_sailing", "other", input={"day": "Tue"}, output=update),
                Step("t", "book_ferry", "tool", input={"vessel": "Morven Isle", "slot": "07:40"}, output={"ref": "FB-91"},
                     deps=(dep,)),
            )
            return [e.reason for e in _from(_verdict(run, "t"), "tool-arguments") if "contradicts" in e.reason]

        assert reasons(D("w", "state", "declared")) != []
        assert reasons(D("w", "state", "declared", key="sailing")) == []

    def test_a_graphs_state_edges_do_not_make_a_tool_fed_by_inferred_edges_a_constant(self) -> None:
        """A run whose only recorded edges are a graph's declared state edges did not track its values: a tool whose
        one upstream edge is inferred still has a survey day that contradicts the plan's day judged."""
        plan = {"plan": {"site": "quay-3", "day": "2031-05-02"}}
        run = _run(
            Step("w", "plan_survey", "other", input={"ask": "survey"}, output=plan, start_ns=1, end_ns=2),
            Step("n", "survey", "other", input={"plan": plan["plan"]}, output={"done": False}, start_ns=3, end_ns=6,
                 deps=(D("w", "state", "declared", key="plan"),)),
            Step("t", "book_diver", "tool", parent_id="n", input={"site": "quay-3", "day": "2031-05-09"},
                 output={"ok": True}, start_ns=4, end_ns=5, deps=(D("w", "data", "inferred", 0.8),)),
        )
        reasons = [e.reason for e in _from(_verdict(run, "t"), "tool-arguments")]
        assert any("contradicts" in r for r in reasons)


def test_a_model_answer_holding_infinity_is_analysed_without_a_crash() -> None:
    """A non-finite number in a model's answer (float('inf'), as Python's json writes Infinity) is read as a value, not a crash."""
    from tests.builders import step

    from trajdebug.analysis import analyze

    steps = (
        step("m", "estimate_ratio", "llm", 0, {"messages": [{"role": "user", "content": "ratio?"}]},
             {"ratio": float("inf"), "n": 2}),
        step("b", "mix_glaze", "tool", 2, {"ratio": 1}, None, "m", status="error",
             error=ErrorInfo("GlazeError", "ratio out of range")),
    )
    result = analyze(Run("r", "potter", outcome="failure", steps=steps))
    assert [c.step_id for c in result.root_causes][:1] in (["m"], ["b"])


def _recorded_survey_run(
    path: Path, *, later: bool = True, reason: str = "payback 13.7 years is above the limit", factor: int = 1
) -> Run:
    """Record one failing run of a quoting agent whose memory step keeps four fields of a site survey (the usage,
    its day and night shares and the roof; ``factor``: the usage is stored that many times over) in ``run.state``; ``later``: the survey itself is handed on to the steps after it (its address
    and utility to a tariff lookup and a brief), else they are handed only the usage the memory kept."""
    import trajdebug
    from trajdebug.sources.load import load_runs

    survey = {"address": "41 Orchard Way", "usage_kwh": 6800, "utility": "MetroEnergy", "day_share": 0.65,
              "night_share": 0.35, "roof": "slate"}

    @trajdebug.step(kind="tool")
    def fetch_survey(customer: str) -> dict[str, Any]:
        return survey

    @trajdebug.step(kind="state")
    def remember_usage(s: dict[str, Any]) -> None:
        trajdebug.current_run().state["usage"] = {
            "usage_kwh": s["usage_kwh"] * factor, "day_share": s["day_share"], "night_share": s["night_share"],
            "roof": s["roof"],
        }

    @trajdebug.step(kind="tool")
    def lookup_tariff(s: dict[str, Any]) -> dict[str, Any]:
        return {"plan": "Smart TOU", "rate": 0.11}

    @trajdebug.step(kind="other")
    def compute_savings(tariff: dict[str, Any]) -> dict[str, Any]:
        usage = trajdebug.current_run().state["usage"]
        return {"eur_per_year": round(usage["usage_kwh"] * 0.7 * tariff["rate"], 2)}

    with trajdebug.run("solar-quote", path=path, metadata={"task": "quote C-105"}) as run:
        s = fetch_survey("C-105")
        remember_usage(s)
        tariff = lookup_tariff(s if later else {"usage_kwh": 6800})
        compute_savings(tariff)
        run.fail(reason)
    [got] = load_runs(path)
    return got


class TestStoredProjection:
    """A state step storing a few fields of what it was given (nu24 F7)."""

    @staticmethod
    def _said(run: Run) -> list[str]:
        [w] = [s for s in run.steps if s.name == "remember_usage"]
        return [e.reason for e in _from(_verdict(run, w.step_id, detect(run)), "state-write") if not e.sound]

    def test_a_memory_keeping_four_fields_of_a_survey_later_steps_read_is_a_projection(self, tmp_path: Path) -> None:
        """A memory that keeps the usage of a survey whose other fields the steps after it were handed anyway is
        said to leave values out, not to have lost what it stores."""
        [said] = self._said(_recorded_survey_run(tmp_path / "r.jsonl"))
        assert said.startswith("what it wrote leaves out") and "stores what it is given" not in said

    def test_a_dropped_field_no_later_step_was_handed_is_still_lost(self, tmp_path: Path) -> None:
        """A memory that left out fields no later step was handed by another path lost them: it stores what it
        is given, and lost values its readers never got."""
        [said] = self._said(_recorded_survey_run(tmp_path / "r.jsonl", later=False))
        assert said.startswith("it stores what it is given, but")

    def test_a_kept_field_whose_value_changed_is_still_lost(self, tmp_path: Path) -> None:
        """A memory that kept the usage field but stored a thousand times the usage it was given changed a value,
        though later steps were handed the survey by another path: it stores what it is given, and lost it."""
        [said] = self._said(_recorded_survey_run(tmp_path / "r.jsonl", factor=1000))
        assert said.startswith("it stores what it is given, but") and "6800" in said

    def test_a_dropped_value_the_failure_names_is_still_lost(self, tmp_path: Path) -> None:
        """A memory that left out a value the failure's message names (the address of the refused roof) lost it,
        though later steps were handed the survey by another path."""
        run = _recorded_survey_run(tmp_path / "r.jsonl", reason="no quote for the slate roof at 41 Orchard Way")
        [said] = self._said(run)
        assert said.startswith("it stores what it is given, but")


class TestStateReadsAreInputs:
    """A state writer's values against what it read from ``run.state`` as well as its arguments (nu26 F1)."""

    @staticmethod
    def _said(run: Run, name: str) -> list[Evidence]:
        failures = detect(run)
        return [e for s in run.steps if s.name == name for e in _from(_verdict(run, s.step_id, failures), "state-values")]

    def test_a_record_read_by_its_id_and_stored_again_holds_no_made_up_value(self, tmp_path: Path) -> None:
        """A parse step handed only a boiler's id, that stored the reading it read from ``run.state`` under its own
        field names, wrote values from its inputs; the quote that stored the estimates it read is said to have
        written only its own labour figure, priced at a rate it was not given, found in none of them."""
        from tests.builders import recorded_boiler_run

        run = recorded_boiler_run(tmp_path / "r.jsonl")
        said = self._said(run, "normalise_reading")
        assert len(said) == 2 and all(e.sound for e in said)
        assert [e.reason for e in self._said(run, "price_quote")] == [
            "wrote quote.labour=488.0, found in none of its inputs"
        ]

    def test_a_ledger_entry_copied_from_another_entry_of_the_ledger_it_read_is_still_found(self) -> None:
        """A memory that read the ledger it adds to, and stored this hive's action as another hive's ('monitor')
        where it was handed 'treat', is still said to have written a value found in none of its inputs: what
        the key it writes held before is kept, not a source of the new entry."""
        from tests.builders import reading_state, step

        first = step("w1", "record_hive", "state", 1, {"hive": "H-901", "action": "monitor"}, "ok",
                     attributes={"state_values": {"ledger": {"H-901": {"action": "monitor"}}}})
        ledger = {"H-901": {"action": "monitor"}, "H-903": {"action": "monitor"}}
        second = reading_state(step("w2", "record_hive", "state", 2, {"hive": "H-903", "action": "treat"}, "ok",
                                    attributes={"state_values": {"ledger": ledger}}), "w1", "ledger")
        run = Run("r", "apiary", outcome="failure", failure_reason="hive H-903 left untreated", steps=(first, second))
        said = [e.reason for e in _from(_verdict(run, "w2", detect(run)), "state-values") if not e.sound]
        assert said == ["wrote ledger.H-903.action='monitor', found in none of its inputs"]

    def test_a_value_in_none_of_the_records_it_read_is_still_found(self, tmp_path: Path) -> None:
        """A parse step that stored a flue temperature no reading it read from the state holds is still said to
        have written a value found in none of its inputs, that value alone."""
        from tests.builders import recorded_boiler_run

        run = recorded_boiler_run(tmp_path / "r.jsonl", invent=True)
        said = [e.reason for e in self._said(run, "normalise_reading") if not e.sound]
        assert said == ["wrote norm:B2.flue_c=187.25, found in none of its inputs"]


def _recorded_account_run(path: Path, *, stored: str = "history", reason: str | None = None) -> Run:
    """Record one failing run of a quoting agent whose account memory stores the discount from the account's
    ``history`` (its previous one, 0.0) or its current ``discount`` (0.02); a check then raises on the stored
    discount with ``reason`` (default: naming both discounts)."""
    import trajdebug
    from trajdebug.sources.load import load_runs

    @trajdebug.step(kind="tool")
    def lookup_account(customer: str) -> dict[str, Any]:
        return {"tier": "bronze", "discount": 0.02, "history": [0.0, 0.02], "customer": customer}

    @trajdebug.step(kind="state")
    def remember_account(acc: dict[str, Any]) -> dict[str, Any]:
        kept = {"customer": acc["customer"], "tier": acc["tier"],
                "discount": acc["history"][0] if stored == "history" else acc["discount"]}
        trajdebug.current_run().state["account"] = kept
        return kept

    @trajdebug.step(kind="other")
    def validate_quote(acc: dict[str, Any]) -> str:
        kept = trajdebug.current_run().state["account"]
        raise ValueError(reason or f"discount {kept['discount']} differs from tier {acc['tier']} ({acc['discount']})")

    with contextlib.suppress(ValueError), trajdebug.run("cooperage", path=path, metadata={"task": "quote Ostrander"}):
        acc = lookup_account("Ostrander Winery")
        remember_account(acc)
        validate_quote(acc)
    [got] = load_runs(path)
    return got


class TestOverwrittenStoredValue:
    """A state step that stored another value where it was given one the failure names (ZZT coop-4)."""

    @staticmethod
    def _said(run: Run) -> list[str]:
        [w] = [s for s in run.steps if s.name == "remember_account"]
        return [e.reason for e in _from(_verdict(run, w.step_id, detect(run)), "state-write") if not e.sound]

    def test_a_memory_storing_the_old_discount_the_failure_names_the_new_one_of(self, tmp_path: Path) -> None:
        """A memory handed discount=0.02 that stored 0.0 (its history's first), when the failure names 0.02,
        wrote another value in place of one the run was judged on: said so, with both values."""
        [said] = self._said(_recorded_account_run(tmp_path / "r.jsonl"))
        assert said == "it wrote discount=0.0 where it was given discount=0.02, which the failure names"

    def test_a_replaced_value_the_failure_does_not_name_is_no_replacement_finding(self, tmp_path: Path) -> None:
        """The same write, when the failure names neither discount, is judged as before: it left values out."""
        [said] = self._said(_recorded_account_run(tmp_path / "r.jsonl", reason="the bronze quote was refused"))
        assert said.startswith("what it wrote leaves out")

    def test_a_memory_storing_the_given_discount_lost_nothing(self, tmp_path: Path) -> None:
        """A memory that stored the discount it was given replaced nothing: no suspicion from its write."""
        assert self._said(_recorded_account_run(tmp_path / "r.jsonl", stored="discount")) == []


def test_a_dropped_word_later_steps_hold_only_inside_another_word_is_still_lost(tmp_path: Path) -> None:
    """A memory that left out the roof ('slate') when later steps were handed only 'slates' inside a longer
    word lost it: a value is handed on as a word of its own."""
    import trajdebug
    from trajdebug.sources.load import load_runs

    @trajdebug.step(kind="state")
    def remember_usage(s: dict[str, Any]) -> None:
        trajdebug.current_run().state["usage"] = {k: s[k] for k in ("usage_kwh", "day_share", "night_share")}

    @trajdebug.step(kind="other")
    def compute_savings(note: str) -> float:
        return float(trajdebug.current_run().state["usage"]["usage_kwh"]) * 0.07

    with trajdebug.run("solar-quote", path=tmp_path / "r.jsonl") as run:
        remember_usage({"usage_kwh": 6800, "day_share": 0.65, "night_share": 0.35, "roof": "slate"})
        compute_savings("roof tiles: slates-grey")
        run.fail("payback 13.7 years is above the limit")
    [got] = load_runs(tmp_path / "r.jsonl")
    [w] = [s for s in got.steps if s.name == "remember_usage"]
    [e] = [e for e in _from(_verdict(got, w.step_id, detect(got)), "state-write") if not e.sound]
    assert e.reason.startswith("it stores what it is given, but") and "'slate'" in e.reason


class TestUpstreamForms:
    def test_number_forms_read_part_by_part_are_those_of_the_whole_upstream_text(self) -> None:
        """`upstream_forms` (each part's numbers read once per run) is `number_forms` of `upstream_text`, for
        numbers at the start and end of a part, after a comma, with decimals and per cent, with and without the
        step's own input."""
        from trajdebug.analysis._numerals import number_forms

        agent = Step("a", "agent", kind="agent", start_ns=1, input={"budget": "1,250.50", "note": "x 12"})
        lookup = Step("l", "lookup", kind="tool", start_ns=2, parent_id="a", output="42\n3.14159 ,7 0.0226")
        quote = Step("q", "quote", kind="tool", start_ns=3, parent_id="a", output={"total": 5118.450000000001, "n": 9})
        tool = Step(
            "t", "book", kind="tool", start_ns=4, parent_id="a", input={"amount": 5118.45, "ref": "19"},
            deps=(D("l", "data"), D("q", "data")),
        )
        run = _run(agent, lookup, quote, tool, metadata={"task": "book 3 rooms at 99.9"})
        ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
        for own in (True, False):
            assert ctx.upstream_forms(tool, own_input=own) == number_forms(ctx.upstream_text(tool, own_input=own))
            assert ctx.upstream_text(tool, own_input=own) == "\n".join(ctx.upstream_parts(tool, own_input=own))
        assert "5118.45" in ctx.upstream_forms(tool) and "2.26" in ctx.upstream_forms(tool)
