"""``python -m benchmarks``: run the benchmarks and rewrite ``docs/benchmarks.md``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import report


ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results.json"


def _say(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the chosen sections, store their results, render the document."""
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true", help="a smaller run (under two minutes)")
    p.add_argument(
        "--only",
        choices=("blind", "quality", "verification", "speed", "tau", "report_html", "fleet"),
        action="append",
        help="run only this section (repeatable)",
    )
    p.add_argument(
        "--out", default="docs/benchmarks.md", help="the document to write (default: docs/benchmarks.md)"
    )
    p.add_argument("--results", default=str(RESULTS), help="where the raw results are kept (JSON)")
    a = p.parse_args(argv)
    sections = a.only or ["blind", "quality", "verification", "tau", "speed", "report_html"]
    results_path = Path(a.results)
    data: dict[str, Any] = {}
    if results_path.exists():
        try:
            data = json.loads(results_path.read_text())
        except ValueError:
            _say(f"{results_path}: unreadable, starting afresh")
    t0 = time.perf_counter()
    if "blind" in sections:
        from benchmarks.blind import blind_data, run_blind

        _say("blind: generating and scoring the held-out suites")
        data["blind"] = blind_data(run_blind(progress=_say))
    if "quality" in sections:
        from benchmarks.quality import run_suite

        data["quality"] = report.quality_data(run_suite(quick=a.quick, progress=_say), quick=a.quick)
    if "verification" in sections:
        from benchmarks.verification import run_verification, verification_data

        data["verification"] = verification_data(
            run_verification(quick=a.quick, progress=_say), quick=a.quick
        )
    if "tau" in sections:
        from benchmarks.tau import run_tau

        _say("tau: analysing the AgentRx tau-bench runs")
        data["tau"] = report.tau_data(run_tau())
    if "speed" in sections:
        from benchmarks.speed import run_speed

        data["speed"] = report.speed_data(run_speed(quick=a.quick, progress=_say), quick=a.quick)
    if "report_html" in sections:
        from benchmarks.report_html import GOAL_S, run_report_html

        timings = run_report_html(quick=a.quick, progress=_say)
        data["report_html"] = {
            "date": report.machine()["date"],
            "quick": a.quick,
            "goal_s": GOAL_S,
            "runs": [t.to_dict() for t in timings],
        }
    if "fleet" in sections:
        from benchmarks.fleet import run_fleet_bench

        data["fleet"] = run_fleet_bench(quick=a.quick, progress=_say)
    data["machine"] = report.machine()
    results_path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    cmd = (
        "python -m benchmarks"
        + (" --quick" if a.quick else "")
        + "".join(f" --only {s}" for s in a.only or ())
    )
    out = Path(a.out)
    if not out.is_absolute():
        out = ROOT / out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.render(data, cmd))
    _say(f"wrote {out} ({time.perf_counter() - t0:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
