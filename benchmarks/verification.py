"""Verification by counterfactual replay on the benchmark workflows.

For a sample of suite cases, trajdebug's top candidates (`trajdebug.analysis._pipeline.analyze`)
are checked with `trajdebug.replay.verify`: each candidate's output is replaced
by the same step's output in the case's fault-free twin (same seed, data and
task, injector disarmed; `benchmarks.workflows._base.reference`), the agent is
re-executed through its recorded entry point, and the candidate is *verified*
when the failure goes away and no correction upstream already removes it
(Cleve & Zeller's cause transition, ICSE 2005).  The injected step is checked
the same way, as the reference of what verification can confirm.

The workflows' models are deterministic scripted stand-ins, so one replay per
patch decides (``samples=1``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchmarks.faults import Case
from benchmarks.quality import cases as suite_cases
from benchmarks.workflows import WORKFLOWS, reference, replay_case


TOP = 3
"""trajdebug candidates verified per case."""

SEEDS_QUICK = 2
SEEDS_FULL = 5


@dataclass(slots=True)
class VerifyRecord:
    """What verification made of one case."""

    case: Case
    """The case."""
    truth: str | None
    """The injected step's id (None when it lies in an earlier turn)."""
    truth_status: str | None
    """The injected step's verdict (None: not in the analysed run)."""
    top1_status: str | None
    """The verdict on trajdebug's first candidate (None: no candidate)."""
    top1_is_truth: bool
    """Whether trajdebug's first candidate is the injected step."""
    verified: str | None
    """The first verified candidate among trajdebug's top `TOP`, if any."""
    replays: int
    """Replays run for this case (the candidates and the injected step)."""
    seconds: float
    """Wall time of the twin's recording and the verification."""
    problem: str | None = None
    """Why the case could not be verified at all, or None."""
    reasons: dict[str, str] = field(default_factory=dict)
    """The verdicts' reasons, by step name (for the report's notes)."""


def verify_case(case: Case, *, top: int = TOP) -> VerifyRecord:
    """Record a case, analyse it, and verify trajdebug's top candidates and the injected step."""
    from trajdebug.analysis._pipeline import analyze
    from trajdebug.replay import Verification, verify

    res = WORKFLOWS[case.workflow].run(case)
    t0 = time.perf_counter()
    # The hand ranking: the learned model (the default since round 42) is trained on these cases.
    a = analyze(res.run, previous=res.previous, model=None)
    run = a.run  # with the inferred edges: the slices replay relies on
    truth = res.fault.get("step_id")
    steps = run.step_map()
    cands = [c.step_id for c in a.root_causes if c.run_id is None][:top]
    twin = reference(case)
    checked = list(dict.fromkeys([*cands, *([truth] if truth in steps else [])]))
    if twin.outcome != "success":
        # A twin that fails too (a race the disarmed injector does not stop) is no reference:
        # its outputs are no corrections.
        v = Verification(run.run_id, (), 0, "the fault-free twin fails too")
    else:
        v = verify(replay_case, run, checked, passing=[twin], top=len(checked), samples=1)
    by_step = {c.step_id: c for c in v.checks}
    verified = next((sid for sid in cands if sid in by_step and by_step[sid].status == "verified"), None)
    first = by_step.get(cands[0]) if cands else None
    rec = VerifyRecord(
        case,
        truth if truth in steps else None,
        by_step[truth].status if truth in by_step else None,
        first.status if first is not None else None,
        bool(cands) and cands[0] == truth,
        verified,
        v.replays,
        time.perf_counter() - t0,
        v.problem,
        {f"{c.name} ({c.status})": c.reason for c in v.checks},
    )
    return rec


@dataclass(slots=True)
class VerificationResult:
    """All verification records."""

    records: list[VerifyRecord]
    """One per case."""
    seconds: float
    """Wall time of the section."""


def run_verification(
    cases: Sequence[Case] | None = None,
    *,
    quick: bool = False,
    top: int = TOP,
    progress: Callable[[str], None] | None = None,
) -> VerificationResult:
    """Verify trajdebug's top candidates on a sample of suite cases (default: `SEEDS_QUICK` or
    `SEEDS_FULL` seeds of every workflow x fault pair)."""
    chosen = list(cases) if cases is not None else suite_cases(SEEDS_QUICK if quick else SEEDS_FULL)
    t0 = time.perf_counter()
    records = []
    for i, case in enumerate(chosen, 1):
        records.append(verify_case(case, top=top))
        if progress is not None and (i % 25 == 0 or i == len(chosen)):
            progress(f"verification: {i}/{len(chosen)} cases")
    return VerificationResult(records, time.perf_counter() - t0)


def _share(records: Sequence[VerifyRecord], test: Callable[[VerifyRecord], bool]) -> float | None:
    return sum(1 for r in records if test(r)) / len(records) if records else None


def summarize(records: Sequence[VerifyRecord]) -> dict[str, Any]:
    """Shares over a set of records: the injected step verified, the top-1's verdicts, replays."""
    in_run = [r for r in records if r.truth is not None]
    return {
        "cases": len(records),
        "truth_in_run": len(in_run),
        "truth_verified": _share(in_run, lambda r: r.truth_status == "verified"),
        "top1_is_truth": _share(records, lambda r: r.top1_is_truth),
        "top1_verified": _share(records, lambda r: r.top1_status == "verified"),
        "top1_refuted": _share(records, lambda r: r.top1_status == "refuted"),
        "top1_unresolved": _share(records, lambda r: r.top1_status in ("unresolved", None)),
        "top1_verified_not_truth": _share(
            records, lambda r: r.top1_status == "verified" and not r.top1_is_truth
        ),
        "top1_truth_refuted": _share(records, lambda r: r.top1_is_truth and r.top1_status == "refuted"),
        "top3_verified_is_truth": _share(records, lambda r: r.verified is not None and r.verified == r.truth),
        "replays_mean": sum(r.replays for r in records) / len(records) if records else None,
        "ms_mean": 1000 * sum(r.seconds for r in records) / len(records) if records else None,
    }


def verification_data(res: VerificationResult, *, quick: bool) -> dict[str, Any]:
    """The section's results as JSON data (``results.json["verification"]``)."""
    from datetime import UTC, datetime

    recs = res.records
    by_wf = {
        w: summarize([r for r in recs if r.case.workflow == w])
        for w in sorted({r.case.workflow for r in recs})
    }
    by_fault = {
        f: summarize([r for r in recs if str(r.case.fault) == f])
        for f in sorted({str(r.case.fault) for r in recs})
    }
    return {
        "quick": quick,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "seconds": res.seconds,
        "top": TOP,
        "seeds": max((r.case.seed for r in recs), default=-1) + 1,
        "overall": summarize(recs),
        "by_workflow": by_wf,
        "by_fault": by_fault,
        "problems": sorted({r.problem for r in recs if r.problem}),
    }


__all__ = [
    "SEEDS_FULL",
    "SEEDS_QUICK",
    "TOP",
    "VerificationResult",
    "VerifyRecord",
    "run_verification",
    "summarize",
    "verification_data",
    "verify_case",
]
