"""Truth records and the generator's checks."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import trajdebug

BANNED = ("fault", "bug", "wrong", "stale", "planted", "inject", "corrupt")


@dataclass(frozen=True)
class Case:
    case: str
    fault_kind: str
    main: str  # key of the main input
    root: str
    root_occ: int
    root_kind: str
    failure: str
    failure_occ: int
    description: str


def load_one(path: Path):
    return trajdebug.load_runs(str(path))


def banned_words(text: str) -> list[str]:
    return sorted({w for w in re.findall(r"[a-z]+", text.lower()) if w.startswith(BANNED)})


def run_text(run) -> str:
    parts = [run.name or "", str(run.metadata.get("task", "")), str(getattr(run, "failure_reason", "") or "")]
    for s in run.steps:
        parts += [s.name, json.dumps(s.input, default=str), json.dumps(s.output, default=str)]
        if s.error is not None:
            parts.append(json.dumps(getattr(s.error, "message", str(s.error)), default=str))
    return "\n".join(parts)


def nth(steps, name: str, occ: int):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, f"step {name!r} #{occ} not in run (found {len(hits)})"
    return hits[occ - 1]


def check_case(c: Case, agent: str, route: str, case_dir: Path, ext: str) -> dict:
    [failed] = load_one(case_dir / f"failed.{ext}")
    [control] = load_one(case_dir / f"control.{ext}")
    refs = load_one(case_dir / f"with_refs.{ext}")
    assert failed.outcome == "failure", (c.case, failed.outcome)
    assert control.outcome == "success", (c.case, control.outcome)
    assert len(refs) == 5, (c.case, len(refs))
    assert sum(r.outcome == "failure" for r in refs) == 1 and sum(r.outcome == "success" for r in refs) == 4, c.case
    steps = sorted(failed.steps, key=lambda s: (s.start_ns, s.source_index))
    ri = nth(steps, c.root, c.root_occ)
    fi = nth(steps, c.failure, c.failure_occ)
    assert steps[ri].kind == c.root_kind, (c.case, steps[ri].kind, c.root_kind)
    assert steps[ri].status != "error", (c.case, "root raised")
    assert steps[fi].status == "error", (c.case, c.failure, steps[fi].status)
    assert fi > ri and steps[fi].start_ns >= steps[ri].start_ns, (c.case, ri, fi)
    for r in (failed, control, *refs):
        bad = banned_words(run_text(r))
        assert not bad, (c.case, bad)
    return {
        "case": c.case, "agent": agent, "route": route, "fault_kind": c.fault_kind,
        "root": {"name": c.root, "occurrence": c.root_occ, "kind": c.root_kind},
        "failure": {"name": c.failure, "occurrence": c.failure_occ},
        "hops": fi - ri, "description": c.description,
    }


# ---- route plumbing shared by the sdk and otlp agents (each agent writes its own flow) ----

import contextlib


def chat(client, model, system: str, user) -> str:
    body = user if isinstance(user, str) else json.dumps(user, sort_keys=True)
    r = client.chat.completions.create(
        model=model, messages=[{"role": "system", "content": system}, {"role": "user", "content": body}]
    )
    return r.choices[0].message.content


def last_user(req) -> tuple[str, str]:
    msgs = req.body.get("messages") or []
    system = next((m["content"] for m in msgs if m.get("role") == "system"), "")
    user = [m for m in msgs if m.get("role") == "user"]
    return system, (user[-1]["content"] if user else "")


class SdkCtx:
    """trajdebug recording SDK: `with trajdebug.step(...)` blocks."""

    def __init__(self, client, model):
        self.client, self.model = client, model

    def llm(self, name, system, user):
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(user, sort_keys=True)}]
        with trajdebug.step(name, kind="llm", input={"messages": msgs}) as s:
            s.output = chat(self.client, self.model, system, user)
            return s.output

    def step(self, name, kind, input, fn):
        with trajdebug.step(name, kind=kind, input=input) as s:
            s.output = fn()
            return s.output

    @contextlib.contextmanager
    def agent(self, name, input):
        with trajdebug.step(name, kind="agent", input=input) as s:
            yield s


OI_KIND = {"llm": "LLM", "tool": "TOOL", "retrieval": "RETRIEVER", "agent": "AGENT"}


class OtlpCtx:
    """OpenTelemetry spans with OpenInference attributes."""

    def __init__(self, client, model, tracer):
        self.client, self.model, self.tracer = client, model, tracer

    def llm(self, name, system, user):
        body = json.dumps(user, sort_keys=True)
        attrs = {
            "openinference.span.kind": "LLM", "llm.model_name": self.model,
            "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": system,
            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": body,
            "input.value": json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": body}]}),
            "input.mime_type": "application/json",
        }
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            text = chat(self.client, self.model, system, user)
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("output.value", text)
            return text

    def step(self, name, kind, input, fn):
        attrs = {"openinference.span.kind": OI_KIND.get(kind, "CHAIN"),
                 "input.value": json.dumps(input, sort_keys=True, default=str), "input.mime_type": "application/json"}
        if kind == "tool":
            attrs["tool.name"] = name
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            out = fn()
            sp.set_attribute("output.value", json.dumps(out, sort_keys=True, default=str))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    @contextlib.contextmanager
    def agent(self, name, input):
        attrs = {"openinference.span.kind": "AGENT", "agent.name": name,
                 "input.value": json.dumps(input, sort_keys=True, default=str)}
        with self.tracer.start_as_current_span(name, attributes=attrs) as sp:
            yield sp


def run_sdk(agent_name, flow, server, inp, path, task):
    from openai import OpenAI
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with trajdebug.run(agent_name, path=str(path), task=task):
            flow(SdkCtx(client, server.model), inp)
    except Exception:  # the run records its own failure
        pass


def run_otlp(agent_name, flow, server, inp, path, task):
    from google.protobuf.json_format import MessageToDict
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": agent_name}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer(agent_name)
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    try:
        with tracer.start_as_current_span(agent_name, attributes={
                "openinference.span.kind": "AGENT", "agent.name": agent_name, "input.value": task}):
            flow(OtlpCtx(client, server.model, tracer), inp)
    except Exception:
        pass
    doc = MessageToDict(encode_spans(spans.get_finished_spans()))
    Path(path).write_text(json.dumps(doc))


def merge_otlp(paths, out):
    docs = [json.loads(Path(p).read_text()) for p in paths]
    Path(out).write_text(json.dumps({"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}))


def tool_results(req) -> list[tuple[str, dict, str]]:
    """(tool name, arguments, result text) for every answered tool call in a chat request."""
    msgs = req.body.get("messages") or []
    calls = {}
    out = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = calls.get(m.get("tool_call_id"), ("?", {}))
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append((name, args, content))
    return out


def run_agents(agent_name, agent, server, user_text, path, task):
    from agents import Runner, RunConfig, set_trace_processors, set_tracing_disabled

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(path), name=agent_name, task=task)
    set_tracing_disabled(False)
    set_trace_processors([proc])
    try:
        Runner.run_sync(agent, user_text, run_config=RunConfig(workflow_name=agent_name), max_turns=40)
    except Exception:
        pass
    finally:
        set_trace_processors([])


def agents_model(server):
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    return OpenAIChatCompletionsModel(model=server.model, openai_client=client)
