"""The recording SDK: runs, steps, nesting across threads and asyncio, sinks, the off switch."""

from __future__ import annotations

import ast
import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest

import trajdebug
from trajdebug.core.jsonl import read_jsonl
from trajdebug.core.model import REDACTED, REPR_KEY, TRUNCATED_KEY, Run
from trajdebug.record import MemorySink
from trajdebug.store import Store


def record(fn: Any, **run_kwargs: Any) -> Run:
    """Run fn inside a recorded run (memory sink) and return the recorded run."""
    sink = MemorySink()
    with trajdebug.run("t", sinks=[sink], **run_kwargs) as handle:
        fn(handle)
    return handle.load()


@trajdebug.step(kind="tool")
def add(a: int, b: int = 1, *rest: int, **opts: Any) -> int:
    return a + b + sum(rest)


class TestSteps:
    def test_decorator_binds_arguments_to_parameter_names(self) -> None:
        """A decorated call records its arguments by parameter name and its return value."""
        run = record(lambda h: add(1, 2, 3, 4, scale=2))
        (s,) = run.steps
        assert s.input == {"a": 1, "b": 2, "rest": [3, 4], "scale": 2}
        assert s.output == 10
        assert (s.name, s.kind, s.status) == ("add", "tool", "ok")
        assert s.end_ns is not None and s.end_ns >= s.start_ns

    def test_context_manager_records_output_and_nesting(self) -> None:
        """`with step(...) as s` records s.output, and inner steps get the outer as parent."""

        def body(h: Any) -> None:
            with trajdebug.step("outer", kind="agent") as outer:
                with trajdebug.step("inner", kind="parse", input="raw") as inner:
                    inner.output = {"k": 1}
                outer.output = "done"

        run = record(body)
        outer, inner = run.steps
        assert inner.parent_id == outer.step_id
        assert (inner.input, inner.output) == ("raw", {"k": 1})
        assert outer.output == "done"

    def test_exception_marks_step_error_and_reraises(self) -> None:
        """An exception sets status error with its type and message and still reaches the caller."""

        @trajdebug.step
        def boom() -> None:
            raise KeyError("missing")

        def body(h: Any) -> None:
            with pytest.raises(KeyError):
                boom()

        (s,) = record(body).steps
        assert s.status == "error"
        assert s.error is not None and (s.error.type, s.error.message) == ("KeyError", "'missing'")
        assert "boom" in (s.error.traceback or "")

    def test_explicit_deps_accept_handles_and_ids(self) -> None:
        """deps= takes step handles and step ids and records declared data edges."""

        def body(h: Any) -> None:
            with trajdebug.step("a") as a:
                a.output = 1
            with trajdebug.step("b", deps=[a, "ffff"]) as b:
                b.output = 2

        run = record(body)
        deps = run.steps[1].deps
        assert {(run.steps[0].step_id, "declared"), ("ffff", "declared")} == {
            (d.step_id, d.origin) for d in deps
        }

    def test_steps_outside_a_run_are_not_recorded(self) -> None:
        """A decorated function called outside any run behaves normally."""
        assert add(1, 2) == 3


class TestConcurrency:
    def test_threads_via_context_executor_nest_under_the_submitter(self) -> None:
        """Steps run in a ContextThreadPoolExecutor are children of the step that submitted them."""

        def body(h: Any) -> None:
            with trajdebug.step("fan-out", kind="agent"), trajdebug.ContextThreadPoolExecutor(4) as pool:
                list(pool.map(lambda i: add(i, i), range(8)))

        run = record(body)
        parent = run.steps[0]
        kids = [s for s in run.steps if s.name == "add"]
        assert len(kids) == 8
        assert {parent.step_id} == {s.parent_id for s in kids}
        assert len({s.step_id for s in kids}) == 8

    def test_plain_thread_with_copied_context(self) -> None:
        """A thread started with trajdebug.wrap records into the run under the caller's step."""

        def body(h: Any) -> None:
            with trajdebug.step("parent") as p:
                t = threading.Thread(target=trajdebug.wrap(lambda: add(5)))
                t.start()
                t.join()
                p.output = "ok"

        run = record(body)
        child = next(s for s in run.steps if s.name == "add")
        assert run.steps[0].step_id == child.parent_id

    def test_asyncio_gather_children_keep_their_own_parents(self) -> None:
        """Steps in tasks gathered by an async step are its children, each task's nesting separate."""

        @trajdebug.step(kind="tool")
        async def fetch(i: int) -> int:
            await asyncio.sleep(0.001 * (3 - i))
            return await double(i)

        @trajdebug.step(kind="parse")
        async def double(i: int) -> int:
            await asyncio.sleep(0)
            return i * 2

        @trajdebug.step(kind="agent")
        async def agent() -> list[int]:
            return list(await asyncio.gather(*(fetch(i) for i in range(3))))

        run = record(lambda h: asyncio.run(agent()))
        by_id = run.step_map()
        top = next(s for s in run.steps if s.name == "agent")
        assert top.output == [0, 2, 4]
        fetches = [s for s in run.steps if s.name == "fetch"]
        assert {top.step_id} == {s.parent_id for s in fetches}
        for d in (s for s in run.steps if s.name == "double"):
            parent = by_id[d.parent_id or ""]
            assert parent.name == "fetch"
            assert parent.input["i"] * 2 == d.output

    def test_nested_sync_inside_async_inside_sync(self) -> None:
        """Sync steps called from async steps called from sync steps nest correctly."""

        @trajdebug.step
        async def middle() -> int:
            return add(1, 1)

        @trajdebug.step
        def outer() -> int:
            return asyncio.run(middle())

        run = record(lambda h: outer())
        names = {s.name: s for s in run.steps}
        assert names["middle"].parent_id == names["outer"].step_id
        assert names["add"].parent_id == names["middle"].step_id


class TestGenerators:
    def test_generator_step_spans_iteration_and_does_not_leak_as_parent(self) -> None:
        """A generator step records its items; steps the consumer runs between items are not its children."""

        @trajdebug.step(kind="retrieval")
        def docs() -> Any:
            for i in range(3):
                yield add(i, 0)

        def body(h: Any) -> None:
            for d in docs():
                add(d, 100)

        run = record(body)
        gen = next(s for s in run.steps if s.name == "docs")
        assert gen.output == [0, 1, 2]
        inside = [s for s in run.steps if s.name == "add" and s.parent_id == gen.step_id]
        outside = [s for s in run.steps if s.name == "add" and s.parent_id is None]
        assert len(inside) == 3
        assert len(outside) == 3

    def test_async_generator_step(self) -> None:
        """An async generator step records what it yielded."""

        @trajdebug.step
        async def ticks() -> Any:
            for i in range(3):
                yield i

        async def consume() -> list[int]:
            return [i async for i in ticks()]

        run = record(lambda h: asyncio.run(consume()))
        assert run.steps[0].output == [0, 1, 2]


class TestOutcome:
    def test_exception_escaping_the_run_is_a_failure(self) -> None:
        """An exception leaving the run marks it failed with the reason, and is re-raised."""
        sink = MemorySink()
        with pytest.raises(RuntimeError), trajdebug.run("t", sinks=[sink]) as h:
            raise RuntimeError("agent crashed")
        run = h.load()
        assert (run.outcome, run.failure_reason) == ("failure", "RuntimeError: agent crashed")

    def test_fail_and_succeed(self) -> None:
        """run.fail(reason) and run.succeed() set the outcome; the default is success."""
        assert record(lambda h: None).outcome == "success"
        failed = record(lambda h: h.fail("wrong total"))
        assert (failed.outcome, failed.failure_reason) == ("failure", "wrong total")
        assert record(lambda h: (h.fail("x"), h.succeed())).outcome == "success"

    def test_metadata_holds_task_and_environment(self) -> None:
        """task/agent/version go into metadata, with an environment snapshot."""
        sink = MemorySink()
        with trajdebug.run("t", sinks=[sink], task="sum sales", agent="a1", version="2") as h:
            pass
        md = h.load().metadata
        assert (md["task"], md["agent"], md["version"]) == ("sum sales", "a1", "2")
        assert md["env"]["python"] == sys.version.split()[0]


class TestValues:
    def test_huge_value_is_truncated_with_marker(self) -> None:
        """A value over the size limit is stored truncated with its original size."""
        trajdebug.configure(max_value_bytes=1000)
        try:
            run = record(lambda h: add.__wrapped__ and trajdebug.step("big")(lambda: "x" * 5000)())
        finally:
            trajdebug.configure(max_value_bytes=64 * 1024)
        out = run.steps[0].output
        assert out[TRUNCATED_KEY] == 5000
        assert len(out["head"]) == 1000

    def test_unserializable_value_is_stored_as_repr(self) -> None:
        """An object JSON cannot encode is stored as its repr with a marker, not an exception."""

        class Opaque:
            def __repr__(self) -> str:
                return "<Opaque 7>"

        run = record(lambda h: trajdebug.step("o")(lambda: Opaque())())
        assert run.steps[0].output == {
            REPR_KEY: "<Opaque 7>",
            "type": "TestValues.test_unserializable_value_is_stored_as_repr.<locals>.Opaque",
        }

    def test_inputs_are_snapshotted_at_the_call(self) -> None:
        """A list mutated after the call is recorded as it was when passed."""
        history = ["hello"]

        @trajdebug.step(kind="llm")
        def chat(messages: list[str]) -> str:
            return "hi"

        def body(h: Any) -> None:
            chat(history)
            history.append("later")

        assert record(body).steps[0].input == {"messages": ["hello"]}

    def test_a_with_steps_input_and_output_are_the_objects_set_after_its_block(self) -> None:
        """After a `with` step's block, ``s.input`` and ``s.output`` are the very objects the agent set, not their JSON."""
        seen: dict[str, Any] = {}
        query = {"bed": "B-4", "sensors": ["soil", "air"]}
        reading = {"soil": 31.5, "air": [18, 19]}

        def body(h: Any) -> None:
            with trajdebug.step("read_bed", kind="tool", input=query) as s:
                s.output = reading
            seen["input"], seen["output"] = s.input, s.output

        run = record(body)
        assert seen["input"] is query and seen["output"] is reading
        assert (run.steps[0].input, run.steps[0].output) == (query, reading)

    def test_an_output_changed_after_its_block_is_recorded_as_it_was_at_the_end(self) -> None:
        """The record keeps a with step's output as it was when the block ended, whatever the agent does to it later."""
        def body(h: Any) -> None:
            with trajdebug.step("count_hives", kind="tool") as s:
                s.output = {"hives": [3, 4]}
            s.output["hives"].append(99)

        assert record(body).steps[0].output == {"hives": [3, 4]}

    def test_a_step_given_an_earlier_steps_output_after_its_block_depends_on_it(self) -> None:
        """A step whose input is an earlier with step's ``s.output`` (read after that block) depends on that step."""
        def body(h: Any) -> None:
            with trajdebug.step("plan_route", kind="llm") as plan:
                plan.output = {"stops": ["depot", "mill"], "van": "V-2"}
            with trajdebug.step("dispatch", kind="tool", input=plan.output) as go:
                go.output = f"{plan.output['van']} sent"

        plan, go = record(body).steps
        assert [d.step_id for d in go.deps] == [plan.step_id]

    def test_secrets_never_reach_disk(self, tmp_path: Path) -> None:
        """With redaction on, secret keys and key-shaped values are replaced before writing."""
        path = tmp_path / "r.jsonl"

        @trajdebug.step(kind="tool")
        def call(api_key: str, prompt: str) -> dict[str, str]:
            return {"echo": prompt, "password": "hunter22"}

        with trajdebug.run("t", path=path):
            call("sk-abcdefghijklmnopqrstuvwx", "use token sk-zyxwvutsrqponmlkjihgfedc please")
        text = path.read_text()
        for secret in ("sk-abcdefghijklmnopqrstuvwx", "sk-zyxwvutsrqponmlkjihgfedc", "hunter22"):
            assert secret not in text
        s = read_jsonl(path).runs[0].steps[0]
        assert s.input["api_key"] == REDACTED
        assert f"use token {REDACTED} please" == s.input["prompt"]


class TestInputsAsCalled:
    """A step's input is recorded as the step was called with it, however its body changes it in place (nu33
    finding 1: a step writing into its argument was recorded as if it had been called with its own write)."""

    def test_a_decorated_step_that_changes_its_dict_argument_records_it_as_called(self) -> None:
        @trajdebug.step(kind="other")
        def pick(ticket: dict, session: dict) -> str:
            session["customer"] = ticket["customer"]
            ticket["seen"] = True
            return str(session["customer"])

        session: dict[str, Any] = {"customer": "C-1"}
        (step,) = record(lambda h: pick({"customer": "C-2"}, session)).steps
        assert step.input == {"ticket": {"customer": "C-2"}, "session": {"customer": "C-1"}}
        assert session == {"customer": "C-2"}  # the agent's own object was changed as it asked

    def test_a_with_steps_input_changed_in_its_block_is_recorded_as_it_was_given(self) -> None:
        def body(h: Any) -> None:
            order = {"items": ["tea"], "total": 3}
            with trajdebug.step("add_fee", kind="other", input=order) as s:
                order["items"].append("fee")
                order["total"] = 4
                s.output = order["total"]
            assert s.input is order  # still the user's object after the block

        (step,) = record(body).steps
        assert step.input == {"items": ["tea"], "total": 3}

    def test_an_async_step_that_changes_its_argument_records_it_as_called(self) -> None:
        @trajdebug.step(kind="tool")
        async def fill(form: dict) -> int:
            await asyncio.sleep(0)
            form["filled"] = True
            return len(form)

        def body(h: Any) -> None:
            asyncio.run(fill({"name": "Ada"}))

        (step,) = record(body).steps
        assert (step.input, step.output) == ({"form": {"name": "Ada"}}, 2)

    def test_generators_record_their_input_as_the_step_started(self) -> None:
        @trajdebug.step(kind="retrieval")
        def pages(query: dict) -> Any:
            for i in range(2):
                query["page"] = i + 1
                yield dict(query)

        @trajdebug.step(kind="retrieval")
        async def apages(query: dict) -> Any:
            for i in range(2):
                query["page"] = i + 1
                yield dict(query)

        async def consume() -> None:
            async for _ in apages({"q": "owls"}):
                pass

        def body(h: Any) -> None:
            list(pages({"q": "owls"}))
            asyncio.run(consume())

        sync, agen = record(body).steps
        assert sync.input == agen.input == {"query": {"q": "owls"}}
        assert sync.output == [{"q": "owls", "page": 1}, {"q": "owls", "page": 2}]

    def test_an_input_set_or_replaced_in_the_block_is_recorded_as_it_was_when_the_block_ended(self) -> None:
        """``s.input = x`` in the block is the input (no `input=`, or replacing it, a scalar too), frozen at the end."""
        def body(h: Any) -> None:
            with trajdebug.step("set_late", kind="llm") as s:
                req = {"messages": ["hi"]}
                s.input = req
                req["messages"].append("there")
                s.output = "ok"
            with trajdebug.step("replaced", kind="llm", input={"draft": 1}) as s:
                s.input = {"final": 2}
            with trajdebug.step("to_text", kind="llm", input={"draft": 1}) as s:
                s.input = "final text"
            req["messages"].append("later")  # after its block: no effect

        set_late, replaced, to_text = record(body).steps
        assert set_late.input == {"messages": ["hi", "there"]}
        assert replaced.input == {"final": 2}
        assert to_text.input == "final text"

    def test_a_decorated_steps_input_replaced_through_current_step_is_recorded(self) -> None:
        @trajdebug.step(kind="tool")
        def send(card: str, amount: int) -> str:
            trajdebug.current_step().input = {"card": "****", "amount": amount}  # type: ignore[union-attr]
            return "sent"

        (step,) = record(lambda h: send("4111111111111111", 5)).steps
        assert step.input == {"card": "****", "amount": 5}

    def test_all_scalar_arguments_stay_unfrozen_and_are_bound_on_the_writer_thread(self) -> None:
        """A call of scalars only makes no snapshot on the agent's thread (the fast path), and records as before."""
        seen: list[Any] = []

        @trajdebug.step(kind="tool")
        def area(w: int, h: float, unit: str = "m", note: None = None) -> float:
            seen.append(trajdebug.current_step())
            return w * h

        run = record(lambda h: (area(2, 1.5), area(3, 2.0, unit="cm")))
        assert [s.input for s in run.steps] == [{"w": 2, "h": 1.5}, {"w": 3, "h": 2.0, "unit": "cm"}]
        assert [handle._in for handle in seen] == [None, None]

    def test_a_value_that_cannot_be_encoded_becomes_a_marker_at_the_call(self) -> None:
        class Opaque:
            def __repr__(self) -> str:
                return "<Opaque>"

        @trajdebug.step(kind="tool")
        def use(thing: Any, box: dict) -> str:
            box["thing"] = "changed"
            return "used"

        def body(h: Any) -> None:
            use(Opaque(), {"thing": _BadRepr()})
            with trajdebug.step("late", kind="tool") as s:
                s.input = {"m": _BadModel()}
            use("huge", {"rows": list(range(2_000_000))})

        first, late, huge = record(body).steps
        assert first.input["thing"][REPR_KEY] == "<Opaque>"
        assert set(first.input["box"]["thing"]) >= {REPR_KEY}  # the repr that raised, not "changed"
        assert set(late.input["m"]) >= {REPR_KEY}
        assert TRUNCATED_KEY in huge.input or "more items" in json.dumps(huge.input)  # cut within the budget

    def test_snapshot_bytes_count_once_against_the_byte_budget(self) -> None:
        """The input frozen at the start counts when the step is queued, as before; a replaced one counts once."""
        def body(h: Any) -> None:
            with trajdebug.step("a", kind="tool", input={"x": "y" * 100}) as s:
                s.input = {"x": "z" * 50}
                s.output = {"ok": True}

        sizes: dict[str, int] = {}
        sink = MemorySink()
        with trajdebug.run("t", sinks=[sink]) as run:
            body(run)
            sizes["bytes"] = run._bytes
        assert sizes["bytes"] == len(b'{"x":"' + b"z" * 50 + b'"}') + len(b'{"ok":true}')

    def test_identity_tracking_and_retries_keep_the_live_input(self) -> None:
        """A step given an earlier step's output and changing it in place still depends on that step; each retry
        attempt records its input as that attempt was called."""
        calls = {"n": 0}

        @trajdebug.step(kind="llm")
        def plan() -> dict:
            return {"stops": ["depot"], "van": "V-2"}

        @trajdebug.retry(attempts=2, on=(ConnectionError,))
        @trajdebug.step(kind="tool")
        def dispatch(route: dict) -> str:
            calls["n"] += 1
            route["stops"].append(f"try-{calls['n']}")
            if calls["n"] == 1:
                raise ConnectionError("no answer")
            return "sent"

        def body(h: Any) -> None:
            dispatch(plan())

        first, second, third = record(body).steps
        assert second.input == {"route": {"stops": ["depot"], "van": "V-2"}}
        assert third.input == {"route": {"stops": ["depot", "try-1"], "van": "V-2"}}
        assert [d.step_id for d in second.deps] == [first.step_id] == [d.step_id for d in third.deps]


class TestHostileValues:
    def test_lone_surrogates_and_huge_ints_do_not_lose_the_run(self, tmp_path: Path) -> None:
        """Values UTF-8 or JSON cannot carry are stored (escaped or as a marker); every other step still lands."""

        @trajdebug.step
        def echo(x: Any) -> Any:
            return x

        path = tmp_path / "r.jsonl"
        with trajdebug.run("hostile", path=path) as h:
            echo("\udcff")
            echo(10**5000)
            echo("next")
        assert 0 == h.losses["lost"] == h.stats["sink_failures"] == h.stats["internal_errors"]
        (run,) = read_jsonl(path).runs
        assert 3 == len(run.steps)
        assert "\\udcff" == run.steps[0].output
        assert REPR_KEY in run.steps[1].output
        assert "next" == run.steps[2].output

    def test_exception_with_a_broken_str_is_still_recorded(self) -> None:
        """A step whose exception cannot be printed is kept, with a placeholder message."""

        class Opaque(Exception):
            def __str__(self) -> str:
                raise RuntimeError("no")

        @trajdebug.step
        def boom() -> None:
            raise Opaque()

        def body(h: Any) -> None:
            with pytest.raises(Opaque):
                boom()

        (s,) = record(body).steps
        assert "error" == s.status
        assert "<unprintable Opaque>" == s.error.message  # type: ignore[union-attr]

    def test_secrets_in_metadata_errors_and_reasons_are_redacted(self, tmp_path: Path) -> None:
        """Run metadata, task, failure reason, error messages, tracebacks and stages are redacted too."""
        key = "sk-ABCDEFGHIJKLMNOPQRSTUVWX1234"

        @trajdebug.step
        def call() -> None:
            raise ValueError(f"bad key {key}")

        path = tmp_path / "r.jsonl"
        with trajdebug.run(
            "secret", path=path, metadata={"api_key": key, "note": f"uses {key}"}, task=key
        ) as h:
            with pytest.raises(ValueError):
                call()
            h.fail(f"failed with {key}")
        assert key not in path.read_text()
        run = read_jsonl(path).runs[0]
        assert REDACTED == run.metadata["api_key"]
        assert f"failed with {REDACTED}" == run.failure_reason

    def test_branch_and_traced_ignore_what_is_not_a_step(self) -> None:
        """A decision value instead of a step (or an object with a broken repr) adds no edge and never raises."""

        class Loud:
            def __repr__(self) -> str:
                raise RuntimeError("no repr")

        def body(h: Any) -> None:
            trajdebug.traced({"a": 1}, source=Loud())
            with trajdebug.branch(Loud()), trajdebug.step("under") as s:
                s.output = 1

        run = record(body)
        assert () == run.steps[0].deps


class TestFallback:
    def test_fallback_returns_its_value_so_a_step_can_answer_with_it(self) -> None:
        """``return s.fallback(cached, why)`` answers with ``cached`` (nu27 finding 8: it returned None, and the
        agent that returned it crashed on a TypeError): the value is the step's output and its error ends
        ``ignored``; with recording off the handle hands the value back too."""
        cached = {"eur_per_night": 95.0, "source": "cache"}

        @trajdebug.step(kind="tool")
        def gateway() -> dict[str, float]:
            raise TimeoutError("rate gateway timed out")

        @trajdebug.step(kind="other")
        def rate() -> dict[str, Any]:
            try:
                return gateway()
            except TimeoutError:
                s = trajdebug.current_step()
                assert s is not None
                return s.fallback(cached, "rate service timed out")

        got: list[Any] = []
        run = record(lambda h: got.append(rate()))
        assert got == [cached]
        [step] = [st for st in run.steps if st.name == "rate"]
        [error] = run.errors
        assert step.output == cached and step.attributes["fallback"] == "rate service timed out"
        assert error.stage == "ignored" and error.stages[-1].step_id == step.step_id
        trajdebug.configure(enabled=False)
        try:
            with trajdebug.step("off") as off:
                assert off.fallback(cached, "off") is cached
        finally:
            trajdebug.configure(enabled=True)


    def test_fallback_records_whether_it_kept_the_steps_own_output(self) -> None:
        """``s.fallback(s.output, ...)`` keeps the output the step had (a warning it went on from): recorded
        ``fallback_value="kept"``; a stand-in for the value the error cost is ``"replaced"``."""

        def body(h: Any) -> None:
            with trajdebug.step("warned", kind="tool") as w:
                w.output = {"eur_per_night": 140.0}
                w.error("rate table is a day old", type="Warning")
                w.fallback(w.output, "harmless warning, ignored")
            with trajdebug.step("stood_in", kind="tool") as f:
                f.output = {"ok": False}
                f.error("the API returned an error payload")
                f.fallback({"eur_per_night": 95.0}, "used the cached price")

        run = record(body)
        by = {s.name: s for s in run.steps}
        assert by["warned"].attributes["fallback_value"] == "kept"
        assert by["stood_in"].attributes["fallback_value"] == "replaced"


class TestRobustness:
    def test_off_switch_records_nothing(self, tmp_path: Path) -> None:
        """configure(enabled=False) makes runs and steps no-ops: no file, no store."""
        trajdebug.configure(enabled=False)
        try:
            with trajdebug.run("t", path=tmp_path / "r.jsonl") as h, trajdebug.step("s") as s:
                s.output = 1
                assert add(2, 2) == 4
                h.state["k"] = 1
        finally:
            trajdebug.configure(enabled=True)
        assert not (tmp_path / "r.jsonl").exists()
        assert not (tmp_path / "trajdebug.db").exists()

    def test_env_switch_in_a_subprocess(self, tmp_path: Path) -> None:
        """TRAJDEBUG=off in the environment disables recording for the whole process."""
        code = textwrap.dedent(
            """
            import trajdebug
            with trajdebug.run("t", path="r.jsonl"):
                with trajdebug.step("s") as s:
                    s.output = 1
            """
        )
        env = {**os.environ, "TRAJDEBUG": "off"}
        subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, check=True)
        assert not (tmp_path / "r.jsonl").exists()

    def test_raising_sink_does_not_break_the_agent(self, caplog: pytest.LogCaptureFixture) -> None:
        """A sink that raises is counted and warned about once; the agent's result is untouched."""

        class Broken:
            def write(self, records: Any) -> None:
                raise OSError("disk full")

            def close(self) -> None:
                raise OSError("still full")

        good = MemorySink()
        with trajdebug.run("t", sinks=[Broken(), good]) as h:
            assert add(1, 2) == 3
        assert h.stats["sink_failures"] >= 1
        warned = [r.message for r in caplog.records if "sink Broken" in r.message]
        assert 1 == len(warned)
        assert "disk full" in warned[0] and h.run_id in warned[0]
        assert len(h.load().steps) == 1

    def test_full_buffer_drops_and_counts(self) -> None:
        """Past the buffer limit records are dropped and counted, never raised."""
        trajdebug.configure(max_buffer=5, flush_interval=60)
        try:
            sink = MemorySink()
            with trajdebug.run("t", sinks=[sink]) as h:
                for i in range(20):
                    add(i)
        finally:
            trajdebug.configure(max_buffer=100_000, flush_interval=0.2)
        assert h.stats["dropped"] > 0
        assert len(h.load().steps) + h.stats["dropped"] == 20


KILL_CHILD = textwrap.dedent(
    """
    import sys, time, trajdebug
    @trajdebug.step(kind="tool")
    def work(i):
        return {"i": i}
    with trajdebug.run("doomed", path=sys.argv[1], store=sys.argv[2]) as run:
        with trajdebug.step("agent", kind="agent"):
            for i in range(5):
                work(i)
            run.flush()
            print("ready", flush=True)
            time.sleep(60)
    """
)


@pytest.mark.slow
class TestProcesses:
    def test_sigkilled_run_reads_back_incomplete_with_its_steps(self, tmp_path: Path) -> None:
        """A run killed with SIGKILL reads as incomplete, with every step flushed before the kill."""
        jsonl, db = tmp_path / "r.jsonl", tmp_path / "s.db"
        with subprocess.Popen(
            [sys.executable, "-c", KILL_CHILD, str(jsonl), str(db)], stdout=subprocess.PIPE, text=True
        ) as proc:
            try:
                assert proc.stdout.readline().strip() == "ready"  # type: ignore[union-attr]
            finally:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
        for run in (read_jsonl(jsonl).runs[0], Store(db).load_run(Store(db).run_ids()[0])):
            assert run.outcome == "incomplete"
            assert sum(s.name == "work" for s in run.steps) == 5
            agent = next(s for s in run.steps if s.name == "agent")
            assert agent.end_ns is None
            assert all(s.parent_id == agent.step_id for s in run.steps if s.name == "work")

    def test_run_left_open_is_flushed_at_interpreter_exit(self, tmp_path: Path) -> None:
        """A script that exits without closing its run still leaves every step on disk (incomplete run)."""
        code = textwrap.dedent(
            """
            import sys, trajdebug
            trajdebug.configure(flush_interval=3600)  # nothing flushes before exit
            h = trajdebug.run("left-open", path=sys.argv[1])
            h.__enter__()
            for i in range(50):
                with trajdebug.step("s") as s:
                    s.output = i
            """
        )
        path = tmp_path / "r.jsonl"
        subprocess.run([sys.executable, "-c", code, str(path)], check=True)
        (run,) = read_jsonl(path).runs
        assert "incomplete" == run.outcome
        assert list(range(50)) == [s.output for s in run.steps]

    def test_two_processes_writing_one_store_lose_nothing(self, tmp_path: Path) -> None:
        """Three processes recording into one new store at once: every run and step is there, no warning."""
        db = tmp_path / "shared.db"
        code = textwrap.dedent(
            """
            import sys, trajdebug
            trajdebug.configure(flush_interval=0.001)
            @trajdebug.step(kind="tool")
            def work(i):
                return i
            for r in range(3):
                with trajdebug.run(f"{sys.argv[2]}-{r}", store=sys.argv[1]):
                    for i in range(300):
                        work(i)
            """
        )
        procs = [
            subprocess.Popen([sys.executable, "-c", code, str(db), name], stderr=subprocess.PIPE, text=True)
            for name in ("p1", "p2", "p3")
        ]
        errs = [p.communicate()[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0, 0], errs
        assert errs == ["", "", ""]
        store = Store(db)
        summaries = store.list_runs()
        assert len(summaries) == 9
        assert {"success"} == {s.outcome for s in summaries}
        for s in summaries:
            assert len(store.load_run(s.run_id).steps) == 300


class TestKinds:
    def test_the_recorder_knows_the_models_built_in_kinds(self) -> None:
        """The recorder's own list of built-in kinds (spelled out so that declaring a step needs no model)
        is the model's: every built-in kind is stored as given without a warning, every other is checked."""
        from trajdebug.core.model import STEP_KINDS
        from trajdebug.record import recorder

        assert recorder._KINDS == frozenset(STEP_KINDS)

    def test_a_typo_of_a_kind_warns_where_the_step_is_declared(self) -> None:
        """`kind="tools"` warns at decoration time, naming the close built-in kind; the step still records."""
        from trajdebug.core.schema import KindWarning

        with pytest.warns(KindWarning, match="'tools' is not a built-in kind; did you mean 'tool'"):

            @trajdebug.step(kind="tools")
            def search(q: str) -> str:
                return q

        (s,) = record(lambda h: search("x")).steps
        assert ("other", "tools") == (s.kind, s.attributes["recorded_kind"])

    @pytest.mark.parametrize("kind", ["embedding", "chain", "reranker", "LLM"])
    def test_other_span_kinds_are_stored_as_given_and_never_brick_the_store(self, kind: str, tmp_path: Path, cli_run: Any) -> None:
        """A kind outside the built-ins is recorded as given; every command on the store still works, for
        that run and for the others."""
        db = tmp_path / "k.db"
        with trajdebug.run("odd", store=db) as odd, trajdebug.step("embed", kind=kind):
            pass
        with trajdebug.run("plain", store=db) as plain, trajdebug.step("s", kind="tool"):
            pass
        trajdebug.record.flush()
        with sqlite3.connect(db) as conn:
            bodies = [bytes(b).decode() for (b,) in conn.execute("SELECT body FROM chunks")]
        assert any(f'"kind":"{kind}"' in b for b in bodies)
        for run_id in (odd.run_id, plain.run_id):
            shown = cli_run("show", str(db), "--run", run_id, "--json", check=True)
            assert json.loads(shown.stdout)["runs"][0]["run_id"] == run_id
        (step,) = Store(db).load_run(odd.run_id).steps
        assert step.attributes["recorded_kind"] == kind
        assert step.kind == ("llm" if kind == "LLM" else "other")


class TestLostContext:
    def test_a_plain_thread_pool_step_joins_the_only_active_run(self, caplog: pytest.LogCaptureFixture) -> None:
        """A step in a plain ThreadPoolExecutor (no context) is recorded in the one active run, marked
        context_lost, counted in the run's account, and warned about once."""
        from concurrent.futures import ThreadPoolExecutor

        def body(h: Any) -> None:
            with ThreadPoolExecutor(2) as pool:
                list(pool.map(lambda i: add(i), range(4)))

        run = record(body)
        pooled = [s for s in run.steps if s.name == "add"]
        assert 4 == len(pooled)
        assert {True} == {s.attributes["context_lost"] for s in pooled}
        assert {"steps": 4, "ambiguous": 0} == run.metadata["recorder"]["context_lost"]
        assert 1 == sum("without the run's context" in r.message for r in caplog.records)

    def test_run_in_executor_steps_are_not_dropped(self) -> None:
        """Steps run through `loop.run_in_executor` (which copies no context) land in the run."""

        async def main() -> None:
            loop = asyncio.get_running_loop()
            await asyncio.gather(*(loop.run_in_executor(None, add, i) for i in range(3)))

        run = record(lambda h: asyncio.run(main()))
        assert 3 == sum(s.name == "add" and s.attributes.get("context_lost") is True for s in run.steps)

    def test_with_two_active_runs_the_step_is_recorded_as_ambiguous(self) -> None:
        """With two runs active, a context-less step goes to the most recent one, marked ambiguous."""
        first, second = MemorySink(), MemorySink()
        with trajdebug.run("a", sinks=[first]) as a, trajdebug.run("b", sinks=[second]) as b:
            t = threading.Thread(target=add, args=(1,))
            t.start()
            t.join()
        assert [] == [s for s in a.load().steps if s.name == "add"]
        (s,) = [s for s in b.load().steps if s.name == "add"]
        assert "ambiguous" == s.attributes["context_lost"]
        assert 1 == b.load().metadata["recorder"]["context_lost"]["ambiguous"]

    def test_no_active_run_means_no_recording(self, tmp_path: Path) -> None:
        """Outside any run a step in a thread records nothing and writes no store."""
        t = threading.Thread(target=add, args=(1,))
        t.start()
        t.join()
        assert not (tmp_path / "trajdebug.db").exists()


class TestRunArguments:
    def test_metadata_and_tags_are_documented_and_kept(self) -> None:
        """`trajdebug.run(metadata=..., tags=...)` keeps the metadata and the tags, sorted, without duplicates."""
        assert "tags" in (trajdebug.run.__doc__ or "") and "metadata" in (trajdebug.run.__doc__ or "")
        run = record(lambda h: None, metadata={"customer": "c-42", "tags": ["eu"]}, tags=["nightly", "eu"])
        assert "c-42" == run.metadata["customer"]
        assert ["eu", "nightly"] == run.metadata["tags"]

    def test_a_bad_deps_entry_warns_and_is_ignored(self) -> None:
        """`deps=[object()]` never raises into the agent: a RecorderWarning, and the other entries are kept."""
        from trajdebug.record import RecorderWarning

        def body(h: Any) -> None:
            with trajdebug.step("first") as first:
                pass
            with pytest.warns(RecorderWarning, match="not object"), trajdebug.step("second", deps=[object(), first]):
                pass

        run = record(body)
        assert [run.steps[0].step_id] == [d.step_id for d in run.steps[1].deps]


class _Detached:
    """An ORM object whose session is gone: every attribute access raises."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("__class__", "__dict__"):
            return object.__getattribute__(self, name)
        raise RuntimeError(f"DetachedInstanceError: {name}")


class _BadModel:
    def model_dump(self) -> Any:
        raise RuntimeError("lazy load outside a session")


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def _recursive() -> Any:
    loop: list[Any] = [1]
    loop.append(loop)
    return loop


def _deep(n: int) -> Any:
    v: Any = 0
    for _ in range(n):
        v = [v]
    return v


HOSTILE: dict[str, Callable[[], Any]] = {
    "detached-orm": _Detached,
    "model_dump-raises": _BadModel,
    "repr-raises": _BadRepr,
    "recursive": _recursive,
    "tuple-keys": lambda: {(1, 2): "a", ("x",): {"y": 1}},
    "100k-deep": lambda: _deep(100_000),
    "huge-int": lambda: 10**5000,
    "nan-inf": lambda: [float("nan"), float("inf")],
    "lone-surrogate": lambda: "\udcff and more",
    "bytes": lambda: b"\xff\xfe binary",
    "set": lambda: {3, 1, 2},
    "generator": lambda: (i for i in range(3)),
    "20MB-string": lambda: "m" * 20_000_000,
    "escape-name": lambda: "\x1b]0;pwned\x07\x1b[2J",
}

PLACES = ("input", "output", "attribute", "argument", "return", "error-message", "metadata", "state", "traced", "reported")


def _record_everywhere(value_of: Callable[[], Any], **sink: Any) -> tuple[Any, int]:
    """Record one run using a hostile value in every recording place; return (handle, steps made)."""
    made = 0

    @trajdebug.step(kind="tool")
    def takes(arg: Any) -> Any:
        return value_of()

    class Boom(Exception):
        pass

    with trajdebug.run("hostile", metadata={"v": value_of()}, **sink) as h:
        h.add_metadata(extra=value_of())
        for place in PLACES:
            with trajdebug.step(f"at-{place}", kind="tool", input=value_of() if place == "input" else None) as s:
                if place == "output":
                    s.output = value_of()
                elif place == "attribute":
                    s.set("attr", value_of())
                elif place == "state":
                    h.state["k"] = value_of()
                elif place == "traced":
                    trajdebug.traced(value_of(), source=s)
                elif place == "reported":
                    s.error("reported", detail=value_of())
            made += 1
            if place in ("argument", "return"):
                takes(value_of())
                made += 1
            if place == "error-message":
                try:
                    with trajdebug.step("raises") as s:
                        made += 1
                        raise Boom(value_of())
                except Boom:
                    pass
    return h, made


class TestHostileMatrix:
    @pytest.mark.parametrize("sink", ["memory", "jsonl", "store"])
    @pytest.mark.parametrize("value", sorted(HOSTILE))
    def test_no_hostile_value_escapes_or_loses_a_step(self, value: str, sink: str, tmp_path: Path) -> None:
        """Each hostile value, used in every place a value reaches the recorder, raises nothing into the agent;
        every step lands, every record is well-formed, and the store loads the run."""
        kwargs: dict[str, Any] = {
            "memory": {"sinks": [MemorySink()]},
            "jsonl": {"path": tmp_path / "h.jsonl"},
            "store": {"store": tmp_path / "h.db"},
        }[sink]
        h, made = _record_everywhere(HOSTILE[value], **kwargs)
        assert 0 == h.losses["lost"] == h.stats["sink_failures"]
        if sink == "jsonl":
            result = read_jsonl(tmp_path / "h.jsonl")
            assert [] == result.problems
            (run,) = result.runs
        elif sink == "store":
            with Store(tmp_path / "h.db", readonly=True) as st:
                result = st.read()
            assert [] == result.problems
            (run,) = result.runs
        else:
            run = h.load()
        assert made == len(run.steps)
        assert "success" == run.outcome


class _LazyProxy:
    """An unbound lazy proxy (like werkzeug's LocalProxy outside a request): every attribute raises."""

    def __getattribute__(self, name: str) -> Any:
        raise RuntimeError("working outside of request context")


class _FrozenError(Exception):
    """An exception whose __setattr__ raises (a frozen exception type)."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise RuntimeError("frozen")


class _GuardedError(Exception):
    """An exception whose __getattribute__ raises for names it does not know."""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("__trajdebug"):
            raise RuntimeError("guarded")
        return super().__getattribute__(name)


class TestHostileObjects:
    @pytest.mark.parametrize("where", ["input", "output", "argument", "return", "detail", "metadata"])
    def test_lazy_proxy_costs_only_its_own_value(self, tmp_path: Path, where: str) -> None:
        """A value whose __class__ and attributes raise is stored as a marker; its step, the run record and the
        rest of the batch are kept."""
        proxy = _LazyProxy()

        @trajdebug.step(kind="tool")
        def tool(x: Any) -> Any:
            return proxy if where == "return" else 1

        path = tmp_path / "r.jsonl"
        with trajdebug.run("hostile", path=path, metadata={"m": proxy} if where == "metadata" else None):
            with trajdebug.step("before"):
                pass
            with trajdebug.step("it", input=proxy if where == "input" else None) as s:
                if where == "output":
                    s.output = proxy
                if where == "detail":
                    s.error("bad", detail=proxy)
            tool(proxy if where == "argument" else 1)
            with trajdebug.step("after"):
                pass
        got = read_jsonl(path)
        run = got.runs[0]
        assert [s.name for s in run.steps] == ["before", "it", "tool", "after"]
        assert run.name == "hostile"
        assert run.metadata.get("recorder", {}).get("internal_errors", 0) == 0
        if where == "metadata":
            assert run.metadata["m"][REPR_KEY].startswith("<")

    @pytest.mark.parametrize("exc_type", [_FrozenError, _GuardedError])
    def test_exception_that_refuses_attributes_keeps_its_steps(self, tmp_path: Path, exc_type: type) -> None:
        """An exception whose __setattr__ or __getattribute__ raises is recorded at every step it leaves."""

        @trajdebug.step
        def inner() -> None:
            raise exc_type("x")

        path = tmp_path / "r.jsonl"
        with trajdebug.run("hostile", path=path), pytest.raises(exc_type), trajdebug.step("outer"):
            inner()
        run = read_jsonl(path).runs[0]
        assert sorted(s.name for s in run.steps) == ["inner", "outer"]
        assert all(s.status == "error" for s in run.steps)
        assert run.errors and run.errors[0].type == exc_type.__name__


class TestBoundedBySize:
    """Work on the agent's thread is bounded by a value's size, not its content: what a hostile value costs is
    counted (the longest text printed or encoded for it), never timed, so a loaded machine cannot fail it."""

    BIG: ClassVar[list[int]] = list(range(2_000_000))

    @staticmethod
    def _encoded(monkeypatch: pytest.MonkeyPatch) -> list[int]:
        """The length of every JSON encoding the recorder makes from now on (its one encoder, `core.codec`)."""
        import trajdebug.core.codec as codec

        sizes: list[int] = []
        real = codec._orjson

        class Spy:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            @staticmethod
            def dumps(obj: Any, *args: Any, **kwargs: Any) -> bytes:
                out: bytes = real.dumps(obj, *args, **kwargs)
                sizes.append(len(out))
                return out

        monkeypatch.setattr(codec, "_orjson", Spy())
        return sizes

    def test_an_exception_holding_a_huge_list_is_printed_bounded(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """ValueError(<2M-item list>) raised in a step is printed and encoded only as far as it is kept (a small
        fraction of printing the list once), and its message says how many items there were."""
        from trajdebug.core.codec import dumps

        whole = len(repr(self.BIG))
        with trajdebug.run("warm", path=tmp_path / "w.jsonl"), trajdebug.step("w"):
            pass
        sizes = self._encoded(monkeypatch)
        with pytest.raises(ValueError), trajdebug.run("big", path=tmp_path / "r.jsonl"), trajdebug.step("s"):
            raise ValueError(self.BIG)
        assert sizes and max(sizes) < whole / 20, (max(sizes), whole)
        err = read_jsonl(tmp_path / "r.jsonl").runs[0].errors[0]
        assert "2,000,000 items" in err.message and len(dumps(err.message)) < 70_000

    @pytest.mark.parametrize("shape", ["list", "dict", "set"])
    def test_a_huge_output_is_encoded_only_as_far_as_it_is_kept(
        self, tmp_path: Path, shape: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A huge output (list, dict, set) is encoded only as far as it is kept (no encoding of it comes near
        its whole size), and is stored truncated."""
        from trajdebug.core.codec import dumps

        value: Any = {
            "list": self.BIG,
            "dict": {str(i): i for i in range(1_000_000)},
            "set": set(self.BIG),
        }[shape]
        whole = len(dumps(value))
        sizes = self._encoded(monkeypatch)
        with trajdebug.run("big", path=tmp_path / "r.jsonl"):
            with trajdebug.step("w"):
                pass
            with trajdebug.step("s") as s:
                s.output = value
        # The item visits themselves are counted in tests/test_snapshot.py; here, the whole path of a step.
        assert sizes and max(sizes) < whole / 20, (max(sizes), whole)
        out = read_jsonl(tmp_path / "r.jsonl").runs[0].steps[1].output
        assert TRUNCATED_KEY in out or "more items" in json.dumps(out)


@pytest.mark.parametrize(
    "path",
    sorted((Path(trajdebug.record.__file__).resolve().parent).rglob("*.py")),
    ids=lambda p: p.name,
)
def test_no_function_of_the_recorder_runs_over_80_lines(path: Path) -> None:
    """Every function (and method) under trajdebug/record is at most 80 lines long."""
    long = [
        f"{n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and (n.end_lineno or 0) - n.lineno + 1 > 80
    ]
    assert long == []


@trajdebug.step(kind="state")
def _remember(key: str, value: int) -> dict[str, int]:
    memo = trajdebug.current_run().state.setdefault("memo", {})  # type: ignore[union-attr]
    memo[key] = value
    return {key: value}


@trajdebug.step(kind="other")
def _recall(key: str) -> int | None:
    value: int | None = trajdebug.current_run().state["memo"].get(key)  # type: ignore[union-attr]
    return value


class TestRunStateChangedInPlace:
    def test_a_container_changed_in_place_is_a_write_of_the_step_that_changed_it(self) -> None:
        """A step that filled a mapping it got from run.state (setdefault, then an item) wrote it: its value is
        recorded as it left it and the next reader depends on that step; a step that only read it wrote nothing."""

        def body(h: Any) -> None:
            _remember("a", 1)
            _recall("a")
            _remember("b", 2)
            _recall("b")

        run = record(body)
        first, read1, second, read2 = run.steps
        assert first.attributes["state_values"] == {"memo": {"a": 1}}
        assert second.attributes["state_values"] == {"memo": {"a": 1, "b": 2}}
        assert [d.step_id for d in read2.deps if d.kind == "state"] == [second.step_id]
        assert [d.step_id for d in read1.deps if d.kind == "state"] == [first.step_id]
        assert "state_writes" not in read1.attributes


    def test_an_enclosing_step_is_not_the_writer_of_what_its_children_changed(self) -> None:
        """An agent step that read the memo and ran children that filled it in place did not write it: the next
        reader depends on the last child that changed it, and the agent step records no write."""

        @trajdebug.step(kind="agent")
        def loop() -> None:
            trajdebug.current_run().state.setdefault("memo", {})  # type: ignore[union-attr]
            _remember("a", 1)
            _remember("b", 2)

        def body(h: Any) -> None:
            h.state["memo"] = {}
            loop()
            _recall("b")

        run = record(body)
        by_name = {s.name: s for s in run.steps}
        second = [s for s in run.steps if s.name == "_remember"][-1]
        assert "state_writes" not in by_name["loop"].attributes
        assert [d.step_id for d in by_name["_recall"].deps if d.kind == "state"] == [second.step_id]

    def test_a_large_container_is_not_copied_to_watch_it(self) -> None:
        """A container over WATCH_LIMIT items read from run.state is not copied on the agent's thread: changed in
        place, it is not recorded as the step's write (an assignment still is)."""
        from trajdebug.record.state import WATCH_LIMIT

        def body(h: Any) -> None:
            h.state["memo"] = {f"k{i}": i for i in range(WATCH_LIMIT + 1)}
            _remember("a", 1)

        (step,) = record(body).steps
        assert "memo" not in (step.attributes.get("state_writes") or [])
