"""What the two OpenTelemetry agents share: a tracer provider with OpenInference attributes, the OpenAI
instrumentation for model spans, and writing the finished trace as one OTLP/JSON file."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_STATE: dict[str, Any] = {}


def _provider(service: str) -> tuple[Any, Any]:
    key = f"p:{service}"
    if key not in _STATE:
        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _STATE[key] = (provider, exporter)
    return _STATE[key]


class Tracing:
    """One recording: spans go to memory while the agent runs, then to an OTLP/JSON file."""

    def __init__(self, service: str, path: Path) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        self.provider, self.exporter = _provider(service)
        self.exporter.clear()
        self.tracer = self.provider.get_tracer("suite_ze." + service)
        self.path = path
        self._inst = OpenAIInstrumentor()
        self._inst.instrument(tracer_provider=self.provider)

    def close(self) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self._inst.uninstrument()
        spans = self.exporter.get_finished_spans()
        doc = MessageToDict(encode_spans(spans))
        old = json.loads(self.path.read_text())["resourceSpans"] if self.path.exists() else []
        self.path.write_text(json.dumps({"resourceSpans": old + doc["resourceSpans"]}))
        self.exporter.clear()

    @contextlib.contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[Any]:
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", kind)
            if input is not None:
                sp.set_attribute("input.value", input if isinstance(input, str) else json.dumps(input, sort_keys=True))
                sp.set_attribute("input.mime_type", "text/plain" if isinstance(input, str) else "application/json")
            for k, v in attrs.items():
                sp.set_attribute(k.replace("__", "."), v)
            yield sp

    @staticmethod
    def out(sp: Any, value: Any) -> Any:
        sp.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value, sort_keys=True))
        sp.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value
