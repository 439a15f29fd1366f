"""Small helpers the agents share: a chat call that returns the assistant message as a dict, tool specs,
and readers a brain uses on the request it is asked."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass
class Ctx:
    """What an agent is handed to record one run: the model server's clients."""

    server: Any
    client: Any  # openai.OpenAI
    aclient: Any  # openai.AsyncOpenAI
    model: str


CTX: Ctx | None = None  # set by generate.py before any agent runs


def chat(messages: list[dict], tools: list[dict] | None = None) -> dict:
    ctx = CTX
    kw: dict[str, Any] = {"tools": tools} if tools else {}
    reply = ctx.client.chat.completions.create(model=ctx.model, messages=messages, **kw)
    return reply.choices[0].message.model_dump(exclude_none=True)


def fn(name: str, description: str, **props: str) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


def system_text(request) -> str:
    msgs = request.body.get("messages") or []
    return msgs[0]["content"] if msgs and msgs[0].get("role") == "system" else ""


def user_text(request) -> str:
    for m in request.body.get("messages") or []:
        if m.get("role") == "user":
            return m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
    return ""


def tool_results(request) -> list[tuple[str, str]]:
    """(tool name, content) of every tool message, in order (chat completions)."""
    msgs = request.body.get("messages") or []
    names = {}
    for m in msgs:
        for c in m.get("tool_calls") or []:
            names[c["id"]] = c["function"]["name"]
    return [(names.get(m.get("tool_call_id"), "?"), m["content"]) for m in msgs if m.get("role") == "tool"]
