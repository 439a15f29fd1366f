"""One call from a run to its analysis: failures, error lifecycle, ranked root causes.

`analyze` chains the pieces: it declares the outcome when the source did not
carry one, infers data dependencies when the run has none (imported traces),
builds the dependency graph, runs the failure detectors, summarizes the error
lifecycle, and localizes the root cause.  `Analysis.to_dict` is the JSON of
``trajdebug analyze --json`` (documented in ``docs/analysis.md``).
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from trajdebug.analysis import _content as content
from trajdebug.analysis import learned as _learned
from trajdebug.analysis._detect import Detector, Failure, detect, final_step, superseded
from trajdebug.analysis._graph import DependencyGraph
from trajdebug.analysis._localize import Candidate, Localization, localize
from trajdebug.analysis.diagnosers import is_check
from trajdebug.analysis.diagnosers._context import Diagnoser, Evidence
from trajdebug.analysis.inference import NAMED_KEY, named_edges, structural_edges, thin_inferred, with_context
from trajdebug.analysis.lineage import Lineage
from trajdebug.analysis.reference import learn, returns_empty
from trajdebug.model import Outcome, Run


@dataclass(frozen=True, slots=True)
class Analysis:
    """What trajdebug found in one run."""

    run: Run
    """The run analyzed (with its declared outcome and inferred edges, if any)."""
    failures: tuple[Failure, ...]
    """The failures the detectors found."""
    localization: Localization
    """The ranked root-cause candidates and the search statistics."""
    error_report: Any = None
    """The error-lifecycle report (`trajdebug.analysis.lifecycle._analyze`), when available."""
    inferred: bool = False
    """True when content inference added dependencies to the run (`trajdebug.analysis.inference._infer`)."""
    previous: tuple[Run, ...] = ()
    """Earlier conversation turns the analysis could follow ``context`` edges into, oldest first."""
    references: tuple[str, ...] = ()
    """The passing runs of the same agent the ranking compared with (run ids, most recent first)."""
    problems: tuple[str, ...] = ()
    """What the analysis had to leave out to work (dangling edges, edges that closed a cycle)."""
    verdict: str | None = None
    """The learned ranker's verdict on its best candidate: ``confident``, ``likely``, ``unsure`` (None: no model)."""

    @property
    def outcome(self) -> Outcome:
        """The run's outcome."""
        return self.run.outcome

    @property
    def root_causes(self) -> list[Candidate]:
        """The ranked root-cause candidates, best first."""
        return self.localization.candidates

    def error_chains(self) -> list[Any]:
        """The error chains of the lifecycle report (empty when there is none)."""
        if self.error_report is None:
            return []
        return list(self.error_report.to_dict().get("chains", []))

    def to_dict(self) -> dict[str, Any]:
        """The analysis as JSON data (one element of ``{"runs": [...]}``)."""
        steps = {s.step_id: s for s in self.run.steps}
        names = {sid: s.name for sid, s in steps.items()}
        earlier = {(r.run_id, s.step_id): s for r in self.previous for s in r.steps}
        causes = []
        for c in self.root_causes:
            s = steps[c.step_id] if c.run_id is None else earlier[(c.run_id, c.step_id)]
            causes.append(
                {
                    "step_id": c.step_id,
                    "run_id": c.run_id,
                    "source_index": s.source_index,
                    "name": s.name,
                    "kind": s.kind,
                    "agent": s.agent,
                    "score": c.score,
                    "reasons": list(c.reasons),
                    "path": list(c.path),
                    "structural": c.root,
                    "inferred": [{"step_id": sid, "confidence": conf} for sid, conf in c.inferred],
                    "signals": list(c.signals),
                    "confidence": c.confidence,
                }
            )
        return {
            "run_id": self.run.run_id,
            "outcome": self.run.outcome,
            "failures": [{**f.to_dict(), "name": names.get(f.step_id)} for f in self.failures],
            "root_causes": causes,
            "ranked": len(self.localization.ranking),
            "error_chains": self.error_chains(),
            "dependencies_inferred": self.inferred,
            "references": list(self.references),
            "problems": list(self.problems),
            "verdict": self.verdict,
            "stats": self.localization.stats.to_dict(),
        }


def analyses_to_dict(analyses: Sequence[Analysis]) -> dict[str, Any]:
    """The JSON document of several analyses: ``{"runs": [...]}``."""
    return {"runs": [a.to_dict() for a in analyses]}


def _error_origins(run: Run) -> list[Evidence]:
    """Evidence from the error lifecycle: the step where the error chain that failed the run began."""
    by_id = {e.error_id: e for e in run.errors}
    out: list[Evidence] = []
    seen: set[str] = set()
    for e in run.errors:
        if e.stage != "failed":
            continue
        root, hops = e, 0
        while root.parent_error_id is not None and root.parent_error_id in by_id and hops < 50:
            root, hops = by_id[root.parent_error_id], hops + 1
        if root.step_id not in seen and not any(s.step_id == root.step_id and is_check(s) for s in run.steps):
            seen.add(root.step_id)
            out.append(
                Evidence(
                    root.step_id,
                    0.1,
                    f"origin of the error chain that failed the run ({root.type})",
                    "error-lifecycle",
                )
            )
    return out


def _chain_origins(
    chains: Sequence[Any], graph: DependencyGraph, handled: frozenset[str] = frozenset()
) -> list[Evidence]:
    """Evidence from the lifecycle report: the origin step of each critical error chain.

    Not when that step is a check that rejected its input (the chain begins
    where the failure showed, and the cause lies upstream), nor when its error
    was handled (``handled``: a later attempt of the same call succeeded).
    """
    out: list[Evidence] = []
    for ch in chains:
        if not isinstance(ch, Mapping) or not ch.get("critical"):
            continue
        origin = ch.get("origin_step")
        if (
            isinstance(origin, str)
            and origin in graph
            and origin not in handled
            and not is_check(graph.steps[origin])
        ):
            name = f" {ch['chain_id']}" if ch.get("chain_id") else ""
            out.append(Evidence(origin, 0.1, f"origin of the critical error chain{name}", "error-lifecycle"))
    return out


_P = ParamSpec("_P")
_R = TypeVar("_R")


def collector_paused(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``fn`` with Python's cyclic garbage collector paused (restored after, if it was on).

    An analysis allocates millions of small containers that all stay alive
    until it ends (atoms, views, evidence); every collection the allocations
    trigger re-traverses them all, which cost as much as the analysis itself
    on a 10,000-step run.  Reference counting still frees what dies; cycles
    made meanwhile wait for the next collection.  Nested calls leave the
    collector to the outermost one.
    """

    @functools.wraps(fn)
    def paused(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()

    return paused


@collector_paused
def analyze(
    run: Run,
    *,
    top: int = 5,
    outcome: Outcome | None = None,
    detectors: Mapping[str, Detector] | Sequence[Detector] | None = None,
    diagnosers: Mapping[str, Diagnoser] | Sequence[Diagnoser] | None = None,
    weights: Mapping[str, float] | None = None,
    sql_schema: str | None = None,
    sql_db: str | Path | None = None,
    infer: bool | None = None,
    previous: Sequence[Run] = (),
    references: Sequence[Run] = (),
    model: Any = None,
) -> Analysis:
    """Analyze one run: detect its failures, summarize its errors, localize the root cause.

    Args:
        run: The run.
        top: How many root-cause candidates to keep.
        outcome: The run's outcome when the source did not record one
            (an ``incomplete`` run); ignored when the run has one.
        detectors: Failure detectors (None: built-in and registered).
        diagnosers: Step diagnosers (None: built-in and registered).
        weights: Search weight overrides (see `trajdebug.analysis._localize.DEFAULT_WEIGHTS`).
        sql_schema: DDL of the SQLite database the run's SQL targets.
        sql_db: The SQLite file the run's SQL targets: its schema checks the run's
            SQL, and recorded query results are compared with read-only re-runs.
            Analysis never opens a file a run's metadata names by itself.
        infer: Infer data dependencies from content (merged with the recorded
            ones): None (default) and True always, False never.  The recorder
            tracks values by identity, so short strings and numbers, and values a
            model re-derived, carry no edge; inference recovers those flows.
        previous: The earlier turns of the conversation (`trajdebug.analysis.infer.previous_turns`):
            their outputs found in this run's inputs give ``context`` edges, and
            the search follows them into those runs (candidates there carry a ``run_id``).
        references: Passing runs of the same agent (`trajdebug.analysis.reference.references`
            picks them from a source): their likely invariants turn the failing
            run's deviations into evidence.

    A dangling dependency or a cycle does not stop the analysis: it is left out
    and named in `Analysis.problems`.
    """
    t0 = time.perf_counter()
    if sql_db is not None:
        sql_schema = sql_schema or content.schema_from_db(sql_db)
    if outcome is not None and run.outcome == "incomplete":
        run = replace(run, outcome=outcome)
    inferred = False
    previous = tuple(previous)
    want_infer = True if infer is None else infer
    if want_infer and (len(run.steps) > 1 or previous):
        from trajdebug.analysis.inference import infer_dependencies

        annotated = structural_edges(infer_dependencies(run, previous=previous))
        inferred = annotated is not run
        run = thin_inferred(annotated)
    failures = detect(run, detectors, sql_schema=sql_schema)
    refs = tuple(r for r in references if r.run_id != run.run_id)
    profile = learn(refs) if refs else None
    if profile is not None:
        # An empty result the agent's passing runs also got from that step is no failure.
        failures = [f for f in failures if not (f.detector == "empty" and returns_empty(profile, run.step(f.step_id)))]
    run = named_edges(run, failures)
    if run.outcome == "failure" and not failures:
        # A failed run where no detector fired: the final output is the failure node.
        last = final_step(run)
        if last is not None:
            failures = [
                Failure(
                    last.step_id, "outcome", run.failure_reason or "the run failed", "run-failure", "final"
                )
            ]
    seeds = failures
    if run.outcome == "success":
        # A run that succeeded: only failures that contradict the success start a search.
        seeds = [f for f in failures if f.where in ("final", "post") or f.detector == "contract"]
    searched, origin = with_context(run, previous)
    lineage = Lineage(searched)
    if want_infer:
        # Values link steps that identity tracking and content matching could not
        # (numbers, short strings): the lineage's value edges join the graph.
        searched = with_value_edges(searched, lineage)
        if not origin:
            run = searched
    graph = DependencyGraph(searched)
    own_graph = graph if searched is run else DependencyGraph(run)
    error_report = None
    origins = _error_origins(run)
    if run.errors:
        from trajdebug.analysis.lifecycle import analyze_errors

        error_report = analyze_errors(run, graph=own_graph)
        handled = frozenset(
            e.step_id for e in error_report.errors if e.stage in ("recovered", "ignored")
        ) | frozenset(superseded(run))
        origins = _chain_origins(error_report.to_dict().get("chains", []), own_graph, handled) or origins
    loc = localize(
        searched,
        failures=seeds,
        top=top if model is None else max(top, 100_000),
        weights=weights,
        graph=graph,
        diagnosers=diagnosers,
        extra_evidence=origins,
        sql_schema=sql_schema,
        sql_db=None if sql_db is None else str(sql_db),
        lineage=lineage,
        profile=profile,
    )
    if origin:
        loc = replace(
            loc,
            candidates=[_home(c, origin) for c in loc.candidates],
            ranking=tuple(origin[s][1] if s in origin else s for s in loc.ranking),
        )
    problems = tuple(dict.fromkeys([*graph.problems, *own_graph.problems]))
    # The analysis's true elapsed time: inference, lineage, detection, lifecycle and ranking.
    loc = replace(loc, stats=replace(loc.stats, seconds=time.perf_counter() - t0))
    result = Analysis(
        run, tuple(failures), loc, error_report, inferred, previous, tuple(r.run_id for r in refs), problems
    )
    return result if model is None else _learned.rerank(result, model, top)


def with_value_edges(run: Run, lineage: Lineage) -> Run:
    """The run with the lineage's value edges added where no edge joins the two steps yet."""
    edges = lineage.value_edges()
    if not edges:
        return run
    steps = []
    for s in run.steps:
        new = edges.get(s.step_id)
        if new:
            have = {d.step_id for d in s.deps}
            add = tuple(d for d in new if d.step_id not in have and d.step_id != s.step_id)
            if add:
                s = replace(s, deps=(*s.deps, *add))
        steps.append(s)
    return replace(run, steps=tuple(steps))


def _home(c: Candidate, origin: Mapping[str, tuple[str, str]]) -> Candidate:
    """A candidate of the combined run, with the ids of its own run (and that run's id when earlier)."""
    where = origin.get(c.step_id)
    path = tuple(origin[s][1] if s in origin else s for s in c.path)
    inferred = tuple((origin[s][1] if s in origin else s, conf) for s, conf in c.inferred)
    if where is None:
        return replace(c, path=path, inferred=inferred)
    return replace(c, step_id=where[1], run_id=where[0], path=path, inferred=inferred)


__all__ = [
    "NAMED_KEY",
    "Analysis",
    "analyses_to_dict",
    "analyze",
    "named_edges",
    "structural_edges",
    "thin_inferred",
    "with_value_edges",
]
