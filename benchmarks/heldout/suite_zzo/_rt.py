"""Route runners shared by the agents: one fake model server, four ways of recording a run."""
from __future__ import annotations

import asyncio
import json
import random
from contextlib import contextmanager

import trajdebug

SERVER = None  # the generator's FakeModelServer


def chat_text(request) -> str:
    msgs = request.body.get("messages") or []
    return "\n".join(str(m.get("content") or "") for m in msgs if isinstance(m, dict))


def last_user(request) -> str:
    msgs = [m for m in request.body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return str(msgs[-1].get("content") or "") if msgs else ""


def openai_client():
    from openai import OpenAI
    return OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)


def complete(client, system: str, user: str) -> str:
    r = client.chat.completions.create(model=SERVER.model, temperature=0,
                                       messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
    return r.choices[0].message.content or ""


# -- sdk ------------------------------------------------------------------------------------
def sdk_run(name: str, task: str, body, path: str) -> None:
    try:
        with trajdebug.run(name, task=task, path=path) as run:
            body(run)
    except Exception:  # the run records the failure
        pass


# -- langgraph ------------------------------------------------------------------------------
def chat_model():
    from langchain_openai import ChatOpenAI
    return ChatOpenAI(base_url=SERVER.base_url, api_key="not-needed", model=SERVER.model, max_retries=0, temperature=0)


def lg_run(graph, state: dict, name: str, task: str, path: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer
    tracer = TrajdebugTracer(path=path, name=name, task=task)
    try:
        graph.invoke(state, config={"callbacks": [tracer], "recursion_limit": 200})
    except Exception:
        pass


# -- openai agents --------------------------------------------------------------------------
def oa_run(agent, text: str, name: str, task: str, path: str, api: str = "chat_completions") -> None:
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor
    async def go() -> None:
        client = AsyncOpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            await Runner.run(agent, text, max_turns=80, run_config=RunConfig(workflow_name=name))
        finally:
            await client.close()

    set_default_openai_api(api)
    set_trace_processors([TrajdebugProcessor(path=path, task=task)])
    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])


# -- otlp -----------------------------------------------------------------------------------
_OT: dict = {}


def _otel():
    if not _OT:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from opentelemetry.sdk.trace.id_generator import IdGenerator

        class SeededIds(IdGenerator):
            rng = random.Random(0)

            def generate_span_id(self) -> int:
                return self.rng.getrandbits(64) or 1

            def generate_trace_id(self) -> int:
                return self.rng.getrandbits(128) or 1

        ids = SeededIds()
        exporter = InMemorySpanExporter()
        provider = TracerProvider(id_generator=ids)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _OT.update(ids=ids, exporter=exporter, provider=provider)
    return _OT


def otlp_run(scope: str, body, path: str, seed: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    ot = _otel()
    ot["exporter"].clear()
    ot["ids"].rng.seed(seed)
    OpenAIInstrumentor().instrument(tracer_provider=ot["provider"])
    tracer = ot["provider"].get_tracer(scope)
    try:
        body(tracer, openai_client())
    except Exception:
        pass
    finally:
        OpenAIInstrumentor().uninstrument()
    doc = MessageToDict(encode_spans(ot["exporter"].get_finished_spans()))
    with open(path, "w") as f:
        json.dump(doc, f)


def span_call(tracer, name: str, kind: str, inp, fn):
    """Run fn() inside an OpenInference-style span; its input and output as JSON values."""
    with tracer.start_as_current_span(name, attributes={
            "openinference.span.kind": kind, "input.value": json.dumps(inp), "input.mime_type": "application/json"}) as sp:
        out = fn()
        sp.set_attribute("output.value", json.dumps(out))
        sp.set_attribute("output.mime_type", "application/json")
        return out


@contextmanager
def agent_span(tracer, name: str, inp):
    with tracer.start_as_current_span(name, attributes={
            "openinference.span.kind": "AGENT", "input.value": json.dumps(inp), "input.mime_type": "application/json"}) as sp:
        yield sp
