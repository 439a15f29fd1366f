"""Generate the held-out suite: python benchmarks/heldout/suite_zzzl/generate.py OUT [agent-module ...]."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
if str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "agent_bathhouse",
    "agent_bellfoundry",
    "agent_dulcimer",
    "agent_zither",
    "agent_ocarina",
    "agent_tabla",
    "agent_fountainpen",
    "agent_astrolabe",
]
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|inject|corrupt|planted)", re.IGNORECASE)
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}


class Ctx:
    """What an agent's record() is handed: the server and, for the otlp route, the OpenTelemetry pieces."""

    def __init__(self, server: FakeModelServer) -> None:
        self.server = server
        self._otel = None

    def otel(self):
        if self._otel is None:
            from openinference.instrumentation.openai import OpenAIInstrumentor
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            spans = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(spans))
            OpenAIInstrumentor().instrument(tracer_provider=provider)
            self._otel = (provider, spans)
        return self._otel

    def close(self) -> None:
        if self._otel is not None:
            from openinference.instrumentation.openai import OpenAIInstrumentor

            OpenAIInstrumentor().uninstrument()


def write_otlp(spans, path: Path) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    path.write_text(json.dumps(MessageToDict(encode_spans(spans))))


def load_agent(name: str):
    path = HERE / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"suite_zzzl_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    mod.write_otlp = write_otlp
    return mod


def one_run(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def ordered(run):
    return sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))


def find(steps, name: str, occ: int):
    n = 0
    for i, (_, s) in enumerate(steps):
        if s.name == name:
            n += 1
            if n == occ:
                return i, s
    raise AssertionError(f"no step {name!r} #{occ}")


def join(paths: list[Path], out: Path, ext: str) -> None:
    if ext == "jsonl":
        out.write_text("".join(p.read_text() if p.read_text().endswith("\n") else p.read_text() + "\n" for p in paths))
    else:
        rs = []
        for p in paths:
            rs.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": rs}))


def clean(path: Path) -> None:
    text = path.read_text()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: forbidden word {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"


def build(out: Path, names: list[str]) -> list[str]:
    out.mkdir(parents=True, exist_ok=True)
    case_ids: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="suite_zzzl_"))
    try:
        with FakeModelServer(lambda r: "") as server:
            ctx = Ctx(server)
            try:
                for name in names:
                    mod = load_agent(name)
                    ext = "json" if mod.ROUTE == "otlp" else "jsonl"
                    server.use(mod.policy)
                    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
                    refs = []
                    for i, inp in enumerate(mod.INPUTS):
                        p = work / f"{name}_ref{i}.{ext}"
                        mod.ON.clear()
                        mod.record(inp, p, ctx)
                        r = one_run(p)
                        assert r.outcome == "success", (name, i, r.outcome, getattr(r, "failure_reason", None))
                        assert r.name == mod.NAME, (r.name, mod.NAME)
                        refs.append(p)
                    for case in mod.CASES:
                        cid = case["id"]
                        assert case["kind"] in KINDS, case["kind"]
                        d = out / cid
                        d.mkdir(parents=True, exist_ok=True)
                        fp = work / f"{cid}_failed.{ext}"
                        mod.ON.clear()
                        mod.ON.add(case["switch"])
                        try:
                            mod.record(mod.INPUTS[case["input"]], fp, ctx)
                        finally:
                            mod.ON.clear()
                        run = one_run(fp)
                        assert run.outcome == "failure", (cid, run.outcome)
                        steps = ordered(run)
                        rname, rocc, rkind = case["root"]
                        fname, focc = case["failure"]
                        ri, rs = find(steps, rname, rocc)
                        fi, fs = find(steps, fname, focc)
                        assert rs.status == "ok", (cid, rs.status)
                        assert rs.kind == rkind, (cid, rs.kind, rkind)
                        if case.get("root_input"):
                            assert case["root_input"] in json.dumps(rs.input), (cid, rs.input)
                        assert fs.status == "error", (cid, fs.status)
                        assert fi > ri, (cid, ri, fi)
                        shutil.copy(fp, d / f"failed.{ext}")
                        shutil.copy(refs[case["input"]], d / f"control.{ext}")
                        join([fp] + [p for j, p in enumerate(refs) if j != case["input"]], d / f"with_refs.{ext}", ext)
                        wr = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
                        assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1, cid
                        assert sum(r.outcome == "success" for r in wr) == 4, cid
                        assert one_run(d / f"control.{ext}").outcome == "success"
                        truth = {
                            "case": cid,
                            "agent": mod.NAME,
                            "route": mod.ROUTE,
                            "fault_kind": case["kind"],
                            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
                            "failure": {"name": fname, "occurrence": focc},
                            "hops": fi - ri,
                            "description": case["description"],
                        }
                        assert not FORBIDDEN.search(case["description"]), cid
                        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                        for f in ("failed", "control", "with_refs"):
                            clean(d / f"{f}.{ext}")
                            assert cid not in (d / f"{f}.{ext}").read_text(), cid
                        case_ids.append(cid)
                        print(f"{cid:16} {mod.ROUTE:13} {case['kind']:22} {rname}#{rocc} -> {fname}#{focc} hops={fi - ri}")
            finally:
                ctx.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": case_ids}, indent=2) + "\n")
    return case_ids


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    ids = build(Path(sys.argv[1]), sys.argv[2:] or AGENTS)
    print(f"{len(ids)} cases")
