"""Shared plumbing of the two OTLP agents: a TracerProvider with the OpenAI client instrumented by
OpenInference, spans kept in memory and written as one OTLP JSON document per run."""
from __future__ import annotations

import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@contextmanager
def traced(service, path, base_url):
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    try:
        yield provider.get_tracer(service), client
    finally:
        OpenAIInstrumentor().uninstrument()
        client.close()
        provider.force_flush()
        doc = MessageToDict(encode_spans(spans.get_finished_spans()))
        with open(path, "w") as f:
            json.dump({"resourceSpans": doc.get("resourceSpans", [])}, f)
        provider.shutdown()


def attrs(kind, inp=None, out=None, **extra):
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = json.dumps(inp)
        a["input.mime_type"] = "application/json"
    if out is not None:
        a["output.value"] = json.dumps(out)
        a["output.mime_type"] = "application/json"
    a.update(extra)
    return a


def set_output(span, out):
    span.set_attribute("output.value", json.dumps(out))
    span.set_attribute("output.mime_type", "application/json")
    return out
