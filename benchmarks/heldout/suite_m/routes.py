"""The four recording routes of suite M, around one fake model server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from trajdebug.testing import FakeModelServer


class Env:
    """One fake model server for the whole generation (each run swaps in its agent's policy)."""

    def __init__(self) -> None:
        self.server = FakeModelServer(lambda request: "")

    def __enter__(self) -> Env:
        self.server.start()
        from openai import AsyncOpenAI, OpenAI

        self.base_url = self.server.base_url
        self.client = OpenAI(base_url=self.base_url, api_key="not-needed", max_retries=0)
        self.aclient = AsyncOpenAI(base_url=self.base_url, api_key="not-needed", max_retries=0)
        self._chat = None
        self._loop = None
        return self

    def run_async(self, coro):
        """Run a coroutine on this process's one event loop (the async client stays bound to it)."""
        import asyncio

        if self._loop is None:
            self._loop = asyncio.new_event_loop()
        return self._loop.run_until_complete(coro)

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None:
            self._loop.close()
        self.server.stop()

    def chat_model(self):
        """langchain-openai's ChatOpenAI against the fake server."""
        if self._chat is None:
            from langchain_openai import ChatOpenAI

            self._chat = ChatOpenAI(
                base_url=self.base_url, api_key="not-needed", model="fake-model", max_retries=0, temperature=0
            )
        return self._chat

    def agents_model(self):
        """The Agents SDK's Chat Completions model against the fake server."""
        from agents import OpenAIChatCompletionsModel

        return OpenAIChatCompletionsModel(model="fake-model", openai_client=self.aclient)


def record(mod: Any, inp: dict, path: Path, env: Env) -> None:
    """Record one run of agent module ``mod`` on input ``inp`` into ``path``."""
    env.server.use(mod.policy(inp))
    route = mod.ROUTE
    if route == "sdk":
        import trajdebug

        try:
            with trajdebug.run(mod.AGENT, task=inp["task"], path=str(path)):
                mod.execute(inp, env)
        except Exception:  # noqa: BLE001 - the run records it
            pass
        trajdebug.flush()
    elif route == "langgraph":
        from trajdebug.integrations.langchain import TrajdebugTracer

        tracer = TrajdebugTracer(path=str(path), name=mod.AGENT, task=inp["task"])
        try:
            mod.execute(inp, env, {"callbacks": [tracer], "recursion_limit": 200})
        except Exception:  # noqa: BLE001 - the tracer records it
            pass
    elif route == "openai_agents":
        from agents import set_trace_processors

        from trajdebug.integrations.openai_agents import TrajdebugProcessor

        processor = TrajdebugProcessor(path=str(path), name=mod.AGENT, task=inp["task"])
        set_trace_processors([processor])
        try:
            mod.execute(inp, env)
        except Exception:  # noqa: BLE001 - the processor records it
            pass
        set_trace_processors([])
    elif route == "otlp":
        _record_otlp(mod, inp, path, env)
    else:
        raise ValueError(route)


def _record_otlp(mod: Any, inp: dict, path: Path, env: Env) -> None:
    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": mod.AGENT, "service.instance.id": "m1"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        from openai import OpenAI

        client = OpenAI(base_url=env.base_url, api_key="not-needed", max_retries=0)
        try:
            mod.execute(inp, env, provider.get_tracer(mod.AGENT), client)
        except Exception:  # noqa: BLE001 - the spans record it
            pass
    finally:
        instrumentor.uninstrument()
    provider.force_flush()
    doc = MessageToDict(encode_spans(exporter.get_finished_spans()))
    path.write_text(json.dumps({"resourceSpans": doc.get("resourceSpans", [])}))
    provider.shutdown()
