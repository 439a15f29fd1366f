"""Shared plumbing of suite_zzzzr: the model client helpers the agents use and the four recording routes."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace

SUITE = Path(__file__).resolve().parent
SRC = SUITE.parents[2] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import trajdebug  # noqa: E402


# ----------------------------------------------------------------------------------------------- model helpers
def tool_specs(*names: str) -> list[dict]:
    """Minimal OpenAI tool declarations (the fake model only reads the names)."""
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


def chat(env, messages: list[dict], tools: list[str] | None = None) -> dict:
    """One Chat Completions call; the assistant message as a plain dict (tool calls with ids and arguments)."""
    kwargs = {"tools": tool_specs(*tools)} if tools else {}
    reply = env.client.chat.completions.create(model=env.model, messages=messages, **kwargs)
    return reply.choices[0].message.model_dump(exclude_none=True)


def calls_of(message: dict) -> list[dict]:
    """The tool calls of an assistant message: [{"id", "name", "args"}]."""
    out = []
    for c in message.get("tool_calls") or []:
        out.append({"id": c["id"], "name": c["function"]["name"], "args": json.loads(c["function"]["arguments"])})
    return out


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            return m.get("content") or ""
    return ""


def system_of(request) -> str:
    msgs = request.body.get("messages") or []
    return (msgs[0].get("content") or "") if msgs and msgs[0].get("role") == "system" else ""


def tool_results(request) -> list[str]:
    """Tool results in a chat request (contents of role=tool messages) in order."""
    return [m.get("content") or "" for m in request.body.get("messages") or [] if m.get("role") == "tool"]


def fn_outputs(request) -> list[str]:
    """Function-call outputs in a Responses API request, in order."""
    items = request.body.get("input")
    if not isinstance(items, list):
        return []
    return [i.get("output") for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]


def first_input_text(request) -> str:
    items = request.body.get("input")
    if isinstance(items, str):
        return items
    for i in items or []:
        if isinstance(i, dict) and i.get("role") == "user":
            c = i.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


# ----------------------------------------------------------------------------------------------- routes
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


class Routes:
    """Records one run of an agent module through its route; returns the file content (text or OTLP dict)."""

    def __init__(self, server, tmp: Path):
        self.server = server
        self.tmp = tmp
        self.counter = 0
        self._otel = None

    def env(self) -> SimpleNamespace:
        if getattr(self, "_client", None) is None:
            from openai import OpenAI

            self._client = OpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
        return SimpleNamespace(server=self.server, model=self.server.model, base_url=self.server.base_url, client=self._client)

    def record(self, mod, inp: dict):
        self.counter += 1
        route = mod.ROUTE
        path = self.tmp / f"{mod.RUN_NAME}-{self.counter}.{EXT[route]}"
        env = self.env()
        if route == "sdk":
            try:
                with trajdebug.run(mod.RUN_NAME, task=inp["task"], path=str(path)) as run:
                    mod.execute(inp, env, run)
            except Exception:  # the run's failure is recorded; the generator checks it
                pass
            trajdebug.flush()
            return path.read_text()
        if route == "langgraph":
            from trajdebug.integrations.langchain import TrajdebugTracer

            env.tracer = TrajdebugTracer(path=str(path), name=mod.RUN_NAME, task=inp["task"])
            env.config = {"callbacks": [env.tracer]}
            try:
                mod.execute(inp, env, None)
            except Exception:
                pass
            return path.read_text()
        if route == "openai_agents":
            from agents import set_default_openai_api, set_default_openai_client
            from agents.tracing import set_trace_processors
            from openai import AsyncOpenAI

            from trajdebug.integrations.openai_agents import TrajdebugProcessor

            env.async_client = AsyncOpenAI(base_url=self.server.base_url, api_key="not-needed", max_retries=0)
            set_default_openai_client(env.async_client, use_for_tracing=False)
            set_default_openai_api(getattr(mod, "OPENAI_API", "responses"))
            set_trace_processors([TrajdebugProcessor(path=str(path), name=mod.RUN_NAME, task=inp["task"])])
            async def go():
                try:
                    await mod.execute(inp, env, None)
                finally:
                    await env.async_client.close()

            try:
                asyncio.run(go())
            except Exception:
                pass
            finally:
                set_trace_processors([])
            return path.read_text()
        if route == "otlp":
            from google.protobuf.json_format import MessageToDict
            from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

            provider, exporter = self.otel()
            env.tracer = provider.get_tracer(mod.RUN_NAME)
            exporter.clear()
            try:
                with env.tracer.start_as_current_span(
                    mod.RUN_NAME,
                    attributes={
                        "openinference.span.kind": "AGENT",
                        "metadata": json.dumps({"task": inp["task"]}),
                        "input.value": json.dumps(inp),
                        "input.mime_type": "application/json",
                    },
                ):
                    mod.execute(inp, env, None)
            except Exception:
                pass
            doc = MessageToDict(encode_spans(exporter.get_finished_spans()))
            exporter.clear()
            return doc
        raise ValueError(route)

    def otel(self):
        if self._otel is None:
            from openinference.instrumentation.openai import OpenAIInstrumentor
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            OpenAIInstrumentor().instrument(tracer_provider=provider)
            self._otel = (provider, exporter)
        return self._otel

    def close(self):
        if self._otel is not None:
            from openinference.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().uninstrument()
            self._otel = None


def otlp_span(env, name: str, kind: str, inp=None, td_kind: str | None = None, **attrs):
    """An OpenInference span of the agent's own (tool, retriever, chain...), used as a context manager."""
    a = {"openinference.span.kind": kind}
    if td_kind:
        a["trajdebug.step.kind"] = td_kind
    if inp is not None:
        a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp)
        a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
    a.update(attrs)
    return env.tracer.start_as_current_span(name, attributes=a)


def set_output(span, value) -> None:
    span.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value))
    span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")


def rnd(*keys) -> float:
    """A deterministic number in [0, 1) from the keys (measurement noise that is the same on every run)."""
    import hashlib

    h = hashlib.sha256("|".join(map(str, keys)).encode()).hexdigest()
    return int(h[:8], 16) / 0x100000000
