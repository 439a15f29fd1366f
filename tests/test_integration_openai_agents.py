"""Tests for the OpenAI Agents SDK tracing processor, with the SDK's own tracing objects and runner (no network)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


pytest.importorskip("agents", reason="openai-agents is not installed")

from agents import Agent, Runner, function_tool
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.tracing import (
    SpanError,
    agent_span,
    function_span,
    generation_span,
    get_trace_provider,
    handoff_span,
    set_trace_processors,
    trace,
)
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from trajdebug.core.jsonl import read_jsonl
from trajdebug.integrations.openai_agents import TrajdebugProcessor


@pytest.fixture
def processor(tmp_path: Path) -> Iterator[TrajdebugProcessor]:
    """Our processor as the only one (no export to OpenAI); the SDK's processors are restored after."""
    provider: Any = get_trace_provider()
    saved = list(provider._multi_processor._processors)
    p = TrajdebugProcessor(path=tmp_path / "runs.jsonl")
    set_trace_processors([p])
    yield p
    set_trace_processors(saved)


class ScriptedModel(Model):
    """A model that plays back scripted turns and traces each call as a generation span, as the SDK's models do."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = turns

    async def get_response(
        self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any
    ) -> ModelResponse:
        output = self.turns.pop(0)
        items = [{"role": "user", "content": input}] if isinstance(input, str) else [dict(i) for i in input]
        with generation_span(input=items, output=[o.model_dump() for o in output], model="scripted"):
            pass
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def _answer(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        content=[ResponseOutputText(text=text, type="output_text", annotations=[])],
        role="assistant",
        status="completed",
        type="message",
    )


@function_tool
def find_order(order_id: str) -> str:
    """Look an order up."""
    raise LookupError(f"order {order_id} not found")


class TestRunner:
    """A real Agent run through the SDK's Runner."""

    def test_recovered_tool_error_and_edges(self, processor: TrajdebugProcessor, tmp_path: Path) -> None:
        """A failing tool is a non-fatal error recovered at the agent's turn; model -> tool -> model edges by call id."""
        model = ScriptedModel(
            [
                [
                    ResponseFunctionToolCall(
                        arguments='{"order_id": "W1"}',
                        call_id="call_1",
                        name="find_order",
                        type="function_call",
                        id="fc_1",
                    )
                ],
                [_answer("I could not find order W1.")],
            ]
        )
        agent = Agent(name="support", instructions="Help.", model=model, tools=[find_order])
        # asyncio.run closes its loop (run_sync leaves the thread's default loop open on purpose)
        result = asyncio.run(Runner.run(agent, "Where is order W1?"))
        assert result.final_output == "I could not find order W1."
        run = processor.to_run()
        work = [(s.kind, s.name) for s in run.steps if s.kind in ("llm", "tool")]
        assert work == [
            ("llm", "generation scripted"),
            ("tool", "find_order"),
            ("llm", "generation scripted"),
        ]
        agent_step = next(s for s in run.steps if s.kind == "agent" and s.name == "support")
        turns = [s for s in run.steps if s.name.startswith("turn ")]
        llm1, tool, llm2 = (s for s in run.steps if s.kind in ("llm", "tool"))
        assert all(s.agent == "support" for s in [agent_step, *turns, llm1, tool, llm2])
        assert [t.parent_id for t in turns] == [agent_step.step_id] * 2
        assert tool.parent_id == turns[0].step_id
        assert tool.input == {"order_id": "W1"}
        assert any(d.step_id == llm1.step_id and d.origin == "declared" for d in tool.deps)
        assert any(d.step_id == tool.step_id and d.origin == "declared" for d in llm2.deps)
        [err] = run.errors
        assert err.step_id == tool.step_id
        assert err.message.startswith("Error running tool (non-fatal)")
        assert [(c.stage, c.step_id) for c in err.stages] == [
            ("occurred", tool.step_id),
            ("recovered", turns[0].step_id),
        ]
        assert tool.status == "error"
        assert run.outcome == "success"
        assert len(run.run_id) == 32
        [saved] = read_jsonl(tmp_path / "runs.jsonl").runs
        assert saved.steps == run.steps
        assert saved.errors == run.errors

    def test_a_sub_agent_run_as_a_tool_feeds_the_tool_its_last_answer(self, processor: TrajdebugProcessor) -> None:
        """An agent called through ``Agent.as_tool`` answers with its last model turn, which the tool returns:
        the tool's step takes that turn's output by a declared edge, so the caller's path reaches it."""
        inner = Agent(name="scout", instructions="Pick.", model=ScriptedModel([[_answer("Pick FLM-106.")]]))
        call = ResponseFunctionToolCall(arguments='{"input": "pick a film"}', call_id="call_1", name="scout",
                                        type="function_call", id="fc_1")
        outer_model = ScriptedModel([[call], [_answer("Booked FLM-106.")]])
        outer = Agent(name="programmer", instructions="Plan.", model=outer_model,
                      tools=[inner.as_tool(tool_name="scout", tool_description="Pick a film")])
        asyncio.run(Runner.run(outer, "Plan the block"))
        run = processor.to_run()
        tool = next(s for s in run.steps if s.kind == "tool" and s.name == "scout")
        answer = next(s for s in run.steps if s.kind == "llm" and s.agent == "scout")
        assert tool.output == "Pick FLM-106."
        assert any(d.step_id == answer.step_id and d.origin == "declared" for d in tool.deps)


LEDGER: list[float] = []


@function_tool
def record_line(amount: float) -> str:
    """Add a line to the ledger."""
    import trajdebug

    LEDGER.append(amount)
    trajdebug.writes("ledger:T-1")
    return "ok"


@function_tool
def reconcile() -> str:
    """Total the ledger."""
    import trajdebug

    trajdebug.reads("ledger:T-1")
    return f"{sum(LEDGER):.2f}"


def _call(name: str, arguments: str, n: int) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(arguments=arguments, call_id=f"call_{n}", name=name, type="function_call", id=f"fc_{n}")


class TestDeclaredState:
    """`trajdebug.writes`/`reads` called inside a tool of a run the processor records."""

    def test_a_tools_reads_get_a_state_edge_from_the_tool_that_last_wrote(self, processor: TrajdebugProcessor) -> None:
        """Inside Agents SDK tools, trajdebug.writes/reads land on the tools' steps (state_writes, state_reads) and
        the reader gets a declared state edge from the resource's last writer, as in a trajdebug.run."""
        from trajdebug.record.state import unrecorded_declarations

        LEDGER.clear()
        before = unrecorded_declarations()
        model = ScriptedModel(
            [
                [_call("record_line", '{"amount": 72.0}', 1)],
                [_call("record_line", '{"amount": 7.2}', 2)],
                [_call("reconcile", "{}", 3)],
                [_answer("79.20")],
            ]
        )
        agent = Agent(name="desk", instructions="Reconcile.", model=model, tools=[record_line, reconcile])
        asyncio.run(Runner.run(agent, "trip T-1"))
        run = processor.to_run()
        first, second, rec = (s for s in run.steps if s.kind == "tool")
        assert [first.attributes.get("state_writes"), second.attributes.get("state_writes")] == [["ledger:T-1"]] * 2
        assert rec.attributes.get("state_reads") == ["ledger:T-1"]
        assert [(d.step_id, d.kind, d.origin, d.key) for d in rec.deps if d.kind == "state"] == [
            (second.step_id, "state", "declared", "ledger:T-1")
        ]
        assert unrecorded_declarations() == before


class TestSpans:
    """Traces built directly with the SDK's span objects."""

    def test_handoff_and_fatal_error(self, processor: TrajdebugProcessor) -> None:
        """A handoff is a control edge to the target agent; an error the agent re-reports is one error that failed the run."""
        err = SpanError(
            message="Error running tool", data={"tool_name": "refund", "error": "PermissionError: denied"}
        )
        with trace("billing-flow", group_id="conv-7"):
            with agent_span(name="triage"), handoff_span(from_agent="triage", to_agent="billing"):
                pass
            with agent_span(name="billing") as billing:
                with function_span(name="refund", input='{"order": "W1"}') as refund:
                    refund.set_error(err)
                billing.set_error(err)
        run = processor.to_run()
        assert run.name == "billing-flow"
        assert run.metadata["group_id"] == "conv-7"
        assert run.metadata["session"] == "conv-7"  # the group is the run's session
        _triage, handoff, billing_step, refund_step = run.steps
        assert handoff.name == "handoff triage -> billing"
        assert handoff.agent == "triage"
        assert any(d.step_id == handoff.step_id and d.kind == "control" for d in billing_step.deps)
        [e] = run.errors
        assert e.step_id == refund_step.step_id
        assert e.message == "Error running tool: PermissionError: denied"
        assert [(c.stage, c.step_id) for c in e.stages] == [
            ("occurred", refund_step.step_id),
            ("propagated", billing_step.step_id),
            ("failed", billing_step.step_id),
        ]
        assert run.outcome == "failure"
        assert billing_step.error is not None
        assert billing_step.error.error_id == e.error_id

    def test_unfinished_trace_at_shutdown_is_incomplete(self, processor: TrajdebugProcessor) -> None:
        """A trace still open at shutdown becomes an incomplete run."""
        t = trace("never-ends")
        t.start()
        with agent_span(name="a", parent=t):
            pass
        processor.shutdown()
        run = processor.to_run()
        assert run.outcome == "incomplete"
        assert [s.name for s in run.steps] == ["a"]
        t.finish()


@function_tool
def lookup_user(name: str) -> str:
    """Find a user's id by name."""
    if name == "boom":
        raise RuntimeError("user database down")
    return f"u-{len(name)}{name}"


def _model(client: Any, *, chat_completions: bool = False) -> Any:
    """The SDK's own OpenAI model classes on a real openai client."""
    from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel

    if chat_completions:
        return OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
    return OpenAIResponsesModel(model="gpt-4o", openai_client=client)


def _run_agent(server: Any, question: str, *, tools: Any = (), chat_completions: bool = False) -> Any:
    """Runner.run of an agent whose model talks to the fake server; the HTTP client is closed in its own loop."""
    from openai import AsyncOpenAI

    async def go() -> Any:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            agent = Agent(
                name="support",
                instructions="Help.",
                model=_model(client, chat_completions=chat_completions),
                tools=list(tools),
            )
            return await Runner.run(agent, question)

    return asyncio.run(go())


def _lookup_then_answer(request: Any) -> Any:
    """Call lookup_user for the name in the question, then answer with what it returned."""
    from trajdebug.testing import Reply, tool_call

    items = request.body.get("input") or request.body.get("messages") or []
    results = [i for i in items if i.get("type") == "function_call_output" or i.get("role") == "tool"]
    if results:
        r = results[-1]
        return f"The id is {r.get('output', r.get('content'))}."
    question = next(i["content"] for i in items if i.get("role") == "user")
    return Reply(tool_calls=(tool_call("lookup_user", {"name": question.split()[-1].strip("?")}),))


class TestAgainstAFakeModelServer:
    """Real Runner.run with the SDK's OpenAI models, speaking the real protocol to a fake server on 127.0.0.1."""

    def test_a_run_whose_runner_raised_is_a_failure_counted_once(self, processor: TrajdebugProcessor) -> None:
        """A tool exception that escapes Runner.run: one error, occurred at the tool, propagated through the agent, failed."""
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        strict = function_tool(
            _raise_db_down,
            name_override="lookup_user",
            failure_error_function=None,
        )
        with (
            FakeModelServer([Reply(tool_calls=(tool_call("lookup_user", {"name": "boom"}),))]) as server,
            pytest.raises(Exception, match="user database down"),
        ):
            _run_agent(server, "who is boom?", tools=[strict])
        run = processor.to_run()
        assert run.outcome == "failure"
        assert "user database down" in (run.failure_reason or "")
        [err] = run.errors
        tool = next(s for s in run.steps if s.kind == "tool")
        agent_step = next(s for s in run.steps if s.name == "support")
        top = next(s for s in run.steps if s.parent_id is None)
        assert [(c.stage, c.step_id) for c in err.stages] == [
            ("occurred", tool.step_id),
            ("propagated", agent_step.step_id),
            ("failed", top.step_id),
        ]
        assert agent_step.error is not None and agent_step.error.error_id == err.error_id

    def test_a_tools_own_text_saying_non_fatal_still_fails_the_run(self, processor: TrajdebugProcessor) -> None:
        """The SDK's ``(non-fatal)`` marker counts in its own message only, never in the exception's text."""
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        strict = function_tool(_raise_non_fatal_text, name_override="lookup_user", failure_error_function=None)
        with (
            FakeModelServer([Reply(tool_calls=(tool_call("lookup_user", {"name": "boom"}),))]) as server,
            pytest.raises(Exception, match="db down"),
        ):
            _run_agent(server, "who is boom?", tools=[strict])
        run = processor.to_run()
        [err] = run.errors
        assert (run.outcome, [c.stage for c in err.stages]) == ("failure", ["occurred", "propagated", "failed"])

    def test_of_parallel_tool_calls_that_both_raised_the_one_that_reached_the_agent_fails_the_run(
        self, processor: TrajdebugProcessor
    ) -> None:
        """Two tool calls of one turn both raise: the one the agent span re-reports fails the run, the other stays."""
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        tools = [function_tool(_raise_db_down, name_override=n, failure_error_function=None) for n in ("a", "b")]
        script = [Reply(tool_calls=(tool_call("a", {"name": "x"}), tool_call("b", {"name": "y"}))), "done"]
        with FakeModelServer(script) as server, pytest.raises(Exception, match="user database down"):
            _run_agent(server, "who?", tools=tools)
        run = processor.to_run()
        assert run.outcome == "failure"
        # The SDK gathers the turn's tool calls: once the first raises, the second may be cancelled before it runs
        # (a loaded machine's timing), so it left no error; when it did raise, its error stays where it occurred.
        stages = sorted([c.stage for c in e.stages] for e in run.errors)
        assert stages in ([["occurred"], ["occurred", "propagated", "failed"]], [["occurred", "propagated", "failed"]])

    def test_a_model_error_fails_the_run(self, processor: TrajdebugProcessor) -> None:
        """An HTTP error from the model is one error at the model step that failed the run."""
        from trajdebug.testing import FakeModelServer, Reply

        with (
            FakeModelServer([Reply(status=400, error="context too long")]) as server,
            pytest.raises(Exception, match="context too long"),
        ):
            _run_agent(server, "hi")
        run = processor.to_run()
        [err] = run.errors
        llm = next(s for s in run.steps if s.kind == "llm")
        assert (err.step_id, err.stage, run.outcome) == (llm.step_id, "failed", "failure")

    @pytest.mark.parametrize("chat_completions", [False, True], ids=["responses", "chat-completions"])
    def test_clean_run_succeeds_with_its_final_output_and_chat_content(
        self, processor: TrajdebugProcessor, chat_completions: bool
    ) -> None:
        """A clean run is a success whose top step carries the final output; model steps are messages with llm.* attributes."""
        from trajdebug.analysis import analyze
        from trajdebug.testing import FakeModelServer

        with FakeModelServer(_lookup_then_answer) as server:
            result = _run_agent(server, "who is ana?", tools=[lookup_user], chat_completions=chat_completions)
        run = processor.to_run()
        top = next(s for s in run.steps if s.parent_id is None)
        assert result.final_output == "The id is u-3ana."
        assert (run.outcome, top.output) == ("success", "The id is u-3ana.")
        first, second = (s for s in run.steps if s.kind == "llm")
        assert first.input["messages"][:2] == [
            {"role": "system", "content": "Help."},
            {"role": "user", "content": "who is ana?"},
        ]
        assert first.output["tool_calls"][0]["arguments"] == {"name": "ana"}
        assert second.input["messages"][-1] == {
            "role": "tool",
            "content": "u-3ana",
            "tool_call_id": first.output["tool_calls"][0]["id"],
        }
        assert first.attributes["llm.model"] == "gpt-4o"
        assert first.attributes["llm.tools"] == ["lookup_user"]
        assert first.attributes["llm.usage.total_tokens"] > 0
        assert "usage" not in first.attributes and "model" not in first.attributes
        from trajdebug.usage import run_usage

        sdk = result.context_wrapper.usage  # what the SDK counted from the server's responses
        usage = run_usage(run)
        assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (
            2,
            sdk.input_tokens,
            sdk.output_tokens,
        )
        assert usage.cost is not None and usage.cost > 0
        analysis = analyze(run)
        assert (analysis.outcome, analysis.failures) == ("success", ())

    def test_ten_clean_runs_report_no_failure(self, processor: TrajdebugProcessor) -> None:
        """Ten clean runs on different questions: every one analyzes as a success with no failure."""
        from trajdebug.analysis import analyze
        from trajdebug.testing import FakeModelServer

        names = ["ana", "bo", "carla", "dmitri", "eve", "farid", "gus", "hana", "ivo", "jun"]
        with FakeModelServer(_lookup_then_answer) as server:
            for name in names:
                _run_agent(server, f"who is {name}?", tools=[lookup_user])
        reports = [analyze(r) for r in processor.runs]
        assert [(a.outcome, a.failures) for a in reports] == [("success", ())] * 10

    def test_same_named_agents_in_one_trace_are_not_cross_linked(self, processor: TrajdebugProcessor) -> None:
        """Two concurrent agents both named "worker": each tool depends on its own agent's model call."""
        from trajdebug.testing import FakeModelServer

        async def both(server: Any) -> None:
            from openai import AsyncOpenAI

            async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
                a = Agent(name="worker", instructions="Help.", model=_model(client), tools=[lookup_user])
                b = Agent(name="worker", instructions="Help.", model=_model(client), tools=[lookup_user])
                await asyncio.gather(Runner.run(a, "who is ana?"), Runner.run(b, "who is bartholomew?"))

        with FakeModelServer(_lookup_then_answer) as server, trace("two workers"):
            asyncio.run(both(server))
        run = processor.to_run()
        owner = {s.step_id: s.parent_id for s in run.steps}

        def agent_of(step_id: str | None) -> str | None:
            """The "worker" agent span enclosing a step."""
            while step_id is not None and run.step(step_id).name != "worker":
                step_id = owner.get(step_id)
            return step_id

        tools = [s for s in run.steps if s.kind == "tool"]
        assert len(tools) == 2
        for tool in tools:
            [dep] = [d for d in tool.deps if d.kind == "data"]
            assert dep.origin == "declared"
            assert agent_of(dep.step_id) == agent_of(tool.step_id)


def _raise_non_fatal_text(name: str) -> str:
    """Find a user's id by name."""
    raise RuntimeError("db down (non-fatal)")


def _raise_db_down(name: str) -> str:
    """Find a user's id by name."""
    raise RuntimeError("user database down")


class TestNamingRuns:
    """A fleet tells its agents apart: the processor names runs and records their task."""

    def test_name_and_task_given_to_the_processor_are_the_runs(self, tmp_path: Path) -> None:
        """TrajdebugProcessor(store=PATH, name=, task=): the saved run has that name and task."""
        from trajdebug.store import Store
        from trajdebug.testing import FakeModelServer

        provider: Any = get_trace_provider()
        saved = list(provider._multi_processor._processors)
        db = tmp_path / "support.db"
        p = TrajdebugProcessor(store=str(db), name="support-bot", task="find user ids")
        set_trace_processors([p])
        try:
            with FakeModelServer(_lookup_then_answer) as server:
                _run_agent(server, "who is ana?", tools=[lookup_user])
        finally:
            set_trace_processors(saved)
        with Store(db) as st:
            [run] = [st.load_run(s.run_id) for s in st.list_runs()]
        assert (run.name, run.metadata["task"]) == ("support-bot", "find user ids")

    def test_a_trace_task_beats_the_processor_default(self) -> None:
        """The trace's own metadata task wins over the processor's default task; the workflow name names the run."""
        provider: Any = get_trace_provider()
        saved = list(provider._multi_processor._processors)
        p = TrajdebugProcessor(task="default task")
        set_trace_processors([p])
        try:
            with trace("triage", metadata={"task": "triage T-1"}), agent_span(name="a"):
                pass
            with trace("triage"), agent_span(name="a"):
                pass
        finally:
            set_trace_processors(saved)
        given, default = p.runs
        assert (given.name, given.metadata["task"]) == ("triage", "triage T-1")
        assert default.metadata["task"] == "default task"


def _ship(order: str) -> str:
    """Ship an order."""
    raise RuntimeError("shipping service down")


def _triage_policy(request: Any) -> Any:
    """The specialist answers; triage asks it (as a tool), then ships, or hands off, or answers, by its instructions."""
    from trajdebug.testing import Reply, tool_call

    body = request.body
    system = body.get("instructions") or next(
        (m["content"] for m in body.get("messages", []) if m.get("role") == "system"), ""
    )
    items = body.get("input") or body.get("messages") or []
    results = [i for i in items if i.get("type") == "function_call_output" or i.get("role") == "tool"]
    if system.startswith("Specialist"):
        return "Refund approved for W1."
    if "hand off" in system:
        return Reply(tool_calls=(tool_call("transfer_to_specialist", {}),))
    if not results:
        return Reply(tool_calls=(tool_call("specialist", {"input": "refund W1?"}),))
    if "ship" in system and len(results) == 1:
        return Reply(tool_calls=(tool_call("ship", {"order": "W1"}),))
    return "Done: the refund for W1 is approved."


def _run_triage(server: Any, instructions: str, **kwargs: Any) -> Any:
    """Runner.run of a triage agent with a specialist it calls through ``as_tool`` (or hands off to)."""
    from openai import AsyncOpenAI

    async def go() -> Any:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            specialist = Agent(name="specialist", instructions="Specialist.", model=_model(client))
            if "hand off" in instructions:
                kwargs["handoffs"] = [specialist]
            else:
                strict_ship = function_tool(_ship, name_override="ship", failure_error_function=None)
                kwargs["tools"] = [specialist.as_tool(tool_name="specialist", tool_description="Ask"), strict_ship]
            triage = Agent(name="triage", instructions=instructions, model=_model(client), **kwargs)
            return await Runner.run(triage, "Can W1 be refunded?")

    return asyncio.run(go())


class TestTheRunsFinalOutput:
    """The trace's top step carries the final output of the run's top-level agent, never a sub-agent's answer."""

    @pytest.mark.parametrize("failure", ["tool", "guardrail"])
    def test_a_failed_run_does_not_take_its_as_tool_sub_agents_answer(
        self, processor: TrajdebugProcessor, failure: str
    ) -> None:
        """When the caller of an ``as_tool`` sub-agent fails after it answered, the run has no final output,
        while the tool step still returns the sub-agent's answer by a declared edge."""
        from agents import GuardrailFunctionOutput, output_guardrail

        from trajdebug.testing import FakeModelServer

        @output_guardrail
        async def never(ctx: Any, agent: Any, output: Any) -> GuardrailFunctionOutput:
            """Trips on every answer."""
            return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

        if failure == "tool":
            instructions, kwargs, raised = "Triage, then ship.", {}, "shipping service down"
        else:
            instructions, kwargs, raised = "Triage.", {"output_guardrails": [never]}, "Guardrail"
        with FakeModelServer(_triage_policy) as server, pytest.raises(Exception, match=raised):
            _run_triage(server, instructions, **kwargs)
        run = processor.to_run()
        top = next(s for s in run.steps if s.parent_id is None)
        tool = next(s for s in run.steps if s.kind == "tool" and s.name == "specialist")
        answer = next(s for s in run.steps if s.kind == "llm" and s.agent == "specialist")
        sub = next(s for s in run.steps if s.attributes.get("agents.span_type") == "agent" and s.name == "specialist")
        assert run.outcome == "failure"
        assert top.output is None
        assert (tool.output, sub.output) == ("Refund approved for W1.", "Refund approved for W1.")
        assert any(d.step_id == answer.step_id and d.origin == "declared" for d in tool.deps)

    def test_an_answer_the_sdk_rejected_is_not_the_runs_final_output(self, processor: TrajdebugProcessor) -> None:
        """A last answer the SDK rejects (structured output that does not parse) is neither the agent's nor the run's final output."""
        from pydantic import BaseModel

        from trajdebug.testing import FakeModelServer

        class Verdict(BaseModel):
            """A structured answer the plain-text reply does not satisfy."""

            refund: bool

        with FakeModelServer(_triage_policy) as server, pytest.raises(Exception, match="Invalid JSON"):
            _run_triage(server, "Triage.", output_type=Verdict)
        run = processor.to_run()
        top = next(s for s in run.steps if s.parent_id is None)
        triage = next(s for s in run.steps if s.attributes.get("agents.span_type") == "agent" and s.name == "triage")
        assert (top.output, triage.output) == (None, None)

    def test_each_runner_run_in_one_trace_has_its_own_final_output(self, processor: TrajdebugProcessor) -> None:
        """Two ``Runner.run`` calls in one trace, the second failing: the first's top step carries its answer,
        the second's none."""
        from trajdebug.testing import FakeModelServer

        with FakeModelServer(_triage_policy) as server, trace("two calls"):
            first = _run_triage(server, "Triage.")
            with pytest.raises(Exception, match="shipping service down"):
                _run_triage(server, "Triage, then ship.")
        run = processor.to_run()
        tops = sorted((s for s in run.steps if s.parent_id is None), key=lambda s: s.start_ns)
        assert [s.output for s in tops] == [first.final_output, None]

    @pytest.mark.parametrize("instructions", ["Triage.", "Triage: hand off."])
    def test_a_clean_run_ends_with_its_top_level_agents_answer(
        self, processor: TrajdebugProcessor, instructions: str
    ) -> None:
        """A clean run's final output is the caller's after an ``as_tool`` call, the specialist's after a hand-off."""
        from trajdebug.testing import FakeModelServer

        with FakeModelServer(_triage_policy) as server:
            result = _run_triage(server, instructions)
        run = processor.to_run()
        top = next(s for s in run.steps if s.parent_id is None)
        assert (run.outcome, top.output) == ("success", result.final_output)


def _look(order: str) -> str:
    """Look an order up."""
    raise RuntimeError("order database down")


def _failing_specialist_policy(request: Any) -> Any:
    """Triage asks the specialist (as a tool), whose own tool raises; triage then answers from the error it got."""
    from trajdebug.testing import Reply, tool_call

    body = request.body
    items = body.get("input") or []
    results = [i for i in items if i.get("type") == "function_call_output"]
    if (body.get("instructions") or "").startswith("Specialist"):
        return Reply(tool_calls=(tool_call("look", {"order": "W1"}),))
    if not results:
        return Reply(tool_calls=(tool_call("specialist", {"input": "W1?"}),))
    return "The specialist could not look W1 up; try later."


class TestTheRunsOutcome:
    """Which errors are the ones the top-level ``Runner.run`` raised."""

    def test_a_rejected_last_answer_fails_the_run(self, processor: TrajdebugProcessor) -> None:
        """Runner.run raising on a rejected answer (recorded on the agent's last turn only) is a failed run."""
        from pydantic import BaseModel

        from trajdebug.testing import FakeModelServer

        class Verdict(BaseModel):
            """A structured answer the plain-text reply does not satisfy."""

            refund: bool

        with FakeModelServer(_triage_policy) as server, pytest.raises(Exception, match="Invalid JSON"):
            _run_triage(server, "Triage.", output_type=Verdict)
        run = processor.to_run()
        top = next(s for s in run.steps if s.parent_id is None)
        [err] = run.errors
        assert (run.outcome, err.stage, err.stages[-1].step_id) == ("failure", "failed", top.step_id)

    def test_a_sub_agent_failure_its_caller_recovered_is_not_the_runs(self, processor: TrajdebugProcessor) -> None:
        """An ``as_tool`` sub-agent whose run raised, its error returned to the caller's model, leaves the run a success."""
        from openai import AsyncOpenAI

        from trajdebug.testing import FakeModelServer

        async def go(server: Any) -> Any:
            async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
                look = function_tool(_look, name_override="look", failure_error_function=None)
                specialist = Agent(name="specialist", instructions="Specialist.", model=_model(client), tools=[look])
                tool = specialist.as_tool(tool_name="specialist", tool_description="Ask")
                triage = Agent(name="triage", instructions="Triage.", model=_model(client), tools=[tool])
                return await Runner.run(triage, "Where is W1?")

        with FakeModelServer(_failing_specialist_policy) as server:
            result = asyncio.run(go(server))
        run = processor.to_run()
        top = next(s for s in run.steps if s.parent_id is None)
        assert (run.outcome, run.failure_reason) == ("success", None)
        assert top.output == result.final_output
        assert all(e.stage != "failed" for e in run.errors)


class TestWhatASubAgentIsGiven:
    """A sub-agent's first model step reads what its caller's model step gave it: a data edge, not containment only."""

    @pytest.mark.parametrize("instructions", ["Triage.", "Triage: hand off."])
    def test_a_sub_agents_first_model_step_depends_on_the_model_step_that_called_it(
        self, processor: TrajdebugProcessor, instructions: str
    ) -> None:
        """The specialist's first model step, run as a tool or handed off to, depends (inferred, data) on the
        triage model step that made the call, and on no other triage step."""
        from trajdebug.testing import FakeModelServer

        with FakeModelServer(_triage_policy) as server:
            _run_triage(server, instructions)
        run = processor.to_run()
        llms = [s for s in run.steps if s.kind == "llm"]
        caller = next(s for s in llms if s.agent == "triage")
        first = next(s for s in llms if s.agent == "specialist")
        fed = [(d.step_id, d.kind, d.origin) for d in first.deps]
        assert fed == [(caller.step_id, "data", "inferred")]


_RATES = {"furniture": 0.08, "electronics": 0.15, "appliances": 0.12, "tools": 0.1}


@function_tool
def depreciation_rate(category: str) -> dict[str, Any]:
    """The yearly depreciation rate of a category of goods (a lookup that misses on case: 0.0)."""
    return {"category": category, "annual_rate": _RATES.get(category, 0.0)}


def _payout(value: float, annual_rate: float, years: int) -> dict[str, float]:
    payout = round(value * (1 - annual_rate) ** years, 2)
    if payout > 0.9 * value:
        raise ValueError(f"payout {payout} is above the depreciated ceiling")
    return {"payout": payout}


def _claims_policy(request: Any) -> Any:
    """Look the rate up for the category asked (``category;value;years``), compute the payout with it, answer."""
    import ast

    from trajdebug.testing import Reply, tool_call

    items = request.body.get("input") or []
    outs = [i["output"] for i in items if i.get("type") == "function_call_output"]
    category, value, years = next(i["content"] for i in items if i.get("role") == "user").split(";")
    if not outs:
        return Reply(tool_calls=(tool_call("depreciation_rate", {"category": category}),))
    if len(outs) == 1:
        rate = ast.literal_eval(outs[0])["annual_rate"]  # (the SDK sends the model the dict's printed text)
        return Reply(tool_calls=(tool_call("compute_payout", {"value": float(value), "annual_rate": rate,
                                                              "years": int(years)}),))
    return f"The payout is {outs[-1]}."


class TestAZeroPassingRunsNeverHad:
    def test_a_rate_looked_up_as_zero_is_flagged_against_the_passing_runs(self, processor: TrajdebugProcessor) -> None:
        """A new user's claims agent: a rate lookup missed on case and answered 0.0, printed by the SDK as a
        dict's text, where every passing run had 0.08 to 0.15; the payout then failed.  With the passing runs as
        references the lookup is the first root cause, with the zero said as such."""
        from agents import OpenAIResponsesModel
        from openai import AsyncOpenAI

        from trajdebug.analysis import analyze
        from trajdebug.testing import FakeModelServer

        payout = function_tool(_payout, name_override="compute_payout", failure_error_function=None)

        async def go(server: Any, question: str) -> None:
            async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
                model = OpenAIResponsesModel(model="gpt-4o", openai_client=client)
                agent = Agent(name="claims", instructions="Settle.", model=model, tools=[depreciation_rate, payout])
                with contextlib.suppress(Exception):  # (the failing run's payout raises out of Runner.run)
                    await Runner.run(agent, question)

        with FakeModelServer(_claims_policy) as server:
            for q in ("furniture;900;2", "electronics;1200;3", "appliances;700;1", "tools;300;4", "Electronics;1200;3"):
                asyncio.run(go(server, q))
        *refs, bad = processor.runs
        assert [r.outcome for r in processor.runs] == ["success"] * 4 + ["failure"]
        lookup = next(s for s in bad.steps if s.name == "depreciation_rate")
        assert lookup.output == "{'category': 'Electronics', 'annual_rate': 0.0}"
        top = analyze(bad, references=refs).root_causes[0]
        assert top.step_id == lookup.step_id
        assert "annual_rate=0 where every one of 4 passing runs had a non-zero value (0.08 to 0.15)" in top.reasons


def test_show_says_what_the_workflow_named_step_inside_an_agent_run_as_a_tool_is(
    processor: TrajdebugProcessor, tmp_path: Path
) -> None:
    """An agent run as a tool runs its own ``Runner.run``, whose task span the SDK names after the workflow: the
    step keeps the SDK's name, and `show` marks it a nested run, not a recursive run of the workflow (nu25 F12),
    in a note under it wrapped at words, never cut mid-word at 80 columns (nu26 F12); the top task span is not
    marked."""
    from click.testing import CliRunner

    from trajdebug.cli import cli
    from trajdebug.report.text import NESTED_RUN

    inner = Agent(name="scout", instructions="Pick.", model=ScriptedModel([[_answer("Pick FLM-106.")]]))
    call = ResponseFunctionToolCall(arguments='{"input": "pick a film"}', call_id="call_1", name="scout",
                                    type="function_call", id="fc_1")
    outer = Agent(name="programmer", instructions="Plan.", model=ScriptedModel([[call], [_answer("Booked.")]]),
                  tools=[inner.as_tool(tool_name="scout", tool_description="Pick a film")])
    asyncio.run(Runner.run(outer, "Plan the block"))
    run = processor.to_run()
    tasks = [s for s in run.steps if s.attributes.get("agents.span_type") == "task"]
    nested = [s for s in tasks if s.parent_id is not None]
    assert len(tasks) == 2 and len(nested) == 1 and nested[0].name == tasks[0].name
    out = CliRunner().invoke(cli, ["show", str(tmp_path / "runs.jsonl")], env={"COLUMNS": "300"}).output
    lines = out.splitlines()
    marked = [i for i, line in enumerate(lines) if NESTED_RUN in line]
    assert len(marked) == 1 and f"#{nested[0].step_id[-6:]}" in lines[marked[0] - 1]
    # At 80 columns the note is wrapped at words under its step, whole, never cut with an ellipsis (nu26 F12).
    narrow = CliRunner().invoke(cli, ["show", str(tmp_path / "runs.jsonl")], env={"COLUMNS": "80"}).output
    assert f"({NESTED_RUN})" in " ".join(narrow.split()) and "(an age…" not in narrow


_VISIT: dict[str, Any] = {"record": {}, "desk": "routine_desk"}
"""What the front desk's record tool answers and where its triage model hands the request: set per test."""

_CLINIC = ("urgent_desk", "routine_desk")


def _visit(urgent: bool) -> dict[str, Any]:
    return {"visit": "V-9", "patient": "P-17", "reason": "knee pain since Monday", "urgent": urgent}


@function_tool
def get_visit(visit: str) -> dict[str, Any]:
    """A visit request (the SDK sends the model the dict's printed text)."""
    return dict(_VISIT["record"])


def _clinic_policy(request: Any) -> Any:
    """Triage reads the record, then hands it to the desk set in ``_VISIT``; a desk answers."""
    from trajdebug.testing import Reply, tool_call

    body = request.body
    if not str(body.get("instructions") or "").startswith("Triage"):
        return "Booked for Tuesday."
    outs = [i for i in body.get("input") or [] if i.get("type") == "function_call_output"]
    if not outs:
        return Reply(tool_calls=(tool_call("get_visit", {"visit": "V-9"}),))
    return Reply(tool_calls=(tool_call(f"transfer_to_{_VISIT['desk']}", {}),))


class TestAHandOffAgainstItsRequest:
    def _hand_off(
        self, processor: TrajdebugProcessor, record: dict[str, Any], desk: str, desks: tuple[str, ...] = _CLINIC
    ) -> list[str]:
        """Run the triage once and return what the routing finding says of its hand-off."""
        from agents import OpenAIResponsesModel
        from openai import AsyncOpenAI

        from trajdebug.analysis.diagnosers import DiagnoseContext, registered_diagnosers
        from trajdebug.testing import FakeModelServer

        async def go(server: Any) -> None:
            async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
                model = OpenAIResponsesModel(model="gpt-4o", openai_client=client)
                agents = [Agent(name=n, instructions="Help.", model=model) for n in desks]
                triage = Agent(name="triage", instructions="Triage the request.", model=model, tools=[get_visit],
                               handoffs=list(agents))
                await Runner.run(triage, "New request V-9")

        _VISIT.update(record=record, desk=desk)
        with FakeModelServer(_clinic_policy) as server:
            asyncio.run(go(server))
        run = processor.to_run()
        handing = next(s for s in run.steps if s.kind == "llm" and "transfer_to_" in str(s.output))
        ctx = DiagnoseContext.build(run, diagnosers=registered_diagnosers())
        return [e.reason for e in ctx.verdict(handing.step_id).evidence if e.diagnoser == "option-choice"]

    def test_a_switched_off_flag_names_no_agent_to_hand_to(self, processor: TrajdebugProcessor) -> None:
        """A visit the tool printed with ``'urgent': False``, handed to the routine desk: the flag says the visit
        is not urgent, so its name is no word of the request pointing at the urgent desk; nothing is said."""
        assert self._hand_off(processor, _visit(urgent=False), "routine_desk") == []

    def test_a_switched_on_flag_still_names_the_agent_it_points_at(self, processor: TrajdebugProcessor) -> None:
        """The same visit printed with ``'urgent': True`` and handed to the routine desk is routed away from
        the urgent desk its request names."""
        [reason] = self._hand_off(processor, _visit(urgent=True), "routine_desk")
        assert "'routine_desk'" in reason and "'urgent_desk'" in reason

    @pytest.mark.parametrize(
        ("flag", "desks"),
        [("delivered", ("delivery_desk", "billing_desk")), ("verified", ("verification_desk", "billing_desk"))],
    )
    def test_a_switched_off_state_flag_still_clears_the_agent_it_names(
        self, processor: TrajdebugProcessor, flag: str, desks: tuple[str, ...]
    ) -> None:
        """An order printed with a state flag switched off (``'delivered': False``: the parcel has not come)
        beside a billing address, handed to the desk the flag names: the flag is the request's topic, so it
        clears that desk, and the address's word does not accuse the hand-off of belonging to billing."""
        order = {"order": "O-9", "customer": "C-17", flag: False, "billing_address": "12 Elm St, Leeds"}
        assert self._hand_off(processor, order, desks[0], desks) == []


def _typed_lookup(name: str, age: int) -> str:
    """Find a user's id by name and age."""
    return f"u-{name}-{age}"



def _run_support(server: Any, *, tools: Any = (), max_turns: int = 10, timeout: float | None = None, **kwargs: Any) -> Any:
    """Runner.run of a support agent on the Chat Completions model, optionally under a timeout."""
    from openai import AsyncOpenAI

    async def go() -> Any:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            agent = Agent(name="support", instructions="Help.", model=_model(client, chat_completions=True),
                          tools=list(tools), **kwargs)
            return await asyncio.wait_for(Runner.run(agent, "who is ana?", max_turns=max_turns), timeout)

    return asyncio.run(go())


def _tripped_guardrail(kind: str) -> dict[str, Any]:
    """An input or output guardrail whose tripwire always triggers."""
    from agents import GuardrailFunctionOutput, input_guardrail, output_guardrail

    async def never(ctx: Any, agent: Any, value: Any) -> GuardrailFunctionOutput:
        """Trips on everything."""
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    if kind == "input":
        return {"input_guardrails": [input_guardrail(never)]}
    return {"output_guardrails": [output_guardrail(never)]}


class TestEveryWayRunnerRunRaises:
    """Each way ``Runner.run`` raises is a failed run whose failing step is marked; a recovered tool error is not."""

    @pytest.mark.parametrize("arguments", [{"name": "ana", "age": "old"}, '{"name": '], ids=["schema", "json"])
    def test_arguments_the_tools_schema_rejects_fail_the_run_at_the_tool(
        self, processor: TrajdebugProcessor, arguments: Any
    ) -> None:
        """A strict tool called with invalid arguments: the SDK records the error on the tool span only and raises
        ``ModelBehaviorError``; the run fails, its one error occurred at the tool."""
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        strict = function_tool(_typed_lookup, name_override="lookup", failure_error_function=None)
        script = [Reply(tool_calls=(tool_call("lookup", arguments),)), "done"]
        with FakeModelServer(script) as server, pytest.raises(Exception, match="Invalid JSON input for tool lookup"):
            _run_support(server, tools=[strict])
        run = processor.to_run()
        tool = next(s for s in run.steps if s.kind == "tool")
        top = next(s for s in run.steps if s.parent_id is None)
        [err] = run.errors
        assert (run.outcome, err.step_id, tool.status) == ("failure", tool.step_id, "error")
        assert [(c.stage, c.step_id) for c in err.stages] == [("occurred", tool.step_id), ("failed", top.step_id)]
        assert "Invalid JSON input for tool lookup" in (run.failure_reason or "")

    def test_invalid_arguments_fed_back_to_the_model_leave_the_run_a_success(self, processor: TrajdebugProcessor) -> None:
        """The default tool sends the validation error to the model, which answers: recovered, a success."""
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        script = [Reply(tool_calls=(tool_call("lookup", {"name": "ana", "age": "old"}),)), "I could not look ana up."]
        with FakeModelServer(script) as server:
            _run_support(server, tools=[function_tool(_typed_lookup, name_override="lookup")])
        run = processor.to_run()
        [err] = run.errors
        assert (run.outcome, run.failure_reason, err.stage) == ("success", None, "recovered")

    def test_a_model_call_the_sdk_retried_leaves_the_run_a_success(self, processor: TrajdebugProcessor) -> None:
        """A model error the SDK's retry settings retried: the failed attempt keeps its error, the run succeeds."""
        from agents import ModelSettings
        from agents.retry import ModelRetrySettings, retry_policies

        from trajdebug.testing import FakeModelServer, Reply

        retry = ModelRetrySettings(max_retries=1, backoff={"initial_delay": 0.01}, policy=retry_policies.http_status([500]))
        with FakeModelServer([Reply(status=500, error="overloaded"), "The id is u-3ana."]) as server:
            result = _run_support(server, model_settings=ModelSettings(retry=retry))
        run = processor.to_run()
        [err] = run.errors
        assert result.final_output == "The id is u-3ana."
        assert (run.outcome, run.step(err.step_id).kind, err.stage) == ("success", "llm", "occurred")

    @pytest.mark.parametrize(
        ("case", "raised", "failing"),
        [
            ("tool raises", "user database down", "tool"),
            ("max turns", "Max turns", "agent"),
            ("input guardrail", "Guardrail", "turn"),
            ("output guardrail", "Guardrail", "agent"),
            ("http 400", "context too long", "llm"),
            ("unknown tool", "not found", "turn"),
        ],
    )
    def test_each_raise_is_a_failed_run_with_its_failing_step(
        self, processor: TrajdebugProcessor, case: str, raised: str, failing: str
    ) -> None:
        """Runner.run raising for a tool, max turns, a guardrail tripwire, a model API error or an unknown tool:
        one error, occurred at the step that ended the run, failed at the run's top step."""
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        call = Reply(tool_calls=(tool_call("lookup_user", {"name": "ana"}),))
        kwargs: dict[str, Any] = {"tools": [lookup_user]}
        script: list[Any] = [call, "The id is u-3ana."]
        if case == "tool raises":
            kwargs["tools"] = [function_tool(_raise_db_down, name_override="lookup_user", failure_error_function=None)]
        elif case == "max turns":
            script, kwargs["max_turns"] = [call, call, call], 2
        elif case.endswith("guardrail"):
            kwargs.update(_tripped_guardrail(case.split()[0]))
        elif case == "http 400":
            script = [Reply(status=400, error="context too long")]
        else:
            script = [Reply(tool_calls=(tool_call("nope", {}),)), "done"]
        with FakeModelServer(script) as server, pytest.raises(Exception, match=raised):
            _run_support(server, **kwargs)
        run = processor.to_run()
        top = next(s for s in run.steps if s.parent_id is None)
        [err] = run.errors
        at = run.step(err.step_id)
        kind = at.attributes["agents.span_type"] if at.kind == "agent" else at.kind
        assert (run.outcome, err.stage, err.stages[-1].step_id, kind) == ("failure", "failed", top.step_id, failing)
        assert at.status == "error" and run.failure_reason

    def test_a_run_cut_short_from_outside_fails_by_fail_on_raise(
        self, processor: TrajdebugProcessor, tmp_path: Path
    ) -> None:
        """A timeout leaves no error in the trace; ``fail_on_raise`` fails the run in memory and in its file,
        and a run that ended inside the block without raising stays a success."""
        from trajdebug.sources.load import load_runs
        from trajdebug.testing import FakeModelServer, Reply

        with FakeModelServer(_lookup_then_answer) as server, processor.fail_on_raise():
            _run_support(server, tools=[lookup_user])
        assert processor.to_run().outcome == "success"
        with (
            FakeModelServer([Reply(text="late", delay=2.0)]) as server,
            pytest.raises(TimeoutError),
            processor.fail_on_raise(),
        ):
            _run_support(server, timeout=0.5)
        run = processor.to_run()
        assert (run.outcome, run.failure_reason) == ("failure", "TimeoutError")
        saved = {r.run_id: r.outcome for r in load_runs(tmp_path / "runs.jsonl")}
        assert saved == {processor.runs[0].run_id: "success", run.run_id: "failure"}
