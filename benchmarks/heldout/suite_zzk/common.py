"""Helpers shared by the suite_zzk agents: reading fake-server requests, model calls, OTLP spans."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any


MODEL = "fake-model"


# -- the scripted model's view of a request ---------------------------------------------------------


def messages(request: Any) -> list[dict[str, Any]]:
    """The request's messages as ``{"role", "content"}`` dicts (Chat Completions or Responses API)."""
    body = request.body or {}
    if "messages" in body:
        out = []
        for m in body["messages"]:
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
            out.append({**m, "content": content})
        return out
    out = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for item in items or []:
        typ = item.get("type")
        if typ == "function_call_output":
            out.append({"role": "tool", "content": item.get("output"), "tool_call_id": item.get("call_id")})
        elif typ == "function_call":
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": item.get("call_id"),
                            "function": {"name": item.get("name"), "arguments": item.get("arguments")},
                        }
                    ],
                }
            )
        else:
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
            out.append({"role": item.get("role", "user"), "content": content})
    return out


def system_text(request: Any) -> str:
    return next((m["content"] or "" for m in messages(request) if m["role"] in ("system", "developer")), "")


def last_user(request: Any) -> str:
    return next((m["content"] or "" for m in reversed(messages(request)) if m["role"] == "user"), "")


def tool_results(request: Any) -> list[Any]:
    """The tool results the conversation holds so far, oldest first (decoded when JSON)."""
    out = []
    for m in messages(request):
        if m["role"] == "tool":
            out.append(loads(m["content"]))
    return out


def tool_calls_made(request: Any) -> list[tuple[str, Any]]:
    """(name, arguments) of the tool calls the assistant made so far, oldest first."""
    out = []
    for m in messages(request):
        for call in m.get("tool_calls") or []:
            fn = call.get("function") or {}
            out.append((fn.get("name"), loads(fn.get("arguments"))))
    return out


def loads(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except ValueError:
        return value


def json_blocks(text: str) -> list[Any]:
    """Every fenced ```json block in a model answer, decoded."""
    return [json.loads(b) for b in re.findall(r"```json\s*(.*?)```", text, flags=re.S)]


def payload(text: str, tag: str) -> Any:
    """The JSON written after ``TAG:`` on its own line in a prompt."""
    m = re.search(rf"^{re.escape(tag)}:\s*(.+)$", text, flags=re.M)
    return json.loads(m.group(1)) if m else None


# -- OTLP: OpenInference-style spans to an OTLP/JSON file ---------------------------------------------


class Otlp:
    """One tracer provider with an in-memory exporter; each run's spans go to one OTLP/JSON file."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    @contextmanager
    def instrumented(self) -> Iterator[Otlp]:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        try:
            yield self
        finally:
            OpenAIInstrumentor().uninstrument()

    @contextmanager
    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any) -> Iterator[Span]:
        attributes = {"openinference.span.kind": kind, **attrs}
        if inp is not None:
            attributes.update(_value("input", inp))
        with self.tracer.start_as_current_span(name, attributes=attributes) as otel:
            yield Span(otel)

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        spans = self.exporter.get_finished_spans()
        path.write_text(json.dumps(MessageToDict(encode_spans(spans))) + "\n")
        self.exporter.clear()


class Span:
    def __init__(self, otel: Any) -> None:
        self.otel = otel

    def output(self, value: Any) -> Any:
        for k, v in _value("output", value).items():
            self.otel.set_attribute(k, v)
        return value

    def set(self, key: str, value: Any) -> None:
        self.otel.set_attribute(key, value)


def _value(prefix: str, value: Any) -> dict[str, str]:
    if isinstance(value, str):
        return {f"{prefix}.value": value, f"{prefix}.mime_type": "text/plain"}
    return {f"{prefix}.value": json.dumps(value), f"{prefix}.mime_type": "application/json"}
