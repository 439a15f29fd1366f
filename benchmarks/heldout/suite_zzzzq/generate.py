"""Generate suite_zzzzq: 8 public-safety agents x 5 failing cases, recorded through four routes.

    python benchmarks/heldout/suite_zzzzq/generate.py OUT [agent ...]
"""
from __future__ import annotations

import contextlib
import importlib
import os
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
sys.path.insert(0, str(SRC))
sys.path.insert(0, str(HERE))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["hazmat", "drift", "lookout", "ecall", "surf", "siren", "flood", "k9"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
BANNED = re.compile(r"fault|bug|wrong|stale|inject|corrupt|planted", re.I)


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def find(run, name, occ):
    hits = [(i, s) for i, s in enumerate(ordered(run)) if s.name == name]
    assert len(hits) >= occ, f"{run.name}: step {name!r} #{occ} not found ({len(hits)} of that name)"
    return hits[occ - 1]


def check_words(run, where):
    for s in run.steps:
        blob = json.dumps([s.name, s.input, s.output, s.error, s.attributes], default=str)
        blob = blob.replace("trajdebug", "").replace("TrajdebugTracer", "")
        m = BANNED.search(blob)
        assert not m, f"{where}: step {s.name} records the word {m.group(0)!r}: ...{blob[max(0, m.start()-60):m.end()+60]}"
    reason = json.dumps(run.failure_reason, default=str).replace("trajdebug", "")
    assert not BANNED.search(reason), f"{where}: failure reason {reason}"


def record(mod, inp, server, path):
    server.use(mod.brain)
    if path.exists():
        path.unlink()
    try:
        mod.record(inp, server, path)
    except Exception:  # the agent's own failure: recorded, then raised out of its run
        pass
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{mod.NAME}: {len(runs)} runs in {path}"
    return runs[0]


def merge(paths, out, ext):
    if ext == "json":
        docs = [json.loads(Path(p).read_text()) for p in paths]
        Path(out).write_text(json.dumps({"resourceSpans": [rs for d in docs for rs in d.get("resourceSpans", [])]}))
    else:
        Path(out).write_text("".join(Path(p).read_text() for p in paths))


def build_agent(key, server, out, tmp):
    mod = importlib.import_module(f"zq_agents.{key}")
    ext = EXT[mod.ROUTE]
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    passes = []
    for i, inp in enumerate(mod.INPUTS):
        mod.SWITCH = None
        p = tmp / f"{key}-pass{i}.{ext}"
        run = record(mod, inp, server, p)
        assert run.outcome == "success", f"{mod.NAME} input {i}: {run.outcome} {run.failure_reason}"
        assert run.name == mod.NAME, run.name
        assert 10 <= len(run.steps) <= 60, f"{mod.NAME} input {i}: {len(run.steps)} steps"
        check_words(run, f"{mod.NAME} pass {i}")
        passes.append(p)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["fault_kind"] in KINDS, case
        mod.SWITCH = cid
        try:
            fp = tmp / f"{cid}-failed.{ext}"
            run = record(mod, mod.INPUTS[case["input"]], server, fp)
        finally:
            mod.SWITCH = None
        where = f"{cid}"
        assert run.outcome == "failure", f"{where}: outcome {run.outcome}"
        assert len(run.steps) <= 60, f"{where}: {len(run.steps)} steps"
        check_words(run, where)
        ri, root = find(run, *case["root"])
        fi, fail = find(run, *case["failure"])
        assert root.status == "ok", f"{where}: root {root.name} status {root.status}"
        assert fail.status == "error", f"{where}: failure step {fail.name} status {fail.status}"
        assert ri < fi, f"{where}: root at {ri}, failure at {fi}"
        if case.get("root_kind"):
            assert root.kind == case["root_kind"], f"{where}: root kind {root.kind} != {case['root_kind']}"
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        shutil.copy(fp, d / f"failed.{ext}")
        shutil.copy(passes[case["input"]], d / f"control.{ext}")
        refs = [fp] + [p for j, p in enumerate(passes) if j != case["input"]]
        merge(refs, d / f"with_refs.{ext}", ext)
        [ctl] = trajdebug.load_runs(str(d / f"control.{ext}"))
        assert ctl.outcome == "success"
        both = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, [r.outcome for r in both]
        assert len({r.run_id for r in both}) == 5
        truth = {
            "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
            "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": case["failure"][1]},
            "hops": fi - ri, "description": case["description"],
        }
        assert not BANNED.search(case["description"]), case["description"]
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    keys = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    ids = []
    keep = os.environ.get("ZQ_KEEP")  # a folder to keep the raw runs in, for debugging
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
    with (contextlib.nullcontext(keep) if keep else tempfile.TemporaryDirectory(prefix="suite_zzzzq65_", dir="/tmp")) as t, \
            FakeModelServer(lambda r: "ok") as server:
        for key in keys:
            ids += build_agent(key, server, out, Path(t))
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
