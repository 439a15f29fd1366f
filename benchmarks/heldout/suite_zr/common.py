"""Truth records, the shared fake model server and the generator's checks."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trajdebug
from trajdebug.testing import FakeModelServer, Reply

FORBIDDEN = re.compile(r"(?<![A-Za-z])(fault|bug|wrong|stale|planted|inject|corrupt)", re.I)

# ---------------------------------------------------------------- model server
HANDLERS: dict[str, Callable[[list[dict], list[dict]], Any]] = {}
_SERVER: FakeModelServer | None = None


def handler(tag: str):
    def deco(fn):
        HANDLERS[tag] = fn
        return fn
    return deco


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _policy(request) -> Any:
    body = request.body or {}
    msgs = body.get("messages") or []
    system = next((_text(m.get("content")) for m in msgs if m.get("role") in ("system", "developer")), "")
    tag = system.split("]", 1)[0].lstrip("[")
    fn = HANDLERS.get(tag)
    if fn is None:
        return Reply(status=400, error=f"no such model route: {tag!r}")
    return fn(msgs, body.get("tools") or [])


def server() -> FakeModelServer:
    global _SERVER
    if _SERVER is None:
        _SERVER = FakeModelServer(_policy).start()
    return _SERVER


_CLIENT = None


def chat(system: str, user: str) -> str:
    """One chat completion from the fake server (what an agent's model call does)."""
    global _CLIENT
    from openai import OpenAI

    if _CLIENT is None:
        _CLIENT = OpenAI(base_url=server().base_url, api_key="test-key", max_retries=0)
    r = _CLIENT.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "system", "content": system}, {"role": "user", "content": user}]
    )
    return r.choices[0].message.content or ""


def last_user(msgs: list[dict]) -> str:
    return next((_text(m.get("content")) for m in reversed(msgs) if m.get("role") == "user"), "")


def tool_results(msgs: list[dict]) -> list[str]:
    return [_text(m.get("content")) for m in msgs if m.get("role") == "tool"]


def tool_names_called(msgs: list[dict]) -> list[str]:
    out = []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            out.append(c["function"]["name"])
    return out


# ---------------------------------------------------------------- truth
def truth(case: str, agent: str, route: str, kind: str, root: tuple[str, int], failure: tuple[str, int], description: str) -> dict:
    return {
        "case": case, "agent": agent, "route": route, "fault_kind": kind,
        "root": {"name": root[0], "occurrence": root[1], "kind": None},
        "failure": {"name": failure[0], "occurrence": failure[1]},
        "hops": None, "description": description,
    }


def load(path: Path) -> list:
    fmt = "otlp" if path.suffix == ".json" else None
    return trajdebug.load_runs(str(path), fmt=fmt)


def ordered(run) -> list:
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def nth(steps: list, name: str, occ: int):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occ, f"step {name!r} #{occ} not in run (found {len(same)})"
    return same[occ - 1]


def check_case(d: Path, t: dict, ext: str) -> dict:
    failed = load(d / f"failed.{ext}")
    assert len(failed) == 1, f"{t['case']}: failed file holds {len(failed)} runs"
    run = failed[0]
    assert run.outcome == "failure", f"{t['case']}: failed run outcome {run.outcome}"
    control = load(d / f"control.{ext}")
    assert len(control) == 1 and control[0].outcome == "success", f"{t['case']}: control {[r.outcome for r in control]}"
    refs = load(d / f"with_refs.{ext}")
    outs = sorted(r.outcome for r in refs)
    assert outs == ["failure"] + ["success"] * 4, f"{t['case']}: with_refs outcomes {outs}"
    steps = ordered(run)
    root = nth(steps, t["root"]["name"], t["root"]["occurrence"])
    fail = nth(steps, t["failure"]["name"], t["failure"]["occurrence"])
    assert fail.start_ns > root.start_ns, f"{t['case']}: failure starts before root"
    ids = [s.step_id for s in steps]
    t["root"]["kind"] = root.kind
    t["hops"] = ids.index(fail.step_id) - ids.index(root.step_id)
    for f in d.iterdir():
        if f.suffix in (".json", ".jsonl") and f.name != "truth.json":
            m = FORBIDDEN.search(f.read_text())
            assert m is None, f"{t['case']}: {f.name} holds forbidden text near {f.read_text()[max(0, m.start()-60):m.end()+20]!r}"
    return t


def dump(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


# ---------------------------------------------------------------- tool-calling transcripts
def calls_and_results(msgs: list[dict]) -> list[tuple[str, dict, str]]:
    """(tool name, arguments, result text) for every tool call answered so far, in order."""
    by_id: dict[str, tuple[str, dict]] = {}
    order: list[str] = []
    for m in msgs:
        for c in m.get("tool_calls") or []:
            args = c["function"].get("arguments") or "{}"
            by_id[c["id"]] = (c["function"]["name"], json.loads(args) if isinstance(args, str) else args)
            order.append(c["id"])
    results = {m.get("tool_call_id"): _text(m.get("content")) for m in msgs if m.get("role") == "tool"}
    return [(by_id[i][0], by_id[i][1], results[i]) for i in order if i in results]


def first_user(msgs: list[dict]) -> str:
    return next((_text(m.get("content")) for m in msgs if m.get("role") == "user"), "")


def run_agents(agent, prompt: str, path: Path, name: str, task: str) -> None:
    """Run an Agents SDK agent with the trajdebug processor; a raised error is the run's failure."""
    import asyncio

    from agents import RunConfig, Runner, set_trace_processors
    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    proc = TrajdebugProcessor(path=str(path), name=name, task=task)
    set_trace_processors([proc])
    try:
        global _LOOP
        if _LOOP is None:
            _LOOP = asyncio.new_event_loop()
        _LOOP.run_until_complete(Runner.run(agent, prompt, run_config=RunConfig(workflow_name=name), max_turns=30))
    except Exception:  # noqa: BLE001 - the booking API's refusal ends the run
        pass
    finally:
        set_trace_processors([])


_LOOP = None
_ASYNC_CLIENT = None


def agents_model():
    global _ASYNC_CLIENT
    from agents import OpenAIChatCompletionsModel
    from openai import AsyncOpenAI

    if _ASYNC_CLIENT is None:
        _ASYNC_CLIENT = AsyncOpenAI(base_url=server().base_url, api_key="test-key", max_retries=0)
    return OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=_ASYNC_CLIENT)


# ---------------------------------------------------------------- OpenTelemetry spans (OpenInference conventions)
class Spans:
    """One OTLP/JSON file of OpenInference spans: `span(name, kind, input)` blocks, then `write(path)`."""

    def __init__(self, service: str) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zr")

    def span(self, name: str, kind: str, input: Any = None, **attrs: Any):
        from contextlib import contextmanager

        @contextmanager
        def cm():
            with self.tracer.start_as_current_span(name) as sp:
                sp.set_attribute("openinference.span.kind", kind)
                if input is not None:
                    sp.set_attribute("input.value", input if isinstance(input, str) else json.dumps(input))
                    sp.set_attribute("input.mime_type", "text/plain" if isinstance(input, str) else "application/json")
                for k, v in attrs.items():
                    sp.set_attribute(k, v)
                box: dict = {}
                yield box
                if "output" in box:
                    out = box["output"]
                    sp.set_attribute("output.value", out if isinstance(out, str) else json.dumps(out))
                    sp.set_attribute("output.mime_type", "text/plain" if isinstance(out, str) else "application/json")
        return cm()

    def llm(self, name: str, system: str, user: str) -> str:
        with self.span(name, "LLM", None, **{
            "llm.model_name": "gpt-4o-mini",
            "llm.input_messages.0.message.role": "system", "llm.input_messages.0.message.content": system,
            "llm.input_messages.1.message.role": "user", "llm.input_messages.1.message.content": user,
        }) as box:
            text = chat(system, user)
            from opentelemetry import trace as _t

            sp = _t.get_current_span()
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            box["output"] = text
        return text

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.provider.force_flush()
        msg = encode_spans(self.exporter.get_finished_spans())
        Path(path).write_text(json.dumps(MessageToDict(msg)))
        self.provider.shutdown()
