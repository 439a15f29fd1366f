"""OpenTelemetry plumbing for the OTLP route: one in-memory provider, OpenInference spans, OTLP/JSON files."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_STATE: dict[str, Any] = {}


def tracer():
    if "tracer" not in _STATE:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "ops-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _STATE.update(exporter=exporter, provider=provider, tracer=provider.get_tracer("ops-agents"))
    return _STATE["tracer"]


def begin() -> None:
    tracer()
    _STATE["exporter"].clear()


def write(path: str) -> None:
    spans = _STATE["exporter"].get_finished_spans()
    doc = MessageToDict(encode_spans(spans))
    Path(path).write_text(json.dumps(doc))
    _STATE["exporter"].clear()


class Span:
    def __init__(self, span) -> None:
        self.span = span

    def output(self, value: Any) -> Any:
        text = value if isinstance(value, str) else json.dumps(value)
        self.span.set_attribute("output.value", text)
        self.span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


@contextmanager
def span(name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[Span]:
    with tracer().start_as_current_span(name) as s:
        s.set_attribute("openinference.span.kind", kind)
        if input is not None:
            s.set_attribute("input.value", input if isinstance(input, str) else json.dumps(input))
            s.set_attribute("input.mime_type", "text/plain" if isinstance(input, str) else "application/json")
        if kind == "TOOL":
            s.set_attribute("tool.name", name)
        for k, v in attrs.items():
            s.set_attribute(k.replace("__", "."), v)
        yield Span(s)
