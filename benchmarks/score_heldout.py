"""Score a fresh held-out suite once, every way this round measures: ``python -m benchmarks.score_heldout SUITE``.

A held-out suite is written blind, frozen, then scored once (docs/benchmarks.md).  This module is that
once: it generates the suite into a scratch folder and measures, on the same cases,

- the hand ranking (the default), alone and with the agent's passing runs as references, overall and by
  route (`benchmarks.blind.score_case`);
- the learned ranker (``model="default"``), likewise, with how often its ``confident`` verdict was right;
- the guided search (`benchmarks.ask.heldout_case`: a truthful oracle simulated from each case's
  fault-free control run, then with a tenth of the answers flipped), two-valued and three-valued
  (Naish's erroneous / inadmissible), printed on two lines;

and writes ``benchmarks/heldout/SUITE/SCORED.json`` with the date and the commit.  It refuses a suite
whose ``SCORED.json`` exists (a suite is scored once; ``--again`` to overwrite a broken measurement).
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from benchmarks.blind import HERE, SETTINGS, CaseResult, _cases, generate, score_case


def _rates(rows: list[CaseResult]) -> dict[str, Any]:
    n = len(rows)
    return {
        "n": n,
        "top1": round(sum(r.rank == 1 for r in rows) / n, 3) if n else None,
        "top3": round(sum(r.rank is not None and r.rank <= 3 for r in rows) / n, 3) if n else None,
        "ranked": round(sum(r.rank is not None for r in rows) / n, 3) if n else None,
        "on_path": sum(r.on_path for r in rows),
        "ranked_on_path": sum(r.rank is not None for r in rows if r.on_path),
    }


def _ranking(root: Path, model: str | None) -> dict[str, Any]:
    rows = [score_case(root / t["case_id"], t, s, model) for t in _cases(root) for s in SETTINGS]
    out: dict[str, Any] = {}
    for setting in SETTINGS:
        rs = [r for r in rows if r.setting == setting]
        by_route: dict[str, list[CaseResult]] = defaultdict(list)
        by_kind: dict[str, list[CaseResult]] = defaultdict(list)
        for r in rs:
            by_route[r.route].append(r)
            by_kind[r.fault_kind].append(r)
        # The ranker's verdict (`CaseResult.verdict` reads `Analysis.ranking_verdict`, never "proved").
        confident = [r for r in rs if r.verdict == "confident"]
        out[setting] = {
            **_rates(rs),
            "by_route": {k: _rates(v) for k, v in sorted(by_route.items())},
            "by_fault_kind": {k: _rates(v) for k, v in sorted(by_kind.items())},
            "errors": sorted({r.error for r in rs if r.error}),
        }
        if model is not None:
            out[setting]["confident"] = {"n": len(confident), "right": sum(r.rank == 1 for r in confident)}
    return out


def score(suite: str, *, again: bool = False, out: Path | None = None) -> dict[str, Any]:
    """Generate ``suite`` afresh and score it every way; the result is also written to its SCORED.json
    (or ``out``)."""
    from benchmarks.ask import _suite, heldout_case

    dest = out or HERE / suite / "SCORED.json"
    if dest.exists() and not again:
        raise SystemExit(f"{dest} exists: a held-out suite is scored once (--again to redo a broken measurement)")
    work = Path(tempfile.mkdtemp(prefix=f"trajdebug-{suite}-"))
    root = generate(suite, work)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    result = {
        "suite": suite,
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "command": f"PYTHONPATH=src:. python -m benchmarks.score_heldout {suite}",
        "cases": len(_cases(root)),
        "hand": _ranking(root, None),
        "learned": _ranking(root, "default"),
        "guided": _suite([heldout_case(root / str(t["case_id"]), t) for t in _cases(root)]),
    }
    dest.write_text(json.dumps(result, indent=1) + "\n")
    return result


def _main() -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks.score_heldout")
    p.add_argument("suite")
    p.add_argument("--again", action="store_true", help="overwrite an existing SCORED.json")
    p.add_argument("--out", type=Path, help="write the result here instead (a trial run of this script)")
    a = p.parse_args()
    r = score(a.suite, again=a.again, out=a.out)
    for name in ("hand", "learned"):
        for s in SETTINGS:
            m = r[name][s]
            extra = f"  confident {m['confident']['right']}/{m['confident']['n']}" if "confident" in m else ""
            print(f"{name:8} {s:10} top-1 {m['top1']:.0%}  top-3 {m['top3']:.0%}  ranked {m['ranked']:.0%}{extra}")
    from benchmarks.ask import guided_lines

    for line in guided_lines("guided", r["guided"]["all"]):
        print(line)


if __name__ == "__main__":
    _main()
