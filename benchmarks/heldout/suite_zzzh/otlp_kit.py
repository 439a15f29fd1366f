"""Shared plumbing of the two OTLP agents: an OpenTelemetry provider with OpenInference's OpenAI
instrumentation, spans of the agent's own, and the OTLP JSON document they encode to."""
from __future__ import annotations

import contextlib
import json

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def _text(value):
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class Trace:
    def __init__(self, service: str):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)
        self.instrumentor = OpenAIInstrumentor()

    def __enter__(self):
        self.instrumentor.instrument(tracer_provider=self.provider)
        return self

    def __exit__(self, *exc):
        self.instrumentor.uninstrument()
        return False

    @contextlib.contextmanager
    def span(self, name: str, kind: str, input=None):
        attrs = {"openinference.span.kind": kind}
        if input is not None:
            attrs["input.value"] = _text(input)
            attrs["input.mime_type"] = "application/json" if not isinstance(input, str) else "text/plain"
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            box = _Box(sp)
            yield box

    def call(self, name: str, kind: str, fn, input):
        """A span around fn(**input) (or fn(input) for a non-dict), its return value the span's output."""
        with self.span(name, kind, input) as box:
            out = fn(**input) if isinstance(input, dict) else fn(input)
            box.output(out)
            return out

    def write(self, path: str):
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        with open(path, "w") as f:
            json.dump(doc, f)


class _Box:
    def __init__(self, sp):
        self.sp = sp

    def output(self, value):
        self.sp.set_attribute("output.value", _text(value))
        self.sp.set_attribute("output.mime_type", "application/json" if not isinstance(value, str) else "text/plain")

    def documents(self, docs):
        for i, d in enumerate(docs):
            self.sp.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
            self.sp.set_attribute(f"retrieval.documents.{i}.document.content", d["content"])
        self.output(docs)
