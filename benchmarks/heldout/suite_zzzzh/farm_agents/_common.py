"""Helpers the agents share: reading a model request, and a synchronous chat client for the fake server."""
from __future__ import annotations

import ast
import json
from typing import Any


def messages(request) -> list[dict]:
    body = request.body or {}
    if "messages" in body:
        return body["messages"]
    return [m for m in body.get("input", []) if isinstance(m, dict)]


def text_of(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def system(request) -> str:
    body = request.body or {}
    if body.get("instructions"):
        return body["instructions"]
    for m in messages(request):
        if m.get("role") in ("system", "developer"):
            return text_of(m.get("content"))
    return ""


def user(request) -> str:
    for m in messages(request):
        if m.get("role") == "user":
            return text_of(m.get("content"))
    return ""


def tool_results(request) -> list[tuple[str, Any]]:
    """(tool name, result) for every tool result in the conversation, oldest first."""
    names: dict[str, str] = {}
    out = []
    for m in messages(request):
        for c in m.get("tool_calls") or ():
            names[c["id"]] = c["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id"), m.get("name") or ""), parse_any(text_of(m.get("content")))))
    return out


def parse_any(text: str) -> Any:
    for fn in (json.loads, ast.literal_eval):
        try:
            return fn(text)
        except Exception:
            pass
    return text


def client_for(server):
    from openai import OpenAI

    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
