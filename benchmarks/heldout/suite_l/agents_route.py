"""Running an OpenAI Agents SDK agent against the fake model server, recorded by `TrajdebugProcessor`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def tool_results_since_handoff(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool results after the last hand-off (a hand-off's own result is the SDK's transfer message)."""
    results: list[dict[str, Any]] = []
    for m in messages:
        if m.get("role") != "tool":
            continue
        content = str(m.get("content") or "")
        if content.startswith('{"assistant"'):
            results = []
            continue
        results.append(m)
    return results


def parse(message: dict[str, Any]) -> Any:
    return json.loads(message["content"])


def model(server: Any) -> Any:
    from agents import OpenAIChatCompletionsModel
    from benchmarks.heldout.suite_l.kit import openai_client

    return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=openai_client(server, "async"))


def run(agent: Any, text: str, path: Path, name: str) -> None:
    """Run ``agent`` on ``text`` in one trace recorded into ``path`` (an error the run raised is recorded, not raised)."""
    from agents import RunConfig, Runner, set_trace_processors
    from agents.exceptions import AgentsException

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_trace_processors([TrajdebugProcessor(path=str(path), name=name, task=text)])
    try:
        Runner.run_sync(
            agent, text, run_config=RunConfig(workflow_name=name, tracing_disabled=False), max_turns=16
        )
    except AgentsException:
        pass
