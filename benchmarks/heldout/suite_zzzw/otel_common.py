"""Shared OpenTelemetry set-up for the otlp agents: one provider, the openai client instrumented once."""
from __future__ import annotations

import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_state: dict = {}


def setup():
    if not _state:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "workshop-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _state.update(exporter=exporter, provider=provider)
    _state["exporter"].clear()
    return _state["provider"]


def dump(path) -> None:
    doc = MessageToDict(encode_spans(_state["exporter"].get_finished_spans()))
    _state["exporter"].clear()
    with open(path, "w") as f:
        json.dump(doc, f)


@contextmanager
def span(tracer, name, kind, value=None, **attrs):
    a = {"openinference.span.kind": kind}
    if value is not None:
        a["input.value"] = value if isinstance(value, str) else json.dumps(value)
        a["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
    a.update(attrs)
    with tracer.start_as_current_span(name, attributes=a) as sp:
        box = {}
        yield box
        if "out" in box:
            out = box["out"]
            sp.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
            sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")
