"""The OTLP route: the `openai` client instrumented by OpenInference, the agent's own tool and chain
spans beside it, all exported as OTLP JSON (``{"resourceSpans": [...]}``) to a file."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode


_exporter = InMemorySpanExporter()
_provider = TracerProvider(resource=Resource.create({"service.name": "suite-i-agents"}))
_provider.add_span_processor(SimpleSpanProcessor(_exporter))
OpenAIInstrumentor().instrument(tracer_provider=_provider)
_tracer = _provider.get_tracer("benchmarks.heldout.suite_i")


class Span:
    """A span being recorded: set `output` to record what it returned."""

    def __init__(self, span: Any) -> None:
        self.span = span
        self.output: Any = None


@contextlib.contextmanager
def span(name: str, kind: str, value: Any = None, **attributes: Any) -> Iterator[Span]:
    """An OpenInference span (``kind``: AGENT, CHAIN, TOOL, RETRIEVER) with its input and output."""
    attrs = {"openinference.span.kind": kind, **attributes}
    if value is not None:
        attrs |= {"input.value": json.dumps(value), "input.mime_type": "application/json"}
    if kind == "TOOL":
        attrs["tool.name"] = name
    with _tracer.start_as_current_span(name, attributes=attrs, record_exception=False,
                                       set_status_on_exception=False) as current:
        handle = Span(current)
        try:
            yield handle
        except Exception as exc:
            current.record_exception(exc)
            current.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
            raise
        current.set_attribute("output.value", json.dumps(handle.output))
        current.set_attribute("output.mime_type", "application/json")


@contextlib.contextmanager
def trace_to(path: Path) -> Iterator[None]:
    """Collect the spans of the block and write them as one OTLP JSON document."""
    _exporter.clear()
    try:
        yield
    finally:
        spans = _exporter.get_finished_spans()
        _exporter.clear()
        document = MessageToDict(encode_spans(spans))
        path.write_text(json.dumps({"resourceSpans": document.get("resourceSpans", [])}))
