"""The four recording routes, as the agents of suite J use them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


MODEL = "gpt-4o-mini"


# -- sdk: trajdebug's recorder, the model through the openai client ----------------------------------


_CLIENTS: dict[tuple[str, str], Any] = {}


def _cached(kind: str, server: Any, make: Any) -> Any:
    """One client per server and kind: building an HTTP client per run costs more than the run."""
    key = (kind, server.base_url)
    if key not in _CLIENTS:
        _CLIENTS[key] = make()
    return _CLIENTS[key]


def openai_client(server: Any) -> Any:
    return _cached("openai", server, lambda: _openai_client(server))


def _openai_client(server: Any) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=server.base_url, api_key="sk-local-not-used", max_retries=0, timeout=10)


def sdk_chat(client: Any, name: str, msgs: list[dict[str, Any]]) -> str:
    """One model call as an ``llm`` step: messages in, the assistant's message out."""
    import trajdebug

    with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
        reply = client.chat.completions.create(model=MODEL, messages=msgs, temperature=0)
        text = reply.choices[0].message.content or ""
        s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                completion_tokens=reply.usage.completion_tokens)
        s.output = {"role": "assistant", "content": text}
    return text


# -- otlp: openinference on the openai client plus the agent's own spans ------------------------------

_OTEL: dict[str, Any] = {}


def otel() -> dict[str, Any]:
    """One tracer provider with an in-memory exporter and the openai instrumentor (set up once)."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "suite-j-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(exporter=exporter, provider=provider, tracer=provider.get_tracer("suite_j.agents"))
    return _OTEL


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


@contextmanager
def span(name: str, kind: str, value: Any = None, **attrs: Any) -> Iterator[Any]:
    """An OpenInference span of ``kind`` (AGENT, CHAIN, TOOL, RETRIEVER); ``.output(v)`` sets its output."""
    tracer = otel()["tracer"]
    with tracer.start_as_current_span(name) as sp:
        sp.set_attribute("openinference.span.kind", kind)
        if value is not None:
            sp.set_attribute("input.value", _value(value))
            sp.set_attribute("input.mime_type", "application/json" if not isinstance(value, str) else "text/plain")
        for k, v in attrs.items():
            sp.set_attribute(k.replace("__", "."), v)

        def output(v: Any) -> Any:
            sp.set_attribute("output.value", _value(v))
            sp.set_attribute("output.mime_type", "application/json" if not isinstance(v, str) else "text/plain")
            return v

        sp.output = output  # type: ignore[attr-defined]
        yield sp


def otlp_begin() -> None:
    otel()["exporter"].clear()


def otlp_write(path: Path) -> None:
    """Write the finished spans as one OTLP/JSON export request (the protobuf JSON mapping)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = otel()["exporter"].get_finished_spans()
    request = encode_spans(spans)
    Path(path).write_text(json.dumps(MessageToDict(request)), encoding="utf-8")
    otel()["exporter"].clear()


def otlp_chat(client: Any, msgs: list[dict[str, Any]], **kw: Any) -> Any:
    """A model call through the instrumented openai client (openinference writes its LLM span)."""
    return client.chat.completions.create(model=MODEL, messages=msgs, temperature=0, **kw)


# -- langgraph -------------------------------------------------------------------------------------


def chat_openai(server: Any) -> Any:
    return _cached("langchain", server, lambda: _chat_openai(server))


def _chat_openai(server: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(base_url=server.base_url, api_key="sk-local-not-used", model=MODEL, max_retries=0,
                      temperature=0, timeout=10)


# -- openai agents ---------------------------------------------------------------------------------


def agents_model(server: Any) -> Any:
    return _cached("agents", server, lambda: _agents_model(server))


def _agents_model(server: Any) -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="sk-local-not-used", max_retries=0, timeout=10)
    return OpenAIChatCompletionsModel(model=MODEL, openai_client=client)


def agents_processor(path: Path, name: str, task: str) -> Any:
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    processor = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([processor])
    return processor
