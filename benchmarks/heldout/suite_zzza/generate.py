"""Generate the held-out suite: python benchmarks/heldout/suite_zzza/generate.py OUT [agent-module ...]"""
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
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["peal_bookings", "seismo_upkeep", "lookout_rota", "dye_batches",
          "ostrich_farm", "pilot_dispatch", "stall_lettings", "mill_orders"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
FORBIDDEN = re.compile(r"\bfault|\bbugs?\b|\bbuggy|wrong|\bstale|inject|corrupt|planted", re.I)


def ordered(run):
    return sorted(run.steps, key=lambda s: s.start_ns)  # stable: ties keep the recorded order


def find(steps, name, occ):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, f"step {name!r} #{occ} not found (have {len(hits)})"
    return hits[occ - 1]


def record(mod, server, inp, path):
    server.use(mod.policy)
    if os.path.exists(path):
        os.remove(path)
    mod.record(inp, path, server.base_url)
    trajdebug.flush()


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
                spans.extend(json.load(f).get("resourceSpans", []))
        with open(dest, "w") as out:
            json.dump({"resourceSpans": spans}, out)


def check_words(path, case_ids):
    with open(path) as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert not m, f"{path}: forbidden word {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"
    for cid in case_ids:
        assert cid not in text, f"{path}: holds case id {cid}"


def main(argv):
    out = os.path.abspath(argv[1])
    names = argv[2:] or AGENTS
    os.makedirs(out, exist_ok=True)
    mods = [importlib.import_module(n) for n in names]
    all_ids = [c["id"] for m in mods for c in m.CASES]
    assert len(set(all_ids)) == len(all_ids)
    index = []
    tmp = tempfile.mkdtemp(prefix="suite_zzza_")
    with FakeModelServer() as server:
        for mod in mods:
            if os.environ.get("SUITE_DEBUG"):
                import time
                print(mod.__name__, round(time.time(), 1), flush=True)
            ext = "json" if mod.ROUTE == "otlp" else "jsonl"
            assert all(v is False for v in mod.ON.values())
            clean = []
            for i, inp in enumerate(mod.INPUTS):
                p = os.path.join(tmp, f"{mod.__name__}_{i}.{ext}")
                record(mod, server, inp, p)
                [r] = trajdebug.load_runs(p)
                assert r.outcome == "success", (mod.__name__, i, [(s.name, s.error) for s in r.steps if s.status == "error"])
                assert r.name == mod.NAME, (r.name, mod.NAME)
                clean.append(p)
            for case in mod.CASES:
                cid = case["id"]
                assert case["fault_kind"] in KINDS
                d = os.path.join(out, cid)
                os.makedirs(d, exist_ok=True)
                failed = os.path.join(d, f"failed.{ext}")
                mod.ON[case["switch"]] = True
                try:
                    record(mod, server, mod.INPUTS[case["input"]], failed)
                finally:
                    mod.ON[case["switch"]] = False
                shutil.copyfile(clean[case["input"]], os.path.join(d, f"control.{ext}"))
                join([failed] + [p for j, p in enumerate(clean) if j != case["input"]],
                     os.path.join(d, f"with_refs.{ext}"), ext)
                [fr] = trajdebug.load_runs(failed)
                assert fr.outcome == "failure", (cid, fr.outcome)
                assert fr.name == mod.NAME
                [cr] = trajdebug.load_runs(os.path.join(d, f"control.{ext}"))
                assert cr.outcome == "success", cid
                refs = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
                assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
                steps = ordered(fr)
                if os.environ.get("SUITE_DEBUG"):
                    print(cid, len(steps), [(s.name, s.error.message) for s in steps if s.status == "error"])
                rname, rocc = case["root"]
                fname, focc = case["failure"]
                if focc is None:  # the first occurrence of that name that failed
                    same = [s for s in steps if s.name == fname]
                    focc = 1 + next(i for i, s in enumerate(same) if s.status == "error")
                ri, fi = find(steps, rname, rocc), find(steps, fname, focc)
                root, fail = steps[ri], steps[fi]
                assert root.status == "ok", (cid, root.name, root.status)
                assert fail.status == "error", (cid, fail.name, fail.status)
                assert fi > ri and fail.start_ns >= root.start_ns, (cid, ri, fi)
                if case.get("kind"):
                    assert root.kind == case["kind"], (cid, root.kind, case["kind"])
                for fn in ("failed", "control", "with_refs"):
                    check_words(os.path.join(d, f"{fn}.{ext}"), all_ids)
                truth = {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
                         "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
                         "failure": {"name": fname, "occurrence": focc}, "hops": fi - ri,
                         "description": case["description"]}
                assert not FORBIDDEN.search(case["description"]), cid
                with open(os.path.join(d, "truth.json"), "w") as f:
                    json.dump(truth, f, indent=2)
                index.append(cid)
    shutil.rmtree(tmp, ignore_errors=True)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": index}, f, indent=2)
    print(f"{len(index)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv)
