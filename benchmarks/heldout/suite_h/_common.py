"""Shared machinery of suite H: the fault switch, case specs, the four recording routes, ground truth.

Every agent of the suite records one run per call of its ``record(server, item, path)`` into a fresh
file; the generator calls it with a fault planted (failed), without (control) and on the agent's
reference inputs.  Ground truth is read back from the recorded files, never from the agent's intent.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any


# -- the switch: one planted fault at a time, read at exactly one place in its agent ----------------

_ACTIVE: set[str] = set()


@contextlib.contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn ``fault_id`` on for the block (the run recorded inside it is the failed one)."""
    _ACTIVE.add(fault_id)
    try:
        yield
    finally:
        _ACTIVE.discard(fault_id)


def active(fault_id: str) -> bool:
    """Whether ``fault_id`` is planted now."""
    return fault_id in _ACTIVE


# -- specs -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Fault:
    """One case: a fault of an agent, where it shows first and where the run fails."""

    case: str
    kind: str
    root: str
    """The name of the step whose output first holds the wrong value."""
    marker: str
    """A piece of the wrong value's text: in the root's recorded output, in no control step of that name."""
    failure: str
    """The name of the innermost step where the failing error occurs."""
    fault: str
    """One sentence describing the fault (truth.json only; never recorded)."""


@dataclass(frozen=True, slots=True)
class Agent:
    """One agent of the suite: how it records a run, its inputs and its faults."""

    name: str
    route: str
    domain: str
    record: Callable[[Any, Any, Path], None]
    failing: Any
    references: tuple[Any, ...]
    faults: tuple[Fault, ...]

    @property
    def ext(self) -> str:
        return "json" if self.route == "otlp" else "jsonl"


class ModelReplyError(RuntimeError):
    """A scripted model had no answer for a prompt (a suite bug, never an agent's failure)."""


def last_user(request: Any) -> str:
    """The text of the last user message of a Chat Completions request."""
    for message in reversed(request.body.get("messages") or []):
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


# -- routes ------------------------------------------------------------------------------------------


def record_sdk(name: str, path: Path, task: str, body: Callable[[], None]) -> None:
    """One run through trajdebug's own recorder; the agent's failure leaves the block as it would."""
    import trajdebug

    try:
        with trajdebug.run(name, path=str(path), task=task):
            body()
    except Exception:  # noqa: BLE001 - the run records the failure; the generator checks the outcome
        pass
    trajdebug.flush()


def record_langgraph(name: str, path: Path, task: str, graph: Any, state: dict[str, Any]) -> None:
    """One LangGraph invocation traced by `TrajdebugTracer` into ``path``."""
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=name, task=task)
    try:
        graph.invoke(state, config={"callbacks": [tracer], "recursion_limit": 200})
    except Exception:  # noqa: BLE001 - the tracer records the failure
        pass


def record_agents_sdk(name: str, path: Path, task: str, main: Callable[[], Any]) -> None:
    """One Agents SDK trace (``main`` is a coroutine function) recorded by `TrajdebugProcessor`."""
    from agents import set_trace_processors, trace

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_trace_processors([TrajdebugProcessor(path=str(path), name=name)])

    async def traced() -> None:
        with trace(name, metadata={"task": task}):
            await main()

    try:
        asyncio.run(traced())
    except Exception:  # noqa: BLE001 - the processor records the failure
        pass


# -- reading an Agents SDK agent's requests (the two openai_agents agents) ----------------------------


def chat_model(server: Any) -> tuple[Any, Any]:
    """An Agents SDK model on the fake server's Chat Completions endpoint, and its client.

    Made inside the run's event loop, and the client closed before the loop ends: an HTTP client
    left to the garbage collector would try to close its connections on a closed loop.
    """
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return OpenAIChatCompletionsModel(model=server.model, openai_client=client), client


def system_of(request: Any) -> str:
    """The system message (the agent's instructions) of a Chat Completions request."""
    for message in request.body.get("messages") or []:
        if message.get("role") == "system":
            return str(message.get("content") or "")
    return ""


def first_user(request: Any) -> str:
    for message in request.body.get("messages") or []:
        if message.get("role") == "user":
            return str(message.get("content") or "")
    return ""


def tool_results(request: Any, since_last_user: bool = False) -> dict[str, list[Any]]:
    """Each tool's results in the conversation so far, by tool name (JSON results decoded).

    ``since_last_user``: only those after the last user message (the current request of a longer
    conversation).
    """
    names: dict[str, str] = {}
    results: dict[str, list[Any]] = {}
    messages = list(request.body.get("messages") or [])
    if since_last_user:
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        for message in messages[: users[-1] if users else 0]:
            for call in message.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
        messages = messages[users[-1] if users else 0 :]
    for message in messages:
        for call in message.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if message.get("role") == "tool":
            content = message.get("content")
            try:
                value = json.loads(content) if isinstance(content, str) else content
            except ValueError:
                value = content
            results.setdefault(names.get(message.get("tool_call_id"), "?"), []).append(value)
    return results


class Otlp:
    """One tracer provider for the process: OpenInference on the openai client, spans kept in memory."""

    _instance: Otlp | None = None

    def __init__(self) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer("suite_h")

    @classmethod
    def get(cls) -> Otlp:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def step(self, name: str, kind: str, inp: Any, fn: Callable[[], Any]) -> Any:
        """A span of OpenInference kind ``kind`` around ``fn()``, its input and output as JSON."""
        attrs = {"openinference.span.kind": kind, "input.value": _json(inp), "input.mime_type": "application/json"}
        with self.tracer.start_as_current_span(name, attributes=attrs) as span:
            out = fn()
            span.set_attribute("output.value", _json(out))
            span.set_attribute("output.mime_type", "application/json")
            return out

    def record(self, name: str, path: Path, task: str, body: Callable[[], Any]) -> None:
        """One trace (root span named after the agent) written to ``path`` as OTLP JSON."""
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.exporter.clear()
        try:
            self.step(name, "AGENT", {"task": task}, body)
        except Exception:  # noqa: BLE001 - the root span records the failure (status ERROR)
            pass
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        path.write_text(json.dumps(doc))
        self.exporter.clear()


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def merge_files(ext: str, sources: list[Path], target: Path) -> None:
    """Several recorded files as one: JSON Lines concatenated, OTLP envelopes' resourceSpans joined."""
    if ext == "jsonl":
        target.write_text("".join(p.read_text() for p in sources))
        return
    spans: list[Any] = []
    for p in sources:
        spans.extend(json.loads(p.read_text()).get("resourceSpans", []))
    target.write_text(json.dumps({"resourceSpans": spans}))
