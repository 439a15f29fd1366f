"""Shared plumbing of suite_zzzc's agents: the model client, message helpers, the OTLP tracer."""

from __future__ import annotations

import json
from typing import Any

_CLIENTS: dict[str, Any] = {}


def client(server):
    from openai import OpenAI

    url = server.base_url
    if url not in _CLIENTS:
        _CLIENTS[url] = OpenAI(base_url=url, api_key="not-needed", max_retries=0)
    return _CLIENTS[url]


def complete(server, messages, **kw) -> str:
    reply = client(server).chat.completions.create(model=server.model, messages=messages, **kw)
    return reply.choices[0].message.content


def messages_of(request) -> list[dict]:
    body = request.body
    if "messages" in body:
        return body["messages"]
    items = body.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return list(items or [])


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def system_of(request) -> str:
    body = request.body
    if body.get("instructions"):
        return body["instructions"]
    for m in messages_of(request):
        if m.get("role") in ("system", "developer"):
            return text_of(m)
    return ""


def last_user(request) -> str:
    for m in reversed(messages_of(request)):
        if m.get("role") == "user":
            return text_of(m)
    return ""


def payload_after(text: str, marker: str) -> Any:
    """The JSON value written after `marker` in a prompt."""
    i = text.index(marker) + len(marker)
    return json.JSONDecoder().raw_decode(text[i:].lstrip())[0]


_OTLP: dict[str, Any] = {}


def otlp():
    """One tracer provider with an in-memory exporter, and the OpenAI client instrumented once."""
    if not _OTLP:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "suite-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _OTLP.update(exporter=exporter, provider=provider, instrumentor=OpenAIInstrumentor())
    _OTLP["instrumentor"].instrument(tracer_provider=_OTLP["provider"])
    _OTLP["exporter"].clear()
    return _OTLP["provider"], _OTLP["exporter"]


def write_otlp(exporter, path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    _OTLP["instrumentor"].uninstrument()  # the other routes' clients stay uninstrumented
    spans = exporter.get_finished_spans()
    doc = MessageToDict(encode_spans(spans))
    with open(path, "w") as f:
        json.dump({"resourceSpans": doc.get("resourceSpans", [])}, f)
    exporter.clear()
