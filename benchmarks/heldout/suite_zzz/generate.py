"""Generate suite_zzz: python benchmarks/heldout/suite_zzz/generate.py OUT [agent-module ...]"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
if os.path.isdir(SRC) and SRC not in sys.path:
    sys.path.insert(0, SRC)
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "agent_affinage",      # sdk
    "agent_cremation",     # sdk
    "agent_bog",           # langgraph
    "agent_roofquote",     # langgraph
    "agent_sheepdog",      # openai_agents
    "agent_toylib",        # openai_agents
    "agent_mapcommission", # otlp
    "agent_ropeaccess",    # otlp
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(r"(?i)\b(faults?|faulty|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b")


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def record_one(mod, inp, path, server):
    server.use(mod.policy)
    try:
        mod.record(inp, path, server)
    except Exception:  # the run's failure is recorded; the generator goes on
        pass
    trajdebug.flush()


def join(route, paths, dest):
    if route == "otlp":
        doc = {"resourceSpans": []}
        for p in paths:
            with open(p) as f:
                doc["resourceSpans"].extend(json.load(f)["resourceSpans"])
        with open(dest, "w") as f:
            json.dump(doc, f)
    else:
        with open(dest, "w") as out:
            for p in paths:
                with open(p) as f:
                    out.write(f.read())


def start_order(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(steps, name, occurrence):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occurrence, f"step {name!r} #{occurrence} not found ({len(same)} of that name)"
    return same[occurrence - 1]


def load_one(path):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: holds {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"


def build_agent(mod, out, server, tmp):
    route, ext = mod.ROUTE, ext_of(mod.ROUTE)
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    passing = []
    for i, inp in enumerate(mod.INPUTS):
        mod.SWITCH = None
        p = os.path.join(tmp, f"{mod.__name__}_pass{i}.{ext}")
        record_one(mod, inp, p, server)
        run = load_one(p)
        assert run.outcome == "success", f"{mod.__name__} input {i}: passing run ended {run.outcome}: {run.failure_reason}"
        passing.append(p)
    truths = []
    for case in mod.CASES:
        cid = case["id"]
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        mod.SWITCH = case["switch"]
        recorded = os.path.join(tmp, f"{cid}_failed.{ext}")
        try:
            record_one(mod, mod.INPUTS[case["input"]], recorded, server)
        finally:
            mod.SWITCH = None
        failed = os.path.join(d, f"failed.{ext}")
        shutil.copyfile(recorded, failed)
        shutil.copyfile(passing[case["input"]], os.path.join(d, f"control.{ext}"))
        others = [p for j, p in enumerate(passing) if j != case["input"]]
        join(route, [failed] + others, os.path.join(d, f"with_refs.{ext}"))
        # checks
        run = load_one(failed)
        assert run.outcome == "failure", f"{cid}: failed run ended {run.outcome}"
        ctrl = load_one(os.path.join(d, f"control.{ext}"))
        assert ctrl.outcome == "success", f"{cid}: control ended {ctrl.outcome}"
        refs = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
        assert len(refs) == 5, f"{cid}: with_refs holds {len(refs)} runs"
        assert sum(r.outcome == "failure" for r in refs) == 1, f"{cid}: with_refs failures"
        assert sum(r.outcome == "success" for r in refs) == 4
        steps = start_order(run)
        rname, rocc = case["root"]
        fname, focc = case["failure"]
        root = find(steps, rname, rocc)
        fail = find(steps, fname, focc)
        assert root.status == "ok", f"{cid}: root {rname}#{rocc} status {root.status}"
        assert fail.status == "error", f"{cid}: failure {fname}#{focc} status {fail.status}"
        if "root_check" in case:
            assert case["root_check"](root), f"{cid}: root {rname}#{rocc} is not the intended call: {root.input}"
        ri, fi = steps.index(root), steps.index(fail)
        assert fi > ri and fail.start_ns > root.start_ns, f"{cid}: failure starts before root"
        assert case["kind"] in KINDS
        truth = {
            "case": cid,
            "agent": run.name,
            "route": route,
            "fault_kind": case["kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri,
            "description": case["description"],
        }
        assert FORBIDDEN.search(case["description"]) is None, f"{cid}: description"
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
        for fn in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
            check_words(os.path.join(d, fn))
        truths.append(truth)
    return truths


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[1])
    names = argv[2:] or AGENTS
    os.makedirs(out, exist_ok=True)
    mods = [importlib.import_module(n) for n in names]
    all_truths = []
    tmp = tempfile.mkdtemp(prefix="suite_zzz_")
    try:
        with FakeModelServer() as server:
            for mod in mods:
                all_truths.extend(build_agent(mod, out, server, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ids = [t["case"] for t in all_truths]
    assert len(set(ids)) == len(ids)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    for t in all_truths:
        print(f"{t['case']:<14} {t['route']:<14} {t['fault_kind']:<22} {t['root']['name']}#{t['root']['occurrence']} "
              f"({t['root']['kind']}) -> {t['failure']['name']}#{t['failure']['occurrence']}  hops={t['hops']}")
    print(f"{len(ids)} cases written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
