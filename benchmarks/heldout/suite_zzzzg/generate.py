"""Generate suite_zzzzg: 8 agents x 5 failing cases, recorded through four routes.

    python benchmarks/heldout/suite_zzzzg/generate.py OUT [agent ...]

For every agent: each of its 5 inputs is run once with no switch on (these passing runs are the
controls and the references), then each case runs its input once with its switch on (the failed run).
Each case folder gets failed.<ext>, control.<ext>, with_refs.<ext> (the failed run and the agent's four
other inputs' passing runs) and truth.json; OUT/index.json lists the cases.  Every case is checked as
it is written (loaded back with trajdebug.load_runs).
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
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(HERE))

from zg_agents.common import BANNED  # noqa: E402

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402


AGENTS = [
    "escape_room",
    "linen_route",
    "aid_stations",
    "campsite",
    "kennel",
    "esports",
    "pool_lanes",
    "ice_rink",
]
ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
KINDS = (
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
)


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def ordered(run):
    """The run's steps in start order (stable for equal starts)."""
    return sorted(run.steps, key=lambda s: s.start_ns)


def find(steps, name: str, occurrence: int):
    hits = [(i, s) for i, s in enumerate(steps) if s.name == name]
    if len(hits) < occurrence:
        raise AssertionError(f"step {name!r} #{occurrence} not found ({len(hits)} of that name)")
    return hits[occurrence - 1]


def banned_words(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8").lower().replace("trajdebug", "")
    return [w for w in BANNED if w in text]


def load_one(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def combine(route: str, parts: list[Path], dest: Path) -> None:
    if route == "otlp":
        spans: list = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(p.read_text() for p in parts))


def record_to(module, inp: dict, path: Path, server) -> None:
    if path.exists():
        path.unlink()
    module.record(inp, str(path), server)


def generate_agent(name: str, out: Path, work: Path, server) -> list[str]:
    module = importlib.import_module(f"zg_agents.{name}")
    route = module.ROUTE
    ext = ext_of(route)
    assert route in ROUTES and len(module.INPUTS) == 5 and len(module.CASES) == 5
    assert sorted(c["input"] for c in module.CASES) == [0, 1, 2, 3, 4]
    server.use(module.brain)
    passing: list[Path] = []
    module.SWITCH = None
    for i, inp in enumerate(module.INPUTS):
        p = work / f"{name}.pass{i}.{ext}"
        record_to(module, inp, p, server)
        run = load_one(p)
        assert run.outcome == "success", f"{name} input {i}: {run.outcome} {run.failure_reason}"
        assert run.name == module.NAME, (run.name, module.NAME)
        n = len(run.steps)
        assert 10 <= n <= 60, f"{name} input {i}: {n} steps"
        passing.append(p)
    ids = []
    for case in module.CASES:
        cid = case["id"]
        i = case["input"]
        failed = work / f"{cid}.failed.{ext}"
        module.SWITCH = case["switch"]
        try:
            record_to(module, module.INPUTS[i], failed, server)
        finally:
            module.SWITCH = None
        run = load_one(failed)
        assert run.outcome == "failure", f"{cid}: failed run is {run.outcome}"
        assert 10 <= len(run.steps) <= 60, f"{cid}: {len(run.steps)} steps"
        steps = ordered(run)
        ri, root = find(steps, *case["root"])
        fi, fail = find(steps, *case["failure"])
        assert root.status == "ok", f"{cid}: root {case['root']} is {root.status}"
        assert fail.status == "error", f"{cid}: failure {case['failure']} is {fail.status}"
        assert ri < fi, f"{cid}: root at {ri}, failure at {fi}"
        control = load_one(passing[i])
        assert control.outcome == "success"
        csteps = ordered(control)
        _, croot = find(csteps, *case["root"])
        assert json.dumps(croot.output, sort_keys=True, default=str) != json.dumps(root.output, sort_keys=True, default=str), (
            f"{cid}: root {case['root']} answered as in the control run")
        assert case["kind"] in KINDS
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(failed, d / f"failed.{ext}")
        shutil.copyfile(passing[i], d / f"control.{ext}")
        combine(route, [failed] + [p for j, p in enumerate(passing) if j != i], d / f"with_refs.{ext}")
        refs = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(refs) == 5, f"{cid}: with_refs holds {len(refs)} runs"
        assert sorted(r.outcome for r in refs) == ["failure"] + ["success"] * 4, [r.outcome for r in refs]
        assert {r.name for r in refs} == {module.NAME}
        assert load_one(d / f"failed.{ext}").outcome == "failure"
        assert load_one(d / f"control.{ext}").outcome == "success"
        truth = {
            "case": cid,
            "agent": module.NAME,
            "route": route,
            "fault_kind": case["kind"],
            "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
            "failure": {"name": fail.name, "occurrence": case["failure"][1]},
            "hops": fi - ri,
            "description": case["description"],
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        for f in d.iterdir():
            if f.name != "truth.json":
                bad = banned_words(f)
                assert not bad, f"{cid}: {f.name} holds {bad}"
        bad = [w for w in BANNED if w in (case["description"] + root.name + fail.name).lower()]
        assert not bad, f"{cid}: the description holds {bad}"
        ids.append(cid)
    return ids


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = Path(argv[1]).resolve()
    names = argv[2:] or AGENTS
    unknown = [n for n in names if n not in AGENTS]
    if unknown:
        print(f"unknown agents: {unknown}; choose from {AGENTS}")
        return 2
    out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    ids: list[str] = []
    with tempfile.TemporaryDirectory(prefix="suite_zzzzg.") as tmp:
        os.chdir(tmp)  # nothing lands in the caller's folder (a default store, a ledger)
        with FakeModelServer(lambda request: "") as server:
            for name in names:
                t = time.time()
                ids.extend(generate_agent(name, out, Path(tmp), server))
                print(f"{name}: 5 cases in {time.time() - t:.1f} s", flush=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    print(f"{len(ids)} cases in {time.time() - start:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
