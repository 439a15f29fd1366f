"""Shared switches and recorders for suite N (held-out, written blind to the analysis)."""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


_ACTIVE: set[str] = set()


@contextlib.contextmanager
def planted(fault_id: str) -> Iterator[None]:
    """Turn one switch on for the runs started in the block."""
    _ACTIVE.add(fault_id)
    try:
        yield
    finally:
        _ACTIVE.discard(fault_id)


def active(fault_id: str) -> bool:
    return fault_id in _ACTIVE


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# ---------------------------------------------------------------- OTLP (OpenInference) plumbing

_OTEL: dict[str, Any] = {}


def otel() -> tuple[Any, Any]:
    """(tracer, exporter): one tracer provider with an in-memory exporter, the openai client instrumented."""
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "suite-n"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL["provider"] = provider
        _OTEL["exporter"] = exporter
        _OTEL["tracer"] = provider.get_tracer("suite-n")
    return _OTEL["tracer"], _OTEL["exporter"]


def write_otlp(spans: list[Any], path: str | Path) -> None:
    """Finished SDK spans -> OTLP/JSON (protobuf JSON mapping, ids in hex as the OTLP/JSON spec says)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    request = encode_spans(spans)
    doc = MessageToDict(request, preserving_proto_field_name=False)
    for rs in doc.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for sp in ss.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if sp.get(key):
                        sp[key] = base64.b64decode(sp[key]).hex()
                for link in sp.get("links", []) or []:
                    for key in ("traceId", "spanId"):
                        if link.get(key):
                            link[key] = base64.b64decode(link[key]).hex()
    Path(path).write_text(json.dumps(doc))


def merge_otlp(paths: list[Path], out: Path) -> None:
    merged: list[Any] = []
    for p in paths:
        merged.extend(json.loads(p.read_text())["resourceSpans"])
    out.write_text(json.dumps({"resourceSpans": merged}))


def cat_files(paths: list[Path], out: Path) -> None:
    with open(out, "w") as fh:
        for p in paths:
            fh.write(p.read_text())


def otlp_span(tracer: Any, name: str, kind: str, inp: Any = None, **attrs: Any):
    """A span with OpenInference kind and input; set the output with `set_out`."""
    attributes = {"openinference.span.kind": kind}
    if inp is not None:
        attributes["input.value"] = inp if isinstance(inp, str) else dumps(inp)
        attributes["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
    attributes.update(attrs)
    return tracer.start_as_current_span(name, attributes=attributes, record_exception=True, set_status_on_exception=True)


def set_out(span: Any, value: Any) -> None:
    span.set_attribute("output.value", value if isinstance(value, str) else dumps(value))
    span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")



# ---------------------------------------------------------------- OpenAI Agents SDK plumbing


def run_agents(agent: Any, text: str, path: str | Path, name: str, task: str, errors: tuple = (Exception,)) -> None:
    """Run an Agents SDK agent against the fake server (Chat Completions), recorded by TrajdebugProcessor."""
    from agents import OpenAIChatCompletionsModel, RunConfig, Runner, set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    client = AsyncOpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)
    model = OpenAIChatCompletionsModel(model=SERVER.model, openai_client=client)
    proc = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([proc])
    try:
        Runner.run_sync(agent, text, max_turns=40, run_config=RunConfig(workflow_name=name, model=model, tracing_disabled=False))
    except errors:
        pass
    finally:
        set_trace_processors([])


def chat_tool_results(msgs: list[dict]) -> list[tuple[str, Any, str]]:
    """(tool name, arguments, result text) for each tool result in a Chat Completions conversation, in order."""
    calls: dict[str, tuple[str, Any]] = {}
    out = []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            calls[c["id"]] = (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = calls.get(m["tool_call_id"], ("?", {}))
            content = m["content"]
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content)
            out.append((name, args, content))
    return out


SERVER: Any = None
