"""Generate the held-out suite zzzf: 8 agents x 5 cases of failing runs, with controls and references.

    python benchmarks/heldout/suite_zzzf/generate.py OUT [agent-module ...]
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
sys.path.insert(0, str(HERE))
SRC = HERE.parents[2] / "src"
if SRC.is_dir():
    sys.path.insert(0, str(SRC))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "not-needed")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

import suite_common  # noqa: E402

AGENTS = [
    "hourglass_orders",
    "abacus_lessons",
    "scriptorium_commissions",
    "waxseal_orders",
    "spinningwheel_repairs",
    "crochet_subscriptions",
    "zipper_tickets",
    "walkingstick_fittings",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(r"\b(fault\w*|bug|bugs|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.I)
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}


def one_run(mod, inp, switch, path: Path) -> None:
    mod.ACTIVE = switch
    suite_common.SERVER.use(mod.policy)
    try:
        mod.record(inp, str(path))
    except Exception:
        pass
    finally:
        mod.ACTIVE = None
    trajdebug.flush()


def load_one(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, (path, len(runs))
    return runs[0]


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, getattr(s, "source_index", 0) or 0))


def join(paths, out: Path, ext: str) -> None:
    if ext == "jsonl":
        with open(out, "w") as f:
            for p in paths:
                f.write(Path(p).read_text())
    else:
        spans = []
        for p in paths:
            spans.extend(json.loads(Path(p).read_text()).get("resourceSpans", []))
        out.write_text(json.dumps({"resourceSpans": spans}))


def build(mod_name: str, out: Path, tmp: Path) -> list[str]:
    mod = importlib.import_module(mod_name)
    ext = EXT[mod.ROUTE]
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    controls = []
    for i, inp in enumerate(mod.INPUTS):
        p = tmp / f"{mod_name}_ctl{i}.{ext}"
        one_run(mod, inp, None, p)
        run = load_one(p)
        assert run.outcome == "success", (mod_name, i, run.outcome, run.failure_reason if hasattr(run, "failure_reason") else "")
        assert run.name == mod.RUN_NAME, (run.name, mod.RUN_NAME)
        controls.append(p)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["fault_kind"] in KINDS, case
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        failed = d / f"failed.{ext}"
        scratch = tmp / f"{cid}_failed.{ext}"
        one_run(mod, mod.INPUTS[case["input"]], case["switch"], scratch)
        shutil.copy(scratch, failed)
        shutil.copy(controls[case["input"]], d / f"control.{ext}")
        join([failed] + [c for j, c in enumerate(controls) if j != case["input"]], d / f"with_refs.{ext}", ext)
        run = load_one(failed)
        assert run.outcome == "failure", (cid, run.outcome)
        assert load_one(d / f"control.{ext}").outcome == "success"
        refs = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
        steps = ordered(run)
        rname, rocc = case["root"]
        same = [s for s in steps if s.name == rname]
        assert len(same) >= rocc, (cid, rname, [s.name for s in steps])
        root = same[rocc - 1]
        assert root.status == "ok", (cid, root.name, root.status)
        errs = [s for s in steps if s.status == "error"]
        assert errs, cid
        fail = errs[-1]
        assert fail.name == case["failure"], (cid, fail.name, case["failure"], [(s.name, s.status) for s in steps])
        focc = [s.step_id for s in steps if s.name == fail.name].index(fail.step_id) + 1
        ri, fi = steps.index(root), steps.index(fail)
        assert fi > ri, (cid, ri, fi)
        for f in d.iterdir():
            m = FORBIDDEN.search(f.read_text())
            assert not m, (cid, f.name, m.group(0))
        assert not FORBIDDEN.search(case["description"]), cid
        truth = {
            "case": cid,
            "agent": mod.RUN_NAME,
            "route": mod.ROUTE,
            "fault_kind": case["fault_kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": focc},
            "hops": fi - ri,
            "description": case["description"],
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        for f in d.iterdir():
            assert cid not in f.read_text() or f.name == "truth.json", (cid, f.name)
        ids.append(cid)
        print(f"{cid:28s} {mod.ROUTE:14s} {case['fault_kind']:22s} {rname}#{rocc} -> {fail.name}#{focc} hops={fi - ri}")
    return ids


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit(__doc__)
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory() as tmpd, FakeModelServer(lambda r: "") as server:
        os.chdir(tmpd)  # any default store a framework falls back on lands here, not in the worktree
        suite_common.SERVER = server
        try:
            for name in names:
                t0 = time.perf_counter()
                ids += build(name, out, Path(tmpd))
                print(f"  {name}: {time.perf_counter() - t0:.1f} s")
        finally:
            os.chdir(cwd)
    index = out / "index.json"
    old = json.loads(index.read_text())["cases"] if index.exists() and argv[1:] else []
    index.write_text(json.dumps({"cases": sorted(set(old) | set(ids))}, indent=2) + "\n")
    print(f"{len(ids)} cases written to {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
