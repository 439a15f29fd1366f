"""Shared helpers of suite_zzzj: prompt plumbing for the fake model and route writers."""
from __future__ import annotations

import json
import re

FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)", re.I)


def prompt(task: str, payload) -> list[dict]:
    """A chat prompt: the system line names the job, the user message carries the data as JSON."""
    return [{"role": "system", "content": task}, {"role": "user", "content": json.dumps(payload, sort_keys=True)}]


def read_prompt(request) -> tuple[str, object]:
    """(system text, decoded user payload) of a chat-completions request the sdk agents send."""
    messages = request.body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = [m for m in messages if m["role"] == "user"][-1]["content"]
    try:
        data = json.loads(user)
    except (TypeError, ValueError):
        data = user
    return system, data


def chat_text(client, model: str, messages: list[dict]) -> str:
    reply = client.chat.completions.create(model=model, messages=messages)
    return reply.choices[0].message.content


# --- OpenTelemetry / OpenInference plumbing shared by the otlp agents -------------------------------------
_OTEL: dict = {}


def _readable(value: int, size: int) -> bool:
    import base64

    raw = value.to_bytes(size, "big")
    return not (FORBIDDEN.search(base64.b64encode(raw).decode()) or FORBIDDEN.search(raw.hex()))


def _PlainIds():
    """Random span and trace ids whose protobuf-JSON (base64) spelling holds none of the words the suite bans."""
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class PlainIds(RandomIdGenerator):
        def generate_span_id(self) -> int:
            while True:
                v = super().generate_span_id()
                if _readable(v, 8):
                    return v

        def generate_trace_id(self) -> int:
            while True:
                v = super().generate_trace_id()
                if _readable(v, 16):
                    return v

    return PlainIds()


def otel():
    """(tracer provider, in-memory exporter), set up once; the openai client is instrumented once."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "depot-and-track-services"}),
                                  id_generator=_PlainIds())
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(provider=provider, exporter=exporter)
    return _OTEL["provider"], _OTEL["exporter"]


def write_otlp(exporter, path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    with open(path, "w") as f:
        f.write(json.dumps(MessageToDict(encode_spans(exporter.get_finished_spans()))))
    exporter.clear()


class Spans:
    """OpenInference spans of the application's own steps: `with sp.step(name, kind, input) as out: out(value)`."""

    def __init__(self, tracer):
        self.tracer = tracer

    def step(self, name: str, kind: str, value=None):
        import contextlib

        @contextlib.contextmanager
        def cm():
            attrs = {"openinference.span.kind": kind}
            if value is not None:
                attrs["input.value"] = json.dumps(value, sort_keys=True)
                attrs["input.mime_type"] = "application/json"
            with self.tracer.start_as_current_span(name, attributes=attrs) as span:
                def out(result):
                    span.set_attribute("output.value", json.dumps(result, sort_keys=True))
                    span.set_attribute("output.mime_type", "application/json")
                    return result
                yield out
        return cm()
