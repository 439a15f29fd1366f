"""Error lifecycle: occurrence, propagation, retries, stages, influence, chains and severity."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

import trajdebug
from trajdebug.core.lifecycle.analyze import ErrorReport, analyze_errors
from trajdebug.core.lifecycle.forest import ANALYSIS_PREFIX
from trajdebug.core.lifecycle.severity import RULE_BY_NAME
from trajdebug.core.model import Dependency, ErrorEvent, ErrorInfo, Run, StageChange, Step, StepKind
from trajdebug.testing import capture_runs, deterministic


def record(body: Callable[[Any], Any], name: str = "t") -> Run:
    """Run ``body(run_handle)`` inside a recorded run (swallowing its exception) and return the run."""
    with deterministic(), capture_runs() as runs:
        try:
            with trajdebug.run(name) as h:
                body(h)
        except Exception:  # noqa: BLE001 - the failure is what the test is about
            pass
    assert len(runs) == 1
    return runs[0]


def by_name(run: Run, name: str) -> list[Step]:
    return [s for s in run.steps if s.name == name]


def rules(report: ErrorReport, chain: int = 0) -> set[str]:
    return {h.rule for h in report.chains[chain].reasons}


class TestOccurrence:
    def test_four_nested_steps_are_one_error_with_a_propagation_path(self) -> None:
        """An exception passing through four nested steps is one error whose path names the four steps."""

        @trajdebug.step
        def l4() -> None:
            raise ValueError("deep")

        @trajdebug.step
        def l3() -> None:
            l4()

        @trajdebug.step
        def l2() -> None:
            l3()

        @trajdebug.step
        def l1() -> None:
            l2()

        run = record(lambda h: l1())
        assert len(run.errors) == 1
        err = run.errors[0]
        ids = {n: by_name(run, n)[0].step_id for n in ("l1", "l2", "l3", "l4")}
        assert err.step_id == ids["l4"]
        assert [c.stage for c in err.stages] == [
            "occurred",
            "propagated",
            "propagated",
            "propagated",
            "failed",
        ]
        assert [c.step_id for c in err.stages[1:4]] == [ids["l3"], ids["l2"], ids["l1"]]
        assert {s.error.error_id for s in run.steps if s.error} == {err.error_id}
        report = analyze_errors(run)
        assert len(report.errors) == 1
        assert report.errors[0].path == (ids["l4"], ids["l3"], ids["l2"], ids["l1"])
        assert report.errors[0].stage == "failed"
        assert len(report.chains) == 1 and report.chains[0].critical

    def test_three_raise_from_wraps_are_one_chain_of_three(self) -> None:
        """Wrapping an exception three times with ``raise ... from`` gives one chain: root, two wrappers, in order."""

        @trajdebug.step
        def fetch() -> None:
            raise KeyError("id")

        @trajdebug.step
        def load() -> None:
            try:
                fetch()
            except KeyError as e:
                raise LookupError("record missing") from e

        @trajdebug.step
        def serve() -> None:
            try:
                load()
            except LookupError as e:
                raise RuntimeError("cannot serve") from e

        run = record(lambda h: serve())
        report = analyze_errors(run)
        assert [e.type for e in report.errors] == ["KeyError", "LookupError", "RuntimeError"]
        assert len(report.chains) == 1
        chain = report.chains[0]
        assert chain.error_ids == tuple(e.error_id for e in report.errors)
        assert chain.links == ("cause", "cause")
        assert chain.critical
        assert chain.origin_step == by_name(run, "fetch")[0].step_id
        assert report.errors[0].severity == "CRITICAL"
        assert {e.severity for e in report.errors[1:]} == {"ERROR"}
        assert "origin-differs-from-final" in rules(report)

    def test_raised_while_handling_links_the_context(self) -> None:
        """An exception raised inside an ``except`` block without ``from`` has the handled error as parent."""

        @trajdebug.step
        def parse() -> None:
            raise ValueError("bad json")

        @trajdebug.step
        def step2() -> None:
            try:
                parse()
            except ValueError:
                raise TypeError("no config") from None

        run = record(lambda h: step2())
        first, second = run.errors
        assert second.parent_error_id == first.error_id

    def test_a_saved_exception_raised_again_elsewhere_is_a_new_error(self) -> None:
        """The same exception object raised in an unrelated later step is a new error caused by the first."""
        saved: list[Exception] = []

        @trajdebug.step
        def a() -> None:
            raise ValueError("once")

        @trajdebug.step
        def b() -> None:
            raise saved[0]

        def body(h: Any) -> None:
            try:
                a()
            except ValueError as e:
                saved.append(e)
            b()

        run = record(body)
        first, second = run.errors
        assert first.step_id == by_name(run, "a")[0].step_id
        assert second.step_id == by_name(run, "b")[0].step_id
        assert second.parent_error_id == first.error_id
        assert second.attributes.get("reraised") is True
        assert "propagated" not in [c.stage for c in first.stages]

    def test_reported_errors_and_tool_error_payloads_count(self) -> None:
        """``s.error(...)`` and a tool result flagged as an error are errors, though nothing was raised."""

        @trajdebug.step(kind="tool")
        def api() -> dict[str, Any]:
            return {"is_error": True, "error": "quota exceeded"}

        def body(h: Any) -> None:
            with trajdebug.step("check") as s:
                s.error("total is negative", type="CheckFailed")
            api()

        run = record(body)
        assert run.outcome == "success"
        kinds = {e.type: e for e in run.errors}
        assert set(kinds) == {"CheckFailed", "ToolErrorPayload"}
        assert kinds["CheckFailed"].attributes.get("reported") is True
        assert kinds["ToolErrorPayload"].message == "quota exceeded"
        report = analyze_errors(run)
        assert all(e.reported for e in report.errors)
        assert all(e.severity == "WARN" for e in report.errors)

    def test_fallback_records_an_exception_handled_inside_the_step_as_ignored(self) -> None:
        """An exception caught in the step's own body and replaced by ``s.fallback`` is one ignored error."""

        def body(h: Any) -> None:
            with trajdebug.step("parse") as s:
                try:
                    json.loads("{not json")
                except ValueError:
                    s.fallback({}, "empty config")

        run = record(body)
        (err,) = run.errors
        assert err.type == "JSONDecodeError"
        assert [c.stage for c in err.stages] == ["occurred", "ignored"]
        assert err.stages[-1].reason == "empty config"
        report = analyze_errors(run)
        assert report.errors[0].stage == "ignored" and report.errors[0].severity == "WARN"

    def test_fallback_after_a_child_error_ignores_only_open_errors(self) -> None:
        """A fallback ignores the child's error but leaves an error already recovered by a retry alone."""
        calls = {"n": 0}

        @trajdebug.retry(attempts=2)
        @trajdebug.step(kind="tool")
        def flaky() -> int:
            calls["n"] += 1
            if calls["n"] == 1:
                raise TimeoutError("slow")
            return 1

        @trajdebug.step
        def broken() -> None:
            raise ValueError("broken")

        def body(h: Any) -> None:
            with trajdebug.step("parent") as s:
                flaky()
                try:
                    broken()
                except ValueError:
                    s.fallback(0)

        run = record(body)
        stages = {e.type: [c.stage for c in e.stages] for e in run.errors}
        assert stages == {"TimeoutError": ["occurred", "recovered"], "ValueError": ["occurred", "ignored"]}


class TestRetries:
    def test_two_failed_attempts_and_a_success_are_two_recovered_errors_and_no_failure(self) -> None:
        """Two failures then a success: two recovered WARN errors, no failure, the retry reason kept."""
        calls = {"n": 0}

        @trajdebug.retry(attempts=3, reason="policy: retry timeouts")
        @trajdebug.step(kind="tool")
        def fetch() -> str:
            calls["n"] += 1
            if calls["n"] < 3:
                raise TimeoutError(f"timeout {calls['n']}")
            return "ok"

        run = record(lambda h: fetch())
        assert run.outcome == "success"
        attempts = by_name(run, "fetch")
        assert [s.attempt for s in attempts] == [1, 2, 3]
        assert [s.retry_of for s in attempts] == [None, attempts[0].step_id, attempts[1].step_id]
        report = analyze_errors(run)
        assert [e.stage for e in report.errors] == ["recovered", "recovered"]
        assert {e.severity for e in report.errors} == {"WARN"}
        assert all(e.retry_reason == "policy: retry timeouts" for e in report.errors)
        assert not report.critical_chains()
        assert all(
            c.step_id == attempts[2].step_id
            for e in report.errors
            for c in e.stages
            if c.stage == "recovered"
        )

    def test_all_attempts_failing_end_failed_with_retries_exhausted(self) -> None:
        """When every attempt fails, every attempt's error is failed, ERROR or CRITICAL, in one critical chain."""

        @trajdebug.retry(attempts=3)
        @trajdebug.step(kind="tool")
        def fetch() -> str:
            raise ConnectionError("down")

        run = record(lambda h: fetch())
        assert run.outcome == "failure"
        report = analyze_errors(run)
        assert len(report.errors) == 3
        assert {e.stage for e in report.errors} == {"failed"}
        assert {e.severity for e in report.errors} <= {"ERROR", "CRITICAL"}
        assert report.errors[0].severity == "CRITICAL"
        (chain,) = report.chains
        assert chain.critical and chain.links == ("retry", "retry")
        assert {"terminal-failed", "retries-exhausted"} <= rules(report)
        assert chain.score == sum(h.weight for h in chain.reasons)
        analysed = [c for c in report.errors[0].stages if c.reason and c.reason.startswith(ANALYSIS_PREFIX)]
        assert [c.stage for c in analysed] == ["failed"]

    def test_concurrent_retried_calls_chain_their_own_attempts(self) -> None:
        """Retried calls gathered in asyncio never take each other's attempts as the one they retry."""
        calls: dict[str, int] = {}

        @trajdebug.retry(attempts=3)
        @trajdebug.step(kind="tool")
        async def fetch(key: str, delay: float) -> str:
            calls[key] = calls.get(key, 0) + 1
            await asyncio.sleep(delay)
            if calls[key] < 2:
                raise TimeoutError(key)
            return key

        async def main(h: Any) -> None:
            await asyncio.gather(fetch("a", 0.002), fetch("b", 0.006))

        run = record(lambda h: asyncio.run(main(h)))
        steps = run.step_map()
        for s in by_name(run, "fetch"):
            if s.retry_of is not None:
                assert steps[s.retry_of].input == {**s.input}
        assert [e.stage for e in analyze_errors(run).errors] == ["recovered", "recovered"]

    def test_hand_written_loop_keeps_the_models_reason(self) -> None:
        """``attempt=`` / ``retry_of=`` steps recover the earlier attempt's error and keep the stated reason."""

        def body(h: Any) -> None:
            prev = None
            for n in (1, 2):
                attrs = {"retry_reason": "model: the answer was not valid JSON"} if n > 1 else None
                with trajdebug.step("ask", kind="llm", attempt=n, retry_of=prev, attributes=attrs) as s:
                    if n == 1:
                        s.error("not JSON", type="ParseError")
                    s.output = "{}"
                prev = s

        run = record(body)
        report = analyze_errors(run)
        (err,) = report.errors
        assert err.stage == "recovered"
        assert err.retry_reason == "model: the answer was not valid JSON"

    def test_payload_error_inside_a_retried_attempt_is_recovered_by_the_analysis(self) -> None:
        """A tool error payload inside an attempt that a later attempt retried successfully ends recovered."""

        @trajdebug.step(kind="tool")
        def api(n: int) -> dict[str, Any]:
            return {"ok": False, "error": "busy"} if n == 1 else {"ok": True, "result": 4}

        def body(h: Any) -> None:
            with trajdebug.step("try1", attempt=1) as a1:
                api(1)
            with trajdebug.step("try2", attempt=2, retry_of=a1):
                api(2)

        run = record(body)
        # The payload error sits on the inner tool step; the attempts enclose it.
        (err,) = analyze_errors(run).errors
        assert err.type == "ToolErrorPayload"
        assert err.step_id == by_name(run, "api")[0].step_id
        assert err.stage == "recovered"
        assert err.stages[-1].step_id == by_name(run, "try2")[0].step_id
        assert err.stages[-1].reason is not None and err.stages[-1].reason.startswith(ANALYSIS_PREFIX)

    def test_retry_step_marks_payload_error_recovered(self) -> None:
        """When the attempts are the tool steps themselves, a later ok attempt recovers the payload error."""

        def body(h: Any) -> None:
            with trajdebug.step("api", kind="tool", attempt=1) as a1:
                a1.output = {"status": "error", "message": "rate limited"}
            with trajdebug.step("api", kind="tool", attempt=2, retry_of=a1) as a2:
                a2.output = {"status": "done", "result": 1}

        run = record(body)
        (err,) = analyze_errors(run).errors
        assert err.stage == "recovered"
        assert err.stages[-1].reason is not None and err.stages[-1].reason.startswith(ANALYSIS_PREFIX)
        assert err.stages[-1].step_id == by_name(run, "api")[1].step_id

    def test_recovered_error_inside_a_failed_outer_attempt_is_not_its_cause(self) -> None:
        """Retries nested in a retried agent: the inner recovered error is not linked to the outer attempt's error."""
        calls = {"inner": 0, "outer": 0}

        @trajdebug.retry(attempts=2)
        @trajdebug.step(kind="tool")
        def inner() -> int:
            calls["inner"] += 1
            if calls["inner"] == 1:
                raise TimeoutError("inner slow")
            return 1

        @trajdebug.retry(attempts=2)
        @trajdebug.step(kind="agent")
        def outer() -> int:
            calls["outer"] += 1
            inner()
            if calls["outer"] == 1:
                raise ValueError("outer check failed")
            return 2

        run = record(lambda h: outer())
        report = analyze_errors(run)
        assert [(e.type, e.stage, e.parent_error_id) for e in report.errors] == [
            ("TimeoutError", "recovered", None),
            ("ValueError", "recovered", None),
        ]
        assert [o.attempt for o in by_name(run, "outer")] == [1, 2]

    def test_reported_then_raised_in_one_step_is_one_chain(self) -> None:
        """A step that reports an error and then raises gives a chain: the report, then the exception."""

        def body(h: Any) -> None:
            with trajdebug.step("validate") as s:
                s.error("total is negative", type="CheckFailed")
                raise ValueError("cannot continue")

        report = analyze_errors(record(body))
        reported, raised = report.errors
        assert (raised.parent_error_id, raised.link) == (reported.error_id, "nested")
        assert report.chains[0].error_ids == (reported.error_id, raised.error_id)

    def test_a_later_attempts_own_answer_does_not_make_the_recovered_error_the_failures_origin(self) -> None:
        """A retry whose second attempt answered, fed into a failure five steps later: the first attempt's error
        stays recovered and WARN, the failure's chain begins at the failure, and the failing step is not in the
        recovered error's blast radius (the answer is the operation's, not the error's: nu26 F2)."""
        calls = {"n": 0}

        @trajdebug.retry(attempts=2)
        @trajdebug.step(kind="tool")
        def fetch() -> dict[str, Any]:
            calls["n"] += 1
            if calls["n"] == 1:
                raise TimeoutError("slow")
            return {"rows": [], "note": "partial result after a timeout"}

        @trajdebug.step(kind="parse")
        def parse(res: dict[str, Any]) -> list[Any]:
            return [*res["rows"], {"total": 0}]

        @trajdebug.step
        def s3(rows: list[Any]) -> dict[str, Any]:
            return {"rows": rows}

        @trajdebug.step
        def report_step(d: dict[str, Any]) -> str:
            raise ValueError("no data to report")

        @trajdebug.step(kind="agent")
        def agent() -> str:
            return report_step(s3(parse(fetch())))

        run = record(lambda h: agent())
        report = analyze_errors(run)
        recovered, failure = report.errors
        assert recovered.stage == "recovered" and recovered.severity == "WARN"
        assert failure.parent_error_id is None and failure.severity == "CRITICAL"
        (chain,) = report.critical_chains()
        assert chain.error_ids == (failure.error_id,)
        assert "degraded-value-flowed" not in {h.rule for h in chain.reasons}
        assert recovered.blast_radius == ()

    def test_a_recovered_retry_inside_an_enclosing_step_is_no_origin_through_that_steps_output(self) -> None:
        """Trees surveyed through ``run.state`` inside one enclosing step, one survey retried and recovered, and a
        booking that fails on the enclosing step's output: the failed attempt returned nothing, so neither the
        enclosing step nor the booking is in its blast radius and the failure's chain begins at the booking."""
        calls = {"n": 0}

        @trajdebug.retry(attempts=3, on=(ConnectionError,))
        @trajdebug.step(kind="tool")
        def survey(tree: str) -> dict[str, Any]:
            calls["n"] += 1
            if calls["n"] == 2:
                raise ConnectionError("survey API: connection reset by peer")
            rec = {"tree": tree, "height": 10 * calls["n"]}
            trajdebug.current_run().state[f"survey:{tree}"] = rec
            return rec

        @trajdebug.step(kind="agent")
        def survey_all(trees: list[str]) -> list[dict[str, Any]]:
            return [survey(t) for t in trees]

        @trajdebug.step(kind="tool")
        def book(records: list[dict[str, Any]]) -> None:
            raise ValueError(f"needs {len(records) + 1} days, the slot holds {len(records)}")

        run = record(lambda h: book(survey_all(["T1", "T2", "T3"])))
        report = analyze_errors(run)
        recovered, failure = report.errors
        assert recovered.stage == "recovered" and recovered.severity == "WARN"
        assert recovered.blast_radius == () and not recovered.touched_state
        (chain,) = report.critical_chains()
        assert chain.error_ids == (failure.error_id,) and chain.origin_step == by_name(run, "book")[0].step_id

    def test_a_retry_whose_last_attempt_failed_stays_the_critical_origin(self) -> None:
        """A survey retried until its attempts ran out, the error escaping the run: its first attempt's error
        begins the critical chain, CRITICAL, with retries-exhausted (recovery needs an attempt that answered)."""

        @trajdebug.retry(attempts=2, on=(ConnectionError,))
        @trajdebug.step(kind="tool")
        def survey(tree: str) -> dict[str, Any]:
            raise ConnectionError("survey API: connection reset by peer")

        @trajdebug.step(kind="tool")
        def estimate(tree: str) -> float:
            trajdebug.current_run().state[f"hours:{tree}"] = 2.0
            return 2.0

        def body(h: Any) -> None:
            estimate("T1")
            survey("T2")

        run = record(body)
        report = analyze_errors(run)
        first, last = report.errors
        assert {first.stage, last.stage} == {"failed"}
        (chain,) = report.critical_chains()
        assert chain.error_ids == (first.error_id, last.error_id) and chain.links == ("retry",)
        assert "retries-exhausted" in {h.rule for h in chain.reasons}
        assert first.severity == "CRITICAL"

    def test_a_fallbacks_stand_in_value_stays_in_the_lineage_of_a_later_failure(self) -> None:
        """An error replaced by ``s.fallback`` whose stand-in value fed a failure is the origin of its chain,
        with degraded-value-flowed: a fallback's value is the error's, unlike a later attempt's answer."""

        def body(h: Any) -> None:
            with trajdebug.step("rates", kind="tool") as r:
                try:
                    raise ConnectionError("fx service 503")
                except ConnectionError:
                    r.fallback({"rate": 1.0}, "default rate")
            with trajdebug.step("convert", deps=[r]):
                raise ValueError("amount off by the exchange rate")

        run = record(body)
        report = analyze_errors(run)
        ignored, failure = report.errors
        assert ignored.stage == "ignored" and failure.parent_error_id == ignored.error_id
        (chain,) = report.critical_chains()
        assert chain.error_ids == (ignored.error_id, failure.error_id)
        assert "degraded-value-flowed" in {h.rule for h in chain.reasons}
        assert ignored.severity == "CRITICAL"

    def test_a_failed_attempts_error_text_handed_to_a_model_links_to_a_failure_the_answer_fed(self) -> None:
        """A hand-written retry loop that puts the failed attempt's error text into the model's messages, the
        second attempt answering: the model's reply, built on the error text, fails a check, and the check's
        error links to the recovered error by data (the text reached the model: rev53b M1)."""
        calls = {"n": 0}

        @trajdebug.step(kind="tool")
        def weather(city: str) -> dict[str, Any]:
            calls["n"] += 1
            if calls["n"] == 1:
                raise ConnectionError("weather API 503: service unavailable for Oslo")
            return {"city": city, "temp_c": 4}

        @trajdebug.step(kind="llm")
        def model(messages: list[dict[str, str]]) -> str:
            return "The weather service is unavailable for Oslo, so I cannot say."

        @trajdebug.step(kind="agent")
        def agent(city: str) -> str:
            msgs = [{"role": "user", "content": f"weather in {city}?"}]
            prev = None
            for n in (1, 2):
                try:
                    with trajdebug.step("weather_call", kind="tool", attempt=n, retry_of=prev) as a:
                        prev = a
                        out = weather(city)
                    msgs.append({"role": "tool", "content": str(out)})
                    break
                except ConnectionError as exc:
                    msgs.append({"role": "tool", "content": f"error: {exc}"})
            return model(msgs)

        @trajdebug.step(kind="tool")
        def check(answer: str) -> None:
            if "unavailable" in answer:
                raise AssertionError("the answer says the service is unavailable")

        run = record(lambda h: check(agent("Oslo")))
        report = analyze_errors(run)
        recovered, failure = report.errors
        assert recovered.stage == "recovered"
        assert (failure.parent_error_id, failure.link) == (recovered.error_id, "data")
        (chain,) = report.critical_chains()
        assert chain.error_ids == (recovered.error_id, failure.error_id)
        assert by_name(run, "model")[0].step_id in recovered.blast_radius
        assert by_name(run, "weather_call")[1].step_id not in recovered.blast_radius

    def test_an_answered_retry_told_the_error_is_still_no_origin_of_what_its_answer_fed(self) -> None:
        """An attempt retried by a model call that is given the failed attempt's error text and answers: the
        model call is the answering attempt, so its answer is the operation's and the failure it fed begins its
        own chain (the error text counts only where it reached a step other than the answer)."""

        def body(h: Any) -> None:
            with trajdebug.step("draft", kind="llm", attempt=1) as a1:
                a1.error("schema check failed: field 'total' missing", type="SchemaError")
            with trajdebug.step("draft", kind="llm", attempt=2, retry_of=a1) as a2:
                a2.input = {"feedback": "schema check failed: field 'total' missing"}
                a2.output = {"total": -3}
            with trajdebug.step("submit", deps=[a2]):
                raise ValueError("total is negative")

        run = record(body)
        report = analyze_errors(run)
        recovered, failure = report.errors
        assert recovered.stage == "recovered" and failure.parent_error_id is None
        assert recovered.blast_radius == ()

    def test_a_payload_errors_output_returned_by_its_enclosing_step_links_to_the_failure_it_fed(self) -> None:
        """An attempt that set a partial output and reported an error, a second attempt answering in full, and
        an enclosing step that returns the first attempt's partial value to a step that fails on it: the
        attempt recorded an output, so its edge into the enclosing step carries the error and the failure
        links to it by data, as `trajdebug analyze`'s inferred graph does (rev53b M2)."""

        @trajdebug.step(kind="agent")
        def collect(city: str) -> dict[str, Any]:
            with trajdebug.step("fetch_prices", kind="tool", attempt=1) as a1:
                partial = {"city": city, "prices": [12.5], "complete": False}
                a1.output = partial
                a1.error("HTTP 206: partial content, 1 of 14 pages", type="PartialContent")
            with trajdebug.step("fetch_prices", kind="tool", attempt=2, retry_of=a1) as a2:
                a2.output = {"city": city, "prices": [12.5] * 14, "complete": True}
            return partial

        @trajdebug.step(kind="tool")
        def budget(d: dict[str, Any]) -> float:
            raise ValueError(f"budget needs 14 nights, got {len(d['prices'])}")

        run = record(lambda h: budget(collect("Lyon")))
        report = analyze_errors(run)
        recovered, failure = report.errors
        assert recovered.stage == "recovered"
        assert (failure.parent_error_id, failure.link) == (recovered.error_id, "data")
        assert by_name(run, "budget")[0].step_id in recovered.blast_radius
        (chain,) = report.critical_chains()
        assert "degraded-value-flowed" in {h.rule for h in chain.reasons}


class TestStages:
    def test_history_records_the_step_and_time_of_each_transition(self) -> None:
        """Each stage names its step and comes later than the previous one."""

        @trajdebug.step
        def inner() -> None:
            raise OSError("disk")

        @trajdebug.step
        def outer() -> None:
            inner()

        run = record(lambda h: outer())
        (err,) = analyze_errors(run).errors
        times = [c.time_ns for c in err.stages]
        assert times == sorted(times) and len(set(times)) == len(times)
        assert [c.step_id for c in err.stages[:2]] == [
            by_name(run, "inner")[0].step_id,
            by_name(run, "outer")[0].step_id,
        ]

    def test_open_error_consumed_downstream_in_a_failed_run_is_silently_propagated(self) -> None:
        """An error caught and papered over, whose result fed a later step of a failed run, is flagged."""

        @trajdebug.step(kind="tool")
        def tool() -> None:
            raise ConnectionError("down")

        @trajdebug.step(kind="agent")
        def sub() -> dict[str, str]:
            try:
                tool()
            except ConnectionError:
                pass
            return {"data": "stale cached data from yesterday"}

        @trajdebug.step
        def use(d: dict[str, str]) -> str:
            return d["data"] + "!"

        def body(h: Any) -> None:
            with trajdebug.step("main", kind="agent"):
                use(sub())
            h.fail("the answer used stale data")

        run = record(body)
        (err,) = analyze_errors(run).errors
        assert err.silently_propagated
        assert err.stage == "failed"
        assert by_name(run, "use")[0].step_id in err.blast_radius
        assert any("consumed" in r for r in err.reasons)

    def test_caught_error_in_a_successful_run_stays_open_and_warns(self) -> None:
        """A handled error in a run that succeeded keeps its runtime stage and is only a warning."""

        @trajdebug.step
        def probe() -> None:
            raise FileNotFoundError("cache miss")

        def body(h: Any) -> None:
            try:
                probe()
            except FileNotFoundError:
                pass

        run = record(body)
        (err,) = analyze_errors(run).errors
        assert err.stage == "occurred"
        assert err.severity == "WARN"
        assert not err.silently_propagated

    def test_unrecorded_wrapper_escaping_the_run_fails_its_recorded_cause(self) -> None:
        """Wrapping a recorded error outside any step and letting it escape ends the recorded one failed."""

        @trajdebug.step
        def work() -> None:
            raise KeyError("k")

        def body(h: Any) -> None:
            try:
                work()
            except KeyError as e:
                raise RuntimeError("agent crashed") from e

        run = record(body)
        (err,) = run.errors
        assert err.stages[-1].stage == "failed"
        assert err.stages[-1].reason is not None and "RuntimeError" in err.stages[-1].reason

    def test_error_in_a_gathered_asyncio_task_is_one_error_propagating_to_the_parent(self) -> None:
        """An error in a task gathered by the parent step is one error propagated to the parent, then failed."""

        @trajdebug.step(kind="tool")
        async def child(i: int) -> int:
            await asyncio.sleep(0)
            if i == 1:
                raise ValueError("task failed")
            return i

        @trajdebug.step(kind="agent")
        async def parent() -> list[int]:
            return list(await asyncio.gather(child(0), child(1), child(2)))

        run = record(lambda h: asyncio.run(parent()))
        (err,) = run.errors
        failing = [s for s in by_name(run, "child") if s.status == "error"]
        assert [s.input for s in failing] == [{"i": 1}]
        assert err.step_id == failing[0].step_id
        assert [c.stage for c in err.stages] == ["occurred", "propagated", "failed"]
        assert err.stages[1].step_id == by_name(run, "parent")[0].step_id
        report = analyze_errors(run)
        assert report.errors[0].severity == "CRITICAL"


class TestInfluence:
    def test_blast_radius_is_the_forward_slice_of_the_error(self) -> None:
        """The steps downstream of a reported error's step are its blast radius; unrelated steps are not."""

        def body(h: Any) -> None:
            with trajdebug.step("a") as a:
                a.error("suspicious value")
                a.output = "x"
            with trajdebug.step("b", deps=[a]) as b:
                b.output = "y"
            with trajdebug.step("c", deps=[b]) as c:
                c.output = "z"
            with trajdebug.step("unrelated") as u:
                u.output = "w"

        run = record(body)
        (err,) = analyze_errors(run).errors
        assert err.blast_radius == (by_name(run, "b")[0].step_id, by_name(run, "c")[0].step_id)
        assert not err.touched_state

    def test_a_huge_blast_radius_is_cut_to_the_nearest_steps(self) -> None:
        """Past MAX_BLAST steps the radius keeps the nearest ones and says it was cut; state is still seen."""
        from trajdebug.core.lifecycle.analyze import MAX_BLAST

        n = MAX_BLAST + 20
        steps = [Step("s0000", "src", start_ns=1, end_ns=2, status="error")]
        for i in range(1, n):
            kind: StepKind = "state" if i == n - 1 else "other"
            steps.append(
                Step(
                    f"s{i:04d}",
                    "f",
                    kind=kind,
                    start_ns=2 * i + 1,
                    end_ns=2 * i + 2,
                    deps=(Dependency(f"s{i - 1:04d}"),),
                )
            )
        run = Run(
            "r",
            "long",
            outcome="success",
            steps=tuple(steps),
            errors=(ErrorEvent("e1", "s0000", "Bad", "x"),),
        )
        (err,) = analyze_errors(run).errors
        assert err.blast_truncated
        assert err.blast_radius == tuple(f"s{i:04d}" for i in range(1, MAX_BLAST + 1))
        assert err.touched_state

    def test_error_reaching_a_state_write_touched_shared_state(self) -> None:
        """An error whose value is written to shared state downstream touched it, and names the key."""

        @trajdebug.step(kind="tool")
        def lookup() -> dict[str, Any]:
            return {"error": "not found"}

        @trajdebug.step(kind="state")
        def remember(v: dict[str, Any], state: Any) -> None:
            state["last_lookup"] = v

        def body(h: Any) -> None:
            remember(lookup(), h.state)

        run = record(body)
        (err,) = analyze_errors(run).errors
        assert err.touched_state
        assert err.state_keys == ("last_lookup",)

    def test_polluted_state_fires_for_a_failing_chain_through_a_state_write(self) -> None:
        """A chain whose error reached a state write, then failed, gets the polluted-state rule."""

        @trajdebug.step(kind="tool")
        def lookup() -> dict[str, Any]:
            return {"error": "not found"}

        @trajdebug.step(kind="state")
        def remember(v: dict[str, Any], state: Any) -> None:
            state["last"] = v

        @trajdebug.step
        def answer(state: Any) -> str:
            raise ValueError(f"cannot answer from {state['last']}")

        def body(h: Any) -> None:
            remember(lookup(), h.state)
            answer(h.state)

        run = record(body)
        report = analyze_errors(run)
        (chain,) = report.critical_chains()
        assert len(chain.error_ids) == 2
        assert "polluted-state" in {h.rule for h in chain.reasons}

    def test_a_retried_calls_answer_written_to_state_is_not_the_errors_polluted_state(self) -> None:
        """A lookup that raised once and answered on its second attempt, the answer written to state: the
        failed attempt wrote nothing, so its recovered error touched no state and no chain says polluted-state
        (the answer is the operation's own; a wrong one is the ranking's business, not the error's: nu26 F2)."""
        calls = {"n": 0}

        @trajdebug.retry(attempts=3, on=(ConnectionError,))
        @trajdebug.step(kind="tool")
        def fx_rate() -> dict[str, Any]:
            calls["n"] += 1
            if calls["n"] == 1:
                raise ConnectionError("fx service 503")
            return {"rate": 1.0, "source": "fallback"}

        @trajdebug.step(kind="state")
        def remember(v: dict[str, Any], state: Any) -> None:
            state["fx"] = v

        run = record(lambda h: remember(fx_rate(), h.state))
        report = analyze_errors(run)
        (err,) = report.errors
        assert err.stage == "recovered" and not err.touched_state and err.state_keys == ()
        assert not any("polluted-state" in {r.rule for r in c.reasons} for c in report.chains)

    def test_a_failed_attempt_that_wrote_state_before_raising_stays_polluted_state(self) -> None:
        """An attempt that wrote to ``run.state`` and then raised, recovered by its retry, while the state it
        wrote fed the step that failed: a value of the failed attempt itself flowed on, so its error touched
        state, begins the critical chain and says polluted-state."""
        calls = {"n": 0}

        @trajdebug.retry(attempts=2, on=(ConnectionError,))
        @trajdebug.step(kind="tool")
        def survey(tree: str) -> dict[str, Any]:
            calls["n"] += 1
            st = trajdebug.current_run().state
            if calls["n"] == 1:
                st[f"partial:{tree}"] = {"height": None}
                raise ConnectionError("connection reset")
            st[f"survey:{tree}"] = {"height": 12}
            return {"height": 12}

        @trajdebug.step(kind="tool")
        def book() -> None:
            st = trajdebug.current_run().state
            raise ValueError(f"cannot book from {st['partial:T1']}")

        def body(h: Any) -> None:
            survey("T1")
            book()

        run = record(body)
        report = analyze_errors(run)
        recovered, failure = report.errors
        assert recovered.stage == "recovered" and recovered.touched_state
        assert "partial:T1" in recovered.state_keys
        (chain,) = report.critical_chains()
        assert chain.error_ids == (recovered.error_id, failure.error_id)
        assert "polluted-state" in {h.rule for h in chain.reasons}
        assert by_name(run, "book")[0].step_id in recovered.blast_radius


class TestReport:
    def test_critical_chains_come_first(self) -> None:
        """Chains ending in the failure are listed before the others, whatever their order of occurrence."""

        @trajdebug.step
        def early() -> None:
            raise FileNotFoundError("cache miss")

        @trajdebug.step
        def late() -> None:
            raise RuntimeError("fatal")

        def body(h: Any) -> None:
            try:
                early()
            except FileNotFoundError:
                pass
            late()

        run = record(body)
        report = analyze_errors(run)
        assert [c.critical for c in report.chains] == [True, False]
        assert report.chains[0].chain_id == "c1"
        assert report.error(report.chains[0].error_ids[0]).type == "RuntimeError"

    def test_to_dict_is_json_and_carries_every_field(self) -> None:
        """The report's dict survives JSON and has the contracted keys for errors and chains."""

        @trajdebug.step
        def boom() -> None:
            raise ValueError("x")

        report = analyze_errors(record(lambda h: boom()))
        data = json.loads(json.dumps(report.to_dict()))
        assert set(data) >= {"errors", "chains"}
        assert set(data["errors"][0]) >= {
            "error_id",
            "step_id",
            "type",
            "message",
            "parent_error_id",
            "stage",
            "stages",
            "severity",
            "silently_propagated",
            "blast_radius",
            "touched_state",
            "reasons",
        }
        assert set(data["chains"][0]) >= {"error_ids", "critical", "score", "reasons", "origin_step"}
        assert all(r["rule"] in RULE_BY_NAME for r in data["chains"][0]["reasons"])

    def test_imported_run_without_stages_or_known_steps_is_analysed(self) -> None:
        """Errors with no stage history, unknown steps and a cyclic parent pair still give a report."""
        steps = (Step("s1", "tool", kind="tool", start_ns=1, end_ns=2, status="error"),)
        errors = (
            ErrorEvent("e1", "s1", "Timeout", "slow", parent_error_id="e2"),
            ErrorEvent(
                "e2",
                "gone",
                "Oops",
                "lost",
                parent_error_id="e1",
                stages=(StageChange("occurred", "gone", 5),),
            ),
        )
        run = Run("r", "imported", outcome="failure", steps=steps, errors=errors)
        report = analyze_errors(run)
        assert {e.error_id for e in report.errors} == {"e1", "e2"}
        linked = [e for e in report.errors if e.parent_error_id is not None]
        assert len(linked) == 1
        assert sum(len(c.error_ids) for c in report.chains) == 2

    def test_a_run_without_errors_gives_an_empty_report(self) -> None:
        """No errors, no chains."""
        report = analyze_errors(record(lambda h: None))
        assert report.errors == () and report.chains == ()


@pytest.mark.parametrize("fault", ["wrong-column", "bad-sql-filter"])
def test_demo_faults_have_one_critical_chain(fault: str) -> None:
    """Each demo fault's run has exactly one critical chain ending in a failed error."""
    from trajdebug.demo import run_demo
    from trajdebug.record.sinks import MemorySink

    run = run_demo(fault, sinks=[MemorySink()])
    report = analyze_errors(run)
    (chain,) = report.critical_chains()
    assert report.error(chain.error_ids[-1]).stage == "failed"
    if fault == "wrong-column":
        assert "retries-exhausted" in {h.rule for h in chain.reasons}


def test_the_recorder_imports_the_machine_without_the_analysis() -> None:
    """Importing `trajdebug.core.lifecycle.machine` (what the recorder needs at start-up) loads none of
    the hindsight analysis, and every public name of the package still resolves on first use."""
    code = (
        "import sys, trajdebug.core.lifecycle.machine as m\n"
        "assert not any(n in sys.modules for n in ('trajdebug.core.lifecycle.analyze', 'trajdebug.core.graph')), 'eager'\n"
        "import trajdebug.core.lifecycle as lc\n"
        "assert all(getattr(lc, n) is not None for n in lc.__all__)\n"
        "assert lc.fold is m.fold\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


def test_an_exception_caught_outside_any_step_in_a_run_that_ended_is_said_to_be_caught() -> None:
    """A tide-gauge call that raised, caught by the agent's body (which went on with a default), ends at
    `occurred`: its chain says it was caught where no step records it; an error only reported (s.error) is no
    exception caught, and says nothing of the kind."""

    @trajdebug.step(kind="tool")
    def tide_gauge(harbour: str) -> dict[str, float]:
        raise ConnectionError(f"gauge at {harbour} did not answer")

    def body(_run: Any) -> None:
        try:
            tide_gauge("Penmarch")
        except ConnectionError:
            pass
        with trajdebug.step("plan_launch", kind="other") as s:
            s.error("slipway camera offline")

    report = analyze_errors(record(body))
    assert [e.stage for e in report.errors] == ["occurred", "occurred"]
    summaries = {c.summary.split(" at ")[0].split(": ")[1]: c.summary for c in report.chains}
    assert "caught where no step records it" in summaries["ConnectionError"]
    assert "caught" not in summaries["ReportedError"]


@trajdebug.step(kind="tool")
def _kiln_probe(shelf: str) -> dict[str, float]:
    raise TimeoutError(f"kiln probe on shelf {shelf} did not answer")


def test_an_exception_caught_by_a_recorded_enclosing_step_names_that_step() -> None:
    """A probe that raised inside a recorded firing-plan step, which caught it and ended with a default, was
    caught by that step: the chain names it, and never says no step records where it was caught."""

    def body(h: Any) -> None:
        with trajdebug.step("plan_firing", kind="agent") as p:
            try:
                _kiln_probe("top")
            except TimeoutError:
                p.output = {"peak_c": 1200}
        with trajdebug.step("load_kiln", kind="other", input={"peak_c": 1200}) as k:
            k.output = "loaded"
        h.fail("glaze underfired")

    [chain] = analyze_errors(record(body)).chains
    assert "caught in plan_firing#" in chain.summary
    assert "no step records it" not in chain.summary


def test_an_exception_the_body_caught_and_failed_the_run_on_is_not_said_caught() -> None:
    """A probe error the run's body caught and then failed the run with is a failure, not a caught error."""

    def body(h: Any) -> None:
        try:
            _kiln_probe("top")
        except TimeoutError as e:
            h.fail(f"no probe: {e}")

    report = analyze_errors(record(body))
    assert [e.stage for e in report.errors] == ["failed"]
    assert all("caught" not in c.summary for c in report.chains)


def test_an_exception_whose_message_a_later_step_is_handed_is_not_said_caught_unrecorded() -> None:
    """A probe error caught by the body whose message is handed to the next recorded model call was taken up
    by a recorded step: the chain does not say no step records where it was caught."""

    def body(h: Any) -> None:
        msg = ""
        try:
            _kiln_probe("top")
        except TimeoutError as e:
            msg = str(e)
        with trajdebug.step("llm_plan", kind="llm", input={"messages": [{"role": "tool", "content": msg}]}) as m:
            m.output = {"role": "assistant", "content": "fire without the probe"}
        h.fail("glaze underfired")

    [chain] = analyze_errors(record(body)).chains
    assert "caught" not in chain.summary


def test_a_parent_that_ended_before_its_detached_child_raised_is_not_where_it_was_caught() -> None:
    """A sync step that started a background check and returned before the check raised did not catch it: the
    chain does not name it as the step that caught the exception."""
    steps = (
        Step("p", "sync_hives", "agent", start_ns=1, end_ns=2, output="started"),
        Step("c", "check_scale", "tool", parent_id="p", start_ns=3, end_ns=9, status="error",
             error=ErrorInfo("ConnectionError", "scale at hive 4 did not answer")),
        Step("n", "log_weights", "other", start_ns=10, end_ns=11, input={"hive": 4}),
    )
    raised = (ErrorEvent("e1", "c", "ConnectionError", "scale at hive 4 did not answer"),)
    [chain] = analyze_errors(Run("r1", "apiary-sync", 0, 12, "success", steps=steps, errors=raised)).chains
    assert "caught in sync_hives" not in chain.summary
    assert "caught where no step records it" in chain.summary
