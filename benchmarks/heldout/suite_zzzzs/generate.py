"""Generate the held-out suite suite_zzzzs: 8 community / civic volunteer agents x 5 failing cases.

    python generate.py OUT [agent ...]

Writes OUT/<case>/failed.<ext>, control.<ext>, with_refs.<ext>, truth.json and OUT/index.json.
"""

from __future__ import annotations

import importlib
import json
import os
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

import _common  # noqa: E402
import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "fridge_restock",
    "eyeglass_clinic",
    "sar_callout",
    "reception_center",
    "wildlife_hotline",
    "interpreter_match",
    "cleanup_tally",
    "pb_count",
]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = ("wrong_retrieval unit_error truncated_result swallowed_error stale_data off_by_one lossy_parsing "
         "context_pollution wrong_tool_args wrong_routing tool_ignores_argument subagent_wrong_entity plan_error "
         "hallucinated_value format_drift bad_memory_write").split()


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def find(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} #{occurrence} not found ({len(hits)} of that name)"
    return hits[occurrence - 1]


def comparable(value):
    """A step's output without what differs on every call (tool-call ids minted by the model server)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in ("id", "tool_call_id", "call_id")}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return json.dumps(strip(value), sort_keys=True, default=str)


def check_words(run, where):
    texts = [run.name, json.dumps(run.metadata.get("task"), default=str)]
    for s in run.steps:
        texts.append(s.name)
        texts.append(json.dumps(s.input, default=str))
        texts.append(json.dumps(s.output, default=str))
        if s.error is not None:
            texts.append(f"{s.error.type} {s.error.message}")
    texts.append(str(run.failure_reason or ""))
    for t in texts:
        m = _common.BANNED.search(t or "")
        assert m is None, f"{where}: recorded data holds the word {m.group(0)!r}"


def load_one(path, outcome, where):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{where}: {len(runs)} runs in {path}"
    assert runs[0].outcome == outcome, f"{where}: outcome {runs[0].outcome} ({runs[0].failure_reason}), not {outcome}"
    check_words(runs[0], where)
    return runs[0]


TIMINGS = []


def record(mod, inp, path, switch):
    mod.SWITCH = switch
    t0 = time.monotonic()
    try:
        mod.execute(inp, str(path))
    finally:
        mod.SWITCH = None
        TIMINGS.append((mod.__name__, switch, round(time.monotonic() - t0, 2)))


def merge(route, paths, dest):
    if route == "otlp":
        doc = {"resourceSpans": []}
        for p in paths:
            doc["resourceSpans"].extend(json.loads(Path(p).read_text())["resourceSpans"])
        Path(dest).write_text(json.dumps(doc))
    else:
        with open(dest, "w", encoding="utf-8") as out:
            for p in paths:
                out.write(Path(p).read_text())


def build_agent(mod, out: Path, tmp: Path) -> list[str]:
    ext = EXT[mod.ROUTE]
    short = mod.__name__
    passing = []
    for i, inp in enumerate(mod.INPUTS):
        p = tmp / f"{short}_pass{i}.{ext}"
        record(mod, inp, p, None)
        load_one(p, "success", f"{short} input {i}")
        passing.append(p)
    ids = []
    assert len(mod.CASES) == 5
    for case in mod.CASES:
        cid, i = case["id"], case["input"]
        assert case["kind"] in KINDS, case["kind"]
        fp = tmp / f"{short}_fail{i}.{ext}"
        record(mod, mod.INPUTS[i], fp, cid)
        failed = load_one(fp, "failure", cid)
        control = load_one(passing[i], "success", cid + " control")
        steps = ordered(failed)
        rname, rocc, rkind = case["root"]
        fname, focc = case["failure"]
        ri, fi = find(steps, rname, rocc), find(steps, fname, focc)
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", f"{cid}: root {rname}#{rocc} status {root.status}"
        assert fail.status == "error", f"{cid}: failure {fname}#{focc} status {fail.status}"
        assert ri < fi, f"{cid}: root at {ri} not before failure at {fi}"
        assert root.kind == rkind, f"{cid}: root kind {root.kind}, declared {rkind}"
        by_id = {s.step_id: s for s in steps}
        ancestors, cur = set(), fail.parent_id
        while cur is not None and cur in by_id and cur not in ancestors:
            ancestors.add(cur)
            cur = by_id[cur].parent_id
        errs_before = [s.name for s in steps[:fi] if s.status == "error" and s.step_id not in ancestors]
        assert not errs_before, f"{cid}: steps failed before the failure: {errs_before}"
        csteps = ordered(control)
        ci = find(csteps, rname, rocc)
        assert comparable(csteps[ci].output) != comparable(root.output), f"{cid}: root output same as control's"
        # every step that ended before the root started answered as in the control run: the root is where they part
        seen: dict[str, int] = {}
        for s in steps[:ri]:
            seen[s.name] = seen.get(s.name, 0) + 1
            if s.end_ns is None or s.end_ns > root.start_ns:
                continue
            twin = find(csteps, s.name, seen[s.name])
            assert comparable(csteps[twin].output) == comparable(s.output), (
                f"{cid}: {s.name}#{seen[s.name]} before the root differs from the control run")
        m = _common.BANNED.search(case["description"] + " " + case["what"])
        assert m is None, f"{cid}: description holds {m.group(0)!r}"
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fp, d / f"failed.{ext}")
        shutil.copyfile(passing[i], d / f"control.{ext}")
        merge(mod.ROUTE, [fp] + [p for j, p in enumerate(passing) if j != i], d / f"with_refs.{ext}")
        refs = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, f"{cid}: with_refs"
        assert sum(r.outcome == "success" for r in refs) == 4, f"{cid}: with_refs successes"
        assert {r.name for r in refs} == {mod.NAME}, f"{cid}: run names {sorted({r.name for r in refs})}"
        truth = {
            "case": cid, "agent": mod.NAME, "route": mod.ROUTE, "fault_kind": case["kind"],
            "root": {"name": rname, "occurrence": rocc, "kind": rkind},
            "failure": {"name": fname, "occurrence": focc},
            "hops": fi - ri, "description": case["description"],
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    unknown = [n for n in names if n not in AGENTS]
    if unknown:
        print(f"unknown agents: {unknown}")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="suite_zzzzs65_", dir="/tmp"))
    ids: list[str] = []
    try:
        mods = [importlib.import_module(n) for n in names]
        otlp = [m for m in mods if m.ROUTE == "otlp"]
        with FakeModelServer(lambda request: "ready") as server:
            _common.BASE_URL = server.base_url
            for mod in [m for m in mods if m.ROUTE != "otlp"]:
                server.use(mod.brain)
                ids += build_agent(mod, out, tmp)
            if otlp:
                from openinference.instrumentation.openai import OpenAIInstrumentor

                OpenAIInstrumentor().instrument(tracer_provider=_common.otlp_provider())
                try:
                    for mod in otlp:
                        server.use(mod.brain)
                        ids += build_agent(mod, out, tmp)
                finally:
                    OpenAIInstrumentor().uninstrument()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    order = {n: k for k, n in enumerate(AGENTS)}
    ids.sort(key=lambda c: (order[c.rsplit("-", 1)[0].replace("-", "_")], c))
    index = out / "index.json"
    old = json.loads(index.read_text())["cases"] if index.exists() else []
    allids = sorted(set(old) | set(ids), key=lambda c: (order.get(c.rsplit("-", 1)[0].replace("-", "_"), 99), c))
    index.write_text(json.dumps({"cases": allids}, indent=2) + "\n")
    if os.environ.get("SUITE_TIMINGS"):
        print(TIMINGS)
    print(f"{len(ids)} cases in {time.monotonic() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
