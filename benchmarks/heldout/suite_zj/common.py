"""Truth records, the shared fake model server and the generator's checks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault_kind: str
    main_input: str
    root_name: str
    root_occurrence: int
    failure_name: str
    failure_occurrence: int
    description: str
    marker: str | None = None  # a text the root step's recorded output must hold


# --- the one fake model server, dispatching on the agent tag in the system prompt ---------------------------

POLICIES: dict[str, Callable[[list[dict]], Any]] = {}


def policy(tag: str):
    def deco(fn):
        POLICIES[tag] = fn
        return fn

    return deco


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def dispatch(request) -> Any:
    body = request.body or {}
    messages = [dict(m, content=_text(m.get("content"))) for m in body.get("messages", [])]
    system = next((m["content"] for m in messages if m.get("role") in ("system", "developer")), "")
    match = re.search(r"\[desk:([a-z\-]+)\]", system)
    if not match:
        raise RuntimeError("no desk tag in the system prompt")
    return POLICIES[match.group(1)](messages)


_SERVER = None


def server():
    global _SERVER
    if _SERVER is None:
        from trajdebug.testing import FakeModelServer

        _SERVER = FakeModelServer(dispatch).start()
    return _SERVER


def stop_server() -> None:
    global _SERVER
    if _SERVER is not None:
        _SERVER.stop()
        _SERVER = None


def last_tool_results(messages: list[dict]) -> list[dict]:
    """The tool messages since the last assistant turn that asked for tools."""
    out = []
    for m in reversed(messages):
        if m.get("role") == "tool":
            out.append(m)
        else:
            break
    return list(reversed(out))


def tool_results(messages: list[dict]) -> list[str]:
    return [m["content"] for m in messages if m.get("role") == "tool"]


def called(messages: list[dict]) -> list[str]:
    names = []
    for m in messages:
        for c in m.get("tool_calls") or []:
            names.append(c["function"]["name"])
    return names


# --- checks -------------------------------------------------------------------------------------------------


def load(path: Path, fmt: str | None = None):
    if fmt == "otlp":
        from trajdebug.sources.formats import import_path

        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug

    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(run, name: str, occurrence: int):
    same = [s for s in ordered(run) if s.name == name]
    if len(same) < occurrence:
        raise AssertionError(f"{name}#{occurrence} not in run (names: {sorted({s.name for s in run.steps})})")
    return same[occurrence - 1]


def check_forbidden(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    if m:
        raise AssertionError(f"forbidden word in {path}: ...{text[max(0, m.start() - 80): m.end() + 80]}...")


def truth_for(agent, case: Case, failed_run) -> dict:
    root = find(failed_run, case.root_name, case.root_occurrence)
    failure = find(failed_run, case.failure_name, case.failure_occurrence)
    if case.marker is not None:
        seen = json.dumps(root.output, default=str)
        assert case.marker in seen, f"{case.case}: root {case.root_name}#{case.root_occurrence} does not hold {case.marker!r}: {seen[:300]}"
    steps = ordered(failed_run)
    ri = next(i for i, s in enumerate(steps) if s.step_id == root.step_id)
    fi = next(i for i, s in enumerate(steps) if s.step_id == failure.step_id)
    assert failure.start_ns > root.start_ns and fi > ri, f"{case.case}: failure does not start after root"
    assert failure.status == "error", f"{case.case}: failure step {failure.name} has status {failure.status}"
    assert root.status != "error" or (root.error and root.error.type == "ToolErrorPayload"), f"{case.case}: root step raised"
    return {
        "case": case.case,
        "agent": agent.NAME,
        "route": agent.ROUTE,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root_name, "occurrence": case.root_occurrence, "kind": root.kind},
        "failure": {"name": case.failure_name, "occurrence": case.failure_occurrence},
        "hops": fi - ri,
        "description": case.description,
    }


def dump(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True) + "\n")


# --- the recording SDK route: one model call as an llm step ---------------------------------------------------

_CLIENT = None


def client():
    global _CLIENT
    if _CLIENT is None:
        from openai import OpenAI

        _CLIENT = OpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0)
    return _CLIENT


def sdk_chat(name: str, desk: str, instructions: str, payload: Any) -> str:
    import trajdebug

    messages = [
        {"role": "system", "content": f"[desk:{desk}] {instructions}"},
        {"role": "user", "content": payload if isinstance(payload, str) else json.dumps(payload, sort_keys=True)},
    ]
    with trajdebug.step(name, kind="llm", input={"messages": messages}) as s:
        reply = client().chat.completions.create(model="gpt-4o-mini", messages=messages)
        text = reply.choices[0].message.content or ""
        s.usage(model="gpt-4o-mini", prompt_tokens=reply.usage.prompt_tokens, completion_tokens=reply.usage.completion_tokens)
        s.output = {"role": "assistant", "content": text}
    return text


# --- the OpenAI Agents SDK route ---------------------------------------------------------------------------------


def agents_model():
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    return OpenAIChatCompletionsModel(model="gpt-4o-mini",
                                      openai_client=AsyncOpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0))


def agents_run(name: str, task: str, path, agent, prompt: str, max_turns: int = 30):
    from agents import RunConfig, Runner, set_trace_processors, set_tracing_disabled

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    set_tracing_disabled(False)
    processor = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([processor])
    try:
        return Runner.run_sync(agent, prompt, max_turns=max_turns, run_config=RunConfig(workflow_name=name))
    finally:
        set_trace_processors([])


def tool_json(messages: list[dict], name: str) -> Any:
    """The latest result of tool `name` in the conversation, decoded."""
    ids = {}
    for m in messages:
        for c in m.get("tool_calls") or []:
            ids[c["id"]] = c["function"]["name"]
    for m in reversed(messages):
        if m.get("role") == "tool" and ids.get(m.get("tool_call_id")) == name:
            return decode(m["content"])
    return None


def decode(text: str) -> Any:
    import ast

    try:
        return json.loads(text)
    except ValueError:
        try:
            return ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text


def reply(*calls, text: str | None = None):
    from trajdebug.testing import Reply

    return Reply(text=text, tool_calls=tuple(calls))


# --- the OTLP route: OpenTelemetry SDK spans with OpenInference attributes, one OTLP/JSON file per run ---------


class OtlpRecorder:
    """One run's spans, exported as an OTLP/JSON envelope (protobuf JSON mapping)."""

    def __init__(self, service: str, session: str | None = None) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zj.agents")
        self.session = session
        self.desk = ""

    def span(self, name: str, kind: str, input: Any = None, **attrs: Any):
        from contextlib import contextmanager

        @contextmanager
        def cm():
            with self.tracer.start_as_current_span(name) as sp:
                sp.set_attribute("openinference.span.kind", kind)
                if self.session:
                    sp.set_attribute("session.id", self.session)
                for k, v in attrs.items():
                    sp.set_attribute(k, v)
                if input is not None:
                    _set_io(sp, "input", input)
                box = _Box(sp)
                yield box
                if box.output is not None:
                    _set_io(sp, "output", box.output)

        return cm()

    def llm(self, name: str, instructions: str, payload: Any) -> str:
        messages = [
            {"role": "system", "content": f"[desk:{self.desk}] {instructions}"},
            {"role": "user", "content": payload if isinstance(payload, str) else json.dumps(payload, sort_keys=True)},
        ]
        with self.span(name, "LLM", input={"messages": messages}, **{"llm.model_name": "gpt-4o-mini", "llm.provider": "openai"}) as s:
            for i, m in enumerate(messages):
                s.span.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                s.span.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            reply = client().chat.completions.create(model="gpt-4o-mini", messages=messages)
            text = reply.choices[0].message.content or ""
            s.span.set_attribute("llm.output_messages.0.message.role", "assistant")
            s.span.set_attribute("llm.output_messages.0.message.content", text)
            s.span.set_attribute("llm.token_count.prompt", reply.usage.prompt_tokens)
            s.span.set_attribute("llm.token_count.completion", reply.usage.completion_tokens)
            s.output = text
        return text

    def write(self, path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        msg = encode_spans(self.exporter.get_finished_spans())
        Path(path).write_text(json.dumps(MessageToDict(msg)))
        self.provider.shutdown()


class _Box:
    def __init__(self, span) -> None:
        self.span = span
        self.output: Any = None


def _set_io(span, which: str, value: Any) -> None:
    if isinstance(value, str):
        span.set_attribute(f"{which}.value", value)
        span.set_attribute(f"{which}.mime_type", "text/plain")
    else:
        span.set_attribute(f"{which}.value", json.dumps(value, sort_keys=True, default=str))
        span.set_attribute(f"{which}.mime_type", "application/json")
