"""Tests for the OpenAI Agents SDK tracing processor, with the SDK's own tracing objects and runner (no network)."""

from __future__ import annotations

import asyncio
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

from trajdebug.format import read_jsonl
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
