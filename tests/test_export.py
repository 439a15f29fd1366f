"""Tests for the OTLP exporter and the ``import`` / ``export`` commands."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trajdebug.cli._io import register
from trajdebug.core.jsonl import read_jsonl
from trajdebug.core.model import Dependency, ErrorEvent, ErrorInfo, Run, StageChange, Step
from trajdebug.sources.formats import import_path
from trajdebug.sources.formats.export import export_otlp, span_id_for, trace_id_for, write_otlp
from trajdebug.sources.formats.otlp import runs_from_otlp


LOG = [
    {"role": "user", "content": "Cancel order #W1 for ana."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "function": {"name": "find_user", "arguments": '{"name": "ana"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "name": "find_user", "content": "Error: user not found"},
    {"role": "assistant", "content": "I could not find you."},
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """A run recorded by trajdebug's own recorder (the demo agent with its default fault)."""
    from trajdebug.demo import run_demo

    d = tmp_path_factory.mktemp("demo")
    return run_demo(path=d / "run.jsonl", workdir=d)


def _round_trip(runs: list[Run]) -> list[Run]:
    doc = json.loads(json.dumps(export_otlp(runs)))
    result = runs_from_otlp([doc])
    assert result.problems == []
    return result.runs


class TestRoundTrip:
    """Export, import: the same runs."""

    def test_recorded_run_with_a_retry(self, tmp_path: Path) -> None:
        """A recorded run with a retried step (attempt 2, retry_of) and two errors comes back equal."""
        from trajdebug.demo import run_demo

        run = run_demo("wrong-column", path=tmp_path / "run.jsonl", workdir=tmp_path)
        assert any(s.retry_of is not None for s in run.steps)
        assert _round_trip([run]) == [run]

    def test_recorded_run(self, recorded: Run) -> None:
        """A recorded run (hex ids, tracked edges, an error that propagated and failed it) comes back equal."""
        assert recorded.steps
        assert recorded.errors
        assert _round_trip([recorded]) == [recorded]

    def test_imported_message_log(self, tmp_path: Path) -> None:
        """A run with non-hex step ids, a recovered error and inferred edges comes back equal."""
        f = tmp_path / "log.json"
        f.write_text(json.dumps(LOG))
        runs = import_path(f).runs
        assert runs[0].errors[0].stage == "recovered"
        assert _round_trip(runs) == runs

    def test_tau_bench_runs(self, tau_dir: Path) -> None:
        """All 29 tau-bench runs survive export and import unchanged."""
        runs = import_path(tau_dir / "tau_dataset_failed.json").runs
        assert _round_trip(runs) == runs

    def test_tau_bench_runs_streamed_and_spilled(
        self, tau_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Runs named by their own run ids, each exported over several lines interleaved with the others'
        and read a line at a time with spans spilled to disk, come back unchanged."""
        from trajdebug.sources.formats import otlp

        runs = import_path(tau_dir / "tau_dataset_failed.json").runs[:6]
        assert all(r.run_id != trace_id_for(r.run_id) for r in runs)
        chunks: list[list[dict[str, Any]]] = []
        for r in runs:
            [rs] = json.loads(json.dumps(export_otlp([r])))["resourceSpans"]
            spans = rs["scopeSpans"][0]["spans"]
            chunks.append(
                [
                    {"resourceSpans": [{**rs, "scopeSpans": [{**rs["scopeSpans"][0], "spans": spans[i : i + 3]}]}]}
                    for i in range(0, len(spans), 3)
                ]
            )
        f = tmp_path / "spans.jsonl"
        f.write_text("".join(json.dumps(c[i]) + "\n" for i in range(max(map(len, chunks))) for c in chunks if i < len(c)))
        monkeypatch.setattr(otlp, "STREAM_FROM", 0)
        monkeypatch.setattr(otlp, "SPILL_SPANS", 4)
        problems: list[Any] = []
        assert list(otlp.iter_otlp(f, problems)) == runs
        assert problems == []


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def runs(draw: st.DrawFn) -> Run:
    """Arbitrary consistent runs: any ids, kinds, JSON values, edges to earlier steps, errors with lifecycles."""
    n = draw(st.integers(1, 6))
    hexy = draw(st.booleans())
    ids = [f"{i + 1:016x}" if hexy else draw(st.text(min_size=1, max_size=8)) + f"#{i}" for i in range(n)]
    steps, errors = [], []
    for i, sid in enumerate(ids):
        failed = draw(st.booleans())
        eid = f"e{i}" if failed else None
        targets = sorted(draw(st.sets(st.integers(0, i - 1), max_size=2))) if i > 0 else []
        deps = tuple(
            Dependency(
                ids[j],
                draw(st.sampled_from(["data", "control", "state"])),
                draw(st.sampled_from(["tracked", "declared", "inferred"])),
                draw(st.sampled_from([1.0, 0.5, 0.25])),
                draw(st.none() | st.text(max_size=4)),
            )
            for j in targets
        )
        steps.append(
            Step(
                step_id=sid,
                name=draw(st.text(max_size=10)),
                kind=draw(st.sampled_from(["llm", "tool", "parse", "state", "agent", "other"])),
                parent_id=ids[0] if i > 0 and draw(st.booleans()) else None,
                agent=draw(st.none() | st.text(min_size=1, max_size=5)),
                input=draw(json_values),
                output=draw(json_values),
                status="error" if failed else "ok",
                error=ErrorInfo(
                    "ValueError", draw(st.text(max_size=10)), eid, draw(st.none() | st.text(max_size=10))
                )
                if failed
                else None,
                start_ns=1000 * (i + 1),
                end_ns=None if draw(st.booleans()) and i == n - 1 else 1000 * (i + 1) + 500,
                attempt=draw(st.integers(1, 3)),
                retry_of=ids[i - 1] if i > 0 and draw(st.booleans()) else None,
                deps=deps,
                attributes=draw(st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=3)),
                source_index=draw(st.none() | st.integers(0, 100)),
            )
        )
        if failed:
            stages = [StageChange("occurred", sid, 1000 * (i + 1))]
            if i + 1 < n and draw(st.booleans()):
                stages.append(
                    StageChange(
                        "recovered", ids[i + 1], 1000 * (i + 2), draw(st.none() | st.text(max_size=8))
                    )
                )
            errors.append(
                ErrorEvent(
                    eid,
                    sid,
                    "ValueError",
                    "boom",
                    None,
                    tuple(stages),
                    1,
                    draw(st.dictionaries(st.text(max_size=4), json_values, max_size=2)),
                )
            )  # type: ignore[arg-type]
    return Run(
        run_id=draw(st.sampled_from(["ab" * 16, "tau-7", "run/x"])),
        name=draw(st.text(max_size=10)),
        start_ns=1000,
        end_ns=draw(st.none() | st.just(10**6)),
        outcome=draw(st.sampled_from(["success", "failure", "incomplete"])),
        failure_reason=draw(st.none() | st.text(max_size=10)),
        metadata=draw(st.dictionaries(st.text(min_size=1, max_size=6), json_values, max_size=3)),
        steps=tuple(steps),
        errors=tuple(errors),
        continues=draw(st.none() | st.just("earlier-run")),
    )


class TestRoundTripProperty:
    """The round trip holds for arbitrary runs, not only the ones we thought of."""

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(run=runs())
    def test_export_then_import_is_identity(self, run: Run) -> None:
        """Any run exported to OTLP/JSON and imported back is equal to itself."""
        assert _round_trip([run]) == [run]


class TestEnvelope:
    """What an OpenTelemetry backend sees."""

    def test_spans_links_and_events(self, tmp_path: Path) -> None:
        """Steps are spans with OpenInference kinds; dependencies are links; lifecycle stages and exceptions are events."""
        f = tmp_path / "log.json"
        f.write_text(json.dumps(LOG))
        [run] = import_path(f).runs
        doc = export_otlp([run])
        [rs] = doc["resourceSpans"]
        spans = rs["scopeSpans"][0]["spans"]
        assert len(spans) == len(run.steps)
        assert {s["traceId"] for s in spans} == {trace_id_for(run.run_id)}
        tool = spans[2]
        attrs = {a["key"]: a["value"] for a in tool["attributes"]}
        assert attrs["openinference.span.kind"] == {"stringValue": "TOOL"}
        assert attrs["tool.name"] == {"stringValue": "find_user"}
        assert tool["status"]["code"] == 2
        assert [e["name"] for e in tool["events"]] == ["exception", "trajdebug.error.occurred"]
        assert [e["name"] for e in spans[3]["events"]] == ["trajdebug.error.recovered"]
        assert tool["links"][0]["spanId"] == span_id_for(run.run_id, run.steps[1].step_id)
        link_attrs = {a["key"]: a["value"] for a in tool["links"][0]["attributes"]}
        assert link_attrs["trajdebug.dep.origin"] == {"stringValue": "declared"}
        assert all(len(s["spanId"]) == 16 and len(s["traceId"]) == 32 for s in spans)

    def test_ids_are_kept_when_already_otel_shaped(self, recorded: Run) -> None:
        """Recorded 16-hex step ids and 32-hex run ids are the span and trace ids."""
        spans = export_otlp([recorded])["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert [s["spanId"] for s in spans] == [s.step_id for s in recorded.steps]
        assert {s["traceId"] for s in spans} == {recorded.run_id}

    def test_per_line_output(self, tmp_path: Path, recorded: Run) -> None:
        """Per-line output holds one envelope per run per line and imports back."""
        f = tmp_path / "spans.jsonl"
        write_otlp(
            [recorded, recorded.__class__(**{**_fields(recorded), "run_id": "second"})], f, per_line=True
        )
        lines = f.read_text().splitlines()
        assert len(lines) == 2
        assert [r.run_id for r in import_path(f).runs] == [recorded.run_id, "second"]


def _fields(run: Run) -> dict[str, Any]:
    return {name: getattr(run, name) for name in run.__dataclass_fields__}


@pytest.fixture
def cli() -> click.Group:
    group = click.Group()
    register(group)
    return group


class TestCommands:
    """``trajdebug import`` and ``trajdebug export``."""

    def test_import_to_jsonl_and_export_back(self, cli: click.Group, tmp_path: Path) -> None:
        """import writes trajdebug JSONL; export writes OTLP that imports to the same run."""
        src = tmp_path / "log.json"
        src.write_text(json.dumps(LOG))
        out = tmp_path / "run.jsonl"
        r = CliRunner().invoke(cli, ["import", str(src), "--from", "openai", "-o", str(out)])
        assert r.exit_code == 0, r.output
        assert "imported 1 run (4 steps, 1 error)" in r.output
        [run] = read_jsonl(out).runs
        spans = tmp_path / "spans.json"
        r = CliRunner().invoke(cli, ["export", str(out), "--to", "otlp", "-o", str(spans)])
        assert r.exit_code == 0, r.output
        assert import_path(spans).runs == [run]

    def test_import_into_a_store_with_json_summary(self, cli: click.Group, tmp_path: Path) -> None:
        """Importing into a .db file saves the runs in a store; --json prints a summary."""
        from trajdebug.store import Store

        src = tmp_path / "log.json"
        src.write_text(json.dumps(LOG))
        db = tmp_path / "runs.db"
        r = CliRunner().invoke(cli, ["import", str(src), "-o", str(db), "--json"])
        assert r.exit_code == 0, r.output
        summary = json.loads(r.output)
        assert summary["format"] == "openai"
        assert summary["runs"][0]["steps"] == 4
        with Store(db) as store:
            assert store.run_ids() == ["log"]

    def test_malformed_records_warn_and_unreadable_files_fail(self, cli: click.Group, tmp_path: Path) -> None:
        """A malformed message is a warning naming file and record; a file with nothing readable is an error."""
        src = tmp_path / "log.json"
        src.write_text(json.dumps([*LOG, {"content": "no role"}]))
        r = CliRunner().invoke(cli, ["import", str(src), "-o", str(tmp_path / "o.jsonl")])
        assert r.exit_code == 0
        assert f"warning: {src}:5: message 5: lacks a string field 'role'" in r.output
        bad = tmp_path / "bad.json"
        bad.write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}')
        r = CliRunner().invoke(cli, ["import", str(bad), "-o", str(tmp_path / "p.jsonl")])
        assert r.exit_code == 1
        assert f"{bad}:" in r.output
        assert "resourceSpans[0].scopeSpans[0].spans[0]" in r.output
        r = CliRunner().invoke(cli, ["import", str(src), "--from", "nope"])
        assert r.exit_code == 1
        assert "unknown format 'nope'" in r.output

    def test_registered_in_the_main_cli(self) -> None:
        """The trajdebug command line has import and export."""
        from trajdebug.cli import cli as main

        assert {"import", "export"} <= set(main.list_commands(click.Context(main)))


class TestWhatPeersRead:
    """The OpenInference attributes Phoenix and Langfuse read: tokens, cost, session, user, tags, metadata."""

    @staticmethod
    def _exported(tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
        from tests.builders import recorded_shop_store

        from trajdebug.cli import cli

        store = tmp_path / "shop.db"
        ids = recorded_shop_store(store)
        out = tmp_path / "shop.otlp.json"
        result = CliRunner().invoke(cli, ["export", str(store), "-o", str(out)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(out.read_text()), ids

    def test_llm_spans_carry_token_counts_and_cost_and_every_span_its_session_and_user(self, tmp_path: Path) -> None:
        """An exported LLM call has llm.token_count.* and llm.cost.total; spans say session.id and user.id; the
        top span tag.tags and metadata."""
        doc, _ = self._exported(tmp_path)
        spans = [sp for rs in doc["resourceSpans"] for sc in rs["scopeSpans"] for sp in sc["spans"]]
        attrs = [{a["key"]: a["value"] for a in sp["attributes"]} for sp in spans]
        llm = [a for a in attrs if a["openinference.span.kind"] == {"stringValue": "LLM"}]
        assert llm and all(a["llm.token_count.prompt"] == {"intValue": "120"} for a in llm)
        assert all(a["llm.token_count.total"] == {"intValue": "150"} and a["llm.cost.total"]["doubleValue"] > 0 for a in llm)
        assert {a["session.id"]["stringValue"] for a in attrs} == {"s-dan-1", "s-eve-1"}
        assert {a["user.id"]["stringValue"] for a in attrs} == {"dan", "eve"}
        tagged = [a["tag.tags"]["arrayValue"]["values"] for a in attrs if "tag.tags" in a]
        assert [{"stringValue": "prod"}, {"stringValue": "refund"}] in tagged
        assert any(json.loads(a["metadata"]["stringValue"])["channel"] == "chat" for a in attrs if "metadata" in a)

    def test_a_backend_reading_only_openinference_sees_tokens_cost_session_user_and_tags(self, tmp_path: Path) -> None:
        """With trajdebug's own attributes taken out (what Phoenix or Langfuse read), the file still gives each
        run its tokens, cost, session, user and tags."""
        from trajdebug.usage import run_usage

        doc, _ = self._exported(tmp_path)
        for rs in doc["resourceSpans"]:
            rs["resource"]["attributes"] = [a for a in rs["resource"]["attributes"] if not a["key"].startswith("trajdebug.")]
            for sc in rs["scopeSpans"]:
                for sp in sc["spans"]:
                    sp["attributes"] = [a for a in sp["attributes"] if not a["key"].startswith("trajdebug.")]
        from trajdebug.sources.load import load_runs

        foreign = tmp_path / "as_phoenix_reads.json"
        foreign.write_text(json.dumps(doc))
        runs = sorted(load_runs(foreign, fmt="otlp"), key=lambda r: r.start_ns)
        assert [(r.metadata["session"], r.metadata["user"]) for r in runs] == [
            ("s-dan-1", "dan"), ("s-eve-1", "eve"), ("s-eve-1", "eve")
        ]
        assert [r.metadata["tags"] for r in runs] == [["prod", "refund"], ["prod", "status"], ["staging", "status"]]
        usage = [run_usage(r) for r in runs]
        assert [u.total_tokens for u in usage] == [150, 150, 150] and all(u.cost and u.cost > 0 for u in usage)

    def test_export_then_import_keeps_tokens_cost_session_user_and_tags(self, tmp_path: Path) -> None:
        """`export` then `import --from otlp` into a new store lists the same tokens, cost, session, user and tags."""
        from trajdebug.cli import cli

        self._exported(tmp_path)
        back = tmp_path / "back.db"
        runner = CliRunner()
        result = runner.invoke(cli, ["import", str(tmp_path / "shop.otlp.json"), "--from", "otlp", "-o", str(back)])
        assert result.exit_code == 0, result.output
        rows = {}
        for path in (tmp_path / "shop.db", back):
            out = runner.invoke(cli, ["runs", str(path), "--json"], catch_exceptions=False).output
            rows[path] = [
                {k: r[k] for k in ("run_id", "tokens", "cost", "session", "user", "tags")} for r in json.loads(out)["runs"]
            ]
        assert rows[back] == rows[tmp_path / "shop.db"] and rows[back][0]["tokens"] == 150
