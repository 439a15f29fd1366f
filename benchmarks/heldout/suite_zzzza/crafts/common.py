"""Shared plumbing for the suite's agents: the model client, the brain helpers, the route writers."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import openai

SERVER: Any = None
LOOP = asyncio.new_event_loop()  # one loop for every Agents SDK run: its HTTP client outlives a run
CLIENT: openai.OpenAI | None = None

BANNED = re.compile(r"\b(fault|bug|wrong|stale|inject|corrupt|planted)", re.IGNORECASE)


def set_server(server: Any) -> None:
    global SERVER, CLIENT
    SERVER = server
    CLIENT = openai.OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def chat(messages: list[dict], tools: list[dict] | None = None) -> dict:
    """One Chat Completions call; the assistant message as a plain dict."""
    kwargs: dict[str, Any] = {"model": SERVER.model, "messages": messages}
    if tools:
        kwargs["tools"] = tools
    reply = CLIENT.chat.completions.create(**kwargs)
    return reply.choices[0].message.model_dump(exclude_none=True)


def fn_tool(name: str, description: str, params: dict[str, str]) -> dict:
    """A Chat Completions function-tool schema with string/number params ("name": "type")."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": v} for k, v in params.items()},
                "required": list(params),
            },
        },
    }


# ---- reading a request on the brain's side -------------------------------------------------------

def system_of(request: Any) -> str:
    body = request.body or {}
    if "messages" in body:
        for m in body["messages"]:
            if m.get("role") == "system":
                return _text(m.get("content"))
        return ""
    return body.get("instructions") or ""


def messages_of(request: Any) -> list[dict]:
    body = request.body or {}
    if "messages" in body:
        return body["messages"]
    items = body.get("input")
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    return list(items or [])


def last_user(request: Any) -> str:
    for m in reversed(messages_of(request)):
        if m.get("role") == "user":
            return _text(m.get("content"))
    return ""


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


def tool_results(request: Any) -> list[tuple[str, str]]:
    """(tool name, output text) of every tool result in the request, oldest first."""
    msgs = messages_of(request)
    out: list[tuple[str, str]] = []
    names: dict[str, str] = {}
    for m in msgs:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
        if m.get("type") == "function_call":
            names[m.get("call_id")] = m.get("name")
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id"), "?"), _text(m.get("content"))))
        if m.get("type") == "function_call_output":
            out.append((names.get(m.get("call_id"), "?"), _text(m.get("output"))))
    return out


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=False)


def check_words(texts: list[str], where: str) -> None:
    for text in texts:
        hit = BANNED.search(text or "")
        if hit:
            raise AssertionError(f"{where}: recorded text holds the word {hit.group(0)!r}: {text[:200]!r}")


# ---- the OpenTelemetry route ----------------------------------------------------------------------

_OTEL: dict = {}


def otel():
    """The process's tracer provider, in-memory exporter and OpenInference instrumentation of `openai`."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "craft-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(provider=provider, exporter=exporter)
    return _OTEL["provider"], _OTEL["exporter"]


def otlp_write(path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    _, exporter = otel()
    spans = exporter.get_finished_spans()
    with open(path, "w") as f:
        json.dump(MessageToDict(encode_spans(spans)), f)
    exporter.clear()


class Span:
    """An OpenInference span of the agent's own (tool, retriever, chain, agent): input and output as JSON."""

    def __init__(self, tracer: Any, name: str, kind: str, value: Any = None, **attributes: Any) -> None:
        self.tracer, self.name, self.kind, self.value, self.attributes = tracer, name, kind, value, attributes
        self.output: Any = None

    def __enter__(self) -> Span:
        attrs = {"openinference.span.kind": self.kind, **self.attributes}
        if self.value is not None:
            attrs["input.value"] = json.dumps(self.value)
            attrs["input.mime_type"] = "application/json"
        self._cm = self.tracer.start_as_current_span(self.name, attributes=attrs)
        self.span = self._cm.__enter__()
        return self

    def set(self, output: Any) -> Any:
        self.output = output
        self.span.set_attribute("output.value", json.dumps(output))
        self.span.set_attribute("output.mime_type", "application/json")
        return output

    def __exit__(self, *exc: Any) -> Any:
        return self._cm.__exit__(*exc)
