"""Running an OpenAI Agents SDK agent against the fake server with the trajdebug processor."""
from __future__ import annotations

import json

from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor


def model_for(server):
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return OpenAIChatCompletionsModel(model="fake-model", openai_client=client)


def run_agent(agent, text: str, out, name: str, task: str, catch=(Exception,)):
    proc = TrajdebugProcessor(path=str(out), name=name, task=task)
    set_trace_processors([proc])
    try:
        Runner.run_sync(agent, text, run_config=RunConfig(workflow_name=name), max_turns=40)
    except catch:
        pass
    finally:
        proc.force_flush()
        set_trace_processors([])


def history(messages):
    """(tool name, args, result) for every tool call answered in a chat transcript."""
    calls = {}
    done = []
    for m in messages:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        elif m.get("role") == "tool":
            name, args = calls.get(m["tool_call_id"], ("?", {}))
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content)
            try:
                res = json.loads(content)
            except (TypeError, ValueError):
                res = content
            done.append((name, args, res))
    return done
