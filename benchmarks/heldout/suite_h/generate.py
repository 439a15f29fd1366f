"""Record suite H: per case a failed run, its control, the failed run with 4 references, and truth.json.

    python benchmarks/heldout/suite_h/generate.py OUT [--only CASE ...]

Every model reply comes from one `trajdebug.testing.FakeModelServer` on 127.0.0.1 (an ephemeral
port); each agent swaps its scripted policy in before each run.  Ground truth is read back from the
recorded files (`trajdebug.sources.load.load_runs`) and checked before it is written.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


if __package__ in (None, ""):  # run as a script: make the repository's top level importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from benchmarks.heldout.suite_h._common import Agent, Fault, merge_files, planted


STEPS = (15, 80)
"""How many steps every recorded run of the suite has, at least and at most."""

# Words that would name the fault to a reader of the recording (checked on every failed file).
_TELLTALE = re.compile(r"fault|\bbug|wrong|stale|planted|inject|corrupt", re.IGNORECASE)


AGENT_MODULES = (
    "trial_screener",
    "payroll_runner",
    "replenisher",
    "visa_assistant",
    "claims_triage",
    "refund_desk",
    "energy_desk",
    "recipe_scaler",
)


def agents() -> list[Agent]:
    import importlib

    found = []
    for name in AGENT_MODULES:
        module = f"benchmarks.heldout.suite_h.{name}"
        try:
            found.append(importlib.import_module(module).AGENT)
        except ModuleNotFoundError as exc:  # a subset of the suite still generates
            if exc.name != module:
                raise
    return found


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True) + "\n" + str(value)


def _load_one(path: Path) -> Any:
    from trajdebug.sources.load import load_runs

    runs = load_runs(path)
    assert len(runs) == 1, f"{path}: {len(runs)} runs"
    return runs[0]


def ground_truth(agent: Agent, fault: Fault, failed_path: Path, control_path: Path) -> dict[str, Any]:
    """truth.json of one case, from the recorded failed and control runs (asserting the contract)."""
    failed, control = _load_one(failed_path), _load_one(control_path)
    assert failed.outcome == "failure", f"{fault.case}: failed run is {failed.outcome}"
    assert control.outcome == "success", f"{fault.case}: control is {control.outcome} ({control.failure_reason})"
    assert failed.name == control.name == agent.name, (failed.name, control.name)
    steps = list(failed.steps)
    for run in (failed, control):
        assert STEPS[0] <= len(run.steps) <= STEPS[1], f"{fault.case}: {len(run.steps)} steps"
    assert [s.start_ns for s in steps] == sorted(s.start_ns for s in steps), "steps not in start order"
    named = [s for s in steps if s.name == fault.root]
    hits = [i for i, s in enumerate(named) if fault.marker in _text(s.output)]
    assert hits, f"{fault.case}: no {fault.root} step holds {fault.marker!r}"
    root = named[hits[0]]
    parents = {s.parent_id for s in steps if s.parent_id}
    assert root.kind != "agent" and root.step_id not in parents, f"{fault.case}: the root {root.name} is a container"
    earlier = [s.name for s in steps[: steps.index(root)]
               if fault.marker in _text(s.output) and s.kind != "agent" and s.step_id not in parents]
    assert not earlier, f"{fault.case}: {fault.marker!r} already in {earlier}"
    clean = [s for s in control.steps if s.name == fault.root and fault.marker in _text(s.output)]
    assert not clean, f"{fault.case}: the control's {fault.root} holds {fault.marker!r} too"
    llms = [s for s in steps if s.kind == "llm"]
    failing = [e for e in failed.errors if any(st.stage == "failed" for st in e.stages)]
    assert len(failing) == 1, f"{fault.case}: {len(failing)} errors failed the run"
    by_id = {s.step_id: s for s in steps}
    fstep = by_id[failing[0].step_id]
    assert fstep.step_id not in parents, f"{fault.case}: failure step {fstep.name} encloses others"
    assert fstep.name == fault.failure, f"{fault.case}: failed at {fstep.name}, expected {fault.failure}"
    ri, fi = steps.index(root), steps.index(fstep)
    hops = sum(1 for s in steps[ri + 1 : fi + 1] if s.kind != "agent" and s.step_id not in parents)
    assert 1 <= hops <= 12, f"{fault.case}: hops {hops}"
    recorded = failed_path.read_text()
    assert fault.case not in recorded and not _TELLTALE.search(recorded), f"{fault.case}: the recording names the fault"
    return {
        "case": fault.case,
        "agent": agent.name,
        "route": agent.route,
        "fault_kind": fault.kind,
        "root": {"name": root.name, "occurrence": hits[0] + 1, "kind": root.kind},
        "llm_index": llms.index(root) + 1 if root.kind == "llm" else None,
        "failure_step": {
            "name": fstep.name,
            "occurrence": [s for s in steps if s.name == fstep.name].index(fstep) + 1,
            "kind": fstep.kind,
        },
        "hops": hops,
        "failure_reason": failed.failure_reason,
        "fault": fault.fault,
    }


def _check_with_refs(agent: Agent, path: Path) -> None:
    from trajdebug.sources.load import load_runs

    runs = load_runs(path)
    outcomes = sorted(r.outcome for r in runs)
    assert outcomes == ["failure"] + ["success"] * 4, f"{path}: {outcomes}"
    assert {r.name for r in runs} == {agent.name}, {r.name for r in runs}


def generate(out: Path, only: set[str] | None = None) -> list[dict[str, Any]]:
    from trajdebug.testing import FakeModelServer

    unknown = (only or set()) - {f.case for agent in agents() for f in agent.faults}
    if unknown:
        raise SystemExit(f"unknown case(s): {', '.join(sorted(unknown))}")
    out.mkdir(parents=True, exist_ok=True)
    index: list[dict[str, Any]] = []
    scratch = Path(tempfile.mkdtemp(prefix="suite_h_"))
    try:
        with FakeModelServer() as server:
            for agent in agents():
                faults = [f for f in agent.faults if only is None or f.case in only]
                if not faults:
                    continue
                refs = []
                for i, item in enumerate(agent.references):
                    ref = scratch / f"{agent.name}-ref{i}.{agent.ext}"
                    agent.record(server, item, ref)
                    recorded = _load_one(ref)
                    assert recorded.outcome == "success", f"{agent.name}: reference {i} failed"
                    assert STEPS[0] <= len(recorded.steps) <= STEPS[1], f"{agent.name}: reference {i} steps"
                    refs.append(ref)
                for fault in faults:
                    case_dir = out / fault.case
                    if case_dir.exists():
                        shutil.rmtree(case_dir)
                    case_dir.mkdir(parents=True)
                    failed, control = case_dir / f"failed.{agent.ext}", case_dir / f"control.{agent.ext}"
                    with planted(fault.case):
                        agent.record(server, agent.failing, failed)
                    agent.record(server, agent.failing, control)
                    merge_files(agent.ext, [failed, *refs], case_dir / f"with_refs.{agent.ext}")
                    _check_with_refs(agent, case_dir / f"with_refs.{agent.ext}")
                    truth = ground_truth(agent, fault, failed, control)
                    (case_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
                    row = {k: truth[k] for k in ("case", "agent", "route", "fault_kind", "hops")}
                    index.append({**row, "steps": len(_load_one(failed).steps)})
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"suite": "H", "cases": index}, indent=2) + "\n")
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--only", nargs="+", metavar="CASE")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    index = generate(args.out, set(args.only) if args.only else None)
    for row in index:
        print(f"{row['case']:<34} {row['route']:<14} {row['fault_kind']:<22} hops={row['hops']}")
    print(f"{len(index)} cases in {time.perf_counter() - started:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
