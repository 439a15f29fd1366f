"""Tests for the OTLP/JSON importer, on real OpenTelemetry SDK output."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trajdebug.core.jsonl import FormatError
from trajdebug.core.model import Run
from trajdebug.sources.formats import import_path, sniff
from trajdebug.sources.formats.otlp import read_otlp, runs_from_otlp
from trajdebug.sources.formats.otlp_json import any_value, attributes, hex_id


otel_sdk = pytest.importorskip(
    "opentelemetry.sdk.trace", reason="opentelemetry-sdk is needed for real SDK output"
)

from opentelemetry import trace  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402


# -- encoding real SDK spans as OTLP/JSON ------------------------------------------


def _any(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [_any(x) for x in v]}}
    return {"stringValue": str(v)}


def _kvs(attrs: Any) -> list[dict[str, Any]]:
    return [{"key": k, "value": _any(v)} for k, v in (attrs or {}).items()]


def encode_hex(spans: tuple[ReadableSpan, ...]) -> dict[str, Any]:
    """The OTLP/JSON encoding of SDK spans as the spec writes it: hex ids, integer enums, int64 as strings."""
    by_resource: dict[int, tuple[Any, list[dict[str, Any]]]] = {}
    for s in spans:
        ctx = s.get_span_context()
        out: dict[str, Any] = {
            "traceId": f"{ctx.trace_id:032x}",
            "spanId": f"{ctx.span_id:016x}",
            "name": s.name,
            "kind": s.kind.value + 1,  # the SDK's SpanKind starts at INTERNAL=0; OTLP has UNSPECIFIED=0
            "startTimeUnixNano": str(s.start_time),
            "endTimeUnixNano": str(s.end_time),
            "attributes": _kvs(s.attributes),
            "events": [
                {"timeUnixNano": str(e.timestamp), "name": e.name, "attributes": _kvs(e.attributes)}
                for e in s.events
            ],
            "links": [
                {
                    "traceId": f"{ln.context.trace_id:032x}",
                    "spanId": f"{ln.context.span_id:016x}",
                    "attributes": _kvs(ln.attributes),
                }
                for ln in s.links
            ],
            "status": {"code": s.status.status_code.value, "message": s.status.description or ""},
        }
        if s.parent is not None:
            out["parentSpanId"] = f"{s.parent.span_id:016x}"
        by_resource.setdefault(id(s.resource), (s.resource, []))[1].append(out)
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _kvs(r.attributes)},
                "scopeSpans": [{"scope": {"name": "test"}, "spans": sp}],
            }
            for r, sp in by_resource.values()
        ]
    }


def encode_proto_json(spans: tuple[ReadableSpan, ...]) -> dict[str, Any]:
    """The protobuf-JSON encoding the OTLP exporter's own encoder gives (base64 ids, enum names)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    doc: dict[str, Any] = MessageToDict(encode_spans(spans))
    return doc


def _base64_ids(doc: dict[str, Any]) -> dict[str, Any]:
    """Rewrite a hex-id document with base64 ids (what protobuf JSON exporters emit)."""
    text = json.dumps(doc)
    out = json.loads(text)

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k in ("traceId", "spanId", "parentSpanId"):
                if isinstance(node.get(k), str):
                    node[k] = base64.b64encode(bytes.fromhex(node[k])).decode()
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(out)
    return out


HAVE_PROTO = importlib.util.find_spec("opentelemetry.exporter.otlp.proto.common") is not None


@pytest.fixture
def tracer() -> Iterator[tuple[trace.Tracer, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider.get_tracer("agent-under-test"), exporter
    provider.shutdown()


# -- an instrumented agent ------------------------------------------------------------


def support_agent(tracer: trace.Tracer, *, bad_lookup: bool = False) -> None:
    """A small tool-calling agent instrumented with OpenInference and GenAI attributes.

    The first tool fails and the agent recovers; the refund tool then fails and
    the error escapes to the root span (the run fails).
    """
    with tracer.start_as_current_span(
        "support-agent", attributes={"openinference.span.kind": "AGENT", "agent.name": "support"}
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "refund order W1 for ana",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "call_1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"user": "ana"}',
            },
        ) as llm1:
            pass
        try:
            with tracer.start_as_current_span(
                "execute_tool lookup",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.call.id": "call_1",
                    "input.value": '{"user": "ana"}',
                },
            ) as tool:
                if not bad_lookup:
                    raise TimeoutError("lookup timed out")
                tool.set_attribute("output.value", '{"user_id": "u-999", "orders": []}')
        except TimeoutError:
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o",
                "llm.input_messages.0.message.role": "tool",
                "llm.input_messages.0.message.tool_call_id": "call_1",
                "llm.input_messages.0.message.content": "lookup timed out",
                "output.value": "refund W1",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "refund",
            links=[trace.Link(llm1.get_span_context(), {"reason": "uses the plan"})],
            attributes={"traceloop.span.kind": "tool"},
        ):
            raise PermissionError("refund not allowed")


def _run(
    tracer_fixture: tuple[trace.Tracer, InMemorySpanExporter], program: Callable[[trace.Tracer], None]
) -> tuple[ReadableSpan, ...]:
    tr, exporter = tracer_fixture
    with pytest.raises(PermissionError):
        program(tr)
    return exporter.get_finished_spans()


def _graph(run: Run) -> tuple[Any, ...]:
    return tuple(
        (
            s.step_id,
            s.name,
            s.kind,
            s.parent_id,
            s.status,
            sorted((d.step_id, d.kind, d.origin) for d in s.deps if d.origin != "inferred"),
        )
        for s in run.steps
    )


class TestRealSdkOutput:
    """Spans from the OpenTelemetry SDK import with the right kinds, errors and edges."""

    def test_kinds_parents_and_ids(self, tracer: Any) -> None:
        """Each span is one step, its id the span id in lowercase hex, with the kind its attributes declare."""
        spans = _run(tracer, support_agent)
        [run] = runs_from_otlp([encode_hex(spans)]).runs
        by_name = {}
        for s in run.steps:
            by_name.setdefault(s.name, []).append(s)
        root = by_name["support-agent"][0]
        assert run.run_id == f"{spans[0].context.trace_id:032x}"
        assert {s.step_id for s in run.steps} == {f"{s.context.span_id:016x}" for s in spans}
        assert root.kind == "agent"
        assert root.parent_id is None
        assert [s.kind for s in by_name["chat gpt-4o"]] == ["llm", "llm"]
        assert by_name["execute_tool lookup"][0].kind == "tool"
        assert by_name["refund"][0].kind == "tool"
        assert all(s.parent_id == root.step_id for s in run.steps if s is not root)
        assert all(s.agent == "support" for s in run.steps)
        # source_index maps each step back to its span in the source document
        assert all(
            f"{spans[s.source_index].context.span_id:016x}" == s.step_id
            for s in run.steps
            if s.source_index is not None
        )
        assert sorted(s.source_index for s in run.steps if s.source_index is not None) == list(
            range(len(spans))
        )

    def test_errors_dedupe_propagation_and_outcome(self, tracer: Any) -> None:
        """An exception recorded at the tool and again at the root is one error that propagated and failed the run."""
        spans = _run(tracer, support_agent)
        [run] = runs_from_otlp([encode_hex(spans)]).runs
        steps = {s.name: s for s in run.steps}
        assert run.outcome == "failure"
        assert run.failure_reason == "refund not allowed"
        assert len(run.errors) == 2
        timeout, refused = run.errors
        assert (timeout.type, timeout.message) == ("TimeoutError", "lookup timed out")
        assert [c.stage for c in timeout.stages] == ["occurred"]
        assert refused.step_id == steps["refund"].step_id
        assert [c.stage for c in refused.stages] == ["occurred", "propagated", "failed"]
        assert refused.stages[1].step_id == steps["support-agent"].step_id
        assert steps["refund"].error is not None
        assert steps["refund"].error.traceback
        assert steps["support-agent"].error is not None
        assert steps["support-agent"].error.error_id == refused.error_id == steps["refund"].error.error_id

    def test_tool_call_ids_and_links_become_edges(self, tracer: Any) -> None:
        """LLM -> tool -> LLM by tool-call id, and a span link, are declared dependencies."""
        spans = _run(tracer, support_agent)
        [run] = runs_from_otlp([encode_hex(spans)]).runs
        llm1, llm2 = (s for s in run.steps if s.kind == "llm")
        tool = next(s for s in run.steps if s.name == "execute_tool lookup")
        refund = next(s for s in run.steps if s.name == "refund")
        assert ("declared", "data") in {(d.origin, d.kind) for d in tool.deps if d.step_id == llm1.step_id}
        assert any(d.step_id == tool.step_id and d.origin == "declared" for d in llm2.deps)
        assert any(d.step_id == llm1.step_id and d.origin == "declared" for d in refund.deps)
        assert llm1.attributes["tool_call_ids"] == ["call_1"]
        assert tool.attributes["tool_call_id"] == "call_1"
        assert llm1.input == {"messages": [{"role": "user", "content": "refund order W1 for ana"}]}
        assert llm1.output["tool_calls"] == [{"id": "call_1", "name": "lookup", "arguments": {"user": "ana"}}]
        assert llm2.output == {"role": "assistant", "content": "refund W1", "tool_calls": []}

    def test_a_retrievers_listed_documents_are_its_output(self, tracer: Any) -> None:
        """OpenInference records what a retriever (or a reranker) returned as ``retrieval.documents.{i}.document.*``
        attributes, not as ``output.value``: the documents (id, content, score, metadata decoded) are the step's
        output, as are OpenTelemetry GenAI's ``gen_ai.retrieval.documents``; an ``output.value`` the span also
        records is read as before."""
        tr, exporter = tracer
        docs = {
            "openinference.span.kind": "RETRIEVER",
            "input.value": "opening hours of the harbour office",
            "retrieval.documents.0.document.id": "kb-12",
            "retrieval.documents.0.document.content": "The harbour office opens at 08:00.",
            "retrieval.documents.0.document.score": 0.91,
            "retrieval.documents.0.document.metadata": '{"source": "handbook.pdf", "page": 4}',
            "retrieval.documents.1.document.id": "kb-40",
            "retrieval.documents.1.document.content": "Closed on Sundays.",
        }
        with tr.start_as_current_span("rag", attributes={"openinference.span.kind": "AGENT"}):
            with tr.start_as_current_span("retrieve", attributes=docs):
                pass
            with tr.start_as_current_span("rerank", attributes={
                "openinference.span.kind": "RERANKER",
                "reranker.output_documents.0.document.id": "kb-40",
                "reranker.output_documents.0.document.content": "Closed on Sundays.",
            }):
                pass
            with tr.start_as_current_span("retrieval kb", attributes={
                "gen_ai.operation.name": "retrieval",
                "gen_ai.retrieval.documents": '[{"id": "kb-7", "score": 0.5}]',
            }):
                pass
            with tr.start_as_current_span("retrieve again", attributes={**docs, "output.value": '["kb-12"]'}):
                pass
        [run] = runs_from_otlp([encode_hex(exporter.get_finished_spans())]).runs
        out = {s.name: s.output for s in run.steps}
        assert out["retrieve"] == [
            {"id": "kb-12", "content": "The harbour office opens at 08:00.", "score": 0.91,
             "metadata": {"source": "handbook.pdf", "page": 4}},
            {"id": "kb-40", "content": "Closed on Sundays."},
        ]
        assert out["rerank"] == [{"id": "kb-40", "content": "Closed on Sundays."}]
        assert out["retrieval kb"] == [{"id": "kb-7", "score": 0.5}]
        assert out["retrieve again"] == ["kb-12"]
        assert next(s for s in run.steps if s.name == "retrieve").input == "opening hours of the harbour office"

    def test_hex_and_base64_encodings_give_the_same_run(self, tracer: Any) -> None:
        """The same spans with hex ids and with base64 ids import to the same graph."""
        spans = _run(tracer, support_agent)
        doc = encode_hex(spans)
        [a] = runs_from_otlp([doc]).runs
        [b] = runs_from_otlp([_base64_ids(doc)]).runs
        assert _graph(a) == _graph(b)
        assert a.errors == b.errors

    @pytest.mark.skipif(not HAVE_PROTO, reason="opentelemetry-exporter-otlp-proto-common is not installed")
    def test_exporter_encoder_output(self, tracer: Any) -> None:
        """The OTLP exporter's own protobuf-JSON encoding (base64 ids, enum names) imports like the spec encoding."""
        spans = _run(tracer, support_agent)
        [a] = runs_from_otlp([encode_hex(spans)]).runs
        [b] = runs_from_otlp([encode_proto_json(spans)]).runs
        assert _graph(a) == _graph(b)
        assert [(e.type, e.message, [c.stage for c in e.stages]) for e in a.errors] == [
            (e.type, e.message, [c.stage for c in e.stages]) for e in b.errors
        ]

    def test_injected_root_cause_is_found(self, tracer: Any) -> None:
        """A user id hallucinated by the LLM (the injected fault) is the top root cause after import; the clean run succeeds."""
        from trajdebug.analysis import analyze

        tr, exporter = tracer
        refund_agent(tr, decided_user="u-123")
        [clean] = runs_from_otlp([encode_hex(exporter.get_finished_spans())]).runs
        exporter.clear()
        with pytest.raises(PermissionError):
            refund_agent(tr, decided_user="u-999")
        [run] = runs_from_otlp([encode_hex(exporter.get_finished_spans())]).runs
        assert clean.outcome == "success"
        assert run.outcome == "failure"
        report = analyze(run, top=3).to_dict()
        decide = next(s for s in run.steps if s.name == "decide")
        assert report["root_causes"][0]["step_id"] == decide.step_id
        assert report["root_causes"][0]["source_index"] == decide.source_index


def refund_agent(tracer: trace.Tracer, *, decided_user: str) -> None:
    """Look a user up, then refund their order as the LLM decides; the refund fails for the wrong user."""
    with tracer.start_as_current_span("refund-agent", attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span(
            "plan",
            attributes={
                "openinference.span.kind": "LLM",
                "input.value": "refund order W1 for ana",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"name": "ana"}',
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={"openinference.span.kind": "TOOL", "tool.id": "c1", "input.value": '{"name": "ana"}'},
        ) as lookup:
            lookup.set_attribute("output.value", json.dumps({"user_id": "u-123", "name": "ana"}))
        args = json.dumps({"user_id": decided_user, "order": "W1"})
        with tracer.start_as_current_span(
            "decide",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "refund order W1 for ana",
                "llm.input_messages.1.message.role": "tool",
                "llm.input_messages.1.message.tool_call_id": "c1",
                "llm.input_messages.1.message.content": json.dumps({"user_id": "u-123", "name": "ana"}),
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c2",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "refund",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": args,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool refund",
            attributes={"openinference.span.kind": "TOOL", "tool.id": "c2", "input.value": args},
        ) as refund:
            if decided_user != "u-123":
                raise PermissionError(f"order W1 does not belong to {decided_user}")
            refund.set_attribute("output.value", "refunded")


class TestFiles:
    """Files as exporters and the collector write them."""

    def test_one_envelope_per_line_and_a_trace_over_several_files(self, tracer: Any, tmp_path: Path) -> None:
        """A trace split across lines and files, read from a directory, is one run; sniffing says otlp."""
        spans = _run(tracer, support_agent)
        halves = (spans[: len(spans) // 2], spans[len(spans) // 2 :])
        d = tmp_path / "spans"
        d.mkdir()
        (d / "a.jsonl").write_text(
            json.dumps(encode_hex(halves[0][:1])) + "\n" + json.dumps(encode_hex(halves[0][1:])) + "\n"
        )
        (d / "b.json").write_text(json.dumps(_base64_ids(encode_hex(halves[1])), indent=2))
        assert sniff(d) == "otlp"
        assert sniff(d / "b.json") == "otlp"
        result = import_path(d)
        [whole] = runs_from_otlp([encode_hex(spans)]).runs
        assert result.problems == []
        [run] = result.runs
        assert _graph(run) == _graph(whole)

    def test_malformed_record_is_reported_and_the_rest_loads(self, tracer: Any, tmp_path: Path) -> None:
        """A bad line and a span with a bad id are problems naming the file and record; valid spans still load."""
        spans = _run(tracer, support_agent)
        doc = encode_hex(spans)
        broken = json.loads(json.dumps(doc))
        broken["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["spanId"] = "not-an-id"
        f = tmp_path / "spans.jsonl"
        f.write_text(json.dumps(doc) + "\n{not json\n" + json.dumps(broken) + "\n")
        result = read_otlp(f)
        assert len(result.runs) == 1
        assert len(result.runs[0].steps) == len(spans)
        messages = [str(p) for p in result.problems]
        assert messages[0].startswith(f"{f}:2: not valid JSON")
        assert messages[1].startswith(f"{f}:3: resourceSpans[0].scopeSpans[0].spans[0]:")
        assert "'not-an-id'" in messages[1]

    def test_a_large_file_streams_and_spills_to_the_same_runs(
        self, tracer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Read a line at a time with spans spilled to disk (as a file past the streaming size is), three
        interleaved traces and a bad line give the same runs and problems as reading the file whole."""
        from trajdebug.sources.formats import otlp

        traces = [_run(tracer, support_agent)]
        for _ in range(2):
            tracer[1].clear()
            traces.append(_run(tracer, support_agent))
        lines = [
            json.dumps(encode_hex(t[i : i + 2])) for i in range(0, max(map(len, traces)), 2) for t in traces if t[i : i + 2]
        ]
        lines.insert(3, "{not json")
        f = tmp_path / "spans.jsonl"
        f.write_text("\n".join(lines) + "\n")
        whole = read_otlp(f)
        monkeypatch.setattr(otlp, "STREAM_FROM", 0)
        monkeypatch.setattr(otlp, "SPILL_SPANS", 3)
        problems: list[FormatError] = []
        streamed = list(otlp.iter_otlp(f, problems))
        assert len(whole.runs) == 3 and streamed == whole.runs
        assert [str(x) for x in problems] == [str(x) for x in whole.problems]
        assert len(problems) == 1 and str(problems[0]).startswith(f"{f}:4: not valid JSON")

    def test_import_into_jsonl_redacts_and_counts_each_secret_once(self, tracer: Any, tmp_path: Path, cli_run: Any) -> None:
        """`trajdebug import --from otlp -o x.jsonl` writes a secret attribute redacted, and the run's
        account counts that redaction once (the runs were redacted twice, and counted twice)."""
        tr, exporter = tracer
        with tr.start_as_current_span("agent") as span:
            span.set_attribute("api_key", "sk-live-0123456789abcdef0123456789")
        f = tmp_path / "spans.jsonl"
        f.write_text(json.dumps(encode_hex(exporter.get_finished_spans())) + "\n")
        out = tmp_path / "out.jsonl"
        cli_run("import", str(f), "--from", "otlp", "-o", str(out), check=True)
        text = out.read_text()
        assert "sk-live" not in text
        end = [r for r in map(json.loads, text.splitlines()) if r["t"] == "end"]
        assert len(end) == 1 and sum(end[0]["recorder"]["redacted"].values()) == 1

    def test_spilled_spans_come_back_equal_whatever_they_hold(self) -> None:
        """Spans written to the spill file come back equal, in order: decoded JSON, and a value only
        pickle can write."""
        from fractions import Fraction

        from trajdebug.sources.formats._stream import pack, unpack
        from trajdebug.sources.formats.otlp_json import Span

        def span(i: int, value: Any) -> Span:
            return Span(
                "ab" * 16, f"{i:016x}", None, "s", 1, i, i + 1, {"v": value, "l": [1, 2.5]},
                [("ev", i, {"k": True})], [("cd" * 16, "ef" * 8, {})], 0, "", {"service.name": "x"}, "scope", i,
            )

        plain = [span(i, "text") for i in range(3)]
        odd = [span(0, "text"), span(1, Fraction(1, 3))]
        assert pack(plain)[:1] == b"m" and unpack(pack(plain)) == plain
        assert pack(odd)[:1] == b"p" and unpack(pack(odd)) == odd

    def test_spans_held_past_the_last_spill_follow_the_spilled_ones(self) -> None:
        """A trace's spans come back in the order added when some were spilled and the last ones are
        still held in memory, and reading them with ``keep`` leaves them to be read again."""
        from trajdebug.sources.formats._stream import SpanSpill
        from trajdebug.sources.formats.otlp_json import Span

        def span(trace: str, i: int) -> Span:
            return Span(trace * 32, f"{i + 1:016x}", None, "s", 1, i, i + 1, {}, [], [], 0, "", {}, "", i)

        with SpanSpill() as spill:
            spill.add([span("a", 0), span("b", 1)], 2)  # spilled at once
            spill.add([span("a", 2)], 2)  # held
            spill.finish()
            assert spill.spilled and [s.index for s in spill.memory["a" * 32]] == [2]
            kept = spill.spans("a" * 32, keep=True)
            assert [s.index for s in kept] == [0, 2]
            assert spill.spans("a" * 32) == kept and "a" * 32 not in spill.memory
            assert [s.index for s in spill.spans("b" * 32)] == [1]

    def test_step_attributes_follow_the_rule_name_by_name_whatever_the_plan(self) -> None:
        """A step keeps a foreign span's attributes but trajdebug's own and the content, takes those
        trajdebug exported without their prefix (a later one wins over an earlier one of the same name),
        and spans with the same names but other values (planned once) keep their own values."""
        from trajdebug.sources.formats.otlp import runs_from_spans
        from trajdebug.sources.formats.otlp_json import Span

        def step_attrs(attrs: dict[str, Any]) -> dict[str, Any]:
            span = Span("cd" * 16, "ef" * 8, None, "s", 0, 1, 2, attrs, [], [], 0, "", {}, "", 0)
            got = dict(runs_from_spans([span]).runs[0].steps[0].attributes)
            return got

        cases = [
            ({"x": 1, "trajdebug.attr.x": 2, "input.value": "hi", "service": "a"}, {"x": 2, "service": "a"}),
            ({"x": 3, "trajdebug.attr.x": 4, "input.value": "ho", "service": "b"}, {"x": 4, "service": "b"}),
            ({"trajdebug.attr.y": 1, "y": 2, "trajdebug.run.name": "r"}, {"y": 2}),
            ({"a": 1, "b": [1, 2]}, {"a": 1, "b": [1, 2]}),
            ({"a": 5, "b": None}, {"a": 5, "b": None}),
        ]
        for attrs, kept in cases:
            assert step_attrs(attrs) == kept

    @settings(max_examples=200, deadline=None)
    @given(
        st.dictionaries(
            st.sampled_from(
                [
                    "input.value", "input.mime_type", "output.value", "output.mime_type", "traceloop.entity.input",
                    "traceloop.entity.output", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "tool.id",
                    "gen_ai.tool.call.id", "tool_call.id", "tool.name", "note",
                ]
            ),
            st.sampled_from(["", "text/plain", "application/json", '{"q": 1}', "[2]", "plain words", "c-7"]),
            max_size=6,
        )
    )
    def test_input_output_and_call_id_are_read_as_the_conventions_say_whatever_the_plan(
        self, attrs: dict[str, str]
    ) -> None:
        """A step's input, output and tool-call id are those the conventions' readers find in its span's
        attributes, with and without each of their names (spans with the same names planned once)."""
        from trajdebug.sources.formats import _semconv as sc
        from trajdebug.sources.formats.otlp import runs_from_spans
        from trajdebug.sources.formats.otlp_json import Span

        for values in (attrs, {k: v + "x" for k, v in attrs.items()}):
            span = Span("cd" * 16, "ef" * 8, None, "s", 0, 1, 2, dict(values), [], [], 0, "", {}, "", 0)
            step = runs_from_spans([span]).runs[0].steps[0]
            assert step.input == sc.io_value(values, "input")
            assert step.output == sc.io_value(values, "output")
            assert step.attributes.get("tool_call_id") == sc.tool_call_id(values)

    def test_nothing_readable_raises(self, tmp_path: Path) -> None:
        """A JSON file with no OTLP envelope raises a FormatError naming the file."""
        f = tmp_path / "x.json"
        f.write_text('{"spans": []}')
        with pytest.raises(FormatError, match=r"x\.json.*not an OTLP envelope"):
            read_otlp(f)

    def test_unfinished_span_makes_the_run_incomplete(self, tmp_path: Path) -> None:
        """A span without an end time is unfinished, and so is its run."""
        doc = {
            "resourceSpans": [
                {
                    "scopeSpans": [
                        {
                            "spans": [
                                {
                                    "traceId": "ab" * 16,
                                    "spanId": "cd" * 8,
                                    "name": "agent",
                                    "startTimeUnixNano": "5",
                                    "kind": "SPAN_KIND_INTERNAL",
                                }
                            ]
                        }
                    ]
                }
            ]
        }
        [run] = runs_from_otlp([doc]).runs
        assert run.outcome == "incomplete"
        assert run.steps[0].end_ns is None
        assert run.steps[0].kind == "other"


def _console_file(path: Path, program: Callable[[trace.Tracer], None]) -> Path:
    """What the SDK's ``ConsoleSpanExporter(out=f)`` writes for a program's spans."""
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter

    with path.open("w", encoding="utf-8") as f:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=f)))
        with pytest.raises(PermissionError):
            program(provider.get_tracer("agent-under-test"))
        provider.shutdown()
    return path


def _shape(run: Run) -> list[tuple[Any, ...]]:
    """`_graph` with each id replaced by its step's position (two recordings of one program get new ids)."""
    at = {s.step_id: n for n, s in enumerate(run.steps)}
    return [(name, kind, at.get(parent), status, [(at[d], k, o) for d, k, o in deps])
            for _, name, kind, parent, status, deps in _graph(run)]


class TestConsoleExporter:
    """The OpenTelemetry SDK's console exporter output (one pretty-printed span object after another)."""

    def test_console_output_imports_as_its_otlp_json_does(self, tracer: Any, tmp_path: Path) -> None:
        """A file written by the SDK's ConsoleSpanExporter is sniffed as otlp and imports to the run its OTLP/JSON
        gives: the same steps, kinds, parents, edges, errors and outcome."""
        console = _console_file(tmp_path / "console_spans.json", support_agent)
        assert console.read_text(encoding="utf-8").startswith('{\n    "name": ')
        assert sniff(console) == "otlp"
        result = import_path(console)
        [run] = result.runs
        [expected] = runs_from_otlp([encode_hex(_run(tracer, support_agent))]).runs
        assert not result.problems
        assert _shape(run) == _shape(expected)
        assert (run.outcome, run.failure_reason, run.name) == ("failure", "refund not allowed", "support-agent")
        assert [(e.type, [c.stage for c in e.stages]) for e in run.errors] == [
            (e.type, [c.stage for c in e.stages]) for e in expected.errors
        ]
        assert run.steps[0].start_ns % 1000 == 0 and run.end_ns and run.end_ns > run.start_ns

    def test_a_damaged_console_span_is_named_by_file_and_line_and_the_rest_load(
        self, tmp_path: Path
    ) -> None:
        """A console-exporter span cut short is a problem naming the file and the line it starts on; the spans
        after it still import."""
        console = _console_file(tmp_path / "spans.json", support_agent)
        lines = console.read_text(encoding="utf-8").splitlines()
        starts = [n for n, line in enumerate(lines) if line == "{"]
        damaged = [*lines[: starts[1]], "{", '    "name": "cut', *lines[starts[1] :]]
        console.write_text("\n".join(damaged) + "\n", encoding="utf-8")
        result = import_path(console, "otlp")
        [run] = result.runs
        [problem] = result.problems
        assert (problem.source, problem.line) == (str(console), starts[1] + 1)
        assert len(run.steps) == len(starts)


class TestConventions:
    """Attribute conventions and encodings."""

    def test_any_value_forms(self) -> None:
        """Every AnyValue form decodes to the plain value."""
        assert any_value({"stringValue": "a"}) == "a"
        assert any_value({"intValue": "12"}) == 12
        assert any_value({"int_value": 3}) == 3
        assert any_value({"doubleValue": 1.5}) == 1.5
        assert any_value({"boolValue": True}) is True
        assert any_value({"arrayValue": {"values": [{"intValue": "1"}, {"stringValue": "x"}]}}) == [1, "x"]
        assert any_value({"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": False}}]}}) == {
            "k": False
        }
        assert any_value({}) is None

    @pytest.mark.parametrize(
        "value",
        [
            {"stringValue": "a"}, {"stringValue": 5}, {"intValue": "12"}, {"intValue": 12}, {"intValue": "-3"},
            {"intValue": "\u00b2"}, {"intValue": "abc"}, {"intValue": 2.0}, {"intValue": True},
            {"doubleValue": 1.5}, {"doubleValue": 2}, {"doubleValue": "1.5"}, {"boolValue": True},
            {"boolValue": "yes"}, {"int_value": "7"}, {"arrayValue": {"values": [{"intValue": "1"}]}}, {},
            {"stringValue": "a", "intValue": "1"}, None, "plain",
            {"arrayValue": {"values": [{"stringValue": "stop"}, {"stringValue": "x"}]}}, {"arrayValue": {"values": []}},
            {"arrayValue": {}}, {"arrayValue": None}, {"arrayValue": {"values": [{"stringValue": "a"}, "b"]}},
            {"arrayValue": {"values": [{"stringValue": "a", "intValue": "1"}]}}, {"arrayValue": {"values": "ab"}},
            {"arrayValue": {"values": [{"stringValue": "a"}], "other": 1}}, {"arrayValue": [{"stringValue": "a"}]},
        ],
    )
    def test_attributes_decode_each_value_as_any_value_does(self, value: Any) -> None:
        """`attributes` decodes every value, common forms and odd ones alike, to what `any_value` gives,
        with the same problems named (its inline decoding of the common forms changes nothing)."""
        bad: list[str] = []
        one: list[str] = []
        assert attributes([{"key": "k", "value": value}], bad) == {"k": any_value(value, one, "attributes[0].value")}
        assert bad == one

    def test_span_times_and_ids_read_alike_in_any_spelling(self) -> None:
        """A span's times and parent id read the same written as the spec says (digits, hex), as numbers,
        in snake_case or base64, and read again once seen (the second envelope)."""
        from trajdebug.sources.formats.otlp_json import spans_from_envelope

        parent = "ab" * 8
        forms = [
            {"startTimeUnixNano": "10", "endTimeUnixNano": "0", "parentSpanId": parent},
            {"startTimeUnixNano": 10, "endTimeUnixNano": None, "parentSpanId": parent.upper()},
            {"start_time_unix_nano": "10", "parent_span_id": base64.b64encode(bytes.fromhex(parent)).decode()},
            {"startTimeUnixNano": " 10 ", "endTimeUnixNano": "", "parentSpanId": parent},
        ]
        for _ in range(2):
            for form in forms:
                raw = {"traceId": "cd" * 16, "spanId": "ef" * 8, "name": "s", **form}
                env = {"resourceSpans": [{"scopeSpans": [{"spans": [raw]}]}]}
                spans, problems = spans_from_envelope(env, source="f", line=1, first_index=0)
                assert problems == [] and len(spans) == 1, form
                s = spans[0]
                assert (s.trace_id, s.parent_id, s.start_ns, s.end_ns) == ("cd" * 16, parent, 10, None), form

    def test_hex_id_accepts_both_encodings(self) -> None:
        """Ids decode from hex or base64 to lowercase hex; zero ids mean no id."""
        assert hex_id("ABCDEF0123456789", 8) == "abcdef0123456789"
        assert hex_id(base64.b64encode(bytes.fromhex("abcdef0123456789")).decode(), 8) == "abcdef0123456789"
        assert hex_id("0" * 16, 8) is None
        assert hex_id("", 16) is None
        with pytest.raises(ValueError, match="neither 32 hex digits nor base64 of 16 bytes"):
            hex_id("abc", 16)

    @pytest.mark.parametrize(
        ("attrs", "events"),
        [
            ({"llm.input_messages.0.message.role": "user", "llm.input_messages.0.message.content": "hi"}, []),
            ({"llm.output_messages.0.message.role": "assistant", "llm.output_messages.0.message.content": "ok"}, []),
            ({"gen_ai.input.messages": json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])}, []),
            ({"gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}])}, []),
            ({"gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "hi", "gen_ai.completion.0.content": "ok"}, []),
            ({"gen_ai.system": "openai"}, [("gen_ai.user.message", 1, {"content": "hi"}), ("gen_ai.choice", 2, {"message": '{"content": "ok"}'})]),
            ({"gen_ai.system": "openai", "tool.name": "search", "input.value": "q"}, []),
        ],
    )
    def test_messages_are_read_whichever_convention_carries_them(
        self, attrs: dict[str, Any], events: list[tuple[str, int, dict[str, Any]]]
    ) -> None:
        """A span's messages are what the chat convention reader finds, whichever convention (or none)
        carries them."""
        from trajdebug.core.chat import messages_from_attributes
        from trajdebug.sources.formats import _semconv

        got = _semconv.messages(attrs, events)
        assert (got.inputs, got.output) == messages_from_attributes(attrs, events)
        assert (got.inputs is None and got.output is None) == ("input.value" in attrs)

    def test_an_id_read_again_reads_as_it_did_for_its_size(self) -> None:
        """An id decoded before decodes the same again, as an id of the size asked for: 16 hex digits
        are a span id, and no trace id however often they were read."""
        for _ in range(2):
            assert hex_id("ABCDEF0123456789", 8) == "abcdef0123456789"
            with pytest.raises(ValueError, match="neither 32 hex digits"):
                hex_id("ABCDEF0123456789", 16)
            assert hex_id("0" * 32, 16) is None

    def test_genai_messages_deprecated_names_and_traceloop(self) -> None:
        """GenAI JSON messages, OpenLLMetry indexed prompts and traceloop kinds map to steps and edges."""
        tid = "11" * 16
        spans = [
            {
                "traceId": tid,
                "spanId": "01" * 8,
                "name": "workflow",
                "startTimeUnixNano": "1",
                "endTimeUnixNano": "9",
                "attributes": _kvs({"traceloop.span.kind": "workflow", "traceloop.entity.name": "wf"}),
            },
            {
                "traceId": tid,
                "spanId": "02" * 8,
                "parentSpanId": "01" * 8,
                "name": "openai.chat",
                "startTimeUnixNano": "2",
                "endTimeUnixNano": "3",
                "attributes": _kvs(
                    {
                        "gen_ai.system": "openai",
                        "llm.request.type": "chat",
                        "gen_ai.prompt.0.role": "user",
                        "gen_ai.prompt.0.content": "weather?",
                        "gen_ai.completion.0.role": "assistant",
                        "gen_ai.completion.0.tool_calls.0.id": "c9",
                        "gen_ai.completion.0.tool_calls.0.name": "weather",
                        "gen_ai.completion.0.tool_calls.0.arguments": '{"city": "Oslo"}',
                    }
                ),
            },
            {
                "traceId": tid,
                "spanId": "03" * 8,
                "parentSpanId": "01" * 8,
                "name": "weather.tool",
                "startTimeUnixNano": "4",
                "endTimeUnixNano": "5",
                "attributes": _kvs(
                    {
                        "traceloop.span.kind": "tool",
                        "gen_ai.tool.call.id": "c9",
                        "traceloop.entity.output": '{"t": 3}',
                    }
                ),
                "status": {"code": "STATUS_CODE_ERROR", "message": "Error running tool (non-fatal)"},
            },
            {
                "traceId": tid,
                "spanId": "04" * 8,
                "parentSpanId": "01" * 8,
                "name": "chat",
                "startTimeUnixNano": "6",
                "endTimeUnixNano": "7",
                "attributes": _kvs(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.input.messages": json.dumps(
                            [
                                {
                                    "role": "tool",
                                    "parts": [{"type": "tool_call_response", "id": "c9", "response": "3C"}],
                                }
                            ]
                        ),
                        "gen_ai.output.messages": json.dumps(
                            [{"role": "assistant", "parts": [{"type": "text", "content": "3 degrees"}]}]
                        ),
                    }
                ),
            },
        ]
        [run] = runs_from_otlp([{"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}]).runs
        wf, llm, tool, llm2 = run.steps
        assert (wf.kind, llm.kind, tool.kind, llm2.kind) == ("agent", "llm", "tool", "llm")
        assert llm.input == {"messages": [{"role": "user", "content": "weather?"}]}
        assert any(d.step_id == llm.step_id for d in tool.deps)
        assert any(d.step_id == tool.step_id for d in llm2.deps)
        assert tool.output == {"t": 3}
        assert llm2.output == {"role": "assistant", "content": "3 degrees", "tool_calls": []}
        [err] = run.errors
        assert [c.stage for c in err.stages] == ["occurred", "recovered"]
        assert err.stages[1].step_id == wf.step_id
        assert run.outcome == "success"
        assert "gen_ai.prompt.0.role" not in llm.attributes
        assert llm.attributes["gen_ai.system"] == "openai"


# -- OpenInference on the real openai client -------------------------------------------


@pytest.fixture
def openinference() -> Iterator[tuple[trace.Tracer, InMemorySpanExporter]]:
    """openinference-instrumentation-openai on the real openai client, exporting into an in-memory exporter."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield provider.get_tracer("agent-under-test"), exporter
    instrumentor.uninstrument()
    provider.shutdown()


LOOKUP_TOOL = {
    "type": "function",
    "function": {
        "name": "find_user",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}


def _lookup_then_answer(request: Any) -> Any:
    """Call find_user for the last word of the question; answer with the tool's result."""
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    if msgs[-1]["role"] == "tool":
        return f"Result: {msgs[-1]['content']}"
    return Reply(tool_calls=(tool_call("find_user", {"name": msgs[-1]["content"].split()[-1].strip("?")}),))


def openai_agent(tr: trace.Tracer, client: Any, question: str) -> str:
    """A hand-written tool loop on the openai client; the tool span names the tool but not the call id."""
    agent_attrs = {"openinference.span.kind": "AGENT", "input.value": question}
    with tr.start_as_current_span("support-agent", attributes=agent_attrs) as agent:
        messages: list[Any] = [{"role": "system", "content": "Help."}, {"role": "user", "content": question}]
        while True:
            reply = client.chat.completions.create(model="gpt-4o", messages=messages, tools=[LOOKUP_TOOL])
            msg = reply.choices[0].message
            if not msg.tool_calls:
                agent.set_attribute("output.value", str(msg.content))  # as OpenInference agent spans do
                return str(msg.content)
            messages.append(msg.model_dump(exclude_none=True))
            for call in msg.tool_calls:
                attrs = {
                    "openinference.span.kind": "TOOL",
                    "tool.name": call.function.name,
                    "input.value": call.function.arguments,
                }
                with tr.start_as_current_span(call.function.name, attributes=attrs) as span:
                    result = f"u-{len(json.loads(call.function.arguments)['name'])}"
                    span.set_attribute("output.value", result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


def _otlp_file(spans: Any, path: Path) -> Path:
    """The spans exported as OTLP/JSON the way the collector writes it: the SDK's protobuf encoder, then json_format."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    path.write_text(json.dumps(MessageToDict(encode_spans(spans))))
    return path


class TestOpenInferenceOpenAI:
    """The OpenAI client under OpenInference, exported as OTLP JSON, then imported."""

    def test_llm_spans_are_messages_and_tools_without_ids_are_linked(
        self, openinference: Any, tmp_path: Path
    ) -> None:
        """LLM spans become messages in and out with llm.* attributes; a tool span without tool.id gets its LLM -> tool edge."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer

        tr, exporter = openinference
        with (
            FakeModelServer(_lookup_then_answer) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            assert openai_agent(tr, client, "who is ana?") == "Result: u-3"
        [run] = import_path(_otlp_file(exporter.get_finished_spans(), tmp_path / "spans.json")).runs
        first, second = (s for s in run.steps if s.kind == "llm")
        tool = next(s for s in run.steps if s.kind == "tool")
        assert first.input == {
            "messages": [{"role": "system", "content": "Help."}, {"role": "user", "content": "who is ana?"}]
        }
        [call] = first.output["tool_calls"]
        assert call["arguments"] == {"name": "ana"}
        assert "tool.id" not in tool.attributes
        assert tool.attributes["tool_call_id"] == call["id"]
        assert [d.step_id for d in tool.deps if d.origin == "declared"] == [first.step_id]
        assert any(d.step_id == tool.step_id and d.origin == "declared" for d in second.deps)
        assert first.attributes["llm.model"] == "gpt-4o"
        assert first.attributes["llm.provider"] == "openai"
        assert first.attributes["llm.tools"] == ["find_user"]
        assert first.attributes["llm.usage.prompt_tokens"] > 0
        assert first.attributes["llm.response_id"] == "chatcmpl-fake1"
        assert second.output == {"role": "assistant", "content": "Result: u-3", "tool_calls": []}
        assert not any(d.origin == "inferred" for s in run.steps for d in s.deps)

    def test_ten_clean_runs_report_no_failure(self, openinference: Any, tmp_path: Path) -> None:
        """Ten clean runs through OpenInference -> OTLP JSON -> import: every one analyzes as a success with no failure."""
        from openai import OpenAI

        from trajdebug.analysis import analyze
        from trajdebug.testing import FakeModelServer

        tr, exporter = openinference
        names = ["ana", "bo", "carla", "dmitri", "eve", "farid", "gus", "hana", "ivo", "jun"]
        with (
            FakeModelServer(_lookup_then_answer) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            for name in names:
                openai_agent(tr, client, f"who is {name}?")
        runs = import_path(_otlp_file(exporter.get_finished_spans(), tmp_path / "spans.json")).runs
        reports = [analyze(r) for r in runs]
        assert [(a.outcome, a.failures) for a in reports] == [("success", ())] * 10


class TestOpenInferenceUsage:
    def test_token_counts_of_llm_spans_match_the_server(self, openinference: Any, tmp_path: Path) -> None:
        """OpenInference llm.token_count.* on real spans are the run's tokens, equal to what the server answered."""
        from openai import OpenAI

        from trajdebug.testing import FakeModelServer
        from trajdebug.usage import run_usage

        tr, exporter = openinference
        replies = []
        with (
            FakeModelServer(["first answer", "a second, longer answer"]) as server,
            OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
            tr.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}),
        ):
            for q in ("one?", "two and more?"):
                msgs = [{"role": "user", "content": q}]
                replies.append(client.chat.completions.create(model="gpt-4o", messages=msgs))  # type: ignore[arg-type]
        [run] = import_path(_otlp_file(exporter.get_finished_spans(), tmp_path / "spans.json")).runs
        u = run_usage(run)
        assert u.calls == 2 and u.models == ("gpt-4o",)
        assert u.prompt_tokens == sum(r.usage.prompt_tokens for r in replies)
        assert u.completion_tokens == sum(r.usage.completion_tokens for r in replies)
        assert u.cost is not None and u.cost > 0


_TIMES: list[Any] = ["1700000000000000001", "0", "", None, 17, 0, "\u0661\u0662", "-5", "12a", 1.5, "00012", "absent"]
_CODES: list[Any] = [0, 1, 2, True, "STATUS_CODE_ERROR", "ERROR", "error", "2", "x", None, "absent"]
_SPAN_IDS = ["00f067aa0ba902b7", "00F067AA0BA902B7", "APBnqguqArc=", "b7ad6b7169203331", "", "0000000000000000"]


class TestSpanFields:
    @settings(max_examples=400, deadline=None)
    @given(
        st.sampled_from(_TIMES),
        st.sampled_from(_TIMES),
        st.sampled_from(_CODES),
        st.sampled_from(_SPAN_IDS),
        st.sampled_from([*_SPAN_IDS, "absent"]),
        st.booleans(),
    )
    def test_fields_read_at_once_are_those_read_one_by_one(
        self, start: Any, end: Any, code: Any, span_id: str, parent: str, seen: bool
    ) -> None:
        """A span's times, status code, id and parent's id in any form (digits, numbers, empty, signed, not
        ASCII, names, ids seen before or not, in hex of either case or base64) read as the field-by-field
        reading (`_checked_span`, which names what it cannot read) reads them."""
        from trajdebug.sources.formats.otlp_json import _checked_span, _span

        if seen:  # ids met before (a trace's, a parent's) are looked up, the rest decoded
            for v in (span_id, parent):
                try:
                    hex_id(v, 8)
                except ValueError:
                    pass
        raw: dict[str, Any] = {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": span_id, "name": "s"}
        for k, v in (("startTimeUnixNano", start), ("endTimeUnixNano", end), ("parentSpanId", parent)):
            if v != "absent":
                raw[k] = v
        if code != "absent":
            raw["status"] = {"code": code, "message": "m"}
        bad: list[str] = []
        try:
            got = _span(raw, {}, "scope", 3, bad)
        except ValueError:  # an id neither encoding reads, or empty: the span is skipped either way
            with pytest.raises(ValueError):
                hex_id(span_id, 8) or _raise()
            return
        one_by_one: list[str] = []
        status = raw.get("status") or {}
        want = _checked_span(raw, {}, "scope", 3, one_by_one, got.trace_id, hex_id(span_id, 8) or "", status)
        assert (got, bad) == (want, one_by_one)


def _raise() -> None:
    raise ValueError("empty")


# -- OpenInference on the OpenAI Agents SDK --------------------------------------------


@pytest.fixture
def agents_sdk() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """openinference-instrumentation-openai-agents as the SDK's only trace processor, exporting into memory;
    the SDK's processors are restored after.  Missing, it fails in CI and skips elsewhere."""
    pytest.importorskip("agents", reason="openai-agents is not installed")
    try:
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    except ImportError:
        message = "openinference-instrumentation-openai-agents is not installed (the dev extra installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    from agents.tracing import get_trace_provider, set_trace_processors

    saved = list(get_trace_provider()._multi_processor._processors)  # type: ignore[attr-defined]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield provider, exporter
    instrumentor.uninstrument()
    provider.shutdown()
    set_trace_processors(saved)


def _typed_lookup(name: str, age: int) -> str:
    """Find a user's id by name and age."""
    return f"u-{name}-{age}"


def _db_down(name: str) -> str:
    """Find a user's id by name."""
    raise RuntimeError("user database down")


def _find(name: str) -> str:
    """Find a user's id by name."""
    return f"u-{len(name)}{name}"


def _tripped(kind: str) -> dict[str, Any]:
    """An input or output guardrail whose tripwire always triggers."""
    from agents import GuardrailFunctionOutput, input_guardrail, output_guardrail

    async def never(ctx: Any, agent: Any, value: Any) -> GuardrailFunctionOutput:
        """Trips on everything."""
        return GuardrailFunctionOutput(output_info=None, tripwire_triggered=True)

    return {"input_guardrails": [input_guardrail(never)]} if kind == "input" else {"output_guardrails": [output_guardrail(never)]}


def _support(server: Any, *, tools: Any = (), max_turns: int = 10, app: trace.Tracer | None = None, **kwargs: Any) -> Any:
    """Runner.run of a support agent on the SDK's Chat Completions model; with ``app``, under a span of the
    application's own (that tracer's) whose code catches what Runner.run raised."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from openai import AsyncOpenAI

    async def go() -> Any:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            model = OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
            agent = Agent(name="support", instructions="Help.", model=model, tools=list(tools), **kwargs)
            return await Runner.run(agent, "who is ana?", max_turns=max_turns)

    if app is None:
        return asyncio.run(go())
    from agents.exceptions import AgentsException

    with app.start_as_current_span("handle-request"):
        try:
            return asyncio.run(go())
        except AgentsException:
            return "sorry, try later"


def _agents_run(agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path) -> Run:
    """The one run of the spans exported so far, through an OTLP/JSON file and `load_runs`."""
    from trajdebug.sources.load import load_runs

    [run] = load_runs(_otlp_file(agents_sdk[1].get_finished_spans(), tmp_path / "agents.json"))
    return run


def _raising(case: str) -> tuple[list[Any], dict[str, Any], str]:
    """A script for the fake model, the agent's keywords and what Runner.run raises, for one way it raises."""
    from agents import function_tool

    from trajdebug.testing import Reply, tool_call

    call = Reply(tool_calls=(tool_call("find", {"name": "ana"}),))
    find = function_tool(_find, name_override="find")
    strict = function_tool(_typed_lookup, name_override="lookup", failure_error_function=None)
    if case in ("schema", "json"):
        arguments: Any = {"name": "ana", "age": "old"} if case == "schema" else '{"name": '
        return [Reply(tool_calls=(tool_call("lookup", arguments),)), "done"], {"tools": [strict]}, "Invalid JSON input"
    if case == "tool raises":
        raising = function_tool(_db_down, name_override="find", failure_error_function=None)
        return [call, "done"], {"tools": [raising]}, "user database down"
    if case == "max turns":
        return [call, call, call], {"tools": [find], "max_turns": 2}, "Max turns"
    if case.endswith("guardrail"):
        return [call, "The id is u-3ana."], {"tools": [find], **_tripped(case.split()[0])}, "Guardrail"
    if case == "http 400":
        return [Reply(status=400, error="context too long")], {}, "context too long"
    return [Reply(tool_calls=(tool_call("nope", {}),)), "done"], {"tools": [find]}, "not found"


RAISES = ["schema", "json", "tool raises", "max turns", "input guardrail", "output guardrail", "http 400", "unknown tool"]


class TestOpenInferenceAgentsSDK:
    """The real Agents SDK under OpenInference's instrumentation, against a fake model server, exported as
    OTLP/JSON and imported: the trace's top span ends with status OK whether or not ``Runner.run`` raised."""

    @pytest.mark.parametrize("case", RAISES)
    def test_each_way_runner_run_raises_is_a_failed_run_with_one_error(
        self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path, case: str
    ) -> None:
        """Runner.run raising (a tool's rejected arguments, a tool that raised, max turns, a guardrail, an HTTP
        error, an unknown tool) imports as a failed run: one error, failed at the trace's top step, its text the reason."""
        from trajdebug.testing import FakeModelServer

        script, kwargs, raised = _raising(case)
        with FakeModelServer(script) as server, pytest.raises(Exception, match=raised):
            _support(server, **kwargs)
        run = _agents_run(agents_sdk, tmp_path)
        top = next(s for s in run.steps if s.parent_id is None)
        [err] = run.errors
        assert (run.outcome, err.stage, err.stages[-1].step_id) == ("failure", "failed", top.step_id)
        assert top.status == "ok"  # what the instrumentation wrote: the top span never says
        assert raised.split()[-1] in (run.failure_reason or "")

    def test_a_tool_error_the_agent_re_reported_is_one_error_propagated(
        self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
    ) -> None:
        """A tool's exception escaping Runner.run, recorded again (re-wrapped) on the agent span: one error that
        occurred at the tool, propagated through the agent and failed the run; the reason is the tool's own text."""
        from trajdebug.testing import FakeModelServer

        script, kwargs, _ = _raising("tool raises")
        with FakeModelServer(script) as server, pytest.raises(Exception, match="user database down"):
            _support(server, **kwargs)
        run = _agents_run(agents_sdk, tmp_path)
        [err] = run.errors
        tool = next(s for s in run.steps if s.kind == "tool")
        agent = next(s for s in run.steps if s.name == "support" and s.kind == "agent")
        top = next(s for s in run.steps if s.parent_id is None)
        assert [(c.stage, c.step_id) for c in err.stages] == [
            ("occurred", tool.step_id),
            ("propagated", agent.step_id),
            ("failed", top.step_id),
        ]
        assert run.failure_reason == "Error running tool find: user database down"
        assert tool.error is not None and agent.error is not None
        assert tool.error.error_id == agent.error.error_id == err.error_id

    @pytest.mark.parametrize("text", ["db down (non-fatal)", "X" * 50_000])
    def test_a_raised_tools_own_text_never_reads_as_the_sdks_marker_nor_is_evaluated_whole(
        self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path, text: str
    ) -> None:
        """The SDK's ``(non-fatal)`` marker counts in its own message only: a tool raising an exception whose text
        says "(non-fatal)" fails the run, one error.  A 50 kB error text is taken as it is (not evaluated), still
        one error propagated, and the reason is capped."""
        from agents import function_tool

        from trajdebug.sources.formats.agents_sdk import REASON_CAP
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        def raises(name: str) -> str:
            """Find a user's id by name."""
            raise RuntimeError(text)

        tool = function_tool(raises, name_override="find", failure_error_function=None)
        script = [Reply(tool_calls=(tool_call("find", {"name": "ana"}),)), "done"]
        with FakeModelServer(script) as server, pytest.raises(Exception, match=re.escape(text[:40])):
            _support(server, tools=[tool])
        run = _agents_run(agents_sdk, tmp_path)
        [err] = run.errors
        assert (run.outcome, [c.stage for c in err.stages]) == ("failure", ["occurred", "propagated", "failed"])
        assert text[:40] in (run.failure_reason or "")
        assert len(run.failure_reason or "") <= REASON_CAP + 3

    def test_of_parallel_tool_calls_that_both_raised_the_one_that_reached_the_agent_fails_the_run(
        self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
    ) -> None:
        """Two tool calls of one turn both raise: the SDK re-reports one on the agent span and Runner.run raises
        it; the other error stays at its tool, unrecovered but not the run's failure."""
        from agents import function_tool

        from trajdebug.testing import FakeModelServer, Reply, tool_call

        tools = [function_tool(_db_down, name_override=n, failure_error_function=None) for n in ("find", "find2")]
        script = [Reply(tool_calls=(tool_call("find", {"name": "a"}), tool_call("find2", {"name": "b"}))), "done"]
        with FakeModelServer(script) as server, pytest.raises(Exception, match="user database down"):
            _support(server, tools=tools)
        run = _agents_run(agents_sdk, tmp_path)
        assert run.outcome == "failure"
        # The SDK gathers the turn's tool calls: once the first raises, the second may be cancelled before it runs
        # (a loaded machine's timing), so it left no error; when it did raise, its error stays where it occurred.
        stages = sorted([c.stage for c in e.stages] for e in run.errors)
        assert stages in ([["occurred"], ["occurred", "propagated", "failed"]], [["occurred", "propagated", "failed"]])

    @pytest.mark.parametrize("case", ["arguments fed back", "tool error fed back", "model call retried"])
    def test_an_error_the_run_went_on_from_leaves_it_a_success(
        self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path, case: str
    ) -> None:
        """A tool's error sent back to the model (invalid arguments, a tool that raised) or a model call the SDK
        retried: the run answered, so it imports as a success with no failed error."""
        from agents import ModelSettings, function_tool
        from agents.retry import ModelRetrySettings, retry_policies

        from trajdebug.testing import FakeModelServer, Reply, tool_call

        kwargs: dict[str, Any] = {}
        if case == "arguments fed back":
            script: list[Any] = [Reply(tool_calls=(tool_call("lookup", {"name": "ana", "age": "old"}),)), "I could not."]
            kwargs["tools"] = [function_tool(_typed_lookup, name_override="lookup")]
        elif case == "tool error fed back":
            script = [Reply(tool_calls=(tool_call("find", {"name": "ana"}),)), "The database is down."]
            kwargs["tools"] = [function_tool(_db_down, name_override="find")]
        else:
            script = [Reply(status=500, error="overloaded"), "The id is u-3ana."]
            retry = ModelRetrySettings(max_retries=1, backoff={"initial_delay": 0.01}, policy=retry_policies.http_status([500]))
            kwargs["model_settings"] = ModelSettings(retry=retry)
        with FakeModelServer(script) as server:
            _support(server, **kwargs)
        run = _agents_run(agents_sdk, tmp_path)
        [err] = run.errors
        assert (run.outcome, run.failure_reason) == ("success", None)
        assert err.stage == ("occurred" if case == "model call retried" else "recovered")

    def test_a_sub_agent_failure_its_caller_recovered_is_not_the_runs(
        self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
    ) -> None:
        """An ``as_tool`` sub-agent whose run raised, its error returned to the caller's model, which answered:
        the sub-agent is not the agent that ended the run, so the run imports as a success."""
        from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
        from openai import AsyncOpenAI

        from trajdebug.testing import FakeModelServer, Reply, tool_call

        def policy(request: Any) -> Any:
            msgs = request.body["messages"]
            if msgs[0]["content"].startswith("Specialist"):
                return Reply(tool_calls=(tool_call("find", {"name": "ana"}),))
            if msgs[-1]["role"] != "tool":
                return Reply(tool_calls=(tool_call("specialist", {"input": "ana?"}),))
            return "The specialist could not look ana up; try later."

        async def go(server: Any) -> Any:
            async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
                model = OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client)
                find = function_tool(_db_down, name_override="find", failure_error_function=None)
                specialist = Agent(name="specialist", instructions="Specialist.", model=model, tools=[find])
                tool = specialist.as_tool(tool_name="specialist", tool_description="Ask the specialist")
                triage = Agent(name="triage", instructions="Triage.", model=model, tools=[tool])
                return await Runner.run(triage, "Who is ana?")

        with FakeModelServer(policy) as server:
            result = asyncio.run(go(server))
        assert "try later" in result.final_output
        run = _agents_run(agents_sdk, tmp_path)
        assert run.errors and all(e.stage != "failed" for e in run.errors)
        assert (run.outcome, run.failure_reason) == ("success", None)

    def test_under_an_application_span_that_span_says_whether_the_error_escaped(
        self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path
    ) -> None:
        """Runner.run called inside a span of the application's own, whose code caught what it raised: the trace's
        top span is the application's and ended OK, so the run imports as a success."""
        from trajdebug.testing import FakeModelServer

        script, kwargs, _ = _raising("max turns")
        with FakeModelServer(script) as server:
            assert _support(server, app=agents_sdk[0].get_tracer("app"), **kwargs) == "sorry, try later"
        run = _agents_run(agents_sdk, tmp_path)
        assert run.errors and (run.outcome, run.failure_reason) == ("success", None)

    def test_a_clean_run_is_a_success_without_errors(self, agents_sdk: tuple[TracerProvider, InMemorySpanExporter], tmp_path: Path) -> None:
        """A run that looked a user up and answered imports as a success with no error."""
        from agents import function_tool

        from trajdebug.testing import FakeModelServer, Reply, tool_call

        script = [Reply(tool_calls=(tool_call("find", {"name": "ana"}),)), "The id is u-3ana."]
        with FakeModelServer(script) as server:
            result = _support(server, tools=[function_tool(_find, name_override="find")])
        run = _agents_run(agents_sdk, tmp_path)
        assert result.final_output == "The id is u-3ana."
        assert (run.outcome, run.errors) == ("success", ())


def test_a_long_agents_sdk_status_without_an_error_key_holds_no_error_text() -> None:
    """Past the evaluation cap, a status message whose data has no 'error' key yields no text of its own (not the
    whole data), and one that has it yields that key's text."""
    from trajdebug.sources.formats._otlp_errors import SDK_DETAIL_CAP, _sdk_detail

    pad = "x" * SDK_DETAIL_CAP
    assert _sdk_detail("Error running tool: {'note': '" + pad + "'}") is None
    assert _sdk_detail("Error running tool: {'note': '" + pad + "', 'error': 'db down'}") == "db down"
