"""Route 1: LangGraph graphs whose chat model is langchain_openai.ChatOpenAI pointed at a fake model server
on 127.0.0.1, recorded with trajdebug's LangChain tracer (TrajdebugTracer, path= a JSONL file)."""

from __future__ import annotations

from typing import Any

from langchain_openai import ChatOpenAI

from trajdebug.integrations.langchain import TrajdebugTracer


def chat_model(base_url: str, model: str, **kwargs: Any) -> ChatOpenAI:
    return ChatOpenAI(base_url=base_url, api_key="sk-fake-not-used", model=model, max_retries=0, temperature=0, **kwargs)


def record_graph(graph: Any, inputs: Any, path: str, name: str, task: str,
                 expected: tuple[type[BaseException], ...], **config: Any) -> BaseException | None:
    """Invoke the compiled graph with the tracer; return the exception that escaped ``invoke``, if any."""
    tracer = TrajdebugTracer(path=path, name=name, task=task)
    try:
        graph.invoke(inputs, config={"callbacks": [tracer], "run_name": name, **config})
    except expected as exc:
        return exc
    return None
