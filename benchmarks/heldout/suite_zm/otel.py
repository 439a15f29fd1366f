"""OpenTelemetry spans with OpenInference conventions, written as one OTLP/JSON envelope per run."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Recorder:
    def __init__(self, service: str):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("openinference.instrumentation.manual")

    @contextlib.contextmanager
    def span(self, name: str, kind: str, input=None, **attrs):
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", kind)
            for k, v in attrs.items():
                sp.set_attribute(k, v)
            if input is not None:
                sp.set_attribute("input.value", json.dumps(input))
                sp.set_attribute("input.mime_type", "application/json")
            box: dict = {}
            yield box
            if "out" in box:
                sp.set_attribute("output.value", json.dumps(box["out"]))
                sp.set_attribute("output.mime_type", "application/json")

    def llm(self, client, name: str, model: str, desk: str, role: str, payload) -> dict:
        msgs = [{"role": "system", "content": f"[desk:{desk}] {role} Answer JSON."},
                {"role": "user", "content": json.dumps(payload)}]
        attrs = {"llm.model_name": model, "llm.system": "openai"}
        for i, m in enumerate(msgs):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", "LLM")
            for k, v in attrs.items():
                sp.set_attribute(k, v)
            sp.set_attribute("input.value", json.dumps({"messages": msgs}))
            sp.set_attribute("input.mime_type", "application/json")
            r = client.chat.completions.create(model=model, messages=msgs)
            text = r.choices[0].message.content
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("output.value", text)
            if r.usage:
                sp.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
                sp.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
                sp.set_attribute("llm.token_count.total", r.usage.total_tokens)
        return json.loads(text)

    def write(self, path: Path) -> None:
        self.provider.force_flush()
        msg = encode_spans(self.exporter.get_finished_spans())
        Path(path).write_text(json.dumps(MessageToDict(msg)))
