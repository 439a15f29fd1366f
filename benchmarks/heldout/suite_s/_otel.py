"""OpenTelemetry plumbing shared by the otlp-route agents: OpenInference spans, OTLP/JSON output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class Traced:
    """One agent's tracer; `session(path)` records one run to an OTLP/JSON file."""

    def __init__(self, service: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    @contextmanager
    def session(self, path: Path) -> Iterator[None]:
        self.exporter.clear()
        inst = OpenAIInstrumentor()
        inst.instrument(tracer_provider=self.provider)
        try:
            yield
        finally:
            inst.uninstrument()
            doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
            Path(path).write_text(json.dumps({"resourceSpans": doc.get("resourceSpans", [])}))
            self.exporter.clear()

    @contextmanager
    def span(self, name: str, kind: str, value: Any = None, **attrs: Any) -> Iterator[Any]:
        attributes = {"openinference.span.kind": kind, **attrs}
        if value is not None:
            attributes["input.value"] = json.dumps(value)
            attributes["input.mime_type"] = "application/json"
        with self.tracer.start_as_current_span(name, attributes=attributes) as sp:
            box = _Out(sp)
            yield box

    def tool(self, name: str, fn, args: dict, kind: str = "TOOL") -> Any:
        with self.span(name, kind, args, **({"tool.name": name} if kind == "TOOL" else {})) as out:
            result = fn(**args)
            out.set(result)
            return result


class _Out:
    def __init__(self, sp) -> None:
        self.sp = sp

    def set(self, value: Any) -> None:
        self.sp.set_attribute("output.value", json.dumps(value))
        self.sp.set_attribute("output.mime_type", "application/json")
