"""Recording helpers shared by the agents (sdk and otlp routes) and the file checks."""
import json
import random
import re
from contextlib import contextmanager

import trajdebug
from openai import OpenAI

SERVER = None  # the one FakeModelServer, set by generate.py

BANNED = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|planted|inject|corrupt)")


def check_text(text, where):
    m = BANNED.search(text.lower())
    assert m is None, f"{where}: recorded text holds {m.group(0)!r}"


def dumps(v):
    return json.dumps(v, sort_keys=True, default=str)


def client():
    return OpenAI(base_url=SERVER.base_url, api_key="not-needed", max_retries=0)


def ask(prompt, system):
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": prompt}]
    r = client().chat.completions.create(model=SERVER.model, messages=msgs, temperature=0)
    return msgs, r.choices[0].message.content


def last_user(request):
    if "messages" in request.body:
        return request.body["messages"][-1]["content"]
    return request.body["input"]


class SdkRec:
    route = "sdk"

    def __init__(self, name, path, task):
        self._cm = trajdebug.run(name, path=path, task=task)

    def __enter__(self):
        self.run = self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)

    @property
    def state(self):
        return trajdebug.current_run().state

    def call(self, name, kind, fn, *args):
        return trajdebug.step(name, kind=kind)(fn)(*args)

    def call_retry(self, name, kind, fn, *args):
        wrapped = trajdebug.retry(attempts=3, on=(ConnectionError, TimeoutError))(trajdebug.step(name, kind=kind)(fn))
        return wrapped(*args)

    @contextmanager
    def group(self, name, data):
        with trajdebug.step(name, kind="agent", input=data) as s:
            box = {}
            yield box
            s.output = box.get("out")

    def llm(self, name, system, prompt):
        with trajdebug.step(name, kind="llm") as s:
            msgs, text = ask(prompt, system)
            s.input = msgs
            s.output = text
        return text


from opentelemetry.sdk.trace.id_generator import IdGenerator  # noqa: E402


class _Ids(IdGenerator):
    def __init__(self):
        self.rng = random.Random(7)

    def generate_span_id(self):
        return self.rng.getrandbits(64)

    def generate_trace_id(self):
        return self.rng.getrandbits(128)


_OTEL = {}


def _otel():
    if not _OTEL:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        ids = _Ids()
        spans = InMemorySpanExporter()
        provider = TracerProvider(id_generator=ids)
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTEL.update(ids=ids, spans=spans, provider=provider)
    return _OTEL


KINDS = {"tool": "TOOL", "llm": "LLM", "retrieval": "RETRIEVER", "agent": "AGENT", "parse": "CHAIN",
         "condition": "CHAIN", "state": "CHAIN", "other": "CHAIN", "input": "CHAIN", "output": "CHAIN"}


class OtlpRec:
    route = "otlp"

    def __init__(self, name, path, task, seed):
        o = _otel()
        o["ids"].rng = random.Random(seed)
        o["spans"].clear()
        self.o, self.name, self.path, self.task = o, name, path, task
        self.tracer = o["provider"].get_tracer(name)
        self.state = {}

    def __enter__(self):
        self._root = self.tracer.start_as_current_span(self.name, attributes={
            "openinference.span.kind": "AGENT", "agent.name": self.name, "input.value": self.task})
        self._root.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            return self._root.__exit__(*exc)
        finally:
            from google.protobuf.json_format import MessageToDict
            from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
            env = MessageToDict(encode_spans(self.o["spans"].get_finished_spans()))
            with open(self.path, "w") as f:
                json.dump(env, f)

    def call(self, name, kind, fn, *args):
        with self.tracer.start_as_current_span(name, attributes={
                "openinference.span.kind": KINDS[kind], "input.value": dumps(list(args)),
                "input.mime_type": "application/json"}) as sp:
            out = fn(*args)
            sp.set_attribute("output.value", dumps(out))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    def call_retry(self, name, kind, fn, *args):
        for attempt in range(1, 4):
            try:
                return self.call(name, kind, fn, *args)
            except (ConnectionError, TimeoutError):
                if attempt == 3:
                    raise

    @contextmanager
    def group(self, name, data):
        with self.tracer.start_as_current_span(name, attributes={
                "openinference.span.kind": "AGENT", "input.value": dumps(data)}) as sp:
            box = {}
            yield box
            sp.set_attribute("output.value", dumps(box.get("out")))

    def llm(self, name, system, prompt):
        return ask(prompt, system)[1]


def oa_outputs(request):
    """(tool name, parsed output) pairs a model request holds, for the Responses and Chat Completions APIs."""
    import ast
    names, outs = {}, []
    if "input" in request.body and isinstance(request.body["input"], list):
        for it in request.body["input"]:
            if isinstance(it, dict) and it.get("type") == "function_call":
                names[it["call_id"]] = it["name"]
            elif isinstance(it, dict) and it.get("type") == "function_call_output":
                outs.append((names.get(it["call_id"]), it["output"]))
    else:
        for m in request.body.get("messages", []):
            for tc in m.get("tool_calls") or []:
                names[tc["id"]] = tc["function"]["name"]
            if m.get("role") == "tool":
                c = m["content"]
                outs.append((names.get(m["tool_call_id"]), c if isinstance(c, str) else c[0]["text"]))
    res = []
    for n, o in outs:
        try:
            res.append((n, ast.literal_eval(o)))
        except (ValueError, SyntaxError):
            res.append((n, o))
    return res


def oa_instructions(request):
    if "instructions" in request.body:
        return request.body.get("instructions") or ""
    msgs = request.body.get("messages", [])
    return msgs[0]["content"] if msgs and msgs[0]["role"] == "system" else ""


def oa_user_text(request):
    items = request.body.get("input") if "input" in request.body else request.body.get("messages", [])
    if isinstance(items, str):
        return items
    for it in items:
        if isinstance(it, dict) and it.get("role") == "user":
            c = it["content"]
            return c if isinstance(c, str) else "".join(p.get("text", "") for p in c)
    return ""
