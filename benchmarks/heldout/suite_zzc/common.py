"""Truth records, the scripted model brain and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import trajdebug

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault: str
    kind: str
    input: str
    root: tuple[str, int, str]
    failure: tuple[str, int]
    description: str


# ---- one model server, a brain per agent (dispatched on a tag in the system prompt) ----
BRAINS: dict[str, Callable[[Any], Any]] = {}


def brain(tag: str):
    def deco(fn):
        BRAINS[tag] = fn
        return fn

    return deco


def system_text(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    if "messages" in body:
        for m in body["messages"]:
            if m.get("role") in ("system", "developer"):
                c = m.get("content")
                return c if isinstance(c, str) else json.dumps(c)
    return str(body.get("instructions") or "")


def policy(request: Any) -> Any:
    sys_text = system_text(request.body)
    m = re.search(r"\[agent:([a-z0-9_\-]+)\]", sys_text)
    if not m or m.group(1) not in BRAINS:
        raise RuntimeError(f"no brain for system prompt {sys_text[:80]!r}")
    return BRAINS[m.group(1)](request.body)


def last_user(body: dict) -> str:
    for m in reversed(body.get("messages", [])):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def tool_results(body: dict) -> list[tuple[str, str]]:
    """(tool name, content) of every tool message so far, in order."""
    names: dict[str, str] = {}
    out = []
    for m in body.get("messages", []):
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            c = m.get("content")
            out.append((names.get(m.get("tool_call_id"), "?"), c if isinstance(c, str) else json.dumps(c)))
    return out


# ---- checks ----
def load(path: Path) -> list[Any]:
    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, getattr(s, "source_index", 0) or 0))


def find(run: Any, name: str, occ: int) -> tuple[int, Any]:
    seq = ordered(run)
    hits = [(i, s) for i, s in enumerate(seq) if s.name == name]
    assert len(hits) >= occ, f"{name} #{occ} not in run (found {len(hits)}): {[s.name for s in seq]}"
    return hits[occ - 1]


def check_case(c: Case, failed_p: Path, control_p: Path, refs_p: Path) -> int:
    [failed] = load(failed_p)
    assert failed.outcome == "failure", (c.case, failed.outcome)
    [control] = load(control_p)
    assert control.outcome == "success", (c.case, "control", control.outcome)
    runs = load(refs_p)
    assert len(runs) == 5, (c.case, len(runs))
    assert sum(r.outcome == "failure" for r in runs) == 1, (c.case, [r.outcome for r in runs])
    assert sum(r.outcome == "success" for r in runs) == 4
    ri, rs = find(failed, c.root[0], c.root[1])
    assert rs.kind == c.root[2], (c.case, rs.kind, c.root)
    fi, fs = find(failed, c.failure[0], c.failure[1])
    assert fs.start_ns > rs.start_ns and fi > ri, (c.case, "failure before root")
    for p in (failed_p, control_p, refs_p):
        txt = p.read_text()
        hit = FORBIDDEN.search(txt)
        assert not hit, (c.case, p.name, txt[max(0, hit.start() - 80): hit.end() + 40])
    return fi - ri


def truth(c: Case, agent: Any, hops: int) -> dict:
    return {
        "case": c.case,
        "agent": agent.NAME,
        "route": agent.ROUTE,
        "fault_kind": c.kind,
        "root": {"name": c.root[0], "occurrence": c.root[1], "kind": c.root[2]},
        "failure": {"name": c.failure[0], "occurrence": c.failure[1]},
        "hops": hops,
        "description": c.description,
    }


# ---- OTLP recording helpers (OpenTelemetry SDK, OpenInference attribute names) ----
class Otel:
    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.tracer = self.provider.get_tracer(service)

    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any):
        a = {"openinference.span.kind": kind}
        if inp is not None:
            a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp)
            a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
        a.update(attrs)
        return self.tracer.start_as_current_span(name, attributes=a)

    @staticmethod
    def out(sp: Any, value: Any) -> Any:
        sp.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value))
        sp.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value

    def llm(self, name: str, client: Any, system: str, payload: dict) -> str:
        user = json.dumps(payload)
        attrs = {"llm.model_name": "fake-model", "llm.input_messages.0.message.role": "system",
                 "llm.input_messages.0.message.content": system, "llm.input_messages.1.message.role": "user",
                 "llm.input_messages.1.message.content": user}
        with self.span(name, "LLM", None, **attrs) as sp:
            r = client.chat.completions.create(model="fake-model", messages=[
                {"role": "system", "content": system}, {"role": "user", "content": user}])
            text = r.choices[0].message.content
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens if r.usage else 0)
            sp.set_attribute("llm.token_count.completion", r.usage.completion_tokens if r.usage else 0)
            return text

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        Path(path).write_text(json.dumps(MessageToDict(encode_spans(self.spans.get_finished_spans()))))
