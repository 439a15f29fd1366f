"""LangGraph route helpers: the chat model at the fake server and one traced invocation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_openai import ChatOpenAI

from trajdebug.integrations.langchain import TrajdebugTracer

from .common import server


def model() -> ChatOpenAI:
    return ChatOpenAI(base_url=server().base_url, api_key="test", model="gpt-4o-mini", max_retries=0, temperature=0)


def invoke(graph: Any, state: dict, path: Path, name: str, task: str, errors: tuple) -> None:
    tracer = TrajdebugTracer(path=str(path), name=name, task=task)
    try:
        graph.invoke(state, config={"callbacks": [tracer], "run_name": name, "recursion_limit": 80})
    except errors:
        pass
