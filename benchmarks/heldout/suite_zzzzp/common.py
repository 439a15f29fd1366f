"""Shared plumbing for the suite's agents: the fake model server, chat helpers, OTLP spans."""
from __future__ import annotations

import json
from contextlib import contextmanager

from openai import OpenAI

STATE = {"server": None, "client": None}


def server():
    return STATE["server"]


def client() -> OpenAI:
    if STATE["client"] is None:
        STATE["client"] = OpenAI(base_url=server().base_url, api_key="not-needed", max_retries=0)
    return STATE["client"]


def tool_specs(names):
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
            for n in names]


def chat(messages, tools=None):
    """One Chat Completions call; returns the assistant message as a dict."""
    kw = {"tools": tool_specs(tools)} if tools else {}
    reply = client().chat.completions.create(model=server().model, messages=messages, **kw)
    return reply.choices[0].message.model_dump(exclude_none=True), reply


# ---- what a brain reads -------------------------------------------------------------------

def messages_of(request):
    return request.body.get("messages") or []


def system_of(request) -> str:
    for m in messages_of(request):
        if m.get("role") in ("system", "developer"):
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def user_of(request) -> str:
    for m in messages_of(request):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(request) -> list[str]:
    return [m.get("content") for m in messages_of(request) if m.get("role") == "tool"]


def called_tools(request) -> list[str]:
    out = []
    for m in messages_of(request):
        for tc in m.get("tool_calls") or []:
            out.append(tc["function"]["name"])
    return out


# ---- OTLP: OpenInference spans by hand, one JSON document per run ---------------------------

class OtlpRecorder:
    def __init__(self, name: str, task: str):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.name, self.task = name, task
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": name}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(name)

    @contextmanager
    def root(self, inp):
        with self.tracer.start_as_current_span(self.name, attributes={
            "openinference.span.kind": "AGENT", "agent.name": self.name,
            "input.value": json.dumps(inp), "input.mime_type": "application/json",
            "metadata": json.dumps({"task": self.task}),
        }) as sp:
            yield sp

    @contextmanager
    def span(self, name, kind, inp=None, **extra):
        oi = {"tool": "TOOL", "retrieval": "RETRIEVER", "agent": "AGENT", "condition": "GUARDRAIL"}.get(kind, "CHAIN")
        attrs = {"openinference.span.kind": oi}
        if kind in ("parse", "state", "condition", "other", "output", "input"):
            attrs["trajdebug.step.kind"] = kind
        if kind == "tool":
            attrs["tool.name"] = name
        if inp is not None:
            attrs["input.value"] = json.dumps(inp)
            attrs["input.mime_type"] = "application/json"
        attrs.update(extra)
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            box = _Box(sp)
            yield box
            if box.output is not None:
                sp.set_attribute("output.value", json.dumps(box.output))
                sp.set_attribute("output.mime_type", "application/json")
            if kind == "retrieval" and isinstance(box.output, list):
                for i, doc in enumerate(box.output):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", str(doc.get("id", i)))
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(doc))

    def llm(self, name, messages, tools=None):
        attrs = {"openinference.span.kind": "LLM", "llm.model_name": server().model, "llm.system": "openai",
                 "input.value": json.dumps({"messages": messages}), "input.mime_type": "application/json"}
        for i, m in enumerate(messages):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            if m.get("content") is not None:
                attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
            if m.get("tool_call_id"):
                attrs[f"llm.input_messages.{i}.message.tool_call_id"] = m["tool_call_id"]
        for i, t in enumerate(tools or []):
            attrs[f"llm.tools.{i}.tool.json_schema"] = json.dumps(tool_specs([t])[0])
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            msg, reply = chat(messages, tools)
            sp.set_attribute("output.value", json.dumps(msg))
            sp.set_attribute("output.mime_type", "application/json")
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            if msg.get("content") is not None:
                sp.set_attribute("llm.output_messages.0.message.content", msg["content"])
            for j, tc in enumerate(msg.get("tool_calls") or []):
                p = f"llm.output_messages.0.message.tool_calls.{j}.tool_call."
                sp.set_attribute(p + "id", tc["id"])
                sp.set_attribute(p + "function.name", tc["function"]["name"])
                sp.set_attribute(p + "function.arguments", tc["function"]["arguments"])
            if reply.usage is not None:
                sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
                sp.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
                sp.set_attribute("llm.token_count.total", reply.usage.total_tokens)
        return msg

    def document(self) -> dict:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        self.provider.shutdown()
        return doc


class _Box:
    def __init__(self, sp):
        self.span, self.output = sp, None
