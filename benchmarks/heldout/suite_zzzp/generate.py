"""Generate suite_zzzp: python benchmarks/heldout/suite_zzzp/generate.py OUT [agent-module ...]"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from suite_common import FORBIDDEN  # noqa: E402

MODULES = ["clock_repair", "bell_rota", "thatch_jobs", "gilder_orders",
           "damask_mill", "bindery_commissions", "paper_studio", "turning_supply"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def record_one(mod, server, inp, path, switch):
    mod.SWITCH = switch
    server.use(mod.policy)
    try:
        mod.record(server, inp, path)
    finally:
        mod.SWITCH = None
    trajdebug.flush()
    [run] = trajdebug.load_runs(path)
    return run


def join(paths, out, route):
    if route == "otlp":
        doc = {"resourceSpans": []}
        for p in paths:
            doc["resourceSpans"].extend(json.load(open(p))["resourceSpans"])
        json.dump(doc, open(out, "w"))
    else:
        with open(out, "w") as f:
            for p in paths:
                f.write(open(p).read())


def occurrence(run, name, n):
    same = [i for i, s in enumerate(run.steps) if s.name == name]
    assert len(same) >= n, (run.name, name, n, len(same))
    return same[n - 1]


def main(argv):
    out = os.path.abspath(argv[0])
    mods = argv[1:] or MODULES
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="suite_zzzp_")
    ids = []
    try:
        with FakeModelServer() as server:
            for name in mods:
                mod = importlib.import_module(name)
                ext = ext_of(mod.ROUTE)
                passing = {}
                for i, inp in enumerate(mod.INPUTS):
                    p = os.path.join(tmp, f"{name}_pass_{i}.{ext}")
                    run = record_one(mod, server, inp, p, None)
                    assert run.outcome == "success", (name, i, run.outcome, run.failure_reason)
                    assert run.name == mod.RUN_NAME, (run.name, mod.RUN_NAME)
                    passing[i] = p
                assert len(mod.CASES) == 5
                for case in mod.CASES:
                    cid = case["id"]
                    assert case["fault_kind"] in KINDS, case
                    d = os.path.join(out, cid)
                    os.makedirs(d, exist_ok=True)
                    failed_p = os.path.join(d, f"failed.{ext}")
                    if os.path.exists(failed_p):
                        os.remove(failed_p)
                    run = record_one(mod, server, mod.INPUTS[case["input"]], failed_p, case["switch"])
                    assert run.outcome == "failure", (cid, run.outcome)
                    rname, rocc, rkind = case["root"]
                    fname, focc = case["failure"]
                    if case.get("root_input"):  # parallel calls: find the call by what it was given
                        same = [s for s in run.steps if s.name == rname]
                        hit = [k for k, s in enumerate(same)
                               if isinstance(s.input, dict) and all(s.input.get(a) == b for a, b in case["root_input"].items())]
                        assert len(hit) == 1, (cid, hit)
                        rocc = hit[0] + 1
                    ri = occurrence(run, rname, rocc)
                    fi = occurrence(run, fname, focc)
                    root, fail = run.steps[ri], run.steps[fi]
                    assert root.status == "ok", (cid, root.status)
                    if root.kind != rkind:
                        print(f"  note {cid}: root recorded as kind {root.kind}, listed {rkind}")
                    assert fail.status == "error", (cid, fail.name, fail.status)
                    assert fi > ri and fail.start_ns > root.start_ns, (cid, ri, fi)
                    shutil.copy(passing[case["input"]], os.path.join(d, f"control.{ext}"))
                    others = [passing[i] for i in range(5) if i != case["input"]]
                    join([failed_p] + others, os.path.join(d, f"with_refs.{ext}"), mod.ROUTE)
                    refs = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
                    [ctl] = trajdebug.load_runs(os.path.join(d, f"control.{ext}"))
                    assert ctl.outcome == "success", cid
                    truth = {"case": cid, "agent": mod.RUN_NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                             "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
                             "failure": {"name": fname, "occurrence": focc}, "hops": fi - ri,
                             "description": case["description"]}
                    assert not FORBIDDEN.search(case["description"]), cid
                    for fn in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
                        text = open(os.path.join(d, fn), encoding="utf-8", errors="replace").read()
                        hit = FORBIDDEN.search(text)
                        assert not hit, (cid, fn, text[max(0, hit.start() - 80): hit.end() + 80])
                        assert cid not in text, (cid, fn)
                    with open(os.path.join(d, "truth.json"), "w") as f:
                        json.dump(truth, f, indent=2)
                    ids.append(cid)
                    print(f"{cid}: {case['fault_kind']} root {rname}#{rocc} -> {fname}#{focc} hops {fi - ri}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
