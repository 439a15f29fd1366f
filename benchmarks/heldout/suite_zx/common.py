"""Truth records, the generator's checks, and the small plumbing each recording route needs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)

# ---- the fake model: one server, one policy per agent keyed by the model name ----------------
POLICIES: dict[str, Callable[[list[dict]], Any]] = {}
BASE_URL: list[str] = []


def dispatch(request: Any) -> Any:
    body = request.body or {}
    return POLICIES[body.get("model")](body.get("messages") or [])


def base_url() -> str:
    return BASE_URL[0]


def last_user(messages: list[dict]) -> str:
    for m in reversed(messages):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(messages: list[dict]) -> list[tuple[str, str]]:
    """(tool name, content) for each tool result in order, names taken from the assistant calls."""
    names: dict[str, str] = {}
    out = []
    for m in messages:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id"), "?"), m.get("content") or ""))
    return out


# ---- truth ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    case: str
    fault_id: str
    fault_kind: str
    input: str
    root: tuple[str, int, str]
    failure: tuple[str, int]
    description: str


def truth(agent: str, route: str, c: Case, hops: int) -> dict:
    return {
        "case": c.case,
        "agent": agent,
        "route": route,
        "fault_kind": c.fault_kind,
        "root": {"name": c.root[0], "occurrence": c.root[1], "kind": c.root[2]},
        "failure": {"name": c.failure[0], "occurrence": c.failure[1]},
        "hops": hops,
        "description": c.description,
    }


# ---- reading back and checking ----------------------------------------------------------------
def load(path: Path, route: str) -> list:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        return list(import_path(path, "otlp").runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(steps: list, name: str, occ: int) -> tuple[int, Any]:
    seen = 0
    for i, s in enumerate(steps):
        if s.name == name:
            seen += 1
            if seen == occ:
                return i, s
    raise AssertionError(f"step {name} #{occ} not in run ({[s.name for s in steps]})")


def check_case(case_dir: Path, route: str, c: Case) -> int:
    ext = "json" if route == "otlp" else "jsonl"
    for f in ("failed", "control", "with_refs"):
        text = (case_dir / f"{f}.{ext}").read_text()
        m = FORBIDDEN.search(text)
        assert m is None, f"{case_dir.name}/{f}: forbidden word near {text[max(0, m.start() - 60):m.end() + 60]!r}"
    [failed] = load(case_dir / f"failed.{ext}", route)
    [control] = load(case_dir / f"control.{ext}", route)
    refs = load(case_dir / f"with_refs.{ext}", route)
    assert failed.outcome == "failure", (c.case, failed.outcome)
    assert control.outcome == "success", (c.case, control.outcome, control.failure_reason if hasattr(control, "failure_reason") else "")
    assert len(refs) == 5, (c.case, len(refs))
    outs = sorted(r.outcome for r in refs)
    assert outs == ["failure"] + ["success"] * 4, (c.case, outs)
    steps = ordered(failed)
    ri, root = find(steps, c.root[0], c.root[1])
    fi, fail = find(steps, c.failure[0], c.failure[1])
    assert root.kind == c.root[2], (c.case, "root kind", root.kind, c.root[2])
    assert fail.start_ns > root.start_ns and fi > ri, (c.case, "failure not after root")
    assert fail.status == "error", (c.case, "failure step has no error", fail.name)
    assert len(steps) >= 15, (c.case, "too few steps", len(steps))
    return fi - ri


# ---- route plumbing ---------------------------------------------------------------------------
def chat_text(model: str, messages: list[dict]) -> tuple[str, Any]:
    from openai import OpenAI

    client = OpenAI(base_url=base_url(), api_key="not-needed", max_retries=0)
    reply = client.chat.completions.create(model=model, messages=messages)
    return reply.choices[0].message.content or "", reply


def sdk_llm(name: str, model: str, messages: list[dict]) -> str:
    """A model call recorded as an llm step of the recording SDK."""
    import trajdebug

    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        text, reply = chat_text(model, messages)
        s.usage(model=reply.model, prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens)
        s.output = {"role": "assistant", "content": text}
    return text


class Otlp:
    """OpenTelemetry spans with OpenInference attributes, kept in memory and written as OTLP/JSON."""

    def __init__(self, scope: str) -> None:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(scope)

    @contextmanager
    def span(self, name: str, kind: str, value: Any = None, **attrs: Any):
        a = {"openinference.span.kind": kind}
        if value is not None:
            a["input.value"] = value if isinstance(value, str) else json.dumps(value)
            a["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
        for k, v in attrs.items():
            a[k.replace("__", ".")] = v
        with self.tracer.start_as_current_span(name, attributes=a) as sp:
            box: dict = {}
            yield box
            if "out" in box:
                out = box["out"]
                sp.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
                sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")

    def llm(self, name: str, model: str, messages: list[dict]) -> str:
        attrs: dict[str, Any] = {"llm.model_name": model, "llm.provider": "openai"}
        for i, m in enumerate(messages):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with self.tracer.start_as_current_span(
            name, attributes={"openinference.span.kind": "LLM", "input.value": json.dumps({"messages": messages}),
                              "input.mime_type": "application/json", **attrs}
        ) as sp:
            text, reply = chat_text(model, messages)
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("output.value", text)
            sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
            sp.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
            sp.set_attribute("llm.token_count.total", reply.usage.total_tokens)
        return text

    def take(self) -> dict:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        spans = self.exporter.get_finished_spans()
        self.exporter.clear()
        return MessageToDict(encode_spans(spans))


def merge_otlp(docs: list[dict]) -> dict:
    return {"resourceSpans": [rs for d in docs for rs in d.get("resourceSpans", [])]}


def agents_model(name: str) -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    return OpenAIChatCompletionsModel(model=name, openai_client=AsyncOpenAI(base_url=base_url(), api_key="not-needed", max_retries=0))


def run_agents(agent: Any, prompt: str, path: Path, run_name: str, task: str) -> None:
    from agents import RunConfig, Runner
    from agents.tracing import set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(path), name=run_name, task=task)
    set_trace_processors([proc])
    try:
        Runner.run_sync(agent, prompt, max_turns=40, run_config=RunConfig(workflow_name=run_name))
    except Exception:  # the run's failure is in the trace
        pass
    set_trace_processors([])


def run_graph(graph: Any, state: dict, path: Path, run_name: str, task: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    tracer = TrajdebugTracer(path=str(path), name=run_name, task=task)
    try:
        graph.invoke(state, config={"callbacks": [tracer], "recursion_limit": 200})
    except Exception:  # the run's failure is in the trace
        pass


class ApiError(RuntimeError):
    """An HTTP error body from a downstream service."""
