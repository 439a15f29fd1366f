"""Shared plumbing for the suite's agents: the model brain dispatch, the OTLP session, chat calls."""
import ast
import json

from trajdebug.testing import Reply, tool_call  # noqa: F401  (re-exported for the agents)


def brain_from(handlers):
    """A FakeModelServer policy: the system message starts with '#task'; the last user message is JSON."""

    def policy(request):
        body = request.body
        if "messages" in body:
            msgs = body["messages"]
            system = next((m["content"] for m in msgs if m["role"] == "system"), "")
            user = [m["content"] for m in msgs if m["role"] == "user"][-1]
        else:
            items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
            system = body.get("instructions") or ""
            user = next(i["content"] for i in items if isinstance(i, dict) and i.get("role") == "user")
        task = system.split()[0].lstrip("#") if system else ""
        if isinstance(user, list):
            user = " ".join(p.get("text", "") for p in user if isinstance(p, dict))
        try:
            payload = json.loads(user)
        except (ValueError, TypeError):
            payload = user
        return handlers[task](payload, request)

    return policy


def tool_outputs(request):
    """The function results an Agents SDK request carries, in order: [(name, value)]."""
    body = request.body
    out = []
    if "input" in body and isinstance(body["input"], list):
        names = {}
        for item in body["input"]:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                names[item["call_id"]] = item["name"]
            elif item.get("type") == "function_call_output":
                out.append((names.get(item["call_id"]), _lit(item["output"])))
    else:
        names = {}
        for m in body.get("messages", []):
            for c in m.get("tool_calls") or []:
                names[c["id"]] = c["function"]["name"]
            if m.get("role") == "tool":
                out.append((names.get(m["tool_call_id"]), _lit(m["content"])))
    return out


def _lit(text):
    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        try:
            return json.loads(text)
        except ValueError:
            return text


def chat(client, model, task, payload):
    """One Chat Completions call: '#task' system message, JSON user message; returns the assistant message."""
    messages = [{"role": "system", "content": f"#{task}"}, {"role": "user", "content": json.dumps(payload)}]
    r = client.chat.completions.create(model=model, messages=messages)
    return messages, {"role": "assistant", "content": r.choices[0].message.content}


class OtlpSession:
    """One TracerProvider with the OpenAI client instrumented; spans collected per run."""

    def __init__(self):
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        OpenAIInstrumentor().instrument(tracer_provider=self.provider)

    def tracer(self, name):
        return self.provider.get_tracer(name)

    def dump(self, path):
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

        doc = MessageToDict(encode_spans(self.spans.get_finished_spans()))
        self.spans.clear()
        with open(path, "w") as f:
            json.dump(doc, f)


_OTLP = None


def otlp():
    global _OTLP
    if _OTLP is None:
        _OTLP = OtlpSession()
    return _OTLP


def span_attrs(kind, inp=None, out=None, **extra):
    a = {"openinference.span.kind": kind}
    if inp is not None:
        a["input.value"] = json.dumps(inp)
        a["input.mime_type"] = "application/json"
    if out is not None:
        a["output.value"] = json.dumps(out)
        a["output.mime_type"] = "application/json"
    a.update(extra)
    return a


def set_out(span, out):
    span.set_attribute("output.value", json.dumps(out))
    span.set_attribute("output.mime_type", "application/json")
