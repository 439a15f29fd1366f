"""Shared plumbing for suite_zzzp agents: the model client for the sdk route, OTLP writing."""
from __future__ import annotations

import json
import re

FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)", re.IGNORECASE)


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def first_system(request) -> str:
    for m in request.body.get("messages") or []:
        if m.get("role") == "system":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(request) -> list[str]:
    return [m.get("content") for m in request.body.get("messages") or [] if m.get("role") == "tool"]


_client = {}


def chat(base_url: str, model: str, messages: list[dict]) -> dict:
    """One Chat Completions call; returns the message as a dict."""
    from openai import OpenAI

    c = _client.get(base_url)
    if c is None:
        c = _client[base_url] = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    r = c.chat.completions.create(model=model, messages=messages)
    return r.choices[0].message.model_dump(exclude_none=True)


# ---- OTLP route -----------------------------------------------------------------
_otel = {}


def otel():
    """One TracerProvider + in-memory exporter for the process, the openai client instrumented once."""
    if not _otel:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        _otel.update(spans=spans, provider=provider)
    return _otel


def begin_otlp() -> None:
    """Instrument the openai client for one run (the other routes' model calls stay untraced)."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    o = otel()
    o["spans"].clear()
    OpenAIInstrumentor().instrument(tracer_provider=o["provider"])


def write_otlp(path: str) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from openinference.instrumentation.openai import OpenAIInstrumentor

    OpenAIInstrumentor().uninstrument()
    spans = _otel["spans"]
    doc = MessageToDict(encode_spans(spans.get_finished_spans()))
    spans.clear()
    with open(path, "w") as f:
        json.dump({"resourceSpans": doc.get("resourceSpans", [])}, f)


# ---- OpenAI Agents SDK route (Chat Completions) ------------------------------------
def call_results(request) -> list[tuple[str, object]]:
    """(tool name, parsed output) for every tool result in a Chat Completions request, in order."""
    import ast

    names = {}
    out = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                names[tc["id"]] = tc["function"]["name"]
        elif m.get("role") == "tool":
            text = m.get("content")
            if isinstance(text, list):
                text = "".join(p.get("text", "") for p in text if isinstance(p, dict))
            try:
                val = ast.literal_eval(text)
            except Exception:
                try:
                    val = json.loads(text)
                except Exception:
                    val = text
            out.append((names.get(m.get("tool_call_id"), "?"), val))
    return out


def first_user(request) -> str:
    for m in request.body.get("messages") or []:
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def run_sdk_agent(server, agent, text, path, name, task, workflow):
    import asyncio

    from agents import RunConfig, Runner, set_tracing_disabled
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_tracing_disabled(False)
    proc = TrajdebugProcessor(path=path, name=name, task=task)
    set_trace_processors([proc])
    try:
        asyncio.run(Runner.run(agent, text, run_config=RunConfig(workflow_name=workflow), max_turns=30))
    except Exception:
        pass
    finally:
        set_trace_processors([])


def sdk_model(server, model_name):
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    return OpenAIChatCompletionsModel(model=model_name, openai_client=AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0))


class Spans:
    """Spans of one OTLP-route agent: `with sp("name", "TOOL", input) as out: out.value = ...`."""

    def __init__(self, scope: str):
        self.tracer = otel()["provider"].get_tracer(scope)

    def __call__(self, name: str, kind: str, value=None):
        import contextlib

        tracer = self.tracer

        @contextlib.contextmanager
        def cm():
            attrs = {"openinference.span.kind": kind}
            if value is not None:
                attrs["input.value"] = json.dumps(value, sort_keys=True)
                attrs["input.mime_type"] = "application/json"
            with tracer.start_as_current_span(name, attributes=attrs) as span:
                box = _Box()
                yield box
                if box.value is not None:
                    span.set_attribute("output.value", json.dumps(box.value, sort_keys=True))
                    span.set_attribute("output.mime_type", "application/json")

        return cm()


class _Box:
    value = None
