"""Shared plumbing of the otlp route: one TracerProvider with an in-memory exporter, the OpenAI client
instrumented by OpenInference for the length of one run, and the run's spans written as OTLP JSON."""

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

_STATE: dict = {}


def _setup():
    if not _STATE:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "tour-ops"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _STATE.update(exporter=exporter, provider=provider)
    return _STATE


@contextmanager
def traced_run(path: str, scope: str):
    """Instrument the OpenAI client for one run; write the run's spans to `path` as one OTLP JSON document."""
    st = _setup()
    st["exporter"].clear()
    OpenAIInstrumentor().instrument(tracer_provider=st["provider"])
    try:
        yield st["provider"].get_tracer(scope)
    finally:
        OpenAIInstrumentor().uninstrument()
        spans = st["exporter"].get_finished_spans()
        with open(path, "w") as f:
            json.dump(MessageToDict(encode_spans(spans)), f)
        st["exporter"].clear()


def _text(value):
    return value if isinstance(value, str) else json.dumps(value)


class Span:
    def __init__(self, span):
        self.span = span

    def done(self, output):
        self.span.set_attribute("output.value", _text(output))
        self.span.set_attribute("output.mime_type", "text/plain" if isinstance(output, str) else "application/json")
        return output


@contextmanager
def span(tracer, name: str, kind: str, given=None, **attributes):
    attrs = {"openinference.span.kind": kind, **attributes}
    if given is not None:
        attrs["input.value"] = _text(given)
        attrs["input.mime_type"] = "text/plain" if isinstance(given, str) else "application/json"
    with tracer.start_as_current_span(name, attributes=attrs) as s:
        yield Span(s)
