"""Helpers the agents share: the model client, a recorded chat call (sdk route), JSON helpers."""

from __future__ import annotations

import json
from typing import Any

import trajdebug


def tool_spec(
    name: str, description: str, properties: dict[str, Any], required: list[str] | None = None
) -> dict:
    """An OpenAI function-tool description."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(required if required is not None else properties),
            },
        },
    }


def chat_step(
    client: Any, model: str, name: str, messages: list[dict], tools: list[dict] | None = None
) -> dict:
    """One recorded model call (sdk route): the messages in, the assistant's message out."""
    given: dict[str, Any] = {"messages": messages}
    if tools:
        given["tools"] = tools
    with trajdebug.step(name, kind="llm", input=given) as s:
        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        reply = client.chat.completions.create(**kwargs)
        message = reply.choices[0].message.model_dump(exclude_none=True)
        message.pop("refusal", None)
        if reply.usage is not None:
            s.usage(
                model=reply.model,
                prompt_tokens=reply.usage.prompt_tokens,
                completion_tokens=reply.usage.completion_tokens,
            )
        s.output = message
    return message


def tool_calls(message: dict) -> list[dict]:
    """The tool calls of an assistant message as ``{"id", "name", "args"}`` (arguments decoded)."""
    out = []
    for call in message.get("tool_calls") or []:
        fn = call["function"]
        out.append({"id": call["id"], "name": fn["name"], "args": json.loads(fn["arguments"] or "{}")})
    return out


def last_user_json(request: Any) -> Any:
    """The JSON payload of the last user message of a Chat Completions request."""
    for msg in reversed(request.body.get("messages", [])):
        if msg.get("role") == "user":
            return json.loads(msg["content"])
    return None


def system_text(request: Any) -> str:
    msgs = request.body.get("messages") or []
    if msgs and msgs[0].get("role") == "system":
        return str(msgs[0].get("content") or "")
    return str(request.body.get("instructions") or "")


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=False)


def agents_view(request: Any) -> tuple[str, str, dict[str, list], int]:
    """What an Agents SDK request holds, for either API: (instructions, first user text, tool name ->
    decoded outputs in order, size of the conversation in characters)."""
    body = request.body
    if "messages" in body:  # Chat Completions
        msgs = body["messages"]
        instructions = msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""
        names = {
            c["id"]: c["function"]["name"]
            for m in msgs
            if m.get("role") == "assistant"
            for c in m.get("tool_calls") or []
        }
        results = [(names.get(m["tool_call_id"], "?"), m["content"]) for m in msgs if m.get("role") == "tool"]
        users = [m["content"] for m in msgs if m.get("role") == "user"]
        size = len(json.dumps(msgs))
    else:  # Responses
        items = (
            body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        )
        instructions = body.get("instructions") or ""
        names = {
            i["call_id"]: i["name"] for i in items if isinstance(i, dict) and i.get("type") == "function_call"
        }
        results = [
            (names.get(i["call_id"], "?"), i["output"])
            for i in items
            if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
        users = [i["content"] for i in items if isinstance(i, dict) and i.get("role") == "user"]
        size = len(json.dumps(items))
    out: dict[str, list] = {}
    for name, text in results:
        if isinstance(text, list):
            text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
        try:
            value = json.loads(text)
        except (TypeError, ValueError):
            value = text
        out.setdefault(name, []).append(value)
    user = users[0] if users else ""
    if isinstance(user, list):
        user = " ".join(p.get("text", "") for p in user if isinstance(p, dict))
    return instructions, user, out, size


# --- the otlp route: OpenTelemetry SDK spans with OpenInference attributes, written as OTLP JSON ---------


class Otel:
    """One tracer provider per agent (its resource names the service), spans kept in memory."""

    providers: dict[str, Any] = {}
    exporters: dict[str, Any] = {}

    @classmethod
    def get(cls, service: str) -> tuple[Any, Any]:
        if service not in cls.providers:
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            exporter = InMemorySpanExporter()
            provider = TracerProvider(resource=Resource.create({"service.name": service}))
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            cls.providers[service], cls.exporters[service] = provider, exporter
        return cls.providers[service], cls.exporters[service]


class otlp_run:
    """``with otlp_run(service, path) as tracer:`` instruments the OpenAI client for the block and writes the
    block's spans to ``path`` as one OTLP JSON document ``{"resourceSpans": [...]}``."""

    def __init__(self, service: str, path: str) -> None:
        self.service, self.path = service, path

    def __enter__(self) -> Any:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        provider, exporter = Otel.get(self.service)
        exporter.clear()
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        return provider.get_tracer(self.service)

    def __exit__(self, *exc: Any) -> bool:
        from google.protobuf.json_format import MessageToDict
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        OpenAIInstrumentor().uninstrument()
        _, exporter = Otel.get(self.service)
        spans = exporter.get_finished_spans()
        with open(self.path, "w") as f:
            f.write(json.dumps(MessageToDict(encode_spans(spans))))
        exporter.clear()
        return False


def oi_attrs(kind: str, value: Any = None, **extra: Any) -> dict[str, Any]:
    """OpenInference attributes of a span: its kind and its input (JSON text unless a string)."""
    attrs: dict[str, Any] = {"openinference.span.kind": kind}
    if value is not None:
        if isinstance(value, str):
            attrs["input.value"], attrs["input.mime_type"] = value, "text/plain"
        else:
            attrs["input.value"], attrs["input.mime_type"] = json.dumps(value), "application/json"
    attrs.update({k.replace("__", "."): v for k, v in extra.items()})
    return attrs


def set_output(span: Any, value: Any) -> Any:
    if isinstance(value, str):
        span.set_attribute("output.value", value)
        span.set_attribute("output.mime_type", "text/plain")
    else:
        span.set_attribute("output.value", json.dumps(value))
        span.set_attribute("output.mime_type", "application/json")
    return value


def traced(tracer: Any, name: str, kind: str, fn: Any, args: dict, **extra: Any) -> Any:
    """Run ``fn(**args)`` as one span of the given OpenInference kind (a tool, a chain step, a check)."""
    if kind == "TOOL":
        extra.setdefault("tool__name", name)
    with tracer.start_as_current_span(name, attributes=oi_attrs(kind, args, **extra)) as span:
        return set_output(span, fn(**args))


def otlp_chat(client: Any, model: str, messages: list[dict], tools: list[dict] | None = None) -> dict:
    """A model call through the instrumented OpenAI client: the instrumentation makes its LLM span."""
    kwargs: dict[str, Any] = {"model": model, "messages": messages}
    if tools:
        kwargs["tools"] = tools
    reply = client.chat.completions.create(**kwargs)
    message = reply.choices[0].message.model_dump(exclude_none=True)
    message.pop("refusal", None)
    return message
