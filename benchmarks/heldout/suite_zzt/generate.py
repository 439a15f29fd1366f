"""Generate the suite_zzt held-out cases: generate.py OUT [agent-module ...]"""
import importlib
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import common  # noqa: E402
import kit  # noqa: E402

AGENTS = ["cooperage", "karting", "funicular", "glazier", "signwriter", "crazygolf", "printmaking", "zipline"]


def record(mod, inp, path, seed, switch):
    kit.use(switch)
    try:
        mod.record(inp, path, seed)
    except Exception as e:
        if os.environ.get("ZZT_TRACE"):
            print("  raised:", type(e).__name__, e)
    finally:
        kit.use(None)
    [run] = trajdebug.load_runs(path)
    return run


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index))


def find(steps, name, occ):
    same = [i for i, s in enumerate(steps) if s.name == name]
    assert len(same) >= occ, f"no step {name!r} #{occ} in {[s.name for s in steps]}"
    return same[occ - 1]


def join(mod, paths, dest):
    if mod.ROUTE == "otlp":
        env = {"resourceSpans": []}
        for p in paths:
            with open(p) as f:
                env["resourceSpans"] += json.load(f)["resourceSpans"]
        with open(dest, "w") as f:
            json.dump(env, f)
    else:
        with open(dest, "w") as out:
            for p in paths:
                with open(p) as f:
                    out.write(f.read())


def main(argv):
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="suite_zzt_")
    cases = []
    t0 = time.time()
    with FakeModelServer(["unused"]) as server:
        common.SERVER = server
        for name in names:
            mod = importlib.import_module(name)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            refs = []
            for k, inp in enumerate(mod.REFS):
                p = os.path.join(tmp, f"{name}-ref{k}.{ext}")
                run = record(mod, inp, p, 1000 + k, None)
                assert run.outcome == "success", (name, "ref", k, run.outcome)
                refs.append(p)
            for n, case in enumerate(mod.CASES):
                cid = case["id"]
                d = os.path.join(out, cid)
                os.makedirs(d, exist_ok=True)
                inp = mod.INPUTS[cid]
                failed_p = os.path.join(d, f"failed.{ext}")
                control_p = os.path.join(d, f"control.{ext}")
                for p in (failed_p, control_p):
                    if os.path.exists(p):
                        os.remove(p)
                failed = record(mod, inp, failed_p, 100 + n, case["switch"])
                control = record(mod, inp, control_p, 100 + n, None)
                assert failed.outcome == "failure", (cid, failed.outcome)
                assert control.outcome == "success", (cid, control.outcome)
                join(mod, [failed_p] + refs, os.path.join(d, f"with_refs.{ext}"))
                both = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, cid
                steps = ordered(failed)
                ri = find(steps, *case["root"])
                fi = find(steps, *case["failure"])
                root = steps[ri]
                assert root.status == "ok", (cid, root.name, root.status)
                assert steps[fi].status != "ok", (cid, steps[fi].name, steps[fi].status)
                assert fi > ri and steps[fi].start_ns >= root.start_ns, cid
                truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                         "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
                         "failure": {"name": steps[fi].name, "occurrence": case["failure"][1]},
                         "hops": fi - ri, "description": case["description"]}
                with open(os.path.join(d, "truth.json"), "w") as f:
                    json.dump(truth, f, indent=2, sort_keys=True)
                    f.write("\n")
                for fn in sorted(f for f in os.listdir(d) if f != "truth.json"):
                    with open(os.path.join(d, fn), "rb") as f:
                        common.check_text(f.read().decode("utf-8", "replace"), os.path.join(cid, fn))
                cases.append(cid)
                print(f"{cid:10s} {case['kind']:22s} steps={len(steps):3d} hops={fi - ri:3d}", flush=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=2)
        f.write("\n")
    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(cases)} cases in {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main(sys.argv[1:])
