"""Shared plumbing for suite P's OTLP agents: OpenInference spans of our own around an `openai` client
instrumented by openinference-instrumentation-openai, exported in memory and written as OTLP/JSON."""

from __future__ import annotations

import json
from contextlib import contextmanager

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


_EXPORTER = InMemorySpanExporter()
_PROVIDER = TracerProvider(resource=Resource.create({"service.name": "suite-p-agents"}))
_PROVIDER.add_span_processor(SimpleSpanProcessor(_EXPORTER))


class Out:
    def __init__(self) -> None:
        self.output = None


class Tracer:
    def __init__(self, name: str) -> None:
        self.tracer = _PROVIDER.get_tracer(name)

    @contextmanager
    def span(self, name: str, kind: str, inp=None):
        attrs = {"openinference.span.kind": kind}
        if inp is not None:
            attrs["input.value"] = json.dumps(inp)
            attrs["input.mime_type"] = "application/json"
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            out = Out()
            yield out
            if out.output is not None:
                sp.set_attribute("output.value", json.dumps(out.output))
                sp.set_attribute("output.mime_type", "application/json")

    def call(self, name: str, kind: str, fn, **kwargs):
        with self.span(name, kind, kwargs) as o:
            o.output = fn(**kwargs)
            return o.output


@contextmanager
def recording(path):
    """Instrument the openai client for one run; write the run's spans to `path` as OTLP/JSON."""
    _EXPORTER.clear()
    OpenAIInstrumentor().instrument(tracer_provider=_PROVIDER)
    try:
        yield
    finally:
        OpenAIInstrumentor().uninstrument()
        spans = _EXPORTER.get_finished_spans()
        with open(path, "w") as f:
            json.dump(MessageToDict(encode_spans(spans)), f)
        _EXPORTER.clear()


def client_for(server):
    from openai import OpenAI

    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def ask(client, server, system: str, user) -> str:
    r = client.chat.completions.create(model=server.model, temperature=0, messages=[
        {"role": "system", "content": system}, {"role": "user", "content": user if isinstance(user, str) else json.dumps(user)}])
    return r.choices[0].message.content
