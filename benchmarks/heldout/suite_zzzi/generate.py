"""Generate the held-out suite zzzi: 8 agents x 5 cases of failing runs with their truth.

python benchmarks/heldout/suite_zzzi/generate.py OUT [agent-module ...]
"""
from __future__ import annotations

import asyncio
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
if str(ROOT / "src") not in sys.path:
    sys.path.insert(1, str(ROOT / "src"))
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["bathyscaphe", "prism", "snowglobe", "weathervane", "gargoyle", "barometer", "theremin", "troupe"]
FORBIDDEN = re.compile(r"\b(faults?|faulty|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}


class Ctx:
    """What an agent's `record` gets: the fake server, and for the otlp route the tracer and exporter."""

    def __init__(self, server):
        self.server = server
        self.otel = None

    def otel_setup(self):
        if self.otel is None:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            self.otel = (provider, exporter)
        return self.otel


def write_otlp(ctx, path):
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    _, exporter = ctx.otel
    doc = MessageToDict(encode_spans(exporter.get_finished_spans()))
    exporter.clear()
    Path(path).write_text(json.dumps(doc))


def record(mod, ctx, inp, path):
    if mod.ROUTE == "otlp":
        from openinference.instrumentation.openai import OpenAIInstrumentor

        provider, exporter = ctx.otel_setup()
        exporter.clear()
        OpenAIInstrumentor().instrument(tracer_provider=provider)
        try:
            mod.record(inp, ctx, provider.get_tracer(mod.NAME))
        finally:
            OpenAIInstrumentor().uninstrument()
        write_otlp(ctx, path)
    else:
        mod.record(inp, ctx, str(path))
    trajdebug.flush()


def join(paths, dest, ext):
    if ext == "jsonl":
        with open(dest, "w") as out:
            for p in paths:
                out.write(Path(p).read_text())
    else:
        spans = []
        for p in paths:
            spans.extend(json.loads(Path(p).read_text()).get("resourceSpans", []))
        Path(dest).write_text(json.dumps({"resourceSpans": spans}))


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(steps, name, occ):
    hits = [s for s in steps if s.name == name]
    assert len(hits) >= occ, f"step {name!r} #{occ} not found ({len(hits)} of that name)"
    return hits[occ - 1]


def check_words(path, case_ids):
    text = Path(path).read_text()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: holds {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"
    for cid in case_ids:
        assert cid not in text, f"{path}: holds the case id {cid}"


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = [a.split(".")[-1] for a in argv[1:]] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    mods = [importlib.import_module(f"businesses.{n}") for n in names]
    all_ids = [f"{m.SHORT}-{i + 1}" for m in mods for i in range(len(m.CASES))]
    index = []
    tmp = Path(tempfile.mkdtemp(prefix="runs-"))
    try:
        with FakeModelServer(lambda r: "no policy") as server:
            ctx = Ctx(server)
            for mod in mods:
                server.use(mod.policy)
                ext = "json" if mod.ROUTE == "otlp" else "jsonl"
                mod.ACTIVE = None
                clean = []
                for i, inp in enumerate(mod.INPUTS):
                    p = tmp / f"{mod.SHORT}_p{i}.{ext}"
                    record(mod, ctx, inp, p)
                    [run] = trajdebug.load_runs(str(p))
                    assert run.outcome == "success", (mod.NAME, i, run.failure_reason)
                    assert run.name == mod.NAME, (run.name, mod.NAME)
                    clean.append(p)
                for n, case in enumerate(mod.CASES):
                    cid = f"{mod.SHORT}-{n + 1}"
                    assert case["kind"] in KINDS, case["kind"]
                    d = out / cid
                    d.mkdir(parents=True, exist_ok=True)
                    fp = tmp / f"{mod.SHORT}_f{n}.{ext}"
                    mod.ACTIVE = case["switch"]
                    try:
                        record(mod, ctx, mod.INPUTS[case["input"]], fp)
                    finally:
                        mod.ACTIVE = None
                    shutil.copy(fp, d / f"failed.{ext}")
                    shutil.copy(clean[case["input"]], d / f"control.{ext}")
                    join([fp] + [c for j, c in enumerate(clean) if j != case["input"]], d / f"with_refs.{ext}", ext)
                    [failed] = trajdebug.load_runs(str(d / f"failed.{ext}"))
                    [control] = trajdebug.load_runs(str(d / f"control.{ext}"))
                    refs = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
                    assert failed.outcome == "failure", (cid, failed.outcome)
                    assert control.outcome == "success", cid
                    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
                    assert all(r.name == mod.NAME for r in refs), cid
                    steps = ordered(failed)
                    root = find(steps, case["root"][0], case["root"][1])
                    fail = find(steps, case["failure"][0], case["failure"][1])
                    assert root.status == "ok", (cid, "root status", root.status)
                    assert fail.status == "error", (cid, "failure status", fail.status, fail.name)
                    ri, fi = steps.index(root), steps.index(fail)
                    assert fi > ri, (cid, ri, fi)
                    if "root_kind" in case:
                        assert root.kind == case["root_kind"], (cid, root.kind)
                    for f in ("failed", "control", "with_refs"):
                        check_words(d / f"{f}.{ext}", all_ids)
                    assert not FORBIDDEN.search(case["description"]), cid
                    truth = {
                        "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                        "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
                        "failure": {"name": fail.name, "occurrence": case["failure"][1]},
                        "hops": fi - ri, "description": case["description"],
                    }
                    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    index.append(cid)
                    print(f"{cid:14s} {case['kind']:22s} {root.name}#{case['root'][1]} ({root.kind}) -> "
                          f"{fail.name}#{case['failure'][1]} hops={fi - ri}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": index}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
