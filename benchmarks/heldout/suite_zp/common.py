"""Truth records, the fake-model plumbing the agents share, and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)

KINDS = (
    "lossy_parsing", "unit_error", "bad_memory_write", "hallucinated_value", "stale_data", "wrong_tool_args",
    "tool_ignores_argument", "truncated_result", "format_drift", "wrong_routing", "subagent_wrong_entity",
    "off_by_one", "context_pollution", "plan_error", "wrong_retrieval", "swallowed_error",
)


@dataclass(frozen=True)
class Case:
    case: str
    fault_kind: str
    main_input: str
    root: tuple[str, int]
    failure: tuple[str, int]
    description: str


class ApiError(Exception):
    """An HTTP error answered by a booking, order or registry API (status and JSON body)."""

    def __init__(self, status: int, body: dict[str, Any]) -> None:
        self.status = status
        self.body = body
        super().__init__(f"HTTP {status}: {json.dumps(body, sort_keys=True)}")


def last_user_json(body: dict[str, Any]) -> dict[str, Any]:
    """The JSON payload of the last user message of a chat-completions request (the agents' prompts)."""
    for m in reversed(body.get("messages") or []):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
            try:
                return json.loads(c)
            except (TypeError, ValueError):
                return {"text": c}
    return {}


def chat_json(client: Any, system: str, payload: dict[str, Any]) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Ask the model (a chat-completions client) with a JSON payload; return the messages sent and the
    decoded JSON answer."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}]
    resp = client.chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
    return messages, json.loads(resp.choices[0].message.content)


# ---------------------------------------------------------------------------------------------------------
# checks


def load(path: Path) -> list[Any]:
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(run: Any, name: str, occurrence: int) -> Any:
    same = [s for s in ordered(run) if s.name == name]
    if len(same) < occurrence:
        raise AssertionError(f"{run.name}: step {name!r} #{occurrence} not found ({len(same)} recorded)")
    return same[occurrence - 1]


def check_forbidden(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    if m:
        raise AssertionError(f"{path}: forbidden word {text[max(0, m.start() - 60): m.end() + 60]!r}")


def check_case(case: Case, agent: Any, folder: Path, ext: str) -> dict[str, Any]:
    failed_runs = load(folder / f"failed.{ext}")
    control_runs = load(folder / f"control.{ext}")
    refs = load(folder / f"with_refs.{ext}")
    assert len(failed_runs) == 1 and len(control_runs) == 1, (case.case, len(failed_runs), len(control_runs))
    failed, control = failed_runs[0], control_runs[0]
    assert failed.outcome == "failure", (case.case, failed.outcome)
    assert control.outcome == "success", (case.case, control.outcome, control.failure_reason)
    assert len(refs) == 5, (case.case, len(refs))
    assert sum(r.outcome == "failure" for r in refs) == 1, case.case
    assert all(r.outcome == "success" for r in refs if r.run_id != failed.run_id), case.case
    assert len({r.name for r in refs}) == 1, (case.case, {r.name for r in refs})
    root = find(failed, *case.root)
    fail = find(failed, *case.failure)
    assert fail.start_ns > root.start_ns, (case.case, "failure starts before root")
    assert root.status != "error", (case.case, "root raised")
    croot = find(control, *case.root)
    assert json.dumps(croot.output, sort_keys=True, default=str) != json.dumps(root.output, sort_keys=True, default=str), (
        case.case, "root output equals the control's"
    )
    _first_divergence(case, failed, control, root)
    assert fail.status == "error", (case.case, "failure step recorded no error", fail.name)
    steps = ordered(failed)
    hops = steps.index(fail) - steps.index(root)
    for name in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
        check_forbidden(folder / name)
    return {
        "case": case.case,
        "agent": agent.NAME,
        "route": agent.ROUTE,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root[0], "occurrence": case.root[1], "kind": root.kind},
        "failure": {"name": case.failure[0], "occurrence": case.failure[1]},
        "hops": hops,
        "description": case.description,
    }


_VOLATILE = re.compile(r"call_\d+_\d+|chatcmpl-\w+|resp_\w+|\b[0-9a-f]{16,}\b|\d{10,}")


def _norm(value: Any) -> str:
    return _VOLATILE.sub("#", json.dumps(value, sort_keys=True, default=str))


def _first_divergence(case: Case, failed: Any, control: Any, root: Any) -> None:
    """Every step that ended before the root started answered as in the control run (same input)."""
    seen: dict[str, int] = {}
    ctrl: dict[tuple[str, int], Any] = {}
    for s in ordered(control):
        seen[s.name] = seen.get(s.name, 0) + 1
        ctrl[(s.name, seen[s.name])] = s
    seen = {}
    for s in ordered(failed):
        seen[s.name] = seen.get(s.name, 0) + 1
        if s is root:
            return
        if s.end_ns is None or s.end_ns > root.start_ns:
            continue
        c = ctrl.get((s.name, seen[s.name]))
        if c is None or _norm(c.output) != _norm(s.output):
            raise AssertionError(f"{case.case}: {s.name} #{seen[s.name]} differs from the control before the root")


# ---------------------------------------------------------------------------------------------------------
# OpenTelemetry spans with OpenInference attributes, written as one OTLP/JSON file per run


class OtelRun:
    """A tracer of its own (in-memory exporter) for one run; `write(path)` dumps the OTLP/JSON envelope."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zp.agents")

    def span(self, name: str, kind: str, value: Any = None, **attrs: Any) -> Any:
        a = {"openinference.span.kind": kind, **attrs}
        if value is not None:
            a["input.value"] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            a["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
        return self.tracer.start_as_current_span(name, attributes=a)

    @staticmethod
    def output(span: Any, value: Any) -> Any:
        span.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value, sort_keys=True))
        span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value

    def llm(self, name: str, client: Any, system: str, payload: dict[str, Any]) -> dict[str, Any]:
        with self.span(name, "LLM") as sp:
            messages, answer = chat_json(client, system, payload)
            sp.set_attribute("llm.model_name", "gpt-4o-mini")
            sp.set_attribute("llm.provider", "openai")
            sp.set_attribute("input.value", json.dumps({"messages": messages}))
            sp.set_attribute("input.mime_type", "application/json")
            for i, m in enumerate(messages):
                sp.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                sp.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            text = json.dumps(answer)
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("output.value", text)
            sp.set_attribute("output.mime_type", "application/json")
            return answer

    def retrieved(self, span: Any, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for i, d in enumerate(docs):
            span.set_attribute(f"retrieval.documents.{i}.document.id", d["id"])
            span.set_attribute(f"retrieval.documents.{i}.document.content", d["content"])
        return self.output(span, docs)

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        spans = sorted(self.exporter.get_finished_spans(), key=lambda s: s.start_time)
        doc = MessageToDict(encode_spans(spans))
        Path(path).write_text(json.dumps(doc, indent=1))
        self.provider.shutdown()
