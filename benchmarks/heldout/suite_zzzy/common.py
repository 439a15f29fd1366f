"""Small shared helpers (clients for the local model server, OTLP writing)."""
from __future__ import annotations

import json

from openai import OpenAI


def client(server):
    return OpenAI(base_url=server.base_url, api_key="local", max_retries=0)


def chat(server, system, user):
    reply = client(server).chat.completions.create(
        model=server.model, messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
    return reply.choices[0].message.content


def last_user(request):
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_text(request):
    msgs = request.body.get("messages") or []
    for m in msgs:
        if m.get("role") in ("system", "developer"):
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


class Otlp:
    """One run's OpenTelemetry set-up: a provider with an in-memory exporter, the openai client instrumented
    by OpenInference for the length of the run, and manual spans for the agent's own steps."""

    def __init__(self, service):
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer(service)

    def span(self, name, kind, value=None, **attrs):
        import contextlib

        @contextlib.contextmanager
        def block():
            a = {"openinference.span.kind": kind}
            if value is not None:
                a["input.value"] = json.dumps(value)
                a["input.mime_type"] = "application/json"
            a.update(attrs)
            with self.tracer.start_as_current_span(name, attributes=a) as sp:
                box = {}
                yield box
                if "out" in box:
                    sp.set_attribute("output.value", json.dumps(box["out"]))
                    sp.set_attribute("output.mime_type", "application/json")
        return block()

    def write(self, path):
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.instrumentor.uninstrument()
        self.provider.shutdown()
        with open(path, "w") as f:
            json.dump(MessageToDict(encode_spans(self.exporter.get_finished_spans())), f)
