"""Shared plumbing for suite_zzzs agents: the fake model client, OTLP export and small helpers."""
from __future__ import annotations

import json
import re

from openai import OpenAI

WORDS = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)", re.I)


_CLIENTS: dict = {}


def client(server) -> OpenAI:
    """One client per fake server (the server is plain HTTP on 127.0.0.1: no TLS context to build)."""
    if server.base_url not in _CLIENTS:
        import httpx

        _CLIENTS[server.base_url] = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0,
                                           http_client=httpx.Client(verify=False))
    return _CLIENTS[server.base_url]


def async_client(server):
    import httpx
    from openai import AsyncOpenAI

    return AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0,
                       http_client=httpx.AsyncClient(verify=False))


def chat(cl: OpenAI, server, messages, **kw):
    reply = cl.chat.completions.create(model=server.model, messages=messages, **kw)
    return reply.choices[0].message


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def all_text(request) -> str:
    return json.dumps(request.body.get("messages") or request.body.get("input") or "")


def tool_results(request) -> list[str]:
    out = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "tool":
            out.append(m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content")))
    return out


def system_text(request) -> str:
    for m in request.body.get("messages") or []:
        if m.get("role") == "system":
            return m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
    return ""


# ---- OTLP -------------------------------------------------------------------------------------------
_OTLP = {}


def otlp():
    """One TracerProvider with an in-memory exporter, the openai client instrumented once."""
    if not _OTLP:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTLP.update(spans=spans, provider=provider)
    return _OTLP["provider"], _OTLP["spans"]


def otlp_write(path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    _, spans = otlp()
    doc = MessageToDict(encode_spans(spans.get_finished_spans()))
    spans.clear()
    with open(path, "w") as f:
        json.dump(doc, f)


def span_attrs(kind: str, inp=None, out=None, **extra) -> dict:
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp)
        a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
    if out is not None:
        a["output.value"] = out if isinstance(out, str) else json.dumps(out)
        a["output.mime_type"] = "text/plain" if isinstance(out, str) else "application/json"
    a.update(extra)
    return a


def set_output(span, out) -> None:
    span.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
    span.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")


from trajdebug.testing import Reply, tool_call  # noqa: E402,F401
