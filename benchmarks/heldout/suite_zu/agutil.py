"""OpenAI Agents SDK route helpers: the chat-completions model at the fake server and a traced run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_tracing_disabled
from agents.tracing import set_trace_processors
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor

from .common import server

set_tracing_disabled(False)


def model() -> OpenAIChatCompletionsModel:
    client = AsyncOpenAI(base_url=server().base_url, api_key="test", max_retries=0)
    return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)


def run(agent: Any, text: str, path: Path, name: str, errors: tuple, max_turns: int = 30) -> None:
    processor = TrajdebugProcessor(path=str(path), name=name, task=text)
    set_trace_processors([processor])
    try:
        Runner.run_sync(agent, text, max_turns=max_turns, run_config=RunConfig(workflow_name=name, tracing_disabled=False))
    except errors:
        pass
    finally:
        processor.force_flush()
        set_trace_processors([])
