"""Generate the held-out suite_zzzb: 8 agents x 5 cases of failing agent runs.

Usage: python benchmarks/heldout/suite_zzzb/generate.py OUT [agent-module ...]
"""
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
if SRC.is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "agent_sailloft",
    "agent_harpsichord",
    "agent_icehotel",
    "agent_mountainhut",
    "agent_sturgeon",
    "agent_sumo",
    "agent_balloon",
    "agent_eelfishery",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
ROUTES = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)", re.IGNORECASE)


def load_module(name: str):
    path = HERE / (name if name.endswith(".py") else name + ".py")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def find(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"no step {name!r} #{occurrence} (found {len(hits)})"
    return hits[occurrence - 1]


def one_run(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def join(paths, ext, dest: Path):
    if ext == "jsonl":
        with open(dest, "w") as out:
            for p in paths:
                text = Path(p).read_text()
                out.write(text if text.endswith("\n") else text + "\n")
    else:
        spans = []
        for p in paths:
            spans.extend(json.loads(Path(p).read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))


def check_words(path: Path, case_ids):
    text = path.read_text()
    m = FORBIDDEN.search(text)
    assert not m, f"{path}: forbidden word near {text[max(0, m.start() - 60):m.end() + 60]!r}"
    for cid in case_ids:
        assert cid not in text, f"{path}: holds a case id {cid}"


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzb_"))
    all_ids = [c["id"] for n in names for c in load_module(n).CASES]
    index = []
    try:
        with FakeModelServer(lambda request: "") as server:
            for name in names:
                mod = load_module(name)
                ext = ROUTES[mod.ROUTE]
                assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5, name
                work = tmp / mod.__name__
                work.mkdir()
                passing = []
                for i, inp in enumerate(mod.INPUTS):
                    mod.SWITCH = None
                    server.use(mod.policy)
                    p = work / f"pass{i}.{ext}"
                    mod.record(inp, p, server)
                    r = one_run(p)
                    assert r.outcome == "success", f"{name} input {i}: {r.outcome} {r.failure_reason}"
                    assert r.name == mod.RUN_NAME, (r.name, mod.RUN_NAME)
                    passing.append(p)
                for case in mod.CASES:
                    assert case["kind"] in KINDS, case
                    cid = case["id"]
                    mod.SWITCH = case["switch"]
                    server.use(mod.policy)
                    fp = work / f"{cid}.{ext}"
                    try:
                        mod.record(mod.INPUTS[case["input"]], fp, server)
                    finally:
                        mod.SWITCH = None
                    run = one_run(fp)
                    assert run.outcome == "failure", f"{cid}: outcome {run.outcome}"
                    assert run.name == mod.RUN_NAME
                    steps = ordered(run)
                    ri = find(steps, *case["root"])
                    fi = find(steps, *case["failure"])
                    root, fail = steps[ri], steps[fi]
                    assert root.status == "ok", f"{cid}: root {root.name} status {root.status}"
                    assert fail.status == "error", f"{cid}: failure {fail.name} status {fail.status}"
                    assert fi > ri and fail.start_ns >= root.start_ns, f"{cid}: failure before root"
                    d = out / cid
                    if d.exists():
                        shutil.rmtree(d)
                    d.mkdir()
                    shutil.copy(fp, d / f"failed.{ext}")
                    shutil.copy(passing[case["input"]], d / f"control.{ext}")
                    others = [passing[j] for j in range(5) if j != case["input"]]
                    join([fp, *others], ext, d / f"with_refs.{ext}")
                    refs = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
                    assert len(refs) == 5, f"{cid}: with_refs holds {len(refs)} runs"
                    assert sorted(r.outcome for r in refs) == ["failure"] + ["success"] * 4, cid
                    assert all(r.name == mod.RUN_NAME for r in refs)
                    ctrl = one_run(d / f"control.{ext}")
                    assert ctrl.outcome == "success"
                    truth = {
                        "case": cid,
                        "agent": mod.RUN_NAME,
                        "route": mod.ROUTE,
                        "fault_kind": case["kind"],
                        "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
                        "failure": {"name": fail.name, "occurrence": case["failure"][1]},
                        "hops": fi - ri,
                        "description": case["description"],
                    }
                    m = FORBIDDEN.search(case["description"])
                    assert not m, f"{cid}: description holds {m.group(0)!r}"
                    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    for f in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
                        check_words(d / f, all_ids)
                    index.append(cid)
                    print(f"{cid:24s} {mod.ROUTE:13s} {case['kind']:22s} {root.name}#{case['root'][1]} -> "
                          f"{fail.name}#{case['failure'][1]} hops={fi - ri}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": index}, indent=2) + "\n")
    print(f"{len(index)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
