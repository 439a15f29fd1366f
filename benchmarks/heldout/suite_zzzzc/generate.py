"""Held-out suite zzzzc: 8 office/service agents x 5 cases of failing runs.

Usage: python generate.py OUT [agent ...]
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
sys.path.insert(0, SRC)
sys.path.insert(0, HERE)
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["docket_clerk", "pension_estimator", "interlibrary_loan", "outage_dispatch",
          "consular_desk", "tax_intake", "fare_refund", "trial_monitor"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
BANNED = re.compile(r"fault|\bbug|wrong|stale|inject|corrupt|planted", re.I)
KINDS = ["wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"]


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name} #{occurrence} not found ({len(hits)} of that name)"
    return hits[occurrence - 1]


def check_words(run, where):
    texts = [run.metadata.get("task", ""), run.failure_reason or ""]
    for s in run.steps:
        texts += [s.name, json.dumps(s.input, default=str), json.dumps(s.output, default=str)]
        if s.error is not None:
            texts.append(s.error.message or "")
    for t in texts:
        m = BANNED.search(str(t))
        assert not m, f"{where}: recorded text holds {m.group(0)!r}: {str(t)[:200]}"


def merge(paths, dest, ext):
    if ext == "jsonl":
        with open(dest, "w") as out:
            for p in paths:
                with open(p) as f:
                    out.write(f.read())
    else:
        spans = []
        for p in paths:
            with open(p) as f:
                spans += json.load(f).get("resourceSpans", [])
        with open(dest, "w") as out:
            json.dump({"resourceSpans": spans}, out)


def run_once(mod, server, inp, path, switch):
    mod.SWITCH = switch
    try:
        mod.execute(inp, server, path)
    finally:
        mod.SWITCH = None
    trajdebug.flush()


def build_agent(name, server, out, tmp):
    mod = importlib.import_module(name)
    ext = EXT[mod.ROUTE]
    server.use(mod.brain)
    clean = []
    for i, inp in enumerate(mod.INPUTS):
        p = os.path.join(tmp, f"{name}_clean{i}.{ext}")
        run_once(mod, server, inp, p, None)
        [r] = trajdebug.load_runs(p)
        assert r.outcome == "success", f"{name} input {i} does not pass: {r.failure_reason}"
        assert r.name == mod.NAME, (r.name, mod.NAME)
        check_words(r, f"{name} clean {i}")
        clean.append(p)
    ids = []
    assert len(mod.CASES) == 5
    for case in mod.CASES:
        cid = case["id"]
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        failed = os.path.join(d, f"failed.{ext}")
        run_once(mod, server, mod.INPUTS[case["input"]], failed, case["switch"])
        shutil.copy(clean[case["input"]], os.path.join(d, f"control.{ext}"))
        refs = [failed] + [p for i, p in enumerate(clean) if i != case["input"]]
        merge(refs, os.path.join(d, f"with_refs.{ext}"), ext)
        # ---- assertions
        [fr] = trajdebug.load_runs(failed)
        assert fr.outcome == "failure", f"{cid}: failed run ended {fr.outcome}"
        [cr] = trajdebug.load_runs(os.path.join(d, f"control.{ext}"))
        assert cr.outcome == "success", f"{cid}: control ended {cr.outcome}"
        wr = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
        assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1, f"{cid}: with_refs {[r.outcome for r in wr]}"
        assert all(r.name == mod.NAME for r in wr), f"{cid}: names {[r.name for r in wr]}"
        check_words(fr, cid)
        steps = ordered(fr)
        ri = find(steps, case["root"]["name"], case["root"]["occurrence"])
        fi = find(steps, case["failure"]["name"], case["failure"]["occurrence"])
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", f"{cid}: root status {root.status}"
        assert fail.status == "error", f"{cid}: failing step status {fail.status}"
        assert ri < fi, f"{cid}: root at {ri}, failure at {fi}"
        assert root.kind == case["root"]["kind"], f"{cid}: root kind {root.kind} != {case['root']['kind']}"
        # the root's value differs from the control run's same step
        csteps = ordered(cr)
        ci = find(csteps, case["root"]["name"], case["root"]["occurrence"])
        assert json.dumps(csteps[ci].output, default=str) != json.dumps(root.output, default=str) or \
            case.get("same_output_ok"), f"{cid}: root output equals the control's"
        assert case["fault_kind"] in KINDS
        assert not BANNED.search(case["description"]), f"{cid}: description"
        truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                 "root": dict(case["root"]), "failure": dict(case["failure"]), "hops": fi - ri,
                 "description": case["description"]}
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
        ids.append(cid)
    return ids


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    ids = []
    with tempfile.TemporaryDirectory() as tmp, FakeModelServer(model="office-model") as server:
        for name in names:
            ids += build_agent(name, server, out, tmp)
            print(f"{name}: ok ({time.time() - t0:.1f}s)", flush=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    print(f"{len(ids)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
