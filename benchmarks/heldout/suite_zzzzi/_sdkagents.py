"""Helpers for the Agents SDK agents: read the Chat Completions request the SDK sends the fake model."""

from __future__ import annotations

import ast
import asyncio
import json

from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor


def calls_and_results(request) -> list[tuple[str, dict, object]]:
    """(tool name, arguments, result) for every tool call answered so far in the conversation."""
    names, out = {}, []
    for m in request.body.get("messages") or []:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                names[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = names.get(m.get("tool_call_id"), ("?", {}))
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            try:
                value = ast.literal_eval(content)
            except (ValueError, SyntaxError):
                try:
                    value = json.loads(content)
                except ValueError:
                    value = content
            out.append((name, args, value))
    return out


def first_user(request) -> str:
    for m in request.body.get("messages") or []:
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else "".join(p.get("text", "") for p in c if isinstance(p, dict))
    return ""


_CLIENTS: list[AsyncOpenAI] = []


def model_for(client, model: str) -> OpenAIChatCompletionsModel:
    aclient = AsyncOpenAI(base_url=str(client.base_url), api_key="not-needed", max_retries=0)
    _CLIENTS.append(aclient)
    return OpenAIChatCompletionsModel(model=model, openai_client=aclient)


def run_recorded(agent, text: str, out: str, name: str, task: str, max_turns: int = 12):
    set_tracing_disabled(False)
    proc = TrajdebugProcessor(path=out, name=name, task=task)
    set_trace_processors([proc])
    async def main():
        try:
            return await Runner.run(agent, text, max_turns=max_turns, run_config=RunConfig(workflow_name=name))
        finally:
            while _CLIENTS:
                await _CLIENTS.pop().close()

    try:
        return asyncio.run(main())
    finally:
        set_trace_processors([])
