"""The combination of the ranking: how the evidence sources' findings become one score per step.

A step's score is its structural prior times its evidence, scaled by how much
of the failure's blame reaches it:

- **blame** is propagated backward from the failures, consumers before
  producers (one linear pass); a step that looks faulty keeps part of it
  (explaining away), one that looks sound passes it on; per edge kind a weight
  (thin slicing as weights: Sridharan, Fink & Bodík, PLDI 2007);
- **prior**: what kind of step it is (an enclosing span is made of its
  children, which are ranked themselves);
- **evidence**: a step's findings folded by noisy-OR
  (`trajdebug.analysis._evidence.fold`) into a suspicion; a failing step that
  raised on what it was given keeps a share of it (the symptom);
- **factors**: the failure's thin slice (it introduced a value the failure
  involves), focus (it produces what failed), another listed item, consumers
  verified good (Zhang, Gupta & Gupta, PLDI 2006).

A candidate is a structural root when its evidence makes it faulty and no
step on its path to the failure has stronger evidence of its own (Zeller's
stopping rule).  The hand weights are `DEFAULT_WEIGHTS`.  Each ranked step's
features (`trajdebug.analysis._ranking_features.step_features`) name every value used here, for a learned
model.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace

from trajdebug.analysis._detect import Failure
from trajdebug.analysis._elsewhere import off_the_failure, other_entities
from trajdebug.analysis._evidence import Evidence, Verdict, fold, strongest
from trajdebug.analysis._left_out import shortened_lists
from trajdebug.analysis._routines import Routines
from trajdebug.analysis._sources import ARGUMENT_SIGNALS, Mark, Slice, local_evidence, reference_evidence
from trajdebug.analysis._unfilled import unfilled_handles
from trajdebug.analysis._value_sources import lineage_evidence
from trajdebug.analysis._weights import (
    DEFAULT_WEIGHTS,
    FAILURE_SUSPICION,
    KIND_PRIOR,
    PROGRAMMING_ERRORS,
    FrozenMap,
    _families,
    _matches,
    _verified_good,
    about_the_failure,
    shared_findings,
)
from trajdebug.analysis._wrappers import answered_inside
from trajdebug.analysis.diagnosers import DiagnoseContext, environmental, is_check
from trajdebug.analysis.lexicon import ENGLISH, Lexicon
from trajdebug.analysis.lineage import Lineage
from trajdebug.analysis.reference import Profile, asked_before
from trajdebug.core.graph import CHILD_KEY, DependencyGraph
from trajdebug.core.model import BOUNDARY_KINDS, CONTAINER_KINDS, VALUE_DEP_KINDS, Dependency, Run, Step
from trajdebug.core.values import atoms


SAME_INPUT = "reference:same-input"
"""The signal that a step, given its request in a passing run, answered otherwise (`_Ranking._moves`)."""


class Ranking:
    """One ranking: the slice, the findings of the evidence sources, and their combination.

    The evidence sources (`trajdebug.analysis._sources`) return findings; this
    class only combines them: verdicts (noisy-OR), blame propagated backward
    (explaining away), the prior, the score factors, Zeller's stopping rule.
    The maps it keeps are its own memo of that combination.
    """

    def __init__(
        self,
        run: Run,
        g: DependencyGraph,
        ctx: DiagnoseContext,
        lin: Lineage,
        profile: Profile | None,
        failures: Sequence[Failure],
        w: Mapping[str, float],
        lexicon: Lexicon = ENGLISH,
    ) -> None:
        self.run, self.g, self.ctx, self.lin, self.profile, self.w = run, g, ctx, lin, profile, w
        self.failures = failures
        self.fail_ids = list(dict.fromkeys(f.step_id for f in failures))
        self.routines = Routines(run, g, ctx)
        self.dist: dict[str, int] = {}
        self.via: dict[str, tuple[str, Dependency]] = {}
        self._paths: dict[str, tuple[tuple[str, ...], tuple[tuple[str, float], ...]]] = {}
        self.extra: dict[str, list[Evidence]] = {}
        self.shared: set[str] = set()
        """The steps a finding of which every call of theirs shares was damped (`shared_findings`)."""
        self.verdicts: dict[str, Verdict] = {}
        self.scores: dict[str, float] = {}
        self.has_children = {s.parent_id for s in run.steps if s.parent_id is not None}
        # The run's one input (its request) is taken as given; a conversation's many user
        # turns are acts of a participant, which can be where it went wrong (a user simulator
        # giving a wrong detail): those keep the prior of any step.
        self.given_input = sum(s.kind == "input" for s in run.steps) == 1
        self.blame: dict[str, float] = {}
        self.best_in: dict[str, float] = {}
        self.roots: set[str] = set()
        self.upstream: dict[str, str] = {}
        self.families = _families(failures)
        self.thin: dict[str, tuple[float, str]] = {}
        self.symptoms: set[str] = set()
        self.elsewhere: dict[str, str] = {}
        self.yardstick: dict[str, tuple[str, float]] = {}
        """Later side of a comparison -> (the earlier side's step, its finding's full strength) (`yardsticks`)."""
        self.chosen: set[str] = set()
        """Routers marked for a branch the failure speaks of (`_spoken._spoken_choices`), a ``thin`` mark's kin."""
        self.focused: set[str] = set()
        """Steps with any other ``thin`` mark."""
        self.good = _verified_good(run)
        self.lexicon = lexicon
        self.ids: list[str] = []
        self.written_by: dict[str, str] = {}
        self.wrote_for: dict[str, list[str]] = {}
        """``written_by`` inverted once (model call -> the wrappers that passed its answer on, in run order): a
        scan of ``written_by`` per verdict was quadratic on long runs of agent spans."""
        self.fail_positions: list[int] = []
        self.hop_reasons: dict[tuple[str, str | None, float], str] = {}
        """The reason each inferred hop of a candidate's path is given, by (step, next step, confidence): said once
        per ranking, not once per path through it (`trajdebug.analysis._localize._inferred_hops`)."""

    # -- the slice ----------------------------------------------------------------

    def slice(self) -> None:
        """Hop distances from the failures, backward over every edge (BFS), with the edge taken."""
        q: deque[str] = deque()
        for sid in self.fail_ids:
            self.dist[sid] = 0
            q.append(sid)
        while q:
            sid = q.popleft()
            for d in self.g.parents(sid):
                p = d.step_id
                if p not in self.dist:
                    self.dist[p] = self.dist[sid] + 1
                    q.append(p)

    def detached(self) -> list[str]:
        """Steps that started before the last failure but that no edge connects to it."""
        last = max(self.g.position(s) for s in self.fail_ids)
        return [s.step_id for s in self.run.steps[:last] if s.step_id not in self.dist]

    # -- evidence -----------------------------------------------------------------

    def gather(self, ids: Sequence[str]) -> None:
        """The findings of every evidence source about the ranked steps, grouped per step.

        Order matters where findings tie (the first of equal marks is kept, as
        is the first of equal evidence of one signal): the sources run in one
        fixed order.
        """
        sl = Slice(
            self.run,
            self.g,
            self.lin,
            self.profile,
            self.failures,
            self.fail_ids,
            self.w,
            self.dist,
            frozenset(self.has_children),
            self.lexicon,
        )
        found = [*lineage_evidence(sl), *local_evidence(sl, ids), *shortened_lists(sl, ids)]
        ref, first = reference_evidence(sl, ids)
        found += ref
        found += other_entities(sl, ids)
        found += unfilled_handles(sl, ids)
        self.written_by = {w: s.step_id for w, s in answered_inside(sl).items()}
        for x in found:
            if isinstance(x, Mark):
                if x.name == "elsewhere":
                    self.elsewhere[x.step_id] = x.sentence
                elif x.name == "yardstick":  # (its sentence: the step of the earlier side)
                    self.yardstick[x.step_id] = (x.sentence, x.value)
                else:
                    (self.chosen if x.name == "chosen" else self.focused).add(x.step_id)
                    if x.value > self.thin.get(x.step_id, (0.0, ""))[0]:
                        self.thin[x.step_id] = (x.value, x.sentence)
            else:
                self.extra.setdefault(x.step_id, []).append(x)
        share = self.w.get("shared", DEFAULT_WEIGHTS["shared"])
        spoken = about_the_failure(self.lin, self.failures, self.lexicon)
        before, self.extra = self.extra, shared_findings(self.extra, self.run, share, spoken)
        self.shared = {sid for sid, evs in self.extra.items() if evs != before.get(sid)}
        self.written_by = {w: inner for w, inner in self.written_by.items() if not self._erred_before(w, inner)}
        self.wrote_for = {}
        for w, inner in self.written_by.items():
            self.wrote_for.setdefault(inner, []).append(w)
            # The answer is about the item its wrapper was asked about: another listed item for both.
            if w in self.elsewhere:
                self.elsewhere.setdefault(inner, self.elsewhere[w])
        if first is not None:
            # The earliest deviation on the slice weighs more (Sahoo et al. 2013).
            self.extra[first] = [
                Evidence(e.step_id, min(0.95, e.suspicion * self.w["earliest"]), e.reason, e.diagnoser, e.sound, own=e.own)
                if e.diagnoser.startswith("reference:")
                else e
                for e in self.extra[first]
            ]

    # -- scoring ------------------------------------------------------------------

    def symptom(self, step: Step) -> bool:
        """Whether a failing step raised on what it was given rather than by a defect of its own.

        A step of the agent's own code that raises anything but a programming
        error (a validation, a consistency check, a domain exception) judged
        its input; so does any step whose error names values it was given, or
        that is a check.  A programming error (``TypeError``, ``NameError``...)
        raised by code that was given what it always gets is its own defect.
        """
        err = step.error
        if err is None:
            return False
        if is_check(step, err):
            return True
        view = self.lin.view(step.step_id)
        named = [a for a in atoms(err.message) if a.kind != "text" or len(a.raw) > 2]
        if any(view.given(a) for a in named):
            return True
        own = err.type.rsplit(".", 1)[-1] in PROGRAMMING_ERRORS
        if step.kind in ("tool", "retrieval"):
            # A tool refusing what it was given (a business rule, a validation on its side)
            # shows the failure; a tool timing out or crashing is its own (or its service's).
            return not own and not environmental(f"{err.type}: {err.message}")
        if step.kind in BOUNDARY_KINDS:
            return False  # a model failing is judged by its own diagnosers
        return not own

    def verdict(self, sid: str) -> Verdict:
        v = self.verdicts.get(sid)
        if v is None:
            ev = strongest(self._own_findings(sid))
            # A model's made-up values that never reached the failure weigh less (`unrelated_claim`).
            routine = self.routines.of(sid)
            ev = [
                off_the_failure(e, self.lin, self.failures, self.thin, self.w["unrelated_claim"], routine=routine)
                for e in ev
            ]
            step = self.g.steps[sid]
            declared = all(
                f.detector in ("outcome", "run-failure") for f in self.failures if f.step_id == sid
            )
            if sid in self.fail_ids and (self.symptom(step) or (declared and step.error is None)):
                self.symptoms.add(sid)
                ev = [
                    Evidence(
                        e.step_id,
                        e.suspicion * self.w["symptom"],
                        e.reason,
                        e.diagnoser,
                        e.sound,
                        e.correction,
                    )
                    for e in ev
                ]
                ev.append(
                    Evidence(
                        sid,
                        0.0,
                        "raised on what it was given: where the failure showed, not where it began",
                        "symptom",
                    )
                )
            v = self.verdicts[sid] = fold(sid, ev)
        return v

    def _erred_before(self, wrapper: str, writer: str) -> bool:
        """Whether a model call inside ``wrapper`` that ran before ``writer`` is faulty on its own findings: the
        answer then carries that call's error (a sub-agent's model that picked the wrong record, restated by its
        last turn), and the findings about it stay with the wrapper, as they would without the writer known.  A
        tool inside that is off (a lookup listing another record first) leaves the choice to the writer."""
        inside = {wrapper}
        for s in self.run.steps[self.g.position(wrapper) + 1 : self.g.position(writer)]:
            if s.parent_id in inside:
                inside.add(s.step_id)
                found = [*self.ctx.verdict(s.step_id).evidence, *self.extra.get(s.step_id, [])]
                if s.kind == "llm" and fold(s.step_id, found).faulty:
                    return True
        return False

    def _own_findings(self, sid: str) -> list[Evidence]:
        """The findings about a step, those about a wrapper's answer moved to the model call inside it that
        wrote that answer (`trajdebug.analysis._wrappers.answered_inside`)."""
        found = [*self.ctx.verdict(sid).evidence, *self.extra.get(sid, [])]
        if sid in self.written_by:
            # A finding about the wrapper's own code (everything inside it cleared) stays with it, as does "given
            # the same input" when its writer was asked otherwise than in every passing run (`_moves`).
            keep = not self._moves(self.written_by[sid])
            found = [e for e in found if e.sound or e.own or e.diagnoser in ARGUMENT_SIGNALS or (keep and e.diagnoser == SAME_INPUT)]
        said = {e.diagnoser for e in found}
        # Per signal, the findings of one wrapper: two wrappers of one answer (a tool step and the agent span of
        # one sub-agent both return it) say the same thing twice, and counting both would strengthen it.  The
        # wrapper whose finding is strongest speaks for it (the outer one's may be discounted as passed on).
        moved: dict[str, list[Evidence]] = {}
        for w in self.wrote_for.get(sid, ()):
            name = self.g.steps[w].name
            mine: dict[str, list[Evidence]] = {}
            for e in [*self.ctx.verdict(w).evidence, *self.extra.get(w, [])]:
                # A signal the writer already carries says the same thing again: the wrapper's finding repeats it.
                if e.diagnoser == SAME_INPUT and not self._moves(sid):
                    continue
                if not (e.sound or e.own) and e.diagnoser not in ARGUMENT_SIGNALS and e.diagnoser not in said:
                    mine.setdefault(e.diagnoser, []).append(
                        replace(e, step_id=sid, reason=f"{e.reason} (in the answer it wrote for {name})")
                    )
            for d, ev in mine.items():
                if d not in moved or max(e.suspicion for e in ev) > max(e.suspicion for e in moved[d]):
                    moved[d] = ev
        return [*found, *(e for ev in moved.values() for e in ev)]

    def _moves(self, writer: str) -> bool:
        """Whether a wrapper's "given the same input" finding holds of the model call that wrote its answer: a
        passing run made that call's request too (nu25 F2: handed a cut document, it was not)."""
        return asked_before(self.g.steps[writer], self.profile, self.g.steps)

    def prior(self, sid: str) -> float:
        step = self.g.steps[sid]
        kind = KIND_PRIOR.get(step.kind, 1.0) if step.kind != "input" or self.given_input else 1.0
        if sid in self.has_children and step.kind not in CONTAINER_KINDS:
            kind *= 0.7  # an enclosing span is made of its children, which are ranked themselves
        return kind

    def edge_weight(self, d: Dependency) -> float:
        kind_w = self.w["child"] if d.key == CHILD_KEY else self.w.get(d.kind, 0.3)
        return kind_w * d.confidence * self.w["hop"]

    def propagate(self, ids: set[str]) -> None:
        """Blame from the failures backward, consumers before producers (one pass, linear).

        A step that looks faulty explains part of the failure itself and passes
        less of it on (explaining away); one that looks sound may have passed an
        infection along unchanged, so it passes its blame on.  Contributions of
        several paths through one step accumulate (noisy-OR).
        """
        absorb = self.w["absorb"]
        self._paths.clear()  # (read from `via`, which this fills)
        for sid in self.fail_ids:
            self.blame[sid] = 1.0
        for sid in reversed(self.g.topological_order()):
            b = self.blame.get(sid, 0.0)
            if b <= 0.0:
                continue
            passed = b * (1.0 - absorb * self.verdict(sid).suspicion) if sid in ids else b
            for d in self.g.parents(sid):
                c = passed * self.edge_weight(d)
                if c <= 0.0:
                    continue
                p = d.step_id
                self.blame[p] = 1.0 - (1.0 - self.blame.get(p, 0.0)) * (1.0 - c)
                if c > self.best_in.get(p, 0.0):
                    self.best_in[p] = c
                    self.via[p] = (sid, d)


    def by_choice_alone(self, sid: str) -> bool:
        """Whether a step's only finding is the branch it chose (`chosen`): no evidence, no other mark.  The order
        stands, but no verdict may rise on it: a right router before the wrong step it chose, or a loop's
        controller that never went back in this run, carries that mark all the same (rev58g)."""
        return (
            sid in self.chosen
            and sid not in self.focused
            and sid not in self.elsewhere
            and sid not in self.yardstick
            and not self.extra.get(sid)
        )

    def by_yardstick(self, sid: str) -> str | None:
        """The earlier side of a comparison this step leads only by the ``yardstick`` share (None: none): with that
        side's finding at full strength, the earlier step would score at least as high.  The order stands (a bet
        right about 9 times in 10 on the development suites), but no verdict may rise on it: a stale quote or a
        stale discount makes the earlier side the wrong one, in the same recording (rev53l)."""
        earlier, full = self.yardstick.get(sid, ("", 0.0))
        t = self.thin.get(earlier, (0.0, ""))[0]
        if earlier not in self.scores or not 0.0 < t < full:
            return None
        undone = self.scores[earlier] * (1.0 + self.w["thin"] * full) / (1.0 + self.w["thin"] * t)
        return earlier if undone >= self.scores.get(sid, 0.0) else None

    def factor(self, sid: str) -> float:
        """Focus (the step produces what failed, or introduced a value the failure involves) and
        confidence pruning (its output fed verified-good results)."""
        f = 1.0 + self.w["thin"] * self.thin.get(sid, (0.0, ""))[0]
        if sid in self.elsewhere:
            f *= self.w["elsewhere"]
        if self.families and _matches(self.g.steps[sid], self.families):
            f *= self.w["focus"]
        if self.good:
            cons = [c for c, d in self.g.children(sid) if d.kind in VALUE_DEP_KINDS]
            if cons:
                f *= 1.0 - self.w["prune"] * sum(c in self.good for c in cons) / len(cons)
        return f

    def score(self, sid: str) -> float:
        blame = self.blame.get(sid, 0.0)
        reach = blame ** self.w["proximity"] if blame > 0 else self.w["detached"]
        if sid in self.symptoms:
            reach *= self.w["symptom_rank"]
        return (
            reach
            * self.prior(sid)
            * self.factor(sid)
            * (self.w["base"] + (1.0 - self.w["base"]) * self.verdict(sid).suspicion)
        )

    def explains(self, parent: str, sid: str) -> bool:
        """Whether a faulty input accounts for a step's fault: it must be at least as suspect."""
        pv = self.verdict(parent) if parent in self.scores else None
        return pv is not None and pv.faulty and pv.suspicion >= self.verdict(sid).suspicion

    def is_root(self, sid: str) -> bool:
        """Zeller's stopping rule: faulty, and no (confident) input that explains it."""
        if not self.verdict(sid).faulty:
            return False
        floor = self.w["min_confidence"]
        return not any(self.explains(d.step_id, sid) for d in self.g.parents(sid) if d.confidence >= floor)

    def upstream_root(self, sid: str, roots: AbstractSet[str], depth: int = 8) -> str | None:
        """A root at least as suspect as ``sid`` upstream through steps that look sound (transparent relays).

        Not along an edge inferred into a part of a step's input whose producer the recorder saw (`_shadowed`):
        the recording says where that part came from (issue 23, nu22: a quiche's scaling, handed its recipe by
        its own lookup, said to be explained by the lemon tart's through a price that matched a number in it)."""
        own = self.verdict(sid).suspicion
        seen = {sid}
        frontier = [sid]
        for _ in range(depth):
            nxt = []
            for cur in frontier:
                parents = self.g.parents(cur)
                for d in parents:
                    p = d.step_id
                    if p in seen or d.key == CHILD_KEY or p not in self.scores or _shadowed(d, parents):
                        continue
                    seen.add(p)
                    v = self.verdict(p)
                    if v.faulty:
                        if p in self.elsewhere and sid not in self.elsewhere:
                            # A call about another listed item (the previous vessel) did its part
                            # for that item: it does not explain the step about the failure's own.
                            continue
                        if cur != sid and v.suspicion >= own and p in roots:
                            return p
                        continue
                    nxt.append(p)
            frontier = nxt
            if not frontier:
                break
        return None

    def rank(self, budget: int | None) -> list[str]:
        """Every step of the slice (at most ``budget``), best first: `collect`, then `combine`."""
        self.collect(budget)
        return self.combine()

    def collect(self, budget: int | None) -> list[str]:
        """The steps to rank (the slice, nearest the failure first, then the detached steps) and the
        findings of every evidence source about them."""
        self.slice()
        on_slice = sorted(self.dist, key=lambda s: (self.dist[s], -self.g.position(s)))
        ids = on_slice + self.detached()
        if budget is not None:
            ids = ids[:budget]
        self.gather(ids)
        self.ids = ids
        return ids

    def combine(self) -> list[str]:
        """The collected steps ranked: blame propagated, scores, structural roots first."""
        ids = self.ids
        chosen = set(ids)
        self.propagate(chosen)
        pos = self.g.position
        self.scores = {sid: self.score(sid) for sid in ids}
        # Boosts multiply (thin slice, focus), so a score may pass 1: scale all by the top one
        # when it does, so scores read from 0 to 1 and keep their order and ratios.
        top = max(self.scores.values(), default=0.0)
        if top > 1.0:
            self.scores = {sid: v / top for sid, v in self.scores.items()}
        # A root explains the failure through an edge: a step no edge connects to it may rank, never as a root.
        roots = {sid for sid in ids if sid in self.dist and self.is_root(sid)}
        # Every root is checked against all the roots found, not against what earlier checks left: taking
        # them one by one from a set of strings made the outcome depend on the hash seed (a relay's
        # upstream root discarded before or after the relay was checked).
        found = frozenset(roots)
        for sid in sorted(found, key=pos):
            up = self.upstream_root(sid, found)
            if up is not None:
                roots.discard(sid)
                self.upstream[sid] = up
        self.roots = roots

        def key(s: str) -> tuple[int, float, int, int]:
            return (0 if s in roots else 1, -round(self.scores[s], 9), self.dist.get(s, 10**6), -pos(s))

        return sorted(ids, key=key)

    def path(self, sid: str) -> tuple[tuple[str, ...], tuple[tuple[str, float], ...]]:
        """The steps from a step to the failure along the edges that brought it the most blame, and the
        inferred edges among them with their confidence."""
        memo = self._paths
        hit = memo.get(sid)
        if hit is None:
            # Every step's path is its own first hop on the path of the next: walked once per run, not once
            # per step (a long chain would cost its length squared).
            chain, cur, on = [sid], sid, {sid}
            while cur in self.via and cur not in memo:
                cur = self.via[cur][0]
                if cur in on:
                    return self._walk(sid)  # a cycle: the bounded walk
                chain.append(cur)
                on.add(cur)
            tail = memo.get(cur, ((cur,), ()))
            for node in reversed(chain[:-1]):
                d = self.via[node][1]
                hop = ((node, round(d.confidence, 3)),) if d.origin == "inferred" else ()
                tail = memo[node] = ((node, *tail[0]), hop + tail[1])
            hit = memo.get(sid, tail)
        if len(hit[0]) > len(self.g) + 1:
            return self._walk(sid)  # longer than the run: the bounded walk
        return hit

    def _walk(self, sid: str) -> tuple[tuple[str, ...], tuple[tuple[str, float], ...]]:
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


def _shadowed(d: Dependency, parents: Sequence[Dependency]) -> bool:
    """Whether an inferred edge brings a value into a part of the input that a recorded edge (tracked or
    declared) already brought whole: ``recipe.base_servings`` beside ``recipe`` from the recipe lookup."""
    if d.origin != "inferred" or not d.key:
        return False
    return any(
        r.origin != "inferred" and r.key and r.step_id != d.step_id
        and (d.key == r.key or d.key.startswith((r.key + ".", r.key + "[")))
        for r in parents
    )

__all__ = [
    "DEFAULT_WEIGHTS",
    "FAILURE_SUSPICION",
    "KIND_PRIOR",
    "PROGRAMMING_ERRORS",
    "FrozenMap",
    "Ranking",
]
