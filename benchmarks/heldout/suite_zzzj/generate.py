"""Generate suite_zzzj: python benchmarks/heldout/suite_zzzj/generate.py OUT [agent-module ...]

Every agent module here exposes RUN_NAME, ROUTE, INPUTS, CASES, a module-level switch ACTIVE and
record(server, input, path). One FakeModelServer on 127.0.0.1 answers every model call.
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
sys.path.insert(0, str(HERE))
try:
    import trajdebug  # noqa: F401
except ImportError:  # run as a plain script without PYTHONPATH: use this worktree's src
    sys.path.insert(0, str(HERE.parents[2] / "src"))
os.environ.setdefault("OTEL_SDK_DISABLED", "false")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.pop("TRAJDEBUG", None)  # recording must be on

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from suitecommon import FORBIDDEN  # noqa: E402

MODULES = ["zeppelin_sdk", "metronome_sdk", "xylophone_langgraph", "mandolin_langgraph",
           "ukulele_agents", "trapeze_agents", "monorail_otlp", "bobsleigh_otlp"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


def record_text(mod, server, inp, switch: str, tmp: Path) -> str:
    path = tmp / f"r{time.perf_counter_ns()}.{EXT[mod.ROUTE]}"
    mod.ACTIVE = switch
    try:
        mod.record(server, inp, str(path))
    finally:
        mod.ACTIVE = ""
    trajdebug.flush()
    return path.read_text()


def load(text: str, ext: str, tmp: Path):
    path = tmp / f"l{time.perf_counter_ns()}.{ext}"
    path.write_text(text)
    return trajdebug.load_runs(str(path))


def join(texts: list[str], ext: str) -> str:
    if ext == "jsonl":
        return "".join(t if t.endswith("\n") else t + "\n" for t in texts)
    spans = []
    for t in texts:
        spans.extend(json.loads(t)["resourceSpans"])
    return json.dumps({"resourceSpans": spans})


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, run.steps.index(s)))


def find(steps, name: str, occurrence: int):
    hits = [s for s in steps if s.name == name]
    assert len(hits) >= occurrence, f"step {name} #{occurrence} not found ({len(hits)} of that name)"
    return hits[occurrence - 1]


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    names = argv[1:] or MODULES
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzj_"))
    case_ids: list[str] = []
    started = time.time()
    try:
        with FakeModelServer(lambda request: "") as server:
            for name in names:
                mod = importlib.import_module(name)
                ext = EXT[mod.ROUTE]
                passing = []
                for inp in mod.INPUTS:
                    text = record_text(mod, server, inp, "", tmp)
                    [run] = load(text, ext, tmp)
                    assert run.outcome == "success", (name, inp, run.outcome, getattr(run, "failure_reason", None))
                    assert run.name == mod.RUN_NAME, (run.name, mod.RUN_NAME)
                    passing.append(text)
                assert len(mod.CASES) == 5
                for case in mod.CASES:
                    cid = case["id"]
                    assert case["kind"] in KINDS, case
                    failed_text = record_text(mod, server, mod.INPUTS[case["input"]], case["switch"], tmp)
                    [failed] = load(failed_text, ext, tmp)
                    assert failed.outcome == "failure", (cid, failed.outcome)
                    steps = ordered(failed)
                    root = find(steps, *case["root"])
                    fail = find(steps, *case["failure"])
                    assert root.status == "ok", (cid, "root status", root.status)
                    assert fail.status == "error", (cid, "failure status", fail.status)
                    hops = steps.index(fail) - steps.index(root)
                    assert hops >= 1, (cid, hops)
                    control_text = passing[case["input"]]
                    refs = [t for i, t in enumerate(passing) if i != case["input"]]
                    with_refs = join([failed_text, *refs], ext)
                    runs = load(with_refs, ext, tmp)
                    assert len(runs) == 5 and sum(r.outcome == "failure" for r in runs) == 1, (cid, [r.outcome for r in runs])
                    assert sum(r.outcome == "success" for r in runs) == 4
                    [control] = load(control_text, ext, tmp)
                    assert control.outcome == "success"
                    truth = {"case": cid, "agent": mod.RUN_NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                             "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
                             "failure": {"name": fail.name, "occurrence": case["failure"][1]},
                             "hops": hops, "description": case["description"]}
                    files = {f"failed.{ext}": failed_text, f"control.{ext}": control_text, f"with_refs.{ext}": with_refs}
                    for fname, text in files.items():
                        m = FORBIDDEN.search(text)
                        assert not m, (cid, fname, text[max(0, m.start() - 80): m.end() + 80])
                        assert cid not in text, (cid, fname)
                    assert not FORBIDDEN.search(case["description"]), cid
                    d = out / cid
                    if d.exists():
                        shutil.rmtree(d)
                    d.mkdir(parents=True)
                    for fname, text in files.items():
                        (d / fname).write_text(text)
                    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    case_ids.append(cid)
                    print(f"{cid:28s} {mod.ROUTE:14s} {case['kind']:22s} {root.name}#{case['root'][1]} -> {fail.name} hops={hops}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert len(case_ids) == len(set(case_ids))
    (out / "index.json").write_text(json.dumps({"cases": case_ids}, indent=2) + "\n")
    print(f"{len(case_ids)} cases in {time.time() - started:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
