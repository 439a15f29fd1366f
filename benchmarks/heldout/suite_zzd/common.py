"""Truth records and the generator's checks."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trajdebug

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    id: str
    fault_kind: str
    fault_id: str
    main_input: str
    root_name: str
    root_occurrence: int
    failure_name: str
    failure_occurrence: int
    description: str


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        result = import_path(path, "otlp")
        return list(result.runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(steps: list[Any], name: str, occurrence: int) -> tuple[int, Any]:
    seen = 0
    for i, s in enumerate(steps):
        if s.name == name:
            seen += 1
            if seen == occurrence:
                return i, s
    raise AssertionError(f"step {name!r} #{occurrence} not in run (names: {sorted({s.name for s in steps})})")


def check_words(path: Path) -> None:
    text = path.read_text()
    hit = FORBIDDEN.search(text)
    if hit:
        start = max(0, hit.start() - 80)
        raise AssertionError(f"{path}: forbidden word {hit.group(0)!r} in {text[start:hit.end() + 80]!r}")


def check_case(case: Case, agent: str, route: str, folder: Path, ext: str) -> dict:
    failed_p, control_p, refs_p = (folder / f"{n}.{ext}" for n in ("failed", "control", "with_refs"))
    for p in (failed_p, control_p, refs_p):
        check_words(p)
    [failed] = load(failed_p, route)
    [control] = load(control_p, route)
    assert failed.outcome == "failure", f"{case.id}: failed run outcome {failed.outcome}"
    assert control.outcome == "success", f"{case.id}: control outcome {control.outcome} ({control.failure_reason})"
    refs = load(refs_p, route)
    assert len(refs) == 5, f"{case.id}: with_refs holds {len(refs)} runs"
    outcomes = sorted(r.outcome for r in refs)
    assert outcomes == ["failure", "success", "success", "success", "success"], f"{case.id}: {outcomes}"
    assert len({r.name for r in refs}) == 1, f"{case.id}: run names differ {[r.name for r in refs]}"
    steps = ordered(failed)
    ri, root = find(steps, case.root_name, case.root_occurrence)
    fi, fail = find(steps, case.failure_name, case.failure_occurrence)
    assert fi > ri and fail.start_ns > root.start_ns, f"{case.id}: failure step does not start after the root"
    assert fail.status == "error", f"{case.id}: failure step {fail.name} has status {fail.status}"
    assert root.status != "error", f"{case.id}: root step raised"
    csteps = ordered(control)
    try:
        _, croot = find(csteps, case.root_name, case.root_occurrence)
        same = croot.output == root.output and croot.input == root.input
    except AssertionError:
        same = False
    assert not same, f"{case.id}: root step {case.root_name} is the same in control and failed runs"
    return {
        "case": case.id,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root_name, "occurrence": case.root_occurrence, "kind": root.kind},
        "failure": {"name": case.failure_name, "occurrence": case.failure_occurrence},
        "hops": fi - ri,
        "description": case.description,
    }


def tool_history(messages: list[dict]) -> list[tuple[str, dict, str]]:
    """(tool name, arguments, result text) for each answered tool call in a Chat Completions conversation."""
    calls: dict[str, tuple[str, dict]] = {}
    out = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            calls[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool" and m.get("tool_call_id") in calls:
            name, args = calls[m["tool_call_id"]]
            content = m["content"]
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content)
            out.append((name, args, content))
    return out


class OtlpRecording:
    """OpenTelemetry spans of one run (the `openai` client instrumented by OpenInference), written to one
    OTLP/JSON file ({"resourceSpans": [...]}) when the block ends."""

    def __init__(self, path: Path, service: str) -> None:
        self.path, self.service = Path(path), service

    def __enter__(self):
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": self.service}))
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=provider)
        return provider.get_tracer(self.service)

    def __exit__(self, *exc) -> bool:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.instrumentor.uninstrument()
        envelope = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        self.path.write_text(json.dumps({"resourceSpans": envelope.get("resourceSpans", [])}))
        return False


def span_io(span, kind: str, value_in: Any = None, value_out: Any = None) -> None:
    """OpenInference attributes of a span of ours: its kind, input and output as JSON."""
    span.set_attribute("openinference.span.kind", kind)
    if value_in is not None:
        span.set_attribute("input.value", json.dumps(value_in))
        span.set_attribute("input.mime_type", "application/json")
    if value_out is not None:
        span.set_attribute("output.value", json.dumps(value_out))
        span.set_attribute("output.mime_type", "application/json")
