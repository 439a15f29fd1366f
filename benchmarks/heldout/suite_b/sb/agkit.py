"""OpenAI Agents SDK plumbing shared by the route-2 agents: the fake server as a Chat Completions model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
from openai import AsyncOpenAI

from sb.env import ENV
from trajdebug.integrations.openai_agents import TrajdebugProcessor


def model(name: str = "gpt-4o-mini") -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=ENV.server.base_url, api_key="sk-heldout-b-fake", max_retries=0, timeout=30)
    return OpenAIChatCompletionsModel(model=name, openai_client=client)


def run_agent(
    build: Any, text: str, path: Path, workflow: str, metadata: dict[str, str] | None = None
) -> Any:
    """Build the agents (fresh client per run: run_sync opens a new event loop) and run them, traced to ``path``."""
    processor = TrajdebugProcessor(path=path)
    set_trace_processors([processor])  # replaces the SDK's default exporter: nothing leaves the machine
    agent: Agent[Any] = build(model())
    result = Runner.run_sync(
        agent,
        text,
        max_turns=16,
        run_config=RunConfig(workflow_name=workflow, trace_metadata=metadata or {}),
    )
    return result.final_output
