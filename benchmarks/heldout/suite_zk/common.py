"""Truth records, route plumbing and the generator's checks."""

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
_WORDS = re.compile(r"\b(" + "|".join(["fau" + "lt", "b" + "ug", "wro" + "ng", "st" + "ale", "plan" + "ted",
                                        "inj" + "ect", "cor" + "rupt"]) + r")", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    root: tuple[str, int]
    failure: tuple[str, int]
    input: str
    description: str


def ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def merge(failed: Path, refs: Path, out: Path, route: str) -> None:
    if route == "otlp":
        a = json.loads(failed.read_text())
        b = json.loads(refs.read_text())
        out.write_text(json.dumps({"resourceSpans": a["resourceSpans"] + b["resourceSpans"]}))
    else:
        out.write_text(failed.read_text() + refs.read_text())


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(run: Any, name: str, occ: int) -> tuple[int, Any]:
    seq = ordered(run)
    hits = [(i, s) for i, s in enumerate(seq) if s.name == name]
    if len(hits) < occ:
        names = [s.name for s in seq]
        raise AssertionError(f"{run.name}: step {name}#{occ} not found in {names}")
    return hits[occ - 1]


def check_words(path: Path) -> None:
    m = _WORDS.search(path.read_text())
    if m:
        text = path.read_text()
        raise AssertionError(f"{path}: forbidden word near {text[max(0, m.start() - 60): m.end() + 60]!r}")


def check_case(case: Case, agent: str, route: str, d: Path) -> dict:
    e = ext(route)
    [failed] = load(d / f"failed.{e}", route)
    [control] = load(d / f"control.{e}", route)
    refs = load(d / f"with_refs.{e}", route)
    assert failed.outcome == "failure", (case.id, failed.outcome)
    assert control.outcome == "success", (case.id, control.outcome)
    assert len(refs) == 5, (case.id, len(refs))
    assert sum(r.outcome == "failure" for r in refs) == 1, case.id
    assert sum(r.outcome == "success" for r in refs) == 4, case.id
    ri, rs = find(failed, *case.root)
    fi, fs = find(failed, *case.failure)
    assert fi > ri and fs.start_ns >= rs.start_ns, (case.id, ri, fi)
    for f in ("failed", "control", "with_refs"):
        check_words(d / f"{f}.{e}")
    return {
        "case": case.id, "agent": agent, "route": route, "fault_kind": case.kind,
        "root": {"name": case.root[0], "occurrence": case.root[1], "kind": rs.kind},
        "failure": {"name": case.failure[0], "occurrence": case.failure[1]},
        "hops": fi - ri, "description": case.description,
    }


def show(path: Path, route: str) -> None:
    for r in load(path, route):
        print(r.name, r.outcome)
        for i, s in enumerate(ordered(r)):
            err = f" ERR {s.error.message[:80]}" if s.error else ""
            print(f"  {i:2d} {s.kind:9s} {s.name}{err}")


def chat_state(body: dict) -> tuple[str, list[tuple[str, Any]], str]:
    """(system text, [(tool name, parsed result)] in order, first user text) from a Chat Completions body."""
    msgs = body.get("messages", [])
    system = next((m.get("content") or "" for m in msgs if m.get("role") in ("system", "developer")), "")
    if isinstance(system, list):
        system = " ".join(p.get("text", "") for p in system)
    user = next((m.get("content") or "" for m in msgs if m.get("role") == "user"), "")
    if isinstance(user, list):
        user = " ".join(p.get("text", "") for p in user)
    names: dict[str, str] = {}
    results: list[tuple[str, Any]] = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            names[tc["id"]] = tc["function"]["name"]
        if m.get("role") == "tool":
            text = m.get("content")
            if isinstance(text, list):
                text = " ".join(p.get("text", "") for p in text)
            try:
                val = json.loads(text)
            except (TypeError, ValueError):
                val = text
            results.append((names.get(m.get("tool_call_id"), "?"), val))
    return system, results, user


def agents_model(server: Any, model: str = "forge-model") -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return OpenAIChatCompletionsModel(model=model, openai_client=client)


def run_agents(agent: Any, text: str, out: Path, name: str, max_turns: int = 30) -> None:
    from agents import RunConfig, Runner, set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(out), name=name, task=text)
    set_trace_processors([proc])
    try:
        Runner.run_sync(agent, text, max_turns=max_turns, run_config=RunConfig(workflow_name=name))
    finally:
        set_trace_processors([])


class Otlp:
    """OpenTelemetry tracer with OpenInference attributes, the openai client instrumented while recording."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer(service)

    def __enter__(self) -> Otlp:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=self.provider)
        return self

    def __exit__(self, *exc: Any) -> None:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().uninstrument()

    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any) -> Any:
        from contextlib import contextmanager

        @contextmanager
        def cm():
            a = {"openinference.span.kind": kind, **attrs}
            if inp is not None:
                a["input.value"] = inp if isinstance(inp, str) else json.dumps(inp)
                a["input.mime_type"] = "text/plain" if isinstance(inp, str) else "application/json"
            with self.tracer.start_as_current_span(name, attributes=a) as sp:
                box: dict = {}
                yield box
                if "output" in box:
                    out = box["output"]
                    sp.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
                    sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")

        return cm()

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        spans = self.exporter.get_finished_spans()
        path.write_text(json.dumps(MessageToDict(encode_spans(spans))))
        self.exporter.clear()
