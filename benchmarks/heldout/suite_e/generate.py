"""Generate held-out suite E.

    python benchmarks/heldout/suite_e/generate.py OUTDIR [--only AGENT_OR_CASE ...]

For every agent: five passing reference runs; for every case: the faulty run
(``failed.<ext>``), the same run plus the references (``with_refs.<ext>``) and
``truth.json``.  Each case is also run with its fault switched off, and the
generator asserts the clean twin passes while the faulty run fails.  Only
127.0.0.1 is contacted (the scripted model server).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("OPENAI_API_KEY", "sk-suite-e-not-a-real-key")
os.environ["OTEL_SDK_DISABLED"] = "false"
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.pop("OPENAI_BASE_URL", None)
logging.getLogger("openai.agents").setLevel(logging.CRITICAL)

from common import Agent, Case, merge_files  # noqa: E402

import trajdebug  # noqa: E402


def _steps(path: Path) -> tuple[object, list]:
    runs = trajdebug.load_runs(path)
    assert len(runs) == 1, f"{path}: expected one run, found {len(runs)}"
    run = runs[0]
    return run, sorted(run.steps, key=lambda s: (s.start_ns, s.source_index if s.source_index is not None else 0))


def _text(value: object) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _locate_root(case: Case, steps: list, twin_steps: list) -> tuple[int, object]:
    named = [s for s in steps if s.name == case.root]
    assert named, f"{case.cid}: no step named {case.root!r}; names: {sorted({s.name for s in steps})}"
    if isinstance(case.root_at, int):
        assert len(named) >= case.root_at, f"{case.cid}: only {len(named)} steps named {case.root!r}"
        return case.root_at, named[case.root_at - 1]
    for i, s in enumerate(named, 1):
        if case.root_at in _text(s.output):
            for t in twin_steps:
                if t.name == case.root:
                    assert case.root_at not in _text(t.output), (
                        f"{case.cid}: marker {case.root_at!r} also in the clean twin's {case.root}"
                    )
            return i, s
    raise AssertionError(f"{case.cid}: marker {case.root_at!r} in no {case.root!r} output")


def build_agent(agent: Agent, outdir: Path, tmp: Path, only: set[str]) -> list[dict]:
    refs = tmp / f"{agent.name}.refs.{agent.ext}"
    for i, inp in enumerate(agent.passing):
        one = tmp / f"{agent.name}.ref{i}.{agent.ext}"
        agent.record(inp, None, one)
        run, _ = _steps(one)
        assert run.outcome == "success", f"{agent.name}: passing input {i} failed: {run.failure_reason}"
    merge_files(agent.ext, [tmp / f"{agent.name}.ref{i}.{agent.ext}" for i in range(len(agent.passing))], refs)

    entries = []
    for case in agent.cases:
        if only and case.cid not in only and agent.name not in only:
            continue
        cdir = outdir / case.cid
        if cdir.exists():
            shutil.rmtree(cdir)
        cdir.mkdir(parents=True)
        failed = cdir / f"failed.{agent.ext}"
        agent.record(case.inp, case.fault, failed)
        run, steps = _steps(failed)
        assert run.outcome == "failure", f"{case.cid}: the faulty run did not fail"
        twin = tmp / f"{case.cid}.twin.{agent.ext}"
        agent.record(case.inp, None, twin)
        twin_run, twin_steps = _steps(twin)
        assert twin_run.outcome == "success", f"{case.cid}: the clean twin failed: {twin_run.failure_reason}"
        shutil.copyfile(twin, cdir / f"control.{agent.ext}")  # the fault-free twin (benchmarks/ask.py)

        occ, root = _locate_root(case, steps, twin_steps)
        assert root.kind == case.root_kind, f"{case.cid}: root {case.root} is {root.kind}, expected {case.root_kind}"
        assert root.status != "error", f"{case.cid}: the root step raised; the fault must be silent"
        fails = [s for s in steps if s.name == case.fail]
        if case.fail_at is not None:
            fail_occ = case.fail_at
        else:
            errs = [i for i, s in enumerate(fails, 1) if s.status == "error"]
            assert errs, f"{case.cid}: no {case.fail!r} step raised; errors at {[s.name for s in steps if s.status == 'error']}"
            fail_occ = errs[0]
        assert fails[fail_occ - 1].status == "error", f"{case.cid}: {case.fail} #{fail_occ} did not raise"
        assert fails[fail_occ - 1].start_ns >= root.start_ns, f"{case.cid}: failure before root"
        truth_root = {"name": case.root, "occurrence": occ, "kind": root.kind}
        if root.kind == "llm":
            llms = [s for s in steps if s.kind == "llm"]
            truth_root["llm_index"] = [s.step_id for s in llms].index(root.step_id) + 1
        truth = {
            "case_id": case.cid,
            "agent": agent.name,
            "route": agent.route,
            "domain": agent.domain,
            "fault_kind": case.fault_kind,
            "fault": case.fault,
            "description": case.description,
            "failed_run_id": run.run_id,
            "failure_reason": run.failure_reason,
            "root": truth_root,
            "root_step_id": root.step_id,
            "failure_step": {"name": case.fail, "occurrence": fail_occ},
            "hops": case.hops,
            "reference_runs": len(agent.passing),
        }
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        merge_files(agent.ext, [failed, refs], cdir / f"with_refs.{agent.ext}")
        entries.append({k: truth[k] for k in ("case_id", "agent", "route", "fault_kind", "failed_run_id")}
                       | {"failed": f"{case.cid}/failed.{agent.ext}", "with_refs": f"{case.cid}/with_refs.{agent.ext}",
                          "truth": f"{case.cid}/truth.json"})
    return entries


def all_agents() -> list[Agent]:
    import route_agents_sdk
    import route_langgraph
    import route_otlp
    import route_recorder

    return [*route_langgraph.AGENTS, *route_agents_sdk.AGENTS, *route_otlp.AGENTS, *route_recorder.AGENTS]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir")
    ap.add_argument("--only", nargs="*", default=[], help="agent names or case ids")
    args = ap.parse_args()
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    only = set(args.only)
    t0 = time.monotonic()
    entries: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="suite-e-") as tmpname:
        for agent in all_agents():
            if only and agent.name not in only and not any(c.cid in only for c in agent.cases):
                continue
            t1 = time.monotonic()
            entries.extend(build_agent(agent, outdir, Path(tmpname), only))
            print(f"{agent.name:24s} {agent.route:10s} {len(agent.cases)} cases  {time.monotonic() - t1:5.1f}s", flush=True)
    if not only:
        (outdir / "index.json").write_text(json.dumps(entries, indent=2) + "\n")
    print(f"{len(entries)} cases in {time.monotonic() - t0:.1f}s -> {outdir}")


if __name__ == "__main__":
    main()
