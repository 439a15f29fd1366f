"""Truth records, the fake model plumbing and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import trajdebug
from trajdebug.testing import FakeModelServer, Reply

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    agent: str
    fault_kind: str
    root: str
    root_occurrence: int
    failure: str
    description: str
    main_input: str  # key of the agent's input the case runs on


def last_user(body: dict) -> str:
    """The text of the last user (or tool) message of a Chat Completions or Responses request."""
    if "messages" in body:
        for m in reversed(body["messages"]):
            if m.get("role") in ("user", "tool"):
                c = m.get("content")
                return c if isinstance(c, str) else json.dumps(c)
        return ""
    items = body.get("input")
    if isinstance(items, str):
        return items
    for it in reversed(items or []):
        if it.get("type") == "function_call_output":
            return str(it.get("output"))
        if it.get("role") == "user":
            c = it.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return str(c)
    return ""


def system_text(body: dict) -> str:
    if "messages" in body:
        for m in body["messages"]:
            if m.get("role") in ("system", "developer"):
                return str(m.get("content"))
        return ""
    return str(body.get("instructions") or "")


def tool_outputs(body: dict) -> list[str]:
    """Every tool result the request carries, oldest first."""
    if "messages" in body:
        return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]
    return [str(it.get("output")) for it in body.get("input") or [] if isinstance(it, dict)
            and it.get("type") == "function_call_output"]


class ModelHub:
    """One fake model server for the whole generation; each agent installs its policy."""

    def __init__(self) -> None:
        self.server = FakeModelServer()
        self.policies: dict[str, Callable[[dict], Any]] = {}

    def __enter__(self) -> "ModelHub":
        self.server.start()
        self.server.use(self._answer)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.stop()

    def register(self, tag: str, policy: Callable[[dict], Any]) -> None:
        self.policies[tag] = policy

    def _answer(self, request: Any) -> Any:
        body = request.body or {}
        sys_text = system_text(body)
        for tag, policy in self.policies.items():
            if f"[{tag}]" in sys_text:
                return policy(body)
        return Reply(status=400, error="no desk configured for this system prompt")

    @property
    def base_url(self) -> str:
        return self.server.base_url


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(steps: list[Any], name: str, occurrence: int) -> tuple[int, Any]:
    n = 0
    for i, s in enumerate(steps):
        if s.name == name:
            n += 1
            if n == occurrence:
                return i, s
    raise AssertionError(f"step {name!r} #{occurrence} not in the run (has {n})")


def failure_step(steps: list[Any], name: str) -> tuple[int, int, Any]:
    """The erroring step of that name: (index, occurrence, step)."""
    n = 0
    hit = None
    for i, s in enumerate(steps):
        if s.name == name:
            n += 1
            if s.status == "error" and hit is None:
                hit = (i, n, s)
    if hit is None:
        raise AssertionError(f"no erroring step named {name!r}")
    return hit


def check_words(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    if m:
        raise AssertionError(f"{path}: recorded text holds {text[max(0, m.start()-60):m.end()+60]!r}")


def truth_for(case: Case, route: str, failed_path: Path) -> dict:
    runs = load(failed_path, route)
    assert len(runs) == 1, f"{failed_path}: {len(runs)} runs"
    run = runs[0]
    assert run.outcome == "failure", f"{case.case}: outcome {run.outcome}"
    steps = ordered(run)
    ri, root = find(steps, case.root, case.root_occurrence)
    fi, focc, fstep = failure_step(steps, case.failure)
    assert fstep.start_ns > root.start_ns or fi > ri, f"{case.case}: failure does not start after root"
    assert fi > ri, f"{case.case}: failure index {fi} <= root index {ri}"
    return {
        "case": case.case,
        "agent": case.agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root, "occurrence": case.root_occurrence, "kind": root.kind},
        "failure": {"name": case.failure, "occurrence": focc},
        "hops": fi - ri,
        "description": case.description,
    }


def check_success(path: Path, route: str, expect: int) -> None:
    runs = load(path, route)
    assert len(runs) == expect, f"{path}: {len(runs)} runs, expected {expect}"
    for r in runs:
        assert r.outcome == "success", f"{path}: run {r.run_id} outcome {r.outcome} ({r.failure_reason})"


def check_refs(path: Path, route: str) -> None:
    runs = load(path, route)
    outs = sorted(r.outcome for r in runs)
    assert len(runs) == 5 and outs.count("failure") == 1 and outs.count("success") == 4, f"{path}: {outs}"


def merge(failed: Path, refs: Path, out: Path, route: str) -> None:
    if route == "otlp":
        a = json.loads(failed.read_text())
        b = json.loads(refs.read_text())
        out.write_text(json.dumps({"resourceSpans": a["resourceSpans"] + b["resourceSpans"]}))
    else:
        out.write_text(failed.read_text() + refs.read_text())


def sdk_chat(client: Any, name: str, system: str, user: str, deps: list | None = None) -> str:
    """One recorded model call of the SDK route (messages in, the assistant's message out)."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    with trajdebug.step(name, kind="llm", input={"messages": messages}, deps=deps or []) as s:
        r = client.chat.completions.create(model="desk-model", messages=messages)
        text = r.choices[0].message.content or ""
        s.output = {"role": "assistant", "content": text}
        s.usage(model=r.model, prompt_tokens=r.usage.prompt_tokens, completion_tokens=r.usage.completion_tokens)
    return text


def user_json(body: dict) -> Any:
    try:
        return json.loads(last_user(body))
    except (TypeError, ValueError):
        return {}


def history(body: dict) -> list[tuple[str, dict, str]]:
    """Tool calls made so far in a Chat Completions conversation: (name, arguments, result text)."""
    msgs = body.get("messages") or []
    results = {m.get("tool_call_id"): str(m.get("content")) for m in msgs if m.get("role") == "tool"}
    out = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function", {})
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            out.append((fn.get("name"), args, results.get(tc.get("id"), "")))
    return out


def first_user(body: dict) -> str:
    for m in body.get("messages") or []:
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def oa_model(client: Any) -> Any:
    from agents import OpenAIChatCompletionsModel

    return OpenAIChatCompletionsModel(model="desk-model", openai_client=client)


def oa_run(build: Callable[[Any], Any], text: str, base_url: str, workflow: str) -> None:
    """Run an Agents SDK agent against the local model server, closing the client inside the loop."""
    import asyncio

    from agents import RunConfig, Runner
    from openai import AsyncOpenAI

    async def main() -> None:
        client = AsyncOpenAI(base_url=base_url, api_key="local", max_retries=0)
        try:
            await Runner.run(build(client), text, max_turns=14, run_config=RunConfig(workflow_name=workflow))
        finally:
            await client.close()

    asyncio.run(main())


class OISpans:
    """OpenTelemetry SDK spans with OpenInference attributes, written as one OTLP/JSON file per run."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("field-ops")

    def span(self, name: str, kind: str, value: Any = None, **attrs: Any) -> "_OISpan":
        return _OISpan(self, name, kind, value, attrs)

    def llm(self, client: Any, name: str, system: str, user: str) -> str:
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        with self.span(name, "LLM", {"messages": messages}) as s:
            for i, m in enumerate(messages):
                s.raw.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                s.raw.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            r = client.chat.completions.create(model="desk-model", messages=messages)
            text = r.choices[0].message.content or ""
            s.raw.set_attribute("llm.model_name", r.model)
            s.raw.set_attribute("llm.output_messages.0.message.role", "assistant")
            s.raw.set_attribute("llm.output_messages.0.message.content", text)
            s.raw.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
            s.raw.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
            s.output = text
        return text

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        spans = sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time)
        doc = MessageToDict(encode_spans(spans))
        if path.exists():
            old = json.loads(path.read_text())
            doc = {"resourceSpans": old["resourceSpans"] + doc["resourceSpans"]}
        path.write_text(json.dumps(doc))
        self.provider.shutdown()


class _OISpan:
    def __init__(self, owner: OISpans, name: str, kind: str, value: Any, attrs: dict) -> None:
        self.owner, self.name, self.kind, self.value, self.attrs = owner, name, kind, value, attrs
        self.output: Any = None

    def __enter__(self) -> "_OISpan":
        self._cm = self.owner.tracer.start_as_current_span(self.name)
        self.raw = self._cm.__enter__()
        self.raw.set_attribute("openinference.span.kind", self.kind)
        for k, v in self.attrs.items():
            self.raw.set_attribute(k, v)
        if self.value is not None:
            self.raw.set_attribute("input.value", self.value if isinstance(self.value, str) else json.dumps(self.value))
            self.raw.set_attribute("input.mime_type", "text/plain" if isinstance(self.value, str) else "application/json")
        return self

    def __exit__(self, *exc: Any) -> Any:
        if self.output is not None:
            out = self.output if isinstance(self.output, str) else json.dumps(self.output)
            self.raw.set_attribute("output.value", out)
            self.raw.set_attribute("output.mime_type", "text/plain" if isinstance(self.output, str) else "application/json")
        return self._cm.__exit__(*exc)
