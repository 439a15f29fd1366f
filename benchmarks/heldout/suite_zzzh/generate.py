"""Generate the held-out suite zzzh: python benchmarks/heldout/suite_zzzh/generate.py OUT [agent-module ...]"""
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
SRC = os.path.abspath(os.path.join(HERE, "..", "..", "..", "src"))
if os.path.isdir(SRC) and SRC not in sys.path:
    sys.path.insert(0, SRC)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["agent_thimble", "agent_clown", "agent_harmonica", "agent_didgeridoo",
          "agent_gamelan", "agent_glockenspiel", "agent_igloo", "agent_canyon"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}
FORBIDDEN = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)", re.I)


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def record(mod, server, inp, switch, path):
    mod.SWITCH = switch
    try:
        server.use(mod.policy)
        try:
            mod.record(server, inp, path)
        except Exception:  # the failing run raised out of its block: it is recorded as failed
            if switch is None:
                raise
    finally:
        mod.SWITCH = None
    trajdebug.flush()


def load_one(path):
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index or 0))


def find(steps, name, occurrence):
    named = [s for s in steps if s.name == name]
    assert len(named) >= occurrence, (name, occurrence, [s.name for s in steps])
    return named[occurrence - 1]


def join(paths, out, route):
    if route == "otlp":
        doc = {"resourceSpans": []}
        for p in paths:
            with open(p) as f:
                doc["resourceSpans"].extend(json.load(f)["resourceSpans"])
        with open(out, "w") as f:
            json.dump(doc, f)
    else:
        with open(out, "w") as w:
            for p in paths:
                with open(p) as f:
                    w.write(f.read())


def check_words(path):
    with open(path) as f:
        text = f.read()
    m = FORBIDDEN.search(text)
    assert m is None, (path, text[max(0, m.start() - 80): m.end() + 80])


def build_agent(mod, server, out, scratch):
    route, ext = mod.ROUTE, ext_of(mod.ROUTE)
    clean = []
    for i, inp in enumerate(mod.INPUTS):
        p = os.path.join(scratch, f"{mod.NAME}-clean-{i}.{ext}")
        record(mod, server, inp, None, p)
        run = load_one(p)
        assert run.outcome == "success", (mod.NAME, i, run.outcome, [(s.name, s.status, s.error) for s in run.steps if s.status != "ok"])
        clean.append(p)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["fault_kind"] in KINDS, case
        d = os.path.join(out, cid)
        os.makedirs(d, exist_ok=True)
        scratch_failed = os.path.join(scratch, f"{cid}.{ext}")
        record(mod, server, mod.INPUTS[case["input"]], case["switch"], scratch_failed)
        failed = os.path.join(d, f"failed.{ext}")
        shutil.copy(scratch_failed, failed)
        shutil.copy(clean[case["input"]], os.path.join(d, f"control.{ext}"))
        others = [clean[j] for j in range(len(mod.INPUTS)) if j != case["input"]]
        join([failed] + others, os.path.join(d, f"with_refs.{ext}"), route)
        run = load_one(failed)
        control = load_one(os.path.join(d, f"control.{ext}"))
        assert run.outcome == "failure", (cid, run.outcome)
        assert control.outcome == "success", cid
        refs = trajdebug.load_runs(os.path.join(d, f"with_refs.{ext}"))
        assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
        assert all(r.name == run.name == mod.NAME for r in refs), (cid, [r.name for r in refs])
        steps = ordered(run)
        root = find(steps, case["root"], case["root_occurrence"])
        assert root.status == "ok", (cid, root.status, root.error)
        errs = [s for s in steps if s.name == case["failure"] and s.status == "error"]
        assert errs, (cid, case["failure"], [(s.name, s.status) for s in steps if s.status != "ok"])
        fail = errs[-1]
        focc = [s for s in steps if s.name == case["failure"]].index(fail) + 1
        hops = steps.index(fail) - steps.index(root)
        assert hops >= 1, (cid, hops)
        csteps = ordered(control)
        try:
            croot = find(csteps, case["root"], case["root_occurrence"])
            if not case.get("same_output"):
                assert json.dumps(croot.output, sort_keys=True, default=str) != json.dumps(root.output, sort_keys=True, default=str), (cid, "root output equals control")
        except AssertionError as e:
            if "root output" in str(e):
                raise
        truth = {"case": cid, "agent": run.name, "route": route, "fault_kind": case["fault_kind"],
                 "root": {"name": root.name, "occurrence": case["root_occurrence"], "kind": root.kind},
                 "failure": {"name": fail.name, "occurrence": focc}, "hops": hops,
                 "description": case["description"]}
        assert not FORBIDDEN.search(case["description"]), cid
        with open(os.path.join(d, "truth.json"), "w") as f:
            json.dump(truth, f, indent=2)
        for name in ("failed", "control", "with_refs"):
            check_words(os.path.join(d, f"{name}.{ext}"))
        ids.append(cid)
    return ids


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = os.path.abspath(argv[0])
    names = argv[1:] or AGENTS
    os.makedirs(out, exist_ok=True)
    ids = []
    with FakeModelServer() as server, tempfile.TemporaryDirectory() as scratch:
        for name in names:
            mod = importlib.import_module(name)
            got = build_agent(mod, server, out, scratch)
            print(f"{mod.NAME}: {len(got)} cases", flush=True)
            ids.extend(got)
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump({"cases": ids}, f, indent=2)
    print(f"{len(ids)} cases in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
