"""Truth records, the shared fake model server and the generator's checks (suite_zzb)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from trajdebug.testing import FakeModelServer, Reply, Request

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    agent: str
    route: str
    fault_kind: str
    fault_id: str
    input_key: str
    root_name: str
    root_occurrence: int
    root_kind: str
    failure_name: str
    description: str


# ---------------------------------------------------------------- the model server
POLICIES: dict[str, Callable[[Request], Any]] = {}


def policy(model: str):
    def register(fn):
        POLICIES[model] = fn
        return fn
    return register


def _dispatch(request: Request) -> Any:
    body = request.body or {}
    model = body.get("model", "")
    return POLICIES[model](request)


_SERVER: FakeModelServer | None = None


def server() -> FakeModelServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = FakeModelServer(_dispatch).start()
    return _SERVER


def messages_of(request: Request) -> list[dict]:
    body = request.body or {}
    if "messages" in body:
        return body["messages"]
    out = []
    for item in body.get("input", []) if isinstance(body.get("input"), list) else []:
        out.append(item)
    return out


def last_user_json(request: Request) -> dict:
    for m in reversed(messages_of(request)):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            try:
                return json.loads(content)
            except (TypeError, ValueError):
                return {"text": content}
    return {}


def tool_results(request: Request) -> list[tuple[str, str]]:
    """(tool name, content) of every tool result in the conversation, in order."""
    names: dict[str, str] = {}
    out = []
    for m in messages_of(request):
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id"), "?"), m.get("content") or ""))
    return out


def chat(model: str, system: str, payload: dict) -> str:
    """One Chat Completions call to the fake server (used by the sdk and otlp agents)."""
    from openai import OpenAI

    client = OpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0)
    reply = client.chat.completions.create(
        model=model,
        messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload, sort_keys=True)}],
    )
    return reply.choices[0].message.content or ""


__all__ = ["Reply"]


# ---------------------------------------------------------------- reading and checking
def load(path: Path) -> list:
    if path.suffix == ".json":
        from trajdebug.sources.formats import import_path

        result = import_path(path, "otlp")
        return list(result.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def locate(run, name: str, occurrence: int):
    same = [s for s in ordered(run) if s.name == name]
    assert len(same) >= occurrence, f"{name} #{occurrence} not in run ({len(same)} found)"
    return same[occurrence - 1]


def check_forbidden(path: Path) -> None:
    text = path.read_text()
    hit = FORBIDDEN.search(text)
    assert hit is None, f"{path}: forbidden word near {text[max(0, hit.start() - 60): hit.end() + 60]!r}"


def truth_for(c: Case, failed_path: Path, control_path: Path, refs_path: Path) -> dict:
    for p in (failed_path, control_path, refs_path):
        check_forbidden(p)
    failed = load(failed_path)
    assert len(failed) == 1, f"{c.case}: {len(failed)} runs in failed file"
    run = failed[0]
    assert run.outcome == "failure", f"{c.case}: failed run outcome {run.outcome}"
    control = load(control_path)
    assert len(control) == 1 and control[0].outcome == "success", f"{c.case}: control {[r.outcome for r in control]}"
    refs = load(refs_path)
    outcomes = sorted(r.outcome for r in refs)
    assert outcomes == ["failure", "success", "success", "success", "success"], f"{c.case}: refs {outcomes}"
    steps = ordered(run)
    errored = [s for s in steps if s.status == "error" and s.name == c.failure_name]
    assert errored, f"{c.case}: no errored step {c.failure_name}: {[(s.name, s.status) for s in steps if s.status == 'error']}"
    fail = errored[0]
    root_occurrence = c.root_occurrence
    if root_occurrence == 0:  # the last step of that name before the failing step (a model's last turn)
        same = [s for s in steps if s.name == c.root_name]
        root_occurrence = max(i for i, s in enumerate(same, 1) if s.start_ns < fail.start_ns)
    root = locate(run, c.root_name, root_occurrence)
    assert root.status == "ok", f"{c.case}: root step raised"
    assert root.kind == c.root_kind, f"{c.case}: root recorded as kind {root.kind}, truth says {c.root_kind}"
    occ = [s.step_id for s in steps if s.name == c.failure_name].index(fail.step_id) + 1
    assert fail.start_ns > root.start_ns, f"{c.case}: failure starts before root"
    hops = steps.index(fail) - steps.index(root)
    assert hops >= 1
    return {
        "case": c.case,
        "agent": c.agent,
        "route": c.route,
        "fault_kind": c.fault_kind,
        "root": {"name": c.root_name, "occurrence": root_occurrence, "kind": c.root_kind},
        "failure": {"name": c.failure_name, "occurrence": occ},
        "hops": hops,
        "description": c.description,
    }


# ---------------------------------------------------------------- OpenTelemetry + OpenInference (otlp route)
class OtlpRecorder:
    """One run as OpenTelemetry spans with OpenInference attributes, written as OTLP/JSON."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zzb.agents")

    def span(self, name: str, kind: str, value: Any = None, **attrs: Any):
        attributes = {"openinference.span.kind": kind}
        if value is not None:
            attributes["input.value"] = json.dumps(value, sort_keys=True)
            attributes["input.mime_type"] = "application/json"
        if kind == "TOOL":
            attributes["tool.name"] = name
        attributes.update(attrs)
        return self.tracer.start_as_current_span(name, attributes=attributes)

    @staticmethod
    def output(span, value: Any) -> Any:
        span.set_attribute("output.value", json.dumps(value, sort_keys=True))
        span.set_attribute("output.mime_type", "application/json")
        return value

    def llm(self, name: str, model: str, system: str, payload: dict) -> str:
        user = json.dumps(payload, sort_keys=True)
        with self.span(name, "LLM", None, **{
            "llm.model_name": model, "llm.provider": "openai",
            "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": system,
            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": user,
            "input.value": json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}),
            "input.mime_type": "application/json"}) as s:
            text = chat(model, system, payload)
            s.set_attribute("llm.output_messages.0.message.role", "assistant")
            s.set_attribute("llm.output_messages.0.message.content", text)
            s.set_attribute("output.value", text)
            return text

    def write(self, path: str) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        Path(path).write_text(json.dumps(doc))
        self.provider.shutdown()
