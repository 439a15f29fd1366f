"""The fault-injection suite: run every workflow with every fault, localize, score.

For each case the workflow is recorded once (into memory); then every method
(trajdebug's search and each baseline) gets the same prepared run (with
content-inferred edges, as `trajdebug analyze` sees it) and the same detected
failures, and is scored against the injected step.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from benchmarks.faults import Case, distractors_for
from benchmarks.metrics import Outcome, Summary, exam, rank_of, summarize
from benchmarks.workflows import WORKFLOWS
from trajdebug.core.model import Run


TOP = 10
"""Candidates asked of every method (top-k and MRR need only the first few; EXAM benefits from more)."""


SEEDS_FULL = 15
SEEDS_QUICK = 3


def cases(seeds: int, workflows: Sequence[str] | None = None) -> list[Case]:
    """Every (workflow, fault) pair with ``seeds`` seeds each; distractors vary with the seed."""
    out = []
    for name, mod in WORKFLOWS.items():
        if workflows is not None and name not in workflows:
            continue
        for fault in mod.FAULTS:
            for seed in range(seeds):
                out.append(Case(name, fault, seed, distractors_for(seed)))
    return out


@dataclass(slots=True)
class CaseRecord:
    """What one case produced."""

    case: Case
    """The case."""
    steps: int
    """Steps in the analysed run."""
    failed: bool
    """Whether the run failed (every faulted run should)."""
    truth_in_run: bool
    """Whether the ground-truth step is in the analysed run (not in an earlier turn)."""
    record_seconds: float
    """Time to run and record the workflow."""
    analyse_seconds: float
    """Time of trajdebug's whole analysis of the run."""
    reachable: bool = False
    """Whether the ground truth lies in the failures' backward slice (recorded and inferred edges)."""
    truth_name: str | None = None
    """The ground-truth step's name."""
    blamed: str | None = None
    """trajdebug's first candidate when it is not the ground truth: ``"<name> (<kind>)"``."""
    blamed_failure: bool = False
    """Whether that candidate is a step where a detector fired (the failure, not its cause)."""
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    """Each method's outcome."""


def _baselines() -> dict[str, Callable[[Run, list[Any]], Any]]:
    from benchmarks.baselines import BASELINES

    # The baselines take ``top=`` beyond the `Method` protocol's two arguments.
    return {name: functools.partial(cast(Any, fn), top=TOP) for name, fn in BASELINES.items()}


def analyse(run: Run, *, previous: Sequence[Run] = ()) -> tuple[Run, list[Any], Any]:
    """trajdebug's analysis as ``trajdebug analyze`` runs it: the prepared run, its failures, the localization.

    ``previous`` are the earlier conversation turns (`Result.previous`), which
    ``trajdebug analyze`` finds in the same source (`trajdebug.analysis.infer.previous_turns`).
    """
    from trajdebug.analysis._pipeline import analyze

    # The hand ranking: the learned model (the default since round 42) is trained on these cases.
    a = analyze(run, top=TOP, previous=previous, model=None)
    return a.run, list(a.failures), a.localization


def linear_cost(run: Run, failures: Sequence[Any], truth: str | None) -> int:
    """Steps a linear backward scan reads from the latest failure back to ``truth``, inclusive.

    A root cause outside the run (an earlier turn) costs the whole run.
    """
    pos = {s.step_id: i for i, s in enumerate(run.steps)}
    fail_idx = max((pos[f.step_id] for f in failures if f.step_id in pos), default=len(run.steps) - 1)
    if truth is None or truth not in pos:
        return fail_idx + 1
    return max(fail_idx - pos[truth], 0) + 1


def _outcome(name: str, loc: Any, truth: str | None, steps: int, lin: int, seconds: float) -> Outcome:
    cands = [c.step_id for c in loc.candidates]
    scores = [float(c.score) for c in loc.candidates]
    return Outcome(
        name,
        rank_of(cands, truth),
        exam(cands, scores, truth, steps),
        int(loc.stats.steps_examined),
        lin,
        seconds,
    )


def reachable(run: Run, failures: Sequence[Any], truth: str | None) -> bool:
    """Whether the ground truth is in the failures' backward slice over the run's own edges.

    The graph's implicit child -> enclosing-agent edges are left out: through them every
    step of an agent reaches the agent, whatever actually flowed.
    """
    from trajdebug.core.graph import CHILD_KEY, DependencyGraph

    g = DependencyGraph(run)
    if truth is None or truth not in g:
        return False
    seen = {f.step_id for f in failures if f.step_id in g}
    stack = list(seen)
    while stack:
        for d in g.parents(stack.pop()):
            if d.key != CHILD_KEY and d.step_id not in seen:
                seen.add(d.step_id)
                stack.append(d.step_id)
    return truth in seen


def run_case(case: Case, baselines: dict[str, Callable[[Run, list[Any]], Any]]) -> CaseRecord:
    """Record one case and score trajdebug and every baseline on it.

    trajdebug's time is the whole `analyze` call (detection, graph, lifecycle,
    search); a baseline's is its own call, given the failures trajdebug detected.
    """
    t0 = time.perf_counter()
    res = WORKFLOWS[case.workflow].run(case)
    t1 = time.perf_counter()
    run, failures, loc = analyse(res.run, previous=res.previous)
    t2 = time.perf_counter()
    truth = res.fault.get("step_id")
    n = len(run.steps)
    rec = CaseRecord(
        case, n, run.outcome == "failure", truth in {s.step_id for s in run.steps}, t1 - t0, t2 - t1
    )
    rec.reachable = reachable(run, failures, truth)
    steps = {s.step_id: s for r in res.previous for s in r.steps}
    steps.update(run.step_map())
    rec.truth_name = steps[truth].name if truth in steps else None
    if loc.candidates and loc.candidates[0].step_id != truth:
        top = steps[loc.candidates[0].step_id]
        rec.blamed = f"{top.name} ({top.kind})"
        rec.blamed_failure = top.step_id in {f.step_id for f in failures}
    lin = linear_cost(run, failures, truth)
    rec.outcomes["trajdebug"] = _outcome("trajdebug", loc, truth, n, lin, t2 - t1)
    for name, method in baselines.items():
        s0 = time.perf_counter()
        bl = method(run, failures)
        rec.outcomes[name] = _outcome(name, bl, truth, n, lin, time.perf_counter() - s0)
    return rec


def _has(attr: str, value: str, r: CaseRecord) -> bool:
    return str(getattr(r.case, attr)) == value


@dataclass(slots=True)
class SuiteResult:
    """All case records, with aggregation helpers."""

    records: list[CaseRecord]
    """One per case."""
    seconds: float
    """Wall time of the whole suite."""

    @property
    def methods(self) -> list[str]:
        """The methods scored, trajdebug first."""
        return list(self.records[0].outcomes) if self.records else []

    def summary(self, key: Callable[[CaseRecord], bool] = lambda r: True) -> dict[str, Summary]:
        """Per-method summaries over the records that satisfy ``key``."""
        chosen = [r for r in self.records if key(r)]
        return {m: summarize(m, [r.outcomes[m] for r in chosen]) for m in self.methods}

    def groups(self, attr: str) -> dict[str, dict[str, Summary]]:
        """Per-method summaries for each value of ``case.<attr>`` (``workflow`` or ``fault``)."""
        values = sorted({str(getattr(r.case, attr)) for r in self.records})
        out = {}
        for v in values:
            out[v] = self.summary(functools.partial(_has, attr, v))
        return out


def run_suite(
    *, quick: bool = False, seeds: int | None = None, progress: Callable[[str], None] | None = None
) -> SuiteResult:
    """Run the whole suite (``quick``: a few seeds per pair)."""
    n = seeds if seeds is not None else (SEEDS_QUICK if quick else SEEDS_FULL)
    baselines = _baselines()
    t0 = time.perf_counter()
    records = []
    all_cases = cases(n)
    for i, case in enumerate(all_cases, 1):
        records.append(run_case(case, baselines))
        if progress is not None and (i % 50 == 0 or i == len(all_cases)):
            progress(f"quality: {i}/{len(all_cases)} cases")
    return SuiteResult(records, time.perf_counter() - t0)


__all__ = [
    "TOP",
    "CaseRecord",
    "SuiteResult",
    "analyse",
    "cases",
    "linear_cost",
    "reachable",
    "run_case",
    "run_suite",
]
