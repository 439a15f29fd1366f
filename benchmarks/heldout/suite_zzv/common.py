"""Shared plumbing for the suite_zzv agents: the model client, chat helpers, OTLP capture."""
from __future__ import annotations

import json
import re

from openai import OpenAI

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def client(server) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def last_user(request) -> str:
    body = request.body
    if "messages" in body:
        for m in reversed(body["messages"]):
            if m.get("role") in ("user", "human"):
                c = m.get("content")
                return c if isinstance(c, str) else json.dumps(c)
        return ""
    items = body.get("input")
    if isinstance(items, str):
        return items
    for it in reversed(items or []):
        if isinstance(it, dict) and it.get("role") == "user":
            c = it.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def payload(prompt: str) -> dict:
    """The JSON object a prompt carries after its first line."""
    start = prompt.index("{")
    return json.loads(prompt[start:])


def ask(cli: OpenAI, system: str, task: str, data: dict) -> str:
    msg = f"{task}\n{json.dumps(data, sort_keys=True)}"
    r = cli.chat.completions.create(
        model="fake-model",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": msg}],
        temperature=0,
    )
    return r.choices[0].message.content


class Otel:
    """One OpenTelemetry provider for the OTLP agents: spans kept in memory, the openai client instrumented per run."""

    def __init__(self, name: str):
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(name)

    def __enter__(self):
        from openinference.instrumentation.openai import OpenAIInstrumentor

        self.exporter.clear()
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        return self

    def __exit__(self, *exc):
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().uninstrument()
        return False

    def span(self, name: str, kind: str, value=None):
        attrs = {"openinference.span.kind": kind}
        if value is not None:
            attrs["input.value"] = json.dumps(value, sort_keys=True)
            attrs["input.mime_type"] = "application/json"
        return self.tracer.start_as_current_span(name, attributes=attrs)

    def call(self, name: str, kind: str, fn, **kwargs):
        with self.span(name, kind, kwargs) as sp:
            out = fn(**kwargs)
            sp.set_attribute("output.value", json.dumps(out, sort_keys=True))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    def write(self, path: str) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        with open(path, "w") as f:
            json.dump(MessageToDict(encode_spans(self.exporter.get_finished_spans())), f)
