"""Case bookkeeping shared by the four routes: run, check, write truth."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


Ref = tuple[str, int]  # (step name as recorded, 1-based occurrence among steps of that name)


@dataclass
class Case:
    suffix: str
    input: dict[str, Any]
    fault: str
    fault_kind: str
    description: str
    flow: list[Ref]
    """The wrong value's path: the root first, the step that raises last."""
    root_kind: str | None = None
    """Expected kind of the root step (checked)."""
    root_contains: str | None = None
    """A text the root step's recorded output must contain (checked: guards against a miscounted occurrence)."""


@dataclass
class AgentSpec:
    name: str
    route: str
    domain: str
    ext: str
    run: Callable[..., None]
    """run(input, fault, out_path, key) records one run to out_path; raises when the agent fails."""
    passing: list[dict[str, Any]]
    cases: list[Case] = field(default_factory=list)


class CaseError(AssertionError):
    pass


def merge_files(ext: str, parts: list[Path], out: Path) -> None:
    if ext == "jsonl":
        with out.open("w", encoding="utf-8") as fh:
            for p in parts:
                fh.write(p.read_text(encoding="utf-8"))
    else:
        envs = [json.loads(p.read_text(encoding="utf-8")) for p in parts]
        merged = {"resourceSpans": [rs for e in envs for rs in e["resourceSpans"]]}
        out.write_text(json.dumps(merged, indent=1), encoding="utf-8")


def _load_single(path: Path) -> Any:
    from trajdebug import load_runs

    runs = load_runs(path)
    if len(runs) != 1:
        raise CaseError(f"{path}: expected one run, found {len(runs)}")
    return runs[0]


def locate(run: Any, ref: Ref) -> tuple[int, Any]:
    name, occ = ref
    same = [(i, s) for i, s in enumerate(run.steps) if s.name == name]
    if len(same) < occ:
        listed = sorted({s.name for s in run.steps})
        raise CaseError(f"no occurrence {occ} of step {name!r} (have {len(same)}); names: {listed}")
    return same[occ - 1]


def run_agent(
    agent: AgentSpec, inp: dict[str, Any], fault: str | None, out: Path, key: str
) -> Exception | None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        out.unlink()
    try:
        agent.run(inp, fault, out, key)
    except Exception as exc:  # noqa: BLE001 - the agent's failure is what we record
        return exc
    return None


def generate_agent(
    agent: AgentSpec, outdir: Path, scratch: Path, log: Callable[[str], None]
) -> list[dict[str, Any]]:
    scratch = scratch / agent.name
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(parents=True)
    # 1. passing runs on other inputs
    refs: list[Path] = []
    for i, inp in enumerate(agent.passing):
        p = scratch / f"pass{i}.{agent.ext}"
        exc = run_agent(agent, inp, None, p, f"{agent.name}/pass/{i}")
        if exc is not None:
            raise CaseError(f"{agent.name}: passing input {i} failed: {type(exc).__name__}: {exc}") from exc
        run = _load_single(p)
        if run.outcome != "success":
            raise CaseError(f"{agent.name}: passing input {i} recorded as {run.outcome}")
        refs.append(p)
    if len(refs) < 5:
        raise CaseError(f"{agent.name}: needs at least 5 passing runs")

    entries = []
    for case in agent.cases:
        case_id = f"{agent.name}__{case.suffix}"
        cdir = outdir / case_id
        cdir.mkdir(parents=True, exist_ok=True)
        # 2. the clean twin must pass
        twin = scratch / f"{case.suffix}.clean.{agent.ext}"
        exc = run_agent(agent, case.input, None, twin, f"{case_id}/clean")
        if exc is not None:
            raise CaseError(
                f"{case_id}: the run with the fault off failed: {type(exc).__name__}: {exc}"
            ) from exc
        if _load_single(twin).outcome != "success":
            raise CaseError(f"{case_id}: the clean twin was not recorded as a success")
        shutil.copyfile(twin, cdir / f"control.{agent.ext}")  # the fault-free twin (benchmarks/ask.py)
        # 3. the faulty run must fail
        failed = cdir / f"failed.{agent.ext}"
        exc = run_agent(agent, case.input, case.fault, failed, f"{case_id}/failed")
        if exc is None:
            raise CaseError(f"{case_id}: the faulty run did not fail")
        run = _load_single(failed)
        if run.outcome != "failure":
            raise CaseError(f"{case_id}: faulty run recorded as {run.outcome}")
        merge_files(agent.ext, [failed, *refs], cdir / f"with_refs.{agent.ext}")
        # 4. ground truth from what was recorded
        flow_steps = [locate(run, ref) for ref in case.flow]
        (_, root), (_, fail) = flow_steps[0], flow_steps[-1]
        if case.root_kind and root.kind != case.root_kind:
            raise CaseError(f"{case_id}: root {root.name} is kind {root.kind}, expected {case.root_kind}")
        if case.root_contains and case.root_contains not in json.dumps(root.output).replace("\\", ""):
            raise CaseError(
                f"{case_id}: root {root.name}#{case.flow[0][1]} output lacks {case.root_contains!r}: {json.dumps(root.output)[:300]}"
            )
        if root.status != "ok":
            raise CaseError(f"{case_id}: root {root.name} is not silent (status {root.status})")
        if fail.status != "error":
            raise CaseError(f"{case_id}: failure step {fail.name} has status {fail.status}")
        occurred = {e.step_id for e in run.errors if e.stages and e.stages[0].stage == "occurred"}
        if fail.step_id not in occurred:
            raise CaseError(f"{case_id}: failure step {fail.name} is not where an error occurred")
        for (_, sa), (_, sb) in itertools.pairwise(flow_steps):
            # a value flows forward: each step on the path ends after the one it got the value from
            # (an enclosing step, such as an agent used as a tool, starts before its inner steps)
            if (sb.end_ns or 0) < (sa.end_ns or 0) or sb.step_id == sa.step_id:
                raise CaseError(f"{case_id}: flow goes backwards in time at {sb.name}")
        for _, s in flow_steps[:-1]:
            if s.status != "ok":
                raise CaseError(f"{case_id}: step {s.name} on the flow reports an error itself")
        root_info: dict[str, Any] = {"name": root.name, "occurrence": case.flow[0][1], "kind": root.kind}
        if root.kind == "llm":
            llms = [s.step_id for s in run.steps if s.kind == "llm"]
            root_info["llm_index"] = llms.index(root.step_id) + 1
        hops = len(case.flow) - 1
        if hops < 2:
            raise CaseError(f"{case_id}: fails fewer than 2 steps after its root")
        truth = {
            "case_id": case_id,
            "agent": agent.name,
            "route": agent.route,
            "domain": agent.domain,
            "fault_kind": case.fault_kind,
            "description": case.description,
            "failed_run_id": run.run_id,
            "root": root_info,
            "failure_step": {"name": fail.name, "occurrence": case.flow[-1][1], "kind": fail.kind},
            "hops": hops,
            "flow": [{"name": n, "occurrence": o} for n, o in case.flow],
            "failure": f"{fail.error.type}: {fail.error.message}" if fail.error else None,
            "passing_refs": len(refs),
        }
        (cdir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
        entries.append(
            {
                "case_id": case_id,
                "agent": agent.name,
                "route": agent.route,
                "fault_kind": case.fault_kind,
                "failed": f"{case_id}/failed.{agent.ext}",
                "with_refs": f"{case_id}/with_refs.{agent.ext}",
                "truth": f"{case_id}/truth.json",
            }
        )
        log(f"  {case_id}: root {root.name}#{case.flow[0][1]} ({root.kind}) -> {fail.name} [{hops} hops]")
    return entries
