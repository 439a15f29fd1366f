"""OpenTelemetry plumbing shared by the suite's OTLP agents: one tracer provider, spans kept in memory,
the openai client instrumented by OpenInference while a run records, each run written as one OTLP JSON
document ({"resourceSpans": [...]})."""

from __future__ import annotations

import base64
import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_providers: dict = {}


def provider_for(service: str):
    if service not in _providers:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _providers[service] = (provider, exporter)
    return _providers[service]


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(value):
    """OTLP/JSON writes ids as hex (the protobuf mapping writes base64): convert them in place."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k in _ID_KEYS and isinstance(v, str):
                value[k] = base64.b64decode(v).hex()
            else:
                _hex_ids(v)
    elif isinstance(value, list):
        for v in value:
            _hex_ids(v)
    return value


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class Recorder:
    """Spans of one run: `with Recorder(service, path) as rec:` then rec.call(...) for each step."""

    def __init__(self, service: str, path: str):
        self.provider, self.exporter = provider_for(service)
        self.tracer = self.provider.get_tracer(service)
        self.path = path

    def __enter__(self) -> Recorder:
        self.exporter.clear()
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        return self

    def __exit__(self, *exc) -> None:
        OpenAIInstrumentor().uninstrument()
        spans = self.exporter.get_finished_spans()
        with open(self.path, "w") as f:
            json.dump(_hex_ids(MessageToDict(encode_spans(spans))), f)
        self.exporter.clear()

    @contextmanager
    def span(self, name: str, kind: str, inp=None, **attrs):
        attributes = {"openinference.span.kind": kind, **attrs}
        if inp is not None:
            attributes["input.value"] = _text(inp)
            attributes["input.mime_type"] = "application/json" if not isinstance(inp, str) else "text/plain"
        with self.tracer.start_as_current_span(name, attributes=attributes) as s:
            box: dict = {}
            yield box
            if "output" in box:
                out = box["output"]
                s.set_attribute("output.value", _text(out))
                s.set_attribute("output.mime_type", "application/json" if not isinstance(out, str) else "text/plain")

    def call(self, name: str, kind: str, fn, inp: dict, **attrs):
        """Run fn(**inp) as a span of `kind`; its result is the span's output."""
        extra = {"tool.name": name} if kind == "TOOL" else {}
        with self.span(name, kind, inp, **extra, **attrs) as box:
            box["output"] = fn(**inp)
        return box["output"]
