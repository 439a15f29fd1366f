"""Shared plumbing for suite P's OpenAI Agents SDK agents (a scripted model reading the chat history)."""

from __future__ import annotations

import asyncio
import json


def history(messages: list) -> tuple[dict, list]:
    """Tool results by tool name (lists, in order), and the assistant tool calls made so far."""
    names, results, calls = {}, {}, []
    for m in messages:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
                calls.append(c["function"]["name"])
        elif m.get("role") == "tool":
            text = m.get("content")
            if isinstance(text, list):
                text = "".join(p.get("text", "") for p in text)
            try:
                value = json.loads(text)
            except (TypeError, ValueError):
                value = text
            results.setdefault(names.get(m.get("tool_call_id"), "?"), []).append(value)
    return results, calls


def first_user(messages: list) -> dict:
    for m in messages:
        if m.get("role") == "user":
            return json.loads(m["content"])
    return {}


def run_agent(build, server, text: str, path, name: str, task: str) -> None:
    """Build the agents on a fresh client inside the event loop, run them, close the client."""
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_trace_processors([TrajdebugProcessor(path=str(path), name=name, task=task)])

    async def main() -> None:
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        try:
            agent = build(OpenAIChatCompletionsModel(model=server.model, openai_client=client))
            await Runner.run(agent, text, max_turns=30, run_config=RunConfig(workflow_name=name))
        finally:
            await client.close()

    try:
        asyncio.run(main())
    except Exception as exc:  # the run's failure is recorded by the processor
        if "Error running tool" not in str(exc):
            raise
