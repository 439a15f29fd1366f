"""Route 2: OpenAI Agents SDK agents run against a fake model server on 127.0.0.1 (Chat Completions via
OpenAIChatCompletionsModel, or the Responses API via OpenAIResponsesModel), traced by trajdebug's
TrajdebugProcessor, which appends each trace to a JSONL file."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from agents import OpenAIChatCompletionsModel, OpenAIResponsesModel, set_trace_processors
from agents.exceptions import AgentsException
from openai import AsyncOpenAI

from trajdebug.integrations.openai_agents import TrajdebugProcessor


def models(base_url: str, name: str) -> tuple[Any, Any, AsyncOpenAI]:
    """A Chat Completions model and a Responses model, both pointed at the fake server, and their client
    (made inside the event loop that uses it; close it at the end of the run)."""
    client = AsyncOpenAI(base_url=base_url, api_key="sk-fake-not-used", max_retries=0)
    return (OpenAIChatCompletionsModel(model=name, openai_client=client),
            OpenAIResponsesModel(model=name, openai_client=client), client)


def record_trace(name: str, task: str, main: Callable[[], Awaitable[Any]], path: str,
                 expected: tuple[type[BaseException], ...] = ()) -> BaseException | None:
    """Run ``main`` (which opens the SDK trace and runs the agents) with a processor writing to ``path``.

    Returns the exception ``Runner.run`` raised (the SDK wraps a tool's exception in a UserError),
    or None when the run finished."""
    processor = TrajdebugProcessor(path=path, name=name, task=task)
    set_trace_processors([processor])
    try:
        asyncio.run(main())
    except (AgentsException, *expected) as exc:
        return exc
    finally:
        set_trace_processors([])
    return None
