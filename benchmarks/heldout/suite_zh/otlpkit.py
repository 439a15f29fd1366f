"""OpenTelemetry plumbing for the OTLP route: an in-memory exporter and an OTLP/JSON writer."""
from __future__ import annotations

import json

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def tracer_for(service: str):
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return provider.get_tracer(service), spans, provider


def write(spans, provider, out) -> None:
    provider.force_flush()
    with open(out, "w", encoding="utf-8") as f:
        json.dump(MessageToDict(encode_spans(spans.get_finished_spans())), f)
    provider.shutdown()


def llm_attrs(messages: list[dict], answer: str, model: str) -> dict:
    attrs = {"openinference.span.kind": "LLM", "llm.model_name": model,
             "input.value": json.dumps({"messages": messages}), "input.mime_type": "application/json",
             "output.value": answer}
    for i, m in enumerate(messages):
        attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
        attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
    attrs["llm.output_messages.0.message.role"] = "assistant"
    attrs["llm.output_messages.0.message.content"] = answer
    return attrs
