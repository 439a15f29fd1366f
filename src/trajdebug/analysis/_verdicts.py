"""The guided search's standing answers: which verdict stands for each step, and what a three-valued answer
implies about the step's inputs.

Answers about the same step combine by trust (`_guided_result.trust`): the most trusted source's majority
stands, a tie is unknown (and re-asked).  A wrong answer may also say whether the step's inputs were right
(`Answer.admissible`, Naish's three-valued answers, *A Declarative Debugging Scheme*, 1997):

- **erroneous** (True): wrong for the inputs it was given.  Every input it consumed is *vouched* correct
  without a question, except the steps it encloses: a container's fault may be one of its children's, so
  they stay suspects.  A vouched input counts only while the erroneous answer stands (a recheck that
  overturns it takes the vouching back) and never overrides an answer about the input itself.
- **inadmissible** (False): it was given a wrong input, so it is wrong but never the root.

A check's answer is two-valued whatever it carries (`two_valued`): a check run on a step's output and
recorded input can say the output does not fit that input, not that the input was right (a precondition
broken upstream fails every postcondition), nor anything of an input the recording missed.

`GuidedSearch` (`_guided.py`) holds one `Verdicts` and asks it; this module keeps no graph of its own beyond
each node's inputs and which steps enclose which.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence

from trajdebug.analysis._guided_result import trust
from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Answer, Step


def two_valued(a: Answer) -> Answer:
    """The answer as the search may read it: a check's (``check:...``) says right or wrong, never which
    inputs were right (see the module docstring), even when stored by a version that let it."""
    if a.admissible is not None and a.by.split(":", 1)[0] == "check":
        return dataclasses.replace(a, admissible=None)
    return a


class Verdicts:
    """The answers given about the search's nodes (by index) and the verdicts they leave.

    Args:
        parents: Each node's inputs (node indices); shared with the search, which may add to it.
        failure: The failing node (wrong by definition), or None.
        encloses: ``encloses(j, p)``: node ``j`` encloses node ``p`` (a parent, or a parent's parent).
        starts: Each node's start time (ns).
        unseen: The nodes a step that is no node may have fed (`unseen`), as a bit set.
        ends: Each node's end time (ns; its start when it recorded none).
    """

    def __init__(
        self,
        parents: Sequence[Sequence[int]],
        failure: int | None,
        encloses: Callable[[int, int], bool],
        starts: Sequence[int],
        unseen: int = 0,
        ends: Sequence[int] | None = None,
    ) -> None:
        self.parents = parents
        self.failure = failure
        self._encloses = encloses
        self._starts = starts
        self._ends = starts if ends is None else ends
        self.unseen = unseen
        self.votes: dict[int, list[Answer]] = {}
        self._vouched: dict[int, int] | None = None

    def add(self, i: int, a: Answer) -> None:
        """Count one more answer about node ``i``."""
        self.votes.setdefault(i, []).append(a)
        self._vouched = None

    def replace(self, i: int, a: Answer) -> None:
        """Make ``a`` the only answer about node ``i`` (an implied answer about an unanswered input)."""
        self.votes[i] = [a]
        self._vouched = None

    def top(self, i: int) -> list[Answer]:
        """The answers about node ``i`` that know, from its most trusted source."""
        votes = [a for a in self.votes.get(i, ()) if a.correct is not None]
        if not votes:
            return []
        best = max(trust(a.by) for a in votes)
        return [a for a in votes if trust(a.by) == best]

    def verdict(self, i: int) -> bool | None:
        """The answer that stands for node ``i``: the most trusted source's majority (a tie: unknown); a
        node nobody answered is correct when an erroneous answer about a node that consumed it stands."""
        if i == self.failure:
            return False  # the failure is wrong by definition
        said = self.top(i)
        if not said:
            return True if i in self.vouched() else None
        yes = sum(1 for a in said if a.correct)
        no = len(said) - yes
        return None if yes == no else yes > no

    def disputed(self, i: int, lead: int = 1) -> bool:
        """True when node ``i``'s most trusted answers disagree and neither side leads by ``lead`` (1: split
        evenly)."""
        said = self.top(i)
        yes = sum(1 for a in said if a.correct)
        no = len(said) - yes
        return yes > 0 and no > 0 and abs(yes - no) < lead

    def _wrong(self, i: int) -> list[Answer]:
        """The most trusted answers that call node ``i`` wrong, when they stand (the failure's always do)."""
        said = self.top(i)
        no = [a for a in said if a.correct is False]
        return no if i == self.failure or len(no) * 2 > len(said) else []

    def admissible(self, i: int) -> bool | None:
        """Of a node whose own answers stand wrong, what they say of its inputs: True (erroneous), False
        (inadmissible), None (not said, said both ways as often, or the node does not stand wrong)."""
        no = self._wrong(i)
        ok = sum(1 for a in no if a.admissible is True)
        bad = sum(1 for a in no if a.admissible is False)
        return None if ok == bad else ok > bad

    def by_person(self, i: int) -> bool:
        """True when node ``i`` stands erroneous on a person's word: a person may have read the code behind
        the step and judged inputs the recording missed; any other oracle judged what was recorded."""
        return self.admissible(i) is True and any(
            a.admissible and a.by.split(":", 1)[0] == "person" for a in self._wrong(i)
        )

    def vouched(self) -> dict[int, int]:
        """Inputs vouched correct -> the node whose standing erroneous answer vouched for them."""
        if self._vouched is None:
            out: dict[int, int] = {}
            for i in self.votes:
                if self.admissible(i) is not True:
                    continue
                for p in self.parents[i]:
                    if p not in out and not self._encloses(i, p):
                        out[p] = i
            self._vouched = out
        return self._vouched

    def inadmissible(self) -> int:
        """The nodes whose standing answer is inadmissible (wrong for a wrong input), as a bit set."""
        bits = 0
        for i in self.votes:
            if self.admissible(i) is False and self.verdict(i) is False:
                bits |= 1 << i
        return bits

    def earlier(self, i: int) -> int:
        """The nodes that may have fed node ``i`` unrecorded, as a bit set: its `feeders` the answers have not
        cleared.  An inadmissible node whose recorded inputs are all cleared was given a wrong input the
        recording missed (state read behind the recorder's back, a value copied by hand, a container's
        shared state): its root lies among these."""
        end = self._ends[i]
        after = self._downstream(i) & ~self._enclosing(i)
        bits = 0
        for j, at in enumerate(self._starts):
            if not after >> j & 1 and fed_in_time(at, self._starts[i], end) and self.verdict(j) is not True:
                bits |= 1 << j
        return bits

    def _enclosing(self, i: int) -> int:
        """Every node enclosing node ``i``, as a bit set (0 when the failure encloses it: the failure is wrong
        by definition, no answer of its own could clear it, so no proof through ``i`` may stand).  Each
        consumed ``i``'s output, and each may still have fed it (`feeders`)."""
        around = [j for j in range(len(self._starts)) if j != i and self._encloses(j, i)]
        if self.failure in around:
            return 0
        return sum(1 << j for j in around)

    def _downstream(self, i: int) -> int:
        """Node ``i`` and every node that consumed its output, directly or not, as a bit set."""
        kids: dict[int, list[int]] = {}
        for j, ps in enumerate(self.parents):
            for p in ps:
                kids.setdefault(p, []).append(j)
        bits, todo = 1 << i, [i]
        while todo:
            for k in kids.get(todo.pop(), ()):
                if not bits >> k & 1:
                    bits |= 1 << k
                    todo.append(k)
        return bits

    def proven(self, i: int) -> bool:
        """True when node ``i`` stands wrong and every input of it stands correct (answered, or vouched),
        or is a child of it confirmed inadmissible (`misled`)."""
        if self.verdict(i) is not False:
            return False
        ok = self.misled(i, confirmed=True)
        return all(self.verdict(p) is True or p in ok for p in self.parents[i])

    def misled(self, i: int, *, confirmed: bool) -> list[int]:
        """The children of container ``i`` (never the failure) that stand inadmissible, on two answers or more
        when ``confirmed``, on one alone when not.

        A container hands its children their inputs, so a child given a wrong input is its container's doing
        when the rest of what the child may have read was cleared (`earlier`, the invariant at `fed_in_time`):
        the child's wrong answer, which the container consumed, is no other root.  That holds only when the
        search could clear all of it: a child some step that is no node may have fed (`unseen`: a container
        outside the slice, the agent around the container, any step outside it without the audit) is no
        proof, and the container stays the likeliest root, not a certain one; an uncleared node among its
        feeders (a container around this one included) stays a candidate beside it.  A proof that rests on
        the child rests on an answer that, misheard, would move the root into the container (the one-answer
        slip of a noisy oracle): it counts once asked again and given again, as a conflict's doubt is asked
        again (`GuidedSearch._reask_conflict`)."""
        if i == self.failure or self.verdict(i) is not False:
            return []
        bad = self.inadmissible() & ~self.unseen
        out = []
        for p in self.parents[i]:
            if bad >> p & 1 and self._encloses(i, p):
                n = sum(1 for a in self._wrong(p) if a.admissible is False)
                if (n >= 2) == confirmed:
                    out.append(p)
        return out

    def tally(self, i: int) -> list[int]:
        """Node ``i``'s answers as counts, for a port that keeps counts, not answers (the report page's
        search.js): [answers given, the most trusted source's trust, and of its answers that know: correct,
        wrong erroneous, wrong inadmissible, wrong not saying which, erroneous on a person's word]."""
        said = self.top(i)
        no = [a for a in said if a.correct is False]
        return [
            len(self.votes.get(i, ())),
            max((trust(a.by) for a in said), default=0),
            len(said) - len(no),
            sum(1 for a in no if a.admissible is True),
            sum(1 for a in no if a.admissible is False),
            sum(1 for a in no if a.admissible is None),
            sum(1 for a in no if a.admissible is True and a.by.split(":", 1)[0] == "person"),
        ]

    def vouching(self, name: Callable[[int], str], node_id: Callable[[int], str]) -> list[Answer]:
        """The inputs vouched correct (and answered nothing themselves), as answers that say who vouched."""
        out = []
        for p, i in sorted(self.vouched().items()):
            if self.top(p):
                continue
            said = next(a for a in reversed(self._wrong(i)) if a.admissible)
            why = f"implied: {name(i)} was answered wrong for the inputs it was given"
            out.append(Answer(node_id(p), True, said.by, said.at_ns, why, said.run_id))
        return out


def until(step: Step) -> int:
    """The end of the window in which a step may have been fed: its end, or its start when it recorded none."""
    return step.start_ns if step.end_ns is None else step.end_ns


def fed_in_time(at: int, start: int, end: int) -> bool:
    """True when a step that started at ``at`` may have fed one that ran from ``start`` to ``end``.

    Feeders (the invariant `Verdicts.misled` rests on).  A step may have handed node ``p`` a value the
    recording missed when it started before ``p`` ended (``p`` reads while it runs, never after; a concurrent
    writer that started after ``p`` did and wrote before ``p`` read counts; with a coarse clock or none, by
    ``p``'s start) and either did not consume ``p``'s output (a consumer waits for it, so cannot have handed
    ``p`` its input) or *encloses* ``p``: a container consumes its children's answers only after it called
    them, and before that it may have written what they read (shared state, a sub-agent's memory, the
    arguments it computed), whichever container it is, the nearest or one around it.  Hollow containers (no
    output of their own) are no feeders: their children stand in for them, as everywhere in the search.

    A container ``c`` is the certain root through a child ``p`` answered inadmissible (Naish 1997: ``p`` was
    handed a wrong input) only when every feeder of ``p`` but ``c`` is a node the answers cleared
    (`Verdicts.earlier` then holds ``c`` alone) and none is a step the search never asks (`unseen`): only
    then is ``c`` wrong with every input it could have passed on accounted for, Shapiro's bug (1983)."""
    return at <= start or at < end


def unseen(graph: DependencyGraph, ids: Sequence[str], skip: Collection[str]) -> int:
    """The nodes (indices into ``ids``) that a step of the run the search never asks about may have fed
    unrecorded (`fed_in_time`: a feeder), as a bit set; steps in ``skip`` (the hollow containers) aside.

    `Verdicts.earlier` sees only nodes: a node among them the answers have not cleared is a candidate (or,
    inadmissible, its own source is); a step that is no node is neither, so an answer can never clear it.  A
    child whose wrong input such a step may have written (shared state, a planner outside the slice, the
    agent around its container, which consumed the failure and is no node) proves nothing of the container
    that called it (`Verdicts.misled`)."""
    nodes = set(ids)
    topo = {s: k for k, s in enumerate(graph.topological_order())}
    others = sorted((s.start_ns, topo[sid], sid) for sid, s in graph.steps.items() if sid not in nodes and sid not in skip)
    consumed: dict[str, set[str]] = {}  # a step -> what it consumed, directly or not: once per step, not per node
    bits = 0
    for i, sid in enumerate(ids):
        step = graph.steps[sid]
        start, end, at = step.start_ns, until(step), topo[sid]
        around: set[str] = set()
        up = step.parent_id
        while up is not None and up in graph.steps and up not in around:
            around.add(up)
            up = graph.steps[up].parent_id
        later: list[str] = []
        for t, k, u in others:
            if not fed_in_time(t, start, end):
                break  # sorted by start: none after it is in time either
            if k < at or u in around:  # before the node in a topological order, or enclosing it: a feeder
                bits |= 1 << i
                break
            later.append(u)
        for u in later:
            if bits >> i & 1:
                break
            if u not in consumed:
                consumed[u] = graph.backward_slice([u])
            if sid not in consumed[u]:  # it did not consume the node's output: it may have fed it
                bits |= 1 << i
    return bits


__all__ = ["Verdicts", "fed_in_time", "unseen", "until"]
