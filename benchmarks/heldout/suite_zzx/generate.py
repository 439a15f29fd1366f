"""Generate suite_zzx: python benchmarks/heldout/suite_zzx/generate.py OUT [agent-module ...]"""
import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import kit  # noqa: E402

AGENTS = ["turbines", "butcher", "glassworks", "sailloft", "herbarium", "watchmaker", "flourmill", "pumpkins"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
FORBIDDEN = re.compile(r"\b(fault|faults|faulty|bug|bugs|buggy|wrong|wrongly|stale|planted|plant|inject|injected|"
                       r"injection|corrupt|corrupted|corruption)\b", re.I)


def check_words(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: recorded text holds {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"


def ordered(run):
    return sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))


def find(steps, name, occ):
    hits = [i for i, (_, s) in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, f"step {name} #{occ} not found ({len(hits)} seen)"
    return hits[occ - 1]


def record_one(mod, server, inp, path, case_id):
    kit.ACTIVE = case_id
    try:
        server.use(mod.brain())
        mod.record(inp, path, server)
    except Exception:
        pass  # the run's failure is recorded; the generator checks the outcome below
    finally:
        kit.ACTIVE = None


def load_one(path):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def join(ext, parts, out):
    if ext == "jsonl":
        with open(out, "w", encoding="utf-8") as w:
            for p in parts:
                with open(p, encoding="utf-8") as r:
                    w.write(r.read())
    else:
        rs = []
        for p in parts:
            with open(p, encoding="utf-8") as r:
                for line in r:
                    if line.strip():
                        rs.extend(json.loads(line)["resourceSpans"])
        with open(out, "w", encoding="utf-8") as w:
            json.dump({"resourceSpans": rs}, w)


def gen_agent(mod, server, out, tmp):
    ids = []
    inputs = list(mod.INPUTS)
    ext = mod.EXT
    clean = {}
    for inp in inputs:  # every input once with every switch off: the controls and the references
        cp = os.path.join(tmp, f"{mod.NAME}-{inp}.{ext}")
        if os.path.exists(cp):
            os.remove(cp)
        record_one(mod, server, inp, cp, None)
        r = load_one(cp)
        assert r.outcome == "success", f"{mod.NAME} {inp}: clean run failed: {r.failure_reason}"
        clean[inp] = cp
    for case in mod.CASES:
        cid = case["id"]
        assert case["kind"] in KINDS
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        failed, control = os.path.join(d, f"failed.{ext}"), os.path.join(d, f"control.{ext}")
        for p in (failed, control):
            if os.path.exists(p):
                os.remove(p)
        record_one(mod, server, case["input"], failed, cid)
        shutil.copyfile(clean[case["input"]], control)
        refs = [clean[i] for i in inputs if i != case["input"]][:4]
        join(ext, [failed] + refs, os.path.join(d, f"with_refs.{ext}"))
        run = load_one(failed)
        assert run.outcome == "failure", f"{cid}: failed run outcome {run.outcome}"
        assert load_one(control).outcome == "success", f"{cid}: control failed: {load_one(control).failure_reason}"
        for rp in refs:
            r = load_one(rp)
            assert r.outcome == "success", f"{cid}: reference {rp} failed: {r.failure_reason}"
        both = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
        assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, f"{cid}: with_refs"
        steps = ordered(run)
        ri = find(steps, *case["root"])
        fi = find(steps, *case["failure"])
        root = steps[ri][1]
        assert root.status == "ok", f"{cid}: root status {root.status}"
        assert steps[fi][1].status == "error", f"{cid}: failure step did not fail"
        assert fi > ri and (steps[fi][1].start_ns or 0) >= (root.start_ns or 0)
        truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                 "root": {"name": case["root"][0], "occurrence": case["root"][1], "kind": root.kind},
                 "failure": {"name": case["failure"][0], "occurrence": case["failure"][1]},
                 "hops": fi - ri, "description": case["line"][0].upper() + case["line"][1:] + "."}
        with open(os.path.join(d, "truth.json"), "w", encoding="utf-8") as f:
            json.dump(truth, f, indent=2, sort_keys=True)
            f.write("\n")
        for name in (f"failed.{ext}", f"control.{ext}", f"with_refs.{ext}"):
            check_words(os.path.join(d, name))
        desc = dict(truth)
        desc.pop("fault_kind")
        assert FORBIDDEN.search(json.dumps(desc)) is None, f"{cid}: truth description"
        print(f"{cid:18s} {mod.ROUTE:13s} {case['kind']:22s} hops={fi - ri:3d} steps={len(steps)}", flush=True)
        ids.append(cid)
    return ids


def main(argv):
    out = os.path.abspath(argv[1])
    names = argv[2:] or AGENTS
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="suite_zzx_")
    ids = []
    try:
        with FakeModelServer() as server:
            for name in names:
                mod = importlib.import_module(name)
                ids += gen_agent(mod, server, out, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": ids}, f, indent=2)
        f.write("\n")
    print(f"{len(ids)} cases in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main(sys.argv)
