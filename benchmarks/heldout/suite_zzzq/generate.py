"""Generate suite_zzzq: python benchmarks/heldout/suite_zzzq/generate.py OUT [agent-module ...]"""
import importlib
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
_SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
if os.path.isdir(_SRC) and _SRC not in sys.path:
    sys.path.insert(0, _SRC)
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "candle_foundry",
    "filigree_quotes",
    "basket_coop",
    "broom_workshop",
    "silver_repairs",
    "pewter_orders",
    "cutler_sharpening",
    "insole_lab",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|inject|corrupt|planted)\w*", re.I)
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


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


def ordered(run):
    return sorted(enumerate(run.steps), key=lambda t: (t[1].start_ns, t[0]))


def find(steps, name, occurrence):
    hits = [i for i, (_, s) in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, (name, occurrence, len(hits))
    return hits[occurrence - 1]


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert m is None, (path, m and text[max(0, m.start() - 80): m.end() + 80])


def build_agent(mod, server, out, tmp):
    ext = EXT[mod.ROUTE]
    runs = []
    for i, inp in enumerate(mod.INPUTS):
        mod.ACTIVE = None
        server.use(mod.policy)
        p = os.path.join(tmp, f"{mod.NAME}-{i}.{ext}")
        mod.run_one(server, inp, p)
        [r] = trajdebug.load_runs(p)
        assert r.outcome == "success", (mod.NAME, i, r.outcome)
        runs.append(p)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        idx = case["input"]
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        mod.ACTIVE = case["switch"]
        server.use(mod.policy)
        failed_tmp = os.path.join(tmp, f"{cid}-failed.{ext}")
        failed = os.path.join(d, f"failed.{ext}")
        try:
            mod.run_one(server, mod.INPUTS[idx], failed_tmp)
        except Exception as exc:  # the failing run raises out of its agent; the record is what counts
            print(f"  {cid}: raised {type(exc).__name__}: {str(exc)[:100]}")
        finally:
            mod.ACTIVE = None
        trajdebug.flush()
        shutil.copyfile(failed_tmp, failed)
        shutil.copyfile(runs[idx], os.path.join(d, f"control.{ext}"))
        join([failed] + [runs[j] for j in range(len(runs)) if j != idx], os.path.join(d, f"with_refs.{ext}"), ext)
        [fr] = trajdebug.load_runs(failed)
        assert fr.outcome == "failure", (cid, fr.outcome)
        [cr] = trajdebug.load_runs(os.path.join(d, f"control.{ext}"))
        assert cr.outcome == "success", cid
        allr = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
        assert len(allr) == 5 and sum(r.outcome == "failure" for r in allr) == 1, (cid, [r.outcome for r in allr])
        assert sum(r.outcome == "success" for r in allr) == 4, cid
        steps = ordered(fr)
        root = case["root"]
        ri = find(steps, root["name"], root["occurrence"])
        rs = steps[ri][1]
        assert rs.status == "ok", (cid, "root status", rs.status)
        assert rs.kind == root["kind"], (cid, rs.kind, root["kind"])
        fname = case["failure"]
        fo = case.get("failure_occurrence")
        if fo is None:
            errs = [i for i, (_, s) in enumerate(steps) if s.name == fname and s.status == "error"]
            assert errs, (cid, "no failing step", fname, [(s.name, s.status) for _, s in steps])
            fi = errs[0]
            fo = [i for i, (_, s) in enumerate(steps) if s.name == fname].index(fi) + 1
        else:
            fi = find(steps, fname, fo)
        assert steps[fi][1].status == "error", (cid, fname, fo)
        assert steps[fi][1].start_ns > rs.start_ns and fi > ri, (cid, "failure before root")
        assert case["kind"] in KINDS, case["kind"]
        truth = {
            "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
            "root": {"name": root["name"], "occurrence": root["occurrence"], "kind": root["kind"]},
            "failure": {"name": fname, "occurrence": fo}, "hops": fi - ri, "description": case["description"],
        }
        assert not FORBIDDEN.search(case["description"]), cid
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(truth, f, indent=1)
        for fn in ("failed", "control", "with_refs"):
            check_words(os.path.join(d, f"{fn}.{ext}"))
        assert sorted(os.listdir(d)) == sorted(["truth.json"] + [f"{fn}.{ext}" for fn in ("failed", "control", "with_refs")]), os.listdir(d)
        ids.append(cid)
        print(f"{cid}: {case['kind']} root {root['name']}#{root['occurrence']} -> {fname}#{fo} hops {fi - ri} steps {len(steps)}")
    return ids


def main(argv):
    out = os.path.abspath(argv[1])
    mods = argv[2:] or AGENTS
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="suite_zzzq-")
    ids = []
    try:
        with FakeModelServer(lambda request: "") as server:
            for name in mods:
                mod = importlib.import_module(name)
                ids += build_agent(mod, server, out, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=1)
    print(f"{len(ids)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv)
