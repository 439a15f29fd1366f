"""The best-first root-cause search: ranking, stopping rule, pruning, focus, paths, invariants."""

from __future__ import annotations

import json
import random
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from benchmarks.baselines import synthetic_run
from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.analysis._detect import Failure, detect
from trajdebug.analysis._localize import Localization, localize
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


D = Dependency
QUESTION = "What were total sales in the west region?"


def sql_agent_run(tmp_path: Path, *, region_literal: str = "wets") -> Run:
    """A SQL agent run executed against a real SQLite file: plan -> write_sql -> run_sql -> parse -> compute -> report.

    With the default ``region_literal`` the LLM misspells the region in its SQL:
    the query matches nothing, and the failure only shows in the report.
    """
    db = tmp_path / "sales.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount REAL)")
    con.executemany(
        "INSERT INTO orders (region, amount) VALUES (?, ?)",
        [("west", 120.5), ("west", 80.25), ("east", 99.0)],
    )
    con.commit()
    plan = json.dumps({"region": "west", "metric": "amount"})
    sql = f"SELECT region, SUM(amount) AS total FROM orders WHERE region = '{region_literal}' GROUP BY region"
    rows = [dict(zip(("region", "total"), r)) for r in con.execute(sql).fetchall()]
    con.close()
    totals = {r["region"]: r["total"] for r in rows}
    total = sum(totals.values())
    report = f"Total west sales: {total:.2f}"
    ok = total > 0
    steps = (
        Step("q", "receive_question", "input", output=QUESTION, start_ns=1, end_ns=2),
        Step(
            "p",
            "plan",
            "llm",
            input={"question": QUESTION},
            output=plan,
            deps=(D("q", key="question"),),
            start_ns=3,
            end_ns=4,
        ),
        Step(
            "w",
            "write_sql",
            "llm",
            input={"plan": plan},
            output=sql,
            deps=(D("p", key="plan"),),
            start_ns=5,
            end_ns=6,
        ),
        Step(
            "r",
            "run_sql",
            "tool",
            input={"sql": sql},
            output=rows,
            deps=(D("w", key="sql"),),
            start_ns=7,
            end_ns=8,
        ),
        Step(
            "x",
            "parse_rows",
            "parse",
            input={"rows": rows},
            output=totals,
            deps=(D("r", key="rows"),),
            start_ns=9,
            end_ns=10,
        ),
        Step(
            "c",
            "compute_total",
            "other",
            input={"totals": totals},
            output=total,
            deps=(D("x", key="totals"),),
            start_ns=11,
            end_ns=12,
        ),
        Step(
            "o",
            "report",
            "output",
            input={"total": total},
            output=report,
            deps=(D("c", key="total"),),
            start_ns=13,
            end_ns=14,
        ),
    )
    return Run(
        "sql-agent",
        "sql-agent",
        outcome="success" if ok else "failure",
        failure_reason=None if ok else "the report says there were no west sales",
        metadata={"task": QUESTION, "sqlite_db": str(db)},
        steps=steps,
    )


def _llm(sid: str, output: Any, *deps: Dependency, start: int) -> Step:
    return Step(
        sid,
        f"llm_{sid}",
        "llm",
        input={"task": "compute the figure"},
        output=output,
        deps=deps,
        start_ns=start,
        end_ns=start + 1,
    )


def _fail(sid: str, *deps: Dependency, start: int) -> Step:
    err = ErrorInfo("ValueError", "figure rejected")
    return Step(
        sid, f"check_{sid}", "other", status="error", error=err, deps=deps, start_ns=start, end_ns=start + 1
    )


def _ids(loc: Localization) -> list[str]:
    return [c.step_id for c in loc.candidates]


class TestSQLAgent:
    def test_fault_in_generated_sql_is_ranked_first(self, tmp_path: Path) -> None:
        """The misspelled SQL literal is found from a failure that shows three steps later, with its path."""
        run = sql_agent_run(tmp_path)
        loc = localize(run)
        top = loc.candidates[0]
        assert top.step_id == "w"
        assert top.root
        assert any("'wets'" in r for r in top.reasons)
        assert top.path[0] == "w" and top.path[-1] == "o"
        assert loc.stats.steps == 7 and 1 <= loc.stats.steps_examined <= 7
        assert loc.stats.seconds >= 0

    def test_correct_run_has_no_candidates(self, tmp_path: Path) -> None:
        """A run where nothing failed yields no candidates."""
        run = sql_agent_run(tmp_path, region_literal="west")
        assert run.outcome == "success"
        assert detect(run) == []
        assert localize(run).candidates == []


class TestRanking:
    def test_suspicion_accumulates_over_failure_paths(self) -> None:
        """Of two equally suspect steps, the one on the paths to both failures ranks first."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                _llm("t", "figure 7321", start=1),
                _llm("s", "figure 9999", start=3),
                _fail("f1", D("s"), D("t"), start=5),
                _fail("f2", D("s"), start=7),
            ),
        )
        assert _ids(localize(run))[:2] == ["s", "t"]

    def test_output_that_fed_verified_good_results_is_less_suspect(self) -> None:
        """A step whose output also fed a consumer with passing checks ranks below an equal one that did not."""
        good = Step(
            "g",
            "verified",
            deps=(D("a"),),
            attributes={"checks": [{"name": "ok", "passed": True, "when": "post"}]},
            start_ns=5,
            end_ns=6,
        )
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                _llm("a", "figure 9999", start=1),
                _llm("b", "figure 7321", start=3),
                good,
                _fail("f", D("a"), D("b"), start=7),
            ),
        )
        loc = localize(run)
        assert _ids(loc)[:2] == ["b", "a"]
        assert any("verified-good" in r for r in loc.candidates[1].reasons)

    def test_json_failure_looks_first_at_json_producers(self) -> None:
        """With a JSON failure, the JSON-producing step outranks an equally suspect prose step."""
        final = Step(
            "f", "answer", "output", output='{"x": 9999,', deps=(D("a"), D("b")), start_ns=9, end_ns=10
        )
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                _llm("a", '{"x": 9999}', start=1),
                _llm("b", "x is 7321", start=3),
                final,
            ),
        )
        loc = localize(run)
        ids = _ids(loc)
        assert ids.index("a") < ids.index("b")
        assert any("produces what failed" in r for r in loc.candidates[ids.index("a")].reasons)

    def test_scores_read_from_zero_to_one_whatever_the_boosts(self) -> None:
        """Boosts multiply; scores are scaled by the top one when it passes 1, so they read from 0 to 1."""
        final = Step(
            "f", "answer", "output", output='{"x": 9999,', deps=(D("a"), D("b")), start_ns=9, end_ns=10
        )
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(_llm("a", '{"x": 9999}', start=1), _llm("b", "x is 7321", start=3), final),
        )
        boosted = localize(run, weights={"focus": 6.0})
        scores = [c.score for c in boosted.candidates]
        assert max(scores) == 1.0
        assert all(0.0 <= x <= 1.0 for x in scores)

    def test_a_value_that_reached_the_inner_failing_step_was_not_dropped(self) -> None:
        """An agent failing with what a tool inside it raised: the id reached that tool, so the router before it lost nothing."""
        msg = "B-2041: rate OLD-RATE-C refused"
        steps = (
            Step(
                "route",
                "route",
                "llm",
                input={"messages": [{"role": "user", "content": "B-2041: move my stay to Friday"}]},
                output={"handoff": "changes"},
                start_ns=1,
                end_ns=2,
            ),
            Step(
                "desk",
                "changes",
                "agent",
                input={"request": "move my stay to Friday"},
                status="error",
                error=ErrorInfo("AgentError", "error in agent run: " + msg),
                deps=(D("route"),),
                start_ns=3,
                end_ns=20,
            ),
            Step(
                "rates",
                "get_rates",
                "tool",
                parent_id="desk",
                input={"booking": "B-2041"},
                output={"rate": "OLD-RATE-C"},
                start_ns=4,
                end_ns=5,
            ),
            Step(
                "mod",
                "modify",
                "tool",
                parent_id="desk",
                input={"booking": "B-2041", "rate": "OLD-RATE-C"},
                status="error",
                error=ErrorInfo("Refused", msg),
                deps=(D("rates"),),
                start_ns=6,
                end_ns=7,
            ),
        )
        run = Run("r", "desk", outcome="failure", steps=steps)
        # Both failures, as a trace that records each span's error shows them.
        failures = [
            Failure("desk", "step-error", "AgentError: error in agent run: " + msg, "exception:AgentError"),
            Failure("mod", "step-error", "Refused: " + msg, "exception:Refused"),
        ]
        loc = localize(run, failures=failures)
        route = next(c for c in loc.candidates if c.step_id == "route")
        assert not any("failure at changes expects" in r for r in route.reasons)

    def test_a_path_names_the_failure_it_first_meets_not_the_step_the_error_propagated_to(self) -> None:
        """A gauge reading that reaches a valve call which raised, inside a plant agent the same error then
        failed, says it reaches the failure at the valve call (where the run's failures list it) in 1
        dependency; its path still runs on to the agent."""
        msg = "valve V-7 refused setpoint 9.5 bar"
        steps = (
            Step("plant", "plant_agent", "agent", input={"request": "raise V-7"}, status="error",
                 error=ErrorInfo("AgentError", "error in agent run: " + msg), start_ns=1, end_ns=20),
            Step("gauge", "read_gauge", "tool", parent_id="plant", input={"valve": "V-7"},
                 output={"valve": "V-7", "bar": 9.5}, start_ns=2, end_ns=3),
            Step("valve", "set_valve", "tool", parent_id="plant", input={"valve": "V-7", "bar": 9.5},
                 status="error", error=ErrorInfo("Refused", msg), deps=(D("gauge"),), start_ns=4, end_ns=5),
        )
        failures = [
            Failure("plant", "step-error", "AgentError: error in agent run: " + msg, "exception:AgentError"),
            Failure("valve", "step-error", "Refused: " + msg, "exception:Refused"),
        ]
        loc = localize(Run("r", "plant", outcome="failure", steps=steps), failures=failures)
        gauge = next(c for c in loc.candidates if c.step_id == "gauge")
        assert "reaches the failure at set_valve through 1 dependency" in gauge.reasons
        assert gauge.path[-1] == "plant"

    def test_a_lookup_need_not_repeat_its_key_unless_it_answers_about_another(self) -> None:
        """A tool given an id that answers without it lost nothing; one that answers about another id of the same shape did."""

        def run_of(account: str) -> Run:
            steps = (
                Step(
                    "u",
                    "read_request",
                    "input",
                    output={"customer": "C-2201", "ask": "upgrade"},
                    start_ns=1,
                    end_ns=2,
                ),
                Step(
                    "l",
                    "lookup_customer",
                    "tool",
                    input={"customer_id": "C-2201"},
                    output={"account": account, "tier": "free"},
                    deps=(D("u"),),
                    start_ns=3,
                    end_ns=4,
                ),
                Step(
                    "a",
                    "audit",
                    "other",
                    input={"tier": "free"},
                    status="error",
                    error=ErrorInfo("SLAViolation", "customer C-2201 is enterprise, routed as free"),
                    deps=(D("l"),),
                    start_ns=5,
                    end_ns=6,
                ),
            )
            return Run("r", "triage", outcome="failure", steps=steps)

        def lookup(run: Run) -> Any:
            return next(c for c in localize(run, top=10).candidates if c.step_id == "l")

        assert "lineage:dropped" not in lookup(run_of("anonymous")).signals
        other = lookup(run_of("C-2107"))
        assert "lineage:dropped" in other.signals
        assert any("its answer is about 'C-2107' instead" in r for r in other.reasons)

    def test_a_sub_agent_returning_its_last_turn_does_not_drop_what_that_turn_dropped(self) -> None:
        """A sub-agent whose answer is its last model turn's, no value added, relays it: the turn that was given
        the rating and left it out dropped it, not the agent around it; an agent that adds a value of its own
        to the answer made that answer, and is judged as its maker."""
        D = Dependency

        def run_of(answer: dict[str, Any]) -> Run:
            picked = {"shortlist": [{"id": "FLM-101"}, {"id": "FLM-106"}]}
            steps = (
                Step("s", "scout", "agent", output=answer, start_ns=1, end_ns=8),
                Step("d", "film_details", "tool", parent_id="s", input={"film_id": "FLM-106"},
                     output={"id": "FLM-106", "rating": "PG-13"}, start_ns=2, end_ns=3),
                Step("p", "pick", "llm", parent_id="s", input={"messages": [{"role": "tool", "content": '{"id": "FLM-106", "rating": "PG-13"}'}]},
                     output={"role": "assistant", "content": json.dumps(picked)}, deps=(D("d"),), start_ns=4, end_ns=5),
                Step("b", "book", "tool", input={"film_id": "FLM-106"}, output={"booked": "FLM-106"},
                     deps=(D("s"),), start_ns=9, end_ns=10),
                Step("v", "validate", "tool", input={"screen": 2}, status="error",
                     error=ErrorInfo("ToolError", "film FLM-106 is rated PG-13: the block allows G and PG only"),
                     deps=(D("b"),), start_ns=11, end_ns=12),
            )
            return Run("r", "festival", outcome="failure", steps=steps)

        def signals(run: Run) -> dict[str, tuple[str, ...]]:
            return {c.step_id: c.signals for c in localize(run, top=10).candidates}

        relayed = signals(run_of({"shortlist": [{"id": "FLM-101"}, {"id": "FLM-106"}]}))
        assert "lineage:dropped" in relayed["p"] and "lineage:dropped" not in relayed.get("s", ())
        added = signals(run_of({"shortlist": [{"id": "FLM-101"}, {"id": "FLM-106"}], "checked_by": "scout-desk-7"}))
        assert "lineage:dropped" in added["s"]

    def test_a_turn_whose_conversation_carried_a_value_on_later_did_not_drop_it(self) -> None:
        """A model turn that looked the customer up first lost nothing when a later turn of the same conversation passed the order id on."""
        system = {"role": "system", "content": "You resolve refund tickets."}
        user = {"role": "user", "content": "Ticket: ben@example.com asks for a refund on order O-7722."}
        call = {"role": "assistant", "tool_calls": [{"name": "lookup_customer", "arguments": {"email": "ben@example.com"}}]}
        result = {"role": "tool", "content": '{"customer_id": "C-12", "payment_ref": "PM-1012"}'}

        def run_of(later_messages: list[Any]) -> Run:
            steps = (
                Step("t1", "generation", "llm", input={"messages": [system, user]}, output=call, start_ns=1, end_ns=2),
                Step(
                    "l",
                    "lookup_customer",
                    "tool",
                    input={"email": "ben@example.com"},
                    output={"customer_id": "C-12", "payment_ref": "PM-1012"},
                    deps=(D("t1"),),
                    start_ns=3,
                    end_ns=4,
                ),
                Step(
                    "t2",
                    "generation",
                    "llm",
                    input={"messages": later_messages},
                    output={"role": "assistant", "tool_calls": [{"name": "issue_refund", "arguments": {"order_id": "O-7722", "amount": 212.0}}]},
                    deps=(D("t1"), D("l")),
                    start_ns=5,
                    end_ns=6,
                ),
                Step(
                    "r",
                    "issue_refund",
                    "tool",
                    input={"order_id": "O-7722", "amount": 212.0},
                    status="error",
                    error=ErrorInfo("GatewayError", "refund 212.00 exceeds the 64.50 captured for O-7722"),
                    deps=(D("t2"),),
                    start_ns=7,
                    end_ns=8,
                ),
            )
            return Run("r", "refunds", outcome="failure", steps=steps)

        def first_turn(run: Run) -> Any:
            return next(c for c in localize(run, top=10).candidates if c.step_id == "t1")

        assert "lineage:dropped" not in first_turn(run_of([system, user, call, result])).signals
        # A later model call given another conversation (a hand-off's own prompt) does not speak for this one.
        other = [{"role": "system", "content": "You issue refunds."}, {"role": "user", "content": "Refund O-7722."}]
        assert "lineage:dropped" in first_turn(run_of(other)).signals
        # One handed the very message that held the value (a desk handed the ticket after a hand-off) had it in
        # hand too: nothing was lost here (since 2026-12-02).
        desk = [{"role": "system", "content": "You issue refunds."}, user]
        assert "lineage:dropped" not in first_turn(run_of(desk)).signals

    def test_an_agent_span_failing_because_its_tool_failed_blames_no_turn_before_it(self) -> None:
        """An agent span that fails because a tool inside it raised repeats that failure: the turn that handed
        off to it lost nothing, since the desk's own turn passed the order id on to the failing tool."""
        user = {"role": "user", "content": "Refund order O-7722 for ben@example.com."}
        handoff = {"role": "assistant", "tool_calls": [{"name": "transfer_to_refunds", "arguments": {}}]}
        message = "refund 212.00 exceeds the 64.50 captured for O-7722"

        def run_of(agent_fails: bool) -> Run:
            steps = (
                Step("t1", "generation", "llm", input={"messages": [{"role": "system", "content": "You triage."}, user]},
                     output=handoff, start_ns=1, end_ns=2),
                Step("a", "Refund Desk", "agent", input=None, output=None, start_ns=3, end_ns=20,
                     status="error" if agent_fails else "ok",
                     error=ErrorInfo("AgentsSDKError", f"Error in agent run: {message}") if agent_fails else None),
                # The SDK's turn span sits between the agent span and the tool that raised.
                Step("u", "turn 1", "agent", parent_id="a", input=None, output=None, start_ns=4, end_ns=19),
                Step("t2", "generation", "llm", parent_id="u",
                     input={"messages": [{"role": "system", "content": "You issue refunds."}, user, handoff]},
                     output={"role": "assistant", "tool_calls": [
                         {"name": "issue_refund", "arguments": {"order_id": "O-7722", "amount": 212.0}}]},
                     deps=(D("t1"),), start_ns=5, end_ns=6),
                Step("r", "issue_refund", "tool", parent_id="u", input={"order_id": "O-7722", "amount": 212.0},
                     status="error", error=ErrorInfo("ToolError", message), deps=(D("t2"),), start_ns=7, end_ns=8),
            )
            return Run("r", "refunds", outcome="failure", steps=steps, metadata={"task": user["content"]})

        for agent_fails in (False, True):
            first = next(c for c in localize(run_of(agent_fails), top=10).candidates if c.step_id == "t1")
            assert "lineage:dropped" not in first.signals

    def test_a_closing_turn_whose_conversation_a_graph_handed_to_the_check_dropped_nothing(self) -> None:
        """A state graph appends a model's closing sentence to the conversation it keeps and hands the whole
        conversation to its check: the closing turn, which names no route, lost nothing; handed only the
        closing sentence, the check lost the route at that turn."""
        user = {"role": "user", "content": "Dispatch plows for district N."}
        result = {"role": "tool", "content": '{"route": "R-N-01", "salt_kg": 117}'}
        closing = {"role": "assistant", "content": "Dispatched 1 plow."}

        def run_of(check_input: Any) -> Run:
            steps = (
                Step("a", "assign_plow", "tool", input={"district": "N"}, output=result["content"], start_ns=1, end_ns=2),
                Step("m", "ChatModel", "llm", input={"messages": [user, result]}, output=closing, deps=(D("a"),), start_ns=3, end_ns=4),
                Step(
                    "c",
                    "dispatch_check",
                    "other",
                    input=check_input,
                    status="error",
                    error=ErrorInfo("AssertionError", "117 kg of salt on R-N-01 is below the 200 kg minimum"),
                    deps=(D("m"),),
                    start_ns=5,
                    end_ns=6,
                ),
            )
            return Run("r", "plows", outcome="failure", steps=steps)

        def closing_turn(run: Run) -> Any:
            return next(c for c in localize(run, top=10).candidates if c.step_id == "m")

        assert "lineage:dropped" not in closing_turn(run_of({"messages": [user, result, closing]})).signals
        assert "lineage:dropped" in closing_turn(run_of({"summary": closing["content"]})).signals

    def test_a_value_a_write_stored_or_another_put_in_its_place_is_no_omission(self) -> None:
        """A model handing a write's receipt (``AS-1``) to the failing step passed on what the write stored (the
        write was given the deadline): neither dropped it, and a model turn whose value a later model call was
        given again lost nothing; a turn that put another day in its place still did."""
        task = {"role": "user", "content": 'New job: {"job": "TJ-1", "deadline": "2026-03-16"}'}

        def run_of(due: str) -> Run:
            first = {"messages": [task]}
            later = {"messages": [task, {"role": "tool", "content": '{"linguists": ["LG-2"]}'}]}
            args = {"job_id": "TJ-1", "linguist": "LG-2", "due": due}
            steps = (
                Step("t1", "generation", "llm", input=first, output={"role": "assistant", "tool_calls": [{"name": "find_linguist", "arguments": {"pair": "en"}}]}, start_ns=1, end_ns=2),
                Step("f", "find_linguist", "tool", input={"pair": "en"}, output={"linguists": ["LG-2"]}, deps=(D("t1"),), start_ns=3, end_ns=4),
                Step("t2", "generation", "llm", input=later, output={"role": "assistant", "tool_calls": [{"name": "create_assignment", "arguments": args}]}, deps=(D("t1"), D("f")), start_ns=5, end_ns=6),
                Step("c", "create_assignment", "tool", input=args, output={"assignment": "AS-1", "status": "created"}, deps=(D("t2"),), start_ns=7, end_ns=8),
                Step("t3", "generation", "llm", input={"messages": [task, {"role": "tool", "content": '{"assignment": "AS-1"}'}]}, output={"role": "assistant", "tool_calls": [{"name": "submit", "arguments": {"assignment": "AS-1"}}]}, deps=(D("t2"), D("c")), start_ns=9, end_ns=10),
                Step("s", "submit", "tool", input={"assignment": "AS-1"}, status="error", error=ErrorInfo("ToolError", f"due date {due} is after the deadline 2026-03-16"), deps=(D("t3"),), start_ns=11, end_ns=12),
            )
            return Run("r", "jobs", outcome="failure", steps=steps)

        def dropped(run: Run) -> set[str]:
            return {c.step_id for c in localize(run, top=10).candidates if "lineage:dropped" in c.signals}

        assert dropped(run_of("2026-03-16")) == set()
        assert dropped(run_of("2026-03-24")) == {"t2"}

    def test_the_first_to_swap_an_entity_is_asked_before_those_that_carried_the_swap(self) -> None:
        """A model that booked unit HT-1, listed beside the HT-2 it was asked about, swapped the entity the failure
        names: its omission weighs at least twice what a later turn that carried HT-1 on weighs (both chose between
        given values; the first put HT-1, given as a neighbour, under the field it was given HT-2 under)."""
        task = {"role": "user", "content": 'Alarm: {"alarm": "AL-1", "unit": "HT-2"}'}
        seen = {"role": "tool", "content": '{"unit": "HT-2", "same_bank": ["HT-1"]}'}

        def turn(sid: str, call: str, args: dict[str, Any], start: int, *deps: Dependency) -> Step:
            out = {"role": "assistant", "tool_calls": [{"name": call, "arguments": args}]}
            return Step(sid, "generation", "llm", input={"messages": [task, seen]}, output=out, deps=deps, start_ns=start, end_ns=start + 1)

        steps = (
            Step("u", "get_unit_status", "tool", input={"unit": "HT-2"}, output={"unit": "HT-2", "same_bank": ["HT-1"]}, start_ns=1, end_ns=2),
            turn("t2", "reserve_part", {"part": "P-9", "unit": "HT-1"}, 3, D("u")),
            Step("r", "reserve_part", "tool", input={"part": "P-9", "unit": "HT-1"}, output={"reservation": "RES-9"}, deps=(D("t2"),), start_ns=5, end_ns=6),
            turn("t3", "schedule_visit", {"unit": "HT-1", "reservation": "RES-9"}, 7, D("r")),
            Step("v", "verify", "tool", input={"alarm": "AL-1", "unit": "HT-1"}, status="error", error=ErrorInfo("ToolError", "work order books HT-1; the alarm is on HT-2"), deps=(D("t3"),), start_ns=9, end_ns=10),
        )
        cands = {c.step_id: c for c in localize(Run("r", "lifts", outcome="failure", steps=steps), top=10).candidates}
        first, later = (cands[s].features["evidence:lineage:dropped"] for s in ("t2", "t3"))
        assert first >= 2 * later > 0

    def test_a_flag_a_model_set_is_the_decision_the_failure_speaks_of(self) -> None:
        """A model that created an assignment with ``revision=false``, refused later because the job "needs
        revision", made the decision the failure speaks of: it ranks above the write whose receipt the failing
        step was handed."""
        task = {"role": "user", "content": 'New job: {"job": "TJ-2", "domain": "legal"}'}
        args = {"job_id": "TJ-2", "linguist": "LG-1", "revision": False}
        steps = (
            Step("t1", "generation", "llm", input={"messages": [task]}, output={"role": "assistant", "tool_calls": [{"name": "create_assignment", "arguments": args}]}, start_ns=1, end_ns=2),
            Step("c", "create_assignment", "tool", input=args, output={"assignment": "AS-2", "status": "created"}, deps=(D("t1"),), start_ns=3, end_ns=4),
            Step("s", "submit", "tool", input={"assignment": "AS-2"}, status="error", error=ErrorInfo("ToolError", "legal job TJ-2 needs revision by a second linguist"), deps=(D("c"),), start_ns=5, end_ns=6),
        )
        ranking = [c.step_id for c in localize(Run("r", "jobs", outcome="failure", steps=steps), top=10).candidates]
        assert ranking.index("t1") < ranking.index("c")

    def test_a_faulty_call_about_another_listed_item_does_not_explain_the_failing_items_call(self) -> None:
        """The berth choice for the vessel that failed stays the root though an earlier choice, for another vessel of the list, looks as faulty upstream."""
        steps = (
            Step(
                "s",
                "load_arrivals",
                "tool",
                output={"vessels": [{"vessel": "ONE-CRANE", "draft": 9.0}, {"vessel": "HMM-ARIA", "draft": 12.0}], "min_ukc": 0.5},
                start_ns=1,
                end_ns=2,
            ),
            Step(
                "c1",
                "choose_berth",
                "condition",
                input={"vessel": "ONE-CRANE", "draft": 9.0, "min_ukc": 0.5},
                output={"vessel": "ONE-CRANE", "berth": "B7"},
                deps=(D("s"),),
                start_ns=3,
                end_ns=4,
            ),
            Step("m", "record_plan", "state", input={"berth": "B7"}, output={"berth": "B7"}, deps=(D("c1"),), start_ns=5, end_ns=6),
            Step(
                "c2",
                "choose_berth",
                "condition",
                input={"vessel": "HMM-ARIA", "draft": 12.0, "min_ukc": 0.5, "taken": "B7"},
                output={"vessel": "HMM-ARIA", "berth": "B2"},
                deps=(D("s"), D("m")),
                start_ns=7,
                end_ns=8,
            ),
            Step(
                "r",
                "reserve_berth",
                "tool",
                input={"vessel": "HMM-ARIA", "berth": "B2"},
                status="error",
                error=ErrorInfo("HarbourRejected", "at B2: under-keel clearance 0.1 m, the port requires 0.5 m"),
                deps=(D("c2"),),
                start_ns=9,
                end_ns=10,
            ),
        )
        loc = localize(Run("r", "berths", outcome="failure", steps=steps), top=5)
        assert loc.candidates[0].step_id == "c2"
        [other] = [c for c in loc.candidates if c.step_id == "c1"]
        assert "another listed item" in " ".join(other.reasons)

    @staticmethod
    def _settlement(balances: list[float], settled: float, message: str) -> Run:
        """Three fetched balances, a plan settling ACC-101 alone, and a batch check failing with ``message``."""
        accounts = ["ACC-101", "ACC-202", "ACC-303"]
        rows = [{"account": a, "balance_eur": b} for a, b in zip(accounts, balances, strict=True)]
        steps: list[Step] = [Step("l", "list_accounts", "tool", input={"team": "T-9"}, output={"accounts": accounts}, start_ns=1, end_ns=2)]
        for i, row in enumerate(rows):
            steps.append(
                Step(f"f{i}", "fetch_balance", "tool", input={"account": row["account"]}, output=row, deps=(D("l"),), start_ns=3 + i, end_ns=4 + i)
            )
        settle = [{"account": "ACC-101", "amount_eur": settled}]
        steps.append(Step("s", "plan_settlement", "other", input={"rows": rows}, output={"settle": settle}, deps=tuple(D(f"f{i}") for i in range(3)), start_ns=10, end_ns=11))
        steps.append(
            Step(
                "c", "check_invoices", "condition", input={"settle": settle, "accounts": accounts}, status="error",
                error=ErrorInfo("AssertionError", message), deps=(D("s"), D("l")), start_ns=12, end_ns=13,
            )
        )
        return Run("r", "settlement", outcome="failure", steps=tuple(steps))

    def test_a_check_that_names_the_item_it_fails_on_is_about_that_item(self) -> None:
        """A batch check given the one account it settled that fails on another it names (ACC-202) is about
        ACC-202: the fetch for ACC-101, whose line it was given, is about another listed item, the fetch for
        ACC-202 is not."""
        run = self._settlement([120.5, 0.0, 0.0], 120.5, "ACC-202 has an open invoice but nothing is settled for it")
        loc = localize(run, top=8)
        reasons = {c.step_id: " ".join(c.reasons) for c in loc.candidates}
        assert "another listed item" in reasons["f0"]
        assert "another listed item" not in reasons["f1"]

    def test_a_check_that_states_the_given_records_value_names_another_item_only_as_a_reference(self) -> None:
        """A batch check given the one account it settled (ACC-101, 75.0) that fails saying its 75.0 is the balance
        of ACC-202 failed on ACC-101: the fetch for ACC-101 (which returned ACC-202's balance) is no other item."""
        run = self._settlement([75.0, 75.0, 10.0], 75.0, "settled amount 75.0 is the balance of ACC-202, not of the account settled")
        loc = localize(run, top=8)
        reasons = {c.step_id: " ".join(c.reasons) for c in loc.candidates}
        assert "another listed item" not in reasons.get("f0", "")
        assert loc.ranked_all[0].step_id == "f0"

    def test_a_made_up_value_that_never_reached_the_failure_weighs_less(self) -> None:
        """A model that made up a tool argument (feed='F-77', a data feed no input names) is less suspect of a
        dock-count failure the value never reached than of a failure given that value."""
        user = {"role": "user", "content": 'Query each station: {"zone": "harbour", "stations": ["H-1", "H-6"]}'}

        def run_of(dispatched: dict[str, Any]) -> Run:
            steps = (
                Step(
                    "m",
                    "ChatCompletion",
                    "llm",
                    input={"messages": [{"role": "system", "content": "You collect station status."}, user]},
                    output={"role": "assistant", "tool_calls": [{"name": "get_station_status", "arguments": {"station": "H-6", "feed": "F-77"}}]},
                    start_ns=1,
                    end_ns=2,
                ),
                Step(
                    "t",
                    "get_station_status",
                    "tool",
                    input={"station": "H-6", "feed": "F-77"},
                    output={"station": "H-6", "bikes": 15},
                    deps=(D("m"),),
                    start_ns=3,
                    end_ns=4,
                ),
                Step("z", "load_zone", "tool", input={"zone": "harbour"}, output={"H-6": {"docks": 16}}, start_ns=5, end_ns=6),
                Step(
                    "d",
                    "dispatch_move",
                    "tool",
                    input=dispatched,
                    status="error",
                    error=ErrorInfo("DispatchRejected", "moving 6 bikes would leave H-6 with 2 of 16 docks filled"),
                    deps=(D("t"), D("z")),
                    start_ns=7,
                    end_ns=8,
                ),
            )
            return Run("r", "bikes", outcome="failure", steps=steps)

        def claim(run: Run) -> float:
            [model] = [c for c in localize(run, top=5).candidates if c.step_id == "m"]
            return model.features["evidence:llm-output"]

        off = claim(run_of({"station": "H-6", "bikes": 6}))
        on = claim(run_of({"station": "H-6", "bikes": 6, "feed": "F-77"}))
        assert 0 < off < on

    def test_a_failure_stating_another_value_points_at_the_step_that_said_it(self) -> None:
        """A refusal stating the true quantity ("has 2 paid days left") points at the lookup that said 7, not at the steps carrying it."""

        def run_of(message: str) -> Run:
            steps = (
                Step(
                    "b",
                    "get_balance",
                    "tool",
                    input={"employee": "E-1"},
                    output={"paid_days_left": 7},
                    start_ns=1,
                    end_ns=2,
                ),
                Step(
                    "p",
                    "plan",
                    "llm",
                    input={"balance": 7},
                    output={"book": 5, "type": "paid"},
                    deps=(D("b"),),
                    start_ns=3,
                    end_ns=4,
                ),
                Step(
                    "s",
                    "submit",
                    "tool",
                    input={"book": 5, "type": "paid"},
                    status="error",
                    error=ErrorInfo("Rejected", message),
                    deps=(D("p"),),
                    start_ns=5,
                    end_ns=6,
                ),
            )
            return Run("r", "leave", outcome="failure", steps=steps)

        loc = localize(run_of("E-1 has 2 paid days left; cannot book 5"))
        assert loc.candidates[0].step_id == "b"
        assert "lineage:contradicted" in loc.candidates[0].signals
        # A message that states the step's own value compares it with a limit: no contradiction.
        same = localize(run_of("7 paid days left is under the 8 required"))
        assert all("lineage:contradicted" not in c.signals for c in same.candidates)

    def test_a_reading_written_with_its_unit_contradicts_the_field_named_for_that_unit(self) -> None:
        """"tank T-3 fill 18% is under the 40% needed" states the fill the gauge said was 95 as ``fill_pct``: the
        unit closing the field's name is written as the number's unit, so the gauge is contradicted; a message
        giving the number another unit ("fill 18 l") does not speak of that field."""

        def run_of(message: str) -> Run:
            steps = (
                Step("g", "read_gauge", "tool", input={"tank": "T-3"}, output={"tank": "T-3", "fill_pct": 95}, start_ns=1, end_ns=2),
                Step(
                    "d", "dispatch_tanker", "tool", input={"tank": "T-3", "fill_pct": 95}, status="error",
                    error=ErrorInfo("Refused", message), deps=(D("g"),), start_ns=3, end_ns=4,
                ),
            )
            return Run("r", "tanks", outcome="failure", steps=steps)

        loc = localize(run_of("tank T-3 fill 18% is under the 40% needed"))
        assert "lineage:contradicted" in loc.candidates[0].signals and loc.candidates[0].step_id == "g"
        other = localize(run_of("tank T-3 fill 18 l is under the 40 l needed"))
        assert all("lineage:contradicted" not in c.signals for c in other.candidates)

    def test_a_word_belongs_to_the_number_of_its_own_clause(self) -> None:
        """"silo C has 2.5 t free; 3.76 t ordered": ``free`` stands one character nearer the 3.76 than the 2.5, but
        the semicolon puts it in the 2.5's clause, so the stock tool's free_t=12.0 is contradicted by the 2.5
        (a word of a clause stating no number still goes to the nearest number)."""

        def run_of(message: str) -> Run:
            steps = (
                Step("k", "feed_stock", "tool", input={"silo": "C"}, output={"silo": "C", "free_t": 12.0}, start_ns=1, end_ns=2),
                Step(
                    "o", "order_feed", "tool", input={"silo": "C", "tonnes": 3.76}, status="error",
                    error=ErrorInfo("Refused", message), deps=(D("k"),), start_ns=3, end_ns=4,
                ),
            )
            return Run("r", "feed", outcome="failure", steps=steps)

        loc = localize(run_of("silo C has 2.5 t free; 3.76 t ordered"))
        assert loc.candidates[0].step_id == "k" and "lineage:contradicted" in loc.candidates[0].signals
        # Without the clause break the word is the nearer number's, as before: it names what was ordered.
        loc = localize(run_of("silo C has 2.5 t, 3.76 t free ordered"))
        assert all("lineage:contradicted" not in c.signals for c in loc.candidates)

    def test_a_full_stop_after_an_abbreviation_or_a_wrapped_line_ends_no_clause(self) -> None:
        """"stock approx. 2 units": the stop of ``approx.`` ends no clause (``Lexicon.abbreviations``), so ``stock``
        is read with the 2 beside it, and the stock tool's stock=5 is contradicted, as before clauses were read.
        A line wrapped inside a sentence ("free beds\\n2") is one clause: the reason quotes the 2, not the 3."""

        def run_of(message: str, field: str, value: int) -> Run:
            steps = (
                Step("s", "lookup", "tool", input={"req": "x"}, output={"room": "R-4", field: value}, start_ns=1, end_ns=2),
                Step(
                    "f", "submit", "tool", input={"room": "R-4", "beds": 3}, status="error",
                    error=ErrorInfo("Refused", message), deps=(D("s"),), start_ns=3, end_ns=4,
                ),
            )
            return Run("r", "p", outcome="failure", steps=steps)

        for message, field in (
            ("3 units requested, stock approx. 2 units", "stock"),
            ("3 requested but free beds approx. 2", "free_beds"),
        ):
            loc = localize(run_of(message, field, 5))
            assert loc.candidates[0].step_id == "s" and "lineage:contradicted" in loc.candidates[0].signals, message
        loc = localize(run_of("room R-4: 3 beds requested, free beds\n2", "free_beds", 4))
        reasons = [r for c in loc.candidates if c.step_id == "s" for r in c.reasons if "free beds" in r or "free_beds" in r]
        assert reasons and all("says 2" in r for r in reasons), reasons

    def test_a_failure_saying_a_field_is_empty_points_at_the_step_that_first_returned_it_empty(self) -> None:
        """"kiln_slot None is not a firing slot": the kiln booking tool was handed a day and answered ``slot:
        None`` (it swallowed its calendar's error, as its note says), and the quote step that copied the record on was handed it
        empty; the booking tool, not the glaze lookup beside it nor the copier, is first.  A failure that never
        says the field is empty leaves the booking tool without that finding."""

        def run_of(message: str) -> Run:
            steps = (
                Step("g", "glaze_lookup", "tool", input={"glaze": "celadon"}, output={"glaze": "celadon", "cone": 10}, start_ns=1, end_ns=2),
                Step(
                    "k", "book_kiln", "tool", input={"day": "2031-04-02"},
                    output="{'day': '2031-04-02', 'slot': None, 'note': 'calendar unavailable, default kept'}",
                    deps=(D("g"),), start_ns=3, end_ns=4,
                ),
                Step(
                    "q", "make_quote", "other", input={"booking": {"day": "2031-04-02", "slot": None}, "cone": 10},
                    output={"quote": {"slot": None, "cone": 10, "total": 84.0}}, deps=(D("k"), D("g")), start_ns=5, end_ns=6,
                ),
                Step(
                    "i", "issue_invoice", "tool", input={"slot": None, "cone": 10, "total": 84.0}, status="error",
                    error=ErrorInfo("Rejected", message), deps=(D("q"),), start_ns=7, end_ns=8,
                ),
            )
            return Run("r", "pottery", outcome="failure", steps=steps)

        loc = localize(run_of("invoice refused: kiln_slot None is not a firing slot"))
        assert loc.candidates[0].step_id == "k" and "lineage:emptied" in loc.candidates[0].signals
        assert all("lineage:emptied" not in c.signals for c in loc.candidates if c.step_id != "k")
        other = localize(run_of("invoice refused: cone 10 is too hot for this clay"))
        assert all("lineage:emptied" not in c.signals for c in other.candidates)

    @staticmethod
    def _mooring_run(answer: object, *, first: object = None, retried: object = None, asked: object = None) -> Run:
        """A marina desk: a berth lookup, then a hold on the berth (``answer``), a permit built on the hold, and the
        harbour office refusing the permit.  ``first``: an earlier hold on another berth; ``retried``: a second
        hold on the same request whose answer the permit uses instead; ``asked``: the hold's request."""
        steps = [
            Step("l", "lookup_berth", "tool", input={"boat": "Curlew"}, output={"berth": "P-12", "length_m": 11}, start_ns=1, end_ns=2),
        ]
        if first is not None:
            steps.append(Step("f", "hold_berth", "tool", input={"berth": "P-09"}, output=first, start_ns=3, end_ns=4))
        request = asked if asked is not None else {"berth": "P-12"}
        steps.append(Step("h", "hold_berth", "tool", input=request, output=answer, deps=(D("l"),), start_ns=5, end_ns=6))
        used = "h"
        if retried is not None:
            steps.append(Step("h2", "hold_berth", "tool", input={"berth": "P-12"}, output=retried, deps=(D("l"),), start_ns=7, end_ns=8))
            used = "h2"
        steps += [
            Step("p", "draft_permit", "other", input={"boat": "Curlew", "berth": "P-12"}, output={"permit": "draft", "berth": "P-12", "nights": 3},
                 deps=(D(used),), start_ns=9, end_ns=10),
            Step("s", "file_permit", "tool", input={"permit": "draft", "berth": "P-12", "nights": 3}, status="error",
                 error=ErrorInfo("Refused", "harbour office: no hold on file for P-12"), deps=(D("p"),), start_ns=11, end_ns=12),
        ]
        return Run("r", "marina", outcome="failure", steps=tuple(steps))

    def test_a_tool_that_answered_its_handle_empty_is_where_the_error_was_swallowed(self) -> None:
        """The berth hold answered ``hold_ref: None`` beside a filled record (its service's timeout caught inside
        it, nothing recorded): it is ranked first with unfilled-handle, above the permit step that merely
        consumed the default, and no other step gets the finding."""
        loc = localize(self._mooring_run({"berth": "P-12", "hold_ref": None, "status": "queued"}))
        assert loc.candidates[0].step_id == "h" and "unfilled-handle" in loc.candidates[0].signals
        assert all("unfilled-handle" not in c.signals for c in loc.ranked_all if c.step_id != "h")

    def test_a_handle_answered_empty_is_a_feature_the_learned_ranker_reads(self) -> None:
        """The unfilled-handle finding reaches the candidate's features (``evidence:unfilled-handle``) and the
        analysis features (``src:unfilled-handle``, family ``error``), so a retrained model can weigh it."""
        from trajdebug.analysis import analyze
        from trajdebug.analysis.features import features

        run = self._mooring_run({"berth": "P-12", "hold_ref": None, "status": "queued"})
        top = localize(run).candidates[0]
        assert top.features["evidence:unfilled-handle"] > 0
        f = features(analyze(run, top=50, model=None))[(None, "h")]
        assert f["src:unfilled-handle"] == 1.0 and f["fam:error"] == 1.0

    def test_a_handle_answered_empty_in_text_as_python_prints_a_record_is_read(self) -> None:
        """A tool whose answer is a record printed as text (``"{'holdRef': ''}"``, camel case) is read as that
        record: the empty hold reference is found."""
        loc = localize(self._mooring_run("{'berth': 'P-12', 'holdRef': '', 'nights': 3}"))
        assert "unfilled-handle" in next(c for c in loc.ranked_all if c.step_id == "h").signals

    def test_a_handle_empty_in_every_call_of_the_step_is_ordinary(self) -> None:
        """When another call of the same tool in the run answered the handle empty too, empty is how that tool
        answers: no unfilled-handle."""
        loc = localize(self._mooring_run({"berth": "P-12", "hold_ref": None}, first={"berth": "P-09", "hold_ref": None}))
        assert all("unfilled-handle" not in c.signals for c in loc.ranked_all)

    def test_a_retry_that_answered_the_handle_filled_recovered_the_error(self) -> None:
        """A hold that answered empty and was asked again on the same request, which answered the handle filled,
        was recovered: the empty answer gets no unfilled-handle."""
        loc = localize(self._mooring_run({"berth": "P-12", "hold_ref": None}, retried={"berth": "P-12", "hold_ref": "H-771"}))
        assert all("unfilled-handle" not in c.signals for c in loc.ranked_all)

    def test_an_answer_that_says_no_or_carries_its_error_is_no_swallowed_error(self) -> None:
        """A service saying no in its own fields (``available: false``), an answer carrying its error, a cursor
        saying no page follows and a record with nothing filled get no unfilled-handle: they are honest."""
        for answer in (
            {"berth": "P-12", "available": False, "hold_ref": None},
            {"berth": "P-12", "hold_ref": None, "error": "503 Service Unavailable"},
            {"berth": "P-12", "next_page_id": None},
            {"hold_ref": None, "ticket": ""},
        ):
            loc = localize(self._mooring_run(answer))
            assert all("unfilled-handle" not in c.signals for c in loc.ranked_all), answer

    def test_another_entitys_key_left_empty_by_a_single_call_is_an_optional_field(self) -> None:
        """Alone, one ordinary call answering another entity's key empty (``pilot_id``, ``promo_ref``: a harbour pilot
        not assigned, no promotion) beside a filled record gets no unfilled-handle: the hold did not make them."""
        for answer in (
            {"berth": "P-12", "hold_ref": "H-5", "status": "held", "pilot_id": None},
            {"berth": "P-12", "status": "held", "promo_ref": ""},
        ):
            loc = localize(self._mooring_run(answer))
            assert all("unfilled-handle" not in c.signals for c in loc.ranked_all), answer

    def test_a_handle_beside_only_empty_lists_and_zeros_is_an_answer_with_nothing_in_it(self) -> None:
        """Empty lists and zeros are defaults, not answers: a hold whose handle is empty beside only ``[]`` and ``0``
        answered nothing filled, and gets no unfilled-handle."""
        loc = localize(self._mooring_run({"hold_ref": None, "extras": [], "fee": 0}))
        assert all("unfilled-handle" not in c.signals for c in loc.ranked_all)

    def test_a_handle_the_call_was_asked_for_and_answered_empty_is_its_own(self) -> None:
        """A field named for another thing (``mooring_slot``) is the call's own when its request carried it filled:
        the hold was asked for slot A3 and answered the slot empty."""
        loc = localize(self._mooring_run({"berth": "P-12", "mooring_slot": None, "status": "queued"}, asked={"berth": "P-12", "mooring_slot": "A3"}))
        assert "unfilled-handle" in next(c for c in loc.ranked_all if c.step_id == "h").signals

    def test_an_unrelated_false_flag_does_not_hide_an_empty_handle(self) -> None:
        """A false flag that is not the call's yes/no (``shore_power: false``) is a value of the record, not a refusal:
        the empty hold reference beside it still gets unfilled-handle."""
        loc = localize(self._mooring_run({"berth": "P-12", "hold_ref": None, "status": "queued", "shore_power": False}))
        assert "unfilled-handle" in next(c for c in loc.ranked_all if c.step_id == "h").signals

    def test_values_no_json_recorder_wrote_do_not_stop_the_analysis(self) -> None:
        """Runs built by hand may hold any value (an array whose ``==`` answers an array, an object whose ``==``
        raises), beside an empty handle, in the record or the request: the analysis reads them without error."""

        class Elementwise:
            def __eq__(self, other: object) -> bool:
                return _NoTruth()  # type: ignore[return-value]

            __hash__ = object.__hash__

        class _NoTruth:
            def __bool__(self) -> bool:
                raise ValueError("truth value of an array is ambiguous")

        class Refuses:
            def __eq__(self, other: object) -> bool:
                raise TypeError("no comparison")

            __hash__ = object.__hash__

        for odd in (Elementwise(), Refuses()):
            for answer, asked in (
                ({"berth": "P-12", "hold_ref": None, "depths": odd}, None),
                ({"berth": "P-12", "hold_ref": odd, "status": "queued"}, None),
                ({"berth": "P-12", "hold_ref": None, "status": "queued"}, {"berth": "P-12", "tide": odd}),
            ):
                loc = localize(self._mooring_run(answer, asked=asked))
                assert loc.candidates

    def test_a_handle_the_passing_runs_also_answered_empty_is_an_optional_field(self) -> None:
        """With references: when the agent's passing runs saw the hold answer its handle empty, the field is
        optional and the failed run's empty handle is ordinary; when they always saw it filled, it is not."""
        from trajdebug.analysis.reference import learn

        def passing(ref: object) -> Run:
            run = self._mooring_run({"berth": "P-12", "hold_ref": ref, "status": "held"})
            return Run("ok", "marina", outcome="success", steps=run.steps[:-1])

        failed = self._mooring_run({"berth": "P-12", "hold_ref": None, "status": "queued"})
        optional = localize(failed, profile=learn([passing(None), passing("H-1")]))
        assert all("unfilled-handle" not in c.signals for c in optional.ranked_all)
        always = localize(failed, profile=learn([passing("H-1"), passing("H-2")]))
        assert "unfilled-handle" in next(c for c in always.ranked_all if c.step_id == "h").signals

    def test_the_step_that_answered_a_collection_the_failure_counts_short_is_first(self) -> None:
        """"rota lists 4 volunteers, 6 signed up": the sign-up tool answered the four volunteers the rota step was
        handed (a first page), and the site's opening hour the rota step was also given came from another tool;
        the sign-up tool is first, with lineage:short.  A failure that names no larger number beside the count, a
        number written with thousands separators (4,000 is no 4), or a collection of another size gives no such
        finding."""
        names = ["Ines", "Joss", "Kemal", "Lior"]

        def run_of(message: str, listed: int = 4) -> Run:
            steps = (
                Step("v", "list_signups", "tool", input={"drive": "D-3"},
                     output={"drive": "D-3", "volunteers": [{"name": n, "shirt": "M"} for n in names[:listed]]}, start_ns=1, end_ns=2),
                Step("m", "site_hours", "tool", input={"site": "Dock Hall"}, output={"site": "Dock Hall", "opens": "08:30"}, start_ns=3, end_ns=4),
                Step("r", "post_rota", "tool",
                     input={"volunteers": [{"name": n, "shirt": "M"} for n in names[:listed]], "opens": "08:30", "site": "Dock Hall"},
                     status="error", error=ErrorInfo("Rejected", message), deps=(D("v"), D("m")), start_ns=5, end_ns=6),
            )
            return Run("r", "food-bank", outcome="failure", steps=steps)

        loc = localize(run_of("rota lists 4 volunteers, 6 signed up for drive D-3"))
        assert loc.candidates[0].step_id == "v" and "lineage:short" in loc.candidates[0].signals, [(c.step_id, c.score, c.reasons) for c in loc.candidates]
        others = ("rota lists 4 volunteers for drive D-3", "rota needs 4,000 kcal, the hall holds 6,000")
        for other in (*(localize(run_of(m)) for m in others), localize(run_of("rota lists 4 volunteers, 6 signed up", 3))):
            assert all("lineage:short" not in c.signals for c in other.candidates)

    def test_a_larger_number_that_counts_other_things_than_the_collection_gives_no_short_finding(self) -> None:
        """A glassblowing studio's kiln step is handed the 4 vases a catalogue tool listed, all of them: a larger
        number that is a stated limit ("kiln limit 6"), a measure ("weigh 9 kg", "5 hours"), the n of "4 of 6" (a
        firing attempt, where "4 of 6 vases" counts vases), one past another number ("take 5 hours, the kiln cools in 6") or one beside a noun the
        collection does not name ("4 shelves, 6 booked") counts no vases, so the catalogue gets no lineage:short."""
        vases = [{"vase": v, "glaze": "amber"} for v in ("VS-1", "VS-2", "VS-3", "VS-4")]

        def run_of(message: str) -> Run:
            steps = (
                Step("c", "list_vases", "tool", input={"order": "O-8"}, output={"order": "O-8", "vases": vases}, start_ns=1, end_ns=2),
                Step("t", "kiln_temp", "llm", input={"glaze": "amber"}, output={"temp_c": 1240}, start_ns=3, end_ns=4),
                Step("k", "fire_kiln", "tool", input={"vases": vases, "temp_c": 1240}, status="error",
                     error=ErrorInfo("Rejected", message), deps=(D("c"), D("t")), start_ns=5, end_ns=6),
            )
            return Run("r", "glass-studio", outcome="failure", steps=steps)

        for message in ("kiln holds 4 vases, 6 ordered", "kiln loaded 4 of 6 vases"):
            assert "lineage:short" in localize(run_of(message)).candidates[0].signals, message
        for message in ("4 vases in the load, kiln limit 6", "4 vases weigh 9 kg", "firing 4 of 6 failed for vases",
                        "4 vases take 5 hours, the kiln cools in 6", "4 vases take 5 hours", "kiln has 4 shelves, 6 booked"):
            assert all("lineage:short" not in c.signals for c in localize(run_of(message)).candidates), message

    def test_an_empty_field_of_a_record_the_failure_prints_is_not_called_empty(self) -> None:
        """A failure printing the parcel it rejected (``{'insurance': None, 'weight': -2.0}``) because its weight
        is negative says nothing is empty, nor does one whose empty word stands far from the field's words: the
        sender lookup that answered ``insurance: None`` (though it answers it filled for other senders) gets no
        lineage:emptied, and the step that worked the weight out stays first."""
        parcel = {"sender": "S-4", "insurance": None, "weight": -2.0}

        def run_of(message: str) -> Run:
            steps = (
                Step("o", "get_sender", "tool", input={"sender": "S-2"}, output={"sender": "S-2", "insurance": "IN-9"}, start_ns=1, end_ns=2),
                Step("c", "get_sender", "tool", input={"sender": "S-4"}, output={"sender": "S-4", "insurance": None}, start_ns=3, end_ns=4),
                Step("w", "weigh", "other", input={"gross": 3.0, "tare": 5.0, "sender": "S-4", "insurance": None}, output=parcel,
                     deps=(D("c"),), start_ns=5, end_ns=6),
                Step("p", "post_parcel", "tool", input=parcel, status="error",
                     error=ErrorInfo("ValueError", message), deps=(D("w"),), start_ns=7, end_ns=8),
            )
            return Run("r", "post", outcome="failure", steps=steps)

        for message in (f"bad parcel {parcel}: weight must be positive", "insurance checked for S-4, but the weight must be positive and none was"):
            loc = localize(run_of(message))
            assert all("lineage:emptied" not in c.signals for c in loc.ranked_all), message
            assert loc.candidates[0].step_id == "w", message
        said = localize(run_of("parcel refused: insurance None is not a policy"))
        assert any("lineage:emptied" in c.signals for c in said.ranked_all if c.step_id == "c")

    def test_a_lookup_answering_empty_with_no_sign_of_an_error_is_not_called_a_swallower(self) -> None:
        """A pier lookup asked for a berth on a day nobody gave (the model wrote 2031-06-09 for 2031-06-02) that
        answers ``berth: None`` and shows no error answered honestly: no lineage:emptied on it, the model is
        first.  The same lookup that answered a berth on another call did swallow something: it is marked; so
        is a call made for its effect (assigning the berth) that answers none: it did nothing and said so."""
        inp = {"messages": [{"role": "user", "content": "Moor yacht Y-8 on Monday 2031-06-02."}]}
        args = {"yacht": "Y-8", "day": "2031-06-09"}

        def run_of(earlier: bool, tool: str = "find_berth") -> Run:
            steps = [Step("g", "ChatCompletion", "llm", input=inp, output={"role": "assistant", "tool_calls": [{"name": tool, "arguments": args}]},
                          start_ns=3, end_ns=4)]
            if earlier:
                steps.insert(0, Step("e", "find_berth", "tool", input={"yacht": "Y-2", "day": "2031-05-20"},
                                     output={"day": "2031-05-20", "berth": "B-11"}, start_ns=1, end_ns=2))
            steps += [
                Step("k", tool, "tool", input=args, output={"day": "2031-06-09", "berth": None}, deps=(D("g"),), start_ns=5, end_ns=6),
                Step("m", "moor", "tool", input={"yacht": "Y-8", "berth": None}, status="error",
                     error=ErrorInfo("Rejected", "mooring refused: berth None is not a pier berth"), deps=(D("k"), D("g")), start_ns=7, end_ns=8),
            ]
            return Run("r", "marina", outcome="failure", steps=tuple(steps))

        loc = localize(run_of(False))
        assert all("lineage:emptied" not in c.signals for c in loc.ranked_all)
        assert loc.candidates[0].step_id == "g"
        for marked in (localize(run_of(True)), localize(run_of(False, "assign_berth"))):
            assert any("lineage:emptied" in c.signals for c in marked.ranked_all if c.step_id == "k")

    def test_a_graph_node_filing_another_records_id_under_the_record_is_first(self) -> None:
        """A dispatch node handed the state's ``order: {id: ORD-52}`` and a courier roster files the courier's
        last order ``ORD-47`` as the assignment's ``order``; the order stayed in the state (the invoice node
        after it was handed ORD-52), but the dispatcher swapped the entity: it, not the roster lookup whose
        courier id the failure also names, is first."""
        order = {"id": "ORD-52", "parcels": 3}
        roster = {"day": "2031-05-06", "couriers": [{"courier": "CR-9", "last_order": "ORD-47"}]}
        assignment = {"courier": "CR-9", "order": "ORD-47"}
        steps = (
            Step("o", "load_order", "other", input={"ref": "ORD-52"}, output={"order": order}, start_ns=1, end_ns=2),
            Step("r", "courier_roster", "tool", input={"day": "2031-05-06"}, output=roster, deps=(D("o"),), start_ns=3, end_ns=4),
            Step(
                "a", "dispatch", "other", input={"order": order, "roster": roster}, output={"assignment": assignment},
                deps=(D("o"), D("r")), start_ns=5, end_ns=6,
            ),
            Step(
                "i", "invoice", "other", input={"order": order}, output={"invoice": {"order": "ORD-52", "total": 18.0}},
                deps=(D("o"),), start_ns=7, end_ns=8,
            ),
            Step(
                "c", "confirm", "other", input={"order": order, "assignment": assignment, "invoice": {"order": "ORD-52", "total": 18.0}},
                status="error", error=ErrorInfo("ValueError", "not confirmed: assignment for CR-9 references ORD-47, not ORD-52"),
                deps=(D("a"), D("i"), D("o")), start_ns=9, end_ns=10,
            ),
        )
        loc = localize(Run("r", "couriers", outcome="failure", steps=steps))
        assert loc.candidates[0].step_id == "a"
        assert "lineage:dropped" in loc.candidates[0].signals

    @staticmethod
    def _quilt(heads: list[str], *, fail: bool = True, given: bool = True, maker: str = "M-3", last: int = 4, run_id: str = "r") -> Run:
        """A quilting loop: ``next_patch`` takes the head of ``todo`` as its ``current`` patch with that patch's
        fabric (the ``fabrics`` map it is handed when ``given``); it keeps the quilt's ``maker`` unless told."""
        fabrics = {f"P-{i}": ("linen", "chambray")[i // 2 % 2] for i in range(1, last + 1)}
        steps = [Step("p", "plan_quilt", "other", input={"quilt": "Q-7"}, output={"current": "P-1", "fabric": "linen",
                      "maker": "M-3", "todo": list(fabrics)[1:]}, start_ns=1, end_ns=2)]
        todo, current, t = list(fabrics)[1:], "P-1", 3
        for i, head in enumerate(heads):
            rest = todo[1:]
            inp = {"quilt": "Q-7", "patches": list(fabrics), "current": current, "fabric": fabrics[current], "maker": "M-3", "todo": todo}
            if given:
                inp["fabrics"] = dict(fabrics)
            out = {"current": head, "fabric": fabrics[head], "maker": maker if i == 1 else "M-3", "todo": rest}
            steps.append(Step(f"n{i}", "next_patch", "other", input=inp, output=out, deps=(D(steps[-1].step_id),), start_ns=t, end_ns=t + 1))
            todo, current, t = rest, head, t + 2
        steps.append(Step("b", "bind_quilt", "tool", input={"quilt": "Q-7", "patches": 4}, status="error" if fail else "ok",
                          error=ErrorInfo("Refused", "binding tape T-40 is out of stock") if fail else None,
                          output=None if fail else {"bound": True}, deps=(D(steps[-1].step_id),), start_ns=t, end_ns=t + 1))
        return Run(run_id, "quilts", outcome="failure" if fail else "success", steps=tuple(steps))

    def test_a_loop_taking_the_next_item_off_its_work_queue_contradicts_nothing(self) -> None:
        """A quilting loop's ``next_patch`` node handed ``current: P-1, fabric: linen, todo: [P-2, P-3, P-4]`` and
        the fabric of each patch answers ``current: P-2, fabric: chambray, todo: [P-3, P-4]``, and at the end an
        empty ``todo``: it moved to the next patch of its queue, with that patch's own fabric; no conflict or
        wrong record is found on it.  A node answering an item that is not the head of its queue is still a
        conflict."""
        bad = {"lineage:conflict", "lineage:wrong-record"}
        loc = localize(self._quilt(["P-2", "P-3", "P-4"]), top=10)
        assert not [c.signals for c in loc.ranked_all if c.step_id.startswith("n") and bad & set(c.signals)]
        skipped = localize(self._quilt(["P-2", "P-4", "P-4"]), top=10)
        assert any("lineage:conflict" in c.signals for c in skipped.ranked_all if c.step_id == "n1")

    def test_a_loop_taking_the_next_item_is_still_held_to_the_fields_that_item_does_not_explain(self) -> None:
        """The quilting loop that moves to its next patch and also rewrites the quilt's maker it was handed
        (M-3 to M-9) contradicts what it was given: the maker is no field of the patch.  So is a new fabric when
        the loop was handed no record of the patch's fabric to take it from."""
        rewrote = localize(self._quilt(["P-2", "P-3", "P-4"], maker="M-9"), top=10)
        assert any("lineage:conflict" in c.signals and "maker" in " ".join(c.reasons) for c in rewrote.ranked_all if c.step_id == "n1")
        unexplained = localize(self._quilt(["P-2", "P-3", "P-4"], given=False), top=10)
        assert any("lineage:conflict" in c.signals for c in unexplained.ranked_all if c.step_id == "n0")

    def test_a_work_queue_run_to_its_end_lacks_no_field_that_passing_runs_hold(self) -> None:
        """Passing quilting runs whose loop always hands on some patches left are the references; the loop's
        last turn in the failing run hands back an empty ``todo`` beside the patch it took: a queue run to its
        end, no field left out (no reference:presence).  A sorter that empties a one-item list without naming
        the item it dropped moved to no next item: its empty list is no queue run to its end."""
        from trajdebug import analyze

        refs = [self._quilt(["P-2", "P-3", "P-4"], fail=False, last=5, run_id=f"ok{i}") for i in range(5)]
        loc = analyze(self._quilt(["P-2", "P-3", "P-4"]), model=None, top=10, references=refs).localization
        assert not [c.step_id for c in loc.ranked_all if c.step_id.startswith("n") and "reference:presence" in c.signals]

        from trajdebug.analysis.lineage import queue_keys

        last = next(st for st in self._quilt(["P-2", "P-3", "P-4"]).steps if st.step_id == "n2")
        assert queue_keys(last) == {"todo"}
        sorter = Step("f", "sort_bins", "other", input={"bins": ["BN-1"], "load": 3}, output={"bins": []})
        assert not queue_keys(sorter)

    def test_a_unit_after_a_number_is_not_the_field_it_contradicts(self) -> None:
        """A failure stating "304.40 EUR" names the currency, not a rate table's field ``eur``: no contradiction at the rate lookup."""
        steps = (
            Step("fx", "get_rates", "tool", input={"base": "EUR"}, output={"eur": 1.0, "gbp": 0.85}, start_ns=1, end_ns=2),
            Step(
                "t",
                "add_up",
                "other",
                input={"rates": {"eur": 1.0, "gbp": 0.85}, "lines": [120.4, 184.0]},
                output={"total": 304.4},
                deps=(D("fx"),),
                start_ns=3,
                end_ns=4,
            ),
            Step(
                "w",
                "decide",
                "tool",
                input={"total": 304.4},
                status="error",
                error=ErrorInfo("Mismatch", "reimbursed 304.40 EUR but the statement says 368.40 EUR"),
                deps=(D("t"),),
                start_ns=5,
                end_ns=6,
            ),
        )
        loc = localize(Run("r", "expenses", outcome="failure", steps=steps))
        assert all("lineage:contradicted" not in c.signals for c in loc.candidates)

    def test_an_error_status_beside_a_fields_words_contradicts_nothing(self) -> None:
        """"crate ledger 422: LT-300 is not on the scale log" reports the register's status: the crate step's items=1 is
        not contradicted, and 422 is no value some step should have passed on; "crate ledger holds 422 items"
        states a count."""

        def run_of(message: str) -> Run:
            steps = (
                Step("b", "pack_crate", "other", input={"crate": "K220"}, output={"crate": "K220", "items": 1}, start_ns=1, end_ns=2),
                Step("w", "scan_item", "tool", input={"object_id": "K220-1"}, output={"grams": 0.0}, deps=(D("b"),), start_ns=3, end_ns=4),
                Step(
                    "r", "crate_ledger", "tool", input={"records": [{"lt": 300, "crate": "K220", "grams": 0.0}]},
                    status="error", error=ErrorInfo("Refused", message), deps=(D("w"),), start_ns=5, end_ns=6,
                ),
            )
            return Run("r", "items", outcome="failure", steps=steps)

        status = localize(run_of("crate ledger 422: LT-300 is not on the scale log"))
        assert all("lineage:contradicted" not in c.signals for c in status.candidates)
        assert all("'422'" not in r for c in status.candidates for r in c.reasons)
        count = localize(run_of("the crate ledger holds 422 items for K220"))
        assert any("lineage:contradicted" in c.signals for c in count.candidates)
        # An id's number closing it is no status: "CL-422:" leaves 422 a count the message states.
        coded = localize(run_of("CL-422: the crate ledger holds 422 items for K220"))
        assert any("lineage:contradicted" in c.signals for c in coded.candidates)

    def test_a_code_span_whose_children_made_the_value_keeps_a_lowered_dropped_finding(self) -> None:
        """A per-crate span whose labelling step made LT-300 and which returned the crate's count of items keeps a
        dropped finding, weaker than a span handed LT-300 by its caller that returns without it."""

        def run_of(handed: bool) -> Run:
            given = {"crate": "K220", "label": "LT-300"} if handed else {"crate": "K220"}
            steps = (
                Step("b", "pack_crate", "other", input=given, output={"crate": "K220", "items": 1}, start_ns=1, end_ns=6),
                Step("w", "scan_item", "tool", input={"object_id": "K220-1"}, output={"grams": 0.0}, parent_id="b", start_ns=2, end_ns=3),
                Step(
                    "n", "assign_labels", "other", input={"crate": "K220", "after": 99}, output={"labels": ["LT-300"]},
                    parent_id="b", start_ns=4, end_ns=5,
                ),
                Step(
                    "r", "crate_ledger", "tool", input={"records": [{"lt": 300, "crate": "K220", "grams": 0.0}]},
                    status="error", error=ErrorInfo("Refused", "LT-300 is not on the scale log"), deps=(D("b"), D("w")),
                    start_ns=7, end_ns=8,
                ),
            )
            return Run("r", "items", outcome="failure", steps=steps)

        def dropped(loc: Localization) -> float:
            [score] = [c.score for c in loc.candidates if c.step_id == "b" and "lineage:dropped" in c.signals]
            return score

        assert dropped(localize(run_of(handed=False))) < dropped(localize(run_of(handed=True)))

    def test_a_code_span_that_lost_what_its_own_child_looked_up_is_still_found_dropping_it(self) -> None:
        """A span whose child looked up SKU-4411 and which returned the order without it, refused downstream for
        the missing SKU, has a dropped finding: a value made inside a span can still be lost there."""
        steps = (
            Step("b", "build_order", "other", input={"customer": "C-77", "item": "walnut desk"},
                 output={"customer": "C-77", "lines": 1}, start_ns=1, end_ns=6),
            Step("l", "lookup_sku", "tool", input={"item": "walnut desk"}, output={"sku": "SKU-4411", "price": 420.0},
                 parent_id="b", start_ns=2, end_ns=3),
            Step("s", "ship_order", "tool", input={"order": {"customer": "C-77", "lines": 1}}, status="error",
                 error=ErrorInfo("Refused", "SKU-4411 is missing from the order lines"), deps=(D("b"),), start_ns=7, end_ns=8),
        )
        loc = localize(Run("r", "shop", outcome="failure", steps=steps))
        assert any(c.step_id == "b" and "lineage:dropped" in c.signals for c in loc.candidates)

    def test_a_failure_about_one_record_contradicts_no_other_records_field(self) -> None:
        """"DP-121 has 2 canoes racked" states the canoes of DP-121: the status of DP-125 (canoes=19) is not
        contradicted; the status of DP-121 saying canoes=19 is."""

        def run_of(depot: str) -> Run:
            steps = (
                Step("s", "depot_status", "tool", input={"depot_id": depot}, output={"depot": depot, "canoes": 19}, start_ns=1, end_ns=2),
                Step("p", "plan", "llm", input={"depot": depot, "canoes": 19}, output={"from_depot": "DP-121", "count": 17}, deps=(D("s"),), start_ns=3, end_ns=4),
                Step(
                    "m", "move_canoes", "tool", input={"from_depot": "DP-121", "count": 17}, status="error",
                    error=ErrorInfo("Refused", "depot API 409: DP-121 has 2 canoes racked, cannot collect 17"), deps=(D("p"),),
                    start_ns=5, end_ns=6,
                ),
            )
            return Run("r", "depot", outcome="failure", steps=steps)

        assert all("lineage:contradicted" not in c.signals for c in localize(run_of("DP-125")).candidates)
        assert any("lineage:contradicted" in c.signals for c in localize(run_of("DP-121")).candidates)

    def test_a_number_the_failing_step_was_handed_under_another_name_corrects_nothing(self) -> None:
        """"NZD 3139.07 ... over the per-day allowance" quotes the amount the payment was handed: proration's ``days=21`` is not contradicted."""

        def run_of(message: str, field: str) -> Run:
            steps = (
                Step("p", "prorate", "other", input={"annual": 62000.0}, output={"gross": 3567.12, "days": 21}, start_ns=1, end_ns=2),
                Step("c", "convert", "other", input={"net": 2854.10}, output={"amount": 3139.07}, deps=(D("p"),), start_ns=3, end_ns=4),
                Step(
                    "s", "submit_payment", "tool", input={field: 3139.07, "currency": "NZD"}, status="error",
                    error=ErrorInfo("Refused", message), deps=(D("c"),), start_ns=5, end_ns=6,
                ),
            )
            return Run("r", "stipends", outcome="failure", steps=steps)

        quoted = localize(run_of("NZD 3139.07 for F-312 over the per-day allowance by more than 2%", "amount"))
        assert all("lineage:contradicted" not in c.signals for c in quoted.candidates)
        # Handed under the name the message gives it, the number is the step's own figure: it corrects another's.
        own = localize(run_of("3139.07 days for F-312 is over the term", "days"))
        assert any("lineage:contradicted" in c.signals for c in own.candidates)

    def test_a_lower_case_word_after_a_number_still_names_what_it_counts(self) -> None:
        """"serving with 6 replicas" names the field ``replicas``: the lookup that said 2 is contradicted."""
        steps = (
            Step("d", "get_deployment", "tool", input={"svc": "api"}, output={"replicas": 2}, start_ns=1, end_ns=2),
            Step("p", "plan", "llm", input={"replicas": 2}, output={"target": 3}, deps=(D("d"),), start_ns=3, end_ns=4),
            Step(
                "s",
                "scale",
                "tool",
                input={"target": 3},
                status="error",
                error=ErrorInfo("ValueError", "api is serving with 6 replicas; shrinking to 3 is not allowed"),
                deps=(D("p"),),
                start_ns=5,
                end_ns=6,
            ),
        )
        loc = localize(Run("r", "oncall", outcome="failure", steps=steps))
        assert "lineage:contradicted" in next(c for c in loc.candidates if c.step_id == "d").signals

    def test_a_total_short_of_the_failures_number_by_one_listed_item_is_a_slip(self) -> None:
        """A hanging width 576 where the gallery measures 635 is short by one frame's 59 cm: the step that summed
        the frames is suspect; a gap that is no frame's width (the gallery's 640) says nothing of it."""

        def run_of(actual: int) -> Run:
            frames = [{"frame": f"FR-{i}", "width_cm": n} for i, n in enumerate((59, 50, 73, 46))]
            steps = (
                Step("c", "get_frames", "tool", input={"show": "S-1"}, output=frames, start_ns=1, end_ns=2),
                Step("l", "hanging_width", "other", input={"frames": frames}, output={"width_cm": 576}, deps=(D("c"),), start_ns=3, end_ns=4),
                Step("s", "choose_wall", "other", input={"width_cm": 576}, output={"wall": "Rowan", "capacity_cm": 600}, deps=(D("l"),), start_ns=5, end_ns=6),
                Step(
                    "w", "book_wall", "tool", input={"wall": "Rowan", "frames": frames}, status="error",
                    error=ErrorInfo("Refused", f"S-1 is {actual} cm, does not fit Rowan (600 cm)"), deps=(D("s"), D("c")), start_ns=7, end_ns=8,
                ),
            )
            return Run("r", "gallery", outcome="failure", steps=steps)

        short = localize(run_of(635))
        assert "lineage:whatif" in next(c for c in short.candidates if c.step_id == "l").signals
        other = localize(run_of(640))
        assert all("lineage:whatif" not in c.signals for c in other.candidates if c.step_id == "l")

    def test_a_small_integer_the_failure_states_is_no_number_to_repair(self) -> None:
        """A "1 ml syringe" in a failure is no run's 1 that a 10x slip upstream turns into the failure's 0.1; a
        run's 2.5 the failure states is."""

        def run_of(mg: float, message: str) -> Run:
            steps = (
                Step("w", "weigh", "tool", input={"patient": "P-1"}, output={"weight_kg": 4.0}, start_ns=1, end_ns=2),
                Step("m", "prescribe", "tool", input={"patient": "P-1"}, output={"mg": mg}, start_ns=3, end_ns=4),
                Step(
                    "d", "per_kg", "other", input={"weight_kg": 4.0, "mg": mg}, output={"mg_per_kg": mg / 4.0},
                    deps=(D("w"), D("m")), start_ns=5, end_ns=6,
                ),
                Step(
                    "x", "dispense", "tool", input={"mg_per_kg": mg / 4.0}, status="error",
                    error=ErrorInfo("ValueError", message), deps=(D("d"),), start_ns=7, end_ns=8,
                ),
            )
            return Run("r", "clinic", outcome="failure", steps=steps)

        small = localize(run_of(4.0, "0.042 ml is below the 0.1 ml a 1 ml syringe can measure"))
        assert all("lineage:whatif" not in c.signals for c in small.candidates)
        large = localize(run_of(10.0, "2.5 mg/kg is above the 0.25 mg/kg the label allows"))
        assert any("lineage:whatif" in c.signals for c in large.candidates if c.step_id in ("w", "m", "d"))

    def test_a_small_whole_number_the_failure_states_is_no_expected_value(self) -> None:
        """"bank paid 8 payouts totalling 7911.79" names a count beside the run's total: no 1000x slip in every
        batch's total (at 7.91 the sum would round to the 8) is said to be the cause; an expected total written to
        the cent still names such a slip."""
        totals = (1616.5, 2398.9, 769.99, 3126.4)

        def run_of(message: str) -> Run:
            batches = tuple(
                Step(f"b{i}", "submit_batch", "tool", input={"batch": f"B-{i}"}, output={"count": 2, "total": x},
                     start_ns=2 * i + 1, end_ns=2 * i + 2)
                for i, x in enumerate(totals)
            )
            lines = [{"ref": f"B-{i}", "debit": x, "lines": 2} for i, x in enumerate(totals)]
            paid = {"paid_count": 8, "paid_total": 7911.79}
            steps = (
                *batches,
                Step(
                    "f", "fetch_statement", "tool", input={"receipts": [b.output for b in batches]}, output=lines,
                    deps=tuple(D(b.step_id) for b in batches), start_ns=18, end_ns=19,
                ),
                Step("s", "compute_totals", "other", input={"matched": lines}, output=paid, deps=(D("f"),), start_ns=20, end_ns=21),
                Step(
                    "x", "reconcile", "tool", input={"paid": paid}, status="error",
                    error=ErrorInfo("ReportedError", message), deps=(D("s"),), start_ns=22, end_ns=23,
                ),
            )
            return Run("r", "payouts", outcome="failure", steps=steps)

        counted = localize(run_of("bank paid 8 payouts totalling 7911.79, file has 9 totalling 8827.04"))
        assert all("lineage:whatif" not in c.signals for c in counted.ranked_all)
        cents = localize(run_of("bank paid 7911.79 where the file expects 7.91"))
        assert any("lineage:whatif" in c.signals for c in cents.ranked_all if c.step_id.startswith("b"))

    def test_the_ends_of_a_range_the_failure_states_are_no_numbers_to_repair(self) -> None:
        """"0.00 GBP per ml is outside 0.03-0.09" (or "not between 0.03 and 0.09"): the range's ends are the check's limits, neither the run's number
        nor the one it should have had, so no slip turns the one into the other (the kit price that made a
        line's 0.09 is not said to be "taken where the 312.0 also given fits" for the 0.03)."""
        steps = (
            Step("k", "price_kits", "tool", input={"site": "S-1"}, output={"amount": 936.0}, start_ns=1, end_ns=2),
            Step("o", "price_other", "tool", input={"site": "S-2"}, output={"amount": 312.0}, start_ns=3, end_ns=4),
            Step(
                "d", "per_ml", "other", input={"amount": 936.0, "ml": 10400.0, "other": {"amount": 312.0}},
                output={"per_ml": 0.09}, deps=(D("k"), D("o")), start_ns=5, end_ns=6,
            ),
            Step(
                "x", "validate_plan", "tool", input={"lines": [{"line": "L-1", "per_ml": 0.09}, {"line": "L-2", "per_ml": 0.0}]},
                status="error", error=ErrorInfo("ValidationFailed", "line L-2: 0.00 GBP per ml is outside 0.03-0.09"),
                deps=(D("d"),), start_ns=7, end_ns=8,
            ),
        )
        loc = localize(Run("r", "bank", outcome="failure", steps=steps))
        assert all("lineage:whatif" not in c.signals for c in loc.ranked_all)
        worded = localize(Run("r", "bank", outcome="failure", steps=(*steps[:3], replace(
            steps[3], error=ErrorInfo("ValidationFailed", "line L-2: 0.00 GBP per ml is not between 0.03 and 0.09")))))
        assert all("lineage:whatif" not in c.signals for c in worded.ranked_all)
        spaced = localize(Run("r", "bank", outcome="failure", steps=(*steps[:3], replace(
            steps[3], error=ErrorInfo("ValidationFailed", "line L-1: 0.09 GBP per ml where 0.03 was expected")))))
        assert "lineage:whatif" in next(c for c in spaced.ranked_all if c.step_id == "k").signals

    def test_an_item_of_a_total_the_failure_names_is_not_said_to_be_named(self) -> None:
        """A value that only counts toward a total the failure states is said to count toward it, not to be named by the failure."""
        lines = [{"amount": 64.0, "what": "dinner"}, {"amount": 304.4, "what": "hotel"}]
        steps = (
            Step("r", "get_receipt", "tool", input={"id": "R-1"}, output=lines[:1], start_ns=1, end_ns=2),
            Step("h", "get_folio", "tool", input={"id": "R-1"}, output=lines[1:], start_ns=2, end_ns=3),
            Step("t", "add_up", "other", input={"lines": lines[1:]}, output={"total": 304.4}, deps=(D("h"),), start_ns=3, end_ns=4),
            Step("s", "get_statement", "tool", input={"id": "R-1"}, output={"charges": lines, "total": 368.4}, deps=(D("r"),), start_ns=5, end_ns=6),
            Step(
                "w",
                "decide",
                "tool",
                input={"total": 304.4, "statement": 368.4},
                status="error",
                error=ErrorInfo("Mismatch", "paid 304.40 but the statement says 368.40"),
                deps=(D("t"), D("s")),
                start_ns=7,
                end_ns=8,
            ),
        )
        loc = localize(Run("r", "expenses", outcome="failure", steps=steps))
        reasons = [r for c in loc.ranked_all for r in c.reasons]
        assert any("counts toward get_statement's total 368.4" in r for r in reasons)
        assert not any("=64.0, which the failure" in r for r in reasons)

    def test_an_operand_of_a_value_the_failure_names_is_said_to_go_into_it(self) -> None:
        """A number a step computed the failing value from is said to have gone into that value (which step's,
        which value), not to be a value the failure names."""
        steps = (
            Step("r", "get_rate", "tool", input={"dock": "D-2"}, output={"rate": 2.75}, start_ns=1, end_ns=2),
            Step("h", "get_hours", "tool", input={"dock": "D-2"}, output={"hours": 16.0}, start_ns=2, end_ns=3),
            Step("b", "bill_mooring", "other", input={"rate": 2.75, "hours": 16.0}, output={"fee": 44.0},
                 deps=(D("r"), D("h")), start_ns=3, end_ns=4),
            Step(
                "c",
                "check_cap",
                "tool",
                input={"fee": 44.0},
                status="error",
                error=ErrorInfo("OverCap", "fee 44.0 is above the 30.0 cap"),
                deps=(D("b"),),
                start_ns=5,
                end_ns=6,
            ),
        )
        loc = localize(Run("r", "marina", outcome="failure", steps=steps))
        reasons = [r for c in loc.ranked_all for r in c.reasons]
        assert any("went into bill_mooring's 44.0, which the failure at check_cap names" in r for r in reasons)
        assert not any("=2.75, which the failure" in r or "(through" in r for r in reasons)

    def test_a_tool_refusing_its_arguments_is_a_symptom_and_a_tool_timing_out_is_a_cause(self) -> None:
        """A tool rejecting what it was given shows the failure (an earlier step ranks first); a tool that timed out is ranked first itself."""

        def run_of(message: str) -> Run:
            steps = (
                Step("q", "quote", "tool", input={"sku": "S-4"}, output={"unit_price": 40}, start_ns=1, end_ns=2),
                Step(
                    "p",
                    "plan",
                    "llm",
                    input={"unit_price": 40, "budget": 300},
                    output={"quantity": 12},
                    deps=(D("q"),),
                    start_ns=3,
                    end_ns=4,
                ),
                Step(
                    "o",
                    "order",
                    "tool",
                    input={"sku": "S-4", "quantity": 12},
                    status="error",
                    error=ErrorInfo("ToolError", message),
                    deps=(D("p"),),
                    start_ns=5,
                    end_ns=6,
                ),
            )
            return Run("r", "buyer", outcome="failure", steps=steps)

        refused = localize(run_of("order refused: total exceeds the approved budget"))
        assert refused.candidates[0].step_id != "o"
        timed_out = localize(run_of("order service timed out after 30 s"))
        assert timed_out.candidates[0].step_id == "o"

    def test_an_empty_answer_about_another_listed_item_is_less_suspect(self) -> None:
        """An agent walking a team's accounts: the empty lookup for the account that went fine ranks below the tool that computed the failing account's number."""

        def step(sid: str, name: str, kind: str, t: int, inp: Any, out: Any, *deps: str) -> Step:
            return Step(sid, name, kind, input=inp, output=out, deps=tuple(D(d) for d in deps), start_ns=t, end_ns=t + 1)

        steps = (
            step("t", "get_team", "tool", 1, {"team": "draco"}, {"accounts": ["acct-api", "acct-ml"]}),
            step("e", "get_rightsizing", "tool", 3, {"account_id": "acct-api"}, [], "t"),
            step("r", "get_rightsizing", "tool", 5, {"account_id": "acct-ml"}, [{"hourly_delta": 2.054}], "t"),
            step("c", "monthly_cost", "tool", 7, {"hourly": 2.054}, {"monthly": 17993.04}, "r"),
            Step(
                "k",
                "create_ticket",
                "tool",
                input={"account_id": "acct-ml", "est_saving": 17993.04},
                status="error",
                error=ErrorInfo("ToolError", "the estimated saving is implausible for this account"),
                deps=(D("t"), D("c"), D("e")),
                start_ns=9,
                end_ns=10,
            ),
        )
        loc = localize(Run("r", "finops", outcome="failure", steps=steps), top=10)
        order = [c.step_id for c in loc.candidates]
        assert order.index("c") < order.index("e")
        [empty] = [c for c in loc.candidates if c.step_id == "e"]
        assert any("another listed item" in r for r in empty.reasons)
        [cost] = [c for c in loc.candidates if c.step_id == "c"]
        assert any("the failure speaks of its field" in r for r in cost.reasons)

    def test_a_total_beside_its_items_passes_the_mark_to_where_the_items_came_from(self) -> None:
        """A day log's total is made of the entries it lists: the step that computed an entry is on the failure's thin slice through the total."""
        steps = (
            Step("p", "portion", "other", input={"qty": 1, "unit": "cup"}, output={"grams": 240.0, "kcal": 1130.4}, start_ns=1, end_ns=2),
            Step("w", "log_meal", "tool", input={"kcal": 1130.4}, output={"ok": True}, deps=(D("p"),), start_ns=3, end_ns=4),
            Step(
                "l",
                "load_log",
                "tool",
                input={"day": "Tue"},
                output={"entries": [{"kcal": 1130.4}, {"kcal": 489.0}], "total_kcal": 1619.4},
                start_ns=5,
                end_ns=6,
            ),
            Step(
                "c",
                "check",
                "other",
                input={"left": 180.6},
                status="error",
                error=ErrorInfo("Rejected", "total_kcal 1619.4 leaves no room for dinner"),
                deps=(D("l"),),
                start_ns=7,
                end_ns=8,
            ),
        )
        loc = localize(Run("r", "coach", outcome="failure", steps=steps), top=10)
        [portion] = [c for c in loc.candidates if c.step_id == "p"]
        assert "lineage:origin" in portion.signals
        assert any("load_log's total" in r for r in portion.reasons)

    def test_the_bounds_of_a_range_a_failure_checks_against_are_not_values_it_expects(self) -> None:
        """A guardrail saying "not an adequate dinner (300-900 kcal)" does not make the model that was told 300 a dropper of 300."""

        def run_of(message: str) -> Run:
            steps = (
                Step("m", "pick", "llm", input={"rule": "between 300 and 900 kcal"}, output={"recipe": "broth", "kcal": 90}, start_ns=1, end_ns=2),
                Step("g", "guard", "other", input={"kcal": 90}, status="error", error=ErrorInfo("Guardrail", message), deps=(D("m"),), start_ns=3, end_ns=4),
            )
            return Run("r", "coach", outcome="failure", steps=steps)

        def dropped(run: Run) -> bool:
            return any("lineage:dropped" in c.signals for c in localize(run, top=5).candidates)

        assert not dropped(run_of("not an adequate dinner (300-900 kcal)"))
        assert not dropped(run_of("a dinner has between 300 and 900 kcal"))
        assert dropped(run_of("a dinner needs 300 kcal"))
        # "From 90 to 300" is a change, not a range: 300 stays a value the failure expects.
        assert dropped(run_of("the dinner went from 90 to 300 kcal"))

    def test_a_label_the_failure_uses_as_a_word_marks_the_model_that_chose_it(self) -> None:
        """A vendor refusing an RMA because "no hardware fault" was found puts the triage model that filed category=hardware on the thin slice, though hardware was one of its options."""
        steps = (
            Step(
                "m",
                "triage",
                "llm",
                input={"messages": [{"role": "system", "content": "File as hardware, network or software."}, {"role": "user", "content": "VPN drops"}]},
                output={"category": "hardware", "summary": "VPN drops"},
                start_ns=1,
                end_ns=2,
            ),
            Step("r", "route", "other", input={"category": "hardware"}, output="hardware_desk", deps=(D("m"),), start_ns=3, end_ns=4),
            Step(
                "t",
                "create_rma",
                "tool",
                input={"summary": "VPN drops"},
                status="error",
                error=ErrorInfo("Refused", "diagnostics passed, no hardware fault found"),
                deps=(D("r"), D("m")),
                start_ns=5,
                end_ns=6,
            ),
        )
        loc = localize(Run("r", "helpdesk", outcome="failure", steps=steps), top=5)
        [model] = [c for c in loc.candidates if c.step_id == "m"]
        assert any("first stated category=hardware" in r for r in model.reasons)

    def test_a_model_passing_on_a_label_under_its_own_field_chose_nothing(self) -> None:
        """A portal refusing the competition programme does not mark the model that searched section=competition
        because the request said section=competition: it passed the label on; the model that filed a category its
        request never gave is still the one that chose it."""

        def run(request: dict[str, str]) -> Run:
            inp = {"messages": [{"role": "user", "content": json.dumps(request)}]}
            out = {"role": "assistant", "tool_calls": [{"name": "search", "arguments": {"section": "competition"}}]}
            steps = (
                Step("m", "generation", "llm", input=inp, output=out, start_ns=1, end_ns=2),
                Step("s", "search", "tool", input={"section": "competition"}, output={"films": ["F-1"]},
                     deps=(D("m"),), start_ns=3, end_ns=4),
                Step("p", "publish", "tool", input={"films": ["F-1"]}, status="error",
                     error=ErrorInfo("Refused", "competition is missing shortlisted titles F-2"), deps=(D("s"),),
                     start_ns=5, end_ns=6),
            )
            return Run("r", "festival", outcome="failure", steps=steps)

        def labelled(request: dict[str, str]) -> bool:
            loc = localize(run(request), top=5)
            [model] = [c for c in loc.candidates if c.step_id == "m"]
            return any("first stated section=competition" in r for r in model.reasons)

        assert not labelled({"section": "competition", "day": "2026-06-12"})
        assert labelled({"request": "programme for the twelfth", "day": "2026-06-12"})

    def test_a_handoffs_ends_are_no_field_a_wrapped_failure_speaks_of(self) -> None:
        """An agent span failing with "Error in agent run: ..." does not speak of the handoff's from_agent: the
        handoff into it named who acts, no value the failure is about."""
        call = {"role": "assistant", "tool_calls": [{"name": "book", "arguments": {"slot": "S1"}}]}
        steps = (
            Step("h", "handoff triage -> booker", "other", output={"from_agent": "triage", "to_agent": "booker"},
                 start_ns=1, end_ns=2),
            Step("a", "booker", "agent", status="error", deps=(Dependency("h", kind="control"),),
                 error=ErrorInfo("AgentsSDKError", "Error in agent run: slot S1 is 110 min"), start_ns=3, end_ns=9),
            Step("u", "turn 1", "agent", parent_id="a", start_ns=3, end_ns=8),
            Step("m", "generation", "llm", parent_id="u", input={"messages": [{"role": "user", "content": "book"}]},
                 output=call, deps=(D("h"),), start_ns=4, end_ns=5),
            Step("t", "book", "tool", parent_id="u", input={"slot": "S1"}, status="error", deps=(D("m"),),
                 error=ErrorInfo("ToolError", "slot S1 is 110 min"), start_ns=6, end_ns=7),
        )
        loc = localize(Run("r", "festival", outcome="failure", steps=steps), top=5)
        reasons = [r for c in loc.candidates if c.step_id == "h" for r in c.reasons]
        assert not any("from_agent" in r or "to_agent" in r for r in reasons)

    def test_a_step_keeping_one_part_of_a_value_lost_the_other_and_chose_nothing(self) -> None:
        """A parser given "regime 20<->30 C" that passes on regime 20, where the failure names 20 and 30, lost
        the 30: a part of one value, no choice between two given values, so its finding keeps its weight."""
        steps = (
            Step(
                "p",
                "parse_request",
                "other",
                input="Test T-1: regime 20<->30 C, start 2026-03-05",
                output={"test": "T-1", "regime": "20"},
                start_ns=1,
                end_ns=2,
            ),
            Step("b", "book", "tool", input={"regime": "20"}, output={"program": "20 C"}, deps=(D("p"),), start_ns=3, end_ns=4),
            Step(
                "c",
                "review",
                "other",
                input={"program": "20 C"},
                status="error",
                error=ErrorInfo("ReviewHold", "program 20 C does not follow the regime 20<->30 C"),
                deps=(D("b"),),
                start_ns=5,
                end_ns=6,
            ),
        )
        loc = localize(Run("r", "lab", outcome="failure", steps=steps), top=5)
        [parser] = [c for c in loc.candidates if c.step_id == "p"]
        lost = [r for r in parser.reasons if "'30'" in r and "did not pass it on" in r]
        assert lost and not any("a choice between given values" in r for r in lost)

    def test_a_node_that_left_a_state_part_alone_lost_none_of_its_numbers(self) -> None:
        """A graph node handed the whole state (a recipe an earlier node wrote) that answers with its own part
        (a reading) did not drop the recipe's 120 the failure expects: the state kept it.  A node that rewrote
        the recipe without the 120 did drop it."""
        lots = [{"lot": "L-2", "made": "2026-04-20"}]
        recipe = {"style": "alpine", "min_days": 120}
        reading = {"bay": "b-1", "age_days": 73}

        def reasons(age_answer: dict[str, Any]) -> list[str]:
            state = {"cave": "c", "lots": lots, "recipe": recipe}
            steps = (
                Step("l", "load", "agent", input={"cave": "c"}, output={"lots": lots}, start_ns=1, end_ns=2),
                Step("p", "recipe", "agent", input={"cave": "c", "lots": lots}, output={"recipe": recipe},
                     deps=(D("l"),), start_ns=3, end_ns=4),
                Step("a", "age", "other", input=state, output=age_answer, deps=(D("p"),), start_ns=5, end_ns=6),
                Step("w", "log", "agent", input={**state, "reading": reading},
                     output={"log": [{"lot": "L-2", "age_days": 73}]}, deps=(D("a"),), start_ns=7, end_ns=8),
                Step("s", "ship", "tool", input={"lots": ["L-2"]}, status="error",
                     error=ErrorInfo("RuntimeError", "lot L-2 is 73 days old, its spec requires 120"),
                     deps=(D("w"),), start_ns=9, end_ns=10),
            )
            loc = localize(Run("r", "cave", outcome="failure", steps=steps), top=5)
            return [r for c in loc.candidates if c.step_id == "a" for r in c.reasons]

        def dropped(rs: list[str]) -> bool:
            return any("'120'" in r and "did not pass it on" in r for r in rs)

        assert not dropped(reasons({"reading": reading}))
        assert dropped(reasons({"recipe": {"style": "alpine"}, "reading": reading}))

    def test_a_router_given_the_state_a_later_node_carried_on_lost_nothing(self) -> None:
        """A routing function given the whole graph state answers a branch name; a later node given the very same
        ``loan`` of the state carries its id on: the router dropped nothing, the id travelled in the state."""
        loan = {"ref": "LN-7", "days": 120}
        steps = (
            Step("r", "route", "other", input={"loan": loan, "step": 1}, output="tools", start_ns=1, end_ns=2),
            Step(
                "q",
                "quote",
                "tool",
                input={"days": 120},
                output={"policy": "P-9", "coverage_days": 30},
                start_ns=3,
                end_ns=4,
            ),
            Step(
                "d",
                "draft",
                "other",
                input={"loan": loan, "insurance": {"policy": "P-9", "coverage_days": 30}},
                output={"loan": "LN-7", "policy": "P-9", "coverage_days": 30},
                deps=(D("r"), D("q")),
                start_ns=5,
                end_ns=6,
            ),
            Step(
                "c",
                "final_check",
                "other",
                input={"loan": loan, "agreement": {"loan": "LN-7", "policy": "P-9", "coverage_days": 30}},
                status="error",
                error=ErrorInfo("LoanCheckFailed", "insurance P-9 covers 30 days; loan LN-7 runs 120 days"),
                deps=(D("d"),),
                start_ns=7,
                end_ns=8,
            ),
        )
        loc = localize(Run("r", "loans", outcome="failure", steps=steps), top=10)
        router = [c for c in loc.ranked_all if c.step_id == "r"]
        assert not any("did not pass it on" in r for c in router for r in c.reasons)

    def test_an_id_named_beside_dates_identifies_the_record_the_dates_are_wrong_in(self) -> None:
        """'reservation R-1 runs 2025-06-03 to 2025-06-07 but the guest stays until 2025-06-08': the id is what was checked, so the tool that minted it gains less than the dates' origin."""
        steps = (
            Step("u", "understand", "llm", input={"request": "Five nights in Porto from 3 June"}, output={"check_in": "2025-06-03", "nights": 4}, start_ns=1, end_ns=2),
            Step(
                "b",
                "reserve",
                "tool",
                input={"check_in": "2025-06-03", "nights": 4},
                output={"reservation": "R-1", "check_out": "2025-06-07"},
                deps=(D("u"),),
                start_ns=3,
                end_ns=4,
            ),
            Step(
                "c",
                "check",
                "other",
                input={"reservation": "R-1", "check_out": "2025-06-07"},
                status="error",
                error=ErrorInfo("Mismatch", "reservation R-1 runs 2025-06-03 to 2025-06-07 but the guest stays until 2025-06-08"),
                deps=(D("b"),),
                start_ns=5,
                end_ns=6,
            ),
        )
        run = Run("r", "hotel", outcome="failure", steps=steps)

        def lead_of_tool(**weights: float) -> float:
            scores = {c.step_id: c.score for c in localize(run, top=5, weights=weights or None).candidates}
            return scores["b"] / scores["u"]

        # The id R-1 names the record; the dates say what is wrong: tracing the id at full
        # strength would favour the tool that minted it.
        assert lead_of_tool() < lead_of_tool(subject_id=1.0)

    def test_a_check_consulting_its_own_source_blames_the_source_the_run_acted_on(self) -> None:
        """A check comparing the run's record with a source it consulted itself points at the run's source when they disagree."""
        steps = (
            Step(
                "l",
                "lookup",
                "tool",
                input={"id": "C-7"},
                output={"id": "C-7", "tier": "silver"},
                start_ns=1,
                end_ns=2,
            ),
            Step(
                "p",
                "price",
                "other",
                input={"customer": {"id": "C-7", "tier": "silver"}},
                output={"id": "C-7", "tier": "silver", "price": 900.0},
                deps=(D("l"),),
                start_ns=3,
                end_ns=4,
            ),
            Step(
                "b",
                "billing",
                "tool",
                input={"id": "C-7"},
                output={"id": "C-7", "tier": "gold"},
                start_ns=5,
                end_ns=6,
            ),
            Step(
                "a",
                "audit",
                "condition",
                input={
                    "quote": {"id": "C-7", "tier": "silver", "price": 900.0},
                    "billing": {"id": "C-7", "tier": "gold"},
                },
                status="error",
                error=ErrorInfo(
                    "AuditFailed",
                    "quote for C-7 priced as silver (900.00); billing lists the account as gold",
                ),
                deps=(D("p"), D("b")),
                start_ns=7,
                end_ns=8,
            ),
        )
        loc = localize(Run("r", "renewals", outcome="failure", steps=steps))
        assert loc.candidates[0].step_id == "l"
        assert "lineage:disagrees" in loc.candidates[0].signals
        assert all("lineage:disagrees" not in c.signals for c in loc.candidates if c.step_id == "b")

    def test_recency_breaks_ties(self) -> None:
        """Of two equally suspect candidates sharing no value, the later (nearer the failure) ranks first."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                _llm("early", "figure 9999", start=1),
                _llm("late", "figure 7777", start=3),
                _fail("f", D("early"), D("late"), start=5),
            ),
        )
        assert _ids(localize(run))[:2] == ["late", "early"]

    def test_faulty_step_with_faulty_input_is_not_a_root(self) -> None:
        """A faulty step fed by a faulty step is ranked after the structural root (Zeller's stopping rule)."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                _llm("a", "figure 9999", start=1),
                Step(
                    "b",
                    "restate",
                    "llm",
                    input={"v": "figure 9999"},
                    output="total 5555 and 9999",
                    deps=(D("a"),),
                    start_ns=3,
                    end_ns=4,
                ),
                _fail("f", D("b"), start=5),
            ),
        )
        loc = localize(run)
        assert loc.candidates[0].step_id == "a" and loc.candidates[0].root
        assert [c.root for c in loc.candidates if c.step_id == "b"] == [False]

    def test_root_explained_through_sound_relays_is_demoted(self) -> None:
        """A faulty step whose infection chain, through sound-looking steps, reaches a more suspect step is not a root."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                Step("u", "ask", "input", output={"region": "ap-south"}, start_ns=1, end_ns=2),
                Step(
                    "p",
                    "plan",
                    "llm",
                    input={"alert": {"region": "ap-south"}},
                    output={"region": "eu-west"},
                    deps=(D("u"),),
                    start_ns=3,
                    end_ns=4,
                ),
                Step(
                    "t",
                    "check_health",
                    "tool",
                    input={"region": "eu-west"},
                    output={"status": "healthy"},
                    deps=(D("p"),),
                    start_ns=5,
                    end_ns=6,
                ),
                _llm("d", "cause none, 44 minutes", D("t"), start=7),
                _fail("f", D("d"), start=9),
            ),
        )
        loc = localize(run)
        assert loc.candidates[0].step_id == "p" and loc.candidates[0].root
        [d] = [c for c in loc.candidates if c.step_id == "d"]
        assert not d.root and any("further up" in r for r in d.reasons)

    def test_a_root_is_not_handed_up_along_an_edge_inferred_into_a_part_the_recorder_traced(self) -> None:
        """A relay whose input part ``alert`` the recorder traced to the request is not also fed by the plan
        through an edge inferred into ``alert.region`` (issue 23, nu22: a quiche's scaling, handed its recipe
        by its own lookup, said to be explained by the lemon tart's): no path "further up" runs through it;
        the same guess into a part nothing recorded still is one."""

        def chain(key: str) -> Any:
            run = Run(
                "r",
                "t",
                outcome="failure",
                steps=(
                    Step("u", "ask", "input", output={"alert": {"region": "ap-south"}}, start_ns=1, end_ns=2),
                    Step("p", "plan", "llm", input={"alert": {"region": "ap-south"}}, output={"region": "eu-west"},
                         deps=(D("u"),), start_ns=3, end_ns=4),
                    Step("t", "check_health", "tool", input={"alert": {"region": "eu-west"}},
                         output={"status": "healthy"}, start_ns=5, end_ns=6,
                         deps=(D("u", origin="tracked", key="alert"),
                               D("p", origin="inferred", confidence=0.9, key=key))),
                    _llm("d", "cause none, 44 minutes", D("t"), start=7),
                    _fail("f", D("d"), start=9),
                ),
            )
            return next(c for c in localize(run).candidates if c.step_id == "d")

        assert not any("further up" in r for r in chain("alert.region").reasons)
        assert any("further up" in r for r in chain("region").reasons)

    def test_inferred_edge_is_reported_with_its_confidence(self) -> None:
        """A candidate whose path hangs on an inferred edge says what that is (found by content, not recorded),
        which steps it joins by name and id, and the edge's confidence (nu32 finding 8)."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                _llm("a", "figure 9999", start=1),
                _fail("f", D("a", "data", "inferred", 0.8), start=3),
            ),
        )
        top = localize(run).candidates[0]
        assert top.step_id == "a"
        assert top.inferred == (("a", 0.8),)
        assert "the path follows an inferred edge (found by content, not recorded): llm_a#a's output is in " \
            "check_f#f's input (confidence 0.80)" in top.reasons

    def test_edge_weights_are_tunable(self) -> None:
        """With control edges weighted zero, a step reached only through one carries no blame: it ranks last, weakly."""
        run = Run(
            "r",
            "t",
            outcome="failure",
            steps=(
                _llm("c", "figure 9999", start=1),
                _llm("d", "figure 7321", start=3),
                _fail("f", D("c", "control"), D("d"), start=5),
            ),
        )
        default = localize(run)
        zero = localize(run, weights={"control": 0.0})
        score = {c.step_id: c.score for c in zero.candidates}
        assert _ids(zero).index("c") > _ids(zero).index("d")
        assert score["c"] < {c.step_id: c.score for c in default.candidates}["c"]

    def test_no_failures_no_search(self) -> None:
        """Given no failures, nothing is examined and nothing ranked."""
        run = Run("r", "t", steps=(_llm("a", "figure 9999", start=1),))
        loc = localize(run, failures=[])
        assert loc.candidates == [] and loc.stats.steps_examined == 0


@st.composite
def faulty_runs(draw: st.DrawFn) -> tuple[Run, list[Failure]]:
    """Random DAGs of LLM and code steps, some with made-up figures or errors, and random failure steps."""
    n = draw(st.integers(2, 30))
    rng = random.Random(draw(st.integers(0, 100_000)))
    steps = []
    for i in range(n):
        deps = tuple(
            D(f"s{p}", rng.choice(["data", "data", "state", "control"]))
            for p in rng.sample(range(i), min(i, rng.randint(0, 3)))
        )
        roll = rng.random()
        if roll < 0.2:
            steps.append(_llm(f"s{i}", f"figure {rng.randint(100, 999)}", *deps, start=i * 2))
        elif roll < 0.3:
            steps.append(_fail(f"s{i}", *deps, start=i * 2))
        else:
            steps.append(
                Step(
                    f"s{i}",
                    f"step{i}",
                    input={"v": i},
                    output={"v": i},
                    deps=deps,
                    start_ns=i * 2,
                    end_ns=i * 2 + 1,
                )
            )
    run = Run("r", "t", outcome="failure", steps=tuple(steps))
    picks = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3))
    return run, [Failure(f"s{i}", "test", "failed", "run-failure") for i in picks]


class TestInvariants:
    @settings(max_examples=60, deadline=None)
    @given(faulty_runs(), st.integers(1, 6))
    def test_candidates_lie_in_the_backward_slice_with_valid_paths(
        self, case: tuple[Run, list[Failure]], top: int
    ) -> None:
        """Every slice step is ranked; candidates are at most ``top``, roots first, scored within [0, 1], each in
        the backward slice with a real dependency chain to a failure, or run before the last failure with no edge to it."""
        run, failures = case
        g = DependencyGraph(run)
        loc = localize(run, failures=failures, top=top, graph=g)
        sliced = g.backward_slice([f.step_id for f in failures])
        failed = {f.step_id for f in failures}
        last = max(g.position(f) for f in failed)
        assert len(loc.candidates) <= top
        assert sliced <= set(loc.ranking)
        roots = [c.root for c in loc.candidates]
        assert roots == sorted(roots, reverse=True)
        assert all(0.0 <= c.score <= 1.0 for c in loc.candidates)
        for c in loc.candidates:
            if c.step_id in sliced:
                assert c.path[0] == c.step_id and c.path[-1] in failed
                for up, down in zip(c.path, c.path[1:], strict=False):
                    assert up in {d.step_id for d in g.parents(down)}
            else:
                assert g.position(c.step_id) < last and c.path == (c.step_id,)
                assert any("no recorded or inferred edge" in r for r in c.reasons)
        assert 0 <= loc.stats.steps_examined <= len(run.steps)


class TestScale:
    def test_planted_fault_in_a_synthetic_dag(self) -> None:
        """In a 3,000-step random DAG the planted fault is ranked first and every step before the failure is ranked."""
        run = synthetic_run(3000, seed=7)
        loc = localize(run)
        assert loc.candidates[0].step_id == run.metadata["fault"]["step_id"]
        assert loc.stats.steps_examined == len(loc.ranking) <= len(run.steps)

    def test_synthetic_run_rejects_tiny_sizes(self) -> None:
        """A synthetic run needs at least two steps."""
        with pytest.raises(ValueError, match="at least 2"):
            synthetic_run(1)


class TestRankedLazily:
    def test_every_candidate_built_late_is_the_one_built_at_once(self) -> None:
        """Each ranked step's candidate, read in any order after the ranking, equals the one built right after it."""
        from trajdebug.analysis._localize import _candidate, collect_evidence

        run = synthetic_run(400, seed=3)
        r = collect_evidence(run)
        ranked = r.combine()
        eager = [_candidate(r, sid) for sid in ranked]
        lazy = localize(run).ranked_all
        order = list(range(len(ranked)))
        random.Random(1).shuffle(order)
        assert [lazy[i] for i in order] == [eager[i] for i in order]
        assert [c.step_id for c in lazy] == ranked and lazy[-3:] == tuple(eager[-3:])

    def test_the_head_is_built_and_the_rest_on_reading(self) -> None:
        """Only the kept candidates are built with the ranking; another is built when read, and kept."""
        loc = localize(synthetic_run(300, seed=5), top=4)
        built = loc.ranked_all._built  # type: ignore[attr-defined]
        assert sum(c is not None for c in built) == 4 and loc.candidates == list(loc.ranked_all[:4])
        c = loc.ranked_all[10]
        assert built[10] is c and loc.ranked_all[10] is c and sum(x is not None for x in built) == 5

    def test_the_ranked_candidates_compare_and_pickle_as_a_tuple(self) -> None:
        """The lazy ranking equals the tuple of its candidates and pickles as that tuple."""
        import pickle

        loc = localize(synthetic_run(200, seed=9))
        every = tuple(loc.ranked_all)
        assert loc.ranked_all == every and pickle.loads(pickle.dumps(loc.ranked_all)) == every
        assert pickle.loads(pickle.dumps(loc)) == loc


def test_inferred_hop_reasons_name_the_step_after_each_hops_first_place_on_the_path() -> None:
    """Each inferred hop's reason names the step after that hop's first place on the path (none at the path's
    end), as a search of the path finds it, and a hop met again on another path is said the same way."""
    from types import SimpleNamespace

    from trajdebug.analysis._localize import _inferred_hops, _named

    steps = {s: SimpleNamespace(name=f"n{s}", step_id=f"00000{s}") for s in "abcdz"}
    r = SimpleNamespace(hop_reasons={}, g=SimpleNamespace(steps=steps))

    def searched(path: tuple[str, ...], inferred: list[tuple[str, float]]) -> list[str]:
        out = []
        for sid, conf in inferred:
            at = path.index(sid) if sid in path else -1
            into = f" is in {_named(steps[path[at + 1]])}'s input" if 0 <= at < len(path) - 1 else ""
            out.append(
                f"the path follows an inferred edge (found by content, not recorded): {_named(steps[sid])}'s "
                f"output{into} (confidence {conf:.2f})"
            )
        return out

    cases = [
        (("a", "b", "c", "b", "d"), [("b", 0.5), ("c", 1.0), ("d", 0.25), ("z", 0.9)]),
        (("c", "b", "d"), [("c", 1.0), ("b", 0.5)]),
        (("b", "d"), [("b", 0.5), ("b", 0.75)]),
    ]
    for path, inferred in cases:
        assert _inferred_hops(r, path, inferred) == searched(path, inferred)  # type: ignore[arg-type]
    assert len(r.hop_reasons) == 6  # (c, b, 1.0) and (b, d, 0.5) said once for two paths
