"""Truth records and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import trajdebug

BANNED = ("fault", "bug", "wrong", "stale", "planted", "inject", "corrupt")
KINDS = (
    "lossy_parsing", "unit_error", "bad_memory_write", "hallucinated_value", "stale_data",
    "wrong_tool_args", "tool_ignores_argument", "truncated_result", "format_drift", "wrong_routing",
    "subagent_wrong_entity", "off_by_one", "context_pollution", "plan_error", "wrong_retrieval",
    "swallowed_error",
)


@dataclass(frozen=True)
class Case:
    case: str
    fault_kind: str
    root: str
    root_occ: int
    failure: str
    failure_occ: int
    input_key: str
    description: str


def load(path: Path, route: str) -> list:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(Path(path), "otlp")
        return list(res.runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns, getattr(s, "source_index", 0) or 0))


def find(run, name: str, occ: int):
    same = [s for s in ordered(run) if s.name == name]
    return same[occ - 1] if len(same) >= occ else None


def banned_words(text: str) -> list[str]:
    return sorted({w for w in re.findall(r"[A-Za-z]+", text) if w.lower().startswith(BANNED)})


def check_case(case: Case, agent: str, route: str, failed: Path, control: Path, with_refs: Path) -> dict:
    [frun] = load(failed, route)
    assert frun.outcome == "failure", (case.case, frun.outcome)
    [crun] = load(control, route)
    assert crun.outcome == "success", (case.case, crun.outcome, getattr(crun, "failure_reason", None))
    runs = load(with_refs, route)
    assert len(runs) == 5, (case.case, len(runs))
    assert sorted(r.outcome for r in runs) == ["failure"] + ["success"] * 4, (case.case, [r.outcome for r in runs])
    root = find(frun, case.root, case.root_occ)
    assert root is not None, (case.case, "root missing", case.root, case.root_occ, [s.name for s in ordered(frun)])
    fail = find(frun, case.failure, case.failure_occ)
    assert fail is not None, (case.case, "failure missing", case.failure, [s.name for s in ordered(frun)])
    assert fail.start_ns > root.start_ns, (case.case, "failure not after root")
    seq = ordered(frun)
    hops = seq.index(fail) - seq.index(root)
    for p in (failed, control, with_refs):
        bad = banned_words(Path(p).read_text())
        assert not bad, (case.case, p.name, bad)
    return {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root, "occurrence": case.root_occ, "kind": root.kind},
        "failure": {"name": case.failure, "occurrence": case.failure_occ},
        "hops": hops,
        "description": case.description,
    }


def dump(obj, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


_CLIENTS: dict = {}


def chat(base_url: str, prompt: str, system: str = "You are a careful operations assistant.") -> str:
    """One chat completion against the model server (the official openai client)."""
    from openai import OpenAI

    client = _CLIENTS.get(base_url)
    if client is None:
        client = _CLIENTS[base_url] = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    reply = client.chat.completions.create(
        model="ops-model", messages=[{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    )
    return reply.choices[0].message.content or ""


def last_user(request) -> str:
    body = request.body or {}
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return json.dumps(body.get("input", ""))


class OtlpTrace:
    """OpenTelemetry SDK spans with OpenInference attributes, written as one OTLP/JSON envelope."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    def span(self, name: str, kind: str, inp=None, **attrs):
        a = {"openinference.span.kind": kind}
        if inp is not None:
            a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp)
            a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
        a.update(attrs)
        return self.tracer.start_as_current_span(name, attributes=a)

    @staticmethod
    def output(span, value) -> None:
        span.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value))
        span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")

    def llm(self, name: str, base_url: str, system: str, prompt: str, agent: str | None = None) -> str:
        attrs = {"llm.model_name": "ops-model", "llm.system": "openai",
                 "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": system,
                 "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": prompt}
        if agent:
            attrs["agent.name"] = agent
        with self.span(name, "LLM", json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": prompt}]}), **attrs) as sp:
            text = chat(base_url, prompt, system)
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("llm.token_count.prompt", len(prompt) // 4)
            sp.set_attribute("llm.token_count.completion", len(text) // 4)
            self.output(sp, text)
        return text

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        env = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        Path(path).write_text(json.dumps(env))
        self.provider.shutdown()
