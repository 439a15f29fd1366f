"""Generate the held-out cases of suite_zzzr.

    python benchmarks/heldout/suite_zzzr/generate.py OUT [agent-module ...]

Every agent module in this folder exposes NAME, ROUTE, DOMAIN, SHAPE, INPUTS (5),
CASES (5), a module-level SWITCH, policy(request) for the fake model and
record(server, given, path) that records one run of the agent to `path`.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
SRC = HERE.parents[2] / "src"
if SRC.is_dir() and str(SRC) not in sys.path:
    sys.path.insert(0, str(SRC))

os.environ.setdefault("OPENAI_API_KEY", "not-needed")
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = [
    "maltster_contracts",
    "hatter_fittings",
    "cartwright_wheels",
    "fletcher_batches",
    "bowyer_commissions",
    "plasterer_jobs",
    "typefoundry_castings",
    "coppersmith_orders",
]
KINDS = {
    "wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
    "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
    "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write",
}
FORBIDDEN = re.compile(
    r"\b(faults?|faulty|bugs?|buggy|wrong\w*|stale\w*|inject\w*|corrupt\w*|planted)\b", re.IGNORECASE
)


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load_one(path: Path):
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def join(paths: list[Path], out: Path, route: str) -> None:
    if route == "otlp":
        spans: list = []
        for p in paths:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def ordered(run):
    return sorted(run.steps, key=lambda s: (s.start_ns if getattr(s, "start_ns", None) is not None else 0))


def find(steps, name, occurrence):
    same = [i for i, s in enumerate(steps) if s.name == name]
    assert len(same) >= occurrence, f"step {name!r} #{occurrence} not found ({len(same)} of that name)"
    return same[occurrence - 1]


def clean_check(path: Path) -> None:
    text = path.read_text()
    hit = FORBIDDEN.search(text)
    assert hit is None, f"{path}: holds the word {hit.group(0)!r}"


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    wanted = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="suite_zzzr_"))
    index: list[str] = []
    try:
        with FakeModelServer(lambda request: "") as server:
            for modname in wanted:
                mod = importlib.import_module(modname)
                index.extend(build_agent(mod, server, out, work))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": index}, indent=1))
    print(f"{len(index)} cases written to {out}")
    return 0


def build_agent(mod, server, out: Path, work: Path) -> list[str]:
    ext = ext_of(mod.ROUTE)
    assert len(mod.INPUTS) == 5 and len(mod.CASES) == 5
    server.use(mod.policy)
    passing: list[Path] = []
    for i, given in enumerate(mod.INPUTS):
        mod.SWITCH = None
        p = work / f"{mod.NAME}-pass{i}.{ext}"
        mod.record(server, given, p)
        run = load_one(p)
        assert run.outcome == "success", f"{mod.NAME} input {i}: {run.outcome} {run.metadata.get('failure')}"
        assert run.name == mod.NAME, run.name
        passing.append(p)
    ids = []
    for case in mod.CASES:
        cid = case["id"]
        assert case["kind"] in KINDS, case["kind"]
        d = out / cid
        d.mkdir(parents=True, exist_ok=True)
        failed = d / f"failed.{ext}"
        if failed.exists():
            failed.unlink()
        mod.SWITCH = case["switch"]
        try:
            mod.record(server, mod.INPUTS[case["input"]], failed)
        finally:
            mod.SWITCH = None
        shutil.copyfile(passing[case["input"]], d / f"control.{ext}")
        join([failed] + [p for j, p in enumerate(passing) if j != case["input"]], d / f"with_refs.{ext}", mod.ROUTE)
        run = load_one(failed)
        control = load_one(d / f"control.{ext}")
        assert run.outcome == "failure", f"{cid}: failed run ended {run.outcome}"
        assert control.outcome == "success", f"{cid}: control ended {control.outcome}"
        refs = trajdebug.load_runs(str(d / f"with_refs.{ext}"))
        assert len(refs) == 5, f"{cid}: with_refs holds {len(refs)} runs"
        assert sum(r.outcome == "failure" for r in refs) == 1, f"{cid}: with_refs failures"
        assert sum(r.outcome == "success" for r in refs) == 4, f"{cid}: with_refs successes"
        steps = ordered(run)
        ri = find(steps, *case["root"])
        fi = find(steps, *case["failure"])
        root, fail = steps[ri], steps[fi]
        assert root.status == "ok", f"{cid}: root {root.name} status {root.status}"
        assert fail.status == "error", f"{cid}: failure step {fail.name} status {fail.status}"
        assert fi > ri, f"{cid}: failure {fail.name} at {fi} does not start after root at {ri}"
        for f in (failed, d / f"control.{ext}", d / f"with_refs.{ext}"):
            clean_check(f)
            assert cid not in f.read_text(), f"{cid}: case id in recorded data"
        assert FORBIDDEN.search(case["desc"]) is None, f"{cid}: description word"
        truth = {
            "case": cid,
            "agent": mod.NAME,
            "route": mod.ROUTE,
            "fault_kind": case["kind"],
            "root": {"name": case["root"][0], "occurrence": case["root"][1], "kind": root.kind},
            "failure": {"name": case["failure"][0], "occurrence": case["failure"][1]},
            "hops": fi - ri,
            "description": case["desc"],
        }
        (d / "truth.json").write_text(json.dumps(truth, indent=1))
        print(f"{cid:34s} {mod.ROUTE:13s} {case['kind']:22s} {root.name}#{case['root'][1]}({root.kind}) -> "
              f"{fail.name}#{case['failure'][1]} hops={fi - ri} steps={len(steps)}")
        ids.append(cid)
    return ids


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
