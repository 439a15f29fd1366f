"""Shared plumbing: the fake model server, a chat helper and brain helpers."""

from __future__ import annotations

import ast
import json
from typing import Any

SERVER: Any = None  # set by generate.py: one trajdebug.testing.FakeModelServer
_CLIENTS: dict[str, Any] = {}
_ASYNC_OPEN: list[Any] = []


def client() -> Any:
    from openai import OpenAI

    key = SERVER.base_url
    if key not in _CLIENTS:
        _CLIENTS[key] = OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
    return _CLIENTS[key]



def tool_spec(name: str, description: str, props: dict[str, str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {k: {"type": v} for k, v in props.items()},
                "required": list(props),
            },
        },
    }


def complete(messages: list[dict], tools: list[dict] | None = None) -> dict:
    """One Chat Completions call; the assistant message as a plain dict."""
    kwargs: dict[str, Any] = {"model": SERVER.model, "messages": messages, "temperature": 0}
    if tools:
        kwargs["tools"] = tools
    reply = client().chat.completions.create(**kwargs)
    msg = reply.choices[0].message
    out: dict[str, Any] = {"role": "assistant", "content": msg.content, "tool_calls": []}
    for tc in msg.tool_calls or []:
        out["tool_calls"].append(
            {"id": tc.id, "name": tc.function.name, "arguments": json.loads(tc.function.arguments or "{}")}
        )
    return out


# -- brain helpers: reading a request the way a model reads its prompt ---------------------------


def messages(request: Any) -> list[dict]:
    body = request.body
    if "messages" in body:
        return body["messages"]
    items = body.get("input") or []
    return items if isinstance(items, list) else [{"role": "user", "content": items}]


def text_of(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content or ""


def system_text(request: Any) -> str:
    return " ".join(text_of(m) for m in messages(request) if m.get("role") in ("system", "developer"))


def user_text(request: Any) -> str:
    users = [text_of(m) for m in messages(request) if m.get("role") == "user"]
    return users[-1] if users else ""


def all_text(request: Any) -> str:
    return "\n".join(text_of(m) for m in messages(request) if isinstance(m, dict))


def tool_results(request: Any) -> list[Any]:
    """The tool results the model has read so far, decoded (JSON or a Python repr)."""
    out = []
    for m in messages(request):
        if not isinstance(m, dict):
            continue
        raw = None
        if m.get("role") == "tool":
            raw = text_of(m)
        elif m.get("type") == "function_call_output":
            raw = m.get("output")
        if raw is None:
            continue
        try:
            out.append(json.loads(raw))
        except (ValueError, TypeError):
            try:
                out.append(ast.literal_eval(raw))
            except (ValueError, SyntaxError):
                out.append(raw)
    return out


def tools_offered(request: Any) -> list[str]:
    names = []
    for t in request.body.get("tools") or []:
        fn = t.get("function") or t
        names.append(fn.get("name"))
    return names


def tool_log(request: Any) -> list[tuple[str, dict, Any]]:
    """(tool name, arguments, decoded result) for every tool call the model made and read back, in order."""
    calls: dict[str, tuple[str, dict]] = {}
    out = []
    for m in messages(request):
        if not isinstance(m, dict):
            continue
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or tc
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[tc.get("id")] = (fn.get("name"), args)
        if m.get("type") == "function_call":
            try:
                args = json.loads(m.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[m.get("call_id")] = (m.get("name"), args)
        cid = m.get("tool_call_id") or (m.get("call_id") if m.get("type") == "function_call_output" else None)
        if cid is None:
            continue
        raw = text_of(m) if m.get("role") == "tool" else m.get("output")
        try:
            val = json.loads(raw)
        except (ValueError, TypeError):
            try:
                val = ast.literal_eval(raw)
            except (ValueError, SyntaxError):
                val = raw
        name, args = calls.get(cid, (None, {}))
        out.append((name, args, val))
    return out


def result_of(log: list, name: str) -> Any:
    hits = [r for n, _, r in log if n == name]
    return hits[-1] if hits else None


def run_agents_sdk(agent: Any, text: str, path: str, name: str, task: str, metadata: dict | None = None) -> Any:
    """One Runner.run, traced by trajdebug's processor into a JSONL file."""
    import asyncio

    from agents import RunConfig, Runner
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    async def main() -> Any:
        try:
            return await Runner.run(agent, text, max_turns=25, run_config=RunConfig(workflow_name=name))
        finally:
            while _ASYNC_OPEN:
                await _ASYNC_OPEN.pop().close()  # close the HTTP client inside its own event loop

    set_trace_processors([TrajdebugProcessor(path=path, name=name, task=task, metadata=metadata or {})])
    try:
        return asyncio.run(main())
    finally:
        set_trace_processors([])


def agents_model() -> Any:
    from agents import OpenAIChatCompletionsModel

    from openai import AsyncOpenAI

    fresh = AsyncOpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)  # one per event loop
    _ASYNC_OPEN.append(fresh)
    return OpenAIChatCompletionsModel(model=SERVER.model, openai_client=fresh)
