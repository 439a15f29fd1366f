"""Shared helpers for suite_zzzn agents: OTLP capture and JSON helpers."""
import json

_OTLP = {}


def otlp_tracer(name):
    """A tracer whose spans land in one in-memory exporter; the OpenAI client is instrumented once."""
    if "provider" not in _OTLP:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        _OTLP.update(provider=provider, exporter=exporter)
    return _OTLP["provider"].get_tracer(name)


def otlp_write(path):
    """Write the finished spans as one OTLP JSON document and clear the exporter."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    exporter = _OTLP["exporter"]
    doc = MessageToDict(encode_spans(exporter.get_finished_spans()))
    exporter.clear()
    with open(path, "w") as f:
        json.dump(doc, f)


def last_user(request):
    msgs = request.body.get("messages") or []
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            return c if isinstance(c, str) else json.dumps(c)
    return ""


def system_text(request):
    msgs = request.body.get("messages") or []
    return "\n".join(m.get("content") for m in msgs if m.get("role") == "system" and isinstance(m.get("content"), str))
