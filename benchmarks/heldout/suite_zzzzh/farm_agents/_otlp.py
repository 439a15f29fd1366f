"""OpenTelemetry SDK + OpenInference attributes, exported as one OTLP JSON document per run."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Tracing:
    def __init__(self, service: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    @contextmanager
    def recording(self, path):
        self.exporter.clear()
        inst = OpenAIInstrumentor()
        inst.instrument(tracer_provider=self.provider)
        try:
            yield self
        finally:
            inst.uninstrument()
            spans = self.exporter.get_finished_spans()
            Path(path).write_text(json.dumps(MessageToDict(encode_spans(spans))))
            self.exporter.clear()

    @contextmanager
    def span(self, name: str, kind: str, value=None, **attrs):
        a = {"openinference.span.kind": kind}
        if value is not None:
            a["input.value"] = json.dumps(value)
            a["input.mime_type"] = "application/json"
        if kind == "TOOL":
            a["tool.name"] = name
        a.update(attrs)
        with self.tracer.start_as_current_span(name, attributes=a) as sp:
            yield Out(sp)


class Out:
    def __init__(self, sp) -> None:
        self.sp = sp

    def __call__(self, value):
        self.sp.set_attribute("output.value", json.dumps(value))
        self.sp.set_attribute("output.mime_type", "application/json")
        return value
