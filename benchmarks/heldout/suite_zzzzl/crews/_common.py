"""What the eight agents share: the model client calls, small JSON helpers, the switch helper."""

from __future__ import annotations

import json
import re
from typing import Any

import trajdebug


class Env:
    """Where the agents' model lives: the one fake model server of the generator."""

    def __init__(self, base_url: str, model: str) -> None:
        from openai import OpenAI

        self.base_url = base_url
        self.model = model
        self.client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)


def last_user(request: Any) -> str:
    """The text of the last user message of a Chat Completions request."""
    for m in reversed(request.body.get("messages") or []):
        if m.get("role") == "user":
            return m.get("content") or ""
    return ""


def system_of(request: Any) -> str:
    msgs = request.body.get("messages") or []
    return (msgs[0].get("content") or "") if msgs and msgs[0].get("role") == "system" else ""


def chat_step(env: Env, name: str, messages: list[dict], tools: list[dict] | None = None) -> dict:
    """One model call recorded as an `llm` step: the messages in, the assistant's message out."""
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        kwargs: dict[str, Any] = {"model": env.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        reply = env.client.chat.completions.create(**kwargs)
        msg = reply.choices[0].message
        out = {
            "role": "assistant",
            "content": msg.content,
            "tool_calls": [
                {"id": c.id, "name": c.function.name, "arguments": json.loads(c.function.arguments or "{}")}
                for c in (msg.tool_calls or [])
            ],
        }
        s.output = out
        if reply.usage is not None:
            s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens,
                    completion_tokens=reply.usage.completion_tokens)
    return out


def as_assistant_message(out: dict) -> dict:
    """The assistant message to put back into the conversation (OpenAI wire shape)."""
    msg: dict[str, Any] = {"role": "assistant", "content": out.get("content")}
    if out.get("tool_calls"):
        msg["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for c in out["tool_calls"]
        ]
    return msg


def fn_tool(name: str, description: str, props: dict[str, Any], required: list[str] | None = None) -> dict:
    """An OpenAI function-tool schema."""
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props, "required": list(required if required is not None else props)}}}


def first_json(text: str) -> Any:
    """The first JSON object or array in a model's text (models wrap JSON in prose or fences)."""
    text = text.strip()
    m = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if m:
        text = m.group(1).strip()
    for i, ch in enumerate(text):
        if ch in "{[":
            return json.JSONDecoder().raw_decode(text[i:])[0]
    raise ValueError(f"no JSON in model answer: {text[:80]!r}")


def tool_results(request: Any) -> list[dict]:
    """The tool messages of a Chat Completions request, content decoded when it is JSON."""
    out = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "tool":
            content = m.get("content")
            try:
                content = json.loads(content)
            except (TypeError, ValueError):
                pass
            out.append({"tool_call_id": m.get("tool_call_id"), "content": content})
    return out


def assistant_calls(request: Any) -> list[dict]:
    """Every tool call the assistant made so far in a Chat Completions request, in order."""
    calls = []
    for m in request.body.get("messages") or []:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = fn.get("arguments")
                calls.append({"id": c.get("id"), "name": fn.get("name"), "arguments": args})
    return calls


# -- the OpenAI Agents SDK -----------------------------------------------------------------------------

def parse_tool_output(text: Any) -> Any:
    """A tool result as the SDK sent it: JSON, a Python repr of a dict or list, or plain text."""
    import ast

    if not isinstance(text, str):
        return text
    for parse in (json.loads, ast.literal_eval):
        try:
            return parse(text)
        except (ValueError, SyntaxError):
            continue
    return text


def chat_state(request: Any) -> tuple[str, list[str], list[dict]]:
    """The same (instructions, user texts, tool exchanges) for a Chat Completions request."""
    msgs = request.body.get("messages") or []
    system = msgs[0].get("content") if msgs and msgs[0].get("role") == "system" else ""
    users = [m.get("content") or "" for m in msgs if m.get("role") == "user"]
    calls: dict[str, dict] = {}
    order: list[str] = []
    for m in msgs:
        if m.get("role") == "assistant":
            for c in m.get("tool_calls") or []:
                fn = c.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = fn.get("arguments")
                calls[c["id"]] = {"name": fn.get("name"), "arguments": args, "output": None}
                order.append(c["id"])
        elif m.get("role") == "tool" and m.get("tool_call_id") in calls:
            calls[m["tool_call_id"]]["output"] = parse_tool_output(m.get("content"))
    return system or "", users, [calls[c] for c in order]


def agents_run(agent: Any, text: str, *, path: str, name: str, task: str, client: Any, context: Any = None,
               workflow: str | None = None, max_turns: int = 20) -> Any:
    """One `Runner.run` of an OpenAI Agents SDK agent, traced by trajdebug's processor into `path`."""
    import asyncio

    from agents import RunConfig, Runner
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    async def main() -> Any:
        try:
            return await Runner.run(agent, text, context=context, max_turns=max_turns,
                                    run_config=RunConfig(workflow_name=workflow or name))
        finally:
            await client.close()

    set_trace_processors([TrajdebugProcessor(path=path, name=name, task=task)])
    try:
        return asyncio.run(main())
    finally:
        set_trace_processors([])


# -- OpenTelemetry with OpenInference attributes, exported as OTLP JSON ---------------------------------

class OtlpTrace:
    """One agent run traced with the OpenTelemetry SDK: OpenInference span kinds and values, the `openai`
    client instrumented by `openinference-instrumentation-openai`, written as one OTLP JSON document."""

    def __init__(self, service: str) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)

    def span(self, name: str, kind: str, value: Any = None, **attrs: Any):
        """A span of an OpenInference kind (AGENT, CHAIN, TOOL, RETRIEVER, GUARDRAIL) with its input."""
        attributes = {"openinference.span.kind": kind}
        if value is not None:
            attributes.update(_io("input", value))
        if kind == "TOOL":
            attributes.setdefault("tool.name", name)
        attributes.update({k.replace("__", "."): v for k, v in attrs.items()})
        return self.tracer.start_as_current_span(name, attributes=attributes)

    def write(self, path: str) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.instrumentor.uninstrument()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        with open(path, "w") as f:
            json.dump(doc, f)


def _io(prefix: str, value: Any) -> dict:
    if isinstance(value, str):
        return {f"{prefix}.value": value, f"{prefix}.mime_type": "text/plain"}
    return {f"{prefix}.value": json.dumps(value), f"{prefix}.mime_type": "application/json"}


def set_output(span: Any, value: Any) -> Any:
    """Record a span's output (OpenInference `output.value`) and hand the value back."""
    for k, v in _io("output", value).items():
        span.set_attribute(k, v)
    return value


def set_documents(span: Any, docs: list[dict]) -> list[dict]:
    """Record a retriever span's documents (OpenInference `retrieval.documents.{i}.document.*`)."""
    for i, d in enumerate(docs):
        span.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
        span.set_attribute(f"retrieval.documents.{i}.document.content", d["content"])
        span.set_attribute(f"retrieval.documents.{i}.document.score", float(d.get("score", 1.0)))
        if d.get("metadata"):
            span.set_attribute(f"retrieval.documents.{i}.document.metadata", json.dumps(d["metadata"]))
    return docs
