"""Helpers for the Agents SDK agents: the model at the local server, the processor, the policy's view of a chat."""
from __future__ import annotations

import json

from agents import OpenAIChatCompletionsModel, set_trace_processors, set_tracing_disabled
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor


def model_for(server) -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=server.base_url, api_key="local-key", max_retries=0)
    return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)


def processor_for(path, name: str, task: str) -> TrajdebugProcessor:
    set_tracing_disabled(False)
    proc = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([proc])
    return proc


def view(request) -> tuple[str, str, dict]:
    """(system text, first user text, {tool name: [parsed results in order]})."""
    msgs = request.body["messages"]
    system = next((m["content"] for m in msgs if m["role"] == "system"), "")
    user = next((m["content"] for m in msgs if m["role"] == "user"), "")
    if isinstance(user, list):
        user = " ".join(p.get("text", "") for p in user)
    names = {}
    for m in msgs:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
    results: dict = {}
    for m in msgs:
        if m["role"] == "tool":
            content = m["content"]
            try:
                val = json.loads(content)
            except (TypeError, ValueError):
                val = content
            results.setdefault(names.get(m["tool_call_id"], "?"), []).append(val)
    return system, user, results
