"""Generate the held-out suite: ``python benchmarks/heldout/suite_zzp/generate.py OUT [agent-module ...]``.

Per case: OUT/<case>/failed.<ext> (fault switch on), control.<ext> (same input, switch off),
with_refs.<ext> (the failed run plus four passing runs of the same agent on other inputs) and truth.json;
OUT/index.json lists the cases.  No network: one FakeModelServer on 127.0.0.1, scripted per run.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # the suite's modules import each other by plain name

import kit  # noqa: E402
from common import forbidden_words, otel_shutdown  # noqa: E402

import trajdebug  # noqa: E402
from trajdebug.testing import FakeModelServer  # noqa: E402

AGENTS = ["llama_walks", "gin_batches", "canal_hire", "yurt_stays",
          "climb_wall", "courier_dispatch", "balloon_flights", "glass_commissions"]
KINDS = {"wrong_retrieval", "unit_error", "truncated_result", "swallowed_error", "stale_data", "off_by_one",
         "lossy_parsing", "context_pollution", "wrong_tool_args", "wrong_routing", "tool_ignores_argument",
         "subagent_wrong_entity", "plan_error", "hallucinated_value", "format_drift", "bad_memory_write"}


def ext_of(route: str) -> str:
    return "json" if route == "otlp" else "jsonl"


def load(path: Path, route: str):
    return trajdebug.load_runs(str(path), fmt="otlp") if route == "otlp" else trajdebug.load_runs(str(path))


def ordered(run):
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns or 0, p[0]))]


def find(steps, name: str, occurrence: int):
    same = [(i, s) for i, s in enumerate(steps) if s.name == name]
    assert len(same) >= occurrence, f"no occurrence {occurrence} of step {name!r} ({len(same)} found)"
    return same[occurrence - 1]


def join(paths: list[Path], out: Path, route: str) -> None:
    if route == "otlp":
        spans = []
        for p in paths:
            spans += json.loads(p.read_text())["resourceSpans"]
        out.write_text(json.dumps({"resourceSpans": spans}))
    else:
        out.write_text("".join(p.read_text() for p in paths))


def record(mod, server, inp, path: Path) -> None:
    if path.exists():
        path.unlink()
    mod.record(server, inp, str(path))
    assert path.exists(), f"{mod.NAME}: nothing recorded at {path}"


def one_run(path: Path, route: str):
    runs = load(path, route)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    names = argv[1:] or AGENTS
    out.mkdir(parents=True, exist_ok=True)
    logging.getLogger("trajdebug").setLevel(logging.ERROR)
    t0 = time.monotonic()
    cases: list[str] = []
    work = Path(tempfile.mkdtemp(prefix="suite_zzp_"))
    try:
        with FakeModelServer() as server:
            for name in names:
                mod = importlib.import_module(name)
                ext = ext_of(mod.ROUTE)
                kit.activate(None)
                passing = []
                for i, inp in enumerate(mod.INPUTS):
                    p = work / f"{name}_pass_{i}.{ext}"
                    record(mod, server, inp, p)
                    run = one_run(p, mod.ROUTE)
                    assert run.outcome == "success", f"{name} input {i}: {run.outcome} {run.failure_reason}"
                    passing.append(p)
                for case in mod.CASES:
                    cid = case["case"]
                    assert case["kind"] in KINDS, cid
                    d = out / cid
                    d.mkdir(parents=True, exist_ok=True)
                    failed = d / f"failed.{ext}"
                    kit.activate(cid)
                    try:
                        record(mod, server, mod.INPUTS[case["input"]], failed)
                    finally:
                        kit.activate(None)
                    shutil.copyfile(passing[case["input"]], d / f"control.{ext}")
                    refs = [p for i, p in enumerate(passing) if i != case["input"]]
                    join([failed, *refs], d / f"with_refs.{ext}", mod.ROUTE)
                    truth = check_case(mod, case, d, ext)
                    cases.append(cid)
                    print(f"{cid:22s} {case['kind']:22s} hops={truth['hops']:3d} steps={truth['_steps']} "
                          f"{truth['root']['name']}#{truth['root']['occurrence']}({truth['root']['kind']}) "
                          f"-> {truth['failure']['name']}: {truth.pop('_reason')}"
                          if os.environ.get("SUITE_VERBOSE") else cid, flush=True)
                    truth.pop("_steps"), truth.pop("_reason", None)
                    (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
    finally:
        otel_shutdown()
        shutil.rmtree(work, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"cases": cases}, indent=2) + "\n")
    for p in sorted(out.rglob("*")):
        if p.is_file() and p.stem in ("failed", "control", "with_refs"):  # the recorded text
            bad = forbidden_words(p.read_text(errors="replace"))
            assert not bad, f"{p}: forbidden words {bad}"
    print(f"{len(cases)} cases in {time.monotonic() - t0:.1f} s -> {out}")
    return 0


def check_case(mod, case, d: Path, ext: str) -> dict:
    cid, route = case["case"], mod.ROUTE
    failed = one_run(d / f"failed.{ext}", route)
    assert failed.outcome == "failure", f"{cid}: failed run is {failed.outcome}"
    control = one_run(d / f"control.{ext}", route)
    assert control.outcome == "success", f"{cid}: control is {control.outcome}"
    both = load(d / f"with_refs.{ext}", route)
    assert len(both) == 5 and sum(r.outcome == "failure" for r in both) == 1, f"{cid}: with_refs"
    assert all(r.name == mod.NAME for r in both), f"{cid}: run names {[r.name for r in both]}"
    steps = ordered(failed)
    ri, root = find(steps, *case["root"])
    fi, fail = find(steps, *case["failure"])
    assert root.status == "ok", f"{cid}: root {root.name} status {root.status}"
    assert fail.status == "error", f"{cid}: failure step {fail.name} status {fail.status}"
    assert fi > ri and (fail.start_ns or 0) >= (root.start_ns or 0), f"{cid}: failure before root"
    assert 15 <= len(steps) <= 60, f"{cid}: {len(steps)} steps"
    return {
        "case": cid, "agent": mod.NAME, "route": route, "fault_kind": case["kind"],
        "root": {"name": root.name, "occurrence": case["root"][1], "kind": root.kind},
        "failure": {"name": fail.name, "occurrence": case["failure"][1]},
        "hops": fi - ri, "description": case["description"], "_steps": len(steps),
        "_reason": (failed.failure_reason or "")[:110],
    }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
