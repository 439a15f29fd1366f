"""Generate the suite_zzu held-out cases: generate.py OUT [agent-module ...]."""
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
sys.path.insert(0, HERE)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import kit  # noqa: E402
from harness import FORBIDDEN  # noqa: E402

AGENTS = ["topiary_orders", "laundrette_washes", "tearoom_catering", "brassband_season",
          "greyhound_adoptions", "drivein_screenings", "welldrill_surveys", "carillon_recitals"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one", "lossy_parsing",
         "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument", "subagent_wrong_entity", "plan_error",
         "hallucinated_value", "format_drift", "bad_memory_write"}


def ext_of(mod) -> str:
    return "json" if mod.ROUTE == "otlp" else "jsonl"


def record_to(mod, server, i: int, path: str) -> None:
    if mod.ROUTE == "otlp":
        doc = mod.record(server, i)
        with open(path, "w") as f:
            json.dump(doc, f)
    else:
        mod.record(server, i, path)


def join(mod, paths: list[str], out: str) -> None:
    if mod.ROUTE == "otlp":
        spans = []
        for p in paths:
            with open(p) as f:
                spans += json.load(f)["resourceSpans"]
        with open(out, "w") as f:
            json.dump({"resourceSpans": spans}, f)
    else:
        with open(out, "w") as f:
            for p in paths:
                with open(p) as g:
                    f.write(g.read())


def load(path: str):
    trajdebug.flush()
    return trajdebug.load_runs(path)


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index))


def locate(steps, name: str, occ: int) -> int:
    hits = [k for k, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, f"step {name!r} #{occ} not in run ({len(hits)} found)"
    return hits[occ - 1]


def generate(out: str, modules: list[str]) -> list[str]:
    os.makedirs(out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="zzu-")
    ids = []
    try:
        with FakeModelServer(()) as server:
            for modname in modules:
                mod = importlib.import_module(modname)
                ext = ext_of(mod)
                kit.ACTIVE = None
                ref_paths = []
                for i in mod.REFS:
                    rp = os.path.join(scratch, f"{modname}-ref{i}.{ext}")
                    record_to(mod, server, i, rp)
                    ref_paths.append(rp)
                for rp in ref_paths:
                    [r] = load(rp)
                    assert r.outcome == "success", (modname, rp, r.outcome)
                for case in mod.CASES:
                    cid = case["id"]
                    assert case["kind"] in KINDS, case["kind"]
                    d = os.path.join(out, cid)
                    shutil.rmtree(d, ignore_errors=True)
                    os.makedirs(d)
                    failed, control, with_refs = (os.path.join(d, f"{n}.{ext}") for n in ("failed", "control", "with_refs"))
                    kit.ACTIVE = cid
                    record_to(mod, server, case["input"], failed)
                    kit.ACTIVE = None
                    record_to(mod, server, case["input"], control)
                    join(mod, [failed] + ref_paths, with_refs)
                    [fr] = load(failed)
                    [cr] = load(control)
                    assert fr.outcome == "failure", (cid, fr.outcome)
                    assert cr.outcome == "success", (cid, cr.outcome)
                    both = load(with_refs)
                    assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, (cid, [r.outcome for r in both])
                    steps = ordered(fr)
                    ri = locate(steps, *case["root"])
                    fi = locate(steps, *case["failure"])
                    root = steps[ri]
                    assert root.status == "ok", (cid, root.status)
                    assert steps[fi].status != "ok", (cid, "failure step ok", steps[fi].name)
                    assert fi > ri, (cid, ri, fi)
                    truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                             "root": {"name": case["root"][0], "occurrence": case["root"][1], "kind": root.kind},
                             "failure": {"name": case["failure"][0], "occurrence": case["failure"][1]},
                             "hops": fi - ri, "description": case["description"]}
                    with open(os.path.join(d, "truth.json"), "w") as f:
                        json.dump(truth, f, indent=2, sort_keys=True)
                    for p in (failed, control, with_refs, os.path.join(d, "truth.json")):
                        with open(p) as f:
                            m = FORBIDDEN.search(f.read())
                        assert not m, (p, m.group(0))
                    ids.append(cid)
                    print(f"{cid:24s} {case['kind']:22s} {case['root'][0]}#{case['root'][1]} -> {case['failure'][0]} hops={fi - ri} steps={len(steps)}", flush=True)
    finally:
        kit.ACTIVE = None
        shutil.rmtree(scratch, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    return ids


if __name__ == "__main__":
    t0 = time.time()
    out = sys.argv[1]
    mods = sys.argv[2:] or AGENTS
    generate(out, mods)
    print(f"done in {time.time() - t0:.1f}s")
