"""Running an OpenAI Agents SDK workflow against the fake model server, recorded by TrajdebugProcessor."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client, set_tracing_disabled
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor


def run_workflow(agent, message: str, workflow: str, task: str, out: Path, ctx, max_turns: int = 12) -> None:
    set_tracing_disabled(False)
    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=str(out), task=task)])

    async def go() -> None:
        async with AsyncOpenAI(base_url=ctx.server.base_url, api_key="not-needed", max_retries=0) as client:
            set_default_openai_client(client, use_for_tracing=False)
            await Runner.run(agent, message, max_turns=max_turns, run_config=RunConfig(workflow_name=workflow))

    try:
        asyncio.run(go())
    except Exception as exc:  # the run's own failure: recorded by the processor
        if type(exc).__name__ in ("APIConnectionError", "AuthenticationError"):
            raise
    finally:
        set_trace_processors([])


def items(request) -> list:
    inp = request.body.get("input")
    return inp if isinstance(inp, list) else [{"role": "user", "content": inp}]


def first_user(request) -> str:
    for it in items(request):
        if it.get("role") == "user":
            c = it["content"]
            return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    return ""


def calls_and_outputs(request) -> list[tuple[str, dict, object]]:
    """(tool name, arguments, output) of every function call in the input, in order (output None if none yet)."""
    outs = {it["call_id"]: it["output"] for it in items(request) if it.get("type") == "function_call_output"}
    res = []
    for it in items(request):
        if it.get("type") == "function_call":
            out = outs.get(it["call_id"])
            if isinstance(out, str):
                try:
                    out = ast.literal_eval(out)
                except (ValueError, SyntaxError):
                    try:
                        out = json.loads(out)
                    except ValueError:
                        pass
            res.append((it["name"], json.loads(it["arguments"] or "{}"), out))
    return res
