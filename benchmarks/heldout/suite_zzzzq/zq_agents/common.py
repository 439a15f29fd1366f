"""Shared plumbing: model clients against the fake server, OTLP span writing, message helpers."""
from __future__ import annotations

import ast
import json
from contextlib import contextmanager
from typing import Any

from openai import OpenAI


def client(server) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def last_user(request) -> str:
    for m in reversed(request.body.get("messages", [])):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_text(request) -> str:
    for m in request.body.get("messages", []):
        if m.get("role") == "system":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(request) -> list[tuple[str, Any]]:
    """(tool name, parsed result) for each tool message, in order (names from the assistant calls)."""
    names: dict[str, str] = {}
    out = []
    for m in request.body.get("messages", []):
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            raw = m.get("content")
            if isinstance(raw, list):
                raw = "".join(p.get("text", "") for p in raw if isinstance(p, dict))
            val: Any = raw
            for loader in (json.loads, ast.literal_eval):
                try:
                    val = loader(raw)
                    break
                except Exception:
                    continue
            out.append((names.get(m.get("tool_call_id"), "?"), val))
    return out


def offered_tools(request) -> list[str]:
    return [t.get("function", {}).get("name", t.get("name")) for t in request.body.get("tools") or []]


# --- OTLP route -------------------------------------------------------------------------------

OI_KIND = {"llm": "LLM", "tool": "TOOL", "retrieval": "RETRIEVER", "agent": "AGENT"}


class SpanHandle:
    def __init__(self, span):
        self.span = span
        self.output: Any = None


class OtlpRecorder:
    """One run's spans: an OpenTelemetry SDK provider, OpenInference attributes, OTLP JSON out."""

    def __init__(self, name: str):
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(name)

    @contextmanager
    def instrumented(self):
        from openinference.instrumentation.openai import OpenAIInstrumentor

        inst = OpenAIInstrumentor()
        inst.instrument(tracer_provider=self.provider)
        try:
            yield
        finally:
            inst.uninstrument()

    @contextmanager
    def step(self, name: str, kind: str, input: Any = None, **attrs: Any):
        a: dict[str, Any] = {"openinference.span.kind": OI_KIND.get(kind, "CHAIN")}
        if kind not in OI_KIND:
            a["trajdebug.step.kind"] = kind
        if input is not None:
            a["input.value"] = input if isinstance(input, str) else json.dumps(input)
            a["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
        for k, v in attrs.items():
            a[k.replace("__", ".")] = v if isinstance(v, (str, int, float, bool)) else json.dumps(v)
        with self.tracer.start_as_current_span(name, attributes=a) as span:
            h = SpanHandle(span)
            yield h
            if h.output is not None:
                span.set_attribute("output.value", h.output if isinstance(h.output, str) else json.dumps(h.output))
                span.set_attribute("output.mime_type", "text/plain" if isinstance(h.output, str) else "application/json")

    def write(self, path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        self.provider.shutdown()
