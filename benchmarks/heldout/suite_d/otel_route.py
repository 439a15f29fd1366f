"""Route 3: an agent that uses the `openai` client instrumented with openinference-instrumentation-openai,
its own OpenTelemetry spans for tools and parsing (OpenInference span kinds), the OTel SDK with an
in-memory exporter, and each trace written as OTLP/JSON (``resourceSpans``) the way a user would dump it:
encoded with opentelemetry.exporter.otlp.proto.common and google.protobuf.json_format."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf.json_format import MessageToDict
from openinference.instrumentation.openai import OpenAIInstrumentor
from openinference.semconv.trace import OpenInferenceMimeTypeValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span


def _value(v: Any) -> tuple[str, str]:
    if isinstance(v, str):
        return v, OpenInferenceMimeTypeValues.TEXT.value
    return json.dumps(v, ensure_ascii=False, default=str), OpenInferenceMimeTypeValues.JSON.value


class SpanHandle:
    def __init__(self, span: Span) -> None:
        self.span = span

    def output(self, value: Any) -> Any:
        text, mime = _value(value)
        self.span.set_attribute(SpanAttributes.OUTPUT_VALUE, text)
        self.span.set_attribute(SpanAttributes.OUTPUT_MIME_TYPE, mime)
        return value


class Telemetry:
    """One tracer provider for an agent (its service name), an in-memory exporter, the OpenAI instrumentor."""

    def __init__(self, service: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service, "service.version": "1.4.2"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)
        self.instrumentor = OpenAIInstrumentor()

    def __enter__(self) -> Telemetry:
        self.instrumentor.instrument(tracer_provider=self.provider)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.instrumentor.uninstrument()
        self.provider.shutdown()

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attributes: Any) -> Iterator[SpanHandle]:
        attrs: dict[str, Any] = {SpanAttributes.OPENINFERENCE_SPAN_KIND: kind}
        if input is not None:
            text, mime = _value(input)
            attrs[SpanAttributes.INPUT_VALUE] = text
            attrs[SpanAttributes.INPUT_MIME_TYPE] = mime
        if kind == "TOOL":
            attrs.setdefault(SpanAttributes.TOOL_NAME, name)
        for k, v in attributes.items():
            attrs[k.replace("__", ".")] = v
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            yield SpanHandle(sp)

    def tool(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a function as a TOOL span (input: its keyword arguments, output: its return value)."""
        return self._wrap(fn, "TOOL")

    def chain(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Wrap a function as a CHAIN span (parsing, normalising, checks)."""
        return self._wrap(fn, "CHAIN")

    def _wrap(self, fn: Callable[..., Any], kind: str) -> Callable[..., Any]:
        import functools
        import inspect

        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            with self.span(fn.__name__, kind, input=dict(bound.arguments)) as sp:
                return sp.output(fn(*args, **kwargs))

        return wrapper

    def record(self, body: Callable[[], Any], path: str, catch: tuple[type[BaseException], ...]) -> BaseException | None:
        """Run one traced agent run (``body`` opens the root span) and write its trace as OTLP/JSON."""
        self.exporter.clear()
        raised: BaseException | None = None
        try:
            body()
        except catch as exc:
            raised = exc
        self.provider.force_flush()
        spans = list(self.exporter.get_finished_spans())
        roots = [s for s in spans if s.parent is None]
        assert len(roots) == 1, f"expected one root span, got {[s.name for s in roots]}"
        trace_id = roots[0].context.trace_id
        mine = [s for s in spans if s.context.trace_id == trace_id]
        doc = MessageToDict(encode_spans(mine))
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        self.exporter.clear()
        return raised
