"""Golden rankings: the analysis's top candidates on every benchmark case, to prove a change kept them.

``python -m benchmarks.golden OUT.json`` writes, for the blind suites (both settings), the fault-injection
suite (2 seeds) and the tau-bench runs, each case's top-5 step names with their ranks;
``python -m benchmarks.golden --compare A.json B.json`` lists the cases whose ranking changed.  A speed
change to the analysis must leave the file unchanged (or explain each difference; the fault suite's `race`
cases record parallel threads, so their rankings may differ from one recording to the next).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def collect(workdir: Path) -> dict[str, Any]:
    """Every case's top-5 (step name and occurrence), keyed by suite and case."""
    from benchmarks.blind import SETTINGS, _cases, _source, generate
    from benchmarks.faults import Case, distractors_for
    from benchmarks.quality import analyse, cases
    from benchmarks.tau import run_tau
    from benchmarks.workflows import WORKFLOWS
    from trajdebug.pipeline import analyze_source

    out: dict[str, Any] = {}
    for suite in ("suite_dev", "suite_a", "suite_b"):
        root = generate(suite, workdir, progress=lambda _: None)
        for truth in _cases(root):
            for setting in SETTINGS:
                src = _source(root / truth["case_id"], "failed" if setting == "alone" else "with_refs")
                a = analyze_source(src, truth["failed_run_id"], top=5).analyses[0]
                out[f"{suite}/{truth['case_id']}/{setting}"] = _names(a.run, [c.step_id for c in a.root_causes])
    for case in cases(2):
        res = WORKFLOWS[case.workflow].run(Case(case.workflow, case.fault, case.seed, distractors_for(case.seed)))
        run, _, loc = analyse(res.run, previous=res.previous)
        steps = {s.step_id: s for r in res.previous for s in r.steps}
        steps.update(run.step_map())
        out[f"fault/{case.workflow}/{case.fault}/{case.seed}"] = [steps[c.step_id].name for c in loc.candidates[:5]]
    for c in run_tau().cases:
        out[f"tau/{c.task_id}"] = c.rankings["trajdebug"][:5]
    return out


def _names(run: Any, ids: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    occ: dict[str, int] = {}
    for s in run.steps:
        seen[s.name] = seen.get(s.name, 0) + 1
        occ[s.step_id] = seen[s.name]
    by_id = {s.step_id: s for s in run.steps}
    return [f"{by_id[i].name}#{occ[i]}" for i in ids if i in by_id]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.golden")
    p.add_argument("out", nargs="?")
    p.add_argument("--compare", nargs=2, metavar=("A", "B"))
    p.add_argument("--workdir", type=Path)
    a = p.parse_args(argv)
    if a.compare:
        x, y = (json.loads(Path(f).read_text()) for f in a.compare)
        diff = sorted(k for k in set(x) | set(y) if x.get(k) != y.get(k))
        for k in diff:
            print(f"{k}: {x.get(k)} -> {y.get(k)}")
        print(f"{len(diff)} of {len(set(x) | set(y))} cases changed")
        return 1 if diff else 0
    data = collect(a.workdir or Path(tempfile.mkdtemp(prefix="trajdebug-golden-")))
    Path(a.out or "golden.json").write_text(json.dumps(data, indent=0, sort_keys=True))
    print(f"{len(data)} cases written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
