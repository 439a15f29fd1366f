"""The four recording routes, set up the way a user of each stack would set them up.

1. LangGraph + ``langchain_openai.ChatOpenAI`` + `trajdebug.integrations.langchain.TrajdebugTracer`
2. OpenAI Agents SDK (``OpenAIChatCompletionsModel``) + `trajdebug.integrations.openai_agents.TrajdebugProcessor`
3. ``openai`` client instrumented by ``openinference-instrumentation-openai``, own OpenInference spans,
   OTel SDK with an in-memory exporter, spans written as OTLP/JSON
4. the trajdebug recording SDK (``trajdebug.run`` / ``@trajdebug.step``) with a plain Python fake LLM

Every model call goes to one `ScriptedModelServer` on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import random
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakellm import Reply, ScriptedModelServer
from harness import FAULT, stable_hex


_SERVER: ScriptedModelServer | None = None


def server() -> ScriptedModelServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = ScriptedModelServer().__enter__()
    return _SERVER


def stop_server() -> None:
    global _SERVER
    if _SERVER is not None:
        _SERVER.__exit__(None, None, None)
        _SERVER = None


def install(policy: Callable[[dict[str, Any]], Reply]) -> None:
    """Install the scripted model for the next run (each request counts as one model call)."""

    def counted(body: dict[str, Any]) -> Reply:
        FAULT.llm_tick()
        return policy(body)

    server().session(counted)


# -- 1. LangGraph ------------------------------------------------------------------------


def chat_model(model: str = "gpt-4o-mini", **kw: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=model, base_url=server().base_url, api_key="sk-suite-c-local", max_retries=0, temperature=0, **kw
    )


def invoke_graph(graph: Any, state: dict[str, Any], path: Path, *, run_name: str, key: str) -> str:
    """Invoke a compiled graph with the trajdebug tracer; returns the run id, re-raises the run's exception."""
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=path, metadata={"suite": "heldout-c"})
    run_id = uuid.UUID(stable_hex(key))
    config = {"callbacks": [tracer], "run_name": run_name, "run_id": run_id, "recursion_limit": 60}
    graph.invoke(state, config=config)
    return tracer.to_run().run_id


# -- 2. OpenAI Agents SDK ------------------------------------------------------------------

_AGENTS_CLIENT: Any = None


def agents_model(model: str = "gpt-4.1-mini") -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    global _AGENTS_CLIENT
    if _AGENTS_CLIENT is None:
        _AGENTS_CLIENT = AsyncOpenAI(base_url=server().base_url, api_key="sk-suite-c-local", max_retries=0)
    return OpenAIChatCompletionsModel(model=model, openai_client=_AGENTS_CLIENT)


def run_agents(
    agent: Any, user_input: str, path: Path, *, workflow: str, key: str, context: Any = None, max_turns: int = 20
) -> str:
    """Run an Agents SDK agent with the trajdebug processor; returns the trace's run id."""
    from agents import RunConfig, Runner, set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=path)
    set_trace_processors([proc])
    trace_id = "trace_" + stable_hex(key)
    cfg = RunConfig(workflow_name=workflow, trace_id=trace_id, trace_metadata={"suite": "heldout-c"})

    async def go() -> Any:
        global _AGENTS_CLIENT
        try:
            return await Runner.run(agent, user_input, run_config=cfg, context=context, max_turns=max_turns)
        finally:
            # the client's connection pool belongs to this event loop
            client, _AGENTS_CLIENT = _AGENTS_CLIENT, None
            if client is not None:
                await client.close()

    try:
        asyncio.run(go())
    finally:
        set_trace_processors([])
    return trace_id.removeprefix("trace_")


# -- 3. OpenInference / OTLP JSON ------------------------------------------------------------


def _id_generator_base() -> type:
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    return IdGenerator


class _SeededIds(_id_generator_base()):  # type: ignore[misc]
    """An OTel id generator that gives the same ids for the same run key (reproducible files)."""

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def is_trace_id_random(self) -> bool:
        return False

    def generate_span_id(self) -> int:
        return self.rng.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self.rng.getrandbits(128) or 1


_OTEL: dict[str, Any] = {}


def otel() -> dict[str, Any]:
    """The tracer provider, in-memory exporter and instrumented ``openai`` client (set up once)."""
    if not _OTEL:
        from openai import OpenAI
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        ids = _SeededIds()
        provider = TracerProvider(
            resource=Resource.create({"service.name": "suite-c-agents", "deployment.environment": "bench"}),
            id_generator=ids,  # type: ignore[arg-type]
        )
        exporter = InMemorySpanExporter()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        client = OpenAI(base_url=server().base_url, api_key="sk-suite-c-local", max_retries=0)
        _OTEL.update(provider=provider, exporter=exporter, ids=ids, client=client)
    return _OTEL


def otel_tracer(name: str) -> Any:
    return otel()["provider"].get_tracer(name, "1.0.0")


def openai_client() -> Any:
    return otel()["client"]


def otlp_run(fn: Callable[[], Any], path: Path, *, key: str) -> str:
    """Run ``fn`` (which opens its own root span), write its spans as OTLP/JSON; returns the trace id."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    o = otel()
    o["exporter"].clear()
    o["ids"].rng.seed(stable_hex(key))
    try:
        fn()
    finally:
        o["provider"].force_flush()
        spans = o["exporter"].get_finished_spans()
        envelope = MessageToDict(encode_spans(spans))
        path.write_text(json.dumps(envelope))
        o["exporter"].clear()
    roots = [s for s in spans if s.parent is None]
    return f"{roots[0].context.trace_id:032x}" if roots else ""


def merge_otlp(paths: list[Path], out: Path) -> None:
    merged: list[Any] = []
    for p in paths:
        merged.extend(json.loads(p.read_text()).get("resourceSpans", []))
    out.write_text(json.dumps({"resourceSpans": merged}))
