"""One call from a run to its analysis: failures, error lifecycle, ranked root causes.

`analyze` runs `STAGES` in order over one `AnalysisState`: it declares the
outcome when the source did not carry one, infers data dependencies (imported
traces), runs the failure detectors, learns the references, traces the values,
builds the dependency graphs, summarizes the error lifecycle, ranks the slice,
and gives candidates of earlier turns their own ids.  `Analysis.to_dict` is the JSON of
``trajdebug analyze --json`` (documented in ``docs/analysis.md``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from trajdebug.analysis._content import text_memo
from trajdebug.analysis._detect import Detector, Failure
from trajdebug.analysis._failures import FailureGroup, group_failures
from trajdebug.analysis._guided import Guided
from trajdebug.analysis._guided_result import answer_standing, root_standing
from trajdebug.analysis._localize import Candidate, Localization
from trajdebug.analysis._sql import schema_from_db
from trajdebug.analysis._stages import (
    build_graph,
    collect_evidence,
    declare_outcome,
    detect_failures,
    finish,
    infer_edges,
    learn_references,
    lifecycle,
    map_home,
    rank,
    settle_failures,
    trace_values,
    with_value_edges,
)
from trajdebug.analysis._state import AnalysisState, Options, Stage, need
from trajdebug.analysis.diagnosers._context import Diagnoser
from trajdebug.analysis.inference import NAMED_KEY, named_edges, structural_edges, thin_inferred
from trajdebug.analysis.learned import rerank
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.reference import same_request
from trajdebug.core.collector import collector_paused
from trajdebug.core.model import Outcome, Run


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
    """The error-lifecycle report (`trajdebug.core.lifecycle.analyze`), when available."""
    inferred: bool = False
    """True when content inference added dependencies to the run (`trajdebug.analysis.inference._infer`)."""
    previous: tuple[Run, ...] = ()
    """Earlier conversation turns the analysis could follow ``context`` edges into, oldest first."""
    references: tuple[str, ...] = ()
    """The passing runs of the same agent the ranking compared with (run ids, most recent first)."""
    problems: tuple[str, ...] = ()
    """What the analysis had to leave out to work (dangling edges, edges that closed a cycle)."""
    verdict: str | None = None
    """The verdict on the best candidate: the learned ranker's, ``confident``, ``likely``, ``unsure`` (None: no
    model), or ``proved`` when a person's answers prove the root (`trajdebug.analysis.settled`,
    `trajdebug.analysis.person_proof`; a proof by automatic oracles alone leaves the ranker's)."""
    verdict_thresholds: tuple[float, float] | None = None
    """The calibrated confidences at which the learned ranker's verdict turns ``likely`` and ``confident``, as they
    applied to this run (the model's ``thresholds``; ``confident_references`` for a run analysed with references;
    above 1 where no confidence reached the model's precision bar: never); None with no model."""
    ranker_verdict: str | None = None
    """The learned ranker's own verdict when answers proved the root (`verdict` is then ``proved``); None
    otherwise, when `verdict` is the ranker's (`ranking_verdict` reads either)."""
    guided: Guided | None = None
    """The guided search's result, when oracles were asked (`trajdebug.analysis.guided_search`)."""
    ranked: Localization | None = None
    """The ranker's own localization when a guided search's answers re-ordered ``localization``
    (`trajdebug.analysis.settled`); None when none did.  The search's prior reads it
    (`trajdebug.analysis.priors`): a search resumed over stored answers starts from the prior a session
    that took the same answers one at a time started from, not from the order those answers made."""
    refs: tuple[str, ...] = ()
    """The files beside the run's source its references were looked for in (`trajdebug.analyze_source`'s
    ``refs``, ``--refs``), so that the reports say where none was found."""
    other_agents: tuple[tuple[str, int], ...] = ()
    """Passing runs of ``refs`` left out because they are another agent's (another name): (name, count), so
    that the reports say why a file given to compare with was not used."""
    source_ids: tuple[str, ...] = ()
    """The run ids of the run's source and of ``refs``, which an id the reports show must stay unique among
    (`trajdebug.core.shortids`); empty when the analysis was not read from a source (ids are then shortened
    against the ones it names)."""
    same_input: tuple[str, ...] = ()
    """Of `references`, the runs given the same input as this one (`trajdebug.analysis.reference.same_request`):
    the reports then never advise a passing run of the same input as what would settle the verdict."""

    @property
    def outcome(self) -> Outcome:
        """The run's outcome."""
        return self.run.outcome

    @property
    def root_causes(self) -> list[Candidate]:
        """The ranked root-cause candidates, best first."""
        return self.localization.candidates

    @property
    def order(self) -> str:
        """How `root_causes` is ordered: ``answers`` (a guided search's answers moved them), ``share`` (the
        learned model re-ranked them by its share of the blame, `Candidate.share`; ``confidence`` until round 59,
        which the list was not sorted by) or ``roots-first`` (the hand ranking: structural roots before the other suspects, by score
        within each group, docs/analysis.md).  A model on top (``--judge``) re-ranks the list by the combined
        score without changing this value, as before it said so: `judged` does."""
        if self.guided is not None and self.guided.questions:
            return "answers"
        return "share" if self.localization.method.removesuffix("+judge").endswith("learned") else "roots-first"

    @property
    def judged(self) -> bool:
        """Whether a model on top (``--judge``) re-ranked `root_causes` by score, its verdicts combined with the
        evidence (`trajdebug.judge.rerank` ends the method in ``+judge``); a guided search's answers, when they
        moved the list, order it all the same (`order` ``answers``)."""
        return self.localization.method.endswith("+judge")

    @property
    def ranking_verdict(self) -> str | None:
        """The learned ranker's verdict, whatever answers proved (what a benchmark scoring the ranking reads)."""
        return self.ranker_verdict if self.verdict == "proved" else self.verdict

    @property
    def ranker_confidence(self) -> float | None:
        """The calibrated confidence of the ranker's own best candidate, before any answer moved the list
        (None without a learned model)."""
        loc = self.ranked if self.ranked is not None else self.localization
        return loc.candidates[0].confidence if loc.candidates else None

    def failure_groups(self) -> list[FailureGroup]:
        """The failures with each exception's propagations under the step where it occurred (one exception
        counted once: `trajdebug.analysis.group_failures`); what the reports list."""
        return group_failures(self.failures, self.run.step_map())

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
        # Where the answers placed each candidate (`answer_standing`), beside its ranking's confidence, which a
        # proof replaces: the reports show this word in its place (nu25 F10); only when answers were given.
        placed = answer_standing(self) if self.guided is not None and self.guided.questions else None
        for c in self.root_causes:
            s = steps[c.step_id] if c.run_id is None else earlier[(c.run_id, c.step_id)]
            causes.append(
                {
                    "step_id": c.step_id,
                    "run_id": c.run_id,
                    "source_index": s.source_index,
                    "name": s.name,
                    # The form the terminal prints and `show --step` takes (name#last six of the id): a reader of
                    # --json matches the lists by it, not by the full id alone (nu28).
                    "label": f"{s.name}#{c.step_id[-6:]}",
                    "kind": s.kind,
                    "agent": s.agent,
                    "score": c.score,
                    "reasons": list(c.reasons),
                    "path": list(c.path),
                    "structural": c.root,
                    "inferred": [{"step_id": sid, "confidence": conf} for sid, conf in c.inferred],
                    "signals": list(c.signals),
                    "confidence": c.confidence,
                    "share": c.share,
                    **({} if placed is None else {"standing": placed.get(c.step_id) if c.run_id is None else None}),
                }
            )
        return {
            "run_id": self.run.run_id,
            "outcome": self.run.outcome,
            "failures": [
                {**f.to_dict(), "name": names.get(f.step_id), "label": _label(names, f.step_id)} for f in self.failures
            ],
            "failure_groups": [g.to_dict(names) for g in self.failure_groups()],
            "root_causes": causes,
            "order": self.order,
            # Only when a model re-ranked the list: an analysis no model saw says nothing of one.
            **({"judged": True} if self.judged else {}),
            "ranked": len(self.localization.ranking),
            "error_chains": self.error_chains(),
            "dependencies_inferred": self.inferred,
            "references": list(self.references),
            # Always present (empty: no passing run of the same input), so a script can read it (nu30 finding 11).
            "same_input": list(self.same_input),
            "problems": list(self.problems),
            "stats": self.localization.stats.to_dict(),
            "verdict": self.verdict,
            # The ranking's own verdict and its best candidate's confidence, whatever answers proved (since round 50).
            "ranker_verdict": self.ranking_verdict,
            "ranker_confidence": self.ranker_confidence,
            # Where the verdict's words begin (likely, confident) for this run: a setting with references has its own.
            "verdict_thresholds": None if self.verdict_thresholds is None else dict(
                zip(("likely", "confident"), self.verdict_thresholds, strict=True)
            ),
            # The root's standing as the text words it (proved, singled out), beside the search's ``certain``.
            "guided": None if self.guided is None else {**self.guided.to_dict(), **root_standing(self)},
        }


def _label(names: Mapping[str, str], step_id: str | None) -> str | None:
    """A failure's step as the terminal prints it (None: a failure of the run, not of one step)."""
    return f"{names[step_id]}#{step_id[-6:]}" if step_id is not None and step_id in names else None


def analyses_to_dict(analyses: Sequence[Analysis]) -> dict[str, Any]:
    """The JSON document of several analyses: ``{"runs": [...]}``."""
    return {"runs": [a.to_dict() for a in analyses]}


@collector_paused()
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
    stages: Sequence[Stage] | None = None,
    lexicon: Lexicon = ENGLISH,
    model: Any = "default",
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
        stages: The stages to run (None: `STAGES`), e.g. ``insert_stage(mine, after="rank")``.
        lexicon: The words and phrases the analysis reads (`trajdebug.analysis.lexicon.ENGLISH`).
        model: The learned ranker that re-orders the candidates and gives each a calibrated
            ``confidence`` and the analysis a ``verdict`` (``"default"``, the default: the shipped model; a path,
            a `trajdebug.analysis.learned.Model`; None: the hand ranking alone).

    A dangling dependency or a cycle does not stop the analysis: it is left out
    and named in `Analysis.problems`.
    """
    started = time.perf_counter()
    schema = (sql_schema or schema_from_db(sql_db)) if sql_db is not None else sql_schema
    options = Options(
        top, outcome, detectors, diagnosers, weights, schema, sql_db, True if infer is None else infer, lexicon, model
    )
    state = AnalysisState(
        run,
        options,
        previous=tuple(previous),
        references=tuple(r for r in references if r.run_id != run.run_id),
        started=started,
    )
    with text_memo():  # each recorded value's text written once for every stage (`_content.text_of`)
        return result(run_stages(state, STAGES if stages is None else stages))


@collector_paused()
def analyzed_run(run: Run, *, previous: Sequence[Run] = (), references: Sequence[Run] = ()) -> Run:
    """The run as `analyze` reads it, ``analyze(run, previous=..., references=...).run``: with the dependencies
    it infers from content, thinned, and those to the values its failures name, without the search and ranking
    that need them (what `trajdebug show --step` lists; nu64b: one step's view analyzed its whole run).  The
    passing runs are learned from only when a failure is an empty result they might explain."""
    state = AnalysisState(
        run,
        Options(5, None, None, None, None, None, None, True, ENGLISH, None),
        previous=tuple(previous),
        references=tuple(r for r in references if r.run_id != run.run_id),
        started=time.perf_counter(),
    )

    def empties_explained(state: AnalysisState) -> AnalysisState:
        return learn_references(state) if any(f.detector == "empty" for f in state.failures) else state

    with text_memo():
        state = run_stages(
            state, (declare_outcome, infer_edges, detect_failures, empties_explained, settle_failures, trace_values)
        )
    return need(state.own, "own")


def learned_rank(state: AnalysisState) -> AnalysisState:
    """With a learned model (``Options.model``): every ranked step re-ordered by its calibrated probability
    of being the root, and a verdict on the best (`trajdebug.analysis.learned.rerank`)."""
    if state.options.model is None:
        return state
    ranked = rerank(result(state), state.options.model, state.options.top, graph=state.own_graph)
    return replace(
        state, localization=ranked.localization, verdict=ranked.verdict, verdict_thresholds=ranked.verdict_thresholds
    )


STAGES: tuple[Stage, ...] = (
    declare_outcome,
    infer_edges,
    detect_failures,
    learn_references,
    settle_failures,
    trace_values,
    build_graph,
    lifecycle,
    collect_evidence,
    rank,
    map_home,
    learned_rank,
    finish,
)
"""The analysis, stage by stage (`trajdebug.analysis._stages`); insert a stage with `insert_stage`
or by adding it to this tuple (docs/architecture.md, "The analysis as stages")."""


def run_stages(state: AnalysisState, stages: Sequence[Stage]) -> AnalysisState:
    """Each stage on the state the one before it returned."""
    for stage in stages:
        state = stage(state)
    return state


def with_followed_edges(run: Run) -> Run:
    """The run with every edge the analysis follows: the recorded ones, those inferred from content, and the
    lineage's value edges (the stages up to ``trace_values``), for a view that walks the graph as the
    analysis does (`trajdebug diff`'s downstream impact): `analyzed_run` of the run alone."""
    return analyzed_run(run)


def insert_stage(stage: Stage, *, after: str, stages: Sequence[Stage] = STAGES) -> tuple[Stage, ...]:
    """The stages with ``stage`` inserted after the one named ``after`` (a function name, e.g. ``"rank"``)."""
    names = [s.__name__ for s in stages]
    if after not in names:
        raise ValueError(f"no analysis stage named {after!r} (stages: {', '.join(names)})")
    i = names.index(after) + 1
    return (*stages[:i], stage, *stages[i:])


def result(state: AnalysisState) -> Analysis:
    """The `Analysis` of a state every stage has run on."""
    graph, own_graph = need(state.graph, "graph"), need(state.own_graph, "own_graph")
    problems = tuple(dict.fromkeys([*graph.problems, *own_graph.problems]))
    return Analysis(
        need(state.own, "own"),
        state.failures,
        need(state.localization, "localization"),
        state.error_report,
        state.inferred,
        state.previous,
        tuple(r.run_id for r in state.references),
        problems,
        verdict=state.verdict,
        verdict_thresholds=state.verdict_thresholds,
        same_input=tuple(r.run_id for r in state.references if same_request(state.run, r)),
    )


__all__ = [
    "NAMED_KEY",
    "STAGES",
    "Analysis",
    "AnalysisState",
    "analyses_to_dict",
    "analyze",
    "analyzed_run",
    "insert_stage",
    "learned_rank",
    "result",
    "run_stages",
    "named_edges",
    "structural_edges",
    "thin_inferred",
    "with_followed_edges",
    "with_value_edges",
]
