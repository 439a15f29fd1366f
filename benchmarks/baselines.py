"""Baseline localization methods, behind the same interface as `localize`.

Each baseline is ``(run, failures) -> Localization`` and counts, honestly, the
steps it looked at to produce its ranking (``stats.steps_examined``), so the
benchmarks can compare top-1/top-3, MRR and EXAM (Wong et al.) at equal terms.
The ones that need to tell a faulty step from a sound one use the same
diagnosers as trajdebug's search; what differs is the order they look in:

``last-error``     the last step that shows an error, scanning back from the end;
``first-error``    the first step that shows an error, scanning from the start;
``linear-scan``    diagnose steps backward in time from the failure;
``bfs``            diagnose steps breadth-first over the dependencies from the failure;
``binary-search``  bisect the timeline before the failure for the first faulty step
                   (Who&When's "binary search" strategy, with diagnosers as the judge).

`synthetic_run` builds large random dependency DAGs with a planted fault, for
scaling measurements and benchmark smoke tests.
"""

from __future__ import annotations

import random
import time
from collections import deque
from collections.abc import Callable, Sequence

from trajdebug.analysis._detect import Failure
from trajdebug.analysis._localize import Candidate, Localization, SearchStats, localize
from trajdebug.analysis.diagnosers import DiagnoseContext, registered_diagnosers
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Dependency, ErrorInfo, Run, Step


Method = Callable[[Run, list[Failure]], Localization]
"""A localization method: a run and its failures in, ranked candidates out."""

DEFAULT_TOP = 5


def _result(
    method: str,
    run: Run,
    picks: Sequence[tuple[str, str]],
    examined: int,
    t0: float,
    failures: Sequence[Failure],
) -> Localization:
    n = len(picks)
    cands = [
        Candidate(sid, round(1.0 - i / max(n, 1), 6), (why,), (sid,), (), True)
        for i, (sid, why) in enumerate(picks)
    ]
    return Localization(
        cands, SearchStats(len(run.steps), examined, time.perf_counter() - t0), method, tuple(failures)
    )


def _shows_error(step: Step, failed: set[str]) -> bool:
    return step.status == "error" or step.step_id in failed


def last_error(run: Run, failures: list[Failure], *, top: int = DEFAULT_TOP) -> Localization:
    """Blame the steps that show an error, latest first."""
    t0 = time.perf_counter()
    failed = {f.step_id for f in failures}
    picks: list[tuple[str, str]] = []
    examined = 0
    for s in reversed(run.steps):
        examined += 1
        if _shows_error(s, failed):
            picks.append(
                (
                    s.step_id,
                    "the last step showing an error" if not picks else "an earlier step showing an error",
                )
            )
            if len(picks) >= top:
                break
    return _result("last-error", run, picks, examined, t0, failures)


def first_error(run: Run, failures: list[Failure], *, top: int = DEFAULT_TOP) -> Localization:
    """Blame the steps that show an error, earliest first."""
    t0 = time.perf_counter()
    failed = {f.step_id for f in failures}
    picks: list[tuple[str, str]] = []
    examined = 0
    for s in run.steps:
        examined += 1
        if _shows_error(s, failed):
            picks.append(
                (
                    s.step_id,
                    "the first step showing an error" if not picks else "a later step showing an error",
                )
            )
            if len(picks) >= top:
                break
    return _result("first-error", run, picks, examined, t0, failures)


def _ctx(run: Run, failures: Sequence[Failure]) -> tuple[DependencyGraph, DiagnoseContext]:
    from trajdebug.analysis._localize import failure_evidence

    g = DependencyGraph(run)
    return g, DiagnoseContext.build(
        run, g, diagnosers=registered_diagnosers(), extra=failure_evidence(failures), failures=failures
    )


def _last_failure_index(run: Run, g: DependencyGraph, failures: Sequence[Failure]) -> int:
    idx = [g.position(f.step_id) for f in failures if f.step_id in g]
    return max(idx) if idx else len(run.steps) - 1


def linear_scan(run: Run, failures: list[Failure], *, top: int = DEFAULT_TOP) -> Localization:
    """Diagnose steps backward in time from the (latest) failure; blame the faulty ones in that order."""
    t0 = time.perf_counter()
    g, ctx = _ctx(run, failures)
    picks: list[tuple[str, str]] = []
    for i in range(_last_failure_index(run, g, failures), -1, -1):
        v = ctx.verdict(run.steps[i].step_id)
        if v.faulty:
            picks.append((v.step_id, v.reasons[0] if v.reasons else "diagnosed faulty"))
            if len(picks) >= top:
                break
    return _result("linear-scan", run, picks, ctx.diagnosed, t0, failures)


def bfs(run: Run, failures: list[Failure], *, top: int = DEFAULT_TOP) -> Localization:
    """Diagnose steps breadth-first over the dependencies from the failures; blame the faulty ones in that order."""
    t0 = time.perf_counter()
    g, ctx = _ctx(run, failures)
    seeds = list(dict.fromkeys(f.step_id for f in failures if f.step_id in g))
    if not seeds and run.steps:
        seeds = [run.steps[-1].step_id]
    seen = set(seeds)
    queue = deque(seeds)
    picks: list[tuple[str, str]] = []
    while queue and len(picks) < top:
        sid = queue.popleft()
        v = ctx.verdict(sid)
        if v.faulty:
            picks.append((sid, v.reasons[0] if v.reasons else "diagnosed faulty"))
        for d in g.parents(sid):
            if d.step_id not in seen:
                seen.add(d.step_id)
                queue.append(d.step_id)
    return _result("bfs", run, picks, ctx.diagnosed, t0, failures)


def binary_search(run: Run, failures: list[Failure], *, top: int = DEFAULT_TOP) -> Localization:
    """Bisect the timeline up to the failure for the earliest faulty step.

    Assumes a single fault whose infection persists (a step after it stays
    faulty), as Who&When's binary-search strategy does; each probe diagnoses
    one step.  The first pick is the bisection's answer; the other faulty
    probes follow, nearest first.
    """
    t0 = time.perf_counter()
    if not run.steps:
        return _result("binary-search", run, [], 0, t0, failures)
    g, ctx = _ctx(run, failures)
    lo, hi = 0, _last_failure_index(run, g, failures)
    while lo < hi:
        mid = (lo + hi) // 2
        if ctx.verdict(run.steps[mid].step_id).faulty:
            hi = mid
        else:
            lo = mid + 1
    answer = run.steps[hi].step_id
    picks = [(answer, "earliest faulty step found by bisecting the timeline")]
    probed = [
        sid
        for sid in (s.step_id for s in run.steps)
        if (v := ctx.known(sid)) is not None and v.faulty and sid != answer
    ]
    probed.sort(key=lambda sid: abs(g.position(sid) - hi))
    picks += [(sid, "a faulty step probed while bisecting") for sid in probed[: top - 1]]
    return _result("binary-search", run, picks, ctx.diagnosed, t0, failures)


def _trajdebug(run: Run, failures: list[Failure], *, top: int = DEFAULT_TOP) -> Localization:
    return localize(run, failures=failures, top=top)


BASELINES: dict[str, Method] = {
    "last-error": last_error,
    "first-error": first_error,
    "linear-scan": linear_scan,
    "bfs": bfs,
    "binary-search": binary_search,
}
"""The baseline methods by name."""

METHODS: dict[str, Method] = {"trajdebug": _trajdebug, **BASELINES}
"""trajdebug's search and the baselines, by name."""


# -- synthetic runs ------------------------------------------------------------------


def synthetic_run(n: int = 100_000, *, seed: int = 1234, max_parents: int = 5) -> Run:
    """A random dependency DAG of ``n`` steps with one planted fault.

    Step i (i >= 1) consumes 1..``max_parents`` distinct earlier steps drawn
    uniformly (the graph of perf-anchors section 5: ~3 edges per step).  One
    ancestor of the last step, chosen at random, is the fault: an LLM step whose
    output is malformed JSON; every step on a path from it to the last step
    failed with an error (the infection propagating), and the run failed.
    ``run.metadata["fault"]`` names it, as the demo does.
    """
    if n < 2:
        raise ValueError(f"synthetic_run needs at least 2 steps, got {n}")
    rng = random.Random(seed)
    parents: list[list[int]] = [[]]
    for i in range(1, n):
        k = min(i, rng.randint(1, max_parents))
        parents.append(rng.sample(range(i), k) if i > k else list(range(i)))
    # Ancestors of the last step, and a fault among them.
    anc = {n - 1}
    stack = [n - 1]
    while stack:
        for p in parents[stack.pop()]:
            if p not in anc:
                anc.add(p)
                stack.append(p)
    fault = rng.choice(sorted(anc - {n - 1}))
    # Steps on a path fault -> last: descendants of the fault among the ancestors.
    infected = {fault}
    for i in range(fault + 1, n):
        if i in anc and any(p in infected for p in parents[i]):
            infected.add(i)
    steps = []
    for i in range(n):
        sid = f"s{i}"
        deps = tuple(Dependency(f"s{p}", "data", "tracked") for p in parents[i])
        if i == fault:
            steps.append(
                Step(
                    sid,
                    f"step{i}",
                    "llm",
                    input={"x": i},
                    output='{"value": 1,',
                    start_ns=i * 1000,
                    end_ns=i * 1000 + 500,
                    deps=deps,
                )
            )
        elif i in infected:
            err = ErrorInfo("ValueError", "bad input from upstream")
            steps.append(
                Step(
                    sid,
                    f"step{i}",
                    "other",
                    input={"x": i},
                    status="error",
                    error=err,
                    start_ns=i * 1000,
                    end_ns=i * 1000 + 500,
                    deps=deps,
                )
            )
        else:
            steps.append(
                Step(
                    sid,
                    f"step{i}",
                    "other",
                    input={"x": i},
                    output={"value": i},
                    start_ns=i * 1000,
                    end_ns=i * 1000 + 500,
                    deps=deps,
                )
            )
    return Run(
        f"synthetic-{n}-{seed}",
        "synthetic",
        start_ns=0,
        end_ns=n * 1000,
        outcome="failure",
        failure_reason="the last step failed",
        metadata={"fault": {"name": f"step{fault}", "step_id": f"s{fault}"}},
        steps=tuple(steps),
    )


__all__ = [
    "BASELINES",
    "METHODS",
    "Method",
    "bfs",
    "binary_search",
    "first_error",
    "last_error",
    "linear_scan",
    "synthetic_run",
]
