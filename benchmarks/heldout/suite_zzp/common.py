"""Shared plumbing of the suite's agents: the model client, chat brains and OTLP span helpers."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any, Callable

from openai import OpenAI

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


def forbidden_words(text: str) -> list[str]:
    return sorted({m.group(0).lower() for m in FORBIDDEN.finditer(text)})


def client_for(server) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def chat_brain(routes: dict[str, Callable[[str], Any]]) -> Callable:
    """A policy for Chat Completions: the system message's first word picks the handler, which reads the
    last user message."""

    def policy(request):
        messages = request.body["messages"]
        system = next((m["content"] for m in messages if m["role"] == "system"), "")
        user = [m for m in messages if m["role"] == "user"][-1]["content"]
        if isinstance(user, list):
            user = "".join(part.get("text", "") for part in user)
        key = system.split(":", 1)[0].strip()
        return routes[key](user)

    return policy


def ask(client: OpenAI, model: str, system: str, user: str) -> str:
    reply = client.chat.completions.create(
        model=model, temperature=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
    )
    return reply.choices[0].message.content


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


# -- OTLP (OpenTelemetry SDK, OpenInference attributes) ----------------------------------------------

_OTEL: dict[str, Any] = {}


def otel():
    """One tracer provider with an in-memory exporter; the OpenAI client instrumented once."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(exporter=exporter, provider=provider)
    return _OTEL["provider"], _OTEL["exporter"]


def otel_shutdown() -> None:
    if _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().uninstrument()
        _OTEL.clear()


class Spans:
    """Spans of one traced agent run."""

    def __init__(self, service: str) -> None:
        provider, self.exporter = otel()
        self.exporter.clear()
        self.tracer = provider.get_tracer(service)

    @contextmanager
    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any):
        attributes = {"openinference.span.kind": kind}
        if inp is not None:
            attributes["input.value"] = inp if isinstance(inp, str) else dumps(inp)
            attributes["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
        if kind == "TOOL":
            attributes["tool.name"] = name
        attributes.update(attrs)
        with self.tracer.start_as_current_span(name, attributes=attributes) as sp:
            box = _Out(sp)
            yield box

    def envelope(self) -> dict:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        return MessageToDict(encode_spans(self.exporter.get_finished_spans()))


class _Out:
    def __init__(self, sp) -> None:
        self._sp = sp
        self.value: Any = None

    def set(self, value: Any) -> Any:
        self.value = value
        self._sp.set_attribute("output.value", value if isinstance(value, str) else dumps(value))
        self._sp.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value
