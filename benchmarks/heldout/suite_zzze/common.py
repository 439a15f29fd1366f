"""Shared plumbing for the suite's agents: the model client and JSON helpers."""

from __future__ import annotations

import base64
import json
import re

from openai import OpenAI
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator


_CLIENT: dict = {}


def client(server) -> OpenAI:
    key = server.base_url
    if key not in _CLIENT:
        _CLIENT[key] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return _CLIENT[key]


def chat(server, messages: list[dict]) -> str:
    reply = client(server).chat.completions.create(model=server.model, messages=messages, temperature=0)
    return reply.choices[0].message.content


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_of(request) -> str:
    for m in request.body.get("messages") or []:
        if m.get("role") == "system":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


_OTEL: dict = {}
_WORDS = re.compile(r"fault|bug|wrong|stale|inject|corrupt|planted", re.I)


def _plain(value: int, size: int) -> bool:
    raw = value.to_bytes(size, "big")
    return not (_WORDS.search(base64.b64encode(raw).decode()) or _WORDS.search(raw.hex()))


class _PlainIds(RandomIdGenerator):
    """Random span and trace ids whose base64 and hex forms spell none of the suite's banned words."""

    def generate_span_id(self) -> int:
        while True:
            value = super().generate_span_id()
            if _plain(value, 8):
                return value

    def generate_trace_id(self) -> int:
        while True:
            value = super().generate_trace_id()
            if _plain(value, 16):
                return value


def otel():
    """One TracerProvider with an in-memory exporter and the OpenAI client instrumented (OpenInference)."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans = InMemorySpanExporter()
        provider = TracerProvider(id_generator=_PlainIds())
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(provider=provider, spans=spans)
    return _OTEL["provider"], _OTEL["spans"]


def write_otlp(spans, dest: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans.get_finished_spans()))
    spans.clear()
    with open(dest, "w") as f:
        json.dump({"resourceSpans": doc.get("resourceSpans", [])}, f)
