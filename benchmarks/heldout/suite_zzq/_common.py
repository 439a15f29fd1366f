"""Shared plumbing of the suite's agents: route helpers (not the agents' logic)."""

from __future__ import annotations

import json
import os

_OTLP = {}
_LOOP = {}


def dumps(value) -> str:
    return json.dumps(value, sort_keys=True)


def fresh(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)


def chat_client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def system_of(request) -> str:
    """The system prompt of a Chat Completions request (the brains dispatch on it)."""
    for m in request.body.get("messages", []):
        if m.get("role") == "system":
            return m.get("content") or ""
    return ""


def last_user(request) -> str:
    for m in reversed(request.body.get("messages", [])):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


# --- LangGraph -------------------------------------------------------------------------------

def chat_model(server):
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0,
                      temperature=0)


def run_graph(graph, state: dict, path: str, name: str, task: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    fresh(path)
    tracer = TrajdebugTracer(path=path, name=name, task=task)
    try:
        graph.invoke(state, config={"callbacks": [tracer], "recursion_limit": 200})
    except Exception:  # the validator raised: the run is recorded as failed
        pass


# --- OpenAI Agents SDK -------------------------------------------------------------------------

def run_agent(server, agent, message: str, path: str, name: str, task: str, api: str = "responses") -> None:
    import asyncio

    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    fresh(path)
    set_default_openai_client(AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))
    set_default_openai_api(api)
    set_trace_processors([TrajdebugProcessor(path=path, name=name, task=task)])
    if "loop" not in _LOOP:
        _LOOP["loop"] = asyncio.new_event_loop()
    try:
        _LOOP["loop"].run_until_complete(
            Runner.run(agent, message, max_turns=60, run_config=RunConfig(workflow_name=name)))
    except Exception:  # the validator raised: the run is recorded as failed
        pass
    finally:
        set_trace_processors([])


def tool_outputs(request) -> list:
    """The function-call outputs a Responses (or Chat Completions) request carries, in order, parsed."""
    import ast

    outs = []
    body = request.body
    items = body.get("input") if isinstance(body.get("input"), list) else body.get("messages", [])
    for item in items or []:
        if not isinstance(item, dict):
            continue
        text = None
        if item.get("type") == "function_call_output":
            text = item.get("output")
        elif item.get("role") == "tool":
            text = item.get("content")
        if text is None:
            continue
        if isinstance(text, list):
            text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
        try:
            outs.append(ast.literal_eval(text))
        except Exception:
            outs.append(text)
    return outs


def tool_calls_made(request) -> list:
    """The names of the function calls already made in a request's conversation, in order."""
    body = request.body
    names = []
    items = body.get("input") if isinstance(body.get("input"), list) else body.get("messages", [])
    for item in items or []:
        if isinstance(item, dict) and item.get("type") == "function_call":
            names.append(item.get("name"))
        elif isinstance(item, dict) and item.get("role") == "assistant":
            for tc in item.get("tool_calls") or []:
                names.append(tc["function"]["name"])
    return names


# --- OpenTelemetry / OpenInference ---------------------------------------------------------------

def otlp_tracer():
    """One provider and in-memory exporter for the process; the openai client instrumented once."""
    if not _OTLP:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        from opentelemetry.sdk.trace.id_generator import IdGenerator
        import random

        class SeededIds(IdGenerator):
            """Span and trace ids from a seeded generator, so a generation is reproducible."""

            rng = random.Random(0)

            def generate_span_id(self) -> int:
                return self.rng.getrandbits(64) or 1

            def generate_trace_id(self) -> int:
                return self.rng.getrandbits(128) or 1

        spans = InMemorySpanExporter()
        provider = TracerProvider(id_generator=SeededIds())
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTLP.update(spans=spans, provider=provider)
    _OTLP["spans"].clear()
    return _OTLP["provider"]


def otlp_dump(path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    fresh(path)
    spans = _OTLP["spans"].get_finished_spans()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(spans)), f)
    _OTLP["spans"].clear()


def span(tracer, name: str, kind: str, inp=None, **attrs):
    """A span of OpenInference kind `kind` (TOOL, CHAIN, AGENT, RETRIEVER...) with its input."""
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = inp if isinstance(inp, str) else dumps(inp)
        a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
    a.update(attrs)
    return tracer.start_as_current_span(name, attributes=a)


def set_output(sp, value) -> None:
    sp.set_attribute("output.value", value if isinstance(value, str) else dumps(value))
    sp.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
