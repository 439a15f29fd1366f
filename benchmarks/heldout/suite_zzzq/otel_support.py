"""OpenTelemetry setup shared by the otlp agents: one provider, the OpenAI client instrumented by
OpenInference, spans kept in memory and written per run as an OTLP JSON document."""
import json

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_STATE = {}


def tracer(service):
    if "provider" not in _STATE:
        spans = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "workshop-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _STATE.update(provider=provider, spans=spans)
    _STATE["spans"].clear()
    return _STATE["provider"].get_tracer(service)


def dump(path):
    doc = MessageToDict(encode_spans(_STATE["spans"].get_finished_spans()))
    _STATE["spans"].clear()
    with open(path, "w") as f:
        json.dump({"resourceSpans": doc.get("resourceSpans", [])}, f)


def attrs(kind, inp=None, out=None):
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = json.dumps(inp)
        a["input.mime_type"] = "application/json"
    if out is not None:
        a["output.value"] = json.dumps(out)
        a["output.mime_type"] = "application/json"
    return a


def set_out(span, out):
    span.set_attribute("output.value", json.dumps(out))
    span.set_attribute("output.mime_type", "application/json")
