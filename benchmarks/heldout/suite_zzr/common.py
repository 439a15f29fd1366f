"""Shared helpers of the suite's agents: the scripted model (a policy keyed on the prompt's task line)."""

from __future__ import annotations

import ast
import json
from typing import Any, Callable

from trajdebug.testing import Reply, tool_call  # noqa: F401  (re-exported for the agents)


def task_prompt(task: str, payload: Any) -> str:
    """A user prompt: the task on its first line, the payload as JSON below."""
    return f"TASK: {task}\n{json.dumps(payload, sort_keys=True)}"


def read_task(text: str) -> tuple[str, Any]:
    first, _, rest = text.partition("\n")
    task = first.replace("TASK:", "").strip()
    try:
        payload = json.loads(rest) if rest.strip() else None
    except ValueError:
        payload = rest
    return task, payload


def chat_policy(handlers: dict[str, Callable[[Any], Any]]):
    """A policy for Chat Completions requests whose last user message is a task prompt."""

    def policy(request):
        msgs = request.body.get("messages") or []
        user = [m for m in msgs if m.get("role") == "user"]
        content = user[-1]["content"] if user else ""
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        task, payload = read_task(content)
        answer = handlers[task](payload)
        return answer if isinstance(answer, (str, Reply)) else json.dumps(answer, sort_keys=True)

    return policy


def responses_outputs(body: dict) -> list[tuple[str, Any]]:
    """(tool name, parsed output) of every function call already answered in a Responses API input."""
    items = body.get("input")
    if not isinstance(items, list):
        return []
    names = {}
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call":
            names[item.get("call_id")] = item.get("name")
        elif item.get("type") == "function_call_output":
            raw = item.get("output")
            try:
                val = ast.literal_eval(raw)
            except Exception:
                try:
                    val = json.loads(raw)
                except Exception:
                    val = raw
            out.append((names.get(item.get("call_id")), val))
    return out


def first_user_text(body: dict) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in items or []:
        if isinstance(item, dict) and item.get("role") == "user":
            c = item.get("content")
            if isinstance(c, str):
                return c
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


def chat_outputs(body: dict) -> list[tuple[str, Any]]:
    """(tool name, parsed output) of every tool call already answered in a Chat Completions request."""
    names = {}
    out = []
    for m in body.get("messages") or []:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                names[tc.get("id")] = tc.get("function", {}).get("name")
        elif m.get("role") == "tool":
            raw = m.get("content")
            if isinstance(raw, list):
                raw = " ".join(p.get("text", "") for p in raw if isinstance(p, dict))
            try:
                val = ast.literal_eval(raw)
            except Exception:
                try:
                    val = json.loads(raw)
                except Exception:
                    val = raw
            out.append((names.get(m.get("tool_call_id")), val))
    return out


def chat_system_and_user(body: dict) -> tuple[str, str]:
    system, user = "", ""
    for m in body.get("messages") or []:
        c = m.get("content")
        if isinstance(c, list):
            c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
        if m.get("role") in ("system", "developer") and not system:
            system = c or ""
        if m.get("role") == "user" and not user:
            user = c or ""
    return system, user


# --- OpenTelemetry (OTLP route) -------------------------------------------------------------------

_OTEL: dict = {}


def _ids_base():
    from opentelemetry.sdk.trace.id_generator import IdGenerator

    return IdGenerator


class _ReadableIds(_ids_base()):
    """Span and trace ids from a seeded generator, skipping ids whose base64 form spells a word of the generator's
    word list (protobuf JSON writes ids in base64, which can spell anything)."""

    def __init__(self) -> None:
        import random

        self._rng = random.Random(20261206)

    def _draw(self, nbytes: int) -> int:
        import base64
        import re

        while True:
            value = self._rng.getrandbits(nbytes * 8)
            if value == 0:
                continue
            text = base64.b64encode(value.to_bytes(nbytes, "big")).decode()
            if not re.search(r"(fault|bug|wrong|stale|planted|inject|corrupt)", text, re.IGNORECASE):
                return value

    def generate_span_id(self) -> int:
        return self._draw(8)

    def generate_trace_id(self) -> int:
        return self._draw(16)


def otel():
    """The shared tracer provider, in-memory exporter and instrumented `openai` client library."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans = InMemorySpanExporter()
        provider = TracerProvider(id_generator=_ReadableIds())
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(provider=provider, spans=spans)
    return _OTEL["provider"], _OTEL["spans"]


def write_otlp(spans, path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    with open(path, "a") as f:
        f.write(json.dumps(MessageToDict(encode_spans(spans.get_finished_spans()))) + "\n")
    spans.clear()


def span_io(span, kind: str, value: Any = None, output: Any = None) -> None:
    span.set_attribute("openinference.span.kind", kind)
    if value is not None:
        span.set_attribute("input.value", json.dumps(value, sort_keys=True, default=str))
        span.set_attribute("input.mime_type", "application/json")
    if output is not None:
        span.set_attribute("output.value", json.dumps(output, sort_keys=True, default=str))
        span.set_attribute("output.mime_type", "application/json")
