"""OpenInference spans for the otlp route: a span of a kind, its input.value and output.value."""

from __future__ import annotations

import json
from contextlib import contextmanager
from typing import Any


class Span:
    def __init__(self, otel_span: Any) -> None:
        self._span = otel_span
        self.output: Any = None

    def set(self, value: Any) -> Any:
        self.output = value
        return value


@contextmanager
def span(tracer: Any, name: str, kind: str, value: Any = None, **attrs: Any):
    """A span of OpenInference kind ``kind`` (AGENT, CHAIN, TOOL, RETRIEVER) with ``value`` as its input."""
    attributes = {"openinference.span.kind": kind}
    if value is not None:
        attributes["input.value"] = value if isinstance(value, str) else json.dumps(value)
        attributes["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
    if kind == "TOOL":
        attributes["tool.name"] = name
    attributes.update({k: v for k, v in attrs.items() if v is not None})
    with tracer.start_as_current_span(name, attributes=attributes) as s:
        holder = Span(s)
        yield holder
        out = holder.output
        if out is not None:
            s.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
            s.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")
        if kind == "RETRIEVER" and isinstance(out, list):
            for i, doc in enumerate(out):
                s.set_attribute(f"retrieval.documents.{i}.document.id", str(doc.get("id")))
                s.set_attribute(f"retrieval.documents.{i}.document.content", str(doc.get("content")))
                if "score" in doc:
                    s.set_attribute(f"retrieval.documents.{i}.document.score", float(doc["score"]))
