"""What the eight agents of suite_zzi share: the case record, reading a model request in the fake
server's policies, the model call of the SDK-route agents, and the OpenTelemetry plumbing of the
OTLP-route agents."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trajdebug


@dataclass(frozen=True)
class Case:
    """One case: the input it runs, the switch that plants its silent fault, and where the fault is."""

    id: str
    switch: str
    input: str
    fault_kind: str
    root: tuple[str, int, str]
    """(recorded step name, occurrence among same-named steps in start order, recorded kind)"""
    failure: tuple[str, int]
    """(recorded step name, occurrence) of the step that raises."""
    description: str


# -- reading a request in a policy ---------------------------------------------------------------------


def messages(request: Any) -> list[dict[str, Any]]:
    """The request's conversation as chat messages, whatever the endpoint (Chat Completions or Responses).

    Tool results come back as ``{"role": "tool", "name": ..., "content": ...}``.
    """
    body = request.body or {}
    out: list[dict[str, Any]] = []
    if "messages" in body:
        names: dict[str, str] = {}
        for m in body["messages"]:
            for call in m.get("tool_calls") or ():
                names[call["id"]] = call["function"]["name"]
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
            item = {"role": m.get("role"), "content": content or ""}
            if m.get("role") == "tool":
                item["name"] = names.get(m.get("tool_call_id"), "")
            if m.get("tool_calls"):
                item["calls"] = [c["function"]["name"] for c in m["tool_calls"]]
            out.append(item)
        return out
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    names = {}
    for it in items or ():
        kind = it.get("type")
        if kind == "function_call":
            names[it["call_id"]] = it["name"]
            if out and out[-1]["role"] == "assistant" and "calls" in out[-1]:
                out[-1]["calls"].append(it["name"])
            else:
                out.append({"role": "assistant", "content": "", "calls": [it["name"]]})
        elif kind == "function_call_output":
            out.append(
                {"role": "tool", "name": names.get(it["call_id"], ""), "content": it.get("output") or ""}
            )
        else:
            content = it.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, Mapping))
            out.append({"role": it.get("role", "user"), "content": content or ""})
    return out


def system_text(msgs: list[dict[str, Any]]) -> str:
    return next((m["content"] for m in msgs if m["role"] in ("system", "developer")), "")


def user_text(msgs: list[dict[str, Any]]) -> str:
    return next((m["content"] for m in reversed(msgs) if m["role"] == "user"), "")


def tool_outputs(msgs: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """(tool name, parsed output) of every tool result in the conversation, in order."""
    out = []
    for m in msgs:
        if m["role"] == "tool":
            try:
                value = json.loads(m["content"])
            except (TypeError, ValueError):
                value = m["content"]
            out.append((m["name"], value))
    return out


def first_json(text: str) -> Any:
    """The first JSON object or list in a text (a prompt that embeds its data)."""
    dec = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return dec.raw_decode(text[i:])[0]
            except ValueError:
                continue
    raise ValueError("no JSON in the text")


def money(x: float) -> str:
    return f"{x:,.2f}"


def ceil_to(x: float, step: float) -> float:
    return math.ceil(round(x / step, 9)) * step


# -- the SDK route's model call ------------------------------------------------------------------------


def ask_model(client: Any, name: str, system: str, user: str, *, model: str = "gpt-4o-mini") -> str:
    """One chat completion, recorded as an `llm` step named `name`; returns the answer's text."""
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
        reply = client.chat.completions.create(model=model, messages=msgs, temperature=0)
        text = reply.choices[0].message.content or ""
        s.usage(
            model=reply.model,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
        )
        s.output = text
    return text


# -- the OTLP route ------------------------------------------------------------------------------------


class OtlpTracing:
    """An OpenTelemetry tracer provider whose spans are kept in memory and written as OTLP/JSON,
    the `openai` client instrumented by OpenInference while a run is traced."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    @contextmanager
    def traced(self, out: Path) -> Iterator[None]:
        """Trace one run into `out` (one OTLP/JSON envelope), whatever the run raises."""
        from google.protobuf.json_format import MessageToDict
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.exporter.clear()
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=self.provider)
        try:
            yield
        finally:
            instrumentor.uninstrument()
            envelope = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
            _hex_ids(envelope)
            Path(out).write_text(json.dumps(envelope) + "\n")

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attributes: Any) -> Iterator[Any]:
        """A span with OpenInference attributes; set the output with ``handle.output = value``."""
        attrs: dict[str, Any] = {"openinference.span.kind": kind}
        if input is not None:
            attrs["input.value"] = input if isinstance(input, str) else json.dumps(input)
            attrs["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
        if kind == "TOOL":
            attrs["tool.name"] = name
        attrs.update(attributes)
        holder = _Out()
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            yield holder
            if holder.set:
                value = holder.value
                sp.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value))
                sp.set_attribute(
                    "output.mime_type", "text/plain" if isinstance(value, str) else "application/json"
                )


def _hex_ids(envelope: dict) -> None:
    """Trace and span ids as the OTLP/JSON spec writes them (hex), not protobuf JSON's base64."""
    import base64

    def fix(obj: dict) -> None:
        for key in ("traceId", "spanId", "parentSpanId"):
            if obj.get(key):
                obj[key] = base64.b64decode(obj[key]).hex()

    for rs in envelope.get("resourceSpans", ()):
        for ss in rs.get("scopeSpans", ()):
            for span in ss.get("spans", ()):
                fix(span)
                for link in span.get("links", ()):
                    fix(link)


class _Out:
    def __init__(self) -> None:
        self.set = False
        self.value: Any = None

    @property
    def output(self) -> Any:
        return self.value

    @output.setter
    def output(self, value: Any) -> None:
        self.set, self.value = True, value


def chat_text(client: Any, system: str, user: str, *, model: str = "gpt-4o-mini") -> str:
    """A chat completion with the plain `openai` client (traced by the instrumentor on the OTLP route)."""
    reply = client.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0,
    )
    return reply.choices[0].message.content or ""
