"""What the agents share: the fake model's client, request helpers for the brains, and small utilities."""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import trajdebug


class Runtime:
    """Set by the generator before an agent runs: where the fake model server is."""

    server: Any = None
    _client: Any = None
    _client_url: str | None = None

    @property
    def base_url(self) -> str:
        return self.server.base_url

    @property
    def model(self) -> str:
        return self.server.model

    def client(self):
        """One synchronous OpenAI client per server."""
        if self._client is None or self._client_url != self.base_url:
            from openai import OpenAI

            self._client = OpenAI(base_url=self.base_url, api_key="not-needed", max_retries=0)
            self._client_url = self.base_url
        return self._client


RT = Runtime()


# ---------------------------------------------------------------- SDK-route model calls


def complete(messages: list[dict], *, temperature: float = 0.0) -> dict:
    """One chat completion; returns the assistant message as a plain dict and records usage on the step."""
    client = RT.client()
    reply = client.chat.completions.create(model=RT.model, messages=messages, temperature=temperature)
    msg = reply.choices[0].message
    here = trajdebug.current_step()
    if here is not None and reply.usage is not None:
        here.usage(
            model=reply.model,
            prompt_tokens=reply.usage.prompt_tokens,
            completion_tokens=reply.usage.completion_tokens,
        )
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments or "{}")}
        for c in (msg.tool_calls or [])
    ]
    return {"role": "assistant", "content": msg.content, "tool_calls": calls}


# ---------------------------------------------------------------- brain helpers


def chat_messages(request) -> list[dict]:
    return list(request.body.get("messages") or [])


def system_text(request) -> str:
    body = request.body
    if body.get("instructions"):
        return str(body["instructions"])
    for m in body.get("messages") or []:
        if m.get("role") == "system":
            return _text(m.get("content"))
    return ""


def user_texts(request) -> list[str]:
    body = request.body
    out: list[str] = []
    items = body.get("messages") or body.get("input") or []
    if isinstance(items, str):
        return [items]
    for m in items:
        if isinstance(m, dict) and m.get("role") == "user":
            out.append(_text(m.get("content")))
    return out


def last_user(request) -> str:
    texts = user_texts(request)
    return texts[-1] if texts else ""


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def tool_exchanges(request) -> list[tuple[str, dict, str]]:
    """Responses API input: every (tool name, arguments, output text) the model has seen, in order."""
    items = request.body.get("input") or []
    if isinstance(items, str):
        return []
    calls: dict[str, tuple[str, dict]] = {}
    out: list[tuple[str, dict, str]] = []
    for it in items:
        if not isinstance(it, dict):
            continue
        if it.get("type") == "function_call":
            try:
                args = json.loads(it.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[it.get("call_id")] = (it.get("name"), args)
        elif it.get("type") == "function_call_output":
            name, args = calls.get(it.get("call_id"), ("?", {}))
            out.append((name, args, _text(it.get("output"))))
    return out


def read_value(text: str) -> Any:
    """A tool's result as the SDK sends it back (`str(result)`: a Python repr), or JSON, or the text."""
    for parse in (ast.literal_eval, json.loads):
        try:
            return parse(text)
        except (ValueError, SyntaxError, TypeError):
            continue
    return text


def json_block(text: str) -> Any:
    """The first JSON object or list in a text (a model may wrap it in prose or a code fence)."""
    m = re.search(r"[\[{].*[\]}]", text, re.S)
    if not m:
        raise ValueError(f"no JSON in {text[:80]!r}")
    return json.loads(m.group(0))


FORBIDDEN = re.compile(r"\b(faults?|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)


# ---------------------------------------------------------------- the OTLP route


class OtelRecorder:
    """The OpenTelemetry SDK with OpenInference attributes: spans of the agent's own, model calls through
    `openinference-instrumentation-openai`, exported as one OTLP JSON document per run."""

    def __init__(self, service: str) -> None:
        self.service = service
        self.provider = None
        self.spans = None
        self.tracer = None

    def setup(self) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": self.service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer(self.service)

    def teardown(self) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().uninstrument()
        self.provider.shutdown()

    def span(self, name: str, kind: str, value: Any = None, **attrs: Any):
        """A span of the agent's own: OpenInference kind and input; `.output(value)` on the handle."""
        attributes = {"openinference.span.kind": kind, **attrs}
        if value is not None:
            attributes.update(_io("input", value))
        return _Span(self.tracer.start_as_current_span(name, attributes=attributes))

    def begin(self) -> None:
        self.spans.clear()

    def export(self, path: str) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        doc = MessageToDict(encode_spans(self.spans.get_finished_spans()))
        with open(path, "w") as f:
            json.dump(doc, f)
        self.spans.clear()


def _io(which: str, value: Any) -> dict:
    if isinstance(value, str):
        return {f"{which}.value": value, f"{which}.mime_type": "text/plain"}
    return {f"{which}.value": json.dumps(value), f"{which}.mime_type": "application/json"}


class _Span:
    def __init__(self, cm) -> None:
        self.cm = cm
        self.span = None

    def __enter__(self) -> "_Span":
        self.span = self.cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.cm.__exit__(*exc)

    def output(self, value: Any) -> Any:
        for k, v in _io("output", value).items():
            self.span.set_attribute(k, v)
        return value
