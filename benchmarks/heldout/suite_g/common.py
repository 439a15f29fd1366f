"""Shared plumbing for suite G: fault switches, the one fake model server and its brains, OTLP output.

Nothing here is recorded under a name that tells what is planted: a fault is a process-wide switch that
an agent reads at exactly one place (``active(fault_id)``), and the brains answer from the request alone
(plus the switch, for faults whose root is a model call).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trajdebug.testing import FakeModelServer, Reply, tool_call


__all__ = [
    "AgentSpec",
    "Case",
    "Req",
    "Reply",
    "active",
    "brain",
    "model_server",
    "planted",
    "tool_call",
    "write_otlp_spans",
]

# -- fault switches -------------------------------------------------------------------------------

_ACTIVE: set[str] = set()
_LOCK = threading.Lock()


@contextmanager
def planted(fault_id: str | None) -> Iterator[None]:
    """Switch one fault on for the duration of the block (None: nothing planted)."""
    if fault_id is None:
        yield
        return
    with _LOCK:
        _ACTIVE.add(fault_id)
    try:
        yield
    finally:
        with _LOCK:
            _ACTIVE.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether this fault is switched on now (read at the single place the fault lives)."""
    return fault_id in _ACTIVE


# -- the brains behind the fake model server ----------------------------------------------------

_BRAINS: dict[str, Callable[[Req], Any]] = {}


@dataclass
class Req:
    """A Chat Completions request, read the way a brain needs it."""

    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def system(self) -> str:
        for m in self.messages:
            if m.get("role") in ("system", "developer"):
                return _text(m.get("content"))
        return ""

    @property
    def user(self) -> str:
        """The first user message."""
        for m in self.messages:
            if m.get("role") == "user":
                return _text(m.get("content"))
        return ""

    @property
    def last(self) -> dict[str, Any]:
        return self.messages[-1] if self.messages else {}

    def tool_results(self) -> list[tuple[str, dict[str, Any], str]]:
        """Every tool result so far as (tool name, arguments, content), in order."""
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        out: list[tuple[str, dict[str, Any], str]] = []
        for m in self.messages:
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function") or {}
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                calls[tc.get("id")] = (fn.get("name", ""), args)
            if m.get("role") == "tool":
                name, args = calls.get(m.get("tool_call_id"), ("", {}))
                out.append((name, args, _text(m.get("content"))))
        return out

    def result(self, tool: str) -> str | None:
        """The latest result of this tool, or None."""
        found = [c for n, _, c in self.tool_results() if n == tool]
        return found[-1] if found else None

    def called(self, tool: str) -> bool:
        return self.result(tool) is not None


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return "" if content is None else str(content)


def brain(desk: str) -> Callable[[Callable[[Req], Any]], Callable[[Req], Any]]:
    """Register the brain that answers requests whose system prompt names ``desk: <desk>``."""

    def register(fn: Callable[[Req], Any]) -> Callable[[Req], Any]:
        _BRAINS[desk] = fn
        return fn

    return register


def _dispatch(request: Any) -> Any:
    req = Req(request.body or {})
    system = req.system
    for desk, fn in _BRAINS.items():
        if f"desk: {desk}." in system or system.startswith(f"desk: {desk}\n") or f"(desk: {desk})" in system:
            return fn(req)
    return Reply(status=400, error=f"no brain for system prompt {system[:60]!r}")


_SERVER: FakeModelServer | None = None


def model_server() -> FakeModelServer:
    """The one fake model server of the process (127.0.0.1, a free port), started on first use."""
    global _SERVER
    if _SERVER is None:
        _SERVER = FakeModelServer(_dispatch, model="gpt-4o-mini").start()
    return _SERVER


# -- cases ---------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One planted fault: the input it runs on and how to find its root in the recorded run."""

    case: str
    fault_kind: str
    fault_id: str
    input: dict[str, Any]
    root_name: str
    marker: str | Callable[[Any], bool]
    """A text the root step's output holds (JSON-encoded), or a test of that output."""
    fault: str
    """One sentence: what goes wrong."""


@dataclass
class AgentSpec:
    """An agent of the suite: how to record one run of it and on what inputs."""

    agent: str
    """The agent's run name."""
    route: str
    domain: str
    summary: str
    record: Callable[[dict[str, Any], Path], None]
    """Record one run on this input into this file (JSONL, or OTLP/JSON for route c); never raises."""
    refs: list[dict[str, Any]]
    cases: list[Case] = field(default_factory=list)
    ext: str = "jsonl"


# -- OTLP/JSON ------------------------------------------------------------------------------------------


def write_otlp_spans(spans: list[Any], path: Path) -> None:
    """Write finished OpenTelemetry spans as one OTLP/JSON ``resourceSpans`` document."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans))
    path.write_text(json.dumps(doc))


# -- route d: model calls recorded with the recording SDK ---------------------------------------------

_CLIENT: Any = None


def openai_client() -> Any:
    """An ``openai.OpenAI`` client pointed at the suite's fake model server."""
    global _CLIENT
    if _CLIENT is None:
        from openai import OpenAI

        _CLIENT = OpenAI(base_url=model_server().base_url, api_key="not-needed", max_retries=0)
    return _CLIENT


def sdk_chat(name: str, system: str, user: str) -> str:
    """One model call recorded as a ``kind="llm"`` step (messages in, the assistant's message out)."""
    import trajdebug

    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        resp = openai_client().chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
        text = resp.choices[0].message.content or ""
        s.output = {"role": "assistant", "content": text, "tool_calls": []}
        s.usage(
            model=resp.model, prompt_tokens=resp.usage.prompt_tokens, completion_tokens=resp.usage.completion_tokens
        )
    return text


# -- route b: the OpenAI Agents SDK on the Chat Completions model --------------------------------------

_SDK_MODEL: Any = None


def agents_model() -> Any:
    """An Agents SDK Chat Completions model talking to the suite's fake model server."""
    global _SDK_MODEL
    if _SDK_MODEL is None:
        from agents import OpenAIChatCompletionsModel
        from openai import AsyncOpenAI

        client = AsyncOpenAI(base_url=model_server().base_url, api_key="not-needed", max_retries=0)
        _SDK_MODEL = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
    return _SDK_MODEL


def run_agents_sdk(agent: Any, text: str, path: Path, name: str, task: str, expected: type[BaseException]) -> None:
    """Run an Agents SDK agent once, recorded by trajdebug's processor into ``path``."""
    from agents import RunConfig, Runner
    from agents.exceptions import UserError
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_trace_processors([TrajdebugProcessor(path=str(path), name=name, task=task)])
    try:
        Runner.run_sync(agent, text, run_config=RunConfig(workflow_name=name), max_turns=20)
    except expected:
        pass
    except UserError as exc:  # the SDK re-raises a tool's exception wrapped ("Error running tool ...")
        if not isinstance(exc.__cause__, expected):
            raise


# -- route c: the openai client under OpenInference, plus the agent's own OpenTelemetry spans ----------

_OTEL: Any = None


def otel() -> tuple[Any, Any, Any]:
    """(tracer, in-memory exporter, provider), with the openai client instrumented by OpenInference once."""
    global _OTEL
    if _OTEL is None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "suite-g-desks"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL = (provider.get_tracer("suite_g"), exporter, provider)
    return _OTEL


class _SpanIO:
    def __init__(self, span: Any) -> None:
        self._span = span

    def output(self, value: Any) -> Any:
        text = value if isinstance(value, str) else json.dumps(value)
        self._span.set_attribute("output.value", text)
        self._span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


@contextmanager
def oi_span(name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[_SpanIO]:
    """One of the agent's own spans in OpenInference's conventions (kind: AGENT, CHAIN, TOOL, RETRIEVER)."""
    tracer = otel()[0]
    attributes: dict[str, Any] = {"openinference.span.kind": kind, **attrs}
    if input is not None:
        attributes["input.value"] = input if isinstance(input, str) else json.dumps(input)
        attributes["input.mime_type"] = "text/plain" if isinstance(input, str) else "application/json"
    if kind == "TOOL":
        attributes["tool.name"] = name
    with tracer.start_as_current_span(name, attributes=attributes) as span:
        yield _SpanIO(span)


def oi_chat(system: str, user: str) -> str:
    """A model call through the instrumented ``openai`` client (OpenInference records the LLM span)."""
    resp = openai_client().chat.completions.create(
        model="gpt-4o-mini",
        temperature=0,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
    )
    return resp.choices[0].message.content or ""


def record_otel(name: str, inp: Any, fn: Callable[[], Any], path: Path, expected: type[BaseException]) -> None:
    """Run ``fn`` under the agent's top span and write the trace as OTLP/JSON into ``path``."""
    _, exporter, provider = otel()
    provider.force_flush()
    exporter.clear()
    try:
        with oi_span(name, "AGENT", inp, **{"agent.name": name}) as top:
            top.output(fn())
    except expected:
        pass
    provider.force_flush()
    write_otlp_spans(list(exporter.get_finished_spans()), path)
    exporter.clear()


def table(fields: str, rows: list[tuple]) -> list[dict[str, Any]]:
    """Rows of a reference table as dicts (``fields``: the column names, space-separated)."""
    names = fields.split()
    return [dict(zip(names, row, strict=True)) for row in rows]


def keyed(fields: str, rows: dict[str, tuple]) -> dict[str, dict[str, Any]]:
    """A reference table keyed by id, each row a dict (``fields``: the column names, space-separated)."""
    names = fields.split()
    return {key: dict(zip(names, row, strict=True)) for key, row in rows.items()}
