"""Shared plumbing of the suite's agents: the model client, prompt helpers, OTLP span helpers."""

from __future__ import annotations

import json
import re
from typing import Any

BASE_URL: str | None = None  # set by generate.py once the fake model server is up
MODEL = "fake-model"
_client = None

BANNED = re.compile(r"\b(faults?|bugs?|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)


def client():
    """One OpenAI client for the sdk and otlp agents, pointed at the fake server."""
    global _client
    if _client is None or str(_client.base_url).rstrip("/") != BASE_URL.rstrip("/"):
        from openai import OpenAI

        _client = OpenAI(base_url=BASE_URL, api_key="not-needed", max_retries=0)
    return _client


def chat(messages: list[dict], tools: list[dict] | None = None) -> dict:
    """One Chat Completions call; the assistant message as a plain dict."""
    kwargs: dict[str, Any] = {"tools": tools} if tools else {}
    reply = client().chat.completions.create(model=MODEL, messages=messages, **kwargs)
    return reply.choices[0].message.model_dump(exclude_none=True)


def fn_tool(name: str, description: str, properties: dict) -> dict:
    return {"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(properties)}}}


def messages_of(request) -> list[dict]:
    return request.body.get("messages") or []


def system_of(request) -> str:
    for m in messages_of(request):
        if m.get("role") == "system":
            return m.get("content") or ""
    return ""


def last_user_json(request) -> Any:
    for m in reversed(messages_of(request)):
        if m.get("role") == "user":
            return json.loads(m["content"])
    raise ValueError("no user message")


def tool_results(request) -> list[Any]:
    out = []
    for m in messages_of(request):
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except (TypeError, ValueError):
                out.append(m["content"])
    return out


def responses_input(request) -> list:
    items = request.body.get("input")
    return items if isinstance(items, list) else [{"role": "user", "content": items}]


def _is_chat(request) -> bool:
    return "messages" in request.body


def responses_instructions(request) -> str:
    """The agent's instructions (Responses API `instructions`, or the system message of a Chat Completions call)."""
    if _is_chat(request):
        return system_of(request)
    return request.body.get("instructions") or ""


def responses_user_text(request) -> str:
    """The run's first user message, from either API."""
    items = messages_of(request) if _is_chat(request) else responses_input(request)
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            c = item.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def responses_outputs(request) -> list[tuple[str, str]]:
    """(tool name, output text) of every function call the agent made so far, in order, from either API."""
    names = {}
    out = []
    if _is_chat(request):
        for m in messages_of(request):
            for call in m.get("tool_calls") or ():
                names[call.get("id")] = call.get("function", {}).get("name")
            if m.get("role") == "tool":
                c = m.get("content")
                if isinstance(c, list):
                    c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
                out.append((names.get(m.get("tool_call_id"), "?"), c))
        return out
    for item in responses_input(request):
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            names[item.get("call_id")] = item.get("name")
        elif item.get("type") == "function_call_output":
            out.append((names.get(item.get("call_id"), "?"), item.get("output")))
    return out


# ---- OTLP helpers -----------------------------------------------------------------------------

def jdump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def span_attrs(kind: str, value_in: Any = None, td_kind: str | None = None, **extra) -> dict:
    attrs = {"openinference.span.kind": kind}
    if td_kind:
        attrs["trajdebug.step.kind"] = td_kind
    if value_in is not None:
        attrs["input.value"] = value_in if isinstance(value_in, str) else jdump(value_in)
        attrs["input.mime_type"] = "text/plain" if isinstance(value_in, str) else "application/json"
    attrs.update(extra)
    return attrs


def set_output(span, value: Any) -> None:
    span.set_attribute("output.value", value if isinstance(value, str) else jdump(value))
    span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")


_provider = None
_exporter = None


def otlp_tracer(name: str):
    """The suite's one OpenTelemetry tracer provider (spans kept in memory until written)."""
    global _provider, _exporter
    if _provider is None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        _exporter = InMemorySpanExporter()
        _provider = TracerProvider()
        _provider.add_span_processor(SimpleSpanProcessor(_exporter))
    return _provider.get_tracer(name)


def otlp_provider():
    otlp_tracer("suite")
    return _provider


def write_otlp(path: str) -> None:
    """Write the spans finished since the last call as one {"resourceSpans": [...]} document."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = _exporter.get_finished_spans()
    _exporter.clear()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(MessageToDict(encode_spans(spans)), f)


_loop = None
_agents_client_for = None
AGENTS_API = "chat_completions"  # the Agents SDK's model API against the fake server ("responses" works too)


def agents_loop():
    """One event loop for every Agents SDK run, so the SDK's async client outlives each run."""
    global _loop
    if _loop is None:
        import asyncio

        _loop = asyncio.new_event_loop()
    return _loop


def agents_sdk_setup() -> None:
    global _agents_client_for
    if _agents_client_for == BASE_URL:
        return
    from agents import set_default_openai_api, set_default_openai_client
    from openai import AsyncOpenAI

    set_default_openai_client(AsyncOpenAI(base_url=BASE_URL, api_key="not-needed", max_retries=0))
    set_default_openai_api(AGENTS_API)
    _agents_client_for = BASE_URL
