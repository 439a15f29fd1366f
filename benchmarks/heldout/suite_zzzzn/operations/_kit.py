"""Small helpers shared by the agents: JSON text, chat-message access for the brains, OTLP encoding."""

from __future__ import annotations

import json
from typing import Any


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))


def chat_messages(request: Any) -> list[dict[str, Any]]:
    """The chat messages of a Chat Completions request, or the Responses API input as messages."""
    body = request.body
    if "messages" in body:
        return list(body["messages"])
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return out + [{"role": "user", "content": items}]
    for item in items or []:
        typ = item.get("type")
        if typ == "function_call_output":
            out.append({"role": "tool", "content": item.get("output"), "tool_call_id": item.get("call_id")})
        elif typ == "function_call":
            out.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": item.get("call_id"), "function": {"name": item["name"], "arguments": item["arguments"]}}]})
        elif item.get("role"):
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append({"role": item["role"], "content": content})
    return out


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def system_text(messages: list[dict[str, Any]]) -> str:
    return next((text_of(m) for m in messages if m.get("role") in ("system", "developer")), "")


def tool_results(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool results in order, each {"name", "arguments", "content"} (name from the call that asked for it)."""
    calls: dict[str, tuple[str, Any]] = {}
    out = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or c
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else args
            except ValueError:
                pass
            calls[c.get("id")] = (fn.get("name"), args)
        if m.get("role") == "tool":
            name, args = calls.get(m.get("tool_call_id"), (None, None))
            out.append({"name": name, "arguments": args, "content": text_of(m)})
    return out


def otlp_document(spans: Any) -> dict[str, Any]:
    """One OTLP JSON document, {"resourceSpans": [...]}, of finished OpenTelemetry SDK spans."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return MessageToDict(encode_spans(spans))


# ----------------------------------------------------------------------------------------------- OpenTelemetry

_OTEL: dict[str, Any] = {}


def otel() -> tuple[Any, Any]:
    """The process's tracer provider (with an in-memory exporter) for the OTLP agents, made once."""
    if "provider" not in _OTEL:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _OTEL.update(provider=provider, exporter=exporter)
    return _OTEL["provider"], _OTEL["exporter"]


def instrument_openai() -> None:
    """OpenInference's instrumentation of the `openai` client, on the OTLP agents' provider."""
    if not _OTEL.get("instrumented"):
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=otel()[0])
        _OTEL["instrumented"] = True


def uninstrument_openai() -> None:
    if _OTEL.pop("instrumented", False):
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().uninstrument()


def _value(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "text/plain"
    return json.dumps(value), "application/json"


def traced(tracer: Any, name: str, kind: str, fn: Any, inputs: dict[str, Any], **attrs: Any) -> Any:
    """Call fn(**inputs) inside an OpenInference span of `kind` (TOOL, CHAIN, RETRIEVER, GUARDRAIL, ...), its
    input and output recorded as `input.value` / `output.value`; an exception is recorded and re-raised."""
    text, mime = _value(inputs)
    base = {"openinference.span.kind": kind, "input.value": text, "input.mime_type": mime}
    if kind == "TOOL":
        base["tool.name"] = name
    base.update(attrs)
    with tracer.start_as_current_span(name, attributes=base) as span:
        result = fn(**inputs)
        out, omime = _value(result)
        span.set_attribute("output.value", out)
        span.set_attribute("output.mime_type", omime)
        return result


def write_otlp(path: str, spans: Any) -> None:
    with open(path, "w") as f:
        json.dump(otlp_document(spans), f)
