"""Tests of the production benchmark: its measures on small inputs, a cost child, the report section."""

from __future__ import annotations

import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
# `pytest` run without `python -m` does not put the repo root, where `benchmarks` lives, on the path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.production import (  # noqa: E402
    export_restart_bench,
    render_section,
    run_child,
    sampling_bench,
    timeout_bench,
)


def test_sampling_bench_keeps_every_failure() -> None:
    """Over 300 real runs at rate 0.2, every failure is kept and successes are within 4 sigmas."""
    s = sampling_bench(300, 0.2)
    assert s["failures"] == s["failures_kept"] > 0
    assert abs(s["z"]) < 4
    assert s["why"].get("failure") == s["failures"]


def test_export_restart_bench_loses_nothing() -> None:
    """Across a receiver outage every recorded span arrives."""
    e = export_restart_bench(runs=12, steps=3)
    assert e["spans_recorded"] == e["spans_received"] and 0 == e["dropped"]


def test_timeout_bench_measures_each_form() -> None:
    """Sync, async and threaded bounded calls are each measured, none returning before the bound."""
    t = timeout_bench(0.05, 2)
    assert {"sync", "async", "threads"} == set(t["rows"])
    assert all(r["calls"] >= 2 and r["median_over_pct"] >= 0 for r in t["rows"].values())


def test_a_cost_child_measures_a_mode_and_checks_the_file() -> None:
    """A mode's child runs in its own interpreter: total and agent CPU per step, the bytes a kept run
    wrote; a run sampled out leaves no file (the child checks the steps on disk and fails otherwise)."""
    kept = run_child("summary", 2000, 1)
    assert kept["total_us"] >= kept["agent_us"] > 0 and kept["bytes_per_step"] > 0 and 0 == kept["lost"]
    dropped = run_child("tail-dropped", 2000, 1)
    assert dropped["agent_us"] > 0 and 0 == dropped["bytes_per_step"]


def test_the_section_renders_every_measure() -> None:
    """Every part of the results appears in the Markdown section."""
    data = {
        "date": "2026-01-01",
        "n": 10,
        "repeats": 1,
        "cost": [
            {"case": "full", "name": "full recording", "total_us": 2.0, "total_median_us": 2.5, "agent_us": 1.0,
             "bytes_per_step": 500.0, "lost": 0},
            {"case": "otel-batch", "name": "OpenTelemetry SDK span", "total_us": 16.0, "total_median_us": 17.0,
             "agent_us": 9.0},
        ],
        "latency": [{"mode": "export-down", "p50_us": 1, "p99_us": 2, "p999_us": 3, "max_us": 400, "over_1ms": 0}],
        "sampling": {"runs": 10, "rate": 0.1, "failures": 3, "failures_kept": 3, "successes": 7, "successes_kept": 1,
                     "expected": 0.7, "sigma": 0.8, "z": 0.4, "why": {}, "seconds": 1.0},
        "export": {"runs": 2, "spans_recorded": 8, "spans_received": 8, "retries": 3, "dropped": 0, "requests": 5},
        "timeouts": {"bound_s": 0.1, "rows": {"sync": {"calls": 2, "median_over_pct": 1.0, "max_over_pct": 2.0}}},
        "summary_quality": {"full": {"cases": 4, "top1": 0.5, "top3": 1.0, "found": 1.0}},
        "summary_blind": {"suite_b": {"full": {"alone": {"cases": 2, "top1": 0.5, "top3": 1.0}},
                                      "summary": {"alone": {"cases": 2, "top1": 0.0, "top3": 0.5}}}},
    }
    text = "\n".join(render_section(data))
    for needle in ("| full recording | 2.00 | 2.50 | 1.00 | 500 | the OTel SDK costs 8.0× this |", "collector down", "3 of 3 failures kept", "8 of 8 spans received", "| sync |",
                   "| full | 4 | 50 %", "| suite_b | alone | 50 % | 0 % |"):
        assert needle in text
