"""Generate suite_zzzzi: 8 agents x 5 failing cases of sport, games and competition operations.

Usage: python generate.py OUT [agent ...]   (agent = module name, e.g. regatta)
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
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(SRC))
os.environ.setdefault("OTEL_SDK_DISABLED", "false")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from openai import OpenAI  # noqa: E402

from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["regatta", "bridge", "swiss", "handicapper", "orienteering", "fantasy", "yachting", "cubing"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
KINDS = ("wrong_retrieval unit_error truncated_result swallowed_error stale_data off_by_one lossy_parsing "
         "context_pollution wrong_tool_args wrong_routing tool_ignores_argument subagent_wrong_entity plan_error "
         "hallucinated_value format_drift bad_memory_write").split()
BANNED = re.compile(r"(?<![a-z])(fault|bug|wrong|stale|inject(ed)?|corrupt(ed)?|planted)(?![a-z])", re.I)


def _ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, run.steps.index(s)))


def _find(steps, name, occurrence):
    named = [s for s in steps if s.name == name]
    assert len(named) >= occurrence, f"step {name} #{occurrence} not found ({len(named)} of that name)"
    return named[occurrence - 1]


def _merge(paths, out, ext):
    if ext == "jsonl":
        with open(out, "w") as f:
            for p in paths:
                f.write(Path(p).read_text())
    else:
        docs = [json.loads(Path(p).read_text()) for p in paths]
        json.dump({"resourceSpans": [rs for d in docs for rs in d["resourceSpans"]]}, open(out, "w"))


def _load(path):
    return trajdebug.load_runs(str(path))


def run_agent(mod, server, tmp: Path, out: Path) -> list[str]:
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    server.use(mod.brain)
    ext = EXT[mod.ROUTE]
    recorder = getattr(mod, "record")
    clean = []
    for i, inp in enumerate(mod.INPUTS):
        p = tmp / f"{mod.NAME}-clean-{i}.{ext}"
        mod.SWITCH = None
        recorder(inp, str(p), client, server.model)
        [r] = _load(p)
        assert r.outcome == "success", (mod.NAME, i, r.outcome, r.failure_reason)
        assert r.name == mod.NAME, (r.name, mod.NAME)
        clean.append(p)
    ids = []
    assert len(mod.CASES) == 5
    for case in mod.CASES:
        cid = case["id"]
        p = tmp / f"{cid}-failed.{ext}"
        mod.SWITCH = case["switch"]
        raised = None
        try:
            recorder(mod.INPUTS[case["input"]], str(p), client, server.model)
        except Exception as exc:  # the agent's own failure: expected
            raised = exc
        finally:
            mod.SWITCH = None
        assert raised is not None, (cid, "the agent did not raise")
        d = out / cid
        d.mkdir(parents=True)
        shutil.copy(p, d / f"failed.{ext}")
        shutil.copy(clean[case["input"]], d / f"control.{ext}")
        refs = [p] + [clean[j] for j in range(5) if j != case["input"]]
        _merge(refs, d / f"with_refs.{ext}", ext)
        truth = check_case(mod, case, d, ext)
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def check_case(mod, case, d: Path, ext: str) -> dict:
    cid = case["id"]
    for f in d.iterdir():
        text = f.read_text()
        m = BANNED.search(text)
        assert not m, f"{cid}/{f.name}: recorded data holds {m.group(0)!r} near {text[max(0, m.start()-80):m.end()+40]!r}"
    [failed] = _load(d / f"failed.{ext}")
    assert failed.outcome == "failure", (cid, failed.outcome)
    assert failed.name == mod.NAME
    [control] = _load(d / f"control.{ext}")
    assert control.outcome == "success", (cid, control.outcome)
    refs = _load(d / f"with_refs.{ext}")
    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
    assert all(r.name == mod.NAME for r in refs)
    steps = _ordered(failed)
    rname, rocc, rkind = case["root"]
    fname, focc = case["failure"]
    root = _find(steps, rname, rocc)
    fail = _find(steps, fname, focc)
    assert root.status == "ok", (cid, "root status", root.status)
    assert root.kind == rkind, (cid, "root kind", root.kind, rkind)
    assert fail.status == "error", (cid, "failure status", fail.status)
    ri, fi = steps.index(root), steps.index(fail)
    assert ri < fi, (cid, ri, fi)
    # the failing step is where the error started: none of its children failed
    kids = [s for s in steps if s.parent_id == fail.step_id and s.status == "error"]
    assert not kids, (cid, "failure step has failing children", [k.name for k in kids])
    # the control run holds the same root step, also ok, and no error at the failure step
    csteps = _ordered(control)
    assert any(s.name == rname for s in csteps), (cid, "root missing in control")
    assert case["fault_kind"] in KINDS
    return {"case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["fault_kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
            "failure": {"name": fname, "occurrence": focc}, "hops": fi - ri,
            "description": case["description"]}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    ids: list[str] = []
    truths = []
    with tempfile.TemporaryDirectory() as tmpd, FakeModelServer(lambda r: "ok") as server:
        tmp = Path(tmpd)
        for name in names:
            mod = importlib.import_module(name)
            assert mod.ROUTE in ROUTES
            got = run_agent(mod, server, tmp, out)
            ids += got
            truths += [json.loads((out / c / "truth.json").read_text()) for c in got]
            print(f"{name:14s} {mod.ROUTE:14s} {len(got)} cases  ({time.time() - t0:.1f} s)", flush=True)
        finishers = [getattr(importlib.import_module(n), "finish", None) for n in names]
        for f in finishers:
            if f:
                f()
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    if names == AGENTS:
        assert len(ids) == 40 and len(set(ids)) == 40
        counts = {}
        for t in truths:
            counts[t["fault_kind"]] = counts.get(t["fault_kind"], 0) + 1
        assert set(counts) == set(KINDS) and all(2 <= c <= 4 for c in counts.values()), counts
        routes = {}
        for t in truths:
            routes[t["route"]] = routes.get(t["route"], 0) + 1
        assert all(routes.get(r) == 10 for r in ROUTES), routes
    print(f"{len(ids)} cases in {time.time() - t0:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
