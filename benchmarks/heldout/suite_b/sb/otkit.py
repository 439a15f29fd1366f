"""OpenTelemetry / OpenInference plumbing for the route-3 agents.

The model calls go through the ``openai`` client, instrumented by
``openinference-instrumentation-openai``; tools, parsers and the agent itself are
our own spans with OpenInference span kinds and input/output values.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from openai import OpenAI
from openinference.semconv.trace import OpenInferenceSpanKindValues as Kind
from openinference.semconv.trace import SpanAttributes as SA

from sb.env import ENV


def client() -> OpenAI:
    return OpenAI(base_url=ENV.server.base_url, api_key="sk-heldout-b-fake", max_retries=0, timeout=30)


def tracer(name: str) -> Any:
    return ENV.otel.tracer(name)


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v)


@contextmanager
def span(tr: Any, name: str, kind: Kind, inp: Any = None, **attrs: Any) -> Iterator[Any]:
    """A span with an OpenInference kind; set ``.output`` on the yielded holder to record output.value.

    An exception is recorded on the span (status ERROR + exception event) and re-raised.
    """
    attributes = {SA.OPENINFERENCE_SPAN_KIND: kind.value, **attrs}
    if inp is not None:
        attributes[SA.INPUT_VALUE] = _value(inp)
        attributes[SA.INPUT_MIME_TYPE] = "text/plain" if isinstance(inp, str) else "application/json"
    with tr.start_as_current_span(name, attributes=attributes) as s:
        holder = _Out(s)
        yield holder
        if holder.value is not None:
            s.set_attribute(SA.OUTPUT_VALUE, _value(holder.value))
            s.set_attribute(
                SA.OUTPUT_MIME_TYPE, "text/plain" if isinstance(holder.value, str) else "application/json"
            )


class _Out:
    def __init__(self, s: Any) -> None:
        self.span = s
        self.value: Any = None


def tool_schema(name: str, description: str, params: dict[str, str]) -> dict[str, Any]:
    types = {"str": "string", "int": "integer", "float": "number", "list": "array"}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    k: {"type": types[v]} | ({"items": {"type": "string"}} if v == "list" else {})
                    for k, v in params.items()
                },
                "required": list(params),
            },
        },
    }


def react(
    tr: Any,
    oai: OpenAI,
    messages: list[dict[str, Any]],
    tools: dict[str, tuple[Callable[..., Any], dict[str, Any]]],
    model: str = "gpt-4o-mini",
    max_turns: int = 12,
) -> str:
    """A plain tool-calling loop: each call runs in a TOOL span carrying the call id."""
    schemas = [schema for _fn, schema in tools.values()]
    for _ in range(max_turns):
        resp = oai.chat.completions.create(model=model, messages=messages, tools=schemas, temperature=0)
        msg = resp.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return msg.content or ""
        for tc in msg.tool_calls:
            fn, _schema = tools[tc.function.name]
            args = json.loads(tc.function.arguments)
            with span(
                tr, tc.function.name, Kind.TOOL, args, **{SA.TOOL_NAME: tc.function.name, SA.TOOL_ID: tc.id}
            ) as out:
                result = fn(**args)
                out.value = result
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": _value(result)})
    raise RuntimeError("agent did not finish within its turn budget")
