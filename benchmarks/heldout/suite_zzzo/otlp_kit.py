"""OpenTelemetry + OpenInference plumbing shared by the two OTLP agents: spans to an OTLP JSON file."""
import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

_providers = {}


def provider_for(service):
    if service not in _providers:
        exp = InMemorySpanExporter()
        prov = TracerProvider(resource=Resource.create({"service.name": service}))
        prov.add_span_processor(SimpleSpanProcessor(exp))
        _providers[service] = (prov, exp)
    return _providers[service]


@contextmanager
def traced_run(service, path):
    prov, exp = provider_for(service)
    exp.clear()
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=prov)
    try:
        yield prov.get_tracer(service)
    finally:
        inst.uninstrument()
        doc = MessageToDict(encode_spans(exp.get_finished_spans()))
        with open(path, "w") as f:
            json.dump(doc, f)


@contextmanager
def span(tracer, name, kind, inp=None):
    attrs = {"openinference.span.kind": kind}
    if inp is not None:
        attrs["input.value"] = json.dumps(inp)
        attrs["input.mime_type"] = "application/json"
    with tracer.start_as_current_span(name, attributes=attrs) as s:
        box = {}
        yield box
        if "out" in box:
            s.set_attribute("output.value", json.dumps(box["out"]))
            s.set_attribute("output.mime_type", "application/json")
        s.set_status(Status(StatusCode.OK))
