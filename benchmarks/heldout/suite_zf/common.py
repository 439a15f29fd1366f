"""Truth records and the generator's checks for suite_zf."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = (
    "lossy_parsing", "unit_error", "bad_memory_write", "hallucinated_value", "stale_data", "wrong_tool_args",
    "tool_ignores_argument", "truncated_result", "format_drift", "wrong_routing", "subagent_wrong_entity",
    "off_by_one", "context_pollution", "plan_error", "wrong_retrieval", "swallowed_error",
)
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    """One planted case: the fault id is also the case id."""

    case_id: str
    fault_kind: str
    input_key: str
    root: str
    root_occurrence: int
    failure: str
    failure_occurrence: int
    description: str


def load_runs(path: Path, ext: str) -> list[Any]:
    """Read the runs of a file written by the suite (trajdebug JSONL, or OTLP/JSON)."""
    if ext == "json":
        from trajdebug.sources.formats import import_path

        result = import_path(path, "otlp")
        if result.problems:
            raise AssertionError(f"{path}: {result.problems[:3]}")
        return list(result.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    """The run's steps in the order they started."""
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def nth(steps: list[Any], name: str, occurrence: int) -> Any:
    same = [s for s in steps if s.name == name]
    if len(same) < occurrence:
        raise AssertionError(f"step {name!r} #{occurrence} not found (found {len(same)}): {[s.name for s in steps]}")
    return same[occurrence - 1]


def check_forbidden(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    if m:
        raise AssertionError(f"{path}: forbidden word near {text[max(0, m.start() - 60):m.end() + 60]!r}")


def truth_for(case: Case, agent: str, route: str, failed_path: Path, ext: str) -> dict[str, Any]:
    """Check the failed run against the case and return its truth record."""
    [run] = load_runs(failed_path, ext)
    if run.outcome != "failure":
        raise AssertionError(f"{case.case_id}: failed run outcome {run.outcome}")
    steps = ordered(run)
    root = nth(steps, case.root, case.root_occurrence)
    fail = nth(steps, case.failure, case.failure_occurrence)
    if root.status != "ok" or root.error is not None:
        raise AssertionError(f"{case.case_id}: root step raised or errored")
    if not fail.start_ns > root.start_ns:
        raise AssertionError(f"{case.case_id}: failure step does not start after the root")
    if fail.status == "ok" and fail.error is None:
        raise AssertionError(f"{case.case_id}: failure step {case.failure} carries no error")
    hops = steps.index(fail) - steps.index(root)
    return {
        "case": case.case_id,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root, "occurrence": case.root_occurrence, "kind": root.kind},
        "failure": {"name": case.failure, "occurrence": case.failure_occurrence},
        "hops": hops,
        "description": case.description,
    }


def check_outcomes(path: Path, ext: str, expect: list[str]) -> None:
    runs = load_runs(path, ext)
    got = sorted(r.outcome for r in runs)
    if got != sorted(expect):
        raise AssertionError(f"{path}: outcomes {got}, expected {sorted(expect)}")


def merge(paths: list[Path], out: Path, ext: str) -> None:
    """Write several recorded files as one (JSONL: concatenated; OTLP: one envelope)."""
    if ext == "json":
        spans: list[Any] = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


class Otel:
    """An OpenTelemetry tracer whose spans are kept in memory and written as one OTLP/JSON envelope."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    def span(self, name: str, kind: str, value: Any = None, **attrs: Any) -> Any:
        """Start a span with an OpenInference kind and input value (a context manager)."""
        attributes = {"openinference.span.kind": kind, **attrs}
        if value is not None:
            attributes["input.value"] = value if isinstance(value, str) else json.dumps(value)
            attributes["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
        return self.tracer.start_as_current_span(name, attributes=attributes)

    @staticmethod
    def output(span: Any, value: Any) -> Any:
        span.set_attribute("output.value", value if isinstance(value, str) else json.dumps(value))
        span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        path.write_text(json.dumps(MessageToDict(encode_spans(self.exporter.get_finished_spans()))))


def otel_chat(otel: Otel, client: Any, model: str, name: str, system: str, user: str, **attrs: Any) -> str:
    """One chat completion as an OpenInference LLM span."""
    with otel.span(name, "LLM", user, **{"llm.model_name": model, "llm.system": "openai",
                                         "llm.input_messages.0.message.role": "system",
                                         "llm.input_messages.0.message.content": system,
                                         "llm.input_messages.1.message.role": "user",
                                         "llm.input_messages.1.message.content": user, **attrs}) as span:
        r = client.chat.completions.create(model=model, messages=[{"role": "system", "content": system},
                                                                  {"role": "user", "content": user}])
        text = r.choices[0].message.content
        span.set_attribute("llm.output_messages.0.message.role", "assistant")
        span.set_attribute("llm.output_messages.0.message.content", text)
        span.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
        span.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
        return Otel.output(span, text)
