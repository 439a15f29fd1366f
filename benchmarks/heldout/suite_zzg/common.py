"""Truth records, the fake model server and the generator's checks."""
from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trajdebug
from trajdebug.sources.formats import import_path

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.IGNORECASE)


@dataclass(frozen=True)
class Case:
    case: str
    fault_id: str
    fault_kind: str
    input_key: str
    root_name: str
    root_occurrence: int
    root_kind: str
    failure_name: str
    description: str


def ext_for(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load(path: Path, route: str) -> list[Any]:
    if route == "otlp":
        return list(import_path(str(path), "otlp").runs)
    return list(trajdebug.load_runs(str(path)))


def ordered(run: Any) -> list[Any]:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def merge(parts: list[Path], out: Path, route: str) -> None:
    if route == "otlp":
        spans: list[Any] = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        with out.open("w") as fh:
            for p in parts:
                fh.write(p.read_text())


def check_words(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: forbidden word near {text[max(0, m.start() - 60):m.end() + 60]!r}"


def truth_for(agent: Any, case: Case, failed: Path, control: Path) -> dict[str, Any]:
    runs = load(failed, agent.ROUTE)
    assert len(runs) == 1, (case.case, len(runs))
    run = runs[0]
    assert run.outcome == "failure", (case.case, run.outcome)
    steps = ordered(run)
    same = [s for s in steps if s.name == case.root_name]
    occ_root = case.root_occurrence
    if occ_root == 0:  # the first same-named step whose output differs from the control run's
        ctrl = [s for s in ordered(load(control, agent.ROUTE)[0]) if s.name == case.root_name]
        occ_root = next(i + 1 for i, s in enumerate(same) if i >= len(ctrl) or json.dumps(s.output, sort_keys=True, default=str) != json.dumps(ctrl[i].output, sort_keys=True, default=str))
    assert len(same) >= occ_root, (case.case, "root missing", case.root_name, [s.name for s in steps])
    root = same[occ_root - 1]
    assert root.kind == case.root_kind, (case.case, root.kind, case.root_kind)
    assert root.status == "ok", (case.case, "root raised")
    fails = [s for s in steps if s.name == case.failure_name]
    errs = [s for s in fails if s.status == "error"]
    assert errs, (case.case, "failure step did not fail", case.failure_name, [(s.name, s.status) for s in steps])
    fail = errs[0]
    occ = fails.index(fail) + 1
    assert fail.start_ns > root.start_ns, (case.case, "failure before root")
    hops = steps.index(fail) - steps.index(root)
    assert hops >= 1
    return {
        "case": case.case,
        "agent": agent.NAME,
        "route": agent.ROUTE,
        "fault_kind": case.fault_kind,
        "root": {"name": case.root_name, "occurrence": occ_root, "kind": case.root_kind},
        "failure": {"name": case.failure_name, "occurrence": occ},
        "hops": hops,
        "description": case.description,
    }


def one_outcome(path: Path, route: str, want: str) -> None:
    runs = load(path, route)
    assert len(runs) == 1 and runs[0].outcome == want, (path, [r.outcome for r in runs])


def generate_agent(agent: Any, out: Path, tmp: Path) -> list[dict[str, Any]]:
    from .kit import planted

    ext = ext_for(agent.ROUTE)
    work = tmp / agent.NAME
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    refs: list[Path] = []
    for i, key in enumerate(agent.REF_INPUTS):
        p = work / f"ref{i}.{ext}"
        with planted(None):
            agent.record(agent.INPUTS[key], p)
        one_outcome(p, agent.ROUTE, "success")
        refs.append(p)
    truths = []
    for case in agent.CASES:
        cdir = out / case.case
        shutil.rmtree(cdir, ignore_errors=True)
        cdir.mkdir(parents=True)
        failed, control, with_refs = (cdir / f"{n}.{ext}" for n in ("failed", "control", "with_refs"))
        with planted(case.fault_id):
            agent.record(agent.INPUTS[case.input_key], failed)
        agent.record(agent.INPUTS[case.input_key], control)
        one_outcome(control, agent.ROUTE, "success")
        truth = truth_for(agent, case, failed, control)
        merge([failed, *refs], with_refs, agent.ROUTE)
        runs = load(with_refs, agent.ROUTE)
        assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, case.case
        assert sum(r.outcome == "success" for r in runs) == 4, case.case
        for p in (failed, control, with_refs):
            check_words(p)
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2, sort_keys=True) + "\n")
        truths.append(truth)
    return truths


# ---- the fake model server: one per process, policies dispatched on the system prompt's tag ----
_POLICIES: dict[str, Any] = {}
_SERVER: Any = None


def register(tag: str, policy: Any) -> None:
    _POLICIES[tag] = policy


def _dispatch(request: Any) -> Any:
    body = request.body or {}
    msgs = body.get("messages") or []
    system = next((m.get("content") for m in msgs if m.get("role") in ("system", "developer")), "") or ""
    if isinstance(system, list):
        system = " ".join(p.get("text", "") for p in system if isinstance(p, dict))
    for tag, fn in _POLICIES.items():
        if system.startswith(tag):
            return fn(msgs)
    raise RuntimeError(f"no policy for system prompt {system[:40]!r}")


def server() -> Any:
    global _SERVER
    if _SERVER is None:
        from trajdebug.testing import FakeModelServer

        _SERVER = FakeModelServer(_dispatch, model="gpt-4o-mini").start()
    return _SERVER


def last_user_json(msgs: list[dict[str, Any]]) -> dict[str, Any]:
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                c = " ".join(p.get("text", "") for p in c if isinstance(p, dict))
            return json.loads(c)
    return {}


_CLIENT: Any = None


def chat(system: str, payload: dict[str, Any]) -> tuple[list[dict[str, str]], str, dict[str, int]]:
    """One chat completion against the fake server: (messages sent, answer text, usage)."""
    global _CLIENT
    from openai import OpenAI

    if _CLIENT is None:
        _CLIENT = OpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0)
    messages = [{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload, sort_keys=True)}]
    reply = _CLIENT.chat.completions.create(model="gpt-4o-mini", messages=messages, temperature=0)
    usage = {"prompt_tokens": reply.usage.prompt_tokens, "completion_tokens": reply.usage.completion_tokens} if reply.usage else {}
    return messages, reply.choices[0].message.content or "", usage


def reply_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True)


# ---- OTLP route: OpenTelemetry SDK spans with OpenInference conventions, written as one OTLP/JSON file ----
class OtlpRecorder:
    """One trace: spans made with the OpenTelemetry SDK, exported as {"resourceSpans": [...]}."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zzg")

    def span(self, name: str, kind: str, inp: Any = None, **attrs: Any) -> Any:
        attributes = {"openinference.span.kind": kind}
        if inp is not None:
            attributes["input.value"] = json.dumps(inp, sort_keys=True) if not isinstance(inp, str) else inp
            attributes["input.mime_type"] = "application/json" if not isinstance(inp, str) else "text/plain"
        attributes.update({k.replace("__", "."): v for k, v in attrs.items()})
        return self.tracer.start_as_current_span(name, attributes=attributes)

    @staticmethod
    def out(span: Any, value: Any) -> Any:
        span.set_attribute("output.value", json.dumps(value, sort_keys=True) if not isinstance(value, str) else value)
        span.set_attribute("output.mime_type", "application/json" if not isinstance(value, str) else "text/plain")
        return value

    def llm(self, name: str, system: str, payload: dict[str, Any]) -> str:
        with self.span(name, "LLM", llm__model_name="gpt-4o-mini", llm__provider="openai") as s:
            messages, text, usage = chat(system, payload)
            for i, m in enumerate(messages):
                s.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                s.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            s.set_attribute("input.value", json.dumps({"messages": messages}))
            s.set_attribute("llm.output_messages.0.message.role", "assistant")
            s.set_attribute("llm.output_messages.0.message.content", text)
            s.set_attribute("output.value", text)
            if usage:
                s.set_attribute("llm.token_count.prompt", usage["prompt_tokens"])
                s.set_attribute("llm.token_count.completion", usage["completion_tokens"])
            return text

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        msg = encode_spans(self.exporter.get_finished_spans())
        path.write_text(json.dumps(MessageToDict(msg), sort_keys=True))
        self.provider.shutdown()


# ---- OpenAI Agents SDK route ----
def oa_model() -> Any:
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server().base_url, api_key="sk-test-local", max_retries=0)
    return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)


def oa_run(agent: Any, text: str, path: Path, name: str, task: str, max_turns: int = 20) -> None:
    from agents import RunConfig, Runner
    from agents.tracing import set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([proc])
    try:
        Runner.run_sync(agent, text, max_turns=max_turns, run_config=RunConfig(workflow_name=name))
    except Exception as exc:  # noqa: BLE001 - the run's failure is recorded by the processor
        if "HTTP" not in str(exc) and "rejected" not in str(exc) and "check" not in str(exc):
            raise
    finally:
        set_trace_processors([])


def conversation(msgs: list[dict[str, Any]]) -> tuple[str, list[tuple[str, dict[str, Any], Any]]]:
    """The user's text and the tool calls so far: (name, arguments, result)."""
    user = next((m.get("content") for m in msgs if m.get("role") == "user"), "") or ""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    done: list[tuple[str, dict[str, Any], Any]] = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
        if m.get("role") == "tool":
            name, args = calls.get(m.get("tool_call_id"), ("?", {}))
            content = m.get("content")
            try:
                result = json.loads(content)
            except (TypeError, ValueError):
                result = content
            done.append((name, args, result))
    return user, done
