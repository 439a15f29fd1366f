"""OTLP route helpers: OpenTelemetry SDK spans with OpenInference attributes, written as one OTLP/JSON file."""

from __future__ import annotations

import base64
import hashlib
import json
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from .common import FORBIDDEN, server


class _Ids(IdGenerator):
    """Deterministic span and trace ids (seeded by the output file), none spelling a flagged word in base64."""

    def __init__(self, seed: str) -> None:
        self.seed, self.n = seed, 0

    def _next(self, size: int) -> int:
        while True:
            self.n += 1
            raw = hashlib.sha256(f"{self.seed}/{self.n}".encode()).digest()[:size]
            if any(raw) and not FORBIDDEN.search(base64.b64encode(raw).decode()):
                return int.from_bytes(raw, "big")

    def generate_span_id(self) -> int:
        return self._next(8)

    def generate_trace_id(self) -> int:
        return self._next(16)


def _val(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


class Tracing:
    """One agent run: a tracer whose finished spans are kept in memory, then written as OTLP/JSON."""

    def __init__(self, service: str, seed: str) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}), id_generator=_Ids(seed))
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("suite_zu")

    @contextmanager
    def span(self, name: str, kind: str, input: Any = None, **attrs: Any) -> Iterator[Any]:
        with self.tracer.start_as_current_span(name) as sp:
            sp.set_attribute("openinference.span.kind", kind)
            if input is not None:
                sp.set_attribute("input.value", _val(input))
                sp.set_attribute("input.mime_type", "application/json" if not isinstance(input, str) else "text/plain")
            for k, v in attrs.items():
                sp.set_attribute(k, v)
            yield sp

    @staticmethod
    def out(sp: Any, value: Any) -> Any:
        sp.set_attribute("output.value", _val(value))
        sp.set_attribute("output.mime_type", "application/json" if not isinstance(value, str) else "text/plain")
        return value

    @staticmethod
    def fail(sp: Any, exc: BaseException) -> None:
        sp.record_exception(exc)
        sp.set_status(Status(StatusCode.ERROR, str(exc)))

    def llm(self, name: str, system: str, user: Any) -> str:
        from .sdkutil import client

        msgs = [{"role": "system", "content": system}, {"role": "user", "content": _val(user)}]
        with self.span(name, "LLM", {"messages": msgs}) as sp:
            for i, m in enumerate(msgs):
                sp.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                sp.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            r = client().chat.completions.create(model="gpt-4o-mini", messages=msgs)
            text = r.choices[0].message.content or ""
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("llm.model_name", r.model)
            sp.set_attribute("llm.provider", "openai")
            sp.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
            sp.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
            self.out(sp, text)
        return text

    def write(self, path: Path) -> None:
        self.provider.force_flush()
        doc = MessageToDict(encode_spans(self.exporter.get_finished_spans()))
        if path.exists():
            old = json.loads(path.read_text())
            doc = {"resourceSpans": old["resourceSpans"] + doc["resourceSpans"]}
        path.write_text(json.dumps(doc))
        self.provider.shutdown()


__all__ = ["Tracing", "server"]
