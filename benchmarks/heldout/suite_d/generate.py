"""Generate suite D: python benchmarks/heldout/suite_d/generate.py OUTDIR [--only AGENT_OR_CASE ...]

For every agent: record its passing runs (all faults off, inputs of their own); for every case, record
the run with the case's fault on (it must fail), run the same input with the fault off (it must pass),
then write OUTDIR/<case>/failed.<ext>, OUTDIR/<case>/with_refs.<ext> and OUTDIR/<case>/truth.json, and
OUTDIR/index.json.  The faulty step and the step that raises are located in the recorded run by name
and occurrence (start order), as `trajdebug show --json` lists them, and checked there.

No network except 127.0.0.1 (the fake model servers).  Ids and timestamps differ from one generation to
the next; the cases, the runs' steps and the ground truth do not.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

os.environ.setdefault("OPENAI_API_KEY", "sk-fake-not-used")  # the SDKs want one; every client points at 127.0.0.1
os.environ["OPENAI_AGENTS_DISABLE_TRACING"] = "0"
os.environ.pop("TRAJDEBUG", None)
os.environ.pop("OPENAI_BASE_URL", None)
for _proxy in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
    os.environ.pop(_proxy, None)
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
warnings.filterwarnings("ignore")

from suite_common import EXT, FAULT, Agent, Case, Loc  # noqa: E402

import trajdebug  # noqa: E402


AGENT_MODULES = [
    # route 1: LangGraph + the LangChain tracer
    "suite_agents.l1_helpdesk",
    "suite_agents.l2_car_rental",
    "suite_agents.l3_library",
    # route 2: OpenAI Agents SDK + the tracing processor
    "suite_agents.a1_travel_claims",
    "suite_agents.a2_cloud_costs",
    "suite_agents.a3_warehouse",
    # route 3: OpenInference / OpenTelemetry as OTLP JSON
    "suite_agents.o1_tax_filing",
    "suite_agents.o2_nutrition",
    "suite_agents.o3_timetable",
    # route 4: the trajdebug recording SDK
    "suite_agents.s1_invoice_matcher",
    "suite_agents.s2_event_planner",
    "suite_agents.s3_refund_desk",
]


def load_agents(only: list[str] | None = None) -> list[Agent]:
    agents = []
    for mod in AGENT_MODULES:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.startswith("suite_agents"):
                print(f"(skipping {mod}: not written)", file=sys.stderr)
                continue
            raise
        a = m.AGENT
        if only and not any(o == a.name or any(o == c.case_id for c in a.cases) for o in only):
            continue
        agents.append(a)
    return agents


# -- reading a recorded run back --------------------------------------------------------------


def load_one(path: Path) -> Any:
    runs = trajdebug.load_runs(str(path))
    assert len(runs) == 1, f"{path}: expected one run, found {len(runs)}"
    return runs[0]


def _blob(step: Any) -> str:
    err = step.error.message if step.error else ""
    return json.dumps([step.input, step.output, err], default=str, ensure_ascii=False)


def resolve(run: Any, loc: Loc, case_id: str) -> Any:
    same = [s for s in run.steps if s.name == loc.name]
    if len(same) < loc.occurrence:
        names = sorted({s.name for s in run.steps})
        raise AssertionError(f"{case_id}: no occurrence {loc.occurrence} of step {loc.name!r}; steps: {names}")
    step = same[loc.occurrence - 1]
    if loc.expect is not None and loc.expect not in _blob(step):
        raise AssertionError(f"{case_id}: step {loc.name}#{loc.occurrence} does not hold {loc.expect!r}: {_blob(step)[:600]}")
    return step


def raising_step(run: Any, case_id: str) -> Any:
    failed = [e for e in run.errors if any(c.stage == "failed" for c in e.stages)]
    assert failed, f"{case_id}: the recorded run has no error that failed it ({[e.message for e in run.errors]})"
    return run.step(failed[0].step_id)


def occurrence(run: Any, step: Any) -> int:
    same = [s.step_id for s in run.steps if s.name == step.name]
    return same.index(step.step_id) + 1


def truth_for(agent: Agent, case: Case, run: Any) -> dict[str, Any]:
    steps = [resolve(run, loc, case.case_id) for loc in case.flow]
    root, fail = steps[0], steps[-1]
    assert len({s.step_id for s in steps}) == len(steps), f"{case.case_id}: the flow visits a step twice"
    actual = raising_step(run, case.case_id)
    assert actual.step_id == fail.step_id, (
        f"{case.case_id}: the run raised at {actual.name}#{occurrence(run, actual)}, "
        f"the case says {fail.name}#{occurrence(run, fail)}"
    )
    assert root.status == "ok", f"{case.case_id}: the faulty step must be silent, it ended {root.status}"
    llm_steps = [s.step_id for s in run.steps if s.kind == "llm"]
    root_info: dict[str, Any] = {"name": root.name, "occurrence": occurrence(run, root), "kind": root.kind}
    if root.kind == "llm":
        root_info["llm_index"] = llm_steps.index(root.step_id) + 1
    starts = [s.start_ns for s in steps if s.kind != "agent"]  # a sub-agent starts before what it returns
    assert starts == sorted(starts), f"{case.case_id}: the flow is not in start order"
    return {
        "case_id": case.case_id,
        "agent": agent.name,
        "route": agent.route,
        "fault_kind": case.fault_kind,
        "description": case.description,
        "failed_run_id": run.run_id,
        "root": root_info,
        "failure_step": {"name": fail.name, "occurrence": occurrence(run, fail)},
        "hops": len(steps) - 1,
        "flow": [{"name": s.name, "occurrence": occurrence(run, s), "kind": s.kind} for s in steps],
        "failure_message": fail.error.message if fail.error else None,
        "input": case.input,
    }


# -- files ------------------------------------------------------------------------------------


def merge(route: str, parts: list[Path], dest: Path) -> None:
    if EXT[route] == "jsonl":
        with dest.open("w", encoding="utf-8") as out:
            for p in parts:
                out.write(p.read_text(encoding="utf-8"))
    else:
        spans: list[Any] = []
        for p in parts:
            spans.extend(json.loads(p.read_text(encoding="utf-8"))["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}), encoding="utf-8")


def generate(outdir: Path, only: list[str] | None = None) -> list[dict[str, Any]]:
    outdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="suite_d_"))
    index: list[dict[str, Any]] = []
    try:
        for agent in load_agents(only):
            t0 = time.perf_counter()
            ext = EXT[agent.route]
            cases = [c for c in agent.cases if not only or agent.name in only or c.case_id in only]
            with agent.session() as record:
                refs: list[Path] = []
                for i, inp in enumerate(agent.passing):
                    FAULT.active = None
                    p = scratch / f"{agent.name}-ref{i}.{ext}"
                    exc = record(inp, str(p))
                    assert exc is None, f"{agent.name}: passing input {inp!r} raised {exc!r}"
                    assert load_one(p).outcome == "success", f"{agent.name}: passing input {inp!r} recorded as failed"
                    refs.append(p)
                for case in cases:
                    case_dir = outdir / case.case_id
                    if case_dir.exists():
                        shutil.rmtree(case_dir)
                    case_dir.mkdir(parents=True)
                    failed = case_dir / f"failed.{ext}"
                    FAULT.active = case.fault
                    try:
                        exc = record(case.input, str(failed))
                    finally:
                        FAULT.active = None
                    assert exc is not None, f"{case.case_id}: with the fault on, the run did not fail"
                    clean = scratch / f"{case.case_id}-clean.{ext}"
                    exc2 = record(case.input, str(clean))
                    assert exc2 is None, f"{case.case_id}: with the fault off, the run raised {exc2!r}"
                    assert load_one(clean).outcome == "success", f"{case.case_id}: the clean twin did not succeed"
                    shutil.copyfile(clean, case_dir / f"control.{ext}")  # the fault-free twin (benchmarks/ask.py)
                    run = load_one(failed)
                    assert run.outcome == "failure", f"{case.case_id}: recorded as {run.outcome}"
                    truth = truth_for(agent, case, run)
                    merge(agent.route, [*refs, failed], case_dir / f"with_refs.{ext}")
                    (case_dir / "truth.json").write_text(json.dumps(truth, indent=2, ensure_ascii=False) + "\n")
                    index.append(
                        {
                            "case_id": case.case_id,
                            "agent": agent.name,
                            "route": agent.route,
                            "fault_kind": case.fault_kind,
                            "failed": f"{case.case_id}/failed.{ext}",
                            "with_refs": f"{case.case_id}/with_refs.{ext}",
                            "truth": f"{case.case_id}/truth.json",
                        }
                    )
            print(f"{agent.name:28s} {agent.route:14s} {len(cases)} cases  {time.perf_counter() - t0:5.1f}s", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if not only:
        (outdir / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    return index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--only", nargs="*", help="only these agents or cases (no index.json is written)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    index = generate(args.outdir, args.only)
    print(f"{len(index)} cases in {time.perf_counter() - t0:.1f}s -> {args.outdir}")


if __name__ == "__main__":
    main()
