"""Helpers shared by the suite's agents: the scripted model's view of a request, chat calls, OTLP spans."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=False, separators=(", ", ": "))


# --- what the scripted model reads -------------------------------------------------------------


def messages(request: Any) -> list[dict[str, Any]]:
    """The request's messages (Chat Completions) or input items (Responses API)."""
    body = request.body
    if "messages" in body:
        return list(body["messages"])
    items = body.get("input")
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    if isinstance(items, str):
        return [*out, {"role": "user", "content": items}]
    for it in items or []:
        typ = it.get("type")
        if typ == "function_call":
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": it.get("call_id"),
                            "function": {"name": it.get("name"), "arguments": it.get("arguments")},
                        }
                    ],
                }
            )
        elif typ == "function_call_output":
            out.append({"role": "tool", "tool_call_id": it.get("call_id"), "content": it.get("output")})
        else:
            out.append({"role": it.get("role", "user"), "content": text_of(it.get("content"))})
    return out


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(text_of(p.get("text") if isinstance(p, dict) else p) for p in content)
    return str(content)


def system_text(request: Any) -> str:
    return "\n".join(
        text_of(m.get("content")) for m in messages(request) if m.get("role") in ("system", "developer")
    )


def user_text(request: Any) -> str:
    """The first user message."""
    for m in messages(request):
        if m.get("role") == "user":
            return text_of(m.get("content"))
    return ""


def last_user(request: Any) -> str:
    for m in reversed(messages(request)):
        if m.get("role") == "user":
            return text_of(m.get("content"))
    return ""


def tool_history(request: Any) -> list[tuple[str, dict[str, Any], str]]:
    """(tool name, arguments, result text) for each tool call the conversation answered, in order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[tuple[str, dict[str, Any], str]] = []
    for m in messages(request):
        for c in m.get("tool_calls") or []:
            fn = c.get("function") or c
            args = fn.get("arguments")
            try:
                args = json.loads(args) if isinstance(args, str) else (args or {})
            except ValueError:
                args = {}
            calls[c.get("id")] = (fn.get("name"), args)
        if m.get("role") == "tool":
            name, args = calls.get(m.get("tool_call_id"), ("?", {}))
            out.append((name, args, text_of(m.get("content"))))
    return out


def json_in(text: str) -> Any:
    """The first JSON object or list in a text (a prompt that embeds one)."""
    for m in re.finditer(r"[\[{]", text):
        try:
            value, _ = json.JSONDecoder().raw_decode(text[m.start() :])
            return value
        except ValueError:
            continue
    raise ValueError("no JSON in the text")


def result_json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


# --- a plain chat call (sdk and otlp routes) ---------------------------------------------------


def chat(client: Any, model: str, msgs: list[dict[str, Any]], **kw: Any) -> Any:
    return client.chat.completions.create(model=model, messages=msgs, temperature=0, **kw)


# --- OpenTelemetry with OpenInference attributes ------------------------------------------------


class Otlp:
    """One tracer provider for the suite; each run's finished spans are encoded to OTLP/JSON."""

    def __init__(self) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite-agents")

    @contextmanager
    def recording(self, path: str) -> Iterator[Any]:
        """Instrument the openai client for one run, then write the run's spans to `path`."""
        from google.protobuf.json_format import MessageToDict
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.exporter.clear()
        inst = OpenAIInstrumentor()
        inst.instrument(tracer_provider=self.provider)
        try:
            yield self.tracer
        finally:
            inst.uninstrument()
            envelope = _hex_ids(MessageToDict(encode_spans(self.exporter.get_finished_spans())))
            self.exporter.clear()
            with open(path, "w", encoding="utf-8") as fh:
                json.dump(envelope, fh)

    @contextmanager
    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any) -> Iterator[Any]:
        """A span with OpenInference kind and JSON input; set `.output` on the yielded holder."""
        attributes: dict[str, Any] = {"openinference.span.kind": kind}
        if inp is not None:
            attributes["input.value"] = inp if isinstance(inp, str) else dumps(inp)
            attributes["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
        if kind == "TOOL":
            attributes["tool.name"] = name
        attributes.update({k.replace("__", "."): v for k, v in attrs.items()})
        with self.tracer.start_as_current_span(name, attributes=attributes) as sp:
            holder = _Out()
            yield holder
            if holder.output is not None:
                out = holder.output
                sp.set_attribute("output.value", out if isinstance(out, str) else dumps(out))
                sp.set_attribute(
                    "output.mime_type", "text/plain" if isinstance(out, str) else "application/json"
                )


def _hex_ids(value: Any) -> Any:
    """OTLP/JSON writes trace and span ids as hex strings; protobuf's JSON mapping gives base64."""
    import base64

    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str) and v:
                out[k] = base64.b64decode(v).hex()
            else:
                out[k] = _hex_ids(v)
        return out
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


class _Out:
    output: Any = None


_OTLP: Otlp | None = None


def otlp() -> Otlp:
    global _OTLP
    if _OTLP is None:
        _OTLP = Otlp()
    return _OTLP
