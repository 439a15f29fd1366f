"""Generate the held-out suite ZZZV: 8 agents x 5 cases of silent faults.

Usage: python benchmarks/heldout/suite_zzzv/generate.py OUT [agent-module ...]
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "taxidermy_orders", "jeweler_bench", "clock_rounds", "lampwright_lamps",
    "tinker_route", "knife_subscriptions", "armourer_fittings", "gunsmith_restoration",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(
    r"\b(faults?|faulty|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.IGNORECASE)
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


class Router:
    """One policy for the one server: the agent being recorded decides the answers."""

    def __init__(self) -> None:
        self.current = None

    def __call__(self, request):
        return self.current.policy(request)


def ordered(run):
    return sorted(run.steps, key=lambda s: s.start_ns)  # stable: keeps record order on ties


def find(run, name, occurrence):
    hits = [(i, s) for i, s in enumerate(ordered(run)) if s.name == name]
    assert len(hits) >= occurrence, f"{run.name}: no {name} #{occurrence} in {[s.name for s in ordered(run)]}"
    return hits[occurrence - 1]


def record(mod, inp, path, router):
    router.current = mod
    if os.path.exists(path):
        os.remove(path)
    try:
        mod.record(inp, path, router.server)
    except Exception as exc:  # the failing run raised: the run's file says so
        router.last_error = exc
    return path


def join(ext, paths, dest):
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


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: holds the word {m.group(0)!r}"


def one(path):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def main(argv):
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[1])
    names = argv[2:] or AGENTS
    os.makedirs(out, exist_ok=True)
    ids = []
    seen_ids = set()
    router = Router()
    with FakeModelServer(router) as server, tempfile.TemporaryDirectory() as tmp:
        router.server = server
        for modname in names:
            mod = importlib.import_module(modname)
            ext = EXT[mod.ROUTE]
            assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5, modname
            assert not any(mod.SWITCHES.values()), modname
            passing = []
            for i, inp in enumerate(mod.INPUTS):
                p = record(mod, inp, os.path.join(tmp, f"{modname}-{i}.{ext}"), router)
                r = one(p)
                assert r.outcome == "success", f"{modname} input {i}: {r.outcome} {r.failure_reason}"
                assert r.name == mod.NAME, (r.name, mod.NAME)
                passing.append(p)
            for case in mod.CASES:
                cid = case["id"]
                assert cid not in seen_ids and case["kind"] in KINDS, cid
                seen_ids.add(cid)
                d = os.path.join(out, cid)
                if os.path.exists(d):
                    shutil.rmtree(d)
                os.makedirs(d)
                mod.SWITCHES[case["switch"]] = True
                try:
                    failed = record(mod, mod.INPUTS[case["input"]], os.path.join(d, f"failed.{ext}"), router)
                finally:
                    mod.SWITCHES[case["switch"]] = False
                control = os.path.join(d, f"control.{ext}")
                shutil.copyfile(passing[case["input"]], control)
                refs = [p for i, p in enumerate(passing) if i != case["input"]]
                with_refs = os.path.join(d, f"with_refs.{ext}")
                join(ext, [failed] + refs, with_refs)
                fr = one(failed)
                assert fr.outcome == "failure", f"{cid}: failed run is {fr.outcome}"
                assert one(control).outcome == "success", cid
                all_runs = trajdebug.load_runs(with_refs)
                assert len(all_runs) == 5, f"{cid}: with_refs holds {len(all_runs)}"
                assert sum(r.outcome == "failure" for r in all_runs) == 1, cid
                assert all(r.name == mod.NAME for r in all_runs), cid
                rname, rocc, rkind = case["root"]
                ri, rs = find(fr, rname, rocc)
                assert rs.status == "ok", f"{cid}: root {rname} is {rs.status}"
                assert rs.kind == rkind, f"{cid}: root kind {rs.kind} != {rkind}"
                fname, focc = case["failure"]
                fi, fs = find(fr, fname, focc)
                assert fs.status == "error", f"{cid}: failure {fname} #{focc} is {fs.status}"
                assert fi > ri, f"{cid}: failure before root"
                desc = case["description"]
                assert not FORBIDDEN.search(desc), cid
                for p in (failed, control, with_refs):
                    check_words(p)
                    with open(p) as f:
                        assert cid not in f.read(), f"{cid}: case id in {p}"
                truth = {
                    "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
                    "root": {"name": rname, "occurrence": rocc, "kind": rs.kind},
                    "failure": {"name": fname, "occurrence": focc},
                    "hops": fi - ri, "description": desc,
                }
                with open(os.path.join(d, "truth.json"), "w") as f:
                    json.dump(truth, f, indent=2)
                ids.append(cid)
                print(f"{cid:8} {mod.ROUTE:13} {case['kind']:22} {rname}#{rocc} -> {fname}#{focc} hops={fi - ri}")
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    print(f"{len(ids)} cases in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
