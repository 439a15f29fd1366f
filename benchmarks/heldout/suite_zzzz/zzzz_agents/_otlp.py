"""Tracing an agent with the OpenTelemetry SDK and OpenInference attributes (the model calls through
openinference-instrumentation-openai), written as one OTLP JSON document per run."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class Tracing:
    def __init__(self, service: str) -> None:
        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.tracer = self.provider.get_tracer(service)

    @contextmanager
    def recording(self, out: Path):
        self.spans.clear()
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        try:
            yield self
        finally:
            OpenAIInstrumentor().uninstrument()
            out.write_text(json.dumps(MessageToDict(encode_spans(self.spans.get_finished_spans()))))

    @contextmanager
    def agent(self, name: str, task: str, input: Any):
        with self.tracer.start_as_current_span(name, attributes={
                "openinference.span.kind": "AGENT", "agent.name": name, "input.value": _dump(input),
                "metadata": json.dumps({"task": task})}) as sp:
            yield sp

    def step(self, name: str, kind: str, fn: Callable[..., Any], *args: Any, **attrs: Any) -> Any:
        """Run fn(*args) in a span of the OpenInference kind given, its arguments as input, its result as output."""
        given = args[0] if len(args) == 1 else list(args)
        attributes = {"openinference.span.kind": kind, "input.value": _dump(given), "input.mime_type": "application/json"}
        if kind == "TOOL":
            attributes["tool.name"] = name
        attributes.update(attrs)
        with self.tracer.start_as_current_span(name, attributes=attributes) as sp:
            result = fn(*args)
            if kind == "RETRIEVER":
                for i, doc in enumerate(result):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", doc["id"])
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", _dump(doc["content"]))
                    sp.set_attribute(f"retrieval.documents.{i}.document.score", doc["score"])
            sp.set_attribute("output.value", _dump(result))
            sp.set_attribute("output.mime_type", "application/json")
            return result
