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
from collections.abc import Callable, Sequence

from trajdebug.analysis._guided_result import trust
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
        enclosing: ``enclosing(p)``: the nodes enclosing node ``p`` (its parent, its parent's parent...).
        starts: Each node's start time (ns).
        ends: Each node's end time (ns; its start when it recorded none).
    """

    def __init__(
        self,
        parents: Sequence[Sequence[int]],
        failure: int | None,
        enclosing: Callable[[int], Sequence[int]],
        starts: Sequence[int],
        ends: Sequence[int] | None = None,
    ) -> None:
        self.parents = parents
        self.failure = failure
        self._around = enclosing
        self._starts = starts
        self._ends = starts if ends is None else ends
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
        """The nodes that may have fed node ``i`` unrecorded, as a bit set: not answered correct, in time
        (`fed_in_time`), and not fed by ``i`` (its consumers, the failure among them, ran on its output: with
        a coarse clock or none they share its start, but cannot have handed it its input), except the nodes
        enclosing it: a container consumes its children's answers only after it called them, and before
        that it may have written what they read (shared state, a sub-agent's memory, the arguments it
        computed).  An inadmissible node whose recorded inputs are all cleared was given a wrong input the
        recording missed (state read behind the recorder's back, a value copied by hand): its root lies
        among these, or outside what was recorded (so a container found this way is never certain, `misled`)."""
        start, end = self._starts[i], self._ends[i]
        after = self._downstream(i) & ~self._enclosing(i)
        bits = 0
        for j, at in enumerate(self._starts):
            if not after >> j & 1 and fed_in_time(at, start, end) and self.verdict(j) is not True:
                bits |= 1 << j
        return bits

    def _enclosing(self, i: int) -> int:
        """Every node enclosing node ``i``, as a bit set (0 when the failure encloses it: the failure is wrong
        by definition: a child of the failure is never the container's doing).  Each consumed ``i``'s output,
        and each may still have fed it (`earlier`)."""
        around = [j for j in self._around(i) if j != i]
        if self.failure in around:
            return 0
        return sum(1 << j for j in around)

    def _encloses(self, j: int, p: int) -> bool:
        """True when node ``j`` encloses node ``p``."""
        return j in self._around(p)

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
        """True when node ``i`` stands wrong and every input of it stands correct (answered, or vouched)."""
        return self.verdict(i) is False and all(self.verdict(p) is True for p in self.parents[i])

    def misled(self, i: int) -> list[int]:
        """The children of container ``i`` (never the failure) among its inputs that stand inadmissible.

        A container hands its children their inputs, so a child given a wrong input points at the container
        that called it (`earlier`), and the search may end on the container, likeliest.  Never certain: the
        child's input is proven wrong, not that the container wrote it, since the recording cannot show that
        nothing else fed the child (a lost parent span, a consumer already running when the child read, a
        process never recorded, a run with no clock), and each closed gap left another open: no recording
        proves the set of feeders complete.  `GuidedSearch.result` names these children with the root."""
        if i == self.failure:
            return []
        bad = self.inadmissible()
        return [p for p in self.parents[i] if bad >> p & 1 and self._encloses(i, p)]

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
    """True when a step that started at ``at`` may have fed one that ran from ``start`` to ``end``: it started
    before that one ended (a step reads while it runs, never after; a concurrent writer that started after it
    did and wrote before it read counts), or, with a coarse clock or none, by its start."""
    return at <= start or at < end


__all__ = ["Verdicts", "fed_in_time", "until"]
