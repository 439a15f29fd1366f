"""Shared helpers for the suite's agents: a chat call recorded as an SDK step, and OTLP capture."""
from __future__ import annotations

import json
from contextlib import contextmanager

import trajdebug


def chat(client, model: str, name: str, messages: list[dict], **extra):
    """One Chat Completions call recorded as an `llm` step; returns the assistant message as a dict."""
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        resp = client.chat.completions.create(model=model, messages=messages, **extra)
        msg = resp.choices[0].message.model_dump(exclude_none=True)
        s.usage(model=resp.model, prompt_tokens=resp.usage.prompt_tokens,
                completion_tokens=resp.usage.completion_tokens)
        s.output = msg
    return msg


def last_user(request) -> str:
    msgs = (request.body or {}).get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_of(request) -> str:
    msgs = (request.body or {}).get("messages") or []
    if msgs and msgs[0].get("role") in ("system", "developer"):
        return str(msgs[0].get("content") or "")
    return ""


class OtlpCapture:
    """OpenInference instrumentation of the `openai` client plus an in-memory span exporter."""

    def __init__(self) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "agents"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.instrumentor = OpenAIInstrumentor()

    @contextmanager
    def capturing(self, path: str):
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.spans.clear()
        self.instrumentor.instrument(tracer_provider=self.provider)
        try:
            yield self.provider.get_tracer("agents")
        finally:
            self.instrumentor.uninstrument()
            doc = MessageToDict(encode_spans(self.spans.get_finished_spans()))
            with open(path, "w") as f:
                json.dump(doc, f)
            self.spans.clear()


def span_attrs(kind: str, inp=None, out=None) -> dict:
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = json.dumps(inp)
        a["input.mime_type"] = "application/json"
    if out is not None:
        a["output.value"] = json.dumps(out)
        a["output.mime_type"] = "application/json"
    return a


def set_out(span, value) -> None:
    span.set_attribute("output.value", json.dumps(value))
    span.set_attribute("output.mime_type", "application/json")


_CLIENTS: dict = {}


def client(base_url: str):
    """One synchronous OpenAI client per server (building one loads the CA store: 0.25 s)."""
    from openai import OpenAI

    if base_url not in _CLIENTS:
        _CLIENTS[base_url] = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    return _CLIENTS[base_url]


def async_client(base_url: str):
    """A fresh AsyncOpenAI client for one event loop; plain HTTP to 127.0.0.1 needs no CA store."""
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient

    return AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0,
                       http_client=DefaultAsyncHttpxClient(verify=False))


def chat_model(base_url: str):
    """One LangChain ChatOpenAI per server."""
    key = ("lc", base_url)
    if key not in _CLIENTS:
        from langchain_openai import ChatOpenAI

        _CLIENTS[key] = ChatOpenAI(base_url=base_url, api_key="not-needed", model="fake-model", max_retries=0)
    return _CLIENTS[key]
