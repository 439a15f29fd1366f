"""OpenTelemetry plumbing shared by the otlp agents of suite_zzzr (not an agent)."""

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

_providers: dict[str, tuple[TracerProvider, InMemorySpanExporter]] = {}


@contextmanager
def traced(service: str, path):
    """Instrument the openai client for one run and write its spans as one OTLP JSON document."""
    if service not in _providers:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _providers[service] = (provider, exporter)
    provider, exporter = _providers[service]
    exporter.clear()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider.get_tracer(service)
    finally:
        instrumentor.uninstrument()
        doc = MessageToDict(encode_spans(exporter.get_finished_spans()))
        with open(path, "w") as f:
            f.write(json.dumps({"resourceSpans": doc.get("resourceSpans", [])}))
        exporter.clear()


def attrs(kind: str, given=None, answer=None, **more) -> dict:
    a = {"openinference.span.kind": kind}
    if given is not None:
        a["input.value"] = json.dumps(given)
        a["input.mime_type"] = "application/json"
    if answer is not None:
        a["output.value"] = json.dumps(answer)
        a["output.mime_type"] = "application/json"
    a.update(more)
    return a


def done(span, answer) -> None:
    span.set_attribute("output.value", json.dumps(answer))
    span.set_attribute("output.mime_type", "application/json")
