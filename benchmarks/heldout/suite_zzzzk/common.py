"""Shared helpers of suite_zzzzk: the model client, an SDK model-call step, OTLP span helpers, checks."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from typing import Any

import trajdebug

BANNED = re.compile(r"\b(faults?|bugs?|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)

# Set by generate.py once the fake model server runs.
CLIENT: Any = None  # openai.OpenAI for the sdk and otlp routes
MODEL = "fake-model"
TRACER: Any = None  # the OpenTelemetry tracer of the otlp route


def last_user(request) -> str:
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_of(request) -> str:
    msgs = request.body.get("messages") or []
    if msgs and msgs[0].get("role") == "system":
        return msgs[0].get("content") or ""
    return request.body.get("instructions") or ""


def tool_results(request) -> list[dict]:
    """The tool results the model was sent (Chat Completions `tool` messages, Responses `function_call_output`)."""
    out = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "tool":
            out.append({"id": m.get("tool_call_id"), "output": m.get("content")})
    for m in request.body.get("input") or []:
        if isinstance(m, dict) and m.get("type") == "function_call_output":
            out.append({"id": m.get("call_id"), "output": m.get("output")})
    return out


def calls_made(request) -> list[dict]:
    """The tool calls the model made earlier in this conversation."""
    out = []
    for m in request.body.get("messages") or []:
        for tc in m.get("tool_calls") or []:
            out.append({"name": tc["function"]["name"], "args": json.loads(tc["function"]["arguments"] or "{}")})
    for m in request.body.get("input") or []:
        if isinstance(m, dict) and m.get("type") == "function_call":
            out.append({"name": m.get("name"), "args": json.loads(m.get("arguments") or "{}")})
    return out


def model_call(name: str, messages: list[dict], tools: list[dict] | None = None) -> dict:
    """One chat-completions call recorded as an `llm` step whose input is the messages sent."""
    with trajdebug.step(name, kind="llm", input={"messages": messages, "tools": tools or []}) as s:
        kw: dict[str, Any] = {"tools": tools} if tools else {}
        reply = CLIENT.chat.completions.create(model=MODEL, messages=messages, **kw)
        msg = reply.choices[0].message.model_dump(exclude_none=True)
        s.output = msg
    return msg


def fn_schema(name: str, description: str, props: dict[str, str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": {k: {"type": v} for k, v in props.items()}, "required": list(props)}}}


@contextmanager
def span(name: str, kind: str, inp: Any = None, **attrs: Any):
    """An OpenInference span; set box['out'] inside the block to record the output."""
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp)
        a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
    if kind == "TOOL":
        a["tool.name"] = name
    a.update(attrs)
    with TRACER.start_as_current_span(name, attributes=a) as sp:
        box: dict[str, Any] = {}
        yield box
        if "out" in box:
            out = box["out"]
            if kind == "RETRIEVER" and isinstance(out, list):
                for i, d in enumerate(out):
                    sp.set_attribute(f"retrieval.documents.{i}.document.id", str(d.get("id")))
                    sp.set_attribute(f"retrieval.documents.{i}.document.content", json.dumps(d))
            else:
                sp.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
                sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")


def check_words(run, *texts: str) -> None:
    """The recorded data must not name what the suite is about."""
    for s in run.steps:
        blob = json.dumps([s.name, s.input, s.output, str(s.error) if s.error else None, s.attributes], default=str)
        m = BANNED.search(blob)
        assert not m, f"{run.name}: step {s.name} records {m.group(0)!r}"
    for t in (run.failure_reason or "", str(run.metadata.get("task", "")), *texts):
        m = BANNED.search(t)
        assert not m, f"{run.name}: {m.group(0)!r} in {t[:80]!r}"

ASYNC_CLIENT: Any = None  # openai.AsyncOpenAI for the openai_agents route
SPANS: Any = None  # the in-memory span exporter of the otlp route
INSTRUMENTOR: Any = None
SERVER: Any = None


def otlp_write(path: str) -> None:
    """Encode the finished spans as one OTLP JSON document and clear the exporter."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(SPANS.get_finished_spans()))
    SPANS.clear()
    with open(path, "w") as f:
        json.dump(doc, f)
