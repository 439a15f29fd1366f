"""Generate the held-out suite zzzd: 8 agents x 5 cases of silent failures.

python benchmarks/heldout/suite_zzzd/generate.py OUT [agent-module ...]
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
if HERE not in sys.path:
    sys.path.insert(0, HERE)
_SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
if os.path.isdir(os.path.join(_SRC, "trajdebug")) and _SRC not in sys.path:
    sys.path.insert(0, _SRC)

os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402


AGENTS = [
    "zd_mole_callouts",
    "zd_clog_orders",
    "zd_polo_chukkas",
    "zd_rigger_repacks",
    "zd_sundial_commissions",
    "zd_magician_bookings",
    "zd_parchment_lots",
    "zd_yarn_kits",
]
KINDS = {
    "wrong_retrieval",
    "unit_error",
    "truncated_result",
    "swallowed_error",
    "stale_data",
    "off_by_one",
    "lossy_parsing",
    "context_pollution",
    "wrong_tool_args",
    "wrong_routing",
    "tool_ignores_argument",
    "subagent_wrong_entity",
    "plan_error",
    "hallucinated_value",
    "format_drift",
    "bad_memory_write",
}
ROUTES = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
FORBIDDEN = re.compile(r"(?i)\b(faults?|faulty|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b")


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"no step {name!r} #{occurrence} (found {len(hits)})"
    return hits[occurrence - 1]


def load_one(path):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def join(paths, dest, ext):
    if ext == "jsonl":
        with open(dest, "w") as out:
            for p in paths:
                with open(p) as f:
                    out.write(f.read())
    else:
        spans = []
        for p in paths:
            with open(p) as f:
                spans.extend(json.load(f)["resourceSpans"])
        with open(dest, "w") as out:
            json.dump({"resourceSpans": spans}, out)


def check_words(folder):
    for fn in os.listdir(folder):
        if fn == "truth.json":
            continue
        with open(os.path.join(folder, fn)) as f:
            text = f.read()
        m = FORBIDDEN.search(text)
        assert not m, f"{folder}/{fn} holds {m.group(0)!r}"


def build_agent(mod, server, work, out, index):
    ext = ROUTES[mod.ROUTE]
    for sw in mod.SWITCHES:
        setattr(mod, sw, False)
    passing = []
    for i, inp in enumerate(mod.INPUTS):
        p = os.path.join(work, f"{mod.SHORT}_pass{i}.{ext}")
        server.use(mod.policy)
        mod.record(inp, p, server)
        run = load_one(p)
        assert run.outcome == "success", f"{mod.SHORT} input {i} did not pass: {run.failure_reason}"
        passing.append(p)
    for n, case in enumerate(mod.CASES, 1):
        cid = f"zzzd_{mod.SHORT}_{n}"
        assert case["fault_kind"] in KINDS, case
        setattr(mod, case["switch"], True)
        fp = os.path.join(work, f"{mod.SHORT}_case{n}.{ext}")
        try:
            server.use(mod.policy)
            mod.record(mod.INPUTS[case["input"]], fp, server)
        finally:
            setattr(mod, case["switch"], False)
        run = load_one(fp)
        assert run.outcome == "failure", f"{cid}: outcome {run.outcome}"
        steps = ordered(run)
        rname, rocc, rkind = case["root"]
        fname, focc = case["failure"]
        ri, fi = find(steps, rname, rocc), find(steps, fname, focc)
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", f"{cid}: root status {root.status}"
        assert root.kind == rkind, f"{cid}: root kind {root.kind} != {rkind}"
        assert fail.status == "error", f"{cid}: failure status {fail.status}"
        assert fail.start_ns > root.start_ns and fi > ri, f"{cid}: failure does not start after root"
        folder = os.path.join(out, cid)
        os.makedirs(folder, exist_ok=True)
        shutil.copy(fp, os.path.join(folder, f"failed.{ext}"))
        shutil.copy(passing[case["input"]], os.path.join(folder, f"control.{ext}"))
        refs = [fp] + [p for i, p in enumerate(passing) if i != case["input"]]
        join(refs, os.path.join(folder, f"with_refs.{ext}"), ext)
        assert load_one(os.path.join(folder, f"control.{ext}")).outcome == "success"
        allruns = trajdebug.load_runs(os.path.join(folder, f"with_refs.{ext}"))
        assert len(allruns) == 5, f"{cid}: with_refs holds {len(allruns)} runs"
        assert sum(r.outcome == "failure" for r in allruns) == 1, f"{cid}: with_refs failures"
        assert sum(r.outcome == "success" for r in allruns) == 4, f"{cid}: with_refs successes"
        assert not FORBIDDEN.search(case["description"]), cid
        truth = {
            "case": cid,
            "agent": mod.NAME,
            "route": mod.ROUTE,
            "fault_kind": case["fault_kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri,
            "description": case["description"],
        }
        with open(os.path.join(folder, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
        check_words(folder)
        index.append(cid)
        print(
            f"{cid:24} {mod.ROUTE:14} {case['fault_kind']:22} root {rname}#{rocc} -> {fname}#{focc} hops {fi - ri}"
        )


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    index = []
    trajdebug.configure(flush_interval=0.02)  # the runs are short: write them without waiting
    work = tempfile.mkdtemp(prefix="zzzd_")
    cwd = os.getcwd()
    os.chdir(work)  # anything a framework writes by default lands here
    try:
        with FakeModelServer(lambda request: "ok") as server:
            for name in names:
                started = time.monotonic()
                mod = importlib.import_module(name)
                build_agent(mod, server, work, out, index)
                print(f"  {name}: {time.monotonic() - started:.1f} s")
    finally:
        os.chdir(cwd)
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": index}, f, indent=2)
    print(f"{len(index)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
