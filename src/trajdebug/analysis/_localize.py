"""Root-cause localization: every step on the failure's backward slice, ranked by its evidence.

The search space is the dynamic slice of the failing steps (Korel & Laski
1988; Agrawal & Horgan 1990) over every kind of edge the run has: recorded,
declared, inferred from content, and the value edges of the run's lineage.
Every step in it is ranked; evidence reorders the slice, it never gates it,
so a silent fault with no local sign is still in the ranking.  Steps that ran
before the failure but that no edge connects to it are ranked after, weakly
(edges are often missing in foreign traces).

A step's score is its structural prior times its evidence:

- **prior**: what kind of step it is (a step that computes or fetches a value
  ahead of an enclosing agent span or the run's input) and how many
  dependencies separate it from the failure (a mild decay, thin slicing as
  weights: Sridharan, Fink & Bodík, PLDI 2007);
- **evidence**, folded by noisy-OR (`trajdebug.analysis._evidence.fold`):
  the failure's **value lineage** (the step that introduced a value the failure
  names or was given, or dropped one it expects; a step that only computed it
  from its inputs passes the blame to its operands: Zeller's stopping rule,
  "faulty, with correct origins"); **local anomalies** of the step's
  transformation (a conflicting field, a damaged number, a dropped column, an
  ungrounded argument); **reference** deviations from the agent's passing
  runs (likely invariants, Ernst et al. 2001; the earliest violation first,
  Sahoo et al. 2013); the **diagnosers'** rules; the **error lifecycle**.

A step that raised because of what it was given (its error names values of
its input) is the symptom: its own evidence is damped so the producer of those
values ranks above it.  A candidate is a structural root (``root=True``) when
its evidence makes it faulty and no step on its path to the failure has
stronger evidence of its own.

The evidence sources live in `trajdebug.analysis._sources` (functions that
return findings), their combination and the hand weights in
`trajdebug.analysis._ranking`; this module runs them and builds candidates.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from trajdebug.analysis._detect import Failure
from trajdebug.analysis._evidence import Evidence
from trajdebug.analysis._guided_result import NO_EVIDENCE, NOT_A_ROOT
from trajdebug.analysis._ranking import Ranking
from trajdebug.analysis._ranking_features import step_features
from trajdebug.analysis._sources import NAMING_FIELDS
from trajdebug.analysis._weights import (
    DEFAULT_WEIGHTS,
    FAILURE_SUSPICION,
    KIND_PRIOR,
    PROGRAMMING_ERRORS,
    FrozenMap,
    _matches,
)
from trajdebug.analysis.diagnosers import DiagnoseContext, Diagnoser, registered_diagnosers
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage import Lineage
from trajdebug.analysis.reference import Contrast, Profile
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import VALUE_DEP_KINDS, Run


@dataclass(frozen=True, slots=True)
class Candidate:
    """A ranked root-cause candidate."""

    step_id: str
    """The step."""
    score: float
    """Ranking score (prior x evidence); comparable within one run."""
    reasons: tuple[str, ...]
    """Why it is suspected, strongest first."""
    path: tuple[str, ...]
    """The dependency path from this step to the failure it explains (step ids, root first)."""
    inferred: tuple[tuple[str, float], ...] = ()
    """Inferred edges the path hangs on, as ``(upstream step id, confidence)``."""
    root: bool = True
    """True when the step's evidence makes it faulty and nothing on its path to the failure is more so."""
    correction: Any = None
    """A suggested corrected output, when a diagnoser proposed one."""
    run_id: str | None = None
    """The run holding the step when it is not the analyzed run (an earlier conversation turn)."""
    signals: tuple[str, ...] = ()
    """The kinds of evidence behind it (``lineage:origin``, ``reference:ratio``, a diagnoser's name...)."""
    features: Mapping[str, float] = field(default_factory=FrozenMap)
    """Every value the ranking used about the step, by name (read-only; `trajdebug.analysis._ranking_features.step_features`)."""
    confidence: float | None = None
    """The learned ranker's calibrated probability that this is the root (None: the hand ranking alone)."""
    share: float | None = None
    """The learned ranker's share of the blame among the ranked steps (its probability within the run, summing to
    1): the number its order sorts by, highest first (None: the hand ranking alone).  The confidence is calibrated
    from it separately, so a candidate lower in the list may show a higher confidence."""


@dataclass(frozen=True, slots=True)
class SearchStats:
    """What the localization cost."""

    steps: int
    """Steps in the run."""
    steps_examined: int
    """Steps ranked (each diagnosed once)."""
    seconds: float
    """Wall time of the localization."""
    references: int = 0
    """Passing runs of the agent the ranking compared with."""

    def to_dict(self) -> dict[str, Any]:
        """The stats as JSON data."""
        return {
            "steps": self.steps,
            "steps_examined": self.steps_examined,
            "seconds": round(self.seconds, 6),
            "references": self.references,
        }


@dataclass(frozen=True, slots=True)
class Localization:
    """The result of a localization method."""

    candidates: list[Candidate]
    """Ranked candidates, best first (at most ``top``)."""
    stats: SearchStats
    """Search statistics."""
    method: str = "trajdebug"
    """The method that produced it."""
    failures: tuple[Failure, ...] = field(default=())
    """The failures it started from."""
    ranking: tuple[str, ...] = ()
    """Every ranked step id, best first (the candidates are its head)."""
    ranked_all: Sequence[Candidate] = ()
    """Every ranked step as a candidate, in the order of ``ranking`` (each with its ``features``; built as read)."""
    yardstick: Mapping[str, str] = field(default_factory=dict)
    """A step that leads the other side of a comparison only by the ``yardstick`` share -> the sentence that says
    so (`Ranking.by_yardstick`): as the best candidate its verdict is at most ``unsure`` (`learned.rerank`)."""


def failure_evidence(failures: Iterable[Failure]) -> list[Evidence]:
    """The evidence failures add to the steps where they show."""
    out = []
    for f in failures:
        s = FAILURE_SUSPICION.get(f.detector)
        if s is not None and f.detector == "empty" and f.where == "checkpoint":
            s = 0.15  # an empty tool result says more about the question asked than about the tool
        if s is not None and f.where != "pre":  # a failure in a step's input is not the step's own
            out.append(Evidence(f.step_id, s, f"failure here: {f.message[:160]}", f"failure:{f.detector}"))
    return out


def localize(
    run: Run,
    *,
    failures: Sequence[Failure] | None = None,
    top: int = 5,
    weights: Mapping[str, float] | None = None,
    graph: DependencyGraph | None = None,
    diagnosers: Mapping[str, Diagnoser] | Sequence[Diagnoser] | None = None,
    extra_evidence: Iterable[Evidence] = (),
    sql_schema: str | None = None,
    sql_db: str | None = None,
    budget: int | None = None,
    lineage: Lineage | None = None,
    profile: Profile | None = None,
    lexicon: Lexicon = ENGLISH,
) -> Localization:
    """Rank the steps most likely to be the root cause of a run's failures.

    Args:
        run: The run.
        failures: Where the run failed (None: run the detectors).
        top: How many candidates to return.
        weights: Overrides of `DEFAULT_WEIGHTS`.
        graph: The run's dependency graph, if already built.
        diagnosers: The diagnosers (None: built-in and registered).
        extra_evidence: Evidence found elsewhere (e.g. error-lifecycle origins).
        sql_schema: DDL of the SQLite database the run's SQL targets.
        sql_db: The SQLite file the run's SQL targets (read-only re-runs of its queries).
        budget: Rank at most this many steps (the nearest to the failure first).
        lineage: The run's value lineage, if already built.
        profile: Likely invariants learned from the agent's passing runs.
        lexicon: The words the evidence sources read in messages.

    Returns:
        The candidates, best first, the full ranking and statistics.  No failures: no candidates.
    """
    t0 = time.perf_counter()
    ranking = collect_evidence(
        run,
        failures=failures,
        weights=weights,
        graph=graph,
        diagnosers=diagnosers,
        extra_evidence=extra_evidence,
        sql_schema=sql_schema,
        sql_db=sql_db,
        budget=budget,
        lineage=lineage,
        profile=profile,
        lexicon=lexicon,
    )
    return rank_steps(ranking, top=top, started=t0)


def collect_evidence(
    run: Run,
    *,
    failures: Sequence[Failure] | None = None,
    weights: Mapping[str, float] | None = None,
    graph: DependencyGraph | None = None,
    diagnosers: Mapping[str, Diagnoser] | Sequence[Diagnoser] | None = None,
    extra_evidence: Iterable[Evidence] = (),
    sql_schema: str | None = None,
    sql_db: str | None = None,
    budget: int | None = None,
    lineage: Lineage | None = None,
    profile: Profile | None = None,
    lexicon: Lexicon = ENGLISH,
    references: Sequence[Run] = (),
) -> Ranking:
    """The evidence half of `localize` (same arguments): the failures' backward slice and the findings of
    every evidence source about its steps, ready for `rank_steps` (no failures: nothing collected).
    With ``references`` (the agent's passing runs), a diagnoser's finding that they show as often weighs
    nothing (`trajdebug.analysis.reference.Contrast`)."""
    g = graph if graph is not None else DependencyGraph(run)
    if failures is None:
        from trajdebug.analysis._detect import detect

        failures = detect(run, sql_schema=sql_schema)
    fails = tuple(f for f in failures if f.step_id in g)
    w = {**DEFAULT_WEIGHTS, **(weights or {})}
    lin = lineage if lineage is not None else Lineage(run)
    ctx = DiagnoseContext.build(
        run,
        g,
        diagnosers=registered_diagnosers() if diagnosers is None else diagnosers,
        sql_schema=sql_schema,
        sql_db=sql_db,
        extra=[*failure_evidence(fails), *extra_evidence],
        failures=fails,
        lexicon=lexicon,
    )
    ctx.lineage = lin
    if references:
        ctx.contrast = Contrast(references, ctx.diagnosers, lexicon)
    r = Ranking(run, g, ctx, lin, profile, fails, w, lexicon)
    if fails:
        r.collect(budget)
    return r


def rank_steps(r: Ranking, *, top: int = 5, started: float | None = None) -> Localization:
    """The ranking half of `localize`: the collected findings combined into scores, every ranked step a
    candidate with its features (``started``: when the localization began, for its statistics)."""
    t0 = time.perf_counter() if started is None else started
    run, fails = r.run, tuple(r.failures)
    if not fails:
        return Localization([], SearchStats(len(run.steps), 0, time.perf_counter() - t0), "trajdebug", fails)
    ranked = r.combine()
    every = Ranked(r, ranked, max(top, 1))
    cands = list(every[: max(top, 1)])
    stats = SearchStats(
        len(run.steps), len(ranked), time.perf_counter() - t0, len(r.profile.runs) if r.profile else 0
    )
    names = r.g.steps
    yard = {
        sid: f"leads {names[e].name} only because {names[e].name} made its side of the comparison first (the "
        f"yardstick share): the verdict is at most unsure"
        for sid in r.yardstick if (e := r.by_yardstick(sid)) is not None
    }
    for sid in r.chosen:
        if r.by_choice_alone(sid):
            yard[sid] = "its only finding is the branch it chose: the verdict is at most unsure"
    return Localization(cands, stats, "trajdebug", fails, tuple(ranked), every, yard)


class Ranked(Sequence[Candidate]):
    """Every ranked step as a candidate, each built when first read (then kept).

    The report and ``--json`` read the head (``top``), built at once; the learned ranker and the guided
    search read every one.  On a long run most candidates are never read, and their reasons, path and
    features were most of the ranking's own cost.  The ranking is final when this is made
    (`Ranking.combine` ran), so a candidate built late is the one it would have been at once.  It keeps
    the ranking's findings, not its evidence sources (the lineage, the diagnosers' memos: every ranked
    step's verdict is in the ranking's own memo).  Compared and pickled as the tuple of its candidates.
    """

    __slots__ = ("_built", "_ids", "_r")

    def __init__(self, r: Ranking, ids: Sequence[str], head: int) -> None:
        self._r = copy.copy(r)
        self._r.lin = self._r.ctx = None  # type: ignore[assignment]
        self._ids = tuple(ids)
        self._built: list[Candidate | None] = [None] * len(self._ids)
        for i in range(min(head, len(self._ids))):
            self[i]

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> Candidate: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Candidate, ...]: ...

    def __getitem__(self, i: int | slice) -> Candidate | tuple[Candidate, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self._ids))))
        c = self._built[i]
        if c is None:  # (two threads reading at once build the same candidate twice: either is kept)
            c = self._built[i] = _candidate(self._r, self._ids[i])
        return c

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (tuple, Ranked)):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(tuple(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return (tuple, (tuple(self),))


def _named(step: Any) -> str:
    """A step as the reports label it, ``name#`` and the last six characters of its id (`show --step` takes it)."""
    return f"{step.name}#{step.step_id[-6:]}"


def _inferred_hops(r: Ranking, path: tuple[str, ...], inferred: Sequence[tuple[str, float]]) -> list[str]:
    """The reason of each inferred edge a candidate's path follows.

    Said as what it is, with the ids (two steps may share a name): an edge found by content, which the
    confidence grades (1.00: the output is there whole), not a weak link (nu32 finding 8).  A hop's reason
    depends on its step, the step after it on the path and its confidence alone, and a long chain's hops lie
    on the paths of every step before them: each said once per ranking (`Ranking.hop_reasons`), and each
    step's place on the path looked up, not searched for (hops times path length was quadratic)."""
    first = dict(zip(reversed(path), range(len(path) - 1, -1, -1)))  # (a step's first place: later ones overwritten)
    memo, steps, out = r.hop_reasons, r.g.steps, []
    for step_id, conf in inferred:
        at = first.get(step_id, -1)
        key = (step_id, path[at + 1] if 0 <= at < len(path) - 1 else None, conf)
        said = memo.get(key)
        if said is None:
            into = f" is in {_named(steps[key[1]])}'s input" if key[1] is not None else ""
            said = memo[key] = (
                f"the path follows an inferred edge (found by content, not recorded): {_named(steps[step_id])}'s "
                f"output{into} (confidence {conf:.2f})"
            )
        out.append(said)
    return out


def _candidate(r: Ranking, sid: str) -> Candidate:
    """A ranked step as a candidate: its score, reasons, path, signals and features."""
    v = r.verdict(sid)
    reasons = [
        e.reason for e in v.evidence if (not e.sound and e.suspicion > 0) or e.diagnoser == "symptom"
    ]
    if sid in r.thin:
        reasons.append(r.thin[sid][1])  # why lineage put it on the failure's thin slice
    path, inferred = r.path(sid)
    root = sid in r.roots
    up = r.upstream.get(sid)
    if up is not None:
        # (Another call of the step's own tool is named with its id: "scale_recipe, further up" of a
        # scale_recipe does not say which.)
        name = r.g.steps[up].name
        name += f"#{up[-6:]}" if name == r.g.steps[sid].name else ""
        reasons.append(f"{NOT_A_ROOT}: {name}, further up through steps that look sound, is at least as suspect")
    elif v.faulty and not root:
        bad = [d.step_id for d in r.g.parents(sid) if r.explains(d.step_id, sid)]
        if bad:
            names = ", ".join(r.g.steps[b].name for b in bad[:3])
            reasons.append(f"{NOT_A_ROOT}: its input from {names} is also suspect")
    if len(path) > 1:
        # Named where the path first meets a failure: the step that raised, as the run's failures list it,
        # not the enclosing step the same exception propagated up to (the path's end).
        hops = next((i for i, s in enumerate(path[1:], 1) if s in r.fail_ids), len(path) - 1)
        failure = r.g.steps[path[hops]]
        reasons.append(
            f"reaches the failure at {failure.name} through {hops} dependenc{'y' if hops == 1 else 'ies'}"
        )
    elif sid not in r.dist:
        reasons.append("ran before the failure; no recorded or inferred edge connects it")
    if r.families and _matches(r.g.steps[sid], r.families):
        reasons.append(f"produces what failed ({', '.join(sorted(r.families))})")
    if sid in r.elsewhere:
        reasons.append(f"score lowered: {r.elsewhere[sid]}")
    if r.good:
        cons = [c for c, d in r.g.children(sid) if d.kind in VALUE_DEP_KINDS and c in r.good]
        if cons:
            reasons.append(f"score lowered: its output also fed {len(cons)} verified-good result(s)")
    if not reasons or all(r.startswith("reaches the failure") for r in reasons):
        reasons.insert(0, f"{NO_EVIDENCE}: ranked by its place in the failure's backward slice")
    if inferred:
        reasons.extend(_inferred_hops(r, path, inferred))
    signals = tuple(dict.fromkeys(e.diagnoser for e in v.evidence if not e.sound and e.suspicion > 0))
    if sid in r.thin:
        signals += ("lineage:origin",)
    return Candidate(
        sid,
        round(r.scores.get(sid, 0.0), 6),
        tuple(reasons),
        path,
        inferred,
        root,
        v.correction,
        None,
        signals,
        step_features(r, sid),
    )




__all__ = [
    "DEFAULT_WEIGHTS",
    "FAILURE_SUSPICION",
    "KIND_PRIOR",
    "NAMING_FIELDS",
    "PROGRAMMING_ERRORS",
    "Candidate",
    "Localization",
    "Ranked",
    "SearchStats",
    "collect_evidence",
    "failure_evidence",
    "localize",
    "rank_steps",
]
