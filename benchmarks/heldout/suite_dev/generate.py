"""Generate the development suite: `python generate.py OUTDIR`.

For every agent in `agents/` and each of its three failing inputs, records the
run with the fault on (it must fail, at the step the agent marks), checks that
the same input with the fault off passes, records the agent's passing runs
(fault off, other inputs), and writes:

    OUTDIR/<case_id>/failed.jsonl     the failed run only
    OUTDIR/<case_id>/with_refs.jsonl  the failed run, then the agent's passing runs
    OUTDIR/<case_id>/truth.json       the injected root cause and where the run failed
    OUTDIR/index.json                 the cases

Deterministic: step ids and clocks come from `trajdebug.testing.deterministic`,
run ids from a seeded `random`, and the environment snapshot is fixed.
"""

from __future__ import annotations

import importlib
import json
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from agents import (  # noqa: E402
    AGENT_MODULES,
    common,
)

import trajdebug  # noqa: E402
from trajdebug.record import MemorySink  # noqa: E402
from trajdebug.testing import IncrementalClock, deterministic  # noqa: E402


FIXED_ENV = {"python": "3.x", "platform": "suite_dev", "packages": {}, "env": {}, "model": "scripted-llm-1"}


@dataclass
class Recording:
    run_id: str
    records: list
    exc: BaseException | None
    marks: dict = field(default_factory=dict)


class Recorder:
    def __init__(self) -> None:
        self.counter = 0

    def record(self, mod, inp: dict, faults: set[str]) -> Recording:
        self.counter += 1
        common.reset(faults)
        sink = MemorySink()
        random.seed(f"suite_dev/{mod.NAME}/{inp['id']}/{','.join(sorted(faults))}")
        exc = None
        task = inp.get("message") or inp.get("task")
        # Each run gets its own ids and a start a few minutes after the previous run's.
        clock = IncrementalClock(
            start_ns=1_760_000_000_000_000_000 + self.counter * 300_000_000_000, step_ns=2_000_000
        )
        with deterministic(clock=clock, prefix=f"{self.counter:08x}"):
            try:
                with trajdebug.run(
                    mod.NAME,
                    sinks=[sink],
                    task=task,
                    agent=mod.NAME,
                    version="1.0",
                    metadata={"env": dict(FIXED_ENV), "input_id": inp["id"]},
                ) as run:
                    mod.run_agent(inp, run)
            except Exception as e:  # noqa: BLE001 - the agent's failure is what we record
                exc = e
        marks = {
            "root": common.MARKS["root"],
            "flow": list(common.MARKS["flow"]),
            "failure": common.MARKS["failure"],
        }
        common.reset()
        if run.stats != {"dropped": 0, "sink_failures": 0, "internal_errors": 0}:
            raise RuntimeError(f"recorder problem in {mod.NAME}/{inp['id']}: {run.stats}")
        return Recording(run.run_id, sink.records, exc, marks)


def write_lines(path: Path, recordings: list[Recording]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for rec in recordings:
            for r in rec.records:
                f.write(json.dumps(r, ensure_ascii=False, separators=(",", ":"), sort_keys=False) + "\n")


def steps_in_start_order(path: Path, run_id: str) -> list:
    res = trajdebug.read_jsonl(path)
    if res.problems:
        raise RuntimeError(f"{path}: {res.problems}")
    run = next(r for r in res.runs if r.run_id == run_id)
    return run, list(run.steps)


def locate(steps: list, step_id: str) -> dict:
    by_id = {s.step_id: s for s in steps}
    s = by_id[step_id]
    same = [x for x in steps if x.name == s.name]
    loc = {"name": s.name, "occurrence": same.index(s) + 1, "kind": s.kind}
    if s.kind == "llm":
        llms = [x for x in steps if x.kind == "llm"]
        loc["llm_index"] = llms.index(s) + 1
    return loc


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: generate.py OUTDIR", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    out = Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rec = Recorder()
    index = []
    for modname in AGENT_MODULES:
        mod = importlib.import_module(f"agents.{modname}")
        assert len(mod.FAILING) >= 3 and len(mod.PASSING) >= 5, mod.NAME
        passing = []
        for inp in mod.PASSING:
            r = rec.record(mod, inp, set())
            if r.exc is not None:
                raise RuntimeError(f"{mod.NAME}/{inp['id']}: passing input failed: {r.exc!r}")
            passing.append(r)
        for n, case in enumerate(mod.FAILING, 1):
            inp, fault = case["input"], case["fault"]
            case_id = f"{modname}-{n:02d}-{fault}"
            clean = rec.record(mod, inp, set())
            if clean.exc is not None:
                raise RuntimeError(f"{case_id}: fails with the fault off: {clean.exc!r}")
            bad = rec.record(mod, inp, {fault})
            if bad.exc is None:
                raise RuntimeError(f"{case_id}: passes with the fault on")
            m = bad.marks
            if m["root"] is None or m["failure"] is None:
                raise RuntimeError(f"{case_id}: missing truth marks {m}")
            cdir = out / case_id
            if cdir.exists():
                shutil.rmtree(cdir)
            cdir.mkdir(parents=True)
            write_lines(cdir / "failed.jsonl", [bad])
            write_lines(cdir / "control.jsonl", [clean])  # the fault-free twin (benchmarks/ask.py)
            write_lines(cdir / "with_refs.jsonl", [bad, *passing])
            refs = trajdebug.read_jsonl(cdir / "with_refs.jsonl")
            outcomes = sorted(r.outcome for r in refs.runs)
            assert not refs.problems and outcomes == ["failure"] + ["success"] * len(passing), (
                case_id,
                outcomes,
            )
            run, steps = steps_in_start_order(cdir / "failed.jsonl", bad.run_id)
            by_id = {s.step_id: s for s in steps}
            root, fail = by_id[m["root"]], by_id[m["failure"]]
            # Sanity: the fault is silent, the failure is raised by the marked step, at least 2 hops later.
            assert run.outcome == "failure", (case_id, run.outcome)
            assert root.status == "ok", (case_id, "root step errored")
            assert fail.status == "error" and fail.error is not None, (case_id, "failure step did not raise")
            assert fail.error.type == type(bad.exc).__name__, (
                case_id,
                fail.error.type,
                type(bad.exc).__name__,
            )
            assert not any(s.status == "error" for s in steps if s.parent_id == fail.step_id), case_id
            hops = len(m["flow"]) - 1
            assert hops >= 2, (case_id, hops)
            truth = {
                "case_id": case_id,
                "agent": mod.NAME,
                "route": "sdk",
                "fault_kind": fault,
                "description": case["description"],
                "failed_run_id": bad.run_id,
                "root": locate(steps, m["root"]),
                "failure_step": {
                    k: v for k, v in locate(steps, m["failure"]).items() if k in ("name", "occurrence")
                },
                "hops": hops,
                "flow": [
                    {k: v for k, v in locate(steps, sid).items() if k in ("name", "occurrence")}
                    for sid in m["flow"]
                ],
                "error": {"type": fail.error.type, "message": fail.error.message},
                "reference_run_ids": [p.run_id for p in passing],
            }
            (cdir / "truth.json").write_text(
                json.dumps(truth, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            index.append(
                {
                    "case_id": case_id,
                    "agent": mod.NAME,
                    "fault_kind": fault,
                    "root": truth["root"]["name"],
                    "failure_step": truth["failure_step"]["name"],
                    "hops": hops,
                    "dir": case_id,
                }
            )
    (out / "index.json").write_text(
        json.dumps({"suite": "suite_dev", "cases": index, "count": len(index)}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(f"{len(index)} cases written to {out} in {time.perf_counter() - t0:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
