"""Shared helpers of suite O: the switches, the scripted-model helpers, the vocabulary check."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


_ON: set[str] = set()


@contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn one switch on for the block (one run)."""
    _ON.add(fault_id)
    try:
        yield
    finally:
        _ON.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether a switch is on (read at exactly one place per switch)."""
    return fault_id in _ON


# -- the scripted model: reading a Chat Completions request ---------------------------------


def text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


class Convo:
    """A Chat Completions request as the scripted model reads it."""

    def __init__(self, request: Any) -> None:
        body = request.body or {}
        if "input" in body and "messages" not in body:
            body = _responses_as_chat(body)
        self.messages: list[dict[str, Any]] = list(body.get("messages") or [])
        self.system = next(
            (text_of(m.get("content")) for m in self.messages if m.get("role") in ("system", "developer")), ""
        )
        self.user = next((text_of(m.get("content")) for m in self.messages if m.get("role") == "user"), "")
        results = {
            m.get("tool_call_id"): text_of(m.get("content")) for m in self.messages if m.get("role") == "tool"
        }
        self.calls: list[tuple[str, dict[str, Any], str | None]] = []
        for m in self.messages:
            for c in m.get("tool_calls") or ():
                fn = c.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                self.calls.append((fn.get("name", ""), args, results.get(c.get("id"))))
        self.last = self.messages[-1] if self.messages else {}

    def called(self, name: str) -> list[tuple[dict[str, Any], str | None]]:
        return [(a, r) for n, a, r in self.calls if n == name]

    def result(self, name: str, index: int = -1) -> Any:
        """The parsed result of a call to ``name`` (the last by default), or None."""
        done = [r for _, r in self.called(name) if r is not None]
        if not done:
            return None
        try:
            return json.loads(done[index])
        except ValueError:
            return done[index]


def _responses_as_chat(body: dict[str, Any]) -> dict[str, Any]:
    """A Responses API request read as Chat Completions messages."""
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    items = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in items or ():
        kind = item.get("type")
        if kind == "function_call":
            call = {
                "id": item.get("call_id"),
                "function": {"name": item.get("name"), "arguments": item.get("arguments")},
            }
            if (
                messages
                and messages[-1].get("role") == "assistant"
                and messages[-1].get("tool_calls") is not None
            ):
                messages[-1]["tool_calls"].append(call)
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            messages.append(
                {"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")}
            )
        elif item.get("role"):
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            messages.append({"role": item["role"], "content": content})
    return {"messages": messages}


# -- the vocabulary of recorded files ----------------------------------------------------------

TABOO = re.compile(r"(?<![A-Za-z0-9])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


# -- OpenInference spans for the otlp agents ----------------------------------------------------


def dumps(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


@contextmanager
def oi_span(tracer: Any, name: str, kind: str, value: Any = None, **attrs: Any) -> Iterator[Any]:
    """An OpenInference span of ``kind`` (AGENT, CHAIN, TOOL, RETRIEVER) with its input."""
    attributes = {"openinference.span.kind": kind, **attrs}
    if value is not None:
        attributes["input.value"] = dumps(value)
        attributes["input.mime_type"] = "application/json" if not isinstance(value, str) else "text/plain"
    if kind == "TOOL":
        attributes["tool.name"] = name
    with tracer.start_as_current_span(name, attributes=attributes) as span:
        yield span


def oi_output(span: Any, value: Any) -> Any:
    span.set_attribute("output.value", dumps(value))
    span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
    return value


def tool_schema(name: str, description: str, params: dict[str, str]) -> dict[str, Any]:
    """A Chat Completions tool definition; params: name -> JSON type."""
    props = {
        p: ({"type": "array", "items": {"type": "string"}} if t == "array" else {"type": t})
        for p, t in params.items()
    }
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": list(params)},
        },
    }


def model_loop(
    client: Any,
    tracer: Any,
    messages: list[dict[str, Any]],
    tools: dict[str, Any],
    schemas: list[dict[str, Any]],
    limit: int = 12,
    kinds: dict[str, str] | None = None,
) -> str:
    """Ask the model, run the tools it calls (each in a TOOL span), until it answers in text."""
    for _ in range(limit):
        reply = client.chat.completions.create(model="fake-model", messages=messages, tools=schemas)
        msg = reply.choices[0].message
        messages.append(msg.model_dump(exclude_none=True))
        if not msg.tool_calls:
            return msg.content or ""
        for call in msg.tool_calls:
            args = json.loads(call.function.arguments or "{}")
            kind = (kinds or {}).get(call.function.name, "TOOL")
            with oi_span(
                tracer, call.function.name, kind, args, **({"tool.id": call.id} if kind == "TOOL" else {})
            ) as span:
                result = tools[call.function.name](**args)
                if kind == "RETRIEVER":
                    for i, doc in enumerate(result.get("documents", [])):
                        span.set_attribute(f"retrieval.documents.{i}.document.id", doc["id"])
                        span.set_attribute(f"retrieval.documents.{i}.document.content", doc["content"])
                        span.set_attribute(f"retrieval.documents.{i}.document.score", doc["score"])
                oi_output(span, result)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": dumps(result)})
    raise RuntimeError("model did not finish")
