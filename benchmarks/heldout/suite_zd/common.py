"""Truth records, the fake model policy plumbing and the generator's checks."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|planted|inject|corrupt)", re.I)


def last_user_json(req) -> dict:
    body = req.body or {}
    msgs = body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            if isinstance(c, list):
                c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
            try:
                return json.loads(c)
            except Exception:
                return {"text": c}
    return {}


def tool_results(req) -> list[str]:
    msgs = (req.body or {}).get("messages") or []
    return [m.get("content") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
            for m in msgs if m.get("role") == "tool"]


def system_text(req) -> str:
    msgs = (req.body or {}).get("messages") or []
    for m in msgs:
        if m.get("role") in ("system", "developer"):
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def load(path: Path, route: str):
    if route == "otlp":
        from trajdebug.sources.formats import import_path
        res = import_path(path, "otlp")
        return list(res.runs)
    import trajdebug
    return list(trajdebug.load_runs(str(path)))


def ordered(run) -> list:
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def nth(steps, name: str, occ: int):
    same = [s for s in steps if s.name == name]
    return (steps.index(same[occ - 1]), same[occ - 1]) if len(same) >= occ else (None, None)


def check_text(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    assert not m, f"{path}: forbidden word {text[max(0, m.start()-60):m.end()+60]!r}"


def build_truth(case: dict, agent, failed_run) -> dict[str, Any]:
    steps = ordered(failed_run)
    ri, root = nth(steps, case["root"], case["occ"])
    assert root is not None, f"{case['id']}: root {case['root']}#{case['occ']} not in failed run: {[s.name for s in steps]}"
    fails = [s for s in steps if s.name == case["failure"] and s.status == "error"]
    assert fails, f"{case['id']}: no errored {case['failure']} in {[(s.name, s.status) for s in steps]}"
    fstep = fails[0]
    fi = steps.index(fstep)
    focc = [s for s in steps if s.name == case["failure"]].index(fstep) + 1
    assert fi > ri, f"{case['id']}: failure {fi} not after root {ri}"
    return {
        "case": case["id"], "agent": agent.NAME, "route": agent.ROUTE, "fault_kind": case["kind"],
        "root": {"name": root.name, "occurrence": case["occ"], "kind": root.kind},
        "failure": {"name": fstep.name, "occurrence": focc},
        "hops": fi - ri, "description": case["description"],
    }


_CLIENTS: dict[str, Any] = {}


def chat_json(base_url: str, system: str, payload: dict) -> dict:
    """One chat completion at the local model server; the answer is JSON text."""
    from openai import OpenAI
    client = _CLIENTS.get(base_url)
    if client is None:
        client = _CLIENTS[base_url] = OpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": json.dumps(payload)}],
    )
    return json.loads(reply.choices[0].message.content)


def tool_outputs(req) -> dict[str, list]:
    """name -> [(arguments, output text)] for the tool calls answered in the conversation so far."""
    msgs = (req.body or {}).get("messages") or []
    calls = {}
    out: dict[str, list] = {}
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = (tc["function"]["name"], tc["function"]["arguments"])
        if m.get("role") == "tool" and m.get("tool_call_id") in calls:
            name, args = calls[m["tool_call_id"]]
            c = m.get("content")
            if isinstance(c, list):
                c = "".join(p.get("text", "") for p in c if isinstance(p, dict))
            out.setdefault(name, []).append((json.loads(args or "{}"), c))
    return out


def as_json(text: str):
    try:
        return json.loads(text)
    except Exception:
        import ast
        try:
            return ast.literal_eval(text)
        except Exception:
            return text


def agents_setup(base_url: str, processor) -> None:
    from agents import set_default_openai_api, set_default_openai_client, set_trace_processors
    from openai import AsyncOpenAI
    set_default_openai_client(AsyncOpenAI(base_url=base_url, api_key="sk-local-test", max_retries=0), use_for_tracing=False)
    set_default_openai_api("chat_completions")
    set_trace_processors([processor])


class Otlp:
    """OpenTelemetry spans with OpenInference attributes, kept in memory and written as one OTLP/JSON file."""

    def __init__(self, service: str):
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zd")

    def span(self, name: str, kind: str, input: Any = None, **attrs):
        from contextlib import contextmanager

        @contextmanager
        def cm():
            with self.tracer.start_as_current_span(name) as sp:
                sp.set_attribute("openinference.span.kind", kind)
                for k, v in attrs.items():
                    sp.set_attribute(k, v)
                if input is not None:
                    sp.set_attribute("input.value", json.dumps(input))
                    sp.set_attribute("input.mime_type", "application/json")
                box: dict = {}
                yield box
                if "output" in box:
                    sp.set_attribute("output.value", json.dumps(box["output"]))
                    sp.set_attribute("output.mime_type", "application/json")
        return cm()

    def llm(self, base_url: str, name: str, system: str, payload: dict) -> dict:
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", "LLM")
            sp.set_attribute("llm.model_name", "gpt-4o-mini")
            sp.set_attribute("llm.system", "openai")
            sp.set_attribute("llm.input_messages.0.message.role", "system")
            sp.set_attribute("llm.input_messages.0.message.content", system)
            sp.set_attribute("llm.input_messages.1.message.role", "user")
            sp.set_attribute("llm.input_messages.1.message.content", json.dumps(payload))
            out = chat_json(base_url, system, payload)
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", json.dumps(out))
            return out

    def write(self, path: Path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
        self.provider.force_flush()
        msg = encode_spans(self.exporter.get_finished_spans())
        path.write_text(json.dumps(MessageToDict(msg)))
