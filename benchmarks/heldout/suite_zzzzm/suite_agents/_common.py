"""What the agents share: the model client, JSON helpers, and the OTLP span plumbing."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=False, separators=(", ", ": "))


def last_user(messages: list[dict]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            return str(m.get("content") or "")
    return ""


def system_of(messages: list[dict]) -> str:
    for m in messages:
        if m.get("role") in ("system", "developer"):
            return str(m.get("content") or "")
    return ""


def tool_results(messages: list[dict]) -> list[dict]:
    """The chat's tool messages, their JSON content decoded."""
    out = []
    for m in messages:
        if m.get("role") == "tool":
            try:
                out.append(json.loads(m.get("content") or "null"))
            except ValueError:
                out.append(m.get("content"))
    return out


class Otlp:
    """One OpenTelemetry tracer provider for an OTLP agent, spans kept in memory until a run is encoded."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)
        self._instrumentor = None

    def instrument(self) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        self._instrumentor = OpenAIInstrumentor()
        self._instrumentor.instrument(tracer_provider=self.provider)

    def uninstrument(self) -> None:
        if self._instrumentor is not None:
            self._instrumentor.uninstrument()
            self._instrumentor = None

    def document(self) -> dict:
        """The spans finished since the last call, as one OTLP/JSON ``{"resourceSpans": [...]}`` document."""
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        self.exporter.clear()
        return doc

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attrs: Any):
        """A span with OpenInference attributes; ``sp.output(value)`` sets its output."""
        attributes: dict[str, Any] = {"openinference.span.kind": kind}
        if input is not None:
            attributes.update(_value("input", input))
        for k, v in attrs.items():
            attributes[k.replace("__", ".")] = v
        with self.tracer.start_as_current_span(name, attributes=attributes) as sp:
            yield _Span(sp)


class _Span:
    def __init__(self, sp: Any) -> None:
        self.sp = sp

    def output(self, value: Any) -> Any:
        for k, v in _value("output", value).items():
            self.sp.set_attribute(k, v)
        return value

    def set(self, key: str, value: Any) -> None:
        self.sp.set_attribute(key, value)

    def documents(self, docs: list[dict]) -> None:
        """A retriever's documents, as OpenInference lists them."""
        for i, d in enumerate(docs):
            self.sp.set_attribute(f"retrieval.documents.{i}.document.id", str(d["id"]))
            self.sp.set_attribute(f"retrieval.documents.{i}.document.content", str(d["content"]))
            if "score" in d:
                self.sp.set_attribute(f"retrieval.documents.{i}.document.score", float(d["score"]))
            if "metadata" in d:
                self.sp.set_attribute(f"retrieval.documents.{i}.document.metadata", json.dumps(d["metadata"]))


def _value(prefix: str, value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {f"{prefix}.value": value, f"{prefix}.mime_type": "text/plain"}
    return {f"{prefix}.value": json.dumps(value), f"{prefix}.mime_type": "application/json"}


def exchange(body: dict) -> tuple[str, str, list[tuple[str, dict, Any]]]:
    """What an Agents SDK request holds, from the Responses API or Chat Completions alike:
    the agent's instructions, the first user message, and each tool call answered so far as
    (tool name, arguments, output; JSON outputs decoded)."""
    calls: dict[str, tuple[str, dict]] = {}
    answered: list[tuple[str, Any]] = []
    instructions, user = str(body.get("instructions") or ""), None
    if "messages" in body:
        for m in body["messages"]:
            role = m.get("role")
            if role in ("system", "developer") and not instructions:
                instructions = str(m.get("content") or "")
            elif role == "user" and user is None:
                user = m.get("content")
            elif role == "assistant":
                for tc in m.get("tool_calls") or []:
                    calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
            elif role == "tool":
                answered.append((m["tool_call_id"], m.get("content")))
    else:
        for i in body.get("input", []):
            if not isinstance(i, dict):
                continue
            if i.get("role") == "user" and user is None:
                user = i.get("content")
            elif i.get("type") == "function_call":
                calls[i["call_id"]] = (i["name"], json.loads(i["arguments"] or "{}"))
            elif i.get("type") == "function_call_output":
                answered.append((i["call_id"], i["output"]))
    if isinstance(user, list):
        user = " ".join(p.get("text", "") for p in user if isinstance(p, dict))
    outs = []
    for call_id, content in answered:
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        try:
            value = json.loads(content)
        except (ValueError, TypeError):
            value = content
        name, args = calls.get(call_id, ("?", {}))
        outs.append((name, args, value))
    return instructions, str(user or ""), outs
