"""Generate suite_zzzu: python generate.py OUT [agent-module ...]"""
import importlib
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "..", "src")))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

MODULES = ["zu_buttons", "zu_hosiery", "zu_haberdash", "zu_draper", "zu_carding", "zu_felting",
           "zu_corset", "zu_bootmaker"]
FORBIDDEN = re.compile(r"\b(fault|bug|wrong|stale|inject|corrupt|planted)", re.I)  # word starts: "trajdebug", "default" pass


def record(mod, server, idx, path, switch=None):
    mod.SWITCH.clear()
    if switch:
        mod.SWITCH.add(switch)
    server.use(mod.policy)
    try:
        mod.run_one(server, mod.INPUTS[idx], path)
    finally:
        mod.SWITCH.clear()
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def join(paths, out, ext):
    if ext == "jsonl":
        with open(out, "wb") as f:
            for p in paths:
                f.write(open(p, "rb").read())
    else:
        rs = []
        for p in paths:
            rs += json.load(open(p))["resourceSpans"]
        json.dump({"resourceSpans": rs}, open(out, "w"))


def main():
    out = sys.argv[1]
    mods = sys.argv[2:] or MODULES
    os.makedirs(out, exist_ok=True)
    ids = []
    with FakeModelServer(lambda r: "ok") as server:
        for name in mods:
            mod = importlib.import_module(name)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            tmp = os.path.join(out, "_" + mod.NAME)
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            refs = {}
            for i in range(len(mod.INPUTS)):
                p = os.path.join(tmp, f"pass{i}.{ext}")
                r = record(mod, server, i, p)
                assert r.outcome == "success", (mod.NAME, i, r.outcome)
                refs[i] = p
            for case in mod.CASES:
                cid = case["id"]
                d = os.path.join(out, cid)
                shutil.rmtree(d, ignore_errors=True)
                os.makedirs(d)
                fp = os.path.join(d, f"failed.{ext}")
                run = record(mod, server, case["input"], fp, case["switch"])
                assert run.outcome == "failure", (cid, run.outcome)
                shutil.copy(refs[case["input"]], os.path.join(d, f"control.{ext}"))
                others = [refs[i] for i in range(len(mod.INPUTS)) if i != case["input"]]
                join([fp] + others, os.path.join(d, f"with_refs.{ext}"), ext)
                wr = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1, cid
                ctl = trajdebug.load_runs(os.path.join(d, f"control.{ext}"))
                assert len(ctl) == 1 and ctl[0].outcome == "success", cid
                order = list(run.steps)
                rname, rocc = case["root"]
                same = [s for s in order if s.name == rname]
                assert len(same) >= rocc, (cid, "root missing", rname, [s.name for s in order])
                root = same[rocc - 1]
                assert root.status == "ok", (cid, root.status)
                ri = order.index(root)
                fname = case["failure"]
                fails = [s for s in order[ri + 1:] if s.name == fname and s.status == "error"]
                assert fails, (cid, "no failure step", fname, [(s.name, s.status) for s in order])
                fstep = fails[0]
                focc = [s for s in order if s.name == fname].index(fstep) + 1
                truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                         "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
                         "failure": {"name": fname, "occurrence": focc},
                         "hops": order.index(fstep) - ri, "description": case["desc"]}
                json.dump(truth, open(os.path.join(d, "truth.json"), "w"), indent=1)
                for fn in os.listdir(d):
                    text = open(os.path.join(d, fn), "rb").read().decode("utf-8", "replace")
                    if fn == "truth.json":
                        text = case["desc"]
                    m = FORBIDDEN.search(text)
                    assert not m, (cid, fn, m.group(0), text[max(0, m.start() - 80):m.end() + 40])
                    assert cid not in text or fn == "truth.json", (cid, fn)
                ids.append(cid)
                print(cid, case["kind"], rname, rocc, "->", fname, focc, "hops", truth["hops"], flush=True)
            shutil.rmtree(tmp)
    json.dump({"cases": ids}, open(os.path.join(out, "index.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
