"""Shared switch and helpers for the suite_zzm agents.

`ACTIVE` names the case whose off behaviour is switched on (None: every agent behaves).
Each agent reads its switches with `on(case_id)`, each at one place in its code.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

ACTIVE: str | None = None


def on(case_id: str) -> bool:
    """True when `case_id` is the case being recorded with its off behaviour."""
    return ACTIVE == case_id


# Words no recorded file may hold (checked by generate.py on every recording it writes).
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


# --- the scripted model -------------------------------------------------------------------------
# A brain is a dict: tag -> handler(payload, request) -> answer (str or Reply), or tag -> list of such
# answers/handlers consumed in order.  The tag is the "[tag]" that opens the system prompt (Chat
# Completions) or the instructions (Responses API).


def request_tag(request: Any) -> str:
    body = request.body or {}
    text = body.get("instructions") or ""
    if not text:
        for m in body.get("messages") or []:
            if m.get("role") in ("system", "developer"):
                c = m.get("content")
                text = c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
                break
    m = re.match(r"\s*\[([a-z_]+)\]", text)
    return m.group(1) if m else ""


def last_user(request: Any) -> str:
    body = request.body or {}
    if "messages" in body:
        for m in reversed(body["messages"]):
            if m.get("role") == "user":
                c = m.get("content")
                return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
        return ""
    inp = body.get("input")
    if isinstance(inp, str):
        return inp
    for item in reversed(inp or []):
        if item.get("role") == "user":
            c = item.get("content")
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def tool_outputs(request: Any) -> list[str]:
    """The tool results the model has been shown so far, in order."""
    body = request.body or {}
    out: list[str] = []
    if "messages" in body:
        for m in body["messages"]:
            if m.get("role") == "tool":
                out.append(m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content")))
    else:
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("type") == "function_call_output":
                o = item.get("output")
                out.append(o if isinstance(o, str) else json.dumps(o))
    return out


def json_in(text: str) -> Any:
    """The JSON object or list inside a prompt (after its first '{' or '[' that parses)."""
    for i, ch in enumerate(text):
        if ch in "{[":
            try:
                return json.loads(text[i:])
            except ValueError:
                continue
    raise ValueError("no JSON in prompt")


class Brain:
    """A per-run policy for the FakeModelServer, keyed by the prompt's tag."""

    def __init__(self, handlers: dict[str, Any]) -> None:
        self.handlers = {k: (list(v) if isinstance(v, list) else v) for k, v in handlers.items()}

    def __call__(self, request: Any) -> Any:
        tag = request_tag(request)
        h = self.handlers[tag]
        if isinstance(h, list):
            h = h.pop(0)
        if callable(h):
            return h(request)
        return h


def chat_text(client: Any, model: str, tag: str, instructions: str, user: str) -> tuple[list[dict], Any]:
    """One Chat Completions call; returns (messages sent, response)."""
    messages = [{"role": "system", "content": f"[{tag}] {instructions}"}, {"role": "user", "content": user}]
    resp = client.chat.completions.create(model=model, messages=messages, temperature=0)
    return messages, resp


def money(x: float) -> float:
    return round(x + 1e-9, 2)


Handler = Callable[[Any], Any]


def sdk_llm(client: Any, model: str, name: str, tag: str, instructions: str, user: str) -> str:
    """A model call recorded as an sdk `llm` step (chat messages in, the assistant's message out)."""
    import trajdebug

    messages = [{"role": "system", "content": f"[{tag}] {instructions}"}, {"role": "user", "content": user}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        resp = client.chat.completions.create(model=model, messages=messages, temperature=0)
        text = resp.choices[0].message.content or ""
        s.output = {"role": "assistant", "content": text}
        s.usage(model=resp.model, prompt_tokens=resp.usage.prompt_tokens, completion_tokens=resp.usage.completion_tokens)
    return text


class Otel:
    """One agent run traced with the OpenTelemetry SDK, OpenInference attributes, written as OTLP/JSON."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    def span(self, name: str, kind: str, input: Any = None, **attrs: Any) -> "_Span":
        return _Span(self, name, kind, input, attrs)

    def llm(self, client: Any, model: str, name: str, tag: str, instructions: str, user: str) -> str:
        messages = [{"role": "system", "content": f"[{tag}] {instructions}"}, {"role": "user", "content": user}]
        attrs: dict = {"llm.model_name": model, "llm.provider": "openai", "llm.system": "openai",
                       "llm.invocation_parameters": json.dumps({"temperature": 0})}
        for i, m in enumerate(messages):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with self.span(name, "LLM", {"messages": messages}, **attrs) as s:
            resp = client.chat.completions.create(model=model, messages=messages, temperature=0)
            text = resp.choices[0].message.content or ""
            s.raw.set_attribute("llm.output_messages.0.message.role", "assistant")
            s.raw.set_attribute("llm.output_messages.0.message.content", text)
            s.raw.set_attribute("llm.token_count.prompt", resp.usage.prompt_tokens)
            s.raw.set_attribute("llm.token_count.completion", resp.usage.completion_tokens)
            s.raw.set_attribute("llm.token_count.total", resp.usage.total_tokens)
            s.output = text
        return text

    def write(self, path: Any) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        envelope = _hex_ids(MessageToDict(encode_spans(self.exporter.get_finished_spans())))
        with open(path, "w") as f:
            json.dump(envelope, f)
        self.provider.shutdown()


def _hex_ids(value: Any) -> Any:
    """Trace and span ids as the OTLP/JSON spec writes them (hex), not protobuf JSON's base64."""
    import base64

    if isinstance(value, dict):
        return {k: (base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str) and v
                    else _hex_ids(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


class _Span:
    def __init__(self, otel: Otel, name: str, kind: str, input: Any, attrs: dict) -> None:
        self.otel, self.name, self.kind, self.input, self.attrs = otel, name, kind, input, attrs
        self.output: Any = None
        self.raw: Any = None

    def __enter__(self) -> "_Span":
        attrs = {"openinference.span.kind": self.kind, **self.attrs}
        if self.input is not None:
            if isinstance(self.input, str):
                attrs.update({"input.value": self.input, "input.mime_type": "text/plain"})
            else:
                attrs.update({"input.value": json.dumps(self.input), "input.mime_type": "application/json"})
        if self.kind == "TOOL":
            attrs.setdefault("tool.name", self.name)
        self._cm = self.otel.tracer.start_as_current_span(self.name, attributes=attrs)
        self.raw = self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        if exc[0] is None and self.output is not None:
            if isinstance(self.output, str):
                self.raw.set_attribute("output.value", self.output)
                self.raw.set_attribute("output.mime_type", "text/plain")
            else:
                self.raw.set_attribute("output.value", json.dumps(self.output))
                self.raw.set_attribute("output.mime_type", "application/json")
        return self._cm.__exit__(*exc)
