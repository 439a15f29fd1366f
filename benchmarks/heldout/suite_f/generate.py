"""Generate suite F: per case the failed run, the failed run with passing references, the control
run (same input, fault off) and the ground truth.

    python -m benchmarks.heldout.suite_f.generate OUTDIR [--only CASE ...]
    python benchmarks/heldout/suite_f/generate.py OUTDIR [--only CASE ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path


if __package__ in (None, ""):  # run as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    __package__ = "benchmarks.heldout.suite_f"

from .common import Agent, Model, brain, fresh, load_single, locate_truth, merge_files, planted


def check_with_refs(path: Path, agent: Agent, expected: int) -> None:
    """The merged file reads back as the failed run plus the references, all runs of this agent."""
    import trajdebug
    from trajdebug.sources.formats import import_path

    result = trajdebug.read_jsonl(path) if agent.ext == "jsonl" else import_path(path, "otlp")
    runs = list(result.runs)
    assert len(runs) == expected, f"{path}: {len(runs)} runs, expected {expected}"
    assert {r.name for r in runs} == {agent.name}, f"{path}: run names {sorted({r.name for r in runs})}"
    outcomes = sorted(r.outcome for r in runs)
    assert outcomes == ["failure"] + ["success"] * (expected - 1), f"{path}: outcomes {outcomes}"


def all_agents() -> list[Agent]:
    from . import agents_langgraph, agents_oai, agents_otlp, agents_sdk

    found: list[Agent] = []
    for mod in (agents_langgraph, agents_oai, agents_otlp, agents_sdk):
        found.extend(mod.AGENTS)
    return found


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--only", nargs="+", metavar="CASE", help="generate only these cases")
    ap.add_argument("--verify-show", action="store_true",
                    help="also check each truth against `python -m trajdebug show FILE --json` (slower)")
    args = ap.parse_args(argv)
    out: Path = args.outdir
    out.mkdir(parents=True, exist_ok=True)
    from trajdebug.testing import FakeModelServer

    started = time.perf_counter()
    index = []
    agents = all_agents()
    names = [c.case for a in agents for c in a.cases]
    assert len(names) == len(set(names)), "duplicate case names"
    if args.only:
        unknown = set(args.only) - set(names)
        if unknown:
            ap.error(f"unknown cases: {sorted(unknown)}")
    with FakeModelServer(brain) as server:
        Model.base_url, Model.name = server.base_url, server.model
        for agent in agents:
            cases = [c for c in agent.cases if not args.only or c.case in args.only]
            if not cases:
                continue
            if agent.setup:
                agent.setup()
            try:
                refdir = out / "_refs" / agent.name
                refdir.mkdir(parents=True, exist_ok=True)
                refs = []
                for k, inp in enumerate(agent.ref_inputs):
                    ref = fresh(refdir / f"ref{k + 1}.{agent.ext}")
                    with planted(None):
                        agent.record(inp, ref)
                    run = load_single(ref)
                    assert run.outcome == "success", f"{agent.name}: reference {inp} failed: {run.failure_reason}"
                    refs.append(ref)
                for case in cases:
                    assert case.input not in agent.ref_inputs, f"{case.case}: its input is also a reference"
                    cdir = out / case.case
                    cdir.mkdir(parents=True, exist_ok=True)
                    failed = fresh(cdir / f"failed.{agent.ext}")
                    control = fresh(cdir / f"control.{agent.ext}")
                    with planted(case.fault_id):
                        agent.record(case.input, failed)
                    with planted(None):
                        agent.record(case.input, control)
                    merge_files([failed, *refs], fresh(cdir / f"with_refs.{agent.ext}"), agent.ext)
                    truth = locate_truth(case, agent, failed, control)
                    check_with_refs(cdir / f"with_refs.{agent.ext}", agent, 1 + len(refs))
                    (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    index.append({"case": case.case, "agent": agent.name, "route": agent.route,
                                  "fault_kind": case.fault_kind, "files": {
                                      "failed": f"{case.case}/failed.{agent.ext}",
                                      "with_refs": f"{case.case}/with_refs.{agent.ext}",
                                      "control": f"{case.case}/control.{agent.ext}",
                                      "truth": f"{case.case}/truth.json"}, "refs": len(refs)})
                    print(f"{case.case:<40} {agent.route:<14} {case.fault_kind:<22} root="
                          f"{truth['root']['name']}#{truth['root']['occurrence']} hops={truth['hops']}", flush=True)
            finally:
                if agent.teardown:
                    agent.teardown()
    shutil.rmtree(out / "_refs", ignore_errors=True)
    seconds = round(time.perf_counter() - started, 1)
    (out / "index.json").write_text(json.dumps({"suite": "suite_f", "cases": index,
                                                "generation_seconds": seconds}, indent=2) + "\n")
    print(f"{len(index)} cases in {seconds} s -> {out}")
    if args.verify_show:
        verify_show(out, {c.case: c for a in agents for c in a.cases})
    return 0


def verify_show(out: Path, cases: dict) -> None:
    """Each truth's root, found again in `trajdebug show --json`: same name, occurrence, kind and marker."""
    import subprocess

    from .common import _text

    index = json.loads((out / "index.json").read_text())
    for entry in index["cases"]:
        truth = json.loads((out / entry["files"]["truth"]).read_text())
        src = out / entry["files"]["failed"]
        fmt = ["--from", "otlp"] if src.suffix == ".json" else []
        shown = subprocess.run([sys.executable, "-m", "trajdebug", "show", str(src), "--json", "--no-deps", *fmt],
                               capture_output=True, text=True, check=True).stdout
        steps = json.loads(shown)["runs"][0]["steps"]
        named = [s for s in steps if s["name"] == truth["root"]["name"]]
        root = named[truth["root"]["occurrence"] - 1]
        first = next(s for s in named if cases[entry["case"]].marker in _text(s["output"]))
        assert first["step_id"] == root["step_id"] and root["kind"] == truth["root"]["kind"], entry["case"]
        assert root["status"] == "ok", entry["case"]
        if truth["llm_index"]:
            assert [s for s in steps if s["kind"] == "llm"][truth["llm_index"] - 1]["step_id"] == root["step_id"]
    print(f"show --json agrees on {len(index['cases'])} truths")


if __name__ == "__main__":
    sys.exit(main())
