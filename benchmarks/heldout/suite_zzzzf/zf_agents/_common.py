"""What the eight agents share: the model endpoint they are given, the brain helpers, OTLP capture."""

from __future__ import annotations

import ast
import contextvars
import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Env:
    """Where an agent's model calls go and where an OTLP agent's spans are captured."""

    base_url: str
    model: str
    otel: Any = None  # OtelCapture for the otlp agents
    extra: dict[str, Any] = field(default_factory=dict)


# --- reading a Chat Completions request -------------------------------------------------------


def messages(request: Any) -> list[dict[str, Any]]:
    body = request.body or {}
    return list(body.get("messages") or [])


def system_text(request: Any) -> str:
    for m in messages(request):
        if m.get("role") == "system":
            return _text(m.get("content"))
    return str((request.body or {}).get("instructions") or "")


def last_user(request: Any) -> str:
    for m in reversed(messages(request)):
        if m.get("role") == "user":
            return _text(m.get("content"))
    for item in reversed(list((request.body or {}).get("input") or [])):
        if isinstance(item, dict) and item.get("role") == "user":
            return _text(item.get("content"))
        if isinstance(item, str):
            return item
    return ""


def tool_results(request: Any) -> list[tuple[str, str]]:
    """(tool name, result text) of every tool result in the request, oldest first (Chat or Responses)."""
    body = request.body or {}
    out: list[tuple[str, str]] = []
    if "messages" in body:
        names: dict[str, str] = {}
        for m in body["messages"]:
            for c in m.get("tool_calls") or ():
                names[c["id"]] = c["function"]["name"]
            if m.get("role") == "tool":
                out.append((names.get(m.get("tool_call_id"), m.get("name") or ""), _text(m.get("content"))))
        return out
    names = {}
    for item in body.get("input") or ():
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            names[item["call_id"]] = item["name"]
        elif item.get("type") == "function_call_output":
            out.append((names.get(item["call_id"], ""), _text(item.get("output"))))
    return out


def called(request: Any) -> list[tuple[str, dict[str, Any]]]:
    """(tool name, arguments) of every tool call the assistant already made in this request."""
    body = request.body or {}
    out: list[tuple[str, dict[str, Any]]] = []
    if "messages" in body:
        for m in body["messages"]:
            for c in m.get("tool_calls") or ():
                out.append((c["function"]["name"], json.loads(c["function"]["arguments"] or "{}")))
        return out
    for item in body.get("input") or ():
        if isinstance(item, dict) and item.get("type") == "function_call":
            out.append((item["name"], json.loads(item.get("arguments") or "{}")))
    return out


def read_value(text: str) -> Any:
    """A tool result as the SDKs send it back: JSON, or a Python repr (the Agents SDK's str(result))."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def between(text: str, start: str, end: str = "\n") -> str:
    """The part of ``text`` after ``start`` up to ``end`` (a brain reading its prompt)."""
    i = text.index(start) + len(start)
    j = text.find(end, i)
    return text[i:] if j < 0 else text[i:j]


# --- OTLP capture -------------------------------------------------------------------------------


class OtelCapture:
    """One TracerProvider for the otlp agents; each run's finished spans become one OTLP JSON document."""

    def __init__(self) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "venue-ops", "deployment.environment": "prod"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self._instrumentor: Any = None

    def instrument(self) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        if self._instrumentor is None:
            self._instrumentor = OpenAIInstrumentor()
            self._instrumentor.instrument(tracer_provider=self.provider)

    def uninstrument(self) -> None:
        if self._instrumentor is not None:
            self._instrumentor.uninstrument()
            self._instrumentor = None

    def tracer(self, name: str) -> Any:
        return self.provider.get_tracer(name)

    def begin(self) -> None:
        self.exporter.clear()

    def document(self) -> dict[str, Any]:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        self.exporter.clear()
        return doc


def in_context_map(fn: Callable[[Any], Any], items: Iterable[Any], workers: int = 3) -> list[Any]:
    """Run ``fn`` over ``items`` in a thread pool, each call in a copy of the caller's context
    (the OpenTelemetry span context travels in contextvars)."""
    items = list(items)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, item) for item in items]
        return [f.result() for f in futures]


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=False, separators=(", ", ": "))


_clients: dict[str, Any] = {}


def openai_client(env: Env) -> Any:
    """One synchronous OpenAI client per endpoint (building one costs an SSL context, ~0.1 s)."""
    from openai import OpenAI

    if env.base_url not in _clients:
        _clients[env.base_url] = OpenAI(base_url=env.base_url, api_key="not-needed", max_retries=0)
    return _clients[env.base_url]


class SdkLoop:
    """One event loop (and one AsyncOpenAI client per endpoint) for every Agents SDK run: an async client
    belongs to the loop it first ran on, and building one costs an SSL context."""

    def __init__(self) -> None:
        import asyncio

        self.loop = asyncio.new_event_loop()
        self._clients: dict[str, Any] = {}

    def client(self, env: Env) -> Any:
        from openai import AsyncOpenAI

        if env.base_url not in self._clients:
            self._clients[env.base_url] = AsyncOpenAI(base_url=env.base_url, api_key="not-needed", max_retries=0)
        return self._clients[env.base_url]

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)


_sdk_loop: SdkLoop | None = None


def sdk_loop() -> SdkLoop:
    global _sdk_loop
    if _sdk_loop is None:
        _sdk_loop = SdkLoop()
    return _sdk_loop


def run_recorded_sdk(coro_factory: Callable[[], Any], processor: Any) -> Any:
    """Run one Agents SDK `Runner.run` with only ``processor`` receiving its trace, then leave none behind."""
    from agents.tracing import set_trace_processors

    set_trace_processors([processor])
    try:
        return sdk_loop().run(coro_factory())
    finally:
        set_trace_processors([])


# --- OpenInference spans (the otlp agents) ------------------------------------------------------------------


class _SpanBox:
    def __init__(self, span: Any) -> None:
        self.span = span
        self._output: Any = None

    @property
    def output(self) -> Any:
        return self._output

    @output.setter
    def output(self, value: Any) -> None:
        self._output = value
        if isinstance(value, str):
            self.span.set_attribute("output.value", value)
            self.span.set_attribute("output.mime_type", "text/plain")
        else:
            self.span.set_attribute("output.value", json.dumps(value))
            self.span.set_attribute("output.mime_type", "application/json")


class Spans:
    """Steps of an agent traced with the OpenTelemetry SDK and OpenInference's attribute names."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer

    def step(self, name: str, kind: str, input: Any = None, attrs: dict[str, Any] | None = None) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def cm():
            a: dict[str, Any] = {"openinference.span.kind": kind}
            if input is not None:
                if isinstance(input, str):
                    a.update({"input.value": input, "input.mime_type": "text/plain"})
                else:
                    a.update({"input.value": json.dumps(input), "input.mime_type": "application/json"})
            a.update(attrs or {})
            with self.tracer.start_as_current_span(name, attributes=a) as sp:
                yield _SpanBox(sp)

        return cm()

    def tool(self, name: str, fn: Callable[..., Any], args: dict[str, Any], call_id: str | None = None) -> Any:
        attrs = {"tool.name": name}
        if call_id:
            attrs["tool.id"] = call_id
        with self.step(name, "TOOL", args, attrs) as s:
            s.output = fn(**args)
        return s.output

    def retriever(self, name: str, fn: Callable[[str], list[dict[str, Any]]], query: str) -> list[dict[str, Any]]:
        with self.step(name, "RETRIEVER", query) as s:
            docs = fn(query)
            for i, d in enumerate(docs):
                p = f"retrieval.documents.{i}.document."
                s.span.set_attribute(p + "id", d["id"])
                s.span.set_attribute(p + "content", d["content"])
                s.span.set_attribute(p + "score", float(d["score"]))
                s.span.set_attribute(p + "metadata", json.dumps(d.get("metadata") or {}))
        return docs
