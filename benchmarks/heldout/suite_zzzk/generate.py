"""Generate the held-out suite zzzk: 8 agents x 5 cases of failing runs, with controls and references.

Usage (from the worktree root, or as a plain script path):
    python benchmarks/heldout/suite_zzzk/generate.py OUT [agent-module ...]

Agent modules live in shops/ beside this file (luge, abseil, zorb, marimba, kazoo, inkwell, yodel, iceberg).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[2] / "src"
if SRC.is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

ORDER = ["luge", "abseil", "zorb", "marimba", "kazoo", "inkwell", "yodel", "iceberg"]
EXT = {"sdk": "jsonl", "langgraph": "jsonl", "openai_agents": "jsonl", "otlp": "json"}
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(r"(?i)(?<![a-z])(fault|bug|wrong|stale|inject|corrupt|planted)")


def load_module(name: str):
    path = HERE / "shops" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"zzzk_shop_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def nth(steps, name, occurrence):
    hits = [i for i, s in enumerate(steps) if s.name == name]
    assert len(hits) >= occurrence, f"step {name!r} #{occurrence} not found (have {len(hits)})"
    return hits[occurrence - 1]


def combine(route: str, files: list[Path], dest: Path) -> None:
    if route == "otlp":
        spans = []
        for f in files:
            spans.extend(json.loads(f.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(f.read_text() for f in files))


def one_run(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def record(mod, inp, path: Path, server) -> None:
    if path.exists():
        path.unlink()
    mod.record(inp, str(path), server)
    trajdebug.flush()


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or ORDER
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    cases_all: list[str] = []
    with FakeModelServer(lambda request: "idle") as server:
        for name in names:
            mod = load_module(name)
            assert mod.ROUTE in EXT and len(mod.INPUTS) == 5 and len(mod.CASES) == 5
            ext = EXT[mod.ROUTE]
            server.use(mod.policy)
            work = out / f"_refs_{name}"
            work.mkdir(exist_ok=True)
            refs: list[Path] = []
            mod.SWITCH = None
            for i, inp in enumerate(mod.INPUTS):
                p = work / f"ref{i}.{ext}"
                record(mod, inp, p, server)
                run = one_run(p)
                assert run.outcome == "success", f"{name} input {i}: {run.outcome}"
                assert run.name == mod.NAME, (run.name, mod.NAME)
                refs.append(p)
            for case in mod.CASES:
                cid = case["id"]
                assert case["kind"] in KINDS, case["kind"]
                cdir = out / cid
                if cdir.exists():
                    shutil.rmtree(cdir)
                cdir.mkdir()
                failed = cdir / f"failed.{ext}"
                mod.SWITCH = case["switch"]
                try:
                    record(mod, mod.INPUTS[case["input"]], failed, server)
                finally:
                    mod.SWITCH = None
                shutil.copyfile(refs[case["input"]], cdir / f"control.{ext}")
                others = [refs[j] for j in range(5) if j != case["input"]]
                combine(mod.ROUTE, [failed, *others], cdir / f"with_refs.{ext}")

                run = one_run(failed)
                assert run.outcome == "failure", f"{cid}: failed run is {run.outcome}"
                assert run.name == mod.NAME
                control = one_run(cdir / f"control.{ext}")
                assert control.outcome == "success"
                both = trajdebug.load_runs(str(cdir / f"with_refs.{ext}"))
                assert len(both) == 5, f"{cid}: with_refs holds {len(both)} runs"
                assert sorted(r.outcome for r in both) == ["failure"] + ["success"] * 4, [r.outcome for r in both]
                steps = ordered(run)
                rname, rocc = case["root"]
                fname, focc = case["failure"]
                ri, fi = nth(steps, rname, rocc), nth(steps, fname, focc)
                root, fail = steps[ri], steps[fi]
                assert root.status == "ok", f"{cid}: root {rname}#{rocc} is {root.status}"
                assert fail.status == "error", f"{cid}: failure {fname}#{focc} is {fail.status}"
                assert fi > ri and fail.start_ns >= root.start_ns, f"{cid}: failure does not start after the root"
                csteps = ordered(control)
                twin = csteps[nth(csteps, rname, rocc)]
                if json.dumps(twin.output, sort_keys=True, default=str) == json.dumps(root.output, sort_keys=True, default=str):
                    print(f"  note {cid}: root output equals the control's", file=sys.stderr)
                if case.get("root_kind"):
                    assert root.kind == case["root_kind"], f"{cid}: root kind {root.kind}"
                truth = {
                    "case": cid,
                    "agent": mod.NAME,
                    "route": mod.ROUTE,
                    "fault_kind": case["kind"],
                    "root": {"name": rname, "occurrence": rocc, "kind": root.kind},
                    "failure": {"name": fname, "occurrence": focc},
                    "hops": fi - ri,
                    "description": case["description"],
                }
                assert not FORBIDDEN.search(case["description"]), f"{cid}: description words"
                (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                for f in (failed, cdir / f"control.{ext}", cdir / f"with_refs.{ext}"):
                    text = f.read_text()
                    m = FORBIDDEN.search(text)
                    assert not m, f"{cid}: {f.name} holds {text[max(0, m.start() - 60):m.end() + 60]!r}"
                    for c in mod.CASES:
                        assert c["id"] not in text and c["switch"] not in text, f"{cid}: {f.name} names {c['id']}"
                cases_all.append(cid)
                print(f"{cid}: {case['kind']} root {rname}#{rocc} ({root.kind}) -> {fname}#{focc}, hops {fi - ri}")
            shutil.rmtree(work)
    index = out / "index.json"
    prior = json.loads(index.read_text())["cases"] if index.exists() and argv[1:] else []
    merged = prior + [c for c in cases_all if c not in prior]
    index.write_text(json.dumps({"cases": merged}, indent=2) + "\n")
    print(f"{len(cases_all)} cases in {time.time() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
