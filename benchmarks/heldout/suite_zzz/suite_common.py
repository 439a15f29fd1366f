"""Shared plumbing for the suite's agents: the model client, OTLP writing, small helpers."""
from __future__ import annotations

import json
from typing import Any


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def system_text(request) -> str:
    msgs = request.body.get("messages") or []
    for m in msgs:
        if m.get("role") == "system":
            c = m.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def tool_results(request) -> list[dict]:
    """Tool messages of a Chat Completions request, in order: [{'name'?, 'content', 'id'}]."""
    out = []
    names = {}
    for m in request.body.get("messages") or []:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out.append({"id": m.get("tool_call_id"), "name": names.get(m.get("tool_call_id")), "content": m.get("content")})
    return out


def chat(client, model: str, system: str, user: str, **kw: Any) -> str:
    reply = client.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0,
        **kw,
    )
    return reply.choices[0].message.content


def dumps(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


_OTEL = {}


def otel():
    """One TracerProvider with an in-memory exporter, and the OpenAI client instrumented (OpenInference)."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "workshop-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(spans=spans, provider=provider)
    return _OTEL["provider"], _OTEL["spans"]


def write_otlp(spans, path):
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans.get_finished_spans()))
    with open(path, "w") as f:
        json.dump({"resourceSpans": doc.get("resourceSpans", [])}, f)


def span_attrs(kind: str, inp: Any = None, out: Any = None) -> dict:
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = json.dumps(inp)
        a["input.mime_type"] = "application/json"
    if out is not None:
        a["output.value"] = json.dumps(out)
        a["output.mime_type"] = "application/json"
    return a
