"""Generate the held-out suite suite_zzzzh: 8 agriculture / fisheries / food-production agents x 5 cases.

    python generate.py OUT [agent ...]

Writes OUT/<case>/failed.<ext>, control.<ext>, with_refs.<ext>, truth.json and OUT/index.json.
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
for p in (str(HERE), str(SRC)):
    if p not in sys.path:
        sys.path.insert(0, p)
os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "depuration",
    "milk_route",
    "seed_lot",
    "fertigation",
    "grain_intake",
    "hatchery_feed",
    "catch_landing",
    "sugarhouse",
]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
BANNED = re.compile(r"fault|bug|wrong|stale|inject|corrupt|planted", re.I)


def _texts(value, out):
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            out.append(str(k))
            _texts(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _texts(v, out)
    elif value is not None:
        out.append(str(value))
    return out


def _check_words(run, where):
    texts = [str(run.metadata.get("task", ""))]
    for s in run.steps:
        texts.append(s.name)
        _texts(s.input, texts)
        _texts(s.output, texts)
        err = getattr(s, "error", None)
        if err is not None:
            texts.append(str(getattr(err, "type", "")))
            texts.append(str(getattr(err, "message", "")))
    for e in getattr(run, "errors", ()) or ():
        texts.append(str(getattr(e, "message", "")))
    for t in texts:
        m = BANNED.search(t)
        assert m is None, f"{where}: recorded text holds {m.group(0)!r}: {t[:200]!r}"


def _ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def _load_one(path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def _merge(route, files, dest):
    if route == "otlp":
        spans = []
        for f in files:
            spans.extend(json.loads(Path(f).read_text())["resourceSpans"])
        Path(dest).write_text(json.dumps({"resourceSpans": spans}))
    else:
        with open(dest, "w") as out:
            for f in files:
                out.write(Path(f).read_text())


def run_agent(mod, server, out: Path, work: Path) -> list[str]:
    ext = EXT[mod.ROUTE]
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5, mod.NAME
    refs = []
    mod.SWITCH = None
    for i, inp in enumerate(mod.INPUTS):
        path = work / f"{mod.NAME}-ref{i}.{ext}"
        server.use(mod.brain)
        mod.record(inp, path, server)
        run = _load_one(path)
        assert run.outcome == "success", f"{mod.NAME} input {i}: {run.outcome} {run.metadata.get('failure_reason')}"
        assert run.name == mod.NAME, (run.name, mod.NAME)
        _check_words(run, f"{mod.NAME} ref {i}")
        refs.append(path)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["kind"] in KINDS, case
        i = case["input"]
        cdir = out / cid
        cdir.mkdir(parents=True, exist_ok=True)
        failed = cdir / f"failed.{ext}"
        mod.SWITCH = cid
        server.use(mod.brain)
        try:
            mod.record(mod.INPUTS[i], failed, server)
        finally:
            mod.SWITCH = None
        shutil.copyfile(refs[i], cdir / f"control.{ext}")
        others = [refs[j] for j in range(5) if j != i]
        _merge(mod.ROUTE, [failed, *others], cdir / f"with_refs.{ext}")

        bad = _load_one(failed)
        assert bad.outcome == "failure", f"{cid}: failed run is {bad.outcome}"
        assert bad.name == mod.NAME
        good = _load_one(cdir / f"control.{ext}")
        assert good.outcome == "success", f"{cid}: control is {good.outcome}"
        assert good.metadata.get("task") == bad.metadata.get("task"), cid
        both = trajdebug.load_runs(str(cdir / f"with_refs.{ext}"))
        assert len(both) == 5, f"{cid}: with_refs holds {len(both)} runs"
        assert sorted(r.outcome for r in both) == ["failure"] + ["success"] * 4, cid
        assert [r.run_id for r in both if r.outcome == "failure"] == [bad.run_id], cid
        _check_words(bad, cid)

        steps = _ordered(bad)
        rname, rocc = case["root"]
        named = [s for s in steps if s.name == rname]
        assert len(named) >= rocc, f"{cid}: root {rname} #{rocc} not found ({len(named)} of that name)"
        if case.get("root_has"):
            # the step the switch acted on, told apart from its namesakes by a value it holds
            hits = [k for k, s in enumerate(named) if case["root_has"] in json.dumps([s.input, s.output], default=str)]
            assert len(hits) == 1, f"{cid}: {len(hits)} {rname} steps hold {case['root_has']!r}"
            rocc = hits[0] + 1
        root = named[rocc - 1]
        assert root.status == "ok", f"{cid}: root {rname} status {root.status}"
        assert root.kind == case["root_kind"], f"{cid}: root kind {root.kind} != {case['root_kind']}"
        fname = case["failure"]
        ferr = [s for s in steps if s.name == fname and s.status == "error"]
        assert ferr, f"{cid}: no failing step {fname}; errors: {[(s.name, s.status) for s in steps if s.status != 'ok']}"
        fail = ferr[0]
        focc = [s.step_id for s in steps if s.name == fname].index(fail.step_id) + 1
        ri, fi = steps.index(root), steps.index(fail)
        assert ri < fi, f"{cid}: root index {ri} not before failure {fi}"
        earlier_err = [s.name for s in steps[:fi] if s.status == "error" and s.step_id not in _ancestors(fail, bad)]
        assert not earlier_err or case.get("earlier_errors_ok"), f"{cid}: errors before the failure: {earlier_err}"
        # the failing step is where the error started: no child of it failed
        kids = [s for s in steps if s.parent_id == fail.step_id and s.status == "error"]
        assert not kids, f"{cid}: failure {fname} has failing children {[k.name for k in kids]}"
        assert not BANNED.search(case["what"]), cid
        hops = fi - ri
        assert hops >= 1
        truth = {
            "case": cid,
            "agent": mod.NAME,
            "route": mod.ROUTE,
            "fault_kind": case["kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": hops,
            "description": case["what"],
        }
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def _ancestors(step, run):
    by = {s.step_id: s for s in run.steps}
    out, p = set(), step.parent_id
    while p and p in by and p not in out:
        out.add(p)
        p = by[p].parent_id
    return out


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    ids: list[str] = []
    with tempfile.TemporaryDirectory(prefix="suite_zzzzh_") as tmp, FakeModelServer(lambda r: "") as server:
        cwd = os.getcwd()
        os.chdir(tmp)  # anything a framework writes by default lands here, not in the caller's folder
        try:
            for name in names:
                mod = importlib.import_module(f"farm_agents.{name}")
                t = time.time()
                got = run_agent(mod, server, out, Path(tmp))
                ids.extend(got)
                print(f"{mod.NAME:22s} {mod.ROUTE:14s} {len(got)} cases  {time.time() - t:5.1f}s", flush=True)
        finally:
            os.chdir(cwd)
    index = out / "index.json"
    old = json.loads(index.read_text())["cases"] if index.exists() and argv[1:] else []
    merged = sorted(set(old) | set(ids))
    index.write_text(json.dumps({"cases": merged}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.time() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
