"""Where the guided search misses a root on the graph: the question trail of each miss, suite by suite.

The same measurement as the ``guided`` part of `benchmarks.score_heldout` (`benchmarks.ask.heldout_case`:
the failed run analysed alone with the hand ranking as prior, the oracle simulated from the passing
control run beside the case), run on suites already recorded in a workdir (never generated here).  For
each case whose root lies on the recorded graph but is not found by the three-valued (or two-valued)
oracle with the ``prior`` strategy, the trail is listed: each step asked, the oracle's answer, and why
the simulated oracle said so (equal to the control's same step; different; no counterpart; before the root).

Carry-check suites are measured for totals only: ``--misses`` refuses them.

    PYTHONHASHSEED=0 PYTHONPATH=src:. python -m benchmarks.ask_misses suite_zn --workdir WD --misses
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.ask import AskCase, _key, _suite, control_oracle, control_oracle3, guided_lines, heldout_case
from benchmarks.blind import _cases, _source, truth_step
from trajdebug.analysis import guided_search
from trajdebug.core.model import Run


CARRY = frozenset({"suite_q", "suite_t", "suite_zp", "suite_zq", "suite_zt", "suite_zu", "suite_zv", "suite_zw", "suite_zx", "suite_zy"})
"""Suites measured for totals only (their misses are never listed or read)."""


def _why(step_id: str, run: Run, control: Run, root: str) -> str:
    """The simulated oracle's reason for its answer on one step."""
    from trajdebug.analysis._oracles import effect, same_output

    twins = {k: control.step(sid) for sid, k in _key(control).items()}
    step = run.step(step_id)
    twin = twins.get(_key(run)[step_id])
    if twin is None:
        base = "no counterpart in the control"
    elif twin.status != step.status:
        base = f"status {step.status} vs control {twin.status}"
    elif same_output(effect(step), effect(twin)):
        base = "equal to the control"
    else:
        base = "differs from the control"
    pos = [s.step_id for s in run.steps]
    if base != "equal to the control" and control_oracle(run, control, root)(step, run):
        base += ", but before the root (noise)"
    rel = "root" if step_id == root else ("before" if pos.index(step_id) < pos.index(root) else "after")
    return f"{base}; {rel} the root"


def trail(case_dir: Path, truth: dict[str, Any], *, three: bool = True) -> dict[str, Any] | None:
    """The prior search's questions on one case (three-valued oracle, else two-valued), with the oracle's reasons."""
    from trajdebug.api import analyze_source
    from trajdebug.sources.load import load_runs

    [a] = analyze_source(_source(case_dir, "failed"), truth["failed_run_id"], top=10, model=None).analyses
    controls = [r for r in load_runs(_source(case_dir, "control")) if r.outcome == "success"]
    sid = truth_step(a.run, truth["root"])
    if sid is None or not controls:
        return None
    control = controls[-1]
    oracle = control_oracle3(a.run, control, sid) if three else control_oracle(a.run, control, sid)
    g = guided_search(a, oracle, timeout=None)
    at = {s.step_id: i for i, s in enumerate(a.run.steps)}
    names = {s.step_id: f"{s.name} #{at[s.step_id]}" for s in a.run.steps}
    steps = []
    for q in g.questions:
        word = "correct" if q.correct else ("wrong" if q.admissible is None else "erroneous" if q.admissible else "inadmissible")
        steps.append(f"{names.get(q.step_id)} -> {word} ({_why(q.step_id, a.run, control, sid)})")
    return {
        "root": names[sid],
        "found": f"{names.get(g.root or '')} certain={g.certain}",
        "conflict": [names.get(c) for c in g.conflict],
        "candidates": [f"{names.get(c)} {p:.2f}" for c, p in g.candidates[:4]],
        "implied": [f"{names.get(x.step_id)} {'correct' if x.correct else 'wrong'}" for x in g.implied],
        "questions": steps,
        "steps": len(a.run.steps),
    }


def _main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ask_misses")
    p.add_argument("suites", nargs="+")
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--misses", action="store_true", help="list the misses' trails (never on a carry check)")
    p.add_argument("--json", type=Path, help="append one JSON line per case (case, found, questions) here")
    a = p.parse_args()
    if a.misses and CARRY.intersection(a.suites):
        sys.exit(f"--misses refused on carry checks: {sorted(CARRY.intersection(a.suites))}")
    pooled: list[AskCase] = []
    for name in a.suites:
        root = a.workdir / name
        rows = []
        for t in _cases(root):
            r = heldout_case(root / str(t["case_id"]), t)
            rows.append(r)
            if a.json:
                with a.json.open("a") as fh:
                    fh.write(json.dumps({"suite": name, "case": r.case_id, "on_graph": r.on_graph,
                                         "skipped": r.skipped, "two": {"found": r.found, "q": r.questions,
                                         "noisy": r.noisy, "recheck": r.noisy_recheck},
                                         "three": r.three}) + "\n")
            missed = r.skipped is None and r.on_graph and not (r.three.get("found", {}).get("prior") and r.found.get("prior"))
            if a.misses and missed:
                print(f"== {name} {r.case_id}: three-valued found={r.three['found']['prior']} "
                      f"two-valued found={r.found['prior']}", flush=True)
                three = not r.three["found"]["prior"]
                print(("three-valued " if three else "two-valued ")
                      + json.dumps(trail(root / str(t["case_id"]), t, three=three), indent=1), flush=True)
        pooled += rows
        for line in guided_lines(name, _suite(rows)["all"]):
            print(line, flush=True)
    if len(a.suites) > 1:
        for line in guided_lines("pooled", _suite(pooled)["all"]):
            print(line, flush=True)


if __name__ == "__main__":
    _main()
