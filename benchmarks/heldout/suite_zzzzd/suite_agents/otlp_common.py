"""What the two OpenTelemetry agents share: a tracer provider with an in-memory exporter, the
OpenInference instrumentation of the `openai` client, spans with OpenInference attributes, and the
OTLP JSON document a run's spans encode to."""

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


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class SpanBox:
    """What a span's block sets: its output (written as ``output.value`` when the block ends)."""

    def __init__(self, span: Any) -> None:
        self.span = span
        self.output: Any = None


class OtlpAgent:
    """One agent's tracing: its provider, its exporter, the openai instrumentation while it runs."""

    def __init__(self, service: str, scope: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service, "deployment.environment": "ops"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(scope)
        self._instrumentor: OpenAIInstrumentor | None = None

    def instrument(self) -> None:
        self._instrumentor = OpenAIInstrumentor()
        self._instrumentor.instrument(tracer_provider=self.provider)

    def uninstrument(self) -> None:
        if self._instrumentor is not None:
            self._instrumentor.uninstrument()
            self._instrumentor = None

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attributes: Any) -> Iterator[SpanBox]:
        attrs: dict[str, Any] = {"openinference.span.kind": kind}
        if input is not None:
            attrs["input.value"] = _json(input)
            attrs["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
        for k, v in attributes.items():
            attrs[k.replace("__", ".")] = v if isinstance(v, (str, int, float, bool)) else _json(v)
        with self.tracer.start_as_current_span(name, attributes=attrs) as span:
            box = SpanBox(span)
            yield box
            if box.output is not None:
                span.set_attribute("output.value", _json(box.output))
                span.set_attribute("output.mime_type", "text/plain" if isinstance(box.output, str) else "application/json")

    def write(self, path: Path) -> None:
        """The finished spans of the run as one OTLP JSON document, then forget them."""
        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        path.write_text(json.dumps(doc))
        self.exporter.clear()
