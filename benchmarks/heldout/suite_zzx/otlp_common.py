"""OTLP route helpers: OpenTelemetry SDK spans with OpenInference attributes, the openai client instrumented by
openinference-instrumentation-openai, exported as one OTLP/JSON envelope per run."""
import json

from google.protobuf.json_format import MessageToDict
from openai import OpenAI
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from common import loose_json, prompt

_STATE = {}


def _setup(service):
    if service not in _STATE:
        from openinference.instrumentation.openai import OpenAIInstrumentor

        for old in list(_STATE.values()):
            OpenAIInstrumentor().uninstrument()
        _STATE.clear()
        spans = InMemorySpanExporter()
        provider = TracerProvider(resource=Resource.create({"service.name": service}))
        provider.add_span_processor(SimpleSpanProcessor(spans))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _STATE[service] = (spans, provider.get_tracer(service))
    return _STATE[service]


class Trace:
    def __init__(self, service, server):
        self.spans, self.tracer = _setup(service)
        self.spans.clear()
        self.server = server
        self.client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)

    def span(self, name, kind, inp=None, attrs=None):
        a = {"openinference.span.kind": kind}
        if inp is not None:
            a["input.value"] = json.dumps(inp, sort_keys=True)
            a["input.mime_type"] = "application/json"
        a.update(attrs or {})
        return self.tracer.start_as_current_span(name, attributes=a)

    def step(self, name, kind, inp, fn):
        """A TOOL / CHAIN / RETRIEVER span around fn(), its result as output.value."""
        with self.span(name, kind, inp) as sp:
            out = fn()
            sp.set_attribute("output.value", json.dumps(out, sort_keys=True))
            sp.set_attribute("output.mime_type", "application/json")
            return out

    def ask(self, system, task, text, payload):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": prompt(task, text, payload)}]
        r = self.client.chat.completions.create(model=self.server.model, messages=messages, temperature=0)
        return r.choices[0].message.content

    def ask_json(self, system, task, text, payload):
        return loose_json(self.ask(system, task, text, payload))

    def write(self, path):
        env = MessageToDict(encode_spans(self.spans.get_finished_spans()))
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(env) + "\n")
        self.spans.clear()
