"""The OTLP route: the `openai` client instrumented by openinference, the agent's own OpenInference spans, one
OTLP/JSON file per run (``{"resourceSpans": [...]}``, the protobuf JSON mapping of the export request)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


_STATE: dict[str, Any] = {}


def _setup() -> tuple[Any, Any]:
    if "tracer" not in _STATE:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "ops-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _STATE.update(tracer=provider.get_tracer("ops.agents"), exporter=exporter)
    return _STATE["tracer"], _STATE["exporter"]


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


@contextmanager
def span(name: str, kind: str, inp: Any = None, **attrs: Any) -> Iterator[Any]:
    """A span of an OpenInference kind with its input; set ``.output`` on what it yields."""
    tracer, _ = _setup()
    attributes = {"openinference.span.kind": kind, **attrs}
    if inp is not None:
        attributes |= {"input.value": _json(inp), "input.mime_type": "application/json"}
    with tracer.start_as_current_span(name, attributes=attributes) as sp:
        box = _Box()
        yield box
        if box.output is not None:
            sp.set_attribute("output.value", _json(box.output))
            sp.set_attribute("output.mime_type", "application/json")


class _Box:
    output: Any = None


def traced(kind: str, name: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a function as a span of ``kind``: its keyword-named arguments in, its result out."""

    def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
        import inspect

        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def inner(*args: Any, **kwargs: Any) -> Any:
            bound = sig.bind(*args, **kwargs)
            with span(name or fn.__name__, kind, dict(bound.arguments)) as box:
                box.output = fn(*args, **kwargs)
                return box.output

        return inner

    return wrap


def begin() -> None:
    """Forget the spans of the previous run."""
    _setup()[1].clear()


def write(path: Path) -> None:
    """Write the spans finished since `begin` as one OTLP/JSON export request."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    spans = _setup()[1].get_finished_spans()
    path.write_text(json.dumps(MessageToDict(encode_spans(spans))), encoding="utf-8")
    _setup()[1].clear()


def chat(client: Any, name: str, system: str, user: str) -> str:
    """One model call inside a CHAIN span named for the agent's step (the instrumentor adds the LLM span)."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with span(name, "CHAIN", {"system": system, "user": user}) as box:
        resp = client.chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
        box.output = resp.choices[0].message.content
    return box.output
