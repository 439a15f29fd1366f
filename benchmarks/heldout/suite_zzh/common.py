"""Helpers the suite's agents share: model calls recorded with the SDK, OTLP capture, brains."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any


MODEL = "fake-model"

# -- words no recorded text may hold -----------------------------------------------------------

FORBIDDEN = ("fault", "bug", "wrong", "stale", "planted", "inject", "corrupt")
_ALLOWED = re.compile(r"trajdebug|debug|default")
_ID_KEYS = {"traceId", "spanId", "parentSpanId", "trace_id", "span_id", "parent_span_id"}


def forbidden_hits(value: Any, where: str = "$") -> list[str]:
    """Every string (key or value) in a JSON value that holds a forbidden word, ids aside."""
    hits: list[str] = []
    if isinstance(value, str):
        low = _ALLOWED.sub(" ", value.lower())
        for w in FORBIDDEN:
            if w in low:
                hits.append(f"{where}: {w!r} in {value[:120]!r}")
    elif isinstance(value, Mapping):
        for k, v in value.items():
            hits += forbidden_hits(str(k), f"{where}.<key>")
            if k in _ID_KEYS:
                continue
            hits += forbidden_hits(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            hits += forbidden_hits(v, f"{where}[{i}]")
    return hits


def check_file_words(path: Path) -> list[str]:
    """Forbidden words in a written JSONL or JSON file (every record parsed, ids skipped)."""
    text = path.read_text()
    hits: list[str] = []
    if path.suffix == ".jsonl":
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                hits += forbidden_hits(json.loads(line), f"{path.name}:{n}")
    else:
        hits += forbidden_hits(json.loads(text), path.name)
    return hits


# -- chat requests as the fake server sees them --------------------------------------------------


def chat_messages(request: Any) -> list[dict[str, Any]]:
    """The request's messages in Chat Completions shape (Responses API input converted)."""
    body = request.body or {}
    if "messages" in body:
        return list(body["messages"])
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for it in items or []:
        typ = it.get("type")
        if typ == "function_call":
            out.append({"role": "assistant", "content": None,
                        "tool_calls": [{"id": it.get("call_id"), "type": "function",
                                        "function": {"name": it.get("name"), "arguments": it.get("arguments")}}]})
        elif typ == "function_call_output":
            out.append({"role": "tool", "tool_call_id": it.get("call_id"), "content": it.get("output")})
        elif it.get("role"):
            content = it.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
            out.append({"role": it["role"], "content": content})
    return out


def text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
    return content or ""


def system_text(messages: list[dict[str, Any]]) -> str:
    return "\n".join(text_of(m) for m in messages if m.get("role") in ("system", "developer"))


def tool_results(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(tool name, parsed result) for every tool result in the conversation, in order."""
    names: dict[str, str] = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            names[c.get("id")] = (c.get("function") or {}).get("name") or c.get("name")
    out = []
    for m in messages:
        if m.get("role") == "tool":
            raw = text_of(m)
            try:
                value = json.loads(raw)
            except (TypeError, ValueError):
                value = raw
            out.append((names.get(m.get("tool_call_id"), "?"), value))
    return out


def tool_calls_made(messages: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or c
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else (args or {})
            except ValueError:
                args = {}
            out.append((fn.get("name"), args))
    return out


# -- an LLM call recorded with the SDK --------------------------------------------------------------


def sdk_chat(client: Any, name: str, messages: list[dict[str, Any]], *, temperature: float = 0.0) -> str:
    """Call the model (Chat Completions) inside an `llm` step named ``name``; return the answer text."""
    import trajdebug

    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model=MODEL, messages=messages, temperature=temperature)
        text = reply.choices[0].message.content or ""
        s.output = {"role": "assistant", "content": text, "tool_calls": []}
        if reply.usage is not None:
            s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                    completion_tokens=reply.usage.completion_tokens)
    return text


# -- OTLP capture ------------------------------------------------------------------------------------

_OTEL: dict[str, Any] = {}


def otel() -> tuple[Any, Any]:
    """The process's tracer provider and in-memory exporter."""
    if not _OTEL:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "ops-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _OTEL.update(provider=provider, exporter=exporter)
    return _OTEL["provider"], _OTEL["exporter"]


@contextmanager
def otlp_capture(path: Path, scope: str) -> Iterator[Any]:
    """Trace one run: the OpenAI client instrumented (OpenInference) for the block, a tracer for the agent's own
    spans; the spans finished in the block are written to ``path`` as one OTLP/JSON envelope."""
    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    provider, exporter = otel()
    exporter.clear()
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider.get_tracer(scope)
    finally:
        instrumentor.uninstrument()
        envelope = MessageToDict(encode_spans(exporter.get_finished_spans()))
        exporter.clear()
        path.write_text(json.dumps(envelope))


class SpanBox:
    """What a span helper yields: set ``output`` to record the span's output."""

    def __init__(self, span: Any) -> None:
        self.span = span
        self.output: Any = None


def _as_text(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "text/plain"
    return json.dumps(value, sort_keys=False), "application/json"


@contextmanager
def oi_span(tracer: Any, name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[SpanBox]:
    """An OpenInference span (``kind``: TOOL, CHAIN, AGENT, RETRIEVER, GUARDRAIL ...) with input and output."""
    attributes: dict[str, Any] = {"openinference.span.kind": kind}
    if input is not None:
        attributes["input.value"], attributes["input.mime_type"] = _as_text(input)
    if kind == "TOOL":
        attributes["tool.name"] = name
    attributes.update(attrs)
    with tracer.start_as_current_span(name, attributes=attributes) as span:
        box = SpanBox(span)
        yield box
        if box.output is not None:
            text, mime = _as_text(box.output)
            span.set_attribute("output.value", text)
            span.set_attribute("output.mime_type", mime)


def chat_once(client: Any, messages: list[dict[str, Any]]) -> str:
    """A plain Chat Completions call (traced by the instrumentor when it is on); the answer text."""
    reply = client.chat.completions.create(model=MODEL, messages=messages, temperature=0)
    return reply.choices[0].message.content or ""
