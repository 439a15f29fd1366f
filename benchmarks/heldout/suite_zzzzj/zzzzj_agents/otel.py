"""OpenTelemetry SDK spans with OpenInference attributes, exported as one OTLP JSON document per run."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any, Iterator

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from . import common

_EXPORTER = InMemorySpanExporter()
_PROVIDERS: dict[str, TracerProvider] = {}


def tracer(service: str) -> Any:
    if service not in _PROVIDERS:
        p = TracerProvider(resource=Resource.create({"service.name": service}))
        p.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        _PROVIDERS[service] = p
    return _PROVIDERS[service].get_tracer(service)


def _j(value: Any) -> str:
    return json.dumps(value, default=str)


@contextmanager
def span(t: Any, name: str, kind: str, value: Any = None, **attrs: Any) -> Iterator[Any]:
    """A span of an OpenInference kind; `s.set_attribute("output.value", ...)` through `done(s, output)`."""
    a = {"openinference.span.kind": kind}
    if value is not None:
        a["input.value"] = _j(value)
        a["input.mime_type"] = "application/json"
    a.update({k.replace("__", "."): v for k, v in attrs.items()})
    with t.start_as_current_span(name, attributes=a) as s:
        yield s


def done(s: Any, output: Any) -> Any:
    s.set_attribute("output.value", _j(output))
    s.set_attribute("output.mime_type", "application/json")
    return output


def tool(t: Any, name: str, fn: Any, args: dict, call_id: str | None = None) -> Any:
    extra = {"tool.name": name, "tool.parameters": _j(args)}
    if call_id:
        extra["tool.id"] = call_id
    with span(t, name, "TOOL", args) as s:
        for k, v in extra.items():
            s.set_attribute(k, v)
        return done(s, fn(**args))


def llm(t: Any, name: str, messages: list[dict], tools: list[dict] | None = None) -> dict:
    """A model call on the fake server, as an OpenInference LLM span."""
    with span(t, name, "LLM", {"messages": messages}) as s:
        s.set_attribute("llm.model_name", common.SERVER.model)
        s.set_attribute("llm.system", "openai")
        for i, m in enumerate(messages):
            s.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
            s.set_attribute(f"llm.input_messages.{i}.message.content", m.get("content") or "")
        for i, tl in enumerate(tools or []):
            s.set_attribute(f"llm.tools.{i}.tool.json_schema", _j(tl))
        out = common.complete(messages, tools)
        s.set_attribute("llm.output_messages.0.message.role", "assistant")
        if out["content"] is not None:
            s.set_attribute("llm.output_messages.0.message.content", out["content"])
        for j, tc in enumerate(out["tool_calls"]):
            p = f"llm.output_messages.0.message.tool_calls.{j}.tool_call"
            s.set_attribute(f"{p}.id", tc["id"])
            s.set_attribute(f"{p}.function.name", tc["name"])
            s.set_attribute(f"{p}.function.arguments", _j(tc["arguments"]))
        return done(s, out)


def retriever(t: Any, name: str, query: str, docs: list[dict]) -> list[dict]:
    with span(t, name, "RETRIEVER", {"query": query}) as s:
        for i, d in enumerate(docs):
            s.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
            s.set_attribute(f"retrieval.documents.{i}.document.content", _j(d["content"]))
            s.set_attribute(f"retrieval.documents.{i}.document.score", float(d["score"]))
        return docs


def begin() -> None:
    _EXPORTER.clear()


def write(path: str) -> None:
    spans = _EXPORTER.get_finished_spans()
    doc = MessageToDict(encode_spans(spans))
    with open(path, "w") as f:
        json.dump(doc, f)
    _EXPORTER.clear()
