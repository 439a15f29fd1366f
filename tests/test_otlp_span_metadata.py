"""OpenInference's run-level span attributes (``metadata``, ``tag.tags``, ``user.id``) reach the imported run.

Spans are made with the real OpenTelemetry SDK under OpenInference's conventions, encoded by the OTLP
exporter's own encoder, written as OTLP/JSON files and read back as a user's export would be.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.common")

from click.testing import CliRunner
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

import trajdebug
from trajdebug.analysis.reference import same_request
from trajdebug.api import same_input
from trajdebug.cli import cli
from trajdebug.core.model import Run
from trajdebug.sources.formats._otlp_run import SPAN_METADATA_TEXT
from trajdebug.sources.formats.otlp import read_otlp


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _agent_run(
    mem: InMemorySpanExporter,
    *,
    request: str,
    metadata: Any = None,
    fail: bool = False,
    resource: dict[str, Any] | None = None,
    tags: list[str] | None = None,
    user: str | None = None,
) -> None:
    """One run of a small support agent as OpenInference instrumentation writes it: an AGENT top span (with
    the run's metadata, tags and user when given), an LLM span asking for a tool, the TOOL span, a last LLM."""
    tp = TracerProvider(resource=Resource.create({"service.name": "support", **(resource or {})}))
    tp.add_span_processor(SimpleSpanProcessor(mem))
    tracer = tp.get_tracer("openinference.instrumentation.test")
    top: dict[str, Any] = {"openinference.span.kind": "AGENT", "input.value": request}
    if metadata is not None:
        top["metadata"] = metadata if isinstance(metadata, str) else json.dumps(metadata)
    if tags is not None:
        top["tag.tags"] = tags
    if user is not None:
        top["user.id"] = user
    with tracer.start_as_current_span("support_agent", attributes=top) as agent:
        call = {"id": "call_1", "function": {"name": "lookup", "arguments": json.dumps({"order": "A-1"})}}
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": request,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": call["id"],
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "lookup",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": call["function"]["arguments"],
                # An instrumentation writes its own metadata on the spans below: never the run's.
                "metadata": json.dumps({"task": "not-the-run's", "ls_provider": "openai"}),
                "tag.tags": ["seq:step:1"],
            },
        ):
            pass
        with tracer.start_as_current_span(
            "lookup",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup",
                "tool.id": "call_1",
                "input.value": json.dumps({"order": "A-1"}),
                "output.value": json.dumps({"error": "order store down"} if fail else {"status": "shipped"}),
            },
        ) as tool:
            if fail:
                tool.set_status(Status(StatusCode.ERROR, "order store down"))
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "tool",
                "llm.input_messages.0.message.tool_call_id": "call_1",
                "llm.input_messages.0.message.content": "order store down" if fail else "shipped",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "Sorry, I cannot tell." if fail else "Your order shipped.",
            },
        ):
            pass
        if fail:
            agent.set_status(Status(StatusCode.ERROR, "order store down"))
            agent.record_exception(RuntimeError("order store down"))


def _write(mem: InMemorySpanExporter, path: Path) -> Path:
    """The exported spans as an OTLP/JSON file (the OTLP exporter's own encoding, as JSON)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    path.write_text(json.dumps(MessageToDict(encode_spans(mem.get_finished_spans()))))
    mem.clear()
    return path


def _runs(mem: InMemorySpanExporter, tmp_path: Path, name: str = "spans.json") -> list[Run]:
    result = read_otlp(_write(mem, tmp_path / name))
    assert not result.problems
    return sorted(result.runs, key=lambda r: r.start_ns)


def test_the_top_spans_metadata_is_the_runs(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    """The top span's ``metadata`` items, tags and user are the run's; a child span's metadata is its own."""
    _agent_run(
        exporter, request="Where is A-1?", metadata={"task": "T-17", "tier": 2}, tags=["beta", "eu", "beta"], user="u-9"
    )
    [run] = _runs(exporter, tmp_path)
    assert run.metadata["task"] == "T-17" and run.metadata["tier"] == 2
    assert run.metadata["tags"] == ["beta", "eu"]
    assert run.metadata["user"] == "u-9"
    assert run.metadata["source_format"] == "otlp" and SPAN_METADATA_TEXT not in run.metadata
    # The top span keeps its attributes as they were, too.
    assert json.loads(run.steps[0].attributes["metadata"]) == {"task": "T-17", "tier": 2}


def test_a_run_without_span_metadata_is_as_before(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    """No ``metadata`` on the top span: nothing is added (a child's metadata and tags never are)."""
    _agent_run(exporter, request="Where is A-1?")
    [run] = _runs(exporter, tmp_path)
    assert "task" not in run.metadata and "tags" not in run.metadata and "user" not in run.metadata
    assert {k for k in run.metadata if not k.startswith(("service.", "telemetry."))} == {"source_format", "trace_id"}


@pytest.mark.parametrize(
    "bad",
    [
        '{"task": "T-17"',  # cut short
        "{task: T-17}",  # not JSON
        '["T-17"]',  # JSON, not an object
        '"T-17"',
        "{" * 5000 + "}" * 5000,  # nested too deeply to decode
    ],
)
def test_metadata_that_is_not_a_json_object_is_kept_as_text(
    bad: str, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    """A ``metadata`` that is not a JSON object is kept whole under its own key; the trace is read all the same."""
    _agent_run(exporter, request="Where is A-1?", metadata=bad, fail=True)
    [run] = _runs(exporter, tmp_path)
    assert run.metadata[SPAN_METADATA_TEXT] == bad
    assert "task" not in run.metadata
    assert run.outcome == "failure" and len(run.steps) == 4


def test_blank_metadata_adds_nothing(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    _agent_run(exporter, request="Where is A-1?", metadata="  ")
    [run] = _runs(exporter, tmp_path)
    assert SPAN_METADATA_TEXT not in run.metadata and "task" not in run.metadata


def test_the_resource_and_trajdebugs_own_run_metadata_win(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    """A key the resource says, or trajdebug's own run metadata, or the source format, is never overwritten."""
    _agent_run(
        exporter,
        request="Where is A-1?",
        metadata={"task": "from-span", "env": "span", "source_format": "mine", "agent": "span-agent", "x": 1},
        resource={"task": "from-resource", "trajdebug.run.metadata": json.dumps({"agent": "own-agent"})},
        tags=["span-tag"],
    )
    [run] = _runs(exporter, tmp_path)
    md = run.metadata
    assert md["task"] == "from-resource" and md["agent"] == "own-agent" and md["source_format"] == "otlp"
    assert md["env"] == "span" and md["x"] == 1 and md["tags"] == ["span-tag"]


def test_the_session_id_wins_over_a_session_in_span_metadata(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    _agent_run(exporter, request="Where is A-1?", metadata={"session": "from-metadata"}, resource={"session.id": "s-1"})
    [run] = _runs(exporter, tmp_path)
    assert run.metadata["session"] == "s-1"


def test_trajdebug_keys_in_span_metadata_are_not_taken(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    _agent_run(exporter, request="Where is A-1?", metadata={"trajdebug.run.outcome": "success", "task": "T-1"})
    [run] = _runs(exporter, tmp_path)
    assert "trajdebug.run.outcome" not in run.metadata and run.metadata["task"] == "T-1"


def test_same_task_in_span_metadata_is_the_same_input(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    """Two runs whose top spans name one ``task`` are the same input (as the SDK's ``task=`` makes them), though
    the requests their top spans were handed differ (a request id in it); without the metadata they are not."""
    _agent_run(exporter, request="Where is A-1? (request 101)", metadata={"task": "T-17"})
    _agent_run(exporter, request="Where is A-1? (request 102)", metadata={"task": "T-17"}, fail=True)
    ok, failed = _runs(exporter, tmp_path, "with.json")
    assert ok.outcome == "success" and failed.outcome == "failure"
    assert same_request(ok, failed) and same_input(failed, [ok, failed]) is ok
    # The SDK's own record of the same two runs matches them by the same rule.
    for fail in (False, True):
        with trajdebug.run("support_agent", task="T-17", path=tmp_path / "sdk.jsonl") as r:
            with trajdebug.step("support_agent", kind="agent", input=f"Where is A-1? (request {101 + fail})"):
                pass
            if fail:
                r.fail("order store down")
    sdk_ok, sdk_failed = trajdebug.load_runs(tmp_path / "sdk.jsonl")
    assert sdk_failed.outcome == "failure" and sdk_failed.metadata["task"] == failed.metadata["task"]
    assert same_request(sdk_ok, sdk_failed) and same_input(sdk_failed, [sdk_ok, sdk_failed]) is sdk_ok

    _agent_run(exporter, request="Where is A-1? (request 101)")
    _agent_run(exporter, request="Where is A-1? (request 102)", fail=True)
    ok2, failed2 = _runs(exporter, tmp_path, "without.json")
    assert not same_request(ok2, failed2) and same_input(failed2, [ok2, failed2]) is None


def test_analyze_json_names_the_same_input_run(exporter: InMemorySpanExporter, tmp_path: Path) -> None:
    """``trajdebug analyze --json`` of an OTLP export: the failing run's ``same_input`` is the passing run of its
    span metadata's task (and none without it)."""
    _agent_run(exporter, request="Where is A-1? (request 101)", metadata={"task": "T-17"})
    _agent_run(exporter, request="Where is A-1? (request 102)", metadata={"task": "T-17"}, fail=True)
    _agent_run(exporter, request="Where is B-2? (request 103)", metadata={"task": "T-18"})
    path = _write(exporter, tmp_path / "runs.json")
    ok, failed, _other = sorted(read_otlp(path).runs, key=lambda r: r.start_ns)
    res = CliRunner().invoke(cli, ["analyze", str(path), "--from", "otlp", "--json"])
    assert res.exit_code in (0, 1), res.output
    doc = json.loads(res.output)
    [report] = [r for r in doc["runs"] if r["run_id"] == failed.run_id]
    assert report["same_input"] == [ok.run_id]


def test_metadata_as_a_kvlist_and_tags_as_json_text() -> None:
    """An exporter may write ``metadata`` as an OTLP ``kvlistValue`` and ``tag.tags`` as JSON text: both are read;
    a ``user.id`` on a span below the top one names the run's user."""
    from trajdebug.sources.formats.otlp import runs_from_otlp

    def kv(key: str, value: dict[str, Any]) -> dict[str, Any]:
        return {"key": key, "value": value}

    span = {"traceId": "ab" * 16, "startTimeUnixNano": "1", "endTimeUnixNano": "9", "status": {}}
    top = {
        **span, "spanId": "01" * 8, "name": "agent",
        "attributes": [
            kv("metadata", {"kvlistValue": {"values": [kv("task", {"stringValue": "T-3"})]}}),
            kv("tag.tags", {"stringValue": '["b", "a"]'}),
        ],
    }  # fmt: skip
    child = {**span, "spanId": "02" * 8, "parentSpanId": "01" * 8, "name": "tool",
             "attributes": [kv("user.id", {"stringValue": "u-1"})]}  # fmt: skip
    env = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [top, child]}]}]}
    [run] = runs_from_otlp([env]).runs
    assert run.metadata["task"] == "T-3" and run.metadata["tags"] == ["a", "b"] and run.metadata["user"] == "u-1"


def _envelope(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": list(spans)}]}]}


def _span(span_id: str, parent: str | None, start: int, **attrs: str) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": "cd" * 16, "spanId": span_id * 8, "name": f"s{span_id}", "startTimeUnixNano": str(start),
        "endTimeUnixNano": "99", "status": {},
        "attributes": [{"key": k.replace("_", "."), "value": {"stringValue": v}} for k, v in attrs.items()],
    }  # fmt: skip
    if parent is not None:
        out["parentSpanId"] = parent * 8
    return out


def test_an_orphan_span_below_is_not_the_top_span() -> None:
    """A span whose parent is missing from the file is a root of the trace, but the span without a parent is the
    top one: only its metadata is the run's (an orphaned model call's instrumentation metadata is not)."""
    from trajdebug.sources.formats.otlp import runs_from_otlp

    top = _span("01", None, 1, metadata='{"task": "T-5"}')
    orphan = _span("02", "0f", 0, metadata='{"task": "wrong", "ls_provider": "openai"}', tag_tags='["seq:step:1"]')
    [run] = runs_from_otlp([_envelope(top, orphan)]).runs
    assert run.metadata["task"] == "T-5" and "ls_provider" not in run.metadata and "tags" not in run.metadata
    # A trace continued from another service's span: its top span (parent not in the file) is read.
    [run] = runs_from_otlp([_envelope(_span("03", "0e", 1, metadata='{"task": "T-6"}'))]).runs
    assert run.metadata["task"] == "T-6"


def test_the_dedicated_attributes_win_over_metadata_items() -> None:
    """``tag.tags`` and ``user.id`` say the run's tags and user before a ``tags`` or ``user`` in ``metadata``."""
    from trajdebug.sources.formats.otlp import runs_from_otlp

    top = _span("01", None, 1, metadata='{"tags": ["m"], "user": "m-user"}', tag_tags='["t"]', user_id="u-2")
    [run] = runs_from_otlp([_envelope(top)]).runs
    assert run.metadata["tags"] == ["t"] and run.metadata["user"] == "u-2"
