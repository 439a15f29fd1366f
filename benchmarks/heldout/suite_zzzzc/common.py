"""Shared helpers for the suite's agents: model calls, brain helpers, OTLP spans."""
from __future__ import annotations

import ast
import json
from contextlib import contextmanager

import trajdebug
from trajdebug.testing import Reply, tool_call  # noqa: F401  (re-exported for the agents)


# ---------------------------------------------------------------- chat helpers (sdk route)
def llm_step(name, client, model, messages, tools=None):
    """One model call recorded as an llm step: messages in, the assistant message out."""
    given = {"messages": messages}
    if tools:
        given["tools"] = tools
    with trajdebug.step(name, kind="llm", input=given) as s:
        kwargs = {"tools": tools} if tools else {}
        reply = client.chat.completions.create(model=model, messages=messages, **kwargs)
        msg = reply.choices[0].message.model_dump(exclude_none=True)
        s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens if reply.usage else 0,
                completion_tokens=reply.usage.completion_tokens if reply.usage else 0)
        s.output = msg
    return msg


def fn_tool(name, description, props, required=None):
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required or list(props)}}}


# ---------------------------------------------------------------- brain helpers
def chat_messages(request):
    return request.body.get("messages") or []


def system_text(request):
    for m in chat_messages(request):
        if m.get("role") == "system":
            return m.get("content") or ""
    return request.body.get("instructions") or ""


def last_user(request):
    for m in reversed(chat_messages(request)):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results_chat(request):
    """Chat Completions: {tool name: [parsed results]} from the tool messages."""
    names = {}
    for m in chat_messages(request):
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
    out = {}
    for m in chat_messages(request):
        if m.get("role") == "tool":
            out.setdefault(names.get(m.get("tool_call_id"), "?"), []).append(_loads(m.get("content")))
    return out


def responses_items(request):
    items = request.body.get("input")
    return items if isinstance(items, list) else []


def responses_user(request):
    for item in responses_items(request):
        if isinstance(item, dict) and item.get("role") == "user":
            c = item.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def responses_results(request):
    """Responses API: {tool name: [parsed outputs]} in order."""
    names = {}
    for item in responses_items(request):
        if isinstance(item, dict) and item.get("type") == "function_call":
            names[item["call_id"]] = item["name"]
    out = {}
    for item in responses_items(request):
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            out.setdefault(names.get(item["call_id"], "?"), []).append(_loads(item.get("output")))
    return out


def _loads(text):
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text


# ---------------------------------------------------------------- OTLP spans (OpenInference attributes)
class SpanOut:
    def __init__(self, span):
        self.span = span
        self.output = None


@contextmanager
def oi_span(tracer, name, kind, inp=None, **attrs):
    """A span in the OpenInference convention: kind, input.value, output.value (JSON)."""
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = json.dumps(inp)
        a["input.mime_type"] = "application/json"
    a.update(attrs)
    with tracer.start_as_current_span(name, attributes=a) as span:
        holder = SpanOut(span)
        yield holder
        if holder.output is not None:
            span.set_attribute("output.value", json.dumps(holder.output))
            span.set_attribute("output.mime_type", "application/json")


# ---------------------------------------------------------------- OTLP export
_OTLP = {}


def otlp_tracer(name):
    """A tracer of the process's one provider, whose spans collect in memory."""
    if "provider" not in _OTLP:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "office-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _OTLP.update(provider=provider, exporter=exporter)
    return _OTLP["provider"].get_tracer(name)


@contextmanager
def otlp_capture(path):
    """Instrument the openai client, run the block, write its spans as one OTLP JSON document."""
    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    otlp_tracer("init")
    _OTLP["exporter"].clear()
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=_OTLP["provider"])
    try:
        yield
    finally:
        inst.uninstrument()
        spans = _OTLP["exporter"].get_finished_spans()
        with open(path, "w") as f:
            json.dump(MessageToDict(encode_spans(spans)), f)
        _OTLP["exporter"].clear()
