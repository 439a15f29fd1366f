"""Generate suite_zzzn: 8 agents x 5 cases of failing agent runs with their controls and references.

Usage: python benchmarks/heldout/suite_zzzn/generate.py OUT [agent-module ...]
"""
import importlib
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
if os.path.isdir(os.path.join(ROOT, "src", "trajdebug")):
    sys.path.insert(0, os.path.join(ROOT, "src"))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "trebuchet_bookings",
    "periwig_costumer",
    "hurdygurdy_commissions",
    "tinsmith_workshop",
    "hammock_wholesale",
    "lutherie_school",
    "sextant_bench",
    "divingbell_tours",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(
    r"\b(faults?|faulty|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.IGNORECASE)


def ext(route):
    return "json" if route == "otlp" else "jsonl"


def record(mod, inp, path):
    if os.path.exists(path):
        os.remove(path)
    mod.run_one(inp, path)
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (mod.NAME, path, len(runs))
    return runs[0]


def join(paths, out, route):
    if route == "otlp":
        doc = {"resourceSpans": []}
        for p in paths:
            with open(p) as f:
                doc["resourceSpans"].extend(json.load(f).get("resourceSpans", []))
        with open(out, "w") as f:
            json.dump(doc, f)
    else:
        with open(out, "w") as w:
            for p in paths:
                with open(p) as f:
                    w.write(f.read())


def find(steps, name, occ):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, (name, occ, [s.name for s in steps])
    return hits[occ - 1]


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert not m, (path, m.group(0), text[max(0, m.start() - 80):m.end() + 80])


def build_agent(mod, server, out, tmp):
    server.use(mod.policy)
    mod.SERVER = server
    e = ext(mod.ROUTE)
    mod.SWITCH = None
    passing = []
    for i, inp in enumerate(mod.INPUTS):
        p = os.path.join(tmp, f"{mod.NAME}-pass-{i}.{e}")
        r = record(mod, inp, p)
        assert r.outcome == "success", (mod.NAME, i, r.outcome, r.failure_reason)
        passing.append(p)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["kind"] in KINDS, case
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        shutil.copy(passing[case["input"]], os.path.join(d, f"control.{e}"))
        mod.SWITCH = case["switch"]
        try:
            failed = record(mod, mod.INPUTS[case["input"]], os.path.join(d, f"failed.{e}"))
        finally:
            mod.SWITCH = None
        assert failed.outcome == "failure", (cid, failed.outcome)
        control = trajdebug.load_runs(os.path.join(d, f"control.{e}"))[0]
        assert control.outcome == "success", cid
        refs = [passing[j] for j in range(len(mod.INPUTS)) if j != case["input"]]
        join([os.path.join(d, f"failed.{e}")] + refs, os.path.join(d, f"with_refs.{e}"), mod.ROUTE)
        both = trajdebug.load_runs(os.path.join(d, f"with_refs.{e}"))
        assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, (cid, [r.outcome for r in both])
        assert all(r.name == mod.NAME for r in both), (cid, [r.name for r in both])
        steps = ordered(failed)
        rname, rocc = case["root"]
        ri = find(steps, rname, rocc)
        root = steps[ri]
        assert root.status == "ok", (cid, rname, root.status)
        if case.get("failure"):
            fname, focc = case["failure"]
            fi = find(steps, fname, focc)
        else:  # the last-started step that errored: the check that raised, under its enclosing steps
            fi = max(i for i, s in enumerate(steps) if s.status == "error")
            fname = steps[fi].name
            focc = sum(1 for s in steps[: fi + 1] if s.name == fname)
        fail = steps[fi]
        assert fail.status == "error", (cid, fname, fail.status)
        assert fi > ri, (cid, ri, fi)
        for c in ("failed", "control", "with_refs"):
            check_words(os.path.join(d, f"{c}.{e}"))
        assert not FORBIDDEN.search(case["desc"]), case["desc"]
        truth = {
            "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri, "description": case["desc"],
        }
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
        ids.append(cid)
        print(f"{cid:8} {mod.ROUTE:13} {case['kind']:22} root={rname}#{rocc}({root.kind}) "
              f"fail={fname}#{focc} hops={fi - ri} steps={len(steps)}")
    return ids


def main(argv):
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    ids = []
    tmp = tempfile.mkdtemp(prefix="suite_zzzn-")
    try:
        with FakeModelServer(lambda r: "") as server:
            for n in names:
                ids += build_agent(importlib.import_module(n), server, out, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    print(f"{len(ids)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
