"""Truth records and the generator's checks for suite_zza."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trajdebug

FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    agent: str
    route: str
    fault_kind: str
    input: str
    root: tuple[str, int, str]
    failure: tuple[str, int]
    description: str


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        return list(import_path(path, "otlp").runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps: list[Any], name: str, occurrence: int) -> int:
    hits = [i for i, s in enumerate(steps) if s.name == name]
    if len(hits) < occurrence:
        raise AssertionError(f"step {name!r} #{occurrence} not found; have {len(hits)}: {[s.name for s in steps]}")
    return hits[occurrence - 1]


def check_words(path: Path) -> None:
    text = path.read_text()
    for variant in (text, text.replace("\\n", " ").replace("\\t", " ").replace("_", " ")):
        m = FORBIDDEN.search(variant)
        if m:
            raise AssertionError(f"{path}: forbidden word near {variant[max(0, m.start() - 60): m.end() + 60]!r}")


def check_case(c: Case, folder: Path, ext: str) -> dict[str, Any]:
    failed = load(folder / f"failed.{ext}", c.route)
    control = load(folder / f"control.{ext}", c.route)
    refs = load(folder / f"with_refs.{ext}", c.route)
    assert len(failed) == 1 and failed[0].outcome == "failure", (c.case, [r.outcome for r in failed])
    assert len(control) == 1 and control[0].outcome == "success", (c.case, [r.outcome for r in control])
    assert len(refs) == 5, (c.case, len(refs))
    outcomes = sorted(r.outcome for r in refs)
    assert outcomes == ["failure"] + ["success"] * 4, (c.case, outcomes)
    steps = ordered(failed[0])
    r = find(steps, c.root[0], c.root[1])
    f = find(steps, c.failure[0], c.failure[1])
    assert steps[r].kind == c.root[2], (c.case, steps[r].name, steps[r].kind, c.root)
    assert f > r and steps[f].start_ns >= steps[r].start_ns, (c.case, r, f)
    assert steps[f].status == "error", (c.case, steps[f].name, steps[f].status)
    assert steps[r].status == "ok", (c.case, steps[r].name, "root raised")
    for name in ("failed", "control", "with_refs"):
        check_words(folder / f"{name}.{ext}")
    return {
        "case": c.case,
        "agent": c.agent,
        "route": c.route,
        "fault_kind": c.fault_kind,
        "root": {"name": c.root[0], "occurrence": c.root[1], "kind": c.root[2]},
        "failure": {"name": c.failure[0], "occurrence": c.failure[1]},
        "hops": f - r,
        "description": c.description,
    }


def write_json(path: Path, data: Any) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def client(base_url: str) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0)


def request_text(request: Any) -> tuple[str, str]:
    """(system text, all other message text) of a chat-completions request."""
    msgs = (request.body or {}).get("messages") or []
    system = " ".join(str(m.get("content") or "") for m in msgs if m.get("role") in ("system", "developer"))
    rest = " ".join(str(m.get("content") or "") for m in msgs if m.get("role") not in ("system", "developer"))
    return system, rest


class OtelRecorder:
    """OpenTelemetry SDK spans with OpenInference attributes, written as one OTLP/JSON envelope."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zza")

    def span(self, name: str, kind: str, value: Any = None, **attrs: Any) -> Any:
        a = {"openinference.span.kind": kind}
        if value is not None:
            a["input.value"] = value if isinstance(value, str) else json.dumps(value)
            a["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
        a.update({k: v for k, v in attrs.items() if v is not None})
        return self.tracer.start_as_current_span(name, attributes=a)

    @staticmethod
    def out(span: Any, value: Any) -> Any:
        span.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value))
        span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value

    def llm(self, name: str, llm_client: Any, messages: list, agent: str) -> str:
        attrs: dict[str, Any] = {"llm.model_name": "fake-model", "llm.provider": "openai", "agent.name": agent}
        for i, m in enumerate(messages):
            attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
            attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
        with self.span(name, "LLM", {"messages": messages}, **attrs) as sp:
            reply = llm_client.chat.completions.create(model="fake-model", messages=messages)
            text = reply.choices[0].message.content or ""
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            if reply.usage:
                sp.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
                sp.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
            self.out(sp, text)
        return text

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        data = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        path.write_text(json.dumps({"resourceSpans": data.get("resourceSpans", [])}))
        self.provider.shutdown()
