"""What the two Agents SDK agents of suite H share: a chat model on the fake server and reading its requests."""

from __future__ import annotations

import json
from typing import Any


def chat_model(server: Any) -> tuple[Any, Any]:
    """An Agents SDK model on the fake server's Chat Completions endpoint, and its client.

    Made inside the run's event loop, and the client closed before the loop ends: an HTTP client
    left to the garbage collector would try to close its connections on a closed loop.
    """
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return OpenAIChatCompletionsModel(model=server.model, openai_client=client), client


def system_of(request: Any) -> str:
    """The system message (the agent's instructions) of a Chat Completions request."""
    for message in request.body.get("messages") or []:
        if message.get("role") == "system":
            return str(message.get("content") or "")
    return ""


def first_user(request: Any) -> str:
    for message in request.body.get("messages") or []:
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def tool_results(request: Any, since_last_user: bool = False) -> dict[str, list[Any]]:
    """Each tool's results in the conversation so far, by tool name (JSON results decoded).

    ``since_last_user``: only those after the last user message (the current request of a longer
    conversation).
    """
    names: dict[str, str] = {}
    results: dict[str, list[Any]] = {}
    messages = list(request.body.get("messages") or [])
    if since_last_user:
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        for message in messages[: users[-1] if users else 0]:
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
        messages = messages[users[-1] if users else 0 :]
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool":
            content = message.get("content")
            try:
                value = json.loads(content) if isinstance(content, str) else content
            except ValueError:
                value = content
            results.setdefault(names.get(message.get("tool_call_id"), "?"), []).append(value)
    return results
