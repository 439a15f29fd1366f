"""OpenTelemetry spans with OpenInference conventions, written as one OTLP/JSON document."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode


def _val(v):
    return v if isinstance(v, str) else json.dumps(v)


class Span:
    def __init__(self, span):
        self._span = span

    def output(self, value):
        self._span.set_attribute("output.value", _val(value))
        self._span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


class Tracer:
    def __init__(self, service: str):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    @contextmanager
    def span(self, name: str, kind: str, input=None, **attrs):
        a = {"openinference.span.kind": kind, **attrs}
        if input is not None:
            a["input.value"] = _val(input)
            a["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
        with self.tracer.start_as_current_span(name, attributes=a) as s:
            yield Span(s)

    def llm(self, name: str, client, messages: list[dict]) -> str:
        attrs = {"llm.model_name": "fake-model", "llm.provider": "openai"}
        for i, m in enumerate(messages):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with self.span(name, "LLM", input={"messages": messages}, **attrs) as s:
            r = client.chat.completions.create(model="fake-model", messages=messages)
            text = r.choices[0].message.content
            s._span.set_attribute("llm.output_messages.0.message.role", "assistant")
            s._span.set_attribute("llm.output_messages.0.message.content", text)
            if r.usage:
                s._span.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
                s._span.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
            s.output(text)
            return text

    def write(self, out) -> None:
        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        out = Path(out)
        if out.exists():
            old = json.loads(out.read_text())
            doc = {"resourceSpans": old["resourceSpans"] + doc["resourceSpans"]}
        out.write_text(json.dumps(doc))
        self.provider.shutdown()


def error_status(span: Span, exc: Exception) -> None:
    span._span.set_status(Status(StatusCode.ERROR, str(exc)))
