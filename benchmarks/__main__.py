"""``python -m benchmarks``: run the benchmarks and rewrite ``docs/benchmarks.md``.

The raw results (``benchmarks/results.json``) are produced, not committed:
``--only`` keeps the other sections from earlier runs on this checkout, and
warns when there are none (the document then holds only the sections run).
``--quick`` writes beside them (``docs/benchmarks.quick.md``,
``benchmarks/results.quick.json``) unless ``--replace`` is given.  Progress is
printed only when stderr is a terminal.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import report
from benchmarks._common import machine


ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results.json"
QUICK_RESULTS = Path(__file__).resolve().parent / "results.quick.json"
DOCUMENT = "docs/benchmarks.md"
QUICK_DOCUMENT = "docs/benchmarks.quick.md"


def _say(msg: str) -> None:
    # Progress on a terminal only: piped output (CI logs, files) stays quiet.
    if sys.stderr.isatty():
        print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the chosen sections, store their results, render the document."""
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    p.add_argument("--quick", action="store_true", help="a smaller run (under two minutes)")
    p.add_argument(
        "--only",
        choices=("ask", "blind", "quality", "verification", "speed", "recording", "tau", "report_html", "fleet", "reliability", "production"),
        action="append",
        help="run only this section (repeatable)",
    )
    p.add_argument(
        "--out",
        help=f"the document to write (default: {DOCUMENT}; with --quick, {QUICK_DOCUMENT} unless --replace)",
    )
    p.add_argument("--results", help="where the raw results are kept (JSON; with --quick, results.quick.json)")
    p.add_argument(
        "--replace", action="store_true", help="with --quick, write the committed document and results anyway"
    )
    p.add_argument("--workdir", type=Path, help="where generated suites are cached (the production section's blind suites)")
    a = p.parse_args(argv)
    beside = a.quick and not a.replace
    a.out = a.out or (QUICK_DOCUMENT if beside else DOCUMENT)
    a.results = a.results or str(QUICK_RESULTS if beside else RESULTS)
    sections = a.only or ["ask", "blind", "quality", "verification", "tau", "speed", "report_html"]
    results_path = Path(a.results)
    data: dict[str, Any] = {}
    if beside and not results_path.exists() and RESULTS.exists():
        # The quick document shows the other sections as last committed.
        results_path.write_text(RESULTS.read_text())
    if results_path.exists():
        try:
            data = json.loads(results_path.read_text())
        except ValueError:
            _say(f"{results_path}: unreadable, starting afresh")
    elif a.only:
        # Said even off a terminal: the document is about to lose the sections not run.
        print(
            f"{results_path}: no earlier results on this checkout; {a.out} will hold only {', '.join(sections)}",
            file=sys.stderr,
            flush=True,
        )
    t0 = time.perf_counter()
    if "ask" in sections:
        from benchmarks.ask import run_ask

        _say("ask: the guided search with an oracle simulated from fault-free twins")
        data["ask"] = run_ask(quick=a.quick, progress=_say, workdir=a.workdir)
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
    if "speed" in sections or "recording" in sections:
        from benchmarks.recording import run_recording

        data["recording"] = run_recording(quick=a.quick, progress=_say)
    if "speed" in sections:
        from benchmarks.speed import run_speed

        data["speed"] = report.speed_data(run_speed(quick=a.quick, progress=_say), quick=a.quick)
    if "report_html" in sections:
        from benchmarks.report_html import GOAL_S, run_report_html

        timings = run_report_html(quick=a.quick, progress=_say)
        data["report_html"] = {
            "date": machine()["date"],
            "quick": a.quick,
            "goal_s": GOAL_S,
            "runs": [t.to_dict() for t in timings],
        }
    if "fleet" in sections:
        from benchmarks.fleet import run_fleet_bench

        data["fleet"] = run_fleet_bench(quick=a.quick, progress=_say)
    if "reliability" in sections:
        from benchmarks.reliability import run_reliability

        m = machine()
        data["reliability"] = {"date": m["date"], "machine": f"{m['cpu']}, {m['cores']} cores", **run_reliability(quick=a.quick, progress=_say)}
    if "production" in sections:
        from benchmarks.production import run_production

        data["production"] = {"date": machine()["date"], **run_production(quick=a.quick, progress=_say, workdir=a.workdir)}
    data["machine"] = machine()
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
    print(f"wrote {out} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
