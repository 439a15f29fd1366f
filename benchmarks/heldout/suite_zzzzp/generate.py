"""Generate suite_zzzzp: 8 retail/e-commerce agents x 5 failing cases.

    python generate.py OUT [agent ...]

Writes OUT/<case>/{failed,control,with_refs}.<ext>, OUT/<case>/truth.json and OUT/index.json.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
for p in (str(SRC), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import common  # noqa: E402

AGENTS = [
    "returns_grading", "sub_box_curation", "price_match_desk", "planogram_reset",
    "consignment_intake", "locker_allocation", "clearance_markdown", "cycle_count",
]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
FORBIDDEN = re.compile(r"\b(faults?|bugs?|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def nth(steps, name, occ):
    same = [s for s in steps if s.name == name]
    assert len(same) >= occ, f"no occurrence {occ} of step {name!r}: {[s.name for s in steps]}"
    return same[occ - 1]


def run_case(mod, inp, path, switch):
    mod.SWITCH = switch
    try:
        mod.run(inp, str(path))
        raised = None
    except Exception as exc:  # the failing run raises out of the agent
        raised = exc
    finally:
        mod.SWITCH = None
    return raised


def combine(paths, out, ext):
    if ext == "jsonl":
        with open(out, "wb") as f:
            for p in paths:
                f.write(Path(p).read_bytes())
    else:
        spans = []
        for p in paths:
            spans.extend(json.loads(Path(p).read_text())["resourceSpans"])
        Path(out).write_text(json.dumps({"resourceSpans": spans}))


def check_words(path):
    text = Path(path).read_text()
    m = FORBIDDEN.search(text)
    assert m is None, f"{path}: recorded data holds {m.group(0)!r} near {text[max(0, m.start() - 80):m.end() + 80]!r}"


def load_one(path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def generate_agent(modname, out: Path, tmp: Path):
    mod = importlib.import_module(modname)
    ext = EXT[mod.ROUTE]
    common.server().use(mod.brain)
    refs = []
    for i, inp in enumerate(mod.INPUTS):
        p = tmp / f"{modname}_ref{i}.{ext}"
        raised = run_case(mod, inp, p, None)
        assert raised is None, f"{modname} input {i} raised {raised!r}"
        run = load_one(p)
        assert run.outcome == "success", f"{modname} input {i}: {run.outcome} {run.failure_reason}"
        assert run.name == mod.NAME, (run.name, mod.NAME)
        n = len(run.steps)
        assert 10 <= n <= 60, f"{modname} input {i}: {n} steps"
        refs.append(p)
    ids = []
    for case in mod.CASES:
        cid, idx = case["id"], case["input"]
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        fp = tmp / f"{cid}_failed.{ext}"
        raised = run_case(mod, mod.INPUTS[idx], fp, cid)
        assert raised is not None, f"{cid}: the run did not raise"
        shutil.copy(fp, d / f"failed.{ext}")
        shutil.copy(refs[idx], d / f"control.{ext}")
        combine([fp] + [r for j, r in enumerate(refs) if j != idx], d / f"with_refs.{ext}", ext)
        failed, control = load_one(d / f"failed.{ext}"), load_one(d / f"control.{ext}")
        assert failed.outcome == "failure", f"{cid}: failed run is {failed.outcome}"
        assert control.outcome == "success", f"{cid}: control is {control.outcome}"
        assert 10 <= len(failed.steps) <= 60, f"{cid}: {len(failed.steps)} steps"
        both = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, [r.outcome for r in both]
        assert all(r.name == mod.NAME for r in both)
        steps = ordered(failed)
        rname, rocc, rkind = case["root"]
        fname, focc = case["failure"]
        root, fail = nth(steps, rname, rocc), nth(steps, fname, focc)
        assert root.status == "ok", f"{cid}: root {rname} is {root.status}"
        assert root.kind == rkind, f"{cid}: root {rname} kind {root.kind}, expected {rkind}"
        assert fail.status == "error", f"{cid}: failing step {fname} is {fail.status}"
        ri, fi = steps.index(root), steps.index(fail)
        assert ri < fi, f"{cid}: root at {ri} not before failure at {fi}"
        cstep = nth(ordered(control), rname, rocc)
        assert (cstep.output, cstep.input) != (root.output, root.input), f"{cid}: root step same as control"
        for f in ("failed", "control", "with_refs"):
            check_words(d / f"{f}.{ext}")
        truth = {
            "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
            "failure": {"name": fname, "occurrence": focc}, "hops": fi - ri,
            "description": case["description"],
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzzp65_gen_"))
    cwd = os.getcwd()
    os.chdir(tmp)  # any default store a framework falls back on lands here, not in the caller's folder
    ids = []
    try:
        with FakeModelServer(lambda request: "ready") as srv:
            common.STATE["server"], common.STATE["client"] = srv, None
            for name in wanted:
                ids += generate_agent(name, out, tmp)
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
