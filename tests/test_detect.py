"""Failure detectors: what they flag, where they say it fired, and what they leave alone."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from tests.builders import cancelled_sibling_run, propagated_error_run

import trajdebug
from trajdebug.analysis._detect import (
    BUILTIN_DETECTORS,
    DetectContext,
    Failure,
    detect,
    fallbacks,
    final_step,
    registered_detectors,
    superseded,
)
from trajdebug.analysis._failures import cut_short, cut_short_steps, group_failures
from trajdebug.analysis._sql import looks_like_sql, schema_from_db, sql_of
from trajdebug.core.model import Dependency, ErrorEvent, ErrorInfo, Run, StageChange, Step
from trajdebug.record.contracts import ContractError, check, contract
from trajdebug.testing import capture_runs, deterministic


def _run(*steps: Step, outcome: str = "success", **kw: Any) -> Run:
    return Run("r", "test", steps=steps, outcome=outcome, **kw)  # type: ignore[arg-type]


def _by(failures: Iterable[Failure], detector: str) -> list[Failure]:
    return [f for f in failures if f.detector == detector]


@pytest.fixture
def sales_db(tmp_path: Path) -> Path:
    """A real SQLite database with one table."""
    path = tmp_path / "sales.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, region TEXT, amount REAL)")
    con.executemany("INSERT INTO orders (region, amount) VALUES (?, ?)", [("east", 1.5), ("west", 2.5)])
    con.commit()
    con.close()
    return path


class TestContentDetectors:
    def test_malformed_json_at_the_final_output(self) -> None:
        """A final output that looks like JSON but does not parse fires at the final step."""
        run = _run(
            Step("a", "ask", "llm", output="fine"), Step("b", "answer", "output", output='{"total": 3,')
        )
        [f] = _by(detect(run), "json")
        assert (f.step_id, f.where, f.signature) == ("b", "final", "json")

    def test_valid_json_and_prose_are_left_alone(self) -> None:
        """Valid JSON and ordinary prose do not fire the JSON detector."""
        run = _run(
            Step("a", "tool", "tool", output='{"ok": [1, 2]}'),
            Step("b", "answer", "output", output="All good."),
        )
        assert _by(detect(run), "json") == []

    def test_a_tool_result_printed_by_python_is_no_malformed_json(self) -> None:
        """A tool's dict printed by ``str`` (the OpenAI Agents SDK records a function tool's result so) is no
        attempt at JSON: no failure; the same text from a model, which should have written JSON, still is one."""
        text = "{'shipment': 'SHP-1102', 'origin': 'GB', 'paid': True, 'note': None}"
        run = _run(
            Step("a", "get_shipment", "tool", output=text),
            Step("m", "extract", "llm", output=text, attributes={"checkpoint": True}),
            Step("b", "answer", "output", output="filed"),
        )
        assert [f.step_id for f in _by(detect(run), "json")] == ["m"]

    def test_declared_json_expectation(self) -> None:
        """A checkpoint declaring ``expect: json`` fires when its output is prose."""
        run = _run(
            Step("a", "extract", "llm", output="Sure! Here it is", attributes={"expect": "json"}),
            Step("b", "out", "output", output="x"),
        )
        [f] = _by(detect(run), "json")
        assert (f.step_id, f.where) == ("a", "checkpoint")

    def test_sql_failing_explain_on_a_real_database_schema(self, sales_db: Path) -> None:
        """SQL naming an unknown column fails EXPLAIN on the schema read from the run's SQLite file."""
        run = _run(
            Step(
                "q",
                "run_sql",
                "tool",
                input={"sql": "SELECT region, SUM(price) FROM orders GROUP BY region"},
                output=[],
            ),
            Step("o", "out", "output", output="done"),
        )
        [f] = _by(detect(run, sql_schema=schema_from_db(sales_db)), "sql")
        assert f.step_id == "q"
        assert "price" in f.message

    def test_sql_syntax_error_without_a_schema(self) -> None:
        """Without a schema only syntax errors count; an unknown table does not."""
        bad = _run(Step("q", "run_sql", "tool", input={"sql": "SELECT region, FROM orders WHERE"}, output=[]))
        unknown_table = _run(
            Step("q", "run_sql", "tool", input={"sql": "SELECT region FROM orders"}, output=[])
        )
        assert len(_by(detect(bad), "sql")) == 1
        assert _by(detect(unknown_table), "sql") == []

    @pytest.mark.parametrize(
        "prose",
        [
            "Replace 12 tiles of the north wall (15 %) on Monday; the grout needs 2 days.",
            "With 3 kilns free, the glaze batch fires at 1,240 C tonight.",
            "Update: the kiln order is confirmed for Friday.",
            "Insert the shelf pins before loading, then close the lid.",
            "Delete this draft once the potter signs off.",
        ],
    )
    def test_prose_that_opens_with_an_sql_keyword_is_not_sql(self, prose: str) -> None:
        """A final answer in prose whose first word is also an SQL verb (Replace, With, Update, Insert,
        Delete) is not SQL, so it is not reported as SQL that does not parse."""
        run = _run(Step("a", "answer", "output", input={"q": "plan"}, output=prose), outcome="failure")
        assert _by(detect(run), "sql") == []

    @pytest.mark.parametrize(
        "stmt",
        [
            "REPLACE INTO kilns (id, temp) VALUES (1, 1240",
            "WITH hot AS (SELECT id FROM kilns WHERE temp > ) SELECT * FROM hot",
            "UPDATE kilns SET temp = WHERE id = 1",
            "INSERT INTO kilns VALUES (1,",
            "DELETE FROM kilns WHERE",
        ],
    )
    def test_broken_statements_of_every_verb_are_still_sql(self, stmt: str) -> None:
        """The SQL verbs that the prose above opens with still read as SQL when the statement's own
        clause follows (INTO, AS (, SET, FROM), so a broken one is still reported."""
        run = _run(Step("q", "run_sql", "tool", input={"sql": stmt}, output=[]))
        assert len(_by(detect(run), "sql")) == 1

    @pytest.mark.parametrize(
        "stmt",
        [
            "UPDATE kilns temp = 1240 WHERE id = 1",
            "UPDATE kilns",
            "DELETE kilns WHERE id = 1",
            "INSERT kilns (id) (1)",
            "REPLACE kilns (id) (1)",
            "WITH hot (SELECT id FROM kilns) SELECT * FROM hot",
        ],
    )
    def test_broken_statements_lacking_their_clause_under_an_sql_key_are_sql(self, stmt: str) -> None:
        """A statement a tool receives under an SQL key is SQL by its verb alone, so one that lacks the clause
        its verb needs (SET, FROM, INTO, AS) is reported as SQL that does not parse."""
        run = _run(Step("q", "run_sql", "tool", input={"sql": stmt}, output={"rows": 0}))
        assert len(_by(detect(run), "sql")) == 1

    @pytest.mark.parametrize(
        "stmt",
        [
            "WITH hot AS MATERIALIZED (SELECT id FROM kilns) SELECT * FROM hot",
            "WITH hot AS NOT MATERIALIZED (SELECT id FROM kilns) SELECT * FROM hot",
            "UPDATE OR IGNORE kilns SET temp = 1240",
            'DELETE FROM "old kilns";',
            "INSERT INTO kilns DEFAULT VALUES",
        ],
    )
    def test_valid_statements_in_bare_text_are_sql(self, stmt: str) -> None:
        """A valid statement an LLM writes as bare text reads as SQL by the words after its verb, including
        ``AS [NOT] MATERIALIZED (`` and quoted names."""
        assert looks_like_sql(stmt)
        assert sql_of(stmt) == stmt

    @pytest.mark.parametrize(
        "prose",
        [
            "Update: set the glaze kiln to 1,240 C tonight.",
            "Insert the spare shelf into kiln 2 and set it to 1,240 C.",
            "Delete the old firing schedule from the controller; kiln 2 goes to 1,240 C.",
            "Delete from the log every firing older than a week.",
            "Insert into kiln 2 the spare shelf.",
            "With that as a baseline, the glaze fires on Friday.",
            "Update the kiln timer: set it to 6 hours.",
        ],
    )
    def test_prose_with_set_into_or_from_after_an_sql_verb_is_not_sql(self, prose: str) -> None:
        """Prose that opens with an SQL verb and says "set", "into", "from" or "as" further on is not SQL:
        only the words right after the verb make a statement."""
        run = _run(Step("a", "answer", "output", input={"q": "plan"}, output=prose), outcome="failure")
        assert _by(detect(run), "sql") == []

    def test_valid_sql_and_ddl_pass(self, sales_db: Path) -> None:
        """A valid query, and DDL describing the schema, do not fire."""
        run = _run(
            Step(
                "s",
                "get_schema",
                "tool",
                input={"table": "orders"},
                output="CREATE TABLE orders (id INTEGER)",
            ),
            Step(
                "q",
                "run_sql",
                "tool",
                input={"sql": "SELECT region FROM orders"},
                output=[{"region": "east"}],
            ),
        )
        assert _by(detect(run, sql_schema=schema_from_db(sales_db)), "sql") == []

    def test_http_error_status_in_a_tool_result(self) -> None:
        """A tool result with status 404 fires; status 200 does not."""
        run = _run(
            Step("a", "fetch", "tool", output={"status_code": 404, "body": "not here"}),
            Step("b", "fetch2", "tool", output={"status_code": 200, "body": "ok"}),
            Step("c", "out", "output", output="x"),
        )
        [f] = _by(detect(run), "http")
        assert (f.step_id, f.message) == ("a", "HTTP status 404")

    def test_http_error_recovered_by_a_retry_is_not_a_failure(self) -> None:
        """A failed attempt that a later attempt recovered is not reported."""
        run = _run(
            Step("a", "fetch", "tool", output={"status": 503}),
            Step("b", "fetch", "tool", output={"status": 200}, attempt=2, retry_of="a"),
        )
        assert _by(detect(run), "http") == []

    def test_empty_result_where_data_was_expected(self) -> None:
        """An empty tool result that a later step consumed fires; an unconsumed one does not."""
        run = _run(
            Step("a", "search", "tool", output={"results": []}),
            Step("b", "probe", "tool", output=[]),
            Step("c", "answer", "llm", output="nothing found", deps=(Dependency("a"),)),
        )
        assert [f.step_id for f in _by(detect(run), "empty")] == ["a"]

    def test_an_empty_lookup_beside_an_error_is_an_observation(self) -> None:
        """Beside a step that raised, an empty lookup consumed later is not a failure of its own; a declared expectation still is."""
        boom = Step("c", "book", "tool", status="error", error=ErrorInfo("Refused", "no"), deps=(Dependency("a"),))
        plain = _run(Step("a", "load_memory", "retrieval", output=[]), boom)
        declared = _run(Step("a", "load_memory", "retrieval", output=[], attributes={"expect": "data"}), boom)
        assert _by(detect(plain), "empty") == []
        assert [f.step_id for f in _by(detect(declared), "empty")] == ["a"]

    def test_an_empty_final_output_of_a_run_that_raised_is_no_second_failure(self) -> None:
        """The root agent of a run that raised returns nothing: that is the raise's consequence; an empty final answer of a run that did not raise is a failure."""
        raised = _run(
            Step("r", "agent", "agent", output=None),
            Step("t", "close", "tool", parent_id="r", status="error", error=ErrorInfo("ToolError", "cannot close")),
        )
        silent = _run(Step("r", "agent", "agent", output=None), Step("t", "close", "tool", parent_id="r", output="ok"))
        assert _by(detect(raised), "empty") == []
        assert [f.step_id for f in _by(detect(silent), "empty")] == ["r"]

    @pytest.mark.parametrize(
        "output",
        [
            'Traceback (most recent call last):\n  File "x.py", line 1\nZeroDivisionError: division by zero',
            "Error: permission denied",
            {"stdout": "", "exit_code": 2},
            "command failed with exit code 127",
        ],
    )
    def test_error_text_in_a_tool_result(self, output: Any) -> None:
        """Tracebacks, ``Error:`` lines and non-zero exit codes in a tool result fire."""
        run = _run(Step("a", "shell", "tool", output=output), Step("b", "out", "output", output="x"))
        assert [f.step_id for f in _by(detect(run), "error-text")] == ["a"]

    def test_clean_exit_is_not_error_text(self) -> None:
        """Exit code 0 and ordinary text are not errors."""
        run = _run(Step("a", "shell", "tool", output={"stdout": "3 files", "exit_code": 0}))
        assert _by(detect(run), "error-text") == []


class TestStepAndRunFailures:
    def test_error_is_reported_where_it_occurred(self) -> None:
        """An error passed up through an agent step is reported once, at the innermost step."""
        err = ErrorInfo("KeyError", "'x'", error_id="e1")
        run = _run(
            Step("ag", "agent", "agent", status="error", error=err),
            Step("c", "compute", parent_id="ag", status="error", error=err),
            outcome="failure",
        )
        [f] = _by(detect(run), "step-error")
        assert (f.step_id, f.signature) == ("c", "exception:KeyError")

    def test_recovered_errors_are_not_failures(self) -> None:
        """An error whose lifecycle ended recovered is not a failure."""
        ev = ErrorEvent(
            "e1",
            "a",
            "Timeout",
            "slow",
            stages=(StageChange("occurred", "a", 1), StageChange("recovered", "b", 2)),
        )
        run = _run(
            Step("a", "call", status="error", error=ErrorInfo("Timeout", "slow", "e1")),
            Step("b", "call"),
            errors=(ev,),
        )
        assert _by(detect(run), "step-error") == []

    def test_an_error_inside_a_sub_agent_run_again_cleanly_is_recovered(self) -> None:
        """A tool that timed out inside a sub-agent, which failed with it and was run again to a clean end
        (its new tool call under the new run), was handled: neither error is a failure."""
        run = _run(
            Step("g", "graph", "agent"),
            Step("a1", "assess", "agent", parent_id="g", input={"dma": "DMA-11"}, status="error"),
            Step(
                "t1",
                "get_pressure",
                "tool",
                parent_id="a1",
                input={"dma": "DMA-11"},
                status="error",
                error=ErrorInfo("ScadaTimeout", "no answer for DMA-11"),
            ),
            Step("a2", "assess", "agent", parent_id="g", input={"dma": "DMA-11"}),
            Step("t2", "get_pressure", "tool", parent_id="a2", input={"dma": "DMA-11"}, output={"kpa": 32}),
            Step("d", "dispatch", "tool", parent_id="g", input={"valves": ["V-1"]}),
        )
        assert _by(detect(run), "step-error") == []

    def test_failed_run_without_errors_points_at_the_final_output(self) -> None:
        """A run that failed with no errored step is a failure of its final output step."""
        run = _run(
            Step("a", "plan", "llm"),
            Step("b", "answer", "output", output="42"),
            outcome="failure",
            failure_reason="wrong answer",
        )
        [f] = _by(detect(run), "run-failure")
        assert (f.step_id, f.message, f.where) == ("b", "wrong answer", "run")

    def test_run_failure_is_not_repeated_where_a_step_failed(self) -> None:
        """The run's failure adds nothing where the failing step already has a step-error failure."""
        run = _run(
            Step("a", "compute", status="error", error=ErrorInfo("ValueError", "bad")), outcome="failure"
        )
        assert [f.detector for f in detect(run)] == ["step-error"]

    def test_final_step_prefers_marked_then_output_then_root(self) -> None:
        """The final step is the marked one, else the last output step, else the single root."""

        def final_id(run: Run) -> str | None:
            s = final_step(run)
            return None if s is None else s.step_id

        assert final_id(_run(Step("a", "x", "output"), Step("b", "y", attributes={"final": True}))) == "b"
        assert final_id(_run(Step("a", "x", "output"), Step("b", "y"))) == "a"
        assert final_id(_run(Step("r", "root", "agent"), Step("c", "child", parent_id="r"))) == "r"
        assert final_step(_run()) is None


class TestContracts:
    def test_recorded_checks_become_failures_with_their_moment(self) -> None:
        """Checks recorded by check() and contract() on a real recorded step fire where they failed."""

        @trajdebug.step(kind="tool")
        @contract(
            pre={"is a select": lambda sql: sql.upper().startswith("SELECT")},
            post={"has rows": lambda rows: len(rows) > 0},
        )
        def run_sql(sql: str) -> list[Any]:
            check("connection open", True)
            return []

        with deterministic(), capture_runs() as runs, trajdebug.run("contracts"):
            run_sql("DELETE FROM orders")
        [step] = runs[0].steps
        checks = step.attributes["checks"]
        assert [(c["name"], c["passed"], c["when"]) for c in checks] == [
            ("is a select", False, "pre"),
            ("connection open", True, "checkpoint"),
            ("has rows", False, "post"),
        ]
        failures = _by(detect(runs[0]), "contract")
        assert [(f.where, f.step_id) for f in failures] == [("pre", step.step_id), ("post", step.step_id)]

    def test_strict_check_raises_and_crashing_condition_fails(self) -> None:
        """strict=True raises ContractError; a condition that raises is a failed check, even outside a step."""
        assert check("fine", lambda: True) is True
        assert check("crashes", lambda: 1 / 0) is False
        with pytest.raises(ContractError, match="must hold"):
            check("must hold", False, strict=True)
        with pytest.raises(ValueError, match="when"):
            check("x", True, when="later")  # type: ignore[arg-type]

    def test_strict_contract_stops_before_the_call(self) -> None:
        """A strict pre-condition raises before the wrapped function runs."""
        calls: list[int] = []

        @contract(pre=lambda n: n > 0, strict=True)
        def f(n: int) -> int:
            calls.append(n)
            return n

        with pytest.raises(ContractError):
            f(-1)
        assert f(2) == 2
        assert calls == [2]


class TestRegistry:
    def test_builtin_detectors_are_registered(self) -> None:
        """Every built-in detector is available by name."""
        assert set(BUILTIN_DETECTORS) <= set(registered_detectors())
        assert {"run-failure", "step-error", "contract", "json", "sql", "http", "empty", "error-text"} == set(
            BUILTIN_DETECTORS
        )

    def test_custom_detectors_replace_the_defaults(self) -> None:
        """A plain callable passed as a detector runs instead of the built-ins."""

        def long_output(run: Run, ctx: DetectContext) -> Iterable[Failure]:
            for s in run.steps:
                if isinstance(s.output, str) and len(s.output) > 10:
                    yield Failure(s.step_id, "long", "output too long", "long")

        run = _run(
            Step("a", "x", output="short"), Step("b", "y", output="far too long for this"), outcome="failure"
        )
        assert [(f.step_id, f.detector) for f in detect(run, [long_output])] == [("b", "long")]


class TestHandledErrors:
    def test_error_the_agent_fixed_by_calling_again_is_not_a_failure(self) -> None:
        """A tool error followed, in the same scope, by a clean call on the same target is handled."""
        err = ErrorInfo("ToolErrorPayload", "AssertionError: f() returned the wrong value")
        test = {"test_id": "tests/test_x.py::test_f"}
        run = _run(
            Step("a", "run_test", "tool", input=test, status="error", error=err, start_ns=1, end_ns=2),
            Step(
                "p",
                "write_patch",
                "llm",
                input={"error": err.message},
                output="--- patch",
                start_ns=3,
                end_ns=4,
            ),
            Step("b", "run_test", "tool", input=test, output={"status": "passed"}, start_ns=5, end_ns=6),
            outcome="failure",
        )
        assert _by(detect(run), "step-error") == []

    def test_error_on_another_target_still_counts(self) -> None:
        """A clean call on a different target does not handle the error."""
        err = ErrorInfo("ToolErrorPayload", "AssertionError: f() returned the wrong value")
        run = _run(
            Step(
                "a",
                "run_test",
                "tool",
                input={"test_id": "tests/test_x.py::test_f"},
                status="error",
                error=err,
                start_ns=1,
                end_ns=2,
            ),
            Step(
                "b",
                "run_test",
                "tool",
                input={"test_id": "tests/test_y.py::test_g"},
                output={"status": "passed"},
                start_ns=3,
                end_ns=4,
            ),
            outcome="failure",
        )
        assert [f.step_id for f in _by(detect(run), "step-error")] == ["a"]


class TestFallbacks:
    def test_an_errored_call_answered_by_the_next_call_of_another_tool_on_the_same_target_fell_back(self) -> None:
        """The next clean tool call in the same scope, of another name, sharing a string argument, whose answer
        went on, is the fallback; a call in another scope, on other targets, of the same name (a retry), or whose
        answer nothing took (a logger after the error) is not."""
        run = _run(
            Step("e1", "fetch_rates", "tool", input={"pair": "EUR/GBP"}, status="error"),
            Step("f1", "cached_rates", "tool", input={"pair": "EUR/GBP"}, output={"rate": 0.86}),
            Step("u1", "convert", "other", input={"amount": 120, "rate": 0.86}, output=103.2),
            Step("e5", "reserve_stock", "tool", input={"order": "O-1001"}, status="error"),
            Step("l5", "log_event", "tool", input={"order": "O-1001", "event": "timeout"}, output={"logged": True}),
            Step("n5", "notify", "tool", input={"channel": "ops"}, output="sent"),
            Step("e2", "fetch_rates", "tool", input={"pair": "USD/JPY"}, status="error"),
            Step("x", "fetch_news", "tool", input={"topic": "markets"}, output=["..."]),
            Step("e3", "fetch_rates", "tool", input={"pair": "CHF/SEK"}, status="error", parent_id="n"),
            Step("f3", "cached_rates", "tool", input={"pair": "CHF/SEK"}, output={"rate": 11.9}, parent_id="m"),
            Step("e4", "fetch_rates", "tool", input={"pair": "NOK/DKK"}, status="error"),
            Step("r4", "fetch_rates", "tool", input={"pair": "NOK/DKK"}, output={"rate": 0.64}),
        )
        assert {k: v.step_id for k, v in fallbacks(run).items()} == {"e1": "f1"}

    def test_a_call_handed_the_errored_calls_answer_used_it_and_is_no_fallback(self) -> None:
        """A tool that warned yet returned, whose answer the next call of another tool on the same target depends on,
        was used, not replaced: the next call is no fallback, unlike one that asked elsewhere in its place."""
        warned = Step("w1", "open_index", "tool", input={"topic": "billing"}, output={"topic": "billing", "size": 7},
                      status="error", error=ErrorInfo("Warning", "index is old"))
        used = Step("s1", "search", "retrieval", input={"index": {"topic": "billing", "size": 7}, "q": "billing fee"},
                    output=["fee: 3 EUR"], deps=(Dependency("w1", key="index"),))
        fell = Step("s2", "search", "retrieval", input={"topic": "billing", "q": "billing fee"}, output=["fee: 3 EUR"])
        after = Step("a1", "answer", "llm", input={"chunks": ["fee: 3 EUR"]}, output="3 EUR")
        assert fallbacks(_run(warned, used, after)) == {}
        assert {k: v.step_id for k, v in fallbacks(_run(warned, fell, after)).items()} == {"w1": "s2"}

    def test_a_call_started_while_the_failed_call_still_ran_is_no_fallback(self) -> None:
        """A clean call on the same target that started before the errored call ended (parallel calls asked for
        together, before the error was known) answered its own request; one started after the error is the
        fallback."""
        run = _run(
            Step("e1", "get_record", "tool", input={"id": "K-17"}, status="error", start_ns=100, end_ns=300),
            Step("p1", "check_licence", "tool", input={"id": "K-17"}, output={"licence": "L-9"}, start_ns=150, end_ns=320),
            Step("u1", "file", "tool", input={"licence": "L-9"}, output="ok", start_ns=400, end_ns=450),
            Step("e2", "get_record", "tool", input={"id": "K-18"}, status="error", start_ns=500, end_ns=600),
            Step("f2", "cached_record", "tool", input={"id": "K-18"}, output={"owner": "Ames"}, start_ns=610, end_ns=650),
            Step("u2", "file", "tool", input={"owner": "Ames"}, output="ok", start_ns=700, end_ns=750),
        )
        assert {k: v.step_id for k, v in fallbacks(run).items()} == {"e2": "f2"}


class TestSuperseded:
    def test_an_error_is_superseded_only_by_a_later_clean_run_on_a_shared_target(self) -> None:
        """An errored call is handled when a later clean call of the same name acts on one of its targets;
        a clean call before it, a later one on other targets, or a later one that errored again is no re-run."""
        run = _run(
            Step("c0", "test", "tool", input={"id": "t-alpha"}, output="passed"),
            Step("e1", "test", "tool", input={"id": "t-alpha"}, status="error"),
            Step("e2", "test", "tool", input={"id": "t-beta"}, status="error"),
            Step("e3", "test", "tool", input={"id": "t-gamma"}, status="error"),
            Step("c1", "test", "tool", input={"id": "t-beta", "retry": "yes"}, output="passed"),
            Step("e4", "test", "tool", input={"id": "t-gamma"}, status="error"),
        )
        assert superseded(run) == {"e2"}

    def test_calls_without_targets_supersede_each_other(self) -> None:
        """An errored call with no string arguments is handled by a later clean call with none, not by one with some."""
        run = _run(
            Step("e1", "run", "tool", input={"n": 1}, status="error"),
            Step("c1", "run", "tool", input={"path": "/tmp/x"}, output="done"),
            Step("e2", "run", "tool", input={}, status="error"),
            Step("c2", "run", "tool", input={"n": 2}, output="done"),
            Step("e3", "run", "tool", input={"n": 3}, status="error"),
        )
        assert superseded(run) == {"e1", "e2"}



def test_cut_short_is_a_sibling_that_ended_empty_after_the_failing_error() -> None:
    """Beside a tool that raised at t=50 and failed the run, a parallel call ending empty at t=70 was cut short;
    one ending empty at t=40, one that returned a value, and the agent enclosing the error were not."""
    err = ErrorInfo("ValueError", "cannot adjust")
    steps = {
        s.step_id: s
        for s in (
            Step("a", "agent", "agent", status="error", error=err, start_ns=0, end_ns=100),
            Step("x", "set", "tool", parent_id="a", status="error", error=err, start_ns=45, end_ns=50),
            Step("late", "call", "tool", parent_id="a", start_ns=10, end_ns=70),
            Step("early", "call", "tool", parent_id="a", start_ns=10, end_ns=40),
            Step("done", "call", "tool", parent_id="a", output={"ok": 1}, start_ns=10, end_ns=70),
        )
    }
    failures = [Failure("x", "step-error", "cannot adjust", "x"), Failure("a", "step-error", "cannot adjust", "x")]
    assert [k for k, s in steps.items() if cut_short(s, steps, failures)] == ["late"]
    assert not cut_short(steps["late"], steps, failures[1:])  # the agent's error ends after all it encloses


def test_cut_short_steps_are_the_steps_cut_short_reads_as_cancelled() -> None:
    """`cut_short_steps` marks the run's steps `cut_short` would (the parallel call ending empty after the failing
    error, not the one that returned nothing before it); the same run with no error has none."""
    run = cancelled_sibling_run()
    steps, failures = run.step_map(), detect(run)
    assert cut_short_steps(run) == {k for k, s in steps.items() if cut_short(s, steps, failures)} == {"slow"}
    clean = Run(run.run_id, run.name, steps=tuple(Step(s.step_id, s.name, s.kind, s.parent_id, start_ns=s.start_ns,
                                                       end_ns=s.end_ns) for s in run.steps))
    assert cut_short_steps(clean) == frozenset()


def test_group_failures_puts_an_exceptions_propagations_under_where_it_occurred() -> None:
    """Four step errors of one exception (one error id) group under the innermost, which ended first, its
    propagations innermost first; a failure of another detector stands alone."""
    run = propagated_error_run()
    steps = run.step_map()
    extra = Failure("ask", "json", "not JSON", "json", "post")
    groups = group_failures([*detect(run), extra], steps)
    assert [(g.failure.step_id, [p.step_id for p in g.propagated]) for g in groups] == [
        ("look", ["sub", "as_tool", "caller"]),
        ("ask", []),
    ]
