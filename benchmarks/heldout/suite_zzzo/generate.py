"""Generate suite_zzzo: python benchmarks/heldout/suite_zzzo/generate.py OUT [agent-module ...]"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src"))
os.environ.setdefault("OTEL_SDK_DISABLED", "false")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["chrono_bench", "wainwright_yard", "lace_commissions", "rope_orders",
          "icehouse_rental", "scrimshaw_gallery", "dovecote_restorer", "marquetry_studio"]
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)", re.I)
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


def _record(mod, server, inp, switch, tmp):
    mod.SWITCH = switch
    server.use(mod.policy)
    path = os.path.join(tmp, f"r{len(os.listdir(tmp))}.{EXT[mod.ROUTE]}")
    try:
        mod.record(inp, server, path)
    finally:
        mod.SWITCH = None
    return path


def _join(paths, route, dest):
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


def _ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def _find(steps, name, occ):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, (name, occ, [s.name for s in steps])
    return hits[occ - 1]


def main(argv):
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    cases = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            mod = importlib.import_module(name)
            passing = {}
            for i, inp in enumerate(mod.INPUTS):
                passing[i] = _record(mod, server, inp, None, tmp)
                [r] = trajdebug.load_runs(passing[i])
                assert r.outcome == "success", (name, i, r.failure_reason if hasattr(r, "failure_reason") else "")
            for case in mod.CASES:
                cid = case["id"]
                d = os.path.join(out, cid)
                if os.path.exists(d):
                    shutil.rmtree(d)
                os.makedirs(d)
                ext = EXT[mod.ROUTE]
                failed = _record(mod, server, mod.INPUTS[case["input"]], case["switch"], tmp)
                shutil.copy(failed, os.path.join(d, f"failed.{ext}"))
                shutil.copy(passing[case["input"]], os.path.join(d, f"control.{ext}"))
                refs = [passing[i] for i in range(len(mod.INPUTS)) if i != case["input"]]
                _join([failed] + refs, mod.ROUTE, os.path.join(d, f"with_refs.{ext}"))
                [run] = trajdebug.load_runs(os.path.join(d, f"failed.{ext}"))
                assert run.outcome == "failure", (cid, run.outcome)
                [ctl] = trajdebug.load_runs(os.path.join(d, f"control.{ext}"))
                assert ctl.outcome == "success", cid
                allr = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                assert len(allr) == 5 and sum(r.outcome == "failure" for r in allr) == 1, (cid, [r.outcome for r in allr])
                assert all(r.name == mod.NAME for r in allr), (cid, {r.name for r in allr})
                steps = _ordered(run)
                rname, rocc, rkind = case["root"]
                fname, focc = case["failure"]
                ri, fi = _find(steps, rname, rocc), _find(steps, fname, focc)
                assert steps[ri].status == "ok" and steps[ri].kind == rkind, (cid, steps[ri].status, steps[ri].kind)
                assert steps[fi].status == "error", (cid, fname, steps[fi].status)
                assert fi > ri, (cid, ri, fi)
                for fn in os.listdir(d):
                    with open(os.path.join(d, fn)) as f:
                        text = f.read()
                    m = FORBIDDEN.search(text)
                    assert not m, (cid, fn, m.group(0), text[max(0, m.start() - 80):m.end() + 80])
                    assert cid not in text, (cid, fn)
                assert not FORBIDDEN.search(case["description"]), cid
                truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                         "root": {"name": rname, "occurrence": rocc, "kind": rkind},
                         "failure": {"name": fname, "occurrence": focc},
                         "hops": fi - ri, "description": case["description"]}
                with open(os.path.join(d, "truth.json"), "w") as f:
                    json.dump(truth, f, indent=2)
                cases.append(cid)
                print(f"{cid:28s} {case['fault_kind']:22s} {rname}#{rocc} -> {fname}#{focc} hops={fi - ri}")
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=2)
    print(f"{len(cases)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
