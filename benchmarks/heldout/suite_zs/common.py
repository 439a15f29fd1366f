"""Truth records, shared plumbing (model calls, OTLP writing) and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault_id: str
    fault_kind: str
    inp: str  # key of the agent's INPUTS
    root: str
    root_occ: int
    root_kind: str
    failure: str
    failure_occ: int
    description: str


# ---------------------------------------------------------------- model plumbing
def request_task(request: Any) -> tuple[str, Any]:
    """The task named in the system message and the JSON payload of the last user message."""
    msgs = (request.body or {}).get("messages") or []
    task, payload = "", None
    for m in msgs:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        if m.get("role") == "system" and content:
            found = re.search(r"TASK=(\w+)", content)
            if found:
                task = found.group(1)
        if m.get("role") == "user" and content:
            try:
                payload = json.loads(content)
            except ValueError:
                payload = content
    return task, payload


def json_policy(handlers: dict) -> Any:
    def policy(request: Any) -> str:
        task, payload = request_task(request)
        return json.dumps(handlers[task](payload), sort_keys=True)

    return policy


def ask(client: Any, agent: str, task: str, payload: Any) -> dict:
    reply = client.chat.completions.create(
        model="fake-model",
        messages=[
            {"role": "system", "content": f"You are the {agent} assistant. TASK={task}. Answer with JSON only."},
            {"role": "user", "content": json.dumps(payload, sort_keys=True)},
        ],
    )
    return json.loads(reply.choices[0].message.content)


# ---------------------------------------------------------------- OTLP writing
def otlp_append(dest: Path, spans: Any) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans))
    if dest.exists():
        old = json.loads(dest.read_text())
        old["resourceSpans"].extend(doc["resourceSpans"])
        doc = old
    dest.write_text(json.dumps(doc))


# ---------------------------------------------------------------- checks
def load(path: Path) -> list:
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(run: Any, name: str, occ: int) -> Any:
    same = [s for s in ordered(run) if s.name == name]
    assert len(same) >= occ, f"{run.name}: step {name!r} #{occ} not found ({len(same)} recorded)"
    return same[occ - 1]


def check_case(case: Case, agent: Any, folder: Path, ext: str) -> int:
    failed = load(folder / f"failed.{ext}")
    control = load(folder / f"control.{ext}")
    refs = load(folder / f"with_refs.{ext}")
    assert len(failed) == 1 and failed[0].outcome == "failure", (case.case, [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (case.case, [r.outcome for r in control])
    outcomes = sorted(r.outcome for r in refs)
    assert outcomes == ["failure"] + ["success"] * 4, (case.case, outcomes)
    assert {r.name for r in refs} == {failed[0].name}, (case.case, {r.name for r in refs})
    run = failed[0]
    root = find(run, case.root, case.root_occ)
    assert root.kind == case.root_kind, (case.case, root.kind, case.root_kind)
    fail = find(run, case.failure, case.failure_occ)
    assert fail.start_ns > root.start_ns, (case.case, "failure step does not start after the root")
    assert fail.status == "error", (case.case, case.failure, fail.status)
    steps = ordered(run)
    ids = [s.step_id for s in steps]
    for name in ("failed", "control", "with_refs"):
        text = (folder / f"{name}.{ext}").read_text()
        hit = FORBIDDEN.search(text)
        assert hit is None, (case.case, name, text[max(0, hit.start() - 80) : hit.end() + 80])
    return ids.index(fail.step_id) - ids.index(root.step_id)


# ---------------------------------------------------------------- Agents SDK plumbing
def conversation(request: Any) -> tuple[str, str, dict]:
    """(task from the system message, the first user text, {tool name: parsed latest result})."""
    msgs = (request.body or {}).get("messages") or []
    task, user, names, results = "", "", {}, {}
    for m in msgs:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        if m.get("role") == "system" and content and not task:
            found = re.search(r"TASK=(\w+)", content)
            task = found.group(1) if found else ""
        elif m.get("role") == "user" and content and not user:
            user = content
        elif m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                names[call["id"]] = call["function"]["name"]
        elif m.get("role") == "tool":
            try:
                value = json.loads(content)
            except (TypeError, ValueError):
                value = content
            results[names.get(m.get("tool_call_id"), "?")] = value
    return task, user, results


def agents_model(server: Any) -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return OpenAIChatCompletionsModel(model="fake-model", openai_client=client), client


# ---------------------------------------------------------------- OpenInference spans
class Spans:
    """OpenTelemetry spans in the OpenInference conventions, kept in memory until `save`."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer(service)
        self.service = service

    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def cm() -> Any:
            base = {"openinference.span.kind": kind, **attrs}
            if inp is not None:
                base["input.value"] = json.dumps(inp, sort_keys=True)
                base["input.mime_type"] = "application/json"
            with self.tracer.start_as_current_span(name, attributes=base) as sp:
                box: dict = {}
                yield box
                if "out" in box:
                    sp.set_attribute("output.value", json.dumps(box["out"], sort_keys=True))
                    sp.set_attribute("output.mime_type", "application/json")

        return cm()

    def llm(self, name: str, client: Any, task: str, payload: Any) -> dict:
        system = f"You are the {self.service} assistant. TASK={task}. Answer with JSON only."
        user = json.dumps(payload, sort_keys=True)
        attrs = {"llm.model_name": "fake-model", "llm.system": "openai",
                 "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": system,
                 "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": user}
        with self.tracer.start_as_current_span(name, attributes={"openinference.span.kind": "LLM", **attrs}) as sp:
            reply = client.chat.completions.create(model="fake-model", messages=[
                {"role": "system", "content": system}, {"role": "user", "content": user}])
            text = reply.choices[0].message.content
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            if reply.usage:
                sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
                sp.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
            return json.loads(text)

    def save(self, dest: Path) -> None:
        otlp_append(dest, self.exporter.get_finished_spans())
