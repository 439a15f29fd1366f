"""Shared OpenTelemetry setup for the otlp agents: one provider, the OpenAI client instrumented by OpenInference."""
import json

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
        spans = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "workshop-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _state.update(spans=spans, provider=provider)
    _state["spans"].clear()
    return _state["provider"]


def tracer(name):
    return setup().get_tracer(name)


def write(path):
    doc = MessageToDict(encode_spans(_state["spans"].get_finished_spans()))
    with open(path, "w") as f:
        json.dump(doc, f)
    _state["spans"].clear()


def attrs(kind, inp=None, out=None, **extra):
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp)
        a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
    if out is not None:
        a.update(output(out))
    a.update(extra)
    return a


def output(out):
    return {"output.value": out if isinstance(out, str) else json.dumps(out),
            "output.mime_type": "text/plain" if isinstance(out, str) else "application/json"}
