"""What the two Agents SDK agents share: the model on the local server, the recorder hook, reading tool history."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from .common import base_url, messages_of


def model(name: str) -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    return OpenAIChatCompletionsModel(model=name, openai_client=AsyncOpenAI(base_url=base_url(), api_key="sk-test-local", max_retries=0))


def run_recorded(agent: Any, text: str, path: Path, name: str, task: str, context: Any = None, max_turns: int = 20) -> None:
    from agents import RunConfig, Runner, set_trace_processors, set_tracing_disabled
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_tracing_disabled(False)
    processor = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([processor])
    try:
        Runner.run_sync(agent, text, context=context, max_turns=max_turns, run_config=RunConfig(workflow_name=name))
    except Exception as exc:  # noqa: BLE001 - the failed runs end here; recorded by the processor
        if type(exc).__name__ in ("ModelBehaviorError",):
            raise
    finally:
        processor.force_flush()
        set_trace_processors([])


def history(request: Any) -> tuple[str, str, list[tuple[str, dict, Any]]]:
    """(role line, first user text, [(tool name, args, parsed result)]) from a chat request."""
    msgs = messages_of(request)
    system = next((m.get("content") or "" for m in msgs if m.get("role") in ("system", "developer")), "")
    if isinstance(system, list):
        system = "".join(p.get("text", "") for p in system)
    role = system.split("\n", 1)[0].replace("ROLE:", "").strip()
    user = next((m.get("content") for m in msgs if m.get("role") == "user"), "")
    calls: dict[str, tuple[str, dict]] = {}
    done = []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            calls[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = calls.get(m.get("tool_call_id"), ("?", {}))
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content)
            try:
                result = json.loads(content)
            except (TypeError, ValueError):
                try:
                    result = ast.literal_eval(content)
                except (TypeError, ValueError, SyntaxError):
                    result = content
            done.append((name, args, result))
    return role, user if isinstance(user, str) else json.dumps(user), done
