"""OpenTelemetry spans with OpenInference conventions, written as one OTLP/JSON document."""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


class Slot:
    def __init__(self) -> None:
        self.output: Any = None


class Traced:
    def __init__(self, service: str, server) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)
        self.client = OpenAI(base_url=server.base_url, api_key="local-key", max_retries=0)

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[Slot]:
        attributes = {"openinference.span.kind": kind}
        if input is not None:
            attributes["input.value"] = _text(input)
            attributes["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
        if kind == "TOOL":
            attributes["tool.name"] = name
        attributes.update(attrs)
        slot = Slot()
        with self.tracer.start_as_current_span(name, attributes=attributes) as sp:
            try:
                yield slot
            finally:
                if slot.output is not None:
                    sp.set_attribute("output.value", _text(slot.output))
                    sp.set_attribute("output.mime_type", "text/plain" if isinstance(slot.output, str) else "application/json")

    def llm(self, name: str, system: str, user: str) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        attrs: dict[str, Any] = {"llm.model_name": "gpt-4o-mini", "llm.provider": "openai", "llm.system": "openai"}
        for i, m in enumerate(messages):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with self.span(name, "LLM", input={"messages": messages}, **attrs) as s:
            reply = self.client.chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
            text = reply.choices[0].message.content or ""
            sp = __import__("opentelemetry.trace", fromlist=["get_current_span"]).get_current_span()
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            if reply.usage:
                sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
                sp.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
                sp.set_attribute("llm.token_count.total", reply.usage.total_tokens)
            s.output = text
        return text

    def write(self, path: Path) -> None:
        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        Path(path).write_text(json.dumps(doc))
        self.provider.shutdown()
