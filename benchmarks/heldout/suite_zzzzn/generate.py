"""Generate suite_zzzzn: 8 agents x 5 cases of failing runs in ports, shipping, aviation ground handling and
warehousing, each with its control run, its references and its truth.

    python generate.py OUT [agent ...]

`agent` is a run name (`reefer-yard-monitor`) or a module name (`reefer_yard`); none means all eight.
Writes OUT/<case>/failed.<ext>, control.<ext>, with_refs.<ext>, truth.json and OUT/index.json (the cases
written). `ext` is jsonl for the sdk, langgraph and openai_agents routes and json (one OTLP document) for otlp.
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
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
for p in (str(SRC), str(HERE)):
    if p not in sys.path:
        sys.path.insert(0, p)

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

from operations import MODULES  # noqa: E402

ROUTES = ("sdk", "langgraph", "openai_agents", "otlp")
KINDS = (
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
)
BANNED = re.compile(r"\b(fault\w*|bugs?|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.IGNORECASE)


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


# ----------------------------------------------------------------------------------------------- files


def combine(paths: list[Path], out: Path, route: str) -> None:
    if route == "otlp":
        doc: dict[str, Any] = {"resourceSpans": []}
        for p in paths:
            doc["resourceSpans"].extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps(doc))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def load(path: Path) -> list[Any]:
    return list(trajdebug.load_runs(str(path)))


# ----------------------------------------------------------------------------------------------- checks


def ordered(run: Any) -> list[Any]:
    """The run's steps in start order (stable for equal start times)."""
    return sorted(run.steps, key=lambda s: (s.start_ns or 0))


def recorded_text(run: Any) -> str:
    parts: list[Any] = [run.name, run.metadata.get("task"), run.failure_reason]
    for s in run.steps:
        err = s.error
        parts += [s.name, s.agent, s.input, s.output, err.type if err else None, err.message if err else None]
    return json.dumps(parts, default=str)


def find_root(steps: list[Any], spec: dict[str, Any]) -> tuple[int, int]:
    """(index in start order, 1-based occurrence among steps of that name) of the root a case names."""
    named = [(i, s) for i, s in enumerate(steps) if s.name == spec["name"]]
    if "occurrence" in spec:
        i, _ = named[spec["occurrence"] - 1]
        return i, spec["occurrence"]
    hits = [(i, n) for n, (i, s) in enumerate(named, 1) if spec["match"] in json.dumps(s.input, default=str)]
    if len(hits) > spec.get("nth", 0):
        return hits[spec.get("nth", 0)]
    raise AssertionError(f"no step {spec['name']} whose input holds {spec['match']!r}")


def find_failure(steps: list[Any], name: str) -> tuple[int, int]:
    named = [(i, s) for i, s in enumerate(steps) if s.name == name]
    hits = [(i, n) for n, (i, s) in enumerate(named, 1) if s.status == "error"]
    assert hits, f"no step {name} with an error"
    return hits[-1]


def check_case(mod: Any, case: dict[str, Any], case_dir: Path, ext: str) -> dict[str, Any]:
    [failed] = load(case_dir / f"failed.{ext}")
    [control] = load(case_dir / f"control.{ext}")
    refs = load(case_dir / f"with_refs.{ext}")
    cid = case["id"]
    assert failed.name == mod.NAME == control.name, (cid, failed.name, control.name)
    assert failed.outcome == "failure", (cid, failed.outcome)
    assert control.outcome == "success", (cid, control.outcome, control.failure_reason)
    assert len(refs) == 5 and sum(r.outcome == "failure" for r in refs) == 1, (cid, [r.outcome for r in refs])
    assert all(r.name == mod.NAME for r in refs), cid
    assert failed.metadata.get("task") == control.metadata.get("task") == mod.INPUTS[case["input"]]["task"], cid
    tasks = sorted(str(r.metadata.get("task")) for r in refs)
    assert len(set(tasks)) == 5, (cid, tasks)
    steps = ordered(failed)
    ri, occ = find_root(steps, case["root"])
    fi, focc = find_failure(steps, case["failure"])
    root, fail = steps[ri], steps[fi]
    assert root.status == "ok", (cid, root.name, root.status)
    assert fail.status == "error", (cid, fail.name)
    assert ri < fi, (cid, ri, fi)
    assert root.kind == case["root_kind"], (cid, root.name, root.kind, case["root_kind"])
    # the root is where the failed run leaves its control: the same step of the control run answered otherwise
    csteps = ordered(control)
    twin = [s for s in csteps if s.name == root.name][occ - 1]
    assert json.dumps(twin.output, sort_keys=True, default=str) != json.dumps(root.output, sort_keys=True,
                                                                               default=str), (cid, "root twin")
    assert not any(s.status == "error" and s.name == fail.name for s in csteps), (cid, "control fails there too")
    for run in (failed, control, *refs):
        assert 10 <= len(run.steps) <= 60, (cid, run.metadata.get("task"), len(run.steps))
        hit = BANNED.search(recorded_text(run))
        assert not hit, (cid, hit.group(0))
    assert not BANNED.search(case["description"]), cid
    return {
        "case": cid,
        "agent": mod.NAME,
        "route": mod.ROUTE,
        "fault_kind": case["fault_kind"],
        "root": {"name": root.name, "occurrence": occ, "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": focc},
        "hops": fi - ri,
        "description": case["description"],
    }


# ----------------------------------------------------------------------------------------------- driver


def run_agent(mod: Any, server: FakeModelServer, tmp: Path, out: Path) -> list[str]:
    ext = ext_of(mod.ROUTE)
    assert mod.ROUTE in ROUTES and len(mod.INPUTS) == 5 and len(mod.CASES) == 5, mod.NAME
    passing: list[Path] = []
    try:
        for i, inp in enumerate(mod.INPUTS):
            mod.SWITCH = None
            server.use(mod.brain)
            path = tmp / f"{mod.NAME}.pass{i}.{ext}"
            mod.record(inp, str(path), server)
            passing.append(path)
        return run_cases(mod, server, tmp, out, passing)
    finally:
        if hasattr(mod, "close"):
            mod.close()


def run_cases(mod: Any, server: FakeModelServer, tmp: Path, out: Path, passing: list[Path]) -> list[str]:
    ext = ext_of(mod.ROUTE)
    ids = []
    for case in mod.CASES:
        assert case["fault_kind"] in KINDS, case["id"]
        path = tmp / f"{case['id']}.failed.{ext}"
        mod.SWITCH = case["switch"]
        server.use(mod.brain)
        try:
            mod.record(mod.INPUTS[case["input"]], str(path), server)
        finally:
            mod.SWITCH = None
        case_dir = out / case["id"]
        if case_dir.exists():
            shutil.rmtree(case_dir)
        case_dir.mkdir(parents=True)
        shutil.copyfile(path, case_dir / f"failed.{ext}")
        shutil.copyfile(passing[case["input"]], case_dir / f"control.{ext}")
        others = [p for j, p in enumerate(passing) if j != case["input"]]
        combine([path, *others], case_dir / f"with_refs.{ext}", mod.ROUTE)
        truth = check_case(mod, case, case_dir, ext)
        (case_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        ids.append(case["id"])
    return ids


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0]).resolve()
    wanted = set(argv[1:])
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    # module names alone import only those modules; a run name imports every module to find it
    names = [m for m in MODULES if not wanted or m in wanted or wanted - set(MODULES)]
    mods = [importlib.import_module(f"operations.{m}") for m in names]
    if wanted:
        mods = [m for m in mods if m.NAME in wanted or m.__name__.rsplit(".", 1)[1] in wanted]
        assert mods, f"no agent named {sorted(wanted)}"
    ids: list[str] = []
    truths: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="suite_zzzzn64_", dir="/tmp") as tmp, FakeModelServer(lambda request: "idle") as server:
        for mod in mods:
            t0 = time.monotonic()
            got = run_agent(mod, server, Path(tmp), out)
            ids += got
            truths += [json.loads((out / c / "truth.json").read_text()) for c in got]
            print(f"{mod.NAME:28s} {mod.ROUTE:14s} {len(got)} cases  {time.monotonic() - t0:5.1f} s", flush=True)
    (out / "index.json").write_text(json.dumps({"cases": ids}, indent=2) + "\n")
    if not wanted:
        assert len(ids) == 40 and len(set(ids)) == 40
        kinds = [t["fault_kind"] for t in truths]
        assert all(2 <= kinds.count(k) <= 4 for k in KINDS), {k: kinds.count(k) for k in KINDS}
        routes = [t["route"] for t in truths]
        assert all(routes.count(r) == 10 for r in ROUTES), routes
    print(f"{len(ids)} cases in {time.monotonic() - started:.1f} s -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
