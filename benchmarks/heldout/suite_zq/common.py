"""Truth records, the shared fake model server, OTLP helpers and the generator's checks."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)

MODEL = "gpt-4o-mini"


@dataclass(frozen=True)
class Case:
    """One case: a switch planted in one agent, where its root is and where it shows."""

    case: str
    switch: str
    fault_kind: str
    input_key: str
    root: tuple[str, int]
    failure: tuple[str, int]
    description: str


# -- the fake model server (one for the whole generation; each agent installs its policy) --------------

_SERVER: Any = None


def server() -> Any:
    """The running fake model server (started on first use, on a free port of 127.0.0.1)."""
    global _SERVER
    if _SERVER is None:
        from trajdebug.testing import FakeModelServer

        _SERVER = FakeModelServer(model=MODEL).start()
    return _SERVER


def messages_of(req: Any) -> list[dict[str, Any]]:
    """The chat messages of a Chat Completions request (the Responses API input read alike)."""
    body = req.body or {}
    if "messages" in body:
        return list(body["messages"])
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    inp = body.get("input")
    if isinstance(inp, str):
        out.append({"role": "user", "content": inp})
    elif isinstance(inp, list):
        for item in inp:
            if item.get("type") == "function_call_output":
                out.append({"role": "tool", "content": item.get("output"), "tool_call_id": item.get("call_id")})
            elif item.get("type") == "function_call":
                out.append({"role": "assistant", "tool_calls": [{"function": {"name": item["name"],
                                                                               "arguments": item["arguments"]}}]})
            else:
                content = item.get("content")
                if isinstance(content, list):
                    content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
                out.append({"role": item.get("role", "user"), "content": content})
    return out


def text_of(content: Any) -> str:
    """Message content as one string."""
    if content is None:
        return ""
    if isinstance(content, list):
        return "".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)
    return str(content)


def system_of(msgs: list[dict[str, Any]]) -> str:
    return next((text_of(m.get("content")) for m in msgs if m.get("role") in ("system", "developer")), "")


def tool_results(msgs: list[dict[str, Any]]) -> list[str]:
    """The tool results in the conversation, oldest first."""
    return [text_of(m.get("content")) for m in msgs if m.get("role") == "tool"]


def called_tools(msgs: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """(name, arguments) of every tool call the assistant made so far."""
    out = []
    for m in msgs:
        if m.get("role") == "assistant":
            for tc in m.get("tool_calls") or []:
                fn = tc.get("function", tc)
                args = fn.get("arguments")
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        args = {"raw": args}
                out.append((fn.get("name"), args or {}))
    return out


# -- OTLP (OpenTelemetry SDK spans in OpenInference conventions) ------------------------------------------

_OTEL: dict[str, Any] = {}


def otel() -> tuple[Any, Any]:
    """(tracer, in-memory exporter) of one tracer provider for the OTLP agents."""
    if not _OTEL:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": "ops-agents"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        _OTEL["tracer"] = provider.get_tracer("ops-agents")
        _OTEL["exporter"] = exporter
    return _OTEL["tracer"], _OTEL["exporter"]


def dumps(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class OISpan:
    """A span being recorded: set its output (and optional extra attributes)."""

    def __init__(self, span: Any) -> None:
        self.span = span

    def output(self, value: Any) -> Any:
        self.span.set_attribute("output.value", dumps(value))
        self.span.set_attribute("output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


@contextmanager
def oi_span(name: str, kind: str, inp: Any = None, **attrs: Any) -> Iterator[OISpan]:
    """An OpenInference span (`kind` is AGENT, CHAIN, TOOL, RETRIEVER or LLM) around the block."""
    tracer, _ = otel()
    attributes: dict[str, Any] = {"openinference.span.kind": kind}
    if inp is not None:
        attributes["input.value"] = dumps(inp)
        attributes["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
    if kind == "TOOL":
        attributes["tool.name"] = name
    for k, v in attrs.items():
        attributes[k.replace("__", ".")] = v
    with tracer.start_as_current_span(name, attributes=attributes) as span:
        yield OISpan(span)


def oi_llm(name: str, client: Any, messages: list[dict[str, str]], agent: str | None = None) -> str:
    """One model call in an OpenInference LLM span; returns the assistant's text."""
    attrs: dict[str, Any] = {"llm.model_name": MODEL, "llm.provider": "openai", "llm.system": "openai"}
    if agent:
        attrs["agent.name"] = agent
    for i, m in enumerate(messages):
        attrs[f"llm.input_messages.{i}.message.role"] = m["role"]
        attrs[f"llm.input_messages.{i}.message.content"] = m["content"]
    with oi_span(name, "LLM", {"messages": messages}, **{k.replace(".", "__"): v for k, v in attrs.items()}) as s:
        reply = client.chat.completions.create(model=MODEL, messages=messages, temperature=0)
        text = reply.choices[0].message.content or ""
        s.span.set_attribute("llm.output_messages.0.message.role", "assistant")
        s.span.set_attribute("llm.output_messages.0.message.content", text)
        s.span.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
        s.span.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
        s.span.set_attribute("llm.token_count.total", reply.usage.total_tokens)
        s.output(text)
    return text


def take_spans() -> list[Any]:
    """The spans finished since the last call (and forget them)."""
    _, exporter = otel()
    spans = list(exporter.get_finished_spans())
    exporter.clear()
    return spans


def write_otlp(spans: list[Any], path: Path) -> None:
    """Write spans as one OTLP/JSON envelope (protobuf JSON mapping)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc = MessageToDict(encode_spans(spans))
    path.write_text(json.dumps(doc), encoding="utf-8")


def openai_client() -> Any:
    from openai import OpenAI

    return OpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0)


# -- loading and checks -------------------------------------------------------------------------------------


def load(path: Path) -> list[Any]:
    """The runs in a file this suite wrote (trajdebug JSONL, or OTLP/JSON through the importer)."""
    if path.suffix == ".jsonl":
        import trajdebug

        return list(trajdebug.load_runs(str(path)))
    from trajdebug.sources.formats import import_path

    result = import_path(path, "otlp")
    return list(result.runs)


def ordered_steps(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def find_step(run: Any, name: str, occurrence: int) -> tuple[int, Any]:
    steps = ordered_steps(run)
    same = [(i, s) for i, s in enumerate(steps) if s.name == name]
    if len(same) < occurrence:
        names = [s.name for s in steps]
        raise AssertionError(f"step {name}#{occurrence} not in run (has {len(same)}); steps: {names}")
    return same[occurrence - 1]


def check_forbidden(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    m = FORBIDDEN.search(text)
    if m:
        raise AssertionError(f"{path}: forbidden word near {text[max(0, m.start() - 80):m.end() + 40]!r}")


def check_case(case: Case, agent: str, route: str, out: Path, ext: str) -> dict[str, Any]:
    """Check one case's files and return its truth record."""
    failed_runs = load(out / f"failed.{ext}")
    control_runs = load(out / f"control.{ext}")
    refs = load(out / f"with_refs.{ext}")
    assert len(failed_runs) == 1, (case.case, "failed file holds", len(failed_runs))
    assert len(control_runs) == 1, (case.case, "control file holds", len(control_runs))
    failed, control = failed_runs[0], control_runs[0]
    assert failed.outcome == "failure", (case.case, "failed run outcome", failed.outcome)
    assert control.outcome == "success", (case.case, "control outcome", control.outcome, control.failure_reason)
    assert len(refs) == 5, (case.case, "with_refs holds", len(refs))
    outcomes = sorted(r.outcome for r in refs)
    assert outcomes == ["failure"] + ["success"] * 4, (case.case, outcomes)
    ri, root = find_step(failed, *case.root)
    fi, fail = find_step(failed, *case.failure)
    assert fi > ri and fail.start_ns > root.start_ns, (case.case, "failure does not start after root")
    assert root.status != "error", (case.case, "the root step raised")
    assert fail.status == "error" or fi == len(ordered_steps(failed)) - 1, (case.case, "failure step kept no error")
    for name in ("failed", "control", "with_refs"):
        check_forbidden(out / f"{name}.{ext}")
    kind = str(root.kind)
    return {
        "case": case.case,
        "agent": agent,
        "route": route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root[0], "occurrence": case.root[1], "kind": kind},
        "failure": {"name": case.failure[0], "occurrence": case.failure[1]},
        "hops": fi - ri,
        "description": case.description,
    }
