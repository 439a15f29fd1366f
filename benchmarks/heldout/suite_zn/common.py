"""Truth records, the shared fake model server, and the generator's checks."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAULT_KINDS = (
    "lossy_parsing", "unit_error", "bad_memory_write", "hallucinated_value", "stale_data", "wrong_tool_args",
    "tool_ignores_argument", "truncated_result", "format_drift", "wrong_routing", "subagent_wrong_entity",
    "off_by_one", "context_pollution", "plan_error", "wrong_retrieval", "swallowed_error",
)
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    """One planted fault of one agent; the recorded details (kind, occurrence of the failure, hops) are read
    from the failed run by the generator."""

    case: str
    fault_kind: str
    input: int
    root: str
    root_occurrence: int
    failure: str
    description: str


# ---------------------------------------------------------------- the fake model: one policy per model name
POLICIES: dict[str, Callable[[dict], Any]] = {}
_server = None
_server_lock = threading.Lock()


def policy(model: str) -> Callable[[Callable[[dict], Any]], Callable[[dict], Any]]:
    def register(fn: Callable[[dict], Any]) -> Callable[[dict], Any]:
        POLICIES[model] = fn
        return fn

    return register


def _dispatch(request: Any) -> Any:
    body = request.body or {}
    fn = POLICIES.get(body.get("model", ""))
    if fn is None:
        raise KeyError(f"no model named {body.get('model')!r}")
    return fn(body)


def base_url() -> str:
    """The URL of the one fake model server of this process (started on first use, port 0)."""
    global _server
    with _server_lock:
        if _server is None:
            from trajdebug.testing import FakeModelServer

            _server = FakeModelServer(_dispatch).start()
        return _server.base_url


def stop_server() -> None:
    global _server
    with _server_lock:
        if _server is not None:
            _server.stop()
            _server = None


_clients: dict[str, Any] = {}


def chat(model: str, system: str, user: str) -> Any:
    """One Chat Completions call to the fake server; returns the whole response."""
    from openai import OpenAI

    url = base_url()
    if url not in _clients:
        _clients[url] = OpenAI(base_url=url, api_key="sk-local-test", max_retries=0)
    return _clients[url].chat.completions.create(
        model=model, messages=[{"role": "system", "content": system}, {"role": "user", "content": user}], temperature=0
    )


def data_block(body: dict) -> dict:
    """The JSON after 'DATA:' in the last user message of a request (how the agents hand facts to the model)."""
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user":
            text = msg["content"] if isinstance(msg["content"], str) else json.dumps(msg["content"])
            if "DATA:" in text:
                return json.loads(text.split("DATA:", 1)[1])
    return {}


def tool_results(body: dict) -> list[Any]:
    """The tool results in a request's messages, oldest first (JSON decoded when they are JSON)."""
    out = []
    for msg in body.get("messages", []):
        if msg.get("role") == "tool":
            content = msg.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            try:
                out.append(json.loads(content))
            except (TypeError, ValueError):
                out.append(content)
    return out


def first_user(body: dict) -> str:
    for msg in body.get("messages", []):
        if msg.get("role") == "user":
            c = msg["content"]
            return c if isinstance(c, str) else json.dumps(c)
    return ""


# ---------------------------------------------------------------- reading back and checking
def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        result = import_path(path, fmt="otlp")
        assert not result.problems, result.problems
        return list(result.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def failure_step(run: Any) -> Any:
    """The last step that failed and holds no failed step of its own (the check that raised; earlier errors were
    retried or handled)."""
    steps = ordered(run)
    failed_parents = {s.parent_id for s in steps if s.status == "error"}
    leaves = [s for s in steps if s.status == "error" and s.step_id not in failed_parents]
    assert leaves, f"run {run.name} has no failed step"
    return leaves[-1]


def occurrence(run: Any, step: Any) -> int:
    same = [s for s in ordered(run) if s.name == step.name]
    return same.index(step) + 1


def find(run: Any, name: str, occ: int) -> Any:
    same = [s for s in ordered(run) if s.name == name]
    assert len(same) >= occ, f"{run.name}: step {name!r} #{occ} not recorded ({len(same)} of that name)"
    return same[occ - 1]


def check_words(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    hit = FORBIDDEN.search(text)
    assert hit is None, f"{path}: forbidden word near {text[max(0, hit.start() - 60):hit.end() + 60]!r}"


def truth_for(case: Case, agent: str, route: str, failed_run: Any) -> dict:
    steps = ordered(failed_run)
    root = find(failed_run, case.root, case.root_occurrence)
    fail = failure_step(failed_run)
    assert fail.name == case.failure, f"{case.case}: failure at {fail.name!r}, expected {case.failure!r}"
    assert fail.start_ns > root.start_ns or steps.index(fail) > steps.index(root), f"{case.case}: failure before root"
    assert root.status != "error", f"{case.case}: the root step raised"
    hops = steps.index(fail) - steps.index(root)
    assert hops >= 1, f"{case.case}: hops {hops}"
    return {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": root.name, "occurrence": case.root_occurrence, "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": occurrence(failed_run, fail)},
        "hops": hops,
        "description": case.description,
    }


# ---------------------------------------------------------------- OpenAI Agents SDK plumbing
def agents_model(model: str) -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url(), api_key="sk-local-test", max_retries=0)
    return OpenAIChatCompletionsModel(model=model, openai_client=client)


def run_agents(path: Path, name: str, task: str, agent: Any, prompt: str) -> Any:
    from agents import RunConfig, Runner, set_trace_processors

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    processor = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([processor])
    try:
        return Runner.run_sync(agent, prompt, run_config=RunConfig(workflow_name=name), max_turns=30)
    finally:
        set_trace_processors([])


def called(body: dict) -> list[tuple[str, dict]]:
    """The tool calls the model made so far in this conversation, oldest first: (name, arguments)."""
    out = []
    for msg in body.get("messages", []):
        for call in msg.get("tool_calls") or []:
            fn = call.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            out.append((fn.get("name"), args))
    return out


def results_by_tool(body: dict) -> dict[str, Any]:
    """The latest result of each tool in this conversation, by tool name (matched through tool-call ids)."""
    names = {}
    for msg in body.get("messages", []):
        for call in msg.get("tool_calls") or []:
            names[call.get("id")] = call.get("function", {}).get("name")
    out: dict[str, Any] = {}
    for msg in body.get("messages", []):
        if msg.get("role") == "tool":
            content = msg.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
            try:
                value = json.loads(content)
            except (TypeError, ValueError):
                value = content
            out[names.get(msg.get("tool_call_id"))] = value
    return out


# ---------------------------------------------------------------- OpenTelemetry spans in OpenInference conventions
class _Box:
    output: Any = None


class Otlp:
    """One trace: OpenTelemetry SDK spans with OpenInference attributes, written as one OTLP/JSON file."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zn." + service)

    def span(self, name: str, kind: str, input: Any = None, **attrs: Any) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def cm():
            with self.tracer.start_as_current_span(name) as sp:
                sp.set_attribute("openinference.span.kind", kind)
                for k, v in attrs.items():
                    sp.set_attribute(k.replace("__", "."), v)
                if kind == "TOOL":
                    sp.set_attribute("tool.name", name)
                if input is not None:
                    sp.set_attribute("input.value", input if isinstance(input, str) else json.dumps(input))
                    sp.set_attribute("input.mime_type", "text/plain" if isinstance(input, str) else "application/json")
                box = _Box()
                yield box
                if box.output is not None:
                    out = box.output
                    sp.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
                    sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")

        return cm()

    def llm(self, name: str, model: str, system: str, user: str) -> str:
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", "LLM")
            sp.set_attribute("llm.model_name", model)
            sp.set_attribute("llm.provider", "openai")
            for i, (role, content) in enumerate((("system", system), ("user", user))):
                sp.set_attribute(f"llm.input_messages.{i}.message.role", role)
                sp.set_attribute(f"llm.input_messages.{i}.message.content", content)
            sp.set_attribute("input.value", json.dumps({"model": model, "messages": [
                {"role": "system", "content": system}, {"role": "user", "content": user}]}))
            sp.set_attribute("input.mime_type", "application/json")
            reply = chat(model, system, user)
            text = reply.choices[0].message.content
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("output.value", text)
            sp.set_attribute("output.mime_type", "text/plain")
            sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
            sp.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
            sp.set_attribute("llm.token_count.total", reply.usage.total_tokens)
            return text

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        path.write_text(json.dumps(doc))
        self.provider.shutdown()
