"""Ask, don't guess: algorithmic debugging over the failure's backward slice.

Shapiro's algorithmic (declarative) debugging (*Algorithmic Program
Debugging*, 1983) finds a buggy computation by asking an oracle, one node at a
time, whether a node's result is correct given its inputs.  Here the nodes are
the steps of the failure's backward slice in the dependency graph
(`DependencyGraph`), the failure step is wrong by definition, and

- a **root** is a step whose output is wrong while every input it consumed is
  right (or has no recorded producer);
- **"correct"** clears the step and every step that reaches the failure only
  through it (a wrong value that passed through a correct output stopped there);
- **"wrong"** moves the search into that step's ancestors: its root lies in
  its own non-cleared backward reach.

The candidates are the steps every wrong-marked step reaches backward without
crossing a correct-marked one: the intersection of those reaches (one root
explains every wrong output; see *noise* below).  The root is *certain* when
the candidates are one wrong-marked step: its inputs are all proven correct,
by answers, never by their absence (`GuidedSearch._backed`: no audit or recheck
of the proof left to ask; a step with no recorded input proven by a person's
"its own fault", the audit's answers, or nothing earlier that could have fed it).

Question order (Silva, *A survey on algorithmic debugging strategies*, 2011):
``prior`` is divide and query weighted by probability mass, as Hat-Delta
weights nodes by earlier evidence: the ranker's suspicion is the prior of each
step being the root, a step is wrong with the probability that the root lies
in its reach, and the next question is the one that leaves the least
probability mass expected: a wrong answer keeps the step's reach, a correct
one removes the steps whose every path to the deepest wrong step runs through
it (its region of the post-dominator tree, Cooper, Harvey & Kennedy 2001);
on a tree this is Shapiro's divide and query (the split nearest half),
and after "wrong input" the questions stay among that step's producers
(`_following`);
``top-down`` asks the inputs of the deepest wrong step, latest first;
``linear`` scans backward from the failure in start order.

Noise.  Answers from models and people are sometimes wrong.  Two wrong-marked
steps whose reaches share no step admit no single root: the search re-asks
the wrong-marked step whose reach holds less prior mass (the cheaper doubt),
once, and when the answer stands it reports the best candidate of each side
in `Guided.conflict`.  With ``recheck=True`` every answer that proves a root
is asked a second time before the root is called certain (split answers are
asked again until one side leads by two, five at most), and a conflict that
stands re-asks the answers that cleared a step both its sides reach.

Implied answers (a correct step vouches for the inputs it relays whole), pass-through containers (a wrong
child stands for them) and resuming over stored answers (each taken as it was asked): `_guided_state.py`,
the search's nodes, answers and candidates, which `GuidedSearch` extends with the questions.

Three-valued answers (Naish 1997; `_verdicts.py`).  An *erroneous* answer (wrong for the inputs it
was given) vouches for the step's inputs, so a leaf is certain in one question and a container's root
is sought among its children; an *inadmissible* one (given a wrong input) is never the root: it lies
upstream, among the steps that may have fed it when every recorded input is cleared (`Verdicts.earlier`),
the containers that called it too, which are then named, never certain (`Verdicts.misled`).  Only a
person's erroneous answer spares a proof the audit; a check's answers are two-valued (`two_valued`).

Trust (`_guided_result.py`, with the result `Guided` and the prior): answers
about the same step from different sources combine by trust, the more trusted
answer overriding.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from trajdebug.analysis._guided_paths import _bits, failure_path, post_dominated
from trajdebug.analysis._guided_result import Guided, Oracle, failure_step, priors, ranked_candidates, trust
from trajdebug.analysis._guided_state import STRATEGIES, GuidedState
from trajdebug.analysis._oracles import Caller, ask
from trajdebug.core.model import ASKED_GROUP, Answer


if TYPE_CHECKING:
    from trajdebug.analysis._pipeline import Analysis


_LEAD = 0.5
"""Share of the candidates' mass above which the prior strategy proves or refutes the leader directly."""
_POOL = 200
"""Questions scored per turn at most on very large slices (the likeliest, a spread, the deepest wrong step's inputs)."""
_DOUBTS = 3
"""Answers re-asked at most, with ``recheck``, when a conflict stands after both its sides were re-asked."""
_GROUP = 10
"""Like steps asked about at once at most (`GuidedSearch.group`): a person reads every output of the group."""


class GuidedSearch(GuidedState):
    """Shapiro's search, one question at a time (see the module docstring).

    Args:
        analysis: The analysis of a failed run (its graph, failure and ranking).
        answers: Answers known beforehand (stored with the run, or from checks).
        strategy: ``prior``, ``top-down`` or ``linear``.
        max_questions: Stop after asking this many (None: until done).
        recheck: Ask each answer that proves a root a second time (noisy oracles).
        audit: Questions, at most, that test a proof against inputs the recording
            may have missed (see `_audit`); 0 trusts the recorded graph.
        once: Never ask a step again once it has an answer (no re-ask of a conflict's sides, no tie-break;
            a tie ends the search, `ties`): for answers that are stored and read back, as a person's are
            (`trajdebug.ask`, ``serve``).  A reader keeps the latest answer per step and answerer, so a step
            asked twice reads back as asked once: a search resumed over them would ask it again, and again
            on every resume.
    """

    # -- questions -------------------------------------------------------------

    def _open(self, cand: int) -> list[int]:
        """Candidates worth asking: not answered yet (unknown answers are not asked again), or disputed."""
        out = []
        for i in _bits(cand):
            votes = self.votes.get(i)
            if self.failure is not None and i == self.index[self.failure]:
                continue
            kid = self.stand_in.get(i)
            if kid is not None and not votes and (kid not in self.votes or self.verdict(kid) is False):
                continue  # a pass-through container: its child is asked first, and stands for it when wrong
            if not votes or (self.verdicts.disputed(i, self.lead) and len(votes) < self.max_asks):
                out.append(i)
        return out

    def next_question(self) -> str | None:
        """The step id to ask about next; None when the search is done.  Free of side effects: asked again
        before an answer, it gives the same step (a recheck or an audit is marked when `answer` records it)."""
        self._marks = self._pending = self.chosen_by = None
        if self.failure is None:
            return None
        if self.max_questions is not None and self.asked >= self.max_questions:
            return None
        self._pending = self._question()
        return self._pending

    def _question(self) -> str | None:
        """`next_question` whatever ``max_questions`` says."""
        cand, focus, wrong, conflict = self._compute()
        if conflict is not None:
            return self._reask_conflict(conflict, wrong)
        # A tie anywhere in the slice is settled first: a step that turns out wrong may
        # contradict the root found so far (better a conflict reported than a false proof).
        # Where no step is asked twice, no question settles it: the search stops and reports it (`ties`).
        if self.ties():
            return None
        disputed = [i for i in self.votes if self.verdicts.disputed(i, self.lead) and len(self.votes[i]) < self.max_asks]
        if disputed:
            return self.ids[max(disputed)]
        if cand == 1 << focus:
            return self._recheck_proof(focus) or self._audit(focus)
        open_ = self._open(cand)
        if not open_:
            return None
        return self.ids[self._choose(open_, cand, focus)]

    def _reask_conflict(self, pair: tuple[int, int], wrong: dict[int, int]) -> str | None:
        # The cheaper doubt: of the two wrong-marked steps whose reaches are
        # disjoint, re-ask the one whose reach holds less prior mass (it is the
        # less likely to hold the root), then the other; never the failure.
        first = self._recheck_first(sorted(pair, key=lambda i: self._mass(wrong.get(i, 1 << i))))
        if first is not None or not self.recheck:
            return first
        # Both sides stand: an answer that cleared a root both could share is wrong (a conflict set, Reiter
        # 1987).  With an oracle known to err, re-ask those, the likeliest roots first, a few at most.
        common = self._ancestors(pair[0]) & self._ancestors(pair[1])
        bad = self.verdicts.inadmissible()
        doubted = [i for i in _bits(common) if i in self.votes and (self.verdict(i) is True or bad >> i & 1)]
        return self._recheck_first(sorted(doubted, key=lambda i: (-self.mass[i], -i))[:_DOUBTS])

    def _recheck_proof(self, focus: int) -> str | None:
        if not self.recheck:
            return None
        # An erroneous answer proves the root by itself: the inputs it vouched for were never asked, and
        # asking them now would only repeat what the answer said (a recheck of it takes them back).
        vouched = self.verdicts.vouched()
        return self._recheck_first([focus, *(p for p in self.parents[focus] if vouched.get(p) != focus)])

    def _recheck_first(self, order: Iterable[int]) -> str | None:
        """The first step of ``order`` that may be asked again (never the failure; each at most once, and never
        past `max_asks` answers), marked rechecked when answered (`answer`); or the first never asked (an input
        only vouched for), asked as a first question and not marked: asking it is not yet a recheck, and its
        answer, which may prove it, is rechecked in turn like any other."""
        for i in order:
            while i in self.stand_in and (i not in self.votes or i in self.stood):
                i = self.stand_in[i]  # a container the child stands for: recheck the child
            if self.failure is not None and i == self.index[self.failure]:
                continue
            if i not in self.votes:
                return self.ids[i]
            if i not in self.rechecked and len(self.votes[i]) < self.max_asks:
                self._marks = (i, None)
                return self.ids[i]
        return None

    def auditable(self, i: int) -> bool:
        """True when step ``i`` may be asked in an audit: a leaf (a container's output is its children's)."""
        return self.ids[i] not in self._containers

    def _audit(self, focus: int) -> str | None:
        """Test a proof against the recording's gaps: ask the likeliest earlier step outside the root's reach.

        The proof holds over the recorded graph; a step the recording did not
        tie to the root (state read behind the recorder's back, a value copied
        by hand, a framework that records no inputs) may be its real input.  A
        wrong answer ties the step to the root (`_take`) and the search goes on
        from it; ``audit`` bounds the questions this costs.  Only a root whose
        inputs were inferred from content, or not recorded at all, is audited:
        where the recorder traced or the agent declared the inputs, the proof
        stands as it is (on the fault-injection suite, auditing every proof
        doubled the median questions, 2 to 4, to find 2 roots more in 99; on
        suite F, half the runs come from frameworks whose inputs are inferred).
        The budget is per proof: a wrong answer moves the proof to the step it
        found, which has earlier steps of its own the recording may not have
        tied to it (a budget for the whole search, spent on the first proof,
        left the second unprovable with nothing left to ask).
        """
        if len(self._audits(focus)) >= self.audit or not self.weak(focus) or self.verdicts.by_person(focus):
            return None  # a person vouched for every input the step was given, recorded or not
        pool = self._audit_pool(focus)
        if not pool:
            return None
        pick = max(pool, key=lambda i: (self.mass[i], i))
        self._marks = (pick, focus)
        return self.ids[pick]

    def _audits(self, focus: int) -> list[int]:
        """The steps answered in an audit of the proof of ``focus`` (`audited`), in the order asked."""
        return [k for k, f in self.audited.items() if f == focus]

    def _audit_pool(self, focus: int) -> list[int]:
        """The steps an audit of ``focus`` may ask: the earlier leaves that may have fed it (`_feeders`), not answered."""
        return [i for i in self._feeders(focus) if i not in self.votes]

    def _feeders(self, focus: int) -> list[int]:
        """The earlier leaves no recorded path joins to ``focus``: they may have fed it unrecorded.  Its ancestors
        were tied to it by the recording (a correct input cleared them already); only the steps no recorded path
        joins to it are in doubt."""
        reach = self._ancestors(focus)
        start = self.graph.steps[self.ids[focus]].start_ns
        return [
            i
            for i in range(focus)
            if not reach >> i & 1 and self.graph.steps[self.ids[i]].start_ns <= start and self.auditable(i)
        ]

    def weak(self, i: int) -> bool:
        """True when no input of step ``i`` was traced or declared (only inferred, or none recorded)."""
        return not any(d.origin in ("tracked", "declared") for d in self.graph.parents(self.ids[i]))

    def _ancestors(self, i: int) -> int:
        """Step ``i`` and everything it reaches backward in the search's graph, answers aside, as a bit set."""
        bits, todo = 1 << i, [i]
        while todo:
            for p in self.parents[todo.pop()]:
                if not bits >> p & 1:
                    bits |= 1 << p
                    todo.append(p)
        return bits

    def _choose(self, open_: list[int], cand: int, focus: int) -> int:
        if self.strategy == "linear":
            return max(open_)  # the latest-started step: a backward scan from the failure
        inputs = [p for p in self.parents[focus] if p in set(open_)]
        if self.strategy == "top-down":
            return max(inputs) if inputs else max(open_)
        reach = self._reaches()
        total = self._mass(cand) or 1.0
        lead = self._leader(cand, total, set(open_), reach)
        # After "wrong input" the next questions are about that step's producers (`_following`), unless one
        # candidate holds most of the mass: that one is asked directly, as anywhere.
        follow = [] if lead is not None else self._following(open_)
        if follow:
            open_ = follow
            lead = self._leader(cand, total, set(open_), reach)
        self.chosen_by = "gain" if lead is None else "likeliest"
        if lead is not None:
            return lead
        if len(open_) > _POOL:
            # The likeliest steps, and steps spread evenly in topological order (a
            # flat prior ranks none: the split points must still cover the slice).
            likely = sorted(open_, key=lambda i: -self.mass[i])[: _POOL // 2]
            spread = open_[:: max(1, len(open_) // (_POOL // 2))]
            open_ = sorted(set(likely) | set(spread) | set(inputs))
        cleared = post_dominated(self.kids, self.mass, _bits(cand), focus)
        best, key = open_[-1], (math.inf, 0.0, 0)
        for i in open_:
            wrong = self._mass(reach[i] & cand)
            p = min(1.0, wrong / total)
            # Expected mass left: a wrong answer keeps the step's reach, a correct one
            # removes what reaches the focus only through the step (its post-dominated
            # region; without the dominator tree, the step alone).
            left = p * wrong + (1 - p) * (total - cleared.get(i, self.mass[i]))
            k = (round(left, 12), -self.mass[i], -i)
            if k < key:
                best, key = i, k
        return best

    def _leader(self, cand: int, total: float, open_: set[int], reach: list[int]) -> int | None:
        """Hat-Delta's shortcut: when one candidate holds most of the mass, prove or refute it directly.

        Ask the candidate itself, then its open inputs, the likeliest wrong first
        (a wrong input moves the search; correct ones complete the proof).
        """
        best = max(_bits(cand), key=lambda i: (self.mass[i], i), default=None)
        if best is None or self.mass[best] < _LEAD * total:
            return None
        if best in open_:
            return best
        inputs = [p for p in self.parents[best] if p in open_]
        if not inputs:
            return None
        return max(inputs, key=lambda p: (self._mass(reach[p] & cand), p))

    def _following(self, open_: list[int]) -> list[int]:
        """The open producers of the step last answered "wrong input" (inadmissible) while none of them stands
        wrong: the answer says one of them is, so they are asked next, the likeliest first as any question is
        chosen (the leader, else the least mass expected left), and like ones as a group (`group`).  Asked
        elsewhere, the question leaves the person's "wrong input" unfollowed (a new user answered it on
        send_invites and was asked four policy steps and a get_calendar off its chain).  Empty when no such
        step is left (every producer answered: a wrong one is the search's new focus; all right, the input
        came unrecorded, `Verdicts.earlier`), and when one is left open (see below).

        Why this is sound (Shapiro, *Algorithmic Program Debugging*, 1983: a procedure given an inadmissible
        input is not itself at fault; the fault lies among the procedures that produced the input, so a
        producer is the likeliest question to find a wrong step).  Only which step is asked next changes:
        what each answer implies (the candidates, the reaches, the prior's mass) is as before, so the root
        the answers prove is the same, and the mass each producer leaves still picks among them."""
        bad = self.verdicts.inadmissible()
        if not bad:
            return []
        last = next((self.index[a.step_id] for a in reversed(self.log) if a.correct is False and a.step_id in self.index
                     and bad >> self.index[a.step_id] & 1), None)
        if last is None or any(self.verdict(p) is False for p in self.parents[last]):
            return []
        mine = set(self.parents[last])
        out = [i for i in open_ if i in mine]
        # One open producer left is wrong by that answer alone (unless fed unrecorded): asking it would tell
        # the search nothing it weighs, so the question is chosen as anywhere (a chain is bisected, not walked).
        return out if len(out) > 1 else []

    # -- questions about a group of like steps -------------------------------------

    def group(self, sid: str) -> list[str]:
        """The like steps to ask about with ``sid`` at once ("are all their outputs right?"), ``sid`` first; just
        ``[sid]`` when the group is not expected to cost fewer questions than its steps asked one by one.

        Like steps: the open candidates of ``sid``'s name and kind (seven calls of one lookup tool).  One
        answer "all right" clears them all; anything else leaves each to be asked on its own.  The greedy
        score of single questions (`_choose`) never picks a group: a wrong answer about a group keeps the
        union of its reaches.  But like steps that are each asked in turn cost a question apiece, so the group
        is asked when it is expected to cost fewer questions (group testing, Dorfman, *Ann. Math. Statist.*
        14, 1943: 1 + n·P(not all right) < n, P from the prior mass of the members' reaches).  Only
        for a plain question of the ``prior`` strategy (an audit or a recheck asks about one step)."""
        i = self.index.get(sid)
        if i is None or self.strategy != "prior" or sid != self._pending or self._marks is not None:
            return [sid]
        cand, _, _, conflict = self._compute()
        if conflict is not None or not cand >> i & 1:
            return [sid]
        me = self.graph.steps[sid]
        if me.name in self.grouped:
            return [sid]  # asked once per name: its "not all" was stored (`not_all`), and read back by a resumed search
        alike = [j for j in range(len(self.ids)) if j != i and self._like(j, me.name, me.kind)]
        # And none once a like step holds a person's answer (one asked on its own after "not all" before that
        # answer was stored as a record, or by another session).
        if any(a.by.split(":", 1)[0] == "person" for j in (i, *alike) for a in self.votes.get(j, ())):
            return [sid]
        like = [j for j in self._open(cand) if j in set(alike) and j not in self.votes]
        if not like:
            return [sid]
        members = [i, *sorted(like, key=lambda j: (-self.mass[j], j))[: _GROUP - 1]]
        reach, total = self._reaches(), self._mass(cand) or 1.0
        union = 0
        for j in members:
            union |= reach[j] & cand
        # Dorfman's rule: n like steps cost n questions one by one; asked as a group, one, and n more when the
        # answer is "not all right", which it is with the mass of the members' reaches (one root).
        q = min(1.0, self._mass(union) / total)
        if 1 + len(members) * q >= len(members):
            return [sid]
        return [self.ids[j] for j in members]

    def _like(self, j: int, name: str, kind: str) -> bool:
        step = self.graph.steps[self.ids[j]]
        return step.name == name and step.kind == kind

    def answer_group(self, answers: Sequence[Answer]) -> None:
        """Record the answers a person gave to one question about a group of like steps (`group`): each step's
        answer is recorded (and stored by the caller) as its own, and the group counts as one question."""
        for a in answers:
            self.answer(a)
        self.asked -= max(0, len(answers) - 1)

    def not_all(self, group: Sequence[str], at_ns: int, by: str = "person", *, unsure: bool = False) -> Answer:
        """Record that a group (`group`, its first step the one asked) was answered "not all right" (or, with
        ``unsure``, "don't know"): one question, which judges no step; its first step is asked on its own next,
        and no group of its name is offered again.  Returns the record to store
        (`trajdebug.core.model.ASKED_GROUP`): a search resumed over it asks what this one asks next, and numbers
        the questions alike."""
        sid = group[0]
        name = self.graph.steps[sid].name
        ids = ", ".join(f"#{g[-6:]}" for g in group)
        said = "don't know" if unsure else "not all right"
        why = f"asked in one question about all {len(group)} {name} steps ({ids}): {said}"
        a = Answer(sid, None, by, at_ns, why, asked=ASKED_GROUP)
        self.answer(a)
        return a

    # -- the result ------------------------------------------------------------

    def done(self) -> bool:
        """True when no question is left to ask."""
        return self.next_question() is None

    def result(self) -> Guided:
        """The root (certain or likeliest), the answers, the remaining candidates and the path."""
        names = {s: self.graph.steps[s].name for s in self.ids}
        if self.failure is None:
            return Guided(None, False, tuple(self.log), (), (), asked=self.asked, problems=tuple(self.problems))
        cand, focus, wrong, conflict = self._compute()
        if conflict is not None:
            # A side with no candidate (an inadmissible step nothing earlier could have fed) is the step itself.
            sides = [self._best((cand if i == focus else wrong.get(i, 0)) or 1 << i) for i in conflict]
            both = cand | wrong.get(conflict[1], 0)
            ranked = self._ranked(both)
            # The answers implied so far hold in a conflict too (the report's page shows them as well).
            implied = (*self.implied, *self.verdicts.vouching(lambda i: names[self.ids[i]], self.ids.__getitem__))
            return Guided(None, False, tuple(self.log), ranked, (), tuple(self.ids[i] for i in sides), self.failure,
                          self.asked, tuple(self.problems), tuple(names.items()), implied=implied,
                          clashing=self._clashing(conflict, wrong))
        ties = self.ties()
        # A tie no question may settle (``once``) proves nothing: one of its answers may be the wrong one.
        alone = cand == 1 << focus and self.verdicts.proven(focus) and not ties
        certain = alone and self._backed(focus)
        # Unproven with nothing left to ask (no recorded input, no audit answered right): said, with what would prove it.
        unproven = alone and not certain and not self._proof_pending(focus)
        ranked = self._ranked(cand)
        root = self.ids[focus] if certain else (ranked[0][0] if ranked else None)
        # A likeliest container is named with the children it handed a wrong input (never certain, `Verdicts.misled`).
        misled = () if certain or root is None else tuple(self.ids[p] for p in self.verdicts.misled(self.index[root]))
        path = () if root is None or self.failure is None else failure_path(
            self.analysis, self.ids, self.kids, self.verdict, root, self.failure
        )
        # The path may pass through steps that were never candidates (a turn enclosing the call): named too,
        # or the rendering falls back on their ids.
        names.update((s, self.graph.steps[s].name) for s in path if s not in names and s in self.graph.steps)
        return Guided(
            root, certain, tuple(self.log), ranked, path, (), self.failure, self.asked, tuple(self.problems),
            tuple(names.items()), tuple(self.ids[i] for i in self.audited),
            (*self.implied, *self.verdicts.vouching(lambda i: names[self.ids[i]], self.ids.__getitem__)), misled,
            tuple(self.ids[i] for i in ties),
            tuple(self.ids[k] for k in self._audits(focus) if self.verdict(k) is None) if unproven else None,
        )

    def _backed(self, focus: int) -> bool:
        """True when answers, not the lack of them, prove the step ``focus`` (wrong, every recorded input right).

        A proof still to be tested is none yet: while a recheck or an audit of it is left to ask (the person
        stopped, ``max_questions`` ran out), a root is the likeliest, never certain.  And "every input it
        consumed is correct" says nothing of a step with no recorded or inferred input (a tool handed a list
        built from state the recorder never saw): it is proven by a person's answer that it was wrong for what
        it was given (they judged its inputs, recorded or not), by the audit's answers (`_audit`: the
        likeliest earlier steps that may have fed it, asked and standing correct; a wrong one would have
        become its input), or when no earlier step could have fed it.  Before this, a failing step with no
        recorded producer was certain with no answer at all: its audit was still to ask."""
        if self._proof_pending(focus):
            return False
        if self.parents[focus] or self.verdicts.by_person(focus):
            return True
        # An audit answered "don't know" (or taken back) cleared nothing: only one standing correct is an answer.
        if any(self.verdict(k) is True for k in self._audits(focus)):
            return True
        # Nothing earlier fed it only when every earlier leaf stands correct: one never asked, or answered don't
        # know or wrong, may have.
        if any(self.verdict(i) is not True for i in self._feeders(focus)):
            return False
        # With no audit the steps outside the slice are no nodes; any leaf that ran before it may have fed it.
        start = self.graph.steps[self.ids[focus]].start_ns
        return not any(
            sid not in self.index and sid not in self._containers and s.start_ns <= start
            for sid, s in self.graph.steps.items()
        )

    def _proof_pending(self, focus: int) -> bool:
        """True when the search would still ask a question to test the proof of ``focus`` (a recheck, an
        audit); the pending question's marks are kept as they were (`result` asks nothing)."""
        marks = self._marks
        try:
            return (self._recheck_proof(focus) or self._audit(focus)) is not None
        finally:
            self._marks = marks

    def _clashing(self, pair: tuple[int, int], wrong: dict[int, int]) -> tuple[str, ...]:
        """The steps whose answers make a conflict, each that holds an answer (the failure is wrong without one):
        its two wrong-marked steps (a container standing wrong for its child: the child); of a side whose reach
        holds no possible root, the answered steps of that reach (inadmissible all: given a wrong input that
        nothing recorded before could have fed)."""
        out: list[int] = []
        reach: list[int] | None = None
        for i in pair:
            if i != self.index.get(self.failure or "") and not wrong.get(i, 0):
                reach = reach or self._reaches()
                out.extend(j for j in _bits(reach[i] or 1 << i) if j in self.votes)
                continue
            while i in self.stood:
                i = self.stand_in[i]
            out.append(i)
        return tuple(dict.fromkeys(self.ids[i] for i in out if i in self.votes))

    def _best(self, bits: int) -> int:
        ranked = self._ranked(bits)
        return self.index[ranked[0][0]] if ranked else -1

    def _ranked(self, cand: int) -> tuple[tuple[str, float], ...]:
        return ranked_candidates(_bits(cand), self.mass, self.parents, self.verdict, self.ids)


def guided_search(
    analysis: Analysis,
    oracle: Oracle | Sequence[Oracle],
    *,
    answers: Sequence[Answer] = (),
    strategy: str = "prior",
    max_questions: int | None = None,
    timeout: float | None = 10.0,
    recheck: bool = False,
    audit: int | None = None,
) -> Guided:
    """Run the guided search to its end with these oracles (see `GuidedSearch`).

    Several oracles are asked in order of trust (person, check, passing run,
    model); an oracle that raises, hangs past ``timeout`` seconds or returns
    anything but True, False, None or an `Answer` counts as don't know and is
    named in `Guided.problems`.

    With an ``interactive`` oracle (a person) no step is asked twice (`GuidedSearch` ``once``), so ``recheck``
    asks nothing again; `Guided.problems` says so.
    """
    oracles = list(oracle) if isinstance(oracle, Sequence) else [oracle]
    callers = sorted((Caller(o, timeout) for o in oracles), key=lambda c: -trust(c.by))
    # A person's answers are stored as given and read back as the latest per step (`GuidedSearch` ``once``).
    once = any(getattr(o, "interactive", False) for o in oracles)
    search = GuidedSearch(
        analysis, answers, strategy=strategy, max_questions=max_questions, recheck=recheck, audit=audit, once=once
    )
    if recheck and once:
        search.problems.append("recheck: an interactive oracle is never asked a step twice, so no answer was rechecked")
    run = analysis.run
    while (sid := search.next_question()) is not None:
        for o in oracles:
            if hasattr(o, "asked_as"):
                # An oracle that stores its answers as given (`trajdebug.ask.TerminalOracle`) stores this too.
                setattr(o, "asked_as", search.asked_as())  # noqa: B010 - not an attribute of the Oracle protocol
        search.answer(ask(callers, search.graph.steps[sid], run, search.problems))
    return search.result()


__all__ = ["STRATEGIES", "Guided", "GuidedSearch", "Oracle", "failure_step", "guided_search", "priors", "trust"]
