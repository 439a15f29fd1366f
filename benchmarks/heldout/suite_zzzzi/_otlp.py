"""Helpers for the OTLP agents: one OpenTelemetry tracer provider, the OpenAI client instrumented by
OpenInference, and spans with OpenInference attributes, written as one OTLP JSON document per run."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_STATE: dict[str, Any] = {}


def setup():
    if "provider" not in _STATE:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "club-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _STATE.update(provider=provider, exporter=exporter)
    return _STATE["provider"], _STATE["exporter"]


def teardown():
    if "provider" in _STATE:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().uninstrument()
        _STATE.clear()


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


class Span:
    def __init__(self, otel):
        self.otel = otel
        self.output: Any = None


@contextmanager
def span(tracer, name: str, kind: str, input: Any = None, **attrs: Any):
    """A span of OpenInference kind `kind` (AGENT, CHAIN, TOOL, RETRIEVER, ...), input.value set now and
    output.value set from `s.output` when the block ends."""
    a = {"openinference.span.kind": kind}
    if input is not None:
        a["input.value"] = _text(input)
        a["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
    a.update({k: v for k, v in attrs.items() if v is not None})
    with tracer.start_as_current_span(name, attributes=a) as otel:
        s = Span(otel)
        yield s
        if s.output is not None:
            otel.set_attribute("output.value", _text(s.output))
            otel.set_attribute("output.mime_type", "text/plain" if isinstance(s.output, str) else "application/json")
            if kind == "RETRIEVER" and isinstance(s.output, list):
                for i, d in enumerate(s.output):
                    otel.set_attribute(f"retrieval.documents.{i}.document.content", d.get("content", ""))
                    otel.set_attribute(f"retrieval.documents.{i}.document.id", d.get("id", str(i)))


def write_run(exporter, out: str) -> None:
    spans = exporter.get_finished_spans()
    exporter.clear()
    with open(out, "w") as f:
        json.dump(MessageToDict(encode_spans(spans)), f)
