"""Shared plumbing for the suite's agents: model clients, the four recording routes, files.

Nothing here decides what an agent does; each agent module owns its tools, prompts and checks.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trajdebug


class CheckFailed(Exception):
    """Raised by an agent's validator when the final product breaks a business rule."""


# ----------------------------------------------------------------------------------------------
# Prompts and the scripted model


def last_text(messages: list[dict]) -> str:
    """The text of the last user message of a Chat Completions request."""
    for m in reversed(messages):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def system_text(messages: list[dict]) -> str:
    for m in messages:
        if m.get("role") in ("system", "developer"):
            c = m.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def chat_policy(answer: Callable[[str, str, list[dict]], Any]) -> Callable:
    """A FakeModelServer policy for agents that send Chat Completions: answer(system, user, messages)."""

    def policy(request):
        msgs = request.body.get("messages") or []
        return answer(system_text(msgs), last_text(msgs), msgs)

    return policy


def tool_history(request) -> tuple[str, list[tuple[str, dict, str]]]:
    """(instructions, [(tool name, args, output text), ...]) of an agent request, either endpoint."""
    body = request.body
    calls: dict[str, tuple[str, dict]] = {}
    done: list[tuple[str, dict, str]] = []
    if "messages" in body:
        msgs = body["messages"]
        instructions = system_text(msgs)
        for m in msgs:
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", {})
                calls[tc["id"]] = (fn.get("name"), json.loads(fn.get("arguments") or "{}"))
            if m.get("role") == "tool":
                name, args = calls.get(m.get("tool_call_id"), ("?", {}))
                content = m.get("content")
                if isinstance(content, list):
                    content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
                done.append((name, args, content or ""))
        first_user = last_text([m for m in msgs if m.get("role") == "user"][:1])
        return instructions + "\n" + first_user, done
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    instructions = body.get("instructions") or ""
    first_user = ""
    for it in items:
        if it.get("type") == "function_call":
            calls[it["call_id"]] = (it.get("name"), json.loads(it.get("arguments") or "{}"))
        elif it.get("type") == "function_call_output":
            name, args = calls.get(it.get("call_id"), ("?", {}))
            out = it.get("output")
            if isinstance(out, list):
                out = " ".join(p.get("text", "") for p in out if isinstance(p, dict))
            done.append((name, args, out or ""))
        elif it.get("role") == "user" and not first_user:
            c = it.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            first_user = c or ""
    return instructions + "\n" + first_user, done


# ----------------------------------------------------------------------------------------------
# sdk route


def sdk_chat(client, name: str, messages: list[dict]) -> str:
    """One model call recorded as an llm step: the messages in, the assistant message out."""
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model="fake-model", messages=messages)
        text = reply.choices[0].message.content or ""
        u = getattr(reply, "usage", None)
        if u is not None:
            s.usage(model=reply.model, prompt_tokens=u.prompt_tokens, completion_tokens=u.completion_tokens)
        s.output = {"role": "assistant", "content": text}
    return text


def record_sdk(body: Callable[[Any], None], name: str, task: str, path: Path) -> None:
    """Run body(run) inside trajdebug.run(name) written to path; a raised check ends the run failed."""
    try:
        with trajdebug.run(name, task=task, path=str(path)) as run:
            body(run)
    except CheckFailed:
        pass
    trajdebug.flush()


# ----------------------------------------------------------------------------------------------
# otlp route


class Otlp:
    """OpenTelemetry SDK + OpenInference instrumentation of the openai client, spans kept in memory."""

    def __init__(self, service: str) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer(service)

    def close(self) -> None:
        self.instrumentor.uninstrument()

    @contextmanager
    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any):
        a = {"openinference.span.kind": kind}
        if kind == "TOOL":
            a["tool.name"] = name
        if inp is not None:
            a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp, sort_keys=True)
            a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
        a.update(attrs)
        with self.tracer.start_as_current_span(name, attributes=a) as sp:
            yield _SpanBox(sp)

    def record(self, body: Callable[[], None], path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.exporter.clear()
        try:
            body()
        except CheckFailed:
            pass
        env = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        path.write_text(json.dumps(env) + "\n")


class _SpanBox:
    def __init__(self, sp) -> None:
        self.sp = sp

    def out(self, value: Any) -> Any:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        self.sp.set_attribute("output.value", text)
        self.sp.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


# ----------------------------------------------------------------------------------------------
# openai_agents route


def record_agents(run_fn: Callable[[], None], name: str, task: str, path: Path) -> None:
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([proc])
    try:
        run_fn()
    except CheckFailed:
        pass
    except Exception as exc:  # the SDK may wrap the tool's exception
        if "CheckFailed" not in repr(exc) and not isinstance(exc.__cause__, CheckFailed):
            raise
    set_trace_processors([])


# ----------------------------------------------------------------------------------------------
# langgraph route


def record_graph(graph, state: dict, name: str, task: str, path: Path) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=name, task=task)
    try:
        graph.invoke(state, config={"callbacks": [tracer], "recursion_limit": 100})
    except CheckFailed:
        pass


