"""OpenTelemetry plumbing for the otlp route: spans with OpenInference conventions, exported as OTLP/JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

_PROVIDERS: dict[str, tuple[TracerProvider, InMemorySpanExporter]] = {}


def provider(service: str) -> tuple[TracerProvider, InMemorySpanExporter]:
    if service not in _PROVIDERS:
        exp = InMemorySpanExporter()
        prov = TracerProvider(resource=Resource.create({"service.name": service}))
        prov.add_span_processor(SimpleSpanProcessor(exp))
        _PROVIDERS[service] = (prov, exp)
    return _PROVIDERS[service]


def instrumented_client(base_url: str, prov: TracerProvider) -> Any:
    """An OpenAI client whose calls are traced as OpenInference LLM spans on ``prov``."""
    from openai import OpenAI
    from openinference.instrumentation.openai import OpenAIInstrumentor

    inst = OpenAIInstrumentor()
    if inst.is_instrumented_by_opentelemetry:
        inst.uninstrument()
    inst.instrument(tracer_provider=prov)
    return OpenAI(base_url=base_url, api_key="test", max_retries=0)


def _dump(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class Spans:
    """Open spans of one kind with input and output values."""

    def __init__(self, prov: TracerProvider, scope: str) -> None:
        self.tracer = prov.get_tracer(scope)

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[dict]:
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", kind)
            for k, v in attrs.items():
                sp.set_attribute(k, v)
            if input is not None:
                sp.set_attribute("input.value", _dump(input))
                sp.set_attribute("input.mime_type", "application/json")
            box: dict[str, Any] = {}
            yield box
            if "output" in box:
                sp.set_attribute("output.value", _dump(box["output"]))
                sp.set_attribute("output.mime_type", "application/json")
                if kind == "RETRIEVER" and isinstance(box["output"], list):
                    for i, doc in enumerate(box["output"]):
                        sp.set_attribute(f"retrieval.documents.{i}.document.content", _dump(doc))


def export(exp: InMemorySpanExporter, out: Path) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = exp.get_finished_spans()
    out.write_text(json.dumps(MessageToDict(encode_spans(spans))))
    exp.clear()
