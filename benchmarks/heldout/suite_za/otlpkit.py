"""OpenTelemetry spans with OpenInference conventions, written as one OTLP/JSON file."""
from __future__ import annotations

import contextlib
import json

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode


def _val(v):
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


class Box:
    def __init__(self, span):
        self.span = span

    def set_output(self, value):
        self.span.set_attribute("output.value", _val(value))
        self.span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


class Recorder:
    def __init__(self, service: str, agent: str, base_url: str):
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_za.otlp")
        self.agent = agent
        self.client = OpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0)

    @contextlib.contextmanager
    def span(self, name, kind, inp=None, **attrs):
        with self.tracer.start_as_current_span(name, record_exception=False, set_status_on_exception=False) as sp:
            sp.set_attribute("openinference.span.kind", kind)
            sp.set_attribute("agent.name", attrs.pop("agent", self.agent))
            if inp is not None:
                sp.set_attribute("input.value", _val(inp))
                sp.set_attribute("input.mime_type", "text/plain" if isinstance(inp, str) else "application/json")
            for k, v in attrs.items():
                sp.set_attribute(k, v)
            try:
                yield Box(sp)
            except Exception as exc:
                sp.record_exception(exc)
                sp.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
                raise

    def step(self, name, kind, fn, inp, **attrs):
        with self.span(name, kind, inp, **attrs) as b:
            return b.set_output(fn())

    def tool(self, name, fn, args):
        with self.span(name, "TOOL", args, **{"tool.name": name, "tool.parameters": json.dumps(args)}) as b:
            return b.set_output(fn(**args))

    def llm(self, name, system, user):
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        attrs = {"llm.model_name": "gpt-4o-mini", "llm.system": "openai"}
        for i, m in enumerate(msgs):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with self.span(name, "LLM", {"messages": msgs, "model": "gpt-4o-mini"}, **attrs) as b:
            r = self.client.chat.completions.create(model="gpt-4o-mini", messages=msgs)
            text = r.choices[0].message.content
            b.span.set_attribute("llm.output_messages.0.message.role", "assistant")
            b.span.set_attribute("llm.output_messages.0.message.content", text)
            b.span.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
            b.span.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
            b.span.set_attribute("llm.token_count.total", r.usage.total_tokens)
            b.set_output(text)
            return text

    def write(self, path):
        self.provider.force_flush()
        msg = encode_spans(self.exporter.get_finished_spans())
        with open(path, "w") as fh:
            json.dump(MessageToDict(msg), fh)
