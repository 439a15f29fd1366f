"""The guided search's state: its nodes, the answers it took and the candidates they leave.

`GuidedSearch` (`_guided.py`) asks the questions over this state (see that module's docstring for the search);
here are the nodes (the failure's slice and the earlier steps an audit may ask about), the answers taken
(given beforehand, stored and replayed as they were asked, volunteered, implied), the verdict standing for
each step, and the candidate set the answers leave.

Implied answers.  A step answered correct vouches for the inputs it relays whole (a pass-through whose
output equals its input's, a container or wrapper one whole part of whose output is a child's answer): a
right relay relays nothing wrong, so those inputs are marked correct without a question (`Guided.implied`,
`_oracles.Carrier`; a short value, which could recur by chance, implies nothing).  A wrong answer implies
nothing about an input even when the two outputs are equal: the step may be wrong for having passed its
input on unchanged (a conversion left undone).

Pass-through containers (`Carrier.passes`: output equal to one child's whole output) are not asked
before the child: a child standing wrong makes the container wrong too (a wrong value is wrong wherever it
is passed on; `_stand`, `Guided.implied`); a child standing right leaves the container to be asked, for
it may be wrong for passing the value on unchanged (a conversion left undone, as above).

Resuming.  A search built over stored answers asks what the search that took them one at a time would
have asked next: its prior is the ranker's order (`Analysis.ranked`), never the order those answers made
(`settled`), and each answer says what it was asked as (`Answer.asked`, `GuidedSearch.stamp`: an audit, a
recheck, a question), stored with it, so a resumed search takes it as the session did whatever answers before
it were taken back since, and at no search per answer.  A reader keeps the latest answer per step and
answerer, so where answers are stored as given (a person's, ``once``) no step is asked twice: a conflict, or
a tie between answerers of equal trust, is reported with the steps whose answers clash (`Guided.clashing`),
not re-asked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

from trajdebug.analysis._guided_paths import _bits, _popcount
from trajdebug.analysis._guided_result import _FLOOR, failure_step, priors
from trajdebug.analysis._oracles import Carrier
from trajdebug.analysis._verdicts import Verdicts, two_valued, until
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import ASKED_GROUP, Answer


if TYPE_CHECKING:
    from trajdebug.analysis._pipeline import Analysis


STRATEGIES = ("prior", "top-down", "linear")
"""The question orders `GuidedSearch` knows."""

_MAX_ASKS, _MAX_ASKS_RECHECK = 3, 5
"""No step is asked more than this many times (a recheck and a tie-break; with ``recheck``, a lead of two)."""
AUDIT = 2
"""Questions asked, by default, to test a proof whose root's inputs were only inferred (or none recorded)."""


class GuidedState:
    """The nodes, answers, verdicts and candidates of a guided search; `GuidedSearch` asks the questions (its
    docstring names the arguments)."""

    def __init__(
        self,
        analysis: Analysis,
        answers: Sequence[Answer] = (),
        *,
        strategy: str = "prior",
        max_questions: int | None = None,
        recheck: bool = False,
        audit: int | None = None,
        once: bool = False,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r} (one of {', '.join(STRATEGIES)})")
        self.analysis = analysis
        self.strategy = strategy
        self.max_questions = max_questions
        self.recheck = recheck
        # Known to err: split answers are asked again until a side leads by two (Wald's sequential test,
        # 1945; five at most): at 10 % wrong answers a step then stands wrong 1 time in 66, not 1 in 36.
        self.lead = 2 if recheck else 1
        self.once = once
        self.max_asks = 1 if once else _MAX_ASKS_RECHECK if recheck else _MAX_ASKS
        audit = AUDIT if audit is None else audit
        self.audit = audit
        self.audited: dict[int, int] = {}
        """Steps asked to test a proof -> the proved step they were asked for."""
        self.asked = 0
        self.problems: list[str] = []
        graph = DependencyGraph(analysis.run)
        self.graph = graph
        self.failure = failure_step(analysis, graph)
        order = graph.topological_order()
        inside = graph.backward_slice([self.failure]) if self.failure is not None else set()
        # The steps outside the slice that ran before the failure are nodes too, with no path to it: only an audit
        # (below) can tie one to the slice.  Leaves only: a container's output is its children's; a parent the
        # recording lost (a record dropped under load), or a step on a parent cycle, encloses nothing.
        self._containers = {p for sid in graph.steps if (p := graph.parent(sid)) is not None}
        extra = self._outside(graph, inside) if audit > 0 else set()
        # A container that recorded no output of its own (a turn of an agent loop) offers nothing to judge:
        # it is not asked about, and its children stand in for it as the inputs of what it fed.
        hollow = {c for c in self._containers if graph.steps[c].output is None and c != self.failure}
        self.ids: list[str] = [s for s in order if (s in inside or s in extra) and s not in hollow]
        self.index = {s: i for i, s in enumerate(self.ids)}
        self.parents: list[list[int]] = [sorted(self._inputs(graph, s, hollow)) for s in self.ids]
        self.kids: list[list[int]] = [[] for _ in self.ids]
        for i, ps in enumerate(self.parents):
            for q in ps:
                self.kids[q].append(i)
        self.prior = priors(analysis, [s for s in self.ids if s in inside])
        outside = priors(analysis, [s for s in self.ids if s not in inside])
        self.prior.update({s: _FLOOR * p for s, p in outside.items()})
        self.mass = [self.prior[s] for s in self.ids]
        self.log: list[Answer] = []
        self.implied: list[Answer] = []
        """Answers no oracle gave: inputs a correct step carries whole (see the module docstring)."""
        # The parents the graph keeps (none on a parent cycle): one hierarchy for edges and enclosing.
        self.carrier = Carrier([graph.steps[sid] for sid in self.ids], {sid: graph.parent(sid) for sid in graph.steps})
        starts, ends = [graph.steps[sid].start_ns for sid in self.ids], [until(graph.steps[sid]) for sid in self.ids]
        f = self.index.get(self.failure or "")
        self.verdicts = Verdicts(self.parents, f, self.carrier.enclosing, starts, ends)
        self.stand_in = {c: k for c, k in self.carrier.passes().items() if c != f and k != f}
        """Pass-through containers -> the child whose answer stands for them (see the module docstring)."""
        self.stood: set[int] = set()
        """The containers whose standing answer is their child's (`_stand`), not one of their own."""
        self.votes = self.verdicts.votes
        self.rechecked: set[int] = set()
        # The last question when a recheck (step, None) or an audit (step, proved step): its answer says so.
        self._marks: tuple[int, int | None] | None = None
        self._pending: str | None = None  # the step `next_question` gave last, until an answer about it
        self.chosen_by: str | None = None
        """How the prior strategy picked the last question: ``likeliest`` (the candidate that holds most of the
        mass, or an input of it: `_leader`), ``gain`` (the least mass expected left); None otherwise."""
        self._state: tuple[int, int, dict[int, int], tuple[int, int] | None] | None = None
        self.grouped: set[str] = set()  # names of like steps whose group was answered "not all" (`GuidedSearch.group`)
        self._replay(answers)

    def _replay(self, answers: Sequence[Answer]) -> None:
        """The answers given before this state was built, taken in their order."""
        for a in answers:
            # Each as it says it was asked (`Answer.asked`): what it means never depends on the answers before it,
            # so taking one of those back leaves it as it was, and a long list costs no search per answer.
            self._mark(a)
            if a.asked != ASKED_GROUP:
                self._take(a, given=True)

    def _inputs(self, graph: DependencyGraph, sid: str, hollow: set[str]) -> set[int]:
        """The nodes a step took its input from, through the hollow containers between them."""
        out: set[int] = set()
        todo, seen = [sid], {sid}
        while todo:
            for d in graph.parents(todo.pop()):
                if d.step_id in self.index:
                    out.add(self.index[d.step_id])
                elif d.step_id in hollow and d.step_id not in seen:
                    seen.add(d.step_id)
                    todo.append(d.step_id)
        out.discard(self.index[sid])
        return out

    def _outside(self, graph: DependencyGraph, inside: set[str]) -> set[str]:
        if self.failure is None:
            return set()
        start = graph.steps[self.failure].start_ns
        return {
            sid
            for sid, s in graph.steps.items()
            if sid not in inside and sid not in self._containers and s.start_ns <= start
        }

    # -- answers ----------------------------------------------------------------

    def _take(self, a: Answer, *, given: bool) -> None:
        a = two_valued(a)
        if a.run_id is not None and a.run_id != self.analysis.run.run_id:
            return  # an earlier turn's step: not a node of this search
        i = self.index.get(a.step_id)
        if i is None:
            if given:
                return  # outside the failure's slice: it cannot be the cause
            self.problems.append(f"answer about {a.step_id}, not a step of the failure's slice (left out)")
            return
        if i in self.stood:  # its own answer replaces the one its child gave it
            self.stood.discard(i)
            self.verdicts.replace(i, a)
        else:
            self.verdicts.add(i, a)
        self.log.append(a)
        self._state = None
        if a.correct is True:
            self._imply(i, a)
        self._stand(i, a)
        proved = self.audited.get(i)
        if proved is not None and self.verdict(i) is False and i not in self.parents[proved]:
            # A wrong step outside the proved root's reach: the recording missed an
            # input of that root (one root explains every wrong output), so the step
            # becomes one of its inputs and the proof is undone.
            self.parents[proved] = sorted({*self.parents[proved], i})
            self.kids[i].append(proved)

    def _imply(self, i: int, a: Answer) -> None:
        """Mark correct every unanswered input whose whole output step ``i`` carries (and theirs, in turn)."""
        for p, via in self.carrier.implied(i, self.parents, self.votes):
            why = f"implied: {self.graph.steps[self.ids[via]].name} carries its whole output and was answered correct"
            said = Answer(self.ids[p], True, a.by, a.at_ns, why, a.run_id)
            self.verdicts.replace(p, said)
            self.implied.append(said)

    def _stand(self, i: int, a: Answer) -> None:
        """Give the pass-through containers of step ``i`` (and theirs, in turn) its standing *wrong* verdict.

        Sound one way only: this container's output is the child's unchanged, so a wrong child makes it
        wrong (a wrong value is wrong wherever it is passed on).  A right child does not make it right: the
        container may be wrong for passing the value on unchanged (a conversion left undone), so it is asked
        itself (`_open`), as is one whose child did not know.  Two-valued: an erroneous child says nothing
        of the container's other inputs."""
        todo = [i]
        while todo:
            k = todo.pop()
            if self.verdict(k) is not False:
                continue
            for c in [c for c, kid in self.stand_in.items() if kid == k]:
                if c in self.votes and c not in self.stood:
                    continue  # answered itself (beforehand, or asked): its own answer stands
                why = f"stands for it: its output is {self.graph.steps[self.ids[k]].name}'s, passed on unchanged"
                said = Answer(self.ids[c], False, a.by, a.at_ns, why, a.run_id)
                self.verdicts.replace(c, said)
                self.stood.add(c)
                self.implied.append(said)
                todo.append(c)

    def answer(self, a: Answer) -> None:
        """Record an answer (asked by `next_question`, or volunteered), with what it was asked as (`stamp`)."""
        self.asked += 1
        if a.asked == ASKED_GROUP:
            self._mark(a)  # one question, about no step: the step that led the group is asked next
            return
        a = self.stamp(a)
        if a.step_id == self._pending:
            self._pending = self._marks = None  # consumed by that step's answer only: one volunteered between keeps it
        self._mark(a)
        self._take(a, given=False)

    def asked_as(self) -> str | None:
        """What the last question of `next_question` is asked as (`Answer.asked`): ``question``, ``recheck`` or
        ``audit:<the proved step's id>``; None when no question is pending."""
        if self._pending is None:
            return None
        if self._marks is None:
            return "question"
        proved = self._marks[1]
        return "recheck" if proved is None else f"audit:{self.ids[proved]}"

    def stamp(self, a: Answer) -> Answer:
        """``a`` with what it was asked as (`asked_as`) when it answers the pending question and does not say.

        Store the stamped answer: a search resumed over stored answers takes each as it was asked (an audit
        counts against ``audit``, a wrong one ties its step to the proved root; a recheck is not repeated),
        whatever answers before it were taken back since."""
        if a.asked is not None or a.step_id != self._pending or a.run_id not in (None, self.analysis.run.run_id):
            return a
        return dataclasses.replace(a, asked=self.asked_as())

    def _mark(self, a: Answer) -> None:
        """Note that answer ``a`` answered a recheck or an audit, as it says (`Answer.asked`)."""
        i = self.index.get(a.step_id)
        if i is None or a.asked is None or a.run_id not in (None, self.analysis.run.run_id):
            return
        if a.asked == "recheck":
            self.rechecked.add(i)  # each step is rechecked once
        elif a.asked.startswith("audit:") and (proved := self.index.get(a.asked[len("audit:"):])) is not None:
            self.audited[i] = proved  # a wrong answer ties it to the proved step (`_take`)
        elif a.asked == ASKED_GROUP:
            self.grouped.add(self.graph.steps[a.step_id].name)  # no group of that name is offered again

    def ties(self) -> list[int]:
        """With ``once``, the steps whose most trusted answerers disagree evenly (a person and ``person:alice``):
        never asked again, so one of those answers must be taken back (`Guided.clashing`)."""
        return sorted(i for i in self.votes if self.verdicts.disputed(i, self.lead)) if self.once else []

    def verdict(self, i: int) -> bool | None:
        """The answer that stands for step ``i`` (`Verdicts.verdict`)."""
        return self.verdicts.verdict(i)

    def admissible(self, i: int) -> bool | None:
        """What step ``i``'s standing wrong answers say of its inputs (`Verdicts.admissible`)."""
        return self.verdicts.admissible(i)

    # -- the candidate set -----------------------------------------------------

    def _reaches(self) -> list[int]:
        """Each step's backward reach that avoids correct-marked steps, as a bit set (empty for those).

        An inadmissible step was given a wrong input: when its recorded inputs reach no step that could be
        a root, the wrong input went unrecorded, and its reach takes in every step that may have fed it
        (`_earlier`).  It stays in its own reach (the way to its inputs) but is never a candidate
        (`_inadmissible`, masked out in `_compute`)."""
        reach = [0] * len(self.ids)
        bad = self.verdicts.inadmissible()
        said = self._standing()
        for i in range(len(self.ids)):
            if said[i] is True:
                continue
            r = 1 << i
            for p in self.parents[i]:
                r |= reach[p]
            if bad >> i & 1 and not r & ~bad:
                r |= self.verdicts.earlier(i)
            reach[i] = r
        return reach

    def _standing(self) -> list[bool | None]:
        """`verdict` of every node at once: only the answered nodes, the vouched ones and the failure have one,
        so the rest are not asked one by one (a 10,000-step slice is searched per question)."""
        said: list[bool | None] = [None] * len(self.ids)
        for i in self.verdicts.vouched():
            said[i] = True
        for i in self.votes:
            said[i] = self.verdict(i)
        if self.failure is not None:
            said[self.index[self.failure]] = False
        return said

    def _compute(self) -> tuple[int, int, dict[int, int], tuple[int, int] | None]:
        """(candidates, the deepest wrong step, the reaches of the wrong steps, a conflicting pair)."""
        if self._state is not None:
            return self._state
        reach = self._reaches()
        if self.failure is None:
            self._state = (0, -1, {}, None)
            return self._state
        f = self.index[self.failure]
        keep = ~self.verdicts.inadmissible()  # wrong for a wrong input: never the root
        cand = reach[f] & keep
        said = self._standing()
        wrong = {i: reach[i] & keep for i in range(len(self.ids)) if said[i] is False and reach[f] >> i & 1}
        conflict: tuple[int, int] | None = None
        focus = f
        # The deepest wrong steps first (smallest reach): one root must lie in every wrong step's reach.
        for i in sorted(wrong, key=lambda j: (_popcount(wrong[j]), -j)):
            if cand & wrong[i]:
                cand &= wrong[i]
                if keep >> i & 1 and _popcount(wrong[i]) <= _popcount(wrong[focus]):
                    focus = i  # the deepest wrong step that may be the root (an inadmissible one may not)
            else:
                conflict = (focus, i)
                break
        self._state = (cand, focus, wrong, conflict)
        return self._state

    def _mass(self, bits: int) -> float:
        return sum(self.mass[i] for i in _bits(bits))
