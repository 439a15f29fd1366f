"""Generate held-out suite B: failed agent runs with known root causes, and passing reference runs.

    python benchmarks/heldout/suite_b/generate.py OUTDIR [--only AGENT[,AGENT...]]

For every agent it records >= 5 passing runs, then for every case it runs the
input with the fault switched off (that run must pass) and with the fault on
(that run must raise), writes the failed run, the failed run plus the passing
runs, and the ground truth located in the recorded steps.  Only 127.0.0.1 is
contacted (a fake model server speaking the OpenAI Chat Completions protocol).
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "0")
os.environ.setdefault("OPENAI_API_KEY", "sk-heldout-b-fake")
os.environ.pop("OPENAI_BASE_URL", None)

from sb import harness  # noqa: E402
from sb.env import ENV  # noqa: E402


AGENT_MODULES = [
    # LangGraph + the LangChain tracer
    "sb.r1_oncall",
    "sb.r1_clinic",
    "sb.r1_freight",
    # OpenAI Agents SDK + the tracing processor
    "sb.r2_claims",
    "sb.r2_grading",
    "sb.r2_metering",
    # OpenInference / OpenTelemetry as OTLP JSON
    "sb.r3_parcels",
    "sb.r3_settlement",
    "sb.r3_advising",
    # the trajdebug recording SDK
    "sb.r4_roster",
    "sb.r4_intake",
    "sb.r4_runbook",
]

EXT = {"langgraph": "jsonl", "openai-agents": "jsonl", "otlp": "json", "trajdebug-sdk": "jsonl"}


class Recording:
    """One run recorded into ``dest`` (JSONL routes) or kept as spans (OTLP)."""

    def __init__(self, mod: Any, task: dict[str, Any], fault: str | None, dest: Path) -> None:
        self.ctx = harness.reset(fault)
        self.scenario = ENV.server.use(mod.policy, task, fault) if hasattr(mod, "policy") else None
        self.error: BaseException | None = None
        self.spans: list[Any] = []
        if mod.ROUTE == "otlp":
            ENV.otel.clear()
        try:
            mod.run(task, dest)
        except Exception as exc:  # noqa: BLE001 - the agent's own failure
            self.error = exc
        if mod.ROUTE == "otlp":
            self.spans = ENV.otel.take()


def load_single(path: Path) -> Any:
    import trajdebug

    runs = trajdebug.load_runs(path)
    if len(runs) != 1:
        raise AssertionError(f"{path}: expected one run, found {len(runs)}")
    return runs[0]


def steps_in_order(run: Any) -> list[Any]:
    """The steps as `trajdebug show` lists them (start order)."""
    steps = list(run.steps)
    assert all(a.start_ns <= b.start_ns for a, b in itertools.pairwise(steps)), (
        f"{run.run_id}: steps not in start order"
    )
    return steps


def occurrence(steps: list[Any], step: Any) -> int:
    same = [s for s in steps if s.name == step.name]
    return same.index(step) + 1


def nth(steps: list[Any], name: str, n: int) -> Any:
    same = [s for s in steps if s.name == name]
    if len(same) < n:
        raise AssertionError(f"recorded run has {len(same)} steps named {name!r}, wanted #{n}")
    return same[n - 1]


def locate_truth(mod: Any, case: harness.Case, rec: Recording, path: Path) -> dict[str, Any]:
    run = load_single(path)
    steps = steps_in_order(run)
    llm_steps = [s for s in steps if s.kind == "llm"]
    if case.root == "llm":
        assert rec.scenario is not None
        faulty = [e["index"] for e in rec.scenario.log if e["faulty"]]
        assert len(faulty) == 1, f"{case.id}: {len(faulty)} faulty model answers"
        assert len(llm_steps) == len(rec.scenario.log), (
            f"{case.id}: {len(llm_steps)} llm steps recorded, {len(rec.scenario.log)} model requests served"
        )
        root = llm_steps[faulty[0] - 1]
    else:
        assert rec.ctx.root is not None and rec.ctx.root[0] == case.root, (
            f"{case.id}: root marker {rec.ctx.root}"
        )
        root = nth(steps, *rec.ctx.root)
    blob = json.dumps(root.output, ensure_ascii=False).replace('\\"', '"')
    assert case.evidence in blob, f"{case.id}: evidence {case.evidence!r} not in root output {blob[:400]}"
    assert rec.ctx.failure is not None and rec.ctx.failure[0] == case.failure, (
        f"{case.id}: failure {rec.ctx.failure}"
    )
    fail = nth(steps, *rec.ctx.failure)
    assert fail.status == "error", f"{case.id}: failing step {fail.name} recorded as {fail.status}"
    # The flow path, resolved in start order: root first, failing step last.
    pos = steps.index(root)
    assert case.path[0] in (root.name, "llm" if root.kind == "llm" else root.name), case.path
    by_id = {s.step_id: s for s in steps}
    for label in case.path[1:]:
        parent = by_id.get(steps[pos].parent_id or "")
        if parent is not None and parent.name == label:
            continue  # the value leaves through the enclosing step's output (a sub-agent, a tool wrapping a parser)
        pos = next(
            (
                i
                for i in range(pos + 1, len(steps))
                if steps[i].name == label or (label == "llm" and steps[i].kind == "llm")
            ),
            -1,
        )
        assert pos >= 0, f"{case.id}: path step {label!r} not found after the previous one"
    assert steps[pos] is fail, f"{case.id}: path ends at {steps[pos].name}, the failing step is {fail.name}"
    truth_root: dict[str, Any] = {"name": root.name, "occurrence": occurrence(steps, root), "kind": root.kind}
    if root.kind == "llm":
        truth_root["llm_index"] = llm_steps.index(root) + 1
    return {
        "case_id": case.id,
        "agent": mod.AGENT,
        "route": mod.ROUTE,
        "fault_kind": case.fault_kind,
        "description": case.description,
        "failed_run_id": run.run_id,
        "root": truth_root,
        "failure_step": {"name": fail.name, "occurrence": occurrence(steps, fail)},
        "hops": len(case.path) - 1,
        "path": case.path,
        "recorded_outcome": run.outcome,
    }


def write_otlp(spans: list[Any], path: Path) -> None:
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    path.write_text(json.dumps(MessageToDict(encode_spans(spans)), indent=1) + "\n", encoding="utf-8")


def generate(outdir: Path, only: set[str] | None = None) -> list[dict[str, Any]]:
    outdir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="heldout-b-"))
    index: list[dict[str, Any]] = []
    warnings: list[str] = []
    try:
        for name in AGENT_MODULES:
            if only and name.split(".")[-1] not in only:
                continue
            mod = importlib.import_module(name)
            ext = EXT[mod.ROUTE]
            t0 = time.perf_counter()
            ENV.prepare(mod.ROUTE)
            # passing reference runs
            refs_path = scratch / f"{mod.AGENT}.refs.{ext}"
            ref_spans: list[Any] = []
            assert len(mod.PASSING) >= 5, mod.AGENT
            case_tasks = [c.task for c in mod.CASES]
            for task in mod.PASSING:
                assert task not in case_tasks, f"{mod.AGENT}: a passing input is also a case input"
                rec = Recording(mod, task, None, refs_path)
                if rec.error is not None:
                    raise AssertionError(
                        f"{mod.AGENT}: passing input {task} failed: {rec.error!r}"
                    ) from rec.error
                ref_spans += rec.spans
            for case in mod.CASES:
                clean_path = scratch / f"{case.id}.clean.{ext}"
                clean = Recording(mod, case.task, None, clean_path)
                if clean.error is not None:
                    raise AssertionError(
                        f"{case.id}: fault-free twin failed: {clean.error!r}"
                    ) from clean.error
                case_dir = outdir / case.id
                if case_dir.exists():
                    shutil.rmtree(case_dir)
                case_dir.mkdir(parents=True)
                # The fault-free twin beside the case (benchmarks/ask.py); OTLP routes keep it as spans.
                if mod.ROUTE == "otlp":
                    write_otlp(clean.spans, case_dir / f"control.{ext}")
                else:
                    shutil.copyfile(clean_path, case_dir / f"control.{ext}")
                failed_path = case_dir / f"failed.{ext}"
                bad = Recording(mod, case.task, case.fault, failed_path)
                if bad.error is None:
                    raise AssertionError(f"{case.id}: the faulty run did not fail")
                model_fault = bad.scenario is not None and any(e["faulty"] for e in bad.scenario.log)
                assert bad.ctx.fired or model_fault, f"{case.id}: fault {case.fault!r} never fired"
                if mod.ROUTE == "otlp":
                    write_otlp(bad.spans, failed_path)
                    write_otlp(ref_spans + bad.spans, case_dir / f"with_refs.{ext}")
                else:
                    (case_dir / f"with_refs.{ext}").write_text(
                        refs_path.read_text(encoding="utf-8") + failed_path.read_text(encoding="utf-8"),
                        encoding="utf-8",
                    )
                truth = locate_truth(mod, case, bad, failed_path)
                truth["error"] = f"{type(bad.error).__name__}: {bad.error}"
                if truth["recorded_outcome"] != "failure":
                    warnings.append(
                        f"{case.id}: the run raised but was recorded with outcome {truth['recorded_outcome']!r}"
                    )
                (case_dir / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
                index.append(
                    {
                        "case_id": case.id,
                        "agent": mod.AGENT,
                        "route": mod.ROUTE,
                        "fault_kind": case.fault_kind,
                        "failed": f"{case.id}/failed.{ext}",
                        "with_refs": f"{case.id}/with_refs.{ext}",
                        "truth": f"{case.id}/truth.json",
                    }
                )
            print(
                f"{mod.AGENT:22s} {mod.ROUTE:14s} {len(mod.CASES)} cases  {time.perf_counter() - t0:5.1f}s",
                flush=True,
            )
    finally:
        ENV.close()
        shutil.rmtree(scratch, ignore_errors=True)
    (outdir / "index.json").write_text(json.dumps(index, indent=2) + "\n", encoding="utf-8")
    for w in warnings:
        print("warning:", w, file=sys.stderr)
    return index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--only", help="comma-separated agent modules (e.g. r1_oncall,r4_roster)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    t0 = time.perf_counter()
    index = generate(args.outdir, set(args.only.split(",")) if args.only else None)
    print(f"{len(index)} cases written to {args.outdir} in {time.perf_counter() - t0:.1f}s")


if __name__ == "__main__":
    main()
