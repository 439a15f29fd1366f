"""Shared helpers of the suite_zzn agents: the model client and prompt blocks the scripted brains read."""
from __future__ import annotations

import json

from openai import OpenAI


def client(server) -> OpenAI:
    return OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)


def block(title: str, **parts) -> str:
    """A prompt: a first line naming the task, then one `key: json` line per part."""
    return title + "\n" + "\n".join(f"{k}: {json.dumps(v, sort_keys=True)}" for k, v in parts.items())


def parse_block(text: str) -> tuple[str, dict]:
    title, *lines = text.split("\n")
    parts = {}
    for line in lines:
        if ": " in line:
            k, v = line.split(": ", 1)
            try:
                parts[k] = json.loads(v)
            except ValueError:
                parts[k] = v
    return title, parts


def last_user(request) -> str:
    body = request.body
    if "messages" in body:
        msgs = [m for m in body["messages"] if m.get("role") == "user"]
        c = msgs[-1]["content"]
        return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    raise ValueError("no messages")


def agent_history(request) -> tuple[str, str, list]:
    """(instructions, first user text, [(tool name, args, output text)]) of an Agents SDK request."""
    import ast

    body = request.body
    calls, outs, user, instr = {}, {}, "", ""
    if "input" in body:
        instr = body.get("instructions") or ""
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        for it in items:
            if it.get("type") == "function_call":
                calls[it["call_id"]] = (it["name"], json.loads(it["arguments"] or "{}"))
            elif it.get("type") == "function_call_output":
                outs[it["call_id"]] = it["output"]
            elif it.get("role") == "user" and not user:
                c = it["content"]
                user = c if isinstance(c, str) else " ".join(p.get("text", "") for p in c)
    else:
        for m in body["messages"]:
            if m["role"] == "system":
                instr = m["content"]
            elif m["role"] == "user" and not user:
                user = m["content"] if isinstance(m["content"], str) else " ".join(p.get("text", "") for p in m["content"])
            elif m["role"] == "assistant":
                for tc in m.get("tool_calls") or []:
                    calls[tc["id"]] = (tc["function"]["name"], json.loads(tc["function"]["arguments"] or "{}"))
            elif m["role"] == "tool":
                outs[m["tool_call_id"]] = m["content"]
    hist = []
    for cid, (name, args) in calls.items():
        out = outs.get(cid)
        val = out
        if isinstance(out, str):
            for loader in (json.loads, ast.literal_eval):
                try:
                    val = loader(out)
                    break
                except Exception:
                    continue
        hist.append((name, args, val))
    return instr, user, hist


class Otlp:
    """One OTLP recording: an OpenTelemetry tracer whose spans carry OpenInference attributes, and the
    `openai` client instrumented by openinference-instrumentation-openai, written as OTLP/JSON."""

    def __init__(self, scope: str):
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer(scope)

    def span(self, name: str, kind: str, inp=None, **attrs):
        a = {"openinference.span.kind": kind, **attrs}
        if inp is not None:
            a["input.value"] = json.dumps(inp, sort_keys=True)
            a["input.mime_type"] = "application/json"
        return self.tracer.start_as_current_span(name, attributes=a)

    def call(self, name: str, kind: str, fn, inp: dict, **attrs):
        """Run fn(**inp) inside a span whose input and output are recorded."""
        if kind == "TOOL":
            attrs.setdefault("tool.name", name)
        with self.span(name, kind, inp, **attrs) as sp:
            out = fn(**inp)
            sp.set_attribute("output.value", json.dumps(out, sort_keys=True))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    def close(self, path) -> None:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        self.instrumentor.uninstrument()
        self.provider.force_flush()
        spans = sorted(self.spans.get_finished_spans(), key=lambda s: s.start_time)
        with open(path, "w") as f:
            json.dump(MessageToDict(encode_spans(spans)), f)
        self.provider.shutdown()
