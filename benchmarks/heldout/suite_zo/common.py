"""Truth records, the generator's checks, and the small helpers the four recording routes share."""

from __future__ import annotations

import json
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trajdebug

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    """One planted fault of one agent: where its root is, where the failure shows."""

    case: str
    agent: str
    route: str
    fault_kind: str
    fault_id: str
    input_key: str
    root: str
    root_occurrence: int
    failure: str
    failure_occurrence: int
    description: str


# ---------------------------------------------------------------- model calls (sdk and otlp routes)

_CLIENTS: dict[str, Any] = {}


def chat_completion(base_url: str, system: str, user: str) -> tuple[str, dict]:
    """One Chat Completions call to the model server; returns (text, usage)."""
    from openai import OpenAI

    client = _CLIENTS.get(base_url)
    if client is None:
        client = _CLIENTS[base_url] = OpenAI(base_url=base_url, api_key="local-test", max_retries=0)
    reply = client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        temperature=0,
    )
    usage = {"prompt_tokens": reply.usage.prompt_tokens if reply.usage else 0,
             "completion_tokens": reply.usage.completion_tokens if reply.usage else 0}
    return reply.choices[0].message.content or "", usage


def last_user_text(request: Any) -> str:
    """The last user message of a Chat Completions or Responses request (for the scripted policies)."""
    body = request.body or {}
    msgs = body.get("messages") or body.get("input") or []
    if isinstance(msgs, str):
        return msgs
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                return " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return c or ""
    return ""


def system_text(request: Any) -> str:
    body = request.body or {}
    if body.get("instructions"):
        return body["instructions"]
    for m in body.get("messages") or []:
        if m.get("role") == "system":
            return m.get("content") or ""
    return ""


# ---------------------------------------------------------------- OTLP (OpenInference) route


class OtlpTrace:
    """Spans of one process written with OpenInference attributes, exported as OTLP/JSON."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    @contextmanager
    def span(self, name: str, kind: str, value: Any = None, **attrs: Any):
        attributes = {"openinference.span.kind": kind}
        if value is not None:
            attributes["input.value"] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            attributes["input.mime_type"] = "text/plain" if isinstance(value, str) else "application/json"
        attributes.update({k.replace("__", "."): v for k, v in attrs.items()})
        with self.tracer.start_as_current_span(name, attributes=attributes) as sp:
            box = _SpanBox(sp)
            yield box

    def llm(self, name: str, base_url: str, system: str, user: str) -> str:
        with self.span(name, "LLM") as box:
            sp = box.span
            sp.set_attribute("llm.model_name", "fake-model")
            sp.set_attribute("llm.input_messages.0.message.role", "system")
            sp.set_attribute("llm.input_messages.0.message.content", system)
            sp.set_attribute("llm.input_messages.1.message.role", "user")
            sp.set_attribute("llm.input_messages.1.message.content", user)
            text, usage = chat_completion(base_url, system, user)
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("llm.token_count.prompt", usage["prompt_tokens"])
            sp.set_attribute("llm.token_count.completion", usage["completion_tokens"])
            sp.set_attribute("output.value", text)
            return text

    def take(self) -> dict:
        """The spans finished since the last take, as one OTLP/JSON document."""
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        spans = self.exporter.get_finished_spans()
        self.exporter.clear()
        return MessageToDict(encode_spans(spans))


class _SpanBox:
    def __init__(self, span: Any) -> None:
        self.span = span

    def out(self, value: Any) -> Any:
        self.span.set_attribute(
            "output.value", value if isinstance(value, str) else json.dumps(value, sort_keys=True))
        self.span.set_attribute(
            "output.mime_type", "text/plain" if isinstance(value, str) else "application/json")
        return value


def write_otlp(doc: dict, path: Path) -> None:
    path.write_text(json.dumps(doc, sort_keys=True))


def merge_otlp(docs: list[dict]) -> dict:
    return {"resourceSpans": [rs for d in docs for rs in d.get("resourceSpans", [])]}


# ---------------------------------------------------------------- checks


def load(path: Path) -> list[Any]:
    if path.suffix == ".json":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        assert not res.problems, (path, res.problems)
        return list(res.runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index if s.source_index is not None else 0))


def find(steps: list[Any], name: str, occurrence: int) -> tuple[int, Any]:
    hits = [(i, s) for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} #{occurrence} missing (found {len(hits)}): {[s.name for s in steps]}"
    return hits[occurrence - 1]


def _strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def forbidden_words(path: Path) -> list[str]:
    text = path.read_text()
    docs = [json.loads(line) for line in text.splitlines() if line.strip()] if path.suffix == ".jsonl" else [json.loads(text)]
    found = []
    for d in docs:
        for s in _strings(d):
            found += [m.group(0) for m in FORBIDDEN.finditer(s)]
    return found


def check_case(case: Case, out: Path, ext: str) -> dict:
    """Assert everything the brief asks of one case directory; return its truth record."""
    failed_runs = load(out / f"failed.{ext}")
    assert len(failed_runs) == 1, (case.case, len(failed_runs))
    failed = failed_runs[0]
    assert failed.outcome == "failure", (case.case, failed.outcome)
    [control] = load(out / f"control.{ext}")
    assert control.outcome == "success", (case.case, "control", control.outcome, control.failure_reason)
    refs = load(out / f"with_refs.{ext}")
    assert len(refs) == 5, (case.case, len(refs))
    assert sorted(r.outcome for r in refs) == ["failure"] + ["success"] * 4, (case.case, [r.outcome for r in refs])
    assert all(r.name == failed.name for r in refs), (case.case, {r.name for r in refs})
    steps = ordered(failed)
    ri, root = find(steps, case.root, case.root_occurrence)
    fi, fail = find(steps, case.failure, case.failure_occurrence)
    assert fi > ri and (fail.start_ns or 0) >= (root.start_ns or 0), (case.case, ri, fi)
    assert fail.status == "error", (case.case, "failure step not in error", fail.name, fail.status)
    assert root.status == "ok", (case.case, "root raised", root.name)
    # the root is not an enclosing step of the failure
    parents = {s.step_id: s.parent_id for s in steps}
    p = fail.parent_id
    while p:
        assert p != root.step_id, (case.case, "root encloses the failure")
        p = parents.get(p)
    for f in ("failed", "control", "with_refs"):
        bad = forbidden_words(out / f"{f}.{ext}")
        assert not bad, (case.case, f, sorted(set(bad)))
    return {
        "case": case.case,
        "agent": case.agent,
        "route": case.route,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root, "occurrence": case.root_occurrence, "kind": root.kind},
        "failure": {"name": case.failure, "occurrence": case.failure_occurrence},
        "hops": fi - ri,
        "description": case.description,
    }


# ---------------------------------------------------------------- Agents SDK route


def tool_results(request: Any) -> list[tuple[str, dict, str]]:
    """(tool name, arguments, result text) of every answered tool call in a Chat Completions request."""
    msgs = (request.body or {}).get("messages") or []
    calls: dict[str, tuple[str, dict]] = {}
    out = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = {}
            calls[tc.get("id")] = (fn.get("name"), args)
        if m.get("role") == "tool" and m.get("tool_call_id") in calls:
            name, args = calls[m["tool_call_id"]]
            content = m.get("content")
            if isinstance(content, list):
                content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append((name, args, content or ""))
    return out


def agents_model(base_url: str) -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="local-test", max_retries=0)
    return OpenAIChatCompletionsModel(model="fake-model", openai_client=client)


def run_agents(agent: Any, message: str, path: Path, name: str, task: str, expected: type) -> None:
    """One Runner.run of the Agents SDK, traced by trajdebug's processor into ``path``."""
    from agents import RunConfig, Runner, set_trace_processors, set_tracing_disabled

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_tracing_disabled(False)
    set_trace_processors([TrajdebugProcessor(path=str(path), name=name, task=task)])
    try:
        Runner.run_sync(agent, message, run_config=RunConfig(workflow_name=name), max_turns=40)
    except Exception as exc:  # the SDK wraps a raising tool in UserError
        if not (isinstance(exc, expected) or isinstance(exc.__cause__, expected) or type(exc).__name__ == "UserError"):
            raise
