"""Shared plumbing for the suite's agents: the fake model's client, OTLP export, small helpers."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any

SERVER = None  # the one FakeModelServer, set by generate.py


def base_url() -> str:
    return SERVER.base_url


def model() -> str:
    return SERVER.model


_clients: dict = {}


def openai_client():
    """One OpenAI client on the fake server for the whole generation (building one costs an SSL context)."""
    key = ("openai", SERVER.base_url)
    if key not in _clients:
        from openai import OpenAI

        _clients[key] = OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
    return _clients[key]


def chat_model():
    """One LangChain ChatOpenAI on the fake server for the whole generation."""
    key = ("langchain", SERVER.base_url)
    if key not in _clients:
        from langchain_openai import ChatOpenAI

        _clients[key] = ChatOpenAI(base_url=SERVER.base_url, api_key="not-needed", model=SERVER.model, max_retries=0)
    return _clients[key]


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_of(request) -> str:
    for m in request.body.get("messages") or []:
        if m.get("role") in ("system", "developer"):
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(request) -> list[tuple[str, str]]:
    """(tool name, content) of every tool message in a Chat Completions request, in order."""
    names: dict[str, str] = {}
    out = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id"), "?"), m.get("content")))
    return out


@contextmanager
def otlp_capture(path: str, service: str):
    """An OpenTelemetry tracer whose spans (and the instrumented openai client's) go to an OTLP JSON file."""
    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    inst = OpenAIInstrumentor()
    inst.instrument(tracer_provider=provider)
    try:
        yield provider.get_tracer(service)
    finally:
        inst.uninstrument()
        provider.force_flush()
        doc = MessageToDict(encode_spans(spans.get_finished_spans()))
        with open(path, "w") as f:
            json.dump(doc, f)


def jdump(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


class _Out:
    def __init__(self, span):
        self.span = span
        self.value = None


@contextmanager
def span(tracer, name: str, kind: str, inp: Any, **attrs: Any):
    """A span of the agent's own (OpenInference kind, JSON input and output); `out.value = ...` sets the output."""
    attributes = {"openinference.span.kind": kind, "input.value": jdump(inp), "input.mime_type": "application/json"}
    attributes.update(attrs)
    with tracer.start_as_current_span(name, attributes=attributes) as s:
        out = _Out(s)
        yield out
        s.set_attribute("output.value", jdump(out.value))
        s.set_attribute("output.mime_type", "application/json")
