"""Shared helpers: model calls through the OpenAI client, brain request readers, OTLP export."""
from __future__ import annotations

import ast
import json
from typing import Any

from openai import OpenAI

CLIENTS: dict[str, OpenAI] = {}


def client(server) -> OpenAI:
    url = server.base_url
    if url not in CLIENTS:
        CLIENTS[url] = OpenAI(base_url=url, api_key="not-needed", max_retries=0)
    return CLIENTS[url]


def chat(server, messages: list[dict], tools: list[dict] | None = None, **kw) -> dict:
    """One chat completion; the assistant message as a plain dict."""
    args: dict[str, Any] = {"model": server.model, "messages": messages}
    if tools:
        args["tools"] = tools
    args.update(kw)
    reply = client(server).chat.completions.create(**args)
    return reply.choices[0].message.model_dump(exclude_none=True)


def fn(name: str, description: str, props: dict[str, str], required: list[str] | None = None) -> dict:
    """An OpenAI function-tool schema with string/number properties."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": v} for k, v in props.items()},
                "required": required if required is not None else list(props),
            },
        },
    }


# ---- reading a request in a brain -------------------------------------------------

def chat_system(request) -> str:
    msgs = request.body.get("messages") or []
    return "\n".join(str(m.get("content")) for m in msgs if m.get("role") == "system")


def chat_user(request) -> str:
    msgs = request.body.get("messages") or []
    users = [m for m in msgs if m.get("role") == "user"]
    if not users:
        return ""
    content = users[-1].get("content")
    if isinstance(content, list):
        return " ".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


def chat_tool_results(request) -> list[dict]:
    out = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m["content"]))
            except (ValueError, TypeError):
                out.append({"text": m.get("content")})
    return out


def resp_instructions(request) -> str:
    return str(request.body.get("instructions") or "")


def resp_user(request) -> str:
    for item in request.body.get("input") or []:
        if isinstance(item, dict) and item.get("role") == "user":
            c = item.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return str(c)
    if isinstance(request.body.get("input"), str):
        return request.body["input"]
    return ""


def resp_outputs(request) -> dict[str, list]:
    """Tool results seen so far, by tool name (in call order)."""
    names = {}
    out: dict[str, list] = {}
    for item in request.body.get("input") or []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            names[item["call_id"]] = item["name"]
        elif item.get("type") == "function_call_output":
            name = names.get(item["call_id"], "?")
            raw = item.get("output")
            try:
                val = ast.literal_eval(raw) if isinstance(raw, str) else raw
            except (ValueError, SyntaxError):
                val = raw
            out.setdefault(name, []).append(val)
    return out


# ---- OTLP ---------------------------------------------------------------------------

def otlp_document(spans) -> dict:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    return MessageToDict(encode_spans(spans))


def write_json(path, doc) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)


# ---- one OpenTelemetry provider for the otlp agents ------------------------------------

OTEL: dict = {}


def setup_otlp() -> None:
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if OTEL:
        return
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    OpenAIInstrumentor().instrument(tracer_provider=provider)
    OTEL.update(exporter=exporter, provider=provider)


def teardown_otlp() -> None:
    from openinference.instrumentation.openai import OpenAIInstrumentor

    if OTEL:
        OpenAIInstrumentor().uninstrument()
        OTEL.clear()


def otlp_tracer(name: str):
    OTEL["exporter"].clear()
    return OTEL["provider"].get_tracer(name)


def otlp_flush(path) -> None:
    write_json(path, otlp_document(OTEL["exporter"].get_finished_spans()))
    OTEL["exporter"].clear()


# ---- one event loop for the Agents SDK runs ---------------------------------------------

LOOP: dict = {}


def run_agents(server, coro_factory, processor):
    """Run an Agents SDK coroutine on one long-lived loop, with `processor` as the only trace processor."""
    import asyncio

    from agents import set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    if "loop" not in LOOP:
        LOOP["loop"] = asyncio.new_event_loop()
    loop = LOOP["loop"]
    if LOOP.get("url") != server.base_url:
        LOOP["client"] = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        LOOP["url"] = server.base_url
    set_default_openai_client(LOOP["client"], use_for_tracing=False)
    set_default_openai_api("responses")
    set_trace_processors([processor])
    try:
        return loop.run_until_complete(coro_factory())
    finally:
        set_trace_processors([])


# ---- OpenInference spans ------------------------------------------------------------------

class _Out:
    def __init__(self, span):
        self.span = span
        self.value = None

    def set(self, value):
        self.value = value
        self.span.set_attribute("output.value", json.dumps(value))
        self.span.set_attribute("output.mime_type", "application/json")
        return value


from contextlib import contextmanager  # noqa: E402


@contextmanager
def ospan(tracer, name: str, kind: str, inp=None, **attrs):
    """A span in the OpenInference convention; `out.set(value)` records its output."""
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = json.dumps(inp)
        a["input.mime_type"] = "application/json"
    if kind == "TOOL":
        a["tool.name"] = name
    a.update(attrs)
    with tracer.start_as_current_span(name, attributes=a) as sp:
        yield _Out(sp)
