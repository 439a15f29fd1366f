"""Small OpenInference helpers, as an application instrumenting its own tools and chains would write them.

The ``openai`` client is instrumented by ``openinference-instrumentation-openai`` (LLM spans); the
application adds AGENT / CHAIN / TOOL spans with ``input.value`` / ``output.value`` itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes


def _text(value: Any) -> tuple[str, str]:
    if isinstance(value, str):
        return value, "text/plain"
    return json.dumps(value, default=str), "application/json"


class SpanIO:
    def __init__(self, span: Any) -> None:
        self.span = span

    def output(self, value: Any) -> Any:
        text, mime = _text(value)
        self.span.set_attribute(SpanAttributes.OUTPUT_VALUE, text)
        self.span.set_attribute(SpanAttributes.OUTPUT_MIME_TYPE, mime)
        return value


@contextmanager
def span(tracer: Any, name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[SpanIO]:
    """An OpenInference span of ``kind`` (AGENT, CHAIN, TOOL, RETRIEVER, ...)."""
    attributes: dict[str, Any] = {SpanAttributes.OPENINFERENCE_SPAN_KIND: getattr(OpenInferenceSpanKindValues, kind).value}
    if input is not None:
        text, mime = _text(input)
        attributes[SpanAttributes.INPUT_VALUE] = text
        attributes[SpanAttributes.INPUT_MIME_TYPE] = mime
    for k, v in attrs.items():
        if v is not None:
            attributes[k.replace("__", ".")] = v
    with tracer.start_as_current_span(name, attributes=attributes) as s:
        yield SpanIO(s)


def tool_span(tracer: Any, name: str, args: dict[str, Any], fn: Callable[..., Any], *, call_id: str | None = None,
              description: str | None = None) -> Any:
    """Run one tool inside a TOOL span; the result (a dict or a string) becomes ``output.value``."""
    with span(tracer, name, "TOOL", input=args, tool__name=name, tool__id=call_id, tool__description=description) as s:
        return s.output(fn(**args))


def chain_span(tracer: Any, name: str, arg: Any, fn: Callable[[Any], Any]) -> Any:
    """Run a parsing / glue function inside a CHAIN span."""
    with span(tracer, name, "CHAIN", input=arg) as s:
        return s.output(fn(arg))
