"""Generate held-out suite_zzzy: python generate.py OUT [agent-module ...]"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
_src = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "src")
if os.path.isdir(_src) and _src not in sys.path:
    sys.path.insert(0, _src)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["reeds", "bench", "parasols", "gilding", "badges", "marquetry", "certificates", "loans"]
FORBIDDEN = re.compile(r"\b(fault\w*|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|plant(ed|ing)?)\b", re.I)
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


def one(path):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def find(run, name, occ):
    steps = sorted(run.steps, key=lambda s: s.start_ns)
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, (run.name, name, occ, [s.name for s in steps])
    i = hits[occ - 1]
    return i, steps[i]


def record(mod, server, inp, dest, switch):
    mod.SWITCH = switch
    try:
        server.use(mod.policy)
        if os.path.exists(dest):
            os.remove(dest)
        try:
            mod.run_one(inp, server, dest)
        except Exception:  # the failing run raises out of its block; the record says so
            if switch is None:
                raise
    finally:
        mod.SWITCH = None
        trajdebug.flush()


def main(argv):
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    work = os.path.join(out, "_work")
    os.makedirs(work, exist_ok=True)
    cases = []
    with FakeModelServer() as server:
        for modname in names:
            mod = importlib.import_module(modname)
            ext = EXT[mod.ROUTE]
            passing = []
            for i, inp in enumerate(mod.INPUTS):
                p = os.path.join(work, f"{modname}_{i}.{ext}")
                record(mod, server, inp, p, None)
                r = one(p)
                assert r.outcome == "success", (modname, i, r.outcome, getattr(r, "metadata", {}))
                passing.append(p)
            for case in mod.CASES:
                cid = case["id"]
                d = os.path.join(out, cid)
                os.makedirs(d, exist_ok=True)
                raw_failed = os.path.join(work, f"{cid}.{ext}")
                record(mod, server, mod.INPUTS[case["input"]], raw_failed, case["switch"])
                failed = os.path.join(d, f"failed.{ext}")
                shutil.copy(raw_failed, failed)
                shutil.copy(passing[case["input"]], os.path.join(d, f"control.{ext}"))
                join([failed] + [p for j, p in enumerate(passing) if j != case["input"]],
                     os.path.join(d, f"with_refs.{ext}"), ext)
                fr = one(failed)
                assert fr.outcome == "failure", (cid, fr.outcome)
                assert fr.name == mod.NAME, (cid, fr.name)
                assert one(os.path.join(d, f"control.{ext}")).outcome == "success"
                allr = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                assert len(allr) == 5 and sum(r.outcome == "failure" for r in allr) == 1, cid
                assert all(r.outcome == "success" for r in allr if r.run_id != fr.run_id)
                ri, root = find(fr, *case["root"])
                fi, fail = find(fr, *case["failure"])
                assert root.status == "ok", (cid, root.status)
                assert fail.status == "error", (cid, fail.name, fail.status)
                assert fi > ri, (cid, ri, fi)
                for fn in os.listdir(d):
                    with open(os.path.join(d, fn), "rb") as f:
                        raw = f.read()
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError as e:
                        raise AssertionError((cid, fn, raw[:64])) from e
                    m = FORBIDDEN.search(text)
                    assert not m, (cid, fn, m.group(0), text[max(0, m.start() - 80):m.end() + 80])
                    assert cid not in text, (cid, fn)
                truth = {
                    "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                    "root": {"name": case["root"][0], "occurrence": case["root"][1], "kind": root.kind},
                    "failure": {"name": case["failure"][0], "occurrence": case["failure"][1]},
                    "hops": fi - ri, "description": case["description"],
                }
                assert not FORBIDDEN.search(case["description"]), cid
                with open(os.path.join(d, "truth.json"), "w") as f:
                    json.dump(truth, f, indent=2)
                cases.append(truth)
    shutil.rmtree(work)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": [c["case"] for c in cases]}, f, indent=2)
    for c in cases:
        print(f"{c['case']:<28} {c['route']:<14} {c['fault_kind']:<22} {c['root']['name']}#{c['root']['occurrence']}"
              f" ({c['root']['kind']}) -> {c['failure']['name']}#{c['failure']['occurrence']} hops={c['hops']}")


if __name__ == "__main__":
    main(sys.argv[1:])
