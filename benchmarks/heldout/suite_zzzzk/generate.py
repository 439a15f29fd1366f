"""Generate suite_zzzzk: 8 arts/culture/media-production agents x 5 failing cases, recorded four ways.

    python generate.py OUT [agent ...]

Writes OUT/<case>/{failed,control,with_refs}.<ext>, OUT/<case>/truth.json and OUT/index.json.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402

import common  # noqa: E402

AGENTS = [
    "subtitle_conform",
    "type_foundry",
    "film_scan",
    "sync_clearance",
    "podcast_ads",
    "parts_library",
    "loan_registrar",
    "audiobook",
]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}


def ordered(run):
    return sorted(run.steps, key=lambda s: s.start_ns)


def index_of(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} #{occurrence} not found ({len(hits)} of that name)"
    return hits[occurrence - 1]


def load_one(path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def merge(paths, dest, ext):
    if ext == "jsonl":
        with open(dest, "w") as out:
            for p in paths:
                out.write(Path(p).read_text())
    else:
        spans = []
        for p in paths:
            spans.extend(json.loads(Path(p).read_text())["resourceSpans"])
        Path(dest).write_text(json.dumps({"resourceSpans": spans}))


def setup_route(route, server):
    if route == "openai_agents" and common.ASYNC_CLIENT is None:
        from openai import AsyncOpenAI

        common.ASYNC_CLIENT = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    if route == "otlp" and common.TRACER is None:
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        common.SPANS = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(common.SPANS))
        common.INSTRUMENTOR = OpenAIInstrumentor()
        common.INSTRUMENTOR.instrument(tracer_provider=provider)
        common.TRACER = provider.get_tracer("suite_zzzzk")


def run_agent(mod, server, out: Path, tmp: Path) -> list[str]:
    route = mod.ROUTE
    ext = EXT[route]
    setup_route(route, server)
    server.use(mod.brain)
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    passing = []
    for i, inp in enumerate(mod.INPUTS):
        mod.SWITCH = None
        p = tmp / f"{mod.RUN_NAME}-pass{i}.{ext}"
        mod.record(inp, str(p))
        run = load_one(p)
        assert run.outcome == "success", f"{mod.RUN_NAME} input {i}: {run.outcome} {run.failure_reason}"
        assert run.name == mod.RUN_NAME, run.name
        assert 10 <= len(run.steps) <= 60, f"{mod.RUN_NAME} input {i}: {len(run.steps)} steps"
        common.check_words(run)
        passing.append(p)
    ids = []
    for case in mod.CASES:
        cid = case["case"]
        assert case["fault_kind"] in KINDS, case["fault_kind"]
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        (d / f"failed.{ext}").unlink(missing_ok=True)
        mod.SWITCH = case["switch"]
        try:
            mod.record(mod.INPUTS[case["input"]], str(d / f"failed.{ext}"))
        finally:
            mod.SWITCH = None
        shutil.copyfile(passing[case["input"]], d / f"control.{ext}")
        others = [p for j, p in enumerate(passing) if j != case["input"]]
        merge([d / f"failed.{ext}", *others], d / f"with_refs.{ext}", ext)

        failed = load_one(d / f"failed.{ext}")
        control = load_one(d / f"control.{ext}")
        assert failed.outcome == "failure", f"{cid}: failed run is {failed.outcome}"
        assert control.outcome == "success", f"{cid}: control is {control.outcome}"
        assert failed.name == mod.RUN_NAME
        assert 10 <= len(failed.steps) <= 60, f"{cid}: {len(failed.steps)} steps"
        refs = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, f"{cid}: with_refs"
        assert len({r.name for r in refs}) == 1
        steps = ordered(failed)
        rname, rocc, rkind = case["root"]
        fname, focc = case["failure"]
        ri = index_of(steps, rname, rocc)
        fi = index_of(steps, fname, focc)
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", f"{cid}: root {rname} is {root.status}"
        assert root.kind == rkind, f"{cid}: root kind {root.kind} != {rkind}"
        assert fail.status == "error", f"{cid}: failure step {fname} is {fail.status}"
        assert ri < fi, f"{cid}: root at {ri} not before failure at {fi}"
        # the switch changed what the root returned (same input in the control run)
        csteps = ordered(control)
        ci = index_of(csteps, rname, rocc)
        assert json.dumps(csteps[ci].output, sort_keys=True, default=str) != json.dumps(
            root.output, sort_keys=True, default=str) or case.get("same_output"), f"{cid}: root output unchanged"
        common.check_words(failed, case["description"])
        truth = {
            "case": cid,
            "agent": mod.RUN_NAME,
            "route": route,
            "fault_kind": case["fault_kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri,
            "description": case["description"],
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    from openai import OpenAI

    from trajdebug.testing import FakeModelServer

    t0 = time.time()
    ids: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="zzzzk63_gen_"))
    try:
        with FakeModelServer(lambda request: "ready") as server:
            common.CLIENT = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
            common.MODEL = server.model
            common.SERVER = server
            for name in names:
                mod = importlib.import_module(f"zk_agents.{name}")
                t1 = time.time()
                ids.extend(run_agent(mod, server, out, tmp))
                print(f"{name}: {len(mod.CASES)} cases in {time.time() - t1:.1f}s", flush=True)
    finally:
        if common.INSTRUMENTOR is not None:
            common.INSTRUMENTOR.uninstrument()
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
