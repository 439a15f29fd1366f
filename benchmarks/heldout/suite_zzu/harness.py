"""Shared plumbing for the suite: one fake model server, route-specific writers, checks."""
from __future__ import annotations

import json
import re
from typing import Any

FORBIDDEN = re.compile(r"\b(fault|faults|bug|bugs|wrong|stale|planted|inject|injected|corrupt|corrupted)\b", re.I)


class Brain:
    """A fake-server policy that dispatches on the `[tag]` the agent puts first in its prompt."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}

    def on(self, tag: str):
        def deco(fn):
            self.handlers[tag] = fn
            return fn
        return deco

    def __call__(self, request):
        body = request.body
        if "messages" in body:
            text = "\n".join(_text(m.get("content")) for m in body["messages"])
        else:
            text = (body.get("instructions") or "") + "\n" + _text(body.get("input"))
        m = re.search(r"\[([a-z_]+)\]", text)
        if not m or m.group(1) not in self.handlers:
            raise RuntimeError(f"no handler for prompt {text[:120]!r}")
        return self.handlers[m.group(1)](request, text)


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(c.get("text") or c.get("content") or c.get("output") or "") if isinstance(c, dict) else str(c) for c in content)
    return str(content)


def payload(text: str, marker: str = "DATA:") -> Any:
    """The JSON the agent put after `marker` in its prompt (the last occurrence)."""
    i = text.rfind(marker)
    return json.loads(text[i + len(marker):].strip().splitlines()[0])


def chat_prompt(tag: str, instruction: str, data: Any) -> str:
    return f"[{tag}] {instruction}\nDATA: {json.dumps(data, sort_keys=True)}"


class OtlpRun:
    """One traced run: an OpenTelemetry provider with an in-memory exporter and the OpenAI client instrumented by
    OpenInference; `doc()` gives the OTLP/JSON envelope."""

    def __init__(self, service: str, base_url: str) -> None:
        from openai import OpenAI
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer(service)
        self.client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)

    def span(self, name: str, kind: str, inp: Any = None):
        attrs = {"openinference.span.kind": kind}
        if inp is not None:
            attrs["input.value"] = json.dumps(inp, sort_keys=True)
            attrs["input.mime_type"] = "application/json"
        return self.tracer.start_as_current_span(name, attributes=attrs)

    def call(self, name: str, kind: str, inp: Any, fn):
        with self.span(name, kind, inp) as sp:
            out = fn()
            sp.set_attribute("output.value", json.dumps(out, sort_keys=True) if not isinstance(out, str) else out)
            sp.set_attribute("output.mime_type", "application/json" if not isinstance(out, str) else "text/plain")
        return out

    def ask(self, system: str, prompt: str) -> str:
        r = self.client.chat.completions.create(model="fake-model", messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}])
        return r.choices[0].message.content

    def doc(self) -> dict:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.instrumentor.uninstrument()
        return MessageToDict(encode_spans(self.exporter.get_finished_spans()))
