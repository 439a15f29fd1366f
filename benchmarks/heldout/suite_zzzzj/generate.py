"""Generate suite_zzzzj: 8 agents x 5 cases of failing runs, each with its control and passing references.

Usage: python generate.py OUT [agent ...]   (agent = module name, e.g. driving_school)
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

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from zzzzj_agents import common  # noqa: E402

AGENTS = [
    "driving_school",
    "nursery_funding",
    "exam_access",
    "flight_school",
    "language_placement",
    "apprenticeship_gateway",
    "music_exams",
    "school_trip",
]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
BANNED = re.compile(r"\b(faults?|bugs?|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.IGNORECASE)


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns or 0, s.source_index if s.source_index is not None else 0))


def find(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name} #{occurrence} not found (have {len(hits)})"
    return hits[occurrence - 1]


def check_clean(text: str, where: str) -> None:
    m = BANNED.search(text)
    assert m is None, f"{where}: recorded data holds the word {m.group(0)!r}: ...{text[max(0, m.start() - 80):m.end() + 80]}..."


def merge(route: str, paths: list[Path], out: Path) -> None:
    if route == "otlp":
        spans = []
        for p in paths:
            spans += json.loads(p.read_text())["resourceSpans"]
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def record(mod, inp, path: Path, switch) -> None:
    mod.SWITCH = switch
    try:
        mod.record(inp, str(path))
    except Exception:  # noqa: BLE001 - a failing run raises out of the agent; the trace says so
        pass
    finally:
        mod.SWITCH = None
    assert path.exists(), f"{mod.NAME}: nothing written to {path}"


def build_agent(name: str, out: Path, tmp: Path) -> list[str]:
    mod = importlib.import_module(f"zzzzj_agents.{name}")
    ext = EXT[mod.ROUTE]
    work = tmp / name
    work.mkdir(parents=True)
    common.SERVER.use(mod.brain)
    if hasattr(mod, "setup"):
        mod.setup()
    passing = []
    for i, inp in enumerate(mod.INPUTS):
        p = work / f"pass{i}.{ext}"
        record(mod, inp, p, None)
        passing.append(p)
    ids = []
    assert len(mod.CASES) == 5 and len(mod.INPUTS) == 5
    assert sorted(c["input"] for c in mod.CASES) == [0, 1, 2, 3, 4]
    for case in mod.CASES:
        cid = f"zzzzj_{case['id']}"
        cdir = out / cid
        cdir.mkdir(parents=True)
        fail = work / f"{case['id']}.{ext}"
        record(mod, mod.INPUTS[case["input"]], fail, case["id"])
        shutil.copyfile(fail, cdir / f"failed.{ext}")
        shutil.copyfile(passing[case["input"]], cdir / f"control.{ext}")
        refs = [fail] + [p for j, p in enumerate(passing) if j != case["input"]]
        merge(mod.ROUTE, refs, cdir / f"with_refs.{ext}")
        truth = verify(mod, case, cid, cdir, ext)
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(cid)
    if hasattr(mod, "teardown"):
        mod.teardown()
    return ids


def verify(mod, case, cid, cdir: Path, ext: str) -> dict:
    assert case["fault_kind"] in KINDS, case
    [failed] = trajdebug.load_runs(cdir / f"failed.{ext}")
    [control] = trajdebug.load_runs(cdir / f"control.{ext}")
    refs = trajdebug.load_runs(cdir / f"with_refs.{ext}")
    assert failed.outcome == "failure", (cid, failed.outcome)
    assert control.outcome == "success", (cid, control.outcome, control.failure_reason)
    assert failed.name == control.name == mod.NAME, (cid, failed.name, control.name)
    assert len(refs) == 5 and [r.outcome for r in refs].count("failure") == 1, (cid, [r.outcome for r in refs])
    assert {r.name for r in refs} == {mod.NAME}
    steps = ordered(failed)
    rname, rocc = case["root"]
    fname, focc = case["failure"]
    ri, fi = find(steps, rname, rocc), find(steps, fname, focc)
    root, failure = steps[ri], steps[fi]
    assert root.status == "ok", (cid, rname, root.status)
    assert failure.status == "error", (cid, fname, failure.status)
    assert ri < fi, (cid, ri, fi)
    # the failing step is where the error started: no step inside it failed
    inner = [s for s in steps if s.parent_id == failure.step_id and s.status == "error"]
    assert not inner, (cid, [s.name for s in inner])
    # no step before the failing one ended in error (the run went as in the control until then)
    earlier = [s.name for s in steps[:fi] if s.status == "error" and s.step_id != failure.parent_id
               and not _encloses(steps, s, failure)]
    assert not earlier, (cid, earlier)
    csteps = ordered(control)
    ci = find(csteps, rname, rocc)
    assert json.dumps(csteps[ci].output, sort_keys=True, default=str) != json.dumps(root.output, sort_keys=True,
                                                                                    default=str), (cid, "root output same as control")
    for f in ("failed", "control", "with_refs"):
        check_clean((cdir / f"{f}.{ext}").read_text(), f"{cid}/{f}")
    check_clean(case["description"], f"{cid}/description")
    return {
        "case": cid,
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": case["fault_kind"],
        "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
        "failure": {"name": fname, "occurrence": focc},
        "hops": fi - ri,
        "description": case["description"],
    }


def _encloses(steps, outer, inner) -> bool:
    by_id = {s.step_id: s for s in steps}
    cur = inner
    while cur is not None and cur.parent_id:
        if cur.parent_id == outer.step_id:
            return True
        cur = by_id.get(cur.parent_id)
    return False


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="zzzzj63_gen_"))
    ids: list[str] = []
    try:
        with FakeModelServer(lambda request: "ready") as server:
            common.SERVER = server
            for name in names:
                t0 = time.monotonic()
                got = build_agent(name, out, tmp)
                ids += got
                print(f"{name}: {len(got)} cases in {time.monotonic() - t0:.1f} s", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.monotonic() - started:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
