"""Speed: localization scaling, dependency inference, OTLP import throughput, store write rate.

What recording a step costs (total CPU per step, side by side with the
OpenTelemetry SDK) is measured in `benchmarks.recording`, which ``--only speed``
runs too.
"""

from __future__ import annotations

import functools
import gc
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks._common import recorded_runs, strip_own


IN, OUT = "i" * 200, "o" * 200
"""The two ~200-byte attribute values of perf-anchors.md §1."""

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class Timing:
    """A micro-benchmark's result, per operation."""

    name: str
    """What was measured."""
    min_us: float
    """Fastest repeat, µs per operation."""
    median_us: float
    """Median repeat, µs per operation."""
    max_us: float
    """Slowest repeat, µs per operation."""
    n: int
    """Operations per repeat."""
    repeats: int
    """Timed repeats."""
    note: str = ""
    """Anything worth knowing (records dropped, spans exported)."""


def _loop_timing(
    name: str,
    body: Callable[[int], Any],
    n: int,
    repeats: int,
    setup: Callable[[], Any] | None = None,
    after: Callable[[], str] | None = None,
) -> Timing:
    if setup is not None:
        setup()
    body(max(n // 10, 1))
    times = []
    for _ in range(repeats):
        if setup is not None:
            setup()
        gc.collect()
        t0 = time.perf_counter_ns()
        body(n)
        times.append((time.perf_counter_ns() - t0) / n / 1000)
    note = after() if after is not None else ""
    return Timing(name, min(times), statistics.median(times), max(times), n, repeats, note)


# -- in-process measurements ----------------------------------------------------------


def _median_seconds(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def localization_scaling(sizes: tuple[int, ...], repeats: int) -> list[dict[str, Any]]:
    """Localization time on synthetic runs of growing length (`trajdebug.analysis.baselines.synthetic_run`)."""
    from benchmarks.baselines import synthetic_run
    from trajdebug.analysis._detect import detect
    from trajdebug.analysis._localize import localize

    rows = []
    for n in sizes:
        run = synthetic_run(n, seed=1234)
        truth = run.metadata["fault"]["step_id"]
        t_detect, failures = _median_seconds(functools.partial(detect, run), repeats)
        t_loc, loc = _median_seconds(functools.partial(localize, run, failures=failures, top=5), repeats)
        ids = [c.step_id for c in loc.candidates]
        rows.append(
            {
                "steps": n,
                "edges": sum(len(s.deps) for s in run.steps),
                "detect_s": t_detect,
                "localize_s": t_loc,
                "total_s": t_detect + t_loc,
                "examined": loc.stats.steps_examined,
                "rank": ids.index(truth) + 1 if truth in ids else None,
            }
        )
    return rows


_WORDS = [
    "invoice",
    "customer",
    "region",
    "total",
    "shipping",
    "refund",
    "policy",
    "order",
    "payment",
    "account",
    "balance",
    "report",
    "quarter",
    "revenue",
    "deploy",
    "service",
    "latency",
    "error",
    "timeout",
    "retry",
    "cache",
    "index",
    "query",
    "result",
    "document",
    "summary",
    "market",
    "growth",
]


def inference_run(n: int = 10_000, output_bytes: int = 2048, seed: int = 7) -> Any:
    """A run of ``n`` steps with ~2 KB text outputs; each step quotes a passage of an earlier step's output."""
    from trajdebug.core.model import Run, Step

    rng = random.Random(seed)
    steps: list[Step] = []
    for i in range(n):
        words: list[str] = []
        while sum(len(w) + 1 for w in words) < output_bytes:
            words.append(f"{rng.choice(_WORDS)}{rng.randint(0, 99999)}")
        text = " ".join(words)[:output_bytes]
        inp: dict[str, Any] = {"task": f"step {i}"}
        if i:
            j = rng.randrange(max(0, i - 200), i)
            src = steps[j].output
            k = rng.randrange(0, len(src) - 200)
            inp["context"] = src[k : k + 200]
        steps.append(
            Step(
                f"s{i:06d}",
                f"step{i % 17}",
                "tool" if i % 3 else "llm",
                input=inp,
                output=text,
                start_ns=i * 1000,
                end_ns=i * 1000 + 500,
            )
        )
    return Run("inference-bench", "inference-bench", 0, n * 1000, "success", steps=tuple(steps))


def inference_cost(n: int, repeats: int) -> dict[str, Any]:
    """Time `trajdebug.analysis.infer.infer_dependencies` on `inference_run`."""
    from trajdebug.analysis.inference._infer import infer_dependencies

    run = inference_run(n)
    t, out = _median_seconds(lambda: infer_dependencies(run), repeats)
    truth = {s.step_id for s in run.steps[1:]}
    found = sum(1 for s in out.steps if any(d.origin == "inferred" for d in s.deps))
    return {
        "steps": n,
        "output_bytes": 2048,
        "seconds": t,
        "steps_with_inferred_edges": found,
        "steps_quoting": len(truth),
    }


def otlp_throughput(runs: list[Any], repeats: int) -> list[dict[str, Any]]:
    """Import throughput of OTLP/JSON files: trajdebug's own export, and the same stripped of its own attributes."""
    from trajdebug.core.codec import dumps
    from trajdebug.sources.formats import import_path
    from trajdebug.sources.formats.export import export_otlp

    doc = export_otlp(runs)
    rows = []
    with tempfile.TemporaryDirectory(prefix="trajdebug-bench-") as tmp:
        for label, payload in (
            ("trajdebug export (round trip)", doc),
            ("foreign OTLP (no trajdebug attributes; inference on)", strip_own(doc)),
        ):
            path = Path(tmp) / "trace.json"
            path.write_bytes(dumps(payload))
            size = path.stat().st_size
            t, res = _median_seconds(functools.partial(import_path, path, "otlp"), repeats)
            steps = sum(len(r.steps) for r in res.runs)
            rows.append(
                {
                    "file": label,
                    "mb": size / 1e6,
                    "seconds": t,
                    "mb_per_s": size / 1e6 / t,
                    "steps": steps,
                    "problems": len(res.problems),
                }
            )
    return rows


def store_rate(steps: int, runs: list[Any]) -> list[dict[str, Any]]:
    """Store write rate: recording straight into a SQLite store, and bulk `Store.write_records`."""
    import trajdebug
    from trajdebug.core.jsonl import run_to_records
    from trajdebug.store import Store

    rows = []
    with tempfile.TemporaryDirectory(prefix="trajdebug-bench-") as tmp:
        store = Store(Path(tmp) / "rec.db")
        t0 = time.perf_counter()
        with trajdebug.run("store-bench", store=store):
            for _ in range(steps):
                with trajdebug.step("x", kind="tool", input=IN) as s:
                    s.output = OUT
        dt = time.perf_counter() - t0
        loaded = store.load_run(store.run_ids()[0])
        rows.append(
            {
                "how": "recording into a store (run start to close)",
                "steps": len(loaded.steps),
                "seconds": dt,
                "steps_per_s": len(loaded.steps) / dt,
            }
        )
        store.close()
        records = [r for run in runs for r in run_to_records(run)]
        n_steps = sum(1 for r in records if r.get("t") == "step")
        store2 = Store(Path(tmp) / "bulk.db")
        t0 = time.perf_counter()
        for i in range(0, len(records), 1000):
            store2.write_records(records[i : i + 1000])
        dt = time.perf_counter() - t0
        store2.close()
        rows.append(
            {
                "how": "Store.write_records of recorded workflow runs (batches of 1,000 records)",
                "steps": n_steps,
                "seconds": dt,
                "steps_per_s": n_steps / dt,
            }
        )
    return rows


@dataclass(slots=True)
class SpeedResult:
    """Everything the speed section measured."""

    scaling: list[dict[str, Any]] = field(default_factory=list)
    inference: dict[str, Any] = field(default_factory=dict)
    otlp: list[dict[str, Any]] = field(default_factory=list)
    store: list[dict[str, Any]] = field(default_factory=list)
    e2e: dict[str, Any] = field(default_factory=dict)
    """Analysis end to end, show, import and start-up (`benchmarks.scaling.run_scaling`)."""
    seconds: float = 0.0


def run_speed(*, quick: bool = False, progress: Callable[[str], None] | None = None) -> SpeedResult:
    """Run the speed section (``quick``: fewer operations and repeats)."""
    say = progress or (lambda s: None)
    t0 = time.perf_counter()
    res = SpeedResult()
    say("speed: localization scaling")
    res.scaling = localization_scaling((100, 1_000, 10_000, 100_000), 1 if quick else 3)
    say("speed: dependency inference")
    res.inference = inference_cost(10_000, 1 if quick else 3)
    say("speed: OTLP import and store")
    runs = recorded_runs(12 if quick else 40)
    res.otlp = otlp_throughput(runs, 1 if quick else 3)
    res.store = store_rate(20_000 if quick else 100_000, runs)
    from benchmarks.scaling import run_scaling

    res.e2e = run_scaling(quick=quick, progress=say)
    res.seconds = time.perf_counter() - t0
    return res


__all__ = [
    "SpeedResult",
    "Timing",
    "inference_cost",
    "inference_run",
    "localization_scaling",
    "otlp_throughput",
    "run_speed",
    "store_rate",
]
