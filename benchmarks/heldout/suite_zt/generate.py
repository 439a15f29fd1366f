"""Generate suite_zt: python benchmarks/heldout/suite_zt/generate.py OUT [agent ...]"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_zt"

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

from .common import check_words, find, load, merge  # noqa: E402

AGENTS = ["archives", "skydive", "esports", "vending", "scrapyard", "robotics", "petsit", "floats"]


def ext(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def gen_agent(mod, out: Path) -> list[dict]:
    e = ext(mod.ROUTE)
    tmp = Path(tempfile.mkdtemp(prefix="zt_"))
    refs = tmp / f"refs.{e}"
    for name in mod.REFS:
        mod.record(refs, name, None)
    ref_runs = load(refs, mod.ROUTE)
    assert len(ref_runs) == 4 and all(r.outcome == "success" for r in ref_runs), \
        [(r.outcome, getattr(r, "failure_reason", None)) for r in ref_runs]
    truths = []
    for c in mod.CASES:
        d = out / c.case
        d.mkdir(parents=True, exist_ok=True)
        failed, control, with_refs = d / f"failed.{e}", d / f"control.{e}", d / f"with_refs.{e}"
        for p in (failed, control, with_refs):
            p.unlink(missing_ok=True)
        mod.record(failed, c.main_input, c.fault_id)
        mod.record(control, c.main_input, None)
        merge(mod.ROUTE, [failed, refs], with_refs)
        (fr,) = load(failed, mod.ROUTE)
        (cr,) = load(control, mod.ROUTE)
        assert fr.outcome == "failure", (c.case, fr.outcome)
        assert cr.outcome == "success", (c.case, cr.outcome, getattr(cr, "failure_reason", None))
        wr = load(with_refs, mod.ROUTE)
        assert len(wr) == 5 and sum(r.outcome == "failure" for r in wr) == 1, c.case
        ri, rs = find(fr, c.root, c.root_occ)
        fi, fs = find(fr, c.failure, c.failure_occ)
        assert fi > ri and (fs.start_ns or 0) >= (rs.start_ns or 0), (c.case, ri, fi)
        assert fs.status == "error" or fs.error is not None, (c.case, fs.name, fs.status)
        for p in (failed, control, with_refs):
            check_words(p)
        truth = {
            "case": c.case, "agent": mod.AGENT, "route": mod.ROUTE, "fault_kind": c.fault_kind,
            "root": {"name": c.root, "occurrence": c.root_occ, "kind": rs.kind},
            "failure": {"name": c.failure, "occurrence": c.failure_occ},
            "hops": fi - ri, "description": c.description,
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        truths.append(truth)
    shutil.rmtree(tmp, ignore_errors=True)
    return truths


def main(argv: list[str]) -> None:
    out = Path(argv[0]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or AGENTS
    truths = []
    for n in names:
        mod = importlib.import_module(f"{__package__}.{n}")
        t = gen_agent(mod, out)
        print(f"{n}: {len(t)} cases", flush=True)
        truths.extend(t)
    (out / "index.json").write_text(json.dumps(truths, indent=2) + "\n")
    if not argv[1:]:
        kinds: dict[str, int] = {}
        for t in truths:
            kinds[t["fault_kind"]] = kinds.get(t["fault_kind"], 0) + 1
        assert len(truths) == 40 and all(v >= 2 for v in kinds.values()) and len(kinds) == 16, kinds
        assert sum(t["hops"] >= 5 for t in truths) >= 12, "far"
        assert sum(t["hops"] == 1 for t in truths) >= 8, "adjacent"
    print(json.dumps({"cases": len(truths)}))
    import trajdebug

    from . import common
    trajdebug.flush()
    if common._SERVER is not None:
        common._SERVER.__exit__(None, None, None)


if __name__ == "__main__":
    main(sys.argv[1:])
