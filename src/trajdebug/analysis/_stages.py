"""The stages of the analysis, each a small function ``stage(state) -> state``.

`trajdebug.analysis._pipeline.STAGES` chains them in order; each reads the
fields earlier stages filled (`trajdebug.analysis._state.AnalysisState`) and
returns a new state with its own filled.  No stage mutates what it was given.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from trajdebug.analysis._detect import Failure, detect, final_step, superseded
from trajdebug.analysis._localize import Candidate, Localization, rank_steps
from trajdebug.analysis._localize import collect_evidence as _collect
from trajdebug.analysis._state import AnalysisState, need
from trajdebug.analysis.diagnosers import is_check
from trajdebug.analysis.diagnosers._context import Evidence
from trajdebug.analysis.inference import (
    EMPTY_KEY,
    answer_edges,
    carried_edges,
    control_edges,
    entry_edges,
    env_edges,
    item_edges,
    kept_edges,
    mutation_edges,
    named_edges,
    retry_edges,
    returned_edges,
    structural_edges,
    thin_inferred,
    unread_empty_edges,
    with_context,
    world_readers,
    yes_no_edges,
)
from trajdebug.analysis.lineage import (
    PARTIAL_FORMATS,
    Lineage,
    answered_edges,
    count_edges,
    picked_edges,
    total_edges,
)
from trajdebug.analysis.reference import learn, returns_empty
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import VALUE_DEP_KINDS, Run


if TYPE_CHECKING:
    from trajdebug.core.lifecycle import ErrorLifecycle, ErrorReport


def declare_outcome(state: AnalysisState) -> AnalysisState:
    """The caller's outcome for a run whose source did not record one (an ``incomplete`` run)."""
    run, outcome = state.recorded, state.options.outcome
    if outcome is not None and run.outcome == "incomplete":
        return replace(state, recorded=replace(run, outcome=outcome))
    return state


def infer_edges(state: AnalysisState) -> AnalysisState:
    """Dependencies found by content where identity tracking could not see the flow, thinned."""
    run = state.recorded
    if not (state.options.infer and (len(run.steps) > 1 or state.previous)):
        return replace(state, annotated=run)
    from trajdebug.analysis.inference import infer_dependencies

    annotated = answer_edges(structural_edges(infer_dependencies(run, previous=state.previous)))
    # Entry edges after the thinning: each step given a growing map holds all its entries, but none
    # passes the map on in its output, so a path through them is no relay of an entry.
    # Item edges too: a loop's calls each took one item of the list, and none of them hands the list on.
    thinned = item_edges(entry_edges(thin_inferred(annotated)))
    return replace(state, annotated=thinned, inferred=thinned is not run)


def detect_failures(state: AnalysisState) -> AnalysisState:
    """Where the run went wrong, by the failure detectors."""
    opts = state.options
    run = need(state.annotated, "annotated")
    return replace(state, failures=tuple(detect(run, opts.detectors, sql_schema=opts.sql_schema)))


def learn_references(state: AnalysisState) -> AnalysisState:
    """Likely invariants of the agent's passing runs; an empty result they also got is no failure."""
    if not state.references:
        return state
    profile = learn(state.references)
    run = need(state.annotated, "annotated")
    by_id = {s.step_id: s for s in run.steps}
    failures = tuple(
        f for f in state.failures if not (f.detector == "empty" and returns_empty(profile, by_id[f.step_id], by_id))
    )
    return replace(state, profile=profile, failures=failures)


def settle_failures(state: AnalysisState) -> AnalysisState:
    """Edges to the values the failures name; the final step of a failed run no detector explained;
    the failures the search starts from."""
    run = named_edges(need(state.annotated, "annotated"), list(state.failures))
    failures = state.failures
    if run.outcome == "failure" and not failures:
        # A failed run where no detector fired: the final output is the failure node.
        last = final_step(run)
        if last is not None:
            reason = run.failure_reason or "the run failed"
            failures = (Failure(last.step_id, "outcome", reason, "run-failure", "final"),)
    seeds = failures
    if run.outcome == "success":
        # A run that succeeded: only failures that contradict the success start a search.
        seeds = tuple(f for f in failures if f.where in ("final", "post") or f.detector == "contract")
    return replace(state, annotated=run, failures=failures, seeds=seeds)


def trace_values(state: AnalysisState) -> AnalysisState:
    """The run joined with its earlier turns, its value lineage, and the lineage's value edges."""
    run = need(state.annotated, "annotated")
    searched, origin = with_context(run, state.previous)
    lineage = Lineage(searched)
    own = run
    if state.options.infer:
        # Values link steps that identity tracking and content matching could not
        # (numbers, short strings): the lineage's value edges join the graph.
        searched = with_value_edges(searched, lineage, {f.step_id: f.message for f in state.failures})
        if not origin:
            own = searched
    return replace(state, searched=searched, origin=origin, own=own, lineage=lineage)


def build_graph(state: AnalysisState) -> AnalysisState:
    """The dependency graphs of the searched run and of the analyzed run (one graph when they are one run)."""
    searched, own = need(state.searched, "searched"), need(state.own, "own")
    graph = DependencyGraph(searched)
    return replace(state, graph=graph, own_graph=graph if searched is own else DependencyGraph(own))


def lifecycle(state: AnalysisState) -> AnalysisState:
    """The error lifecycle of the analyzed run and the evidence of where its failing chains began."""
    run, own_graph = need(state.own, "own"), need(state.own_graph, "own_graph")
    origins = _error_origins(run)
    if not run.errors:
        return replace(state, origins=tuple(origins))
    from trajdebug.core.lifecycle import analyze_errors

    report = analyze_errors(run, graph=own_graph)
    handled = frozenset(e.step_id for e in report.errors if e.stage in ("recovered", "ignored")) | frozenset(
        superseded(run)
    )
    origins = _chain_origins(report.to_dict().get("chains", []), own_graph, handled) or origins
    origins = [*origins, *_fallbacks_fed(report, own_graph, state.lineage)]
    return replace(state, error_report=report, origins=tuple(origins))


def collect_evidence(state: AnalysisState) -> AnalysisState:
    """The failures' backward slice and what every evidence source found about its steps
    (`trajdebug.analysis._sources`, `trajdebug.analysis._value_sources`, the diagnosers)."""
    opts = state.options
    ranking = _collect(
        need(state.searched, "searched"),
        failures=list(state.seeds),
        weights=opts.weights,
        graph=state.graph,
        diagnosers=opts.diagnosers,
        extra_evidence=state.origins,
        sql_schema=opts.sql_schema,
        sql_db=None if opts.sql_db is None else str(opts.sql_db),
        lineage=state.lineage,
        profile=state.profile,
        lexicon=opts.lexicon,
        references=state.references,
    )
    return replace(state, ranking=ranking)


def rank(state: AnalysisState) -> AnalysisState:
    """The findings combined with the hand weights (`trajdebug.analysis._ranking`): every step of the slice
    ranked, each a candidate with its features."""
    ranking = need(state.ranking, "ranking")
    return replace(state, localization=rank_steps(ranking, top=state.options.top, started=time.perf_counter()))


def map_home(state: AnalysisState) -> AnalysisState:
    """Candidates of the combined run given the ids of their own runs (an earlier turn's id when earlier)."""
    loc, origin = need(state.localization, "localization"), state.origin
    if not origin:
        return state
    home = replace(
        loc,
        candidates=[_home(c, origin) for c in loc.candidates],
        ranking=tuple(origin[s][1] if s in origin else s for s in loc.ranking),
        ranked_all=tuple(_home(c, origin) for c in loc.ranked_all),
    )
    return replace(state, localization=home)


def finish(state: AnalysisState) -> AnalysisState:
    """The analysis's true elapsed time: inference, lineage, detection, lifecycle and ranking."""
    loc = need(state.localization, "localization")
    seconds = time.perf_counter() - state.started
    return replace(state, localization=replace(loc, stats=replace(loc.stats, seconds=seconds)))


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


DECLARED_FALLBACK = 0.5
"""The suspicion of a step that declared a fallback (``s.fallback``) whose degraded value fed the run's
failure: the step said itself that what it answered is not the real value, the strongest evidence a step can
give about itself, so never weaker than a swallowed error's (0.45, `swallowed_error`), which it stands beside
(a step with both keeps the stronger)."""


def _fallbacks_fed(report: ErrorReport, graph: DependencyGraph, lineage: Lineage | None) -> list[Evidence]:
    """Evidence from the lifecycle report: each step that ended an error ``ignored`` by a fallback (a degraded
    value in place of the one the error cost) when that value reached the failure of a chain that failed the
    run (`_fallback_reached`).  A fallback whose value reached no failure is no evidence: the error ended
    there; nor is a fallback that kept the output the step already had (`_kept_own_output`: a warning, after
    which the step went on with its own answer), nor one in an attempt a later attempt of the same step
    answered cleanly (`_retried_cleanly`: the degraded value was thrown away)."""
    out: list[Evidence] = []
    seen: set[str] = set()
    for ch in report.critical_chains():
        end = report.error(ch.error_ids[-1])
        for i, link in enumerate(ch.links):
            err = report.error(ch.error_ids[i])
            if link != "data" or err.stage != "ignored":
                continue
            nxt = report.error(ch.error_ids[i + 1])
            failed = end.step_id if end.step_id in graph else nxt.step_id
            if failed not in graph:
                continue
            fed = graph.backward_slice([failed], VALUE_DEP_KINDS)
            for c in err.stages:
                sid = c.step_id
                if c.stage != "ignored" or sid is None or sid == failed or sid not in fed or sid in seen:
                    continue
                if _kept_own_output(graph, sid, err) or _retried_cleanly(graph, sid):
                    continue
                if not _fallback_reached(lineage, sid, failed):
                    continue
                seen.add(sid)
                out.append(_declared(err, c.reason, sid, graph.steps[failed].name))
    return out


def _declared(err: ErrorLifecycle, reason: str | None, sid: str, where: str) -> Evidence:
    """The finding of a declared fallback at ``sid`` whose value reached the failure at ``where``."""
    said = f" ({reason[:80]})" if reason else ""
    of = f" of {err.step_name}" if err.step_name and sid != err.step_id else ""
    return Evidence(
        sid,
        DECLARED_FALLBACK,
        f"declared a fallback after the {err.type}{of}{said}: the degraded value it answered with fed the "
        f"failure at {where}",
        "swallowed-error",
    )


def _kept_own_output(graph: DependencyGraph, sid: str, err: ErrorLifecycle) -> bool:
    """Whether the fallback at ``sid`` kept the output the step already had (``s.fallback(s.output, ...)``,
    recorded as ``fallback_value="kept"``): a warning the step went on from, no stand-in for a value the error
    cost.  A recording made before the recorder told the two apart (no ``fallback_value``) counts an error the
    step reported on itself without raising (``s.error``) as kept."""
    told = graph.steps[sid].attributes.get("fallback_value")
    if told is not None:
        return bool(told == "kept")
    return err.reported and sid == err.step_id


def _retried_cleanly(graph: DependencyGraph, sid: str) -> bool:
    """Whether a later attempt of the same step (a retry of it, or a call of the same step under the same
    parent given the same input: the next turn of a retry loop) answered without error or fallback: the
    fallback's value was discarded for that answer.  A loop over items calls the step on other inputs: those
    calls are no attempts of this one."""
    step = graph.steps[sid]
    pos = graph.position(sid)
    return any(
        o.name == step.name
        and o.kind == step.kind
        and (o.retry_of == sid or (o.parent_id == step.parent_id and o.input == step.input))
        and o.status == "ok"
        and o.attributes.get("fallback") is None
        and graph.position(o.step_id) > pos
        for o in graph.steps.values()
    )


def _fallback_reached(lineage: Lineage | None, sid: str, failed: str) -> bool:
    """Whether the fallback's value survived to the failing step: a value the fallback step introduced (none of
    its inputs holds it) is in what the failing step was given.  A step between them that changed or dropped it
    (a discount applied to a correct cached rate) made the failing value, not the fallback.  A fallback that
    introduced no value (None, an empty list) is judged by the slice alone: its emptiness is what flows."""
    if lineage is None or sid not in lineage.views or failed not in lineage.views:
        return True
    made = lineage.introduced(sid)
    if not made:
        return True
    view = lineage.view(failed)
    return any(view.given(a) for a in made)


def with_value_edges(run: Run, lineage: Lineage, failures: Mapping[str, str] | None = None) -> Run:
    """The run with the lineage's value edges added where no edge joins the two steps yet: shared values,
    fields left empty under one name, outputs no step consumed read by the computation after them, and
    numbers computed in an enclosing step's code traced to what that step read (`Lineage`).  ``failures``:
    the failures' messages by step id (a failing step naming a resource it was not given read the world)."""
    edges = lineage.value_edges()
    for sid, deps in lineage.empty_edges().items():
        edges.setdefault(sid, []).extend(deps)
    for sid, deps in total_edges(run).items():
        edges.setdefault(sid, []).extend(deps)
    # A failing step handed a list's length: the list's producer is where the count came from (round 43).
    for sid, deps in count_edges(run, failures or {}).items():
        edges.setdefault(sid, []).extend(deps)
    for sid, deps in picked_edges(lineage).items():
        edges.setdefault(sid, []).extend(deps)
    for sid, deps in answered_edges(run).items():
        edges.setdefault(sid, []).extend(deps)
    for sid, deps in mutation_edges(run).items():
        edges.setdefault(sid, []).extend(deps)
    # An accumulator kept between a step's calls hands each call what the earlier ones returned (issue 23, round 43).
    for sid, deps in carried_edges(run).items():
        edges.setdefault(sid, []).extend(deps)
    consumed = {d.step_id for s in run.steps for d in s.deps} | {d.step_id for ds in edges.values() for d in ds}
    for sid, deps in lineage.unread_edges(consumed).items():
        edges.setdefault(sid, []).extend(deps)
    every = {s.step_id: [*s.deps, *edges.get(s.step_id, ())] for s in run.steps}
    for sid, deps in lineage.inherited_edges(every).items():
        edges.setdefault(sid, []).extend(deps)
    for sid, deps in lineage.handed_down_edges(every).items():
        edges.setdefault(sid, []).extend(deps)
    # No value carries these two: a plan's or a router's choice of the steps that ran, and a write's effect
    # on the world a later step read back (`trajdebug.analysis.inference._control`).
    for sid, deps in control_edges(run).items():
        edges.setdefault(sid, []).extend(deps)
    # A check's yes/no on an item let it into a later list, a parsed yes/no went on under its field's name; a
    # span that recorded no output returned what its steps made (`trajdebug.analysis.inference._handoffs`).
    # Only in imported spans: the recorder writes every field a step returned, so there any lookup of one
    # record beside a yes/no (a patient's screen) would read as a check that kept an item (review rev52o).
    if run.metadata.get("source_format") in PARTIAL_FORMATS:
        named = " ".join(failures.values()).casefold() if failures else ""
        for sid, deps in kept_edges(run, named=named).items():
            edges.setdefault(sid, []).extend(deps)
    for sid, deps in yes_no_edges(run).items():
        edges.setdefault(sid, []).extend(deps)
    # A call made again after it failed was decided by what decided the attempt (issue 23, round 42).
    every = {s.step_id: [*s.deps, *edges.get(s.step_id, ())] for s in run.steps}
    for sid, deps in retry_edges(run, every).items():
        edges.setdefault(sid, []).extend(deps)
    every = {s.step_id: [*s.deps, *edges.get(s.step_id, ())] for s in run.steps}
    for sid, deps in unread_empty_edges(run, every).items():
        edges.setdefault(sid, []).extend(deps)
    # Only in imported spans, whose output is what their author chose to set: the recorder writes what a step
    # returned, so a recorded step with no output returned nothing (a loop's body, a frame).
    if run.metadata.get("source_format") in PARTIAL_FORMATS:
        every = {s.step_id: [*s.deps, *edges.get(s.step_id, ())] for s in run.steps}
        for sid, deps in returned_edges(run, every).items():
            edges.setdefault(sid, []).extend(deps)
    # An unread empty result handed on by position leaves its producer a write still: a lookup that found
    # nothing keeps its env edges to the later steps that read the world (review rev52o, loop_empty).
    consumed |= {
        d.step_id for ds in edges.values() for d in ds
        if d.kind in VALUE_DEP_KINDS and not (d.key or "").startswith(EMPTY_KEY)
    }
    linked = {s.step_id for s in run.steps if s.deps} | {sid for sid, ds in edges.items() if ds}
    readers = world_readers(run, failures or {})
    for sid, deps in env_edges(run, consumed, linked, readers).items():
        edges.setdefault(sid, []).extend(deps)
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
    "Localization",
    "build_graph",
    "collect_evidence",
    "declare_outcome",
    "detect_failures",
    "finish",
    "infer_edges",
    "learn_references",
    "lifecycle",
    "map_home",
    "rank",
    "settle_failures",
    "trace_values",
    "with_value_edges",
]
