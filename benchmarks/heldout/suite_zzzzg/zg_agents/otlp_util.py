"""OpenTelemetry plumbing shared by the two OTLP agents: an SDK tracer provider with an in-memory exporter,
the OpenAI client instrumented by OpenInference, spans of the agent's own with OpenInference attributes,
and the finished trace written as one OTLP JSON document ({"resourceSpans": [...]})."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


_STATE: dict[str, Any] = {}


def setup(service: str) -> Any:
    """The tracer for one agent (its own provider and exporter); the OpenAI client instrumented with it."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if service not in _STATE:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _STATE[service] = (provider, exporter, provider.get_tracer(service))
    provider, exporter, tracer = _STATE[service]
    exporter.clear()
    instrumentor = OpenAIInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:
        instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=provider)
    return tracer


def finish(service: str, path: str) -> None:
    """Write the spans of the run as one OTLP JSON document and take the instrumentation off."""
    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    OpenAIInstrumentor().uninstrument()
    _, exporter, _ = _STATE[service]
    doc = MessageToDict(encode_spans(exporter.get_finished_spans()))
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"resourceSpans": doc["resourceSpans"]}, f)
    exporter.clear()


class Handle:
    def __init__(self, span: Any) -> None:
        self.span = span
        self.output: Any = None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@contextmanager
def span(tracer: Any, name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[Handle]:
    """A span of the agent's own: OpenInference kind, input and (when set on the handle) output."""
    attributes = {"openinference.span.kind": kind}
    if input is not None:
        attributes["input.value"] = _text(input)
        attributes["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
    attributes.update({k.replace("__", "."): v for k, v in attrs.items()})
    with tracer.start_as_current_span(name, attributes=attributes) as sp:
        h = Handle(sp)
        yield h
        if h.output is not None:
            sp.set_attribute("output.value", _text(h.output))
            sp.set_attribute("output.mime_type", "text/plain" if isinstance(h.output, str) else "application/json")


def documents(h: Handle, docs: list) -> None:
    """A retriever's documents as OpenInference attributes (and as its output)."""
    for i, d in enumerate(docs):
        h.span.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
        h.span.set_attribute(f"retrieval.documents.{i}.document.content", d["content"])
        h.span.set_attribute(f"retrieval.documents.{i}.document.metadata", json.dumps(d.get("metadata", {})))
    h.output = docs
