"""Root-cause localization: a dependency-guided best-first backward search.

From the steps where failures show, the search walks the dependency graph
backward (a dynamic slice, Korel & Laski 1988; Agrawal & Horgan 1990), most
suspicious step first, with a priority queue.  Each step it takes is
diagnosed (`trajdebug.analysis.diagnosers._context`), and suspicion flows on to the
steps it consumed:

* **Propagated suspicion** ("blame") decays per edge kind, data > state >
  control > context > env (thin slicing as weights, Sridharan, Fink & Bodík,
  PLDI 2007), and per hop.  Diagnosers judge what a step *did*, not whether
  its output is infected: a sound step may pass an infected value along
  unchanged, so it passes its blame on; a step that looks faulty explains part
  of the failure itself and keeps that part (explaining away).  Contributions
  of several failure paths through one step accumulate (noisy-OR).
* **Confidence pruning** (Zhang, Gupta & Gupta, PLDI 2006): a step whose output
  also fed verified-good results (consumers whose declared checks all passed)
  is less suspect.
* **Focus by error signature**: a JSON failure looks first at JSON-producing
  steps, an SQL failure at SQL-producing ones, an HTTP failure at tool calls.
* **Recency** breaks ties: the later step (nearer the failure) first.

The stopping rule is Zeller's ("Tracking Failure Origins", *Why Programs
Fail*): a step diagnosed faulty whose inputs are all diagnosed sound is a
root-cause candidate.  Diagnosers rank rather than prove, so one refinement:
a faulty input blocks a step only if it is at least as suspect as the step (a
less suspect input cannot account for a more suspect step, and both stay
candidates, ranked by score).  Diagnosers judge what a step did, not whether
what it was given was already infected, so a root whose chain, through steps
that look sound, reaches a faulty step at least as suspect is explained by it
and demoted.  A candidate's score is its blame times its local suspicion; the
search stops once it holds `EXACT` roots and no step left in the queue could
outscore the last of them (its priority bounds its score: an admissible
bound), or when the queue is empty.  Every step diagnosed counts in
``steps_examined``.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from trajdebug.analysis import _content as content
from trajdebug.analysis._detect import Failure, detect
from trajdebug.analysis._graph import CHILD_KEY, DependencyGraph
from trajdebug.analysis.diagnosers import DiagnoseContext, Diagnoser, Evidence, registered_diagnosers
from trajdebug.model import Dependency, Run, Step


DEFAULT_WEIGHTS: dict[str, float] = {
    "data": 1.0,
    "state": 0.8,
    "control": 0.5,
    "context": 0.35,
    "env": 0.25,
    "child": 0.9,  # implicit child -> enclosing-agent edges
    "hop": 0.95,  # decay per edge, whatever its kind
    "absorb": 0.8,  # share of its blame a faulty-looking step keeps (explaining away)
    "focus": 1.3,  # boost of steps matching a failure's signature
    "prune": 0.5,  # how much verified-good consumers exonerate a step
    "min_confidence": 0.5,  # edges below this do not keep a step from being a root
    "proximity": 0.3,  # exponent of blame in the score: 1 favours steps near the failure, 0 ignores distance
}
"""Search weights; override any of them with ``localize(weights=...)``."""

EXACT = 3
"""How many structural roots the search ranks exactly: it stops once it holds this many and no
step left in its queue could outscore the last of them (the queue priority bounds a step's score
whatever its diagnosis).  Candidates after them come from the steps examined on the way."""

FAILURE_SUSPICION: dict[str, float] = {
    "json": 0.45,
    "sql": 0.45,
    "http": 0.4,
    "empty": 0.4,
    "error-text": 0.45,
}
"""Suspicion a failure adds to the step where it shows, by detector.  Only detectors
that judge the step's own output count: a run's failure says the final output is
wrong (infected), not that the step producing it is the defect; step errors and
contracts are counted by their diagnosers."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A ranked root-cause candidate."""

    step_id: str
    """The step."""
    score: float
    """Ranking score (blame x local suspicion x focus x pruning); comparable within one run."""
    reasons: tuple[str, ...]
    """Why it is suspected, strongest first."""
    path: tuple[str, ...]
    """The dependency path from this step to the failure it explains (step ids, root first)."""
    inferred: tuple[tuple[str, float], ...] = ()
    """Inferred edges the path hangs on, as ``(upstream step id, confidence)``."""
    root: bool = True
    """True when the stopping rule holds (faulty, with all inputs sound); False for fill-ins."""
    correction: Any = None
    """A suggested corrected output, when a diagnoser proposed one."""
    run_id: str | None = None
    """The run holding the step when it is not the analyzed run (an earlier conversation turn)."""


@dataclass(frozen=True, slots=True)
class SearchStats:
    """What the search cost."""

    steps: int
    """Steps in the run."""
    steps_examined: int
    """Steps diagnosed (each counted once)."""
    seconds: float
    """Wall time of the localization."""

    def to_dict(self) -> dict[str, Any]:
        """The stats as JSON data."""
        return {"steps": self.steps, "steps_examined": self.steps_examined, "seconds": round(self.seconds, 6)}


@dataclass(frozen=True, slots=True)
class Localization:
    """The result of a localization method."""

    candidates: list[Candidate]
    """Ranked candidates, best first."""
    stats: SearchStats
    """Search statistics."""
    method: str = "trajdebug"
    """The method that produced it."""
    failures: tuple[Failure, ...] = field(default=())
    """The failures it started from."""


# -- focus by error signature ----------------------------------------------------


def _families(failures: Iterable[Failure]) -> set[str]:
    fam: set[str] = set()
    for f in failures:
        sig = f.signature.lower()
        if "json" in sig:
            fam.add("json")
        elif sig == "sql" or "sql" in sig or "operationalerror" in sig:
            fam.add("sql")
        elif sig == "http" or "http" in sig:
            fam.add("http")
        elif sig == "empty":
            fam.add("empty")
    return fam


def _matches(step: Step, families: set[str]) -> bool:
    out = step.output
    if "json" in families and (
        step.attributes.get("expect") == "json" or (isinstance(out, str) and content.looks_like_json(out))
    ):
        return True
    if "sql" in families and content.sql_of(out) is not None:
        return True
    if "http" in families and step.kind in ("tool", "llm"):
        return True
    return "empty" in families and step.kind in ("retrieval", "tool", "parse")


def _verified_good(run: Run) -> set[str]:
    good: set[str] = set()
    for s in run.steps:
        checks = s.attributes.get("checks")
        if (
            isinstance(checks, list)
            and checks
            and all(isinstance(c, Mapping) and c.get("passed") is True for c in checks)
        ):
            good.add(s.step_id)
    return good


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


# -- the search --------------------------------------------------------------------


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
        budget: Stop after diagnosing this many steps.

    Returns:
        The candidates, best first, and search statistics.  No failures: no candidates.
    """
    t0 = time.perf_counter()
    g = graph if graph is not None else DependencyGraph(run)
    fails = tuple(failures) if failures is not None else tuple(detect(run, sql_schema=sql_schema))
    w = {**DEFAULT_WEIGHTS, **(weights or {})}
    ctx = DiagnoseContext.build(
        run,
        g,
        diagnosers=registered_diagnosers() if diagnosers is None else diagnosers,
        sql_schema=sql_schema,
        sql_db=sql_db,
        extra=[*failure_evidence(fails), *extra_evidence],
        failures=fails,
    )
    search = _Search(run, g, ctx, fails, w, top, budget)
    cands = search.search()
    return Localization(
        cands, SearchStats(len(run.steps), ctx.diagnosed, time.perf_counter() - t0), "trajdebug", fails
    )


class _Search:
    """State of one best-first search (kept apart so `localize` reads as the algorithm)."""

    def __init__(
        self,
        run: Run,
        g: DependencyGraph,
        ctx: DiagnoseContext,
        failures: Sequence[Failure],
        w: Mapping[str, float],
        top: int,
        budget: int | None,
    ) -> None:
        self.run, self.g, self.ctx, self.w, self.top, self.budget = run, g, ctx, w, max(top, 1), budget
        self.k = max(1, min(self.top, int(w.get("exact", EXACT))))
        self.failures = [f for f in failures if f.step_id in g]
        self.families = _families(self.failures)
        self.good = _verified_good(run)
        self.blame: dict[str, float] = {}
        self.via: dict[str, tuple[str, Dependency]] = {}
        self.best_in: dict[str, float] = {}
        self.popped: list[str] = []
        self.done: set[str] = set()
        self.roots: dict[str, float] = {}
        self.upstream: dict[str, str] = {}
        self._factor: dict[str, float] = {}

    def factor(self, sid: str) -> float:
        """Focus and confidence-pruning multiplier of a step (cached)."""
        f = self._factor.get(sid)
        if f is None:
            f = 1.0
            if self.families and _matches(self.g.steps[sid], self.families):
                f *= self.w["focus"]
            if self.good:
                cons = [c for c, d in self.g.children(sid) if d.kind in ("data", "state")]
                if cons:
                    conf = sum(c in self.good for c in cons) / len(cons)
                    f *= 1.0 - self.w["prune"] * conf
            self._factor[sid] = f
        return f

    def edge_weight(self, d: Dependency) -> float:
        kind_w = self.w["child"] if d.key == CHILD_KEY else self.w.get(d.kind, 0.3)
        return kind_w * d.confidence * self.w["hop"]

    def explains(self, parent: str, sid: str) -> bool:
        """Whether a faulty input accounts for a step's fault: it must be at least as suspect."""
        pv = self.ctx.verdict(parent)
        return pv.faulty and pv.suspicion >= self.ctx.verdict(sid).suspicion

    def is_root(self, sid: str) -> bool:
        """Zeller's stopping rule: faulty, and no (confident) input that explains it."""
        if not self.ctx.verdict(sid).faulty:
            return False
        floor = self.w["min_confidence"]
        return not any(self.explains(d.step_id, sid) for d in self.g.parents(sid) if d.confidence >= floor)

    def bound(self, sid: str) -> float:
        """The best score a step could reach whatever its diagnosis: its queue priority."""
        return float(self.blame[sid] ** self.w["proximity"]) * self.factor(sid)

    def score(self, sid: str) -> float:
        return self.bound(sid) * (0.4 + 0.6 * self.ctx.verdict(sid).suspicion)

    def search(self) -> list[Candidate]:
        heap: list[tuple[float, int, str]] = []
        pos = self.g.position
        for f in self.failures:
            if f.step_id not in self.blame:
                self.blame[f.step_id] = 1.0
                heapq.heappush(heap, (-self.bound(f.step_id), -pos(f.step_id), f.step_id))
        prio: dict[str, float] = {}
        absorb = self.w["absorb"]
        while heap:
            negp, _, sid = heapq.heappop(heap)
            if sid in self.done or -negp < prio.get(sid, 0.0) - 1e-12:
                continue  # examined already, or a stale entry (a newer, higher one exists)
            if len(self.roots) >= self.k and -negp < sorted(self.roots.values(), reverse=True)[self.k - 1]:
                break  # nothing left in the queue can outscore the k-th candidate found
            if self.budget is not None and self.ctx.diagnosed >= self.budget:
                break
            self.done.add(sid)
            self.popped.append(sid)
            v = self.ctx.verdict(sid)
            # A step that looks faulty explains part of the failure itself and
            # passes less of it on; one that looks sound may still have passed an
            # infection along unchanged, so it passes its blame on.
            passed = self.blame[sid] * (1.0 - absorb * v.suspicion)
            for d in self.g.parents(sid):
                p = d.step_id
                c = passed * self.edge_weight(d)
                if c <= 0.0:
                    continue
                self.blame[p] = 1.0 - (1.0 - self.blame.get(p, 0.0)) * (1.0 - c)
                if c > self.best_in.get(p, 0.0):
                    self.best_in[p] = c
                    self.via[p] = (sid, d)
                if p not in self.done:
                    pr = self.bound(p)
                    prio[p] = pr
                    heapq.heappush(heap, (-pr, -pos(p), p))
            if v.faulty and self.is_root(sid):
                self.roots[sid] = self.score(sid)
        return self.rank()

    def rank(self) -> list[Candidate]:
        # Blame may have grown after a step was examined (a later path reached
        # it); final scores use the accumulated value.
        pos = self.g.position
        self.upstream = {}
        for sid in list(self.roots):
            up = self.upstream_root(sid)
            if up is not None:
                # Explained by a root further up the infection chain.
                del self.roots[sid]
                self.upstream[sid] = up
        roots = sorted(self.roots, key=lambda s: (-self.score(s), -pos(s)))
        out = [self.candidate(s, True) for s in roots[: self.top]]
        if len(out) < self.top:
            # Too few structural roots: fill with the most suspect examined steps.
            rest = [s for s in self.popped if s not in self.roots and self.ctx.verdict(s).suspicion > 0.0]
            rest.sort(key=lambda s: (-self.score(s), -pos(s)))
            out += [self.candidate(s, False) for s in rest[: self.top - len(out)]]
        return out

    def upstream_root(self, sid: str, depth: int = 8) -> str | None:
        """A faulty step at least as suspect as ``sid``, upstream through diagnosed-sound steps only.

        Diagnosers judge what a step did, not whether what it was given was
        already infected: a tool that faithfully ran a wrong request looks
        sound.  A root whose infection chain, through such sound relays, leads
        to a step that is itself faulty (and at least as suspect) is explained
        by it (Zeller's chain, with sound relays transparent).  Only verdicts
        already known count: this adds no diagnosis.
        """
        own = self.ctx.verdict(sid).suspicion
        seen = {sid}
        frontier = [sid]
        for _ in range(depth):
            nxt = []
            for cur in frontier:
                for d in self.g.parents(cur):
                    p = d.step_id
                    if p in seen or d.key == CHILD_KEY:
                        continue  # (any edge: an upstream step must be at least as suspect to count)
                    seen.add(p)
                    v = self.ctx.known(p)
                    if v is None:
                        continue
                    if v.faulty:
                        if cur != sid and v.suspicion >= own and p in self.roots:
                            return p
                        continue
                    nxt.append(p)
            frontier = nxt
            if not frontier:
                break
        return None

    def path(self, sid: str) -> tuple[tuple[str, ...], tuple[tuple[str, float], ...]]:
        path = [sid]
        inferred: list[tuple[str, float]] = []
        cur = sid
        while cur in self.via and len(path) <= len(self.g):
            nxt, d = self.via[cur]
            if d.origin == "inferred":
                inferred.append((cur, round(d.confidence, 3)))
            path.append(nxt)
            cur = nxt
        return tuple(path), tuple(inferred)

    def candidate(self, sid: str, root: bool) -> Candidate:
        v = self.ctx.verdict(sid)
        reasons = list(v.reasons)
        path, inferred = self.path(sid)
        if root:
            n = sum(1 for d in self.g.parents(sid) if d.confidence >= self.w["min_confidence"])
            weaker = any(self.ctx.verdict(d.step_id).faulty for d in self.g.parents(sid))
            if not n:
                reasons.append("it has no upstream steps in this run")
            elif weaker:
                reasons.append("its suspect inputs are less suspect than it is")
            else:
                reasons.append("its inputs were all diagnosed sound")
        else:
            bad = [d.step_id for d in self.g.parents(sid) if self.explains(d.step_id, sid)]
            up = self.upstream.get(sid)
            if up is not None and not bad:
                reasons.append(
                    f"not a structural root: {self.g.steps[up].name}, further up through steps that look sound, is at least as suspect"
                )
            if bad:
                names = ", ".join(self.g.steps[b].name for b in bad[:3])
                reasons.append(f"not a structural root: its input from {names} is also suspect")
        if len(path) > 1:
            failure = self.g.steps[path[-1]]
            reasons.append(
                f"reaches the failure at {failure.name} through {len(path) - 1} dependenc{'y' if len(path) == 2 else 'ies'}"
            )
        if self.families and _matches(self.g.steps[sid], self.families):
            reasons.append(f"produces what failed ({', '.join(sorted(self.families))})")
        if self.good:
            cons = [c for c, d in self.g.children(sid) if d.kind in ("data", "state") and c in self.good]
            if cons:
                reasons.append(f"less suspect: its output also fed {len(cons)} verified-good result(s)")
        for step_id, conf in inferred:
            reasons.append(
                f"the path hangs on an inferred edge from {self.g.steps[step_id].name} (confidence {conf:.2f})"
            )
        return Candidate(sid, round(self.score(sid), 6), tuple(reasons), path, inferred, root, v.correction)


__all__ = [
    "DEFAULT_WEIGHTS",
    "FAILURE_SUSPICION",
    "Candidate",
    "Localization",
    "SearchStats",
    "failure_evidence",
    "localize",
]
