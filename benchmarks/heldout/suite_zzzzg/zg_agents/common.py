"""What the agents of this suite share: reading the fake model's requests, and a chat call."""

from __future__ import annotations

import ast
import json
import re
from typing import Any


BANNED = ("fault", "bug", "wrong", "stale", "inject", "corrupt", "planted")


def messages(request: Any) -> list[dict[str, Any]]:
    """The chat messages of a Chat Completions request."""
    return list((request.body or {}).get("messages") or [])


def system_text(request: Any) -> str:
    """The system prompt (Chat Completions or Responses API)."""
    body = request.body or {}
    if body.get("instructions"):
        return str(body["instructions"])
    for m in messages(request):
        if m.get("role") == "system":
            return content_text(m.get("content"))
    return ""


def content_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def user_texts(request: Any) -> list[str]:
    body = request.body or {}
    if "messages" in body:
        return [content_text(m.get("content")) for m in messages(request) if m.get("role") == "user"]
    items = body.get("input")
    if isinstance(items, str):
        return [items]
    out = []
    for it in items or []:
        if isinstance(it, dict) and it.get("role") == "user":
            out.append(content_text(it.get("content")))
    return out


def tool_results(request: Any) -> list[tuple[str, Any]]:
    """(tool name, result) of every tool result the request carries, oldest first.

    Chat Completions: ``role: tool`` messages matched to the assistant's calls by id (JSON content);
    Responses API: ``function_call_output`` items matched to their ``function_call`` (a Python repr
    or JSON)."""
    body = request.body or {}
    out: list[tuple[str, Any]] = []
    if "messages" in body:
        names: dict[str, str] = {}
        for m in messages(request):
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
            if m.get("role") == "tool":
                out.append((names.get(m.get("tool_call_id"), "?"), loads_any(content_text(m.get("content")))))
        return out
    names = {}
    for it in body.get("input") or []:
        if not isinstance(it, dict):
            continue
        if it.get("type") == "function_call":
            names[it.get("call_id")] = it.get("name")
        elif it.get("type") == "function_call_output":
            out.append((names.get(it.get("call_id"), "?"), loads_any(it.get("output"))))
    return out


def loads_any(text: Any) -> Any:
    """A tool result as data: JSON, else a Python literal, else the text."""
    if not isinstance(text, str):
        return text
    for load in (json.loads, ast.literal_eval):
        try:
            return load(text)
        except Exception:  # noqa: BLE001 - plain text stays text
            continue
    return text


def json_in(text: str) -> Any:
    """The first JSON object or list in a text (a prompt that embeds one)."""
    m = re.search(r"[\[{].*[\]}]", text, re.S)
    if not m:
        raise ValueError("no JSON in the prompt")
    return json.loads(m.group(0))


def tagged_json(text: str, tag: str) -> Any:
    """The JSON written after ``TAG:`` on its own line (prompts carry several payloads)."""
    m = re.search(rf"^{re.escape(tag)}:\s*(.+)$", text, re.M)
    if not m:
        raise ValueError(f"no {tag} in the prompt")
    return json.loads(m.group(1))


def chat_call(client: Any, model: str, msgs: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One Chat Completions call; the assistant's message as a plain dict (tool calls with parsed arguments)."""
    kwargs: dict[str, Any] = {"model": model, "messages": msgs}
    if tools:
        kwargs["tools"] = tools
    reply = client.chat.completions.create(**kwargs)
    msg = reply.choices[0].message
    calls = [
        {"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments or "{}")}
        for c in (msg.tool_calls or [])
    ]
    return {"role": "assistant", "content": msg.content, "tool_calls": calls}


def fn_tool(name: str, description: str, params: dict[str, str]) -> dict[str, Any]:
    """A Chat Completions tool definition with string/number parameters."""
    props = {k: {"type": v} for k, v in params.items()}
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": list(params)},
        },
    }


def assistant_message(msg: dict[str, Any]) -> dict[str, Any]:
    """The assistant's message as it goes back into the conversation (OpenAI wire form)."""
    out: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
    if msg.get("tool_calls"):
        out["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for c in msg["tool_calls"]
        ]
    return out
