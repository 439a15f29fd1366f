"""Generate suite G: python benchmarks/heldout/suite_g/generate.py OUT [--only CASE ...] [--verify-show].

Per case, OUT/<case>/ gets failed.<ext>, with_refs.<ext>, control.<ext> and truth.json (README.md);
OUT/index.json lists the cases.  Every recorded run is read back and checked before truth is written.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

MODULES = ["a_irrigation", "a_library", "b_freight", "b_tickets", "c_pharmacy", "c_mortgage", "d_fleet", "d_courses"]
CONTAINER_KINDS = {"agent"}


def load_specs() -> list[Any]:
    specs = []
    for mod in MODULES:
        try:
            specs.append(importlib.import_module(f"suite_g.{mod}").SPEC)
        except ModuleNotFoundError as exc:
            if exc.name != f"suite_g.{mod}":
                raise
    return specs


def read(path: Path) -> list[Any]:
    from trajdebug.sources.load import load_runs

    return load_runs(path)


def ordered(run: Any) -> list[Any]:
    """Steps in start order (ties: recorded order), as ``trajdebug show --json`` lists them."""
    return [s for _, s in sorted(enumerate(run.steps), key=lambda p: (p[1].start_ns, p[0]))]


def holds(step: Any, marker: Any) -> bool:
    if callable(marker):
        try:
            return bool(marker(step.output))
        except (KeyError, TypeError, AttributeError, ValueError):
            return False
    if isinstance(step.output, str) and marker in step.output:
        return True
    return marker in json.dumps(step.output, ensure_ascii=False, default=str)


def occurrence(steps: list[Any], step: Any) -> int:
    return [s.step_id for s in steps if s.name == step.name].index(step.step_id) + 1


def failure_step(run: Any) -> Any:
    by_id = {s.step_id: s for s in run.steps}
    for err in run.errors:
        if any(st.stage == "failed" for st in err.stages):
            occurred = [st.step_id for st in err.stages if st.stage == "occurred" and st.step_id in by_id]
            if occurred:
                return by_id[occurred[0]]
            return by_id[err.step_id]
    parents = {s.parent_id for s in run.steps if s.status == "error"}
    errored = [s for s in ordered(run) if s.status == "error" and s.step_id not in parents]
    assert errored, f"run {run.run_id} failed but no step raised"
    return errored[-1]


def truth_for(spec: Any, case: Any, failed: Any, control: Any) -> dict[str, Any]:
    steps = ordered(failed)
    named = [s for s in steps if s.name == case.root_name]
    assert named, f"{case.case}: no step named {case.root_name!r} in the failed run"
    hits = [s for s in named if holds(s, case.marker)]
    assert hits, f"{case.case}: no {case.root_name!r} step holds the marker"
    in_control = [s for s in ordered(control) if s.name == case.root_name and holds(s, case.marker)]
    assert not in_control, f"{case.case}: the control run's {case.root_name!r} holds the marker too"
    root = hits[0]
    fail = failure_step(failed)
    ids = [s.step_id for s in steps]
    i, j = ids.index(root.step_id), ids.index(fail.step_id)
    assert j > i, f"{case.case}: the failure step {fail.name} does not come after the root {root.name}"
    parents = {s.parent_id for s in steps if s.parent_id}
    hops = sum(1 for s in steps[i + 1 : j + 1] if s.kind not in CONTAINER_KINDS and s.step_id not in parents)
    llm = [s.step_id for s in steps if s.kind == "llm"]
    return {
        "case": case.case,
        "agent": spec.agent,
        "route": spec.route,
        "fault_kind": case.fault_kind,
        "root": {"name": root.name, "occurrence": occurrence(steps, root), "kind": root.kind},
        "llm_index": llm.index(root.step_id) + 1 if root.kind == "llm" else None,
        "failure_step": {"name": fail.name, "occurrence": occurrence(steps, fail), "kind": fail.kind},
        "hops": hops,
        "failure_reason": failed.failure_reason,
        "fault": case.fault,
    }


def combine(parts: list[Path], dest: Path, ext: str) -> None:
    if ext == "json":
        spans: list[Any] = []
        for p in parts:
            spans.extend(json.loads(p.read_text())["resourceSpans"])
        dest.write_text(json.dumps({"resourceSpans": spans}))
    else:
        dest.write_text("".join(p.read_text() for p in parts))


def show_json(path: Path) -> Any:
    out = subprocess.run(
        [sys.executable, "-m", "trajdebug", "show", str(path), "--json", "--all"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out", type=Path)
    ap.add_argument("--only", nargs="+", metavar="CASE")
    ap.add_argument("--verify-show", action="store_true", help="also read every case back with trajdebug show --json")
    args = ap.parse_args(argv)
    from suite_g.common import planted

    t0 = time.monotonic()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    index: list[dict[str, Any]] = []
    for spec in load_specs():
        cases = [c for c in spec.cases if not args.only or c.case in args.only]
        if not cases:
            continue
        ext = spec.ext
        ref_dir = out / "_refs" / spec.agent
        shutil.rmtree(ref_dir, ignore_errors=True)
        ref_dir.mkdir(parents=True)
        refs = []
        for k, inp in enumerate(spec.refs):
            p = ref_dir / f"ref{k + 1}.{ext}"
            spec.record(inp, p)
            [r] = read(p)
            assert r.outcome == "success", f"{spec.agent}: reference {k + 1} did not pass: {r.failure_reason}"
            assert r.name == spec.agent, (r.name, spec.agent)
            refs.append(p)
        for case in cases:
            d = out / case.case
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir(parents=True)
            failed_p, control_p, with_refs_p = (d / f"failed.{ext}", d / f"control.{ext}", d / f"with_refs.{ext}")
            with planted(case.fault_id):
                spec.record(case.input, failed_p)
            spec.record(case.input, control_p)
            [failed] = read(failed_p)
            [control] = read(control_p)
            assert failed.outcome == "failure", f"{case.case}: the planted run did not fail"
            assert control.outcome == "success", f"{case.case}: the control failed: {control.failure_reason}"
            assert failed.name == control.name == spec.agent, (failed.name, spec.agent)
            combine([failed_p, *refs], with_refs_p, ext)
            runs = read(with_refs_p)
            assert len(runs) == 1 + len(refs), f"{case.case}: with_refs holds {len(runs)} runs"
            assert [r.outcome for r in runs].count("failure") == 1 and {r.name for r in runs} == {spec.agent}
            truth = truth_for(spec, case, failed, control)
            if args.verify_show:
                [shown] = show_json(failed_p)["runs"]
                names = [s["name"] for s in shown["steps"]]
                assert names == [s.name for s in ordered(failed)], f"{case.case}: show --json orders steps otherwise"
            (d / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
            index.append(
                {
                    **{k: truth[k] for k in ("case", "agent", "route", "fault_kind")},
                    "files": {
                        "failed": f"{case.case}/failed.{ext}",
                        "with_refs": f"{case.case}/with_refs.{ext}",
                        "control": f"{case.case}/control.{ext}",
                        "truth": f"{case.case}/truth.json",
                    },
                }
            )
            print(
                f"{case.case:28} {spec.route}  root={truth['root']['name']}#{truth['root']['occurrence']}"
                f" ({truth['root']['kind']})  fails at {truth['failure_step']['name']}  hops={truth['hops']}"
            )
        shutil.rmtree(ref_dir)
    shutil.rmtree(out / "_refs", ignore_errors=True)
    (out / "index.json").write_text(json.dumps({"suite": "suite_g", "cases": index}, indent=2) + "\n")
    print(f"{len(index)} cases in {time.monotonic() - t0:.1f}s -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
