"""Truth records, shared plumbing (model client, OTLP writer) and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trajdebug

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    agent: str
    fault_kind: str
    root: str
    root_occurrence: int
    root_kind: str
    failure: str
    failure_occurrence: int
    description: str
    inp: str  # key of the main input


def last_user(request: Any) -> str:
    msgs = (request.body or {}).get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def all_text(request: Any) -> str:
    return json.dumps(request.body, sort_keys=True)


def tool_results(request: Any) -> list[str]:
    msgs = (request.body or {}).get("messages") or []
    return [m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content")) for m in msgs if m.get("role") == "tool"]


# ---------------------------------------------------------------- reading back
def load_steps(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return list(run.steps)


def find(run: Any, name: str, occ: int) -> tuple[int, Any]:
    steps = ordered(run)
    n = 0
    for i, s in enumerate(steps):
        if s.name == name:
            n += 1
            if n == occ:
                return i, s
    raise AssertionError(f"step {name}#{occ} not in run {run.name}: {[s.name for s in steps]}")


def check_words(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    assert not m, f"forbidden word {m.group(0)!r} in {path}: ...{text[max(0, m.start()-80):m.end()+40]}"


def chat(client: Any, messages: list[dict], **kw: Any) -> str:
    reply = client.chat.completions.create(model="fake-model", messages=messages, **kw)
    return reply.choices[0].message.content or ""


# ---------------------------------------------------------------- OTLP route
class Otlp:
    """OpenTelemetry SDK spans with OpenInference attributes, written as one OTLP/JSON envelope."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zl")

    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any):
        import contextlib

        @contextlib.contextmanager
        def cm():
            with self.tracer.start_as_current_span(name) as sp:
                sp.set_attribute("openinference.span.kind", kind)
                if inp is not None:
                    sp.set_attribute("input.value", inp if isinstance(inp, str) else json.dumps(inp, sort_keys=True))
                    sp.set_attribute("input.mime_type", "text/plain" if isinstance(inp, str) else "application/json")
                for k, v in attrs.items():
                    sp.set_attribute(k.replace("__", "."), v)
                box = _Box(sp)
                yield box
                if box.value is not None:
                    v = box.value
                    sp.set_attribute("output.value", v if isinstance(v, str) else json.dumps(v, sort_keys=True))
                    sp.set_attribute("output.mime_type", "text/plain" if isinstance(v, str) else "application/json")
        return cm()

    def llm(self, name: str, client: Any, messages: list[dict]) -> str:
        with self.span(name, "LLM", {"messages": messages}, llm__model_name="fake-model", llm__provider="openai") as s:
            for i, m in enumerate(messages):
                s.sp.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                s.sp.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            text = chat(client, messages)
            s.sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            s.sp.set_attribute("llm.output_messages.0.message.content", text)
            s.value = text
        return text

    def write(self, path: str) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        msg = encode_spans(self.exporter.get_finished_spans())
        Path(path).write_text(json.dumps(MessageToDict(msg), sort_keys=True))
        self.provider.shutdown()


class _Box:
    def __init__(self, sp: Any) -> None:
        self.sp = sp
        self.value: Any = None


# ---------------------------------------------------------------- Agents SDK route
def sdk_history(request: Any) -> tuple[str, str, dict[str, Any]]:
    """(system text, first user text, {tool name: parsed result}) of a chat-completions request."""
    msgs = (request.body or {}).get("messages") or []
    system = next((m.get("content") or "" for m in msgs if m.get("role") == "system"), "")
    if not isinstance(system, str):
        system = json.dumps(system)
    user = next((m.get("content") for m in msgs if m.get("role") == "user"), "")
    if not isinstance(user, str):
        user = json.dumps(user)
    names: dict[str, str] = {}
    results: dict[str, Any] = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            content = m.get("content")
            val = _parse(content)
            results[names.get(m.get("tool_call_id"), "?")] = val
    return system, user, results


def sdk_setup(path: str, name: str, task: str):
    from agents import set_trace_processors, set_tracing_disabled
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=path, name=name, task=task)
    set_tracing_disabled(False)
    set_trace_processors([proc])
    return proc


def sdk_model(ctx: dict):
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    return OpenAIChatCompletionsModel(model="fake-model", openai_client=AsyncOpenAI(base_url=ctx["base_url"], api_key="test", max_retries=0))


def _parse(content: Any) -> Any:
    import ast

    if not isinstance(content, str):
        return content
    for fn in (json.loads, ast.literal_eval):
        try:
            return fn(content)
        except (ValueError, SyntaxError, TypeError):
            pass
    return content
