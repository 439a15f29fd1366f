"""Generate the suite_zzv held-out cases: generate.py OUT [agent-module ...]."""
from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import common  # noqa: E402
import kit  # noqa: E402

AGENTS = ["dry_cleaner", "stonemason", "pet_groomer", "ski_school", "cake_bakery", "roller_disco", "rope_access", "mobile_library"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one", "lossy_parsing",
         "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument", "subagent_wrong_entity",
         "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}


def load(path: str):
    runs = trajdebug.load_runs(path)
    return list(runs)


def ordered(run):
    return sorted(run.steps, key=lambda s: s.start_ns)


def find(steps, name, occurrence):
    same = [i for i, s in enumerate(steps) if s.name == name]
    assert len(same) >= occurrence, f"step {name!r} #{occurrence} not found (have {len(same)})"
    return same[occurrence - 1]


def record(mod, server, key, path, case_id):
    if os.path.exists(path):
        os.remove(path)
    kit.plant(case_id)
    try:
        mod.record(server, key, path)
    finally:
        kit.plant(None)
    trajdebug.flush() if hasattr(trajdebug, "flush") else None
    assert os.path.exists(path), path


def join(paths, out, ext):
    if ext == "jsonl":
        with open(out, "w") as f:
            for p in paths:
                with open(p) as g:
                    f.write(g.read())
    else:
        env = {"resourceSpans": []}
        for p in paths:
            with open(p) as g:
                env["resourceSpans"].extend(json.load(g)["resourceSpans"])
        with open(out, "w") as f:
            json.dump(env, f)


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = common.FORBIDDEN.search(text)
    assert m is None, f"{path}: recorded text holds {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"


def main(argv):
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    case_ids = []
    with FakeModelServer() as server:
        for name in names:
            mod = importlib.import_module(name)
            ext = mod.EXT
            refdir = os.path.join(out, f"_refs_{name}")
            os.makedirs(refdir, exist_ok=True)
            ref_paths = []
            for key in mod.REFS:
                p = os.path.join(refdir, f"{key}.{ext}")
                record(mod, server, key, p, None)
                [r] = load(p)
                assert r.outcome == "success", (name, key, r.outcome)
                ref_paths.append(p)
            for case in mod.CASES:
                cid = case["case"]
                assert case["fault_kind"] in KINDS and case["input"] not in mod.REFS
                d = os.path.join(out, cid)
                os.makedirs(d, exist_ok=True)
                failed, control = os.path.join(d, f"failed.{ext}"), os.path.join(d, f"control.{ext}")
                record(mod, server, case["input"], failed, cid)
                record(mod, server, case["input"], control, None)
                refs, with_refs = os.path.join(d, f"refs.{ext}"), os.path.join(d, f"with_refs.{ext}")
                join(ref_paths, refs, ext)
                join([failed] + ref_paths, with_refs, ext)
                [fr] = load(failed)
                [cr] = load(control)
                assert fr.outcome == "failure", (cid, fr.outcome)
                assert cr.outcome == "success", (cid, cr.outcome)
                wr = load(with_refs)
                assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1, (cid, [r.outcome for r in wr])
                assert all(r.name == fr.name for r in wr), (cid, [r.name for r in wr])
                steps = ordered(fr)
                ri = find(steps, *case["root"])
                fi = find(steps, *case["failure"])
                root, fail = steps[ri], steps[fi]
                assert root.status == "ok", (cid, root.name, root.status)
                assert fail.status == "error", (cid, fail.name, fail.status)
                assert fail.start_ns > root.start_ns and fi > ri, cid
                for p in (failed, control, refs, with_refs):
                    check_words(p)
                truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                         "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
                         "failure": {"name": fail.name, "occurrence": case["failure"][1]},
                         "hops": fi - ri, "description": case["description"]}
                assert common.FORBIDDEN.search(json.dumps({k: v for k, v in truth.items() if k != "fault_kind"})) is None, cid
                with open(os.path.join(d, "truth.json"), "w") as f:
                    json.dump(truth, f, indent=2, sort_keys=True)
                    f.write("\n")
                case_ids.append(cid)
                print(f"{cid:14s} {mod.ROUTE:13s} {case['fault_kind']:22s} hops={fi - ri:3d} steps={len(steps)} root={root.name}#{case['root'][1]}({root.kind})")
            shutil.rmtree(refdir)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": case_ids}, f, indent=2)
        f.write("\n")
    print(f"{len(case_ids)} cases in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
