"""Process-wide plumbing: the fake model server and the OpenTelemetry pipeline (route 3)."""

from __future__ import annotations

import random
from typing import Any

from sb.fakellm import FakeModelServer


def _seeded_ids(seed: int) -> Any:
    """An OpenTelemetry id generator with a fixed seed, so that trace and span ids repeat between runs."""
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class SeededIds(RandomIdGenerator):
        def __init__(self) -> None:
            self._rng = random.Random(seed)

        def generate_span_id(self) -> int:
            return self._rng.getrandbits(64) or 1

        def generate_trace_id(self) -> int:
            return self._rng.getrandbits(128) or 1

    return SeededIds()


class Otel:
    def __init__(self) -> None:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "heldout-b-agents", "deployment.environment": "bench"}),
            id_generator=_seeded_ids(20250611),
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self._instrumentor: Any = None

    def tracer(self, name: str) -> Any:
        return self.provider.get_tracer(name, "1.0.0")

    def instrument(self) -> None:
        if self._instrumentor is None:
            from openinference.instrumentation.openai import OpenAIInstrumentor

            self._instrumentor = OpenAIInstrumentor()
            self._instrumentor.instrument(tracer_provider=self.provider)

    def uninstrument(self) -> None:
        if self._instrumentor is not None:
            self._instrumentor.uninstrument()
            self._instrumentor = None

    def clear(self) -> None:
        self.exporter.clear()

    def take(self) -> list[Any]:
        spans = list(self.exporter.get_finished_spans())
        self.exporter.clear()
        return spans


class Env:
    def __init__(self) -> None:
        self._server: FakeModelServer | None = None
        self._otel: Otel | None = None

    @property
    def server(self) -> FakeModelServer:
        if self._server is None:
            self._server = FakeModelServer().start()
        return self._server

    @property
    def otel(self) -> Otel:
        if self._otel is None:
            self._otel = Otel()
        return self._otel

    def prepare(self, route: str) -> None:
        if route == "otlp":
            self.otel.instrument()
        elif self._otel is not None:
            self.otel.uninstrument()

    def close(self) -> None:
        if self._otel is not None:
            self._otel.uninstrument()
        if self._server is not None:
            self._server.stop()


ENV = Env()
