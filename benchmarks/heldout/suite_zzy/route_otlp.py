"""otlp route: the OpenTelemetry SDK with OpenInference attributes, written as one OTLP/JSON envelope per file
(read with `trajdebug import --from otlp`)."""
from __future__ import annotations

import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from core import ValidationFailed, fast_client
from flow import failure_of, root_of, run_job  # noqa: F401

KINDS = {"llm": "LLM", "tool": "TOOL", "retrieval": "RETRIEVER", "agent": "AGENT", "parse": "CHAIN",
         "state": "CHAIN", "other": "CHAIN", "condition": "CHAIN", "input": "CHAIN"}


def _dump(v):
    return v if isinstance(v, str) else json.dumps(v)


class _Handle:
    output = None


class _Rec:
    def __init__(self, tracer):
        self.tracer = tracer

    @contextmanager
    def step(self, name, kind, input=None):
        attrs = {"openinference.span.kind": KINDS[kind], "input.value": _dump(input),
                 "input.mime_type": "application/json"}
        if kind == "tool":
            attrs["tool.name"] = name
        with self.tracer.start_as_current_span(name, attributes=attrs) as span:
            h = _Handle()
            yield h
            span.set_attribute("output.value", _dump(h.output))
            span.set_attribute("output.mime_type", "application/json" if not isinstance(h.output, str) else "text/plain")


def record(A, inp, path, server):
    server.use(A.chat_brain)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0, http_client=fast_client())
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": A.name}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer(A.name)
    rec = _Rec(tracer)

    def ask(name, role, payload):
        msgs = [{"role": "system", "content": f"role: {role}"},
                {"role": "user", "content": json.dumps(payload)}]
        attrs = {"openinference.span.kind": "LLM", "llm.model_name": server.model, "llm.system": "openai",
                 "input.value": json.dumps({"messages": msgs}), "input.mime_type": "application/json"}
        for i, m in enumerate(msgs):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with tracer.start_as_current_span(name, attributes=attrs) as span:
            r = client.chat.completions.create(model=server.model, messages=msgs, temperature=0)
            text = r.choices[0].message.content
            span.set_attribute("llm.output_messages.0.message.role", "assistant")
            span.set_attribute("llm.output_messages.0.message.content", text)
            span.set_attribute("output.value", text)
            if r.usage:
                span.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
                span.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
        return text

    try:
        with tracer.start_as_current_span(A.name, attributes={
                "openinference.span.kind": "AGENT", "agent.name": A.name,
                "input.value": f"{A.v['task']} {inp['ref']}"}):
            run_job(A, inp, rec, {}, ask)
    except ValidationFailed:
        pass
    provider.shutdown()
    doc = MessageToDict(encode_spans(spans.get_finished_spans()))
    with open(path, "w") as f:
        json.dump(doc, f)
