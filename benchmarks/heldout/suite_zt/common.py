"""Truth records, the fake model server, route helpers and the generator's checks."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import trajdebug
from trajdebug.testing import FakeModelServer, Reply, tool_call  # noqa: F401

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.I)


@dataclass(frozen=True)
class Case:
    case: str
    fault_id: str
    fault_kind: str
    main_input: str
    root: str
    root_occ: int
    failure: str
    failure_occ: int
    description: str


# ---------------------------------------------------------------- the model server
POLICIES: dict[str, Callable[[list[dict]], Any]] = {}
_SERVER: FakeModelServer | None = None


def policy(model: str):
    def deco(fn):
        POLICIES[model] = fn
        return fn
    return deco


def _dispatch(req):
    body = req.body or {}
    model = body.get("model")
    msgs = body.get("messages")
    if msgs is None:  # Responses API
        msgs = []
        for item in body.get("input") or []:
            if isinstance(item, dict):
                msgs.append(item)
    return POLICIES[model](msgs)


def server() -> FakeModelServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = FakeModelServer(_dispatch)
        _SERVER.__enter__()
    return _SERVER


def last_user(msgs: list[dict]) -> str:
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(msgs: list[dict]) -> list[str]:
    out = []
    for m in msgs:
        if m.get("role") == "tool":
            out.append(m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content")))
        elif m.get("type") == "function_call_output":
            out.append(m.get("output") if isinstance(m.get("output"), str) else json.dumps(m.get("output")))
    return out


def openai_client():
    from openai import OpenAI
    return OpenAI(base_url=server().base_url, api_key="test", max_retries=0)


# ---------------------------------------------------------------- sdk route
def sdk_chat(client, name: str, model: str, messages: list[dict]) -> str:
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client.chat.completions.create(model=model, messages=messages)
        text = reply.choices[0].message.content
        s.usage(model=model, prompt_tokens=reply.usage.prompt_tokens if reply.usage else 0,
                completion_tokens=reply.usage.completion_tokens if reply.usage else 0)
        s.output = {"role": "assistant", "content": text}
    return text


# ---------------------------------------------------------------- otlp route
class Otlp:
    """OpenTelemetry spans with OpenInference attributes, kept in memory and written as OTLP/JSON."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zt.agent")

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attrs: Any):
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", kind)
            if input is not None:
                sp.set_attribute("input.value", input if isinstance(input, str) else json.dumps(input))
                sp.set_attribute("input.mime_type", "text/plain" if isinstance(input, str) else "application/json")
            for k, v in attrs.items():
                sp.set_attribute(k.replace("__", "."), v)
            box = _Box(sp)
            yield box
            if box.output is not None:
                out = box.output
                sp.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
                sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")

    def llm(self, name: str, model: str, messages: list[dict]) -> str:
        client = openai_client()
        with self.span(name, "LLM", input={"messages": messages}) as b:
            sp = b.sp
            sp.set_attribute("llm.model_name", model)
            sp.set_attribute("llm.provider", "openai")
            for i, m in enumerate(messages):
                sp.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                sp.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            reply = client.chat.completions.create(model=model, messages=messages)
            text = reply.choices[0].message.content
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            if reply.usage:
                sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
                sp.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
            b.output = text
        return text

    def dump(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        spans = self.exporter.get_finished_spans()
        doc = MessageToDict(encode_spans(spans))
        path.write_text(json.dumps(doc))
        self.exporter.clear()


class _Box:
    def __init__(self, sp) -> None:
        self.sp = sp
        self.output: Any = None


# ---------------------------------------------------------------- reading back and checks
def load(path: Path, route: str):
    if route == "otlp":
        from trajdebug.sources.formats import import_path
        return list(import_path(path, "otlp").runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(run, name: str, occ: int):
    seen = 0
    steps = ordered(run)
    for i, s in enumerate(steps):
        if s.name == name:
            seen += 1
            if seen == occ:
                return i, s
    raise AssertionError(f"step {name}#{occ} not in run {run.name}: {[s.name for s in steps]}")


def check_words(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    assert m is None, f"forbidden word in {path}: {text[max(0, m.start() - 60): m.end() + 60]!r}"


def merge(route: str, parts: list[Path], out: Path) -> None:
    if route == "otlp":
        rs = []
        for p in parts:
            rs.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": rs}))
    else:
        out.write_text("".join(p.read_text() for p in parts))


def obj(text: str):
    import ast
    try:
        return json.loads(text)
    except ValueError:
        return ast.literal_eval(text)
