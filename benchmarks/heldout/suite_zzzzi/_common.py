"""Shared helpers for the suite's agents: the OpenAI client of the fake model and an LLM step for the SDK route."""

from __future__ import annotations

import json
from typing import Any

import trajdebug


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_of(request) -> str:
    msgs = request.body.get("messages") or []
    for m in msgs:
        if m.get("role") == "system":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(request) -> list[str]:
    return [m.get("content") or "" for m in request.body.get("messages") or [] if m.get("role") == "tool"]


def chat_step(client, model: str, name: str, messages: list[dict], tools: list[dict] | None = None) -> dict:
    """One model call, recorded as an `llm` step whose input is the messages sent and output the assistant message."""
    payload: dict[str, Any] = {"messages": messages}
    if tools:
        payload["tools"] = tools
    with trajdebug.step(name, kind="llm", input=payload) as s:
        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        resp = client.chat.completions.create(**kwargs)
        msg = resp.choices[0].message.model_dump(exclude_none=True)
        if resp.usage is not None:
            s.usage(model=resp.model, prompt_tokens=resp.usage.prompt_tokens,
                    completion_tokens=resp.usage.completion_tokens)
        s.output = msg
    return msg


def fn_tool(name: str, description: str, props: dict[str, str], required: list[str] | None = None) -> dict:
    """A Chat Completions tool schema with string/number/integer properties."""
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": {k: {"type": v} for k, v in props.items()},
                       "required": required or list(props)}}}
