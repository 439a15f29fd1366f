"""Shared plumbing for the zzzd agents: the model client and the OTLP span capture."""

from __future__ import annotations

import json

from openai import OpenAI


def client(server):
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def last_user(request):
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_of(request):
    msgs = request.body.get("messages") or []
    for m in msgs:
        if m.get("role") == "system":
            return str(m.get("content"))
    return ""


def payload(text):
    """The JSON object that follows the first '{' of a prompt."""
    return json.loads(text[text.index("{") :])


class Otel:
    """One OpenTelemetry provider, the openai client instrumented by OpenInference, spans kept in memory."""

    def __init__(self):
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)

    def tracer(self, name):
        return self.provider.get_tracer(name)

    def write(self, path):
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        doc = MessageToDict(encode_spans(self.spans.get_finished_spans()))
        self.spans.clear()
        with open(path, "w") as f:
            json.dump(doc, f)


_OTEL = None


def otel():
    global _OTEL
    if _OTEL is None:
        _OTEL = Otel()
    _OTEL.spans.clear()
    return _OTEL


class _Box:
    def __init__(self, sp):
        self.sp = sp
        self.value = None

    def out(self, value):
        self.value = value
        self.sp.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value))
        self.sp.set_attribute(
            "output.mime_type", "text/plain" if isinstance(value, str) else "application/json"
        )
        return value


class span:
    """An OpenInference span of our own: kind, JSON input, an output set with .out(value)."""

    def __init__(self, tracer, name, kind, inp=None, **attrs):
        self.tracer, self.name, self.kind, self.inp, self.attrs = tracer, name, kind, inp, attrs

    def __enter__(self):
        attrs = {"openinference.span.kind": self.kind, **self.attrs}
        if self.inp is not None:
            attrs["input.value"] = self.inp if isinstance(self.inp, str) else json.dumps(self.inp)
            attrs["input.mime_type"] = "text/plain" if isinstance(self.inp, str) else "application/json"
        self._cm = self.tracer.start_as_current_span(self.name, attributes=attrs)
        return _Box(self._cm.__enter__())

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)
