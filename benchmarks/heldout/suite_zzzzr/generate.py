"""Generate suite_zzzzr: 8 manufacturing / industrial-quality agents x 5 cases, recorded through four routes.

    python generate.py OUT [agent ...]

For every case: OUT/<case>/failed.<ext>, control.<ext>, with_refs.<ext>, truth.json; and OUT/index.json.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import common  # noqa: E402  (puts the worktree's src on sys.path)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "ag_furnace_tus",
    "ag_wafer_dispo",
    "ag_ppap_review",
    "ag_dryer_pdm",
    "ag_gauge_rr",
    "ag_cleanroom_cert",
    "ag_melt_chem",
    "ag_weld_ndt",
]
KINDS = (
    "wrong_retrieval unit_error truncated_result swallowed_error stale_data off_by_one lossy_parsing "
    "context_pollution wrong_tool_args wrong_routing tool_ignores_argument subagent_wrong_entity plan_error "
    "hallucinated_value format_drift bad_memory_write"
).split()
BANNED = re.compile(r"fault|bug|wrong|stale|inject|corrupt|planted", re.I)


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index or 0))


def find(steps, name, occ):
    hits = [(i, s) for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occ, f"step {name} #{occ} not found ({len(hits)} of that name)"
    return hits[occ - 1]


def scan(run, where):
    texts = [run.metadata.get("task") or "", run.failure_reason or ""]
    for s in run.steps:
        texts += [s.name, json.dumps(s.input, default=str), json.dumps(s.output, default=str)]
        if s.error:
            texts += [s.error.type or "", s.error.message or ""]
    for t in texts:
        m = BANNED.search(t)
        assert not m, f"{where}: recorded data holds {m.group(0)!r}: ...{t[max(0, m.start() - 60):m.end() + 60]}..."


def write(path: Path, content) -> None:
    if isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(json.dumps(content))


def merge(contents):
    if isinstance(contents[0], str):
        return "".join(contents)
    return {"resourceSpans": [rs for c in contents for rs in c["resourceSpans"]]}


def load(path: Path):
    return trajdebug.load_runs(str(path))


def build_agent(mod, routes, out: Path) -> list[str]:
    ext = common.EXT[mod.ROUTE]
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    mod.SWITCH = None
    passes = []
    for i, inp in enumerate(mod.INPUTS):
        content = routes.record(mod, inp)
        passes.append(content)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        k = case["input"]
        mod.SWITCH = cid
        try:
            failed = routes.record(mod, mod.INPUTS[k])
        finally:
            mod.SWITCH = None
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        write(d / f"failed.{ext}", failed)
        write(d / f"control.{ext}", passes[k])
        write(d / f"with_refs.{ext}", merge([failed if j == k else passes[j] for j in range(5)]))

        [frun] = load(d / f"failed.{ext}")
        [crun] = load(d / f"control.{ext}")
        refs = load(d / f"with_refs.{ext}")
        where = f"{cid}"
        assert frun.outcome == "failure", f"{where}: failed run outcome {frun.outcome}"
        assert crun.outcome == "success", f"{where}: control outcome {crun.outcome} ({crun.failure_reason})"
        assert frun.name == crun.name == mod.RUN_NAME, (frun.name, crun.name)
        assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, f"{where}: with_refs"
        assert all(r.name == mod.RUN_NAME for r in refs)
        for r in refs:
            scan(r, where)
        steps = ordered(frun)
        assert 10 <= len(steps) <= 60, f"{where}: {len(steps)} steps"
        rname, rocc, rkind = case["root"]
        fname, focc = case["failure"]
        ri, rs = find(steps, rname, rocc)
        fi, fs = find(steps, fname, focc)
        assert rs.status == "ok", f"{where}: root status {rs.status}"
        assert rs.kind == rkind, f"{where}: root kind {rs.kind} != {rkind}"
        assert fs.status == "error", f"{where}: failure status {fs.status}"
        assert ri < fi, f"{where}: root at {ri} not before failure at {fi}"
        # the failing step raised there (no child of it is an error)
        assert not any(s.parent_id == fs.step_id and s.status == "error" for s in steps), f"{where}: failure not innermost"
        # the switch acted at the root: its output differs from the control run's same step
        cs = ordered(crun)
        _, crs = find(cs, rname, rocc)
        if not case.get("same_output"):
            assert json.dumps(crs.output, sort_keys=True, default=str) != json.dumps(
                rs.output, sort_keys=True, default=str
            ), f"{where}: root output equals the control's"
        assert case["kind"] in KINDS
        desc = case["description"]
        assert not BANNED.search(desc), f"{where}: description holds a banned word"
        truth = {
            "case": cid,
            "agent": mod.RUN_NAME,
            "route": mod.ROUTE,
            "fault_kind": case["kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri,
            "description": desc,
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzzr65_gen_", dir="/tmp"))
    ids = []
    try:
        with FakeModelServer(lambda request: "idle") as server:
            routes = common.Routes(server, tmp)
            try:
                for name in wanted:
                    mod = importlib.import_module(name)
                    server.use(mod.brain)
                    t = time.time()
                    ids += build_agent(mod, routes, out)
                    print(f"{mod.RUN_NAME:24s} {mod.ROUTE:14s} 5 cases  {time.time() - t:5.1f}s", flush=True)
            finally:
                routes.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    index = out / "index.json"
    old = json.loads(index.read_text())["cases"] if index.exists() and argv[1:] else []
    (index).write_text(json.dumps({"cases": sorted(set(old) | set(ids)) if old else ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
