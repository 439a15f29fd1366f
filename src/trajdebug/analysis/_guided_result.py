"""The guided search's terms: its result (`Guided`), the oracle it asks, how far each answer's source is
trusted, the step it starts from and the prior each slice step starts with.

`GuidedSearch` (`_guided.py`) asks the questions; this module holds what it is given and what it hands
back, so the result and the ranker's prior read on their own.

Trust.  Answers about the same step from different sources combine by trust:
a person's over a check's (and a function oracle's), over a passing run's,
over a model's; the more trusted answer overrides.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from trajdebug.core.graph import DependencyGraph
from trajdebug.core.model import Answer, Run, Step


if TYPE_CHECKING:
    from trajdebug.analysis._localize import Candidate, Localization
    from trajdebug.analysis._pipeline import Analysis


_TRUST = {"person": 5, "check": 4, "oracle": 4, "reference": 3, "model": 2}
_FLOOR = 0.02
"""Prior share of a slice step the ranker did not rank, relative to the mean (the Hat-Delta floor)."""
_DECAY = 0.5
"""Weight kept per rank down the ranking (Hat-Delta-style prior from the ranker's order)."""


def trust(by: str) -> int:
    """How much an answer's source is trusted (person 5, check and function oracle 4, reference 3, model 2)."""
    return _TRUST.get(by.split(":", 1)[0], 1)


class Oracle(Protocol):
    """Answers one question: is this step's output correct, given its inputs?

    Returns True (correct), False (wrong) or None (don't know).  An oracle may
    also return an `Answer` (to give a reason, or to say with ``admissible``
    whether a wrong step's inputs were right), and may carry a ``by``
    attribute naming it (``check:...``, ``model:...``); an ``interactive``
    attribute set true runs it on the calling thread without a timeout.
    """

    def __call__(self, step: Step, run: Run) -> bool | None: ...


@dataclass(frozen=True, slots=True)
class Guided:
    """What the guided search found: the root, the answers that prove it, what is left."""

    root: str | None
    """The root's step id (the likeliest candidate when not certain; None on a conflict or no failure)."""
    certain: bool
    """True when the answers prove it: wrong, and every input it consumed answered correct."""
    questions: tuple[Answer, ...]
    """The answers used, in the order given or asked."""
    candidates: tuple[tuple[str, float], ...]
    """The remaining suspects with their probability of being the root, best first."""
    path: tuple[str, ...]
    """The dependency path from the root to the failure (step ids, root first)."""
    conflict: tuple[str, ...] = ()
    """The likeliest root of each side, when the answers admit no single root (`clashing` names the steps
    whose answers clash)."""
    failure: str | None = None
    """The failing step the search started from."""
    asked: int = 0
    """Questions put to the oracles in this search (answers given beforehand not counted)."""
    problems: tuple[str, ...] = ()
    """Oracles that raised, hung or returned something else (counted as don't know)."""
    names: tuple[tuple[str, str], ...] = ()
    """Step names of the ids above, for rendering without the run."""
    audited: tuple[str, ...] = ()
    """Steps asked to test a proof against inputs the recording may have missed (`GuidedSearch._audit`)."""
    implied: tuple[Answer, ...] = ()
    """Inputs marked correct without a question: a step answered correct carries their whole output."""
    misled: tuple[str, ...] = ()
    """Children of a root that is not certain, answered given a wrong input: it called them, which makes it
    the likeliest source, never a proven one (`_verdicts.Verdicts.misled`)."""
    clashing: tuple[str, ...] = ()
    """The steps whose answers clash: on a conflict, the two answered wrong whose reaches share no step (one
    that holds an answer, when the other is the failure); where no step is asked twice (``once``), a step
    whose equally trusted answerers disagree (a tie).  One of those answers is wrong: taking it back
    (`trajdebug answers forget`) lets the search go on."""
    unproven: tuple[str, ...] | None = None
    """Not None when the root is the one candidate left, standing wrong (answered so, or the failure), and
    nothing is left to ask, yet the answers do not prove it: it has no recorded input, and no earlier step
    that may have fed it unrecorded was answered right in its audit (`GuidedSearch._backed`).  Then the steps
    its audit asked that were answered don't know (one taken back and answered right would prove it, as
    would a person's "its own fault" about the root itself)."""

    def answerers(self) -> tuple[str, ...]:
        """Who gave the answers used, each once, in the order they first answered (a person, a passing run, a
        judge): what the proof's sentences name, so one given by an automatic oracle reads as its, not a person's."""
        return tuple(dict.fromkeys(a.by for a in self.questions))

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON data (the ``guided`` member of an analysis)."""
        names = dict(self.names)
        return {
            "root": self.root,
            "root_name": names.get(self.root) if self.root else None,
            "certain": self.certain,
            "failure": self.failure,
            "questions": [
                {
                    "step": a.step_id,
                    "name": names.get(a.step_id),
                    "answer": _word(a.correct),
                    "by": a.by,
                    "reason": a.reason,
                    **({"admissible": a.admissible} if a.correct is False and a.admissible is not None else {}),
                }
                for a in self.questions
            ],
            "asked": self.asked,
            "candidates": [{"step": s, "name": names.get(s), "probability": round(p, 4)} for s, p in self.candidates],
            "path": list(self.path),
            "conflict": list(self.conflict),
            "problems": list(self.problems),
            "audited": list(self.audited),
            "implied": [{"step": a.step_id, "name": names.get(a.step_id), "reason": a.reason} for a in self.implied],
            **({"misled": list(self.misled)} if self.misled else {}),
            **({"clashing": list(self.clashing)} if self.clashing else {}),
            **({"unproven": list(self.unproven)} if self.unproven is not None else {}),
        }


def _word(correct: bool | None) -> str:
    return "unknown" if correct is None else ("correct" if correct else "wrong")


def ranker_order(analysis: Analysis) -> Localization:
    """The localization as the ranker left it, before any answers re-ordered it (`settled`): what the search
    starts from, so that it starts the same whether the answers were given now or read back stored."""
    return analysis.localization if analysis.ranked is None else analysis.ranked


def every_candidate(loc: Localization) -> list[Candidate]:
    """Every ranked step as a candidate, best first: the head shown (``candidates``, as a model on top left it)
    and the rest of ``ranked_all``.  The search reads this, never the head alone: how many candidates are shown
    (``top``) is display only (a new user's ``--top 3`` and ``--top 10`` singled out different roots from the
    same answers, the prior past the head having decayed from the last one shown)."""
    head = list(loc.candidates)
    seen = {(c.run_id, c.step_id) for c in head}
    return head + [c for c in loc.ranked_all if (c.run_id, c.step_id) not in seen]


def failure_step(analysis: Analysis, graph: DependencyGraph) -> str | None:
    """The failing step the search starts from: the top candidate's failure, else the first failure found.

    Only a step that failed (a detector found it failing, it ended in an error, or it encloses a failing
    step: a failure propagates out): the search takes its start as wrong without asking anyone.  A candidate
    no edge joins to a failure has a path of itself alone (a step ranked on a deviation from passing runs
    of other inputs); taking that end as the failure called a correct step wrong on nobody's word, and, with
    no recorded input to clear, certain with no question asked."""
    loc = ranker_order(analysis)
    failed = {f.step_id for f in (*loc.failures, *analysis.failures)}
    for sid in list(failed):
        up = graph.parent(sid) if sid in graph else None
        while up is not None and up not in failed:
            failed.add(up)
            up = graph.parent(up)
    for c in every_candidate(loc):
        end = c.path[-1] if c.run_id is None and c.path else None
        if end is not None and end in graph and (end in failed or graph.steps[end].status == "error"):
            return end
    for f in (*loc.failures, *analysis.failures):
        if f.step_id in graph:
            return f.step_id
    return None


def priors(analysis: Analysis, slice_ids: Iterable[str]) -> dict[str, float]:
    """The prior of each slice step being the root, from the ranker's suspicion.

    A ranked candidate's ``confidence`` (a calibrated probability) is its
    weight when the ranking carries one; otherwise its score, discounted by
    half per rank (scores are comparable within a run but flat at the head,
    while the order is what the ranker is surest of).  The rest of the ranking
    decays on from the last candidate's weight; unranked slice steps get a
    small floor.  Sums to 1 over the slice.
    """
    ids = list(slice_ids)
    raw: dict[str, float] = {}
    last = 1.0
    rank = 0
    # The ranker's order, never the one stored answers made (`settled`): the weights below decay by rank,
    # so a prior read from the settled order would change with every answer stored and a resumed search
    # would ask other questions than the session that gave those answers.
    loc = ranker_order(analysis)
    for c in every_candidate(loc):
        if c.run_id is not None or c.step_id in raw:
            continue
        conf = getattr(c, "confidence", None)
        w = float(conf) if conf is not None else float(c.score) * _DECAY**rank
        if w > 0 and math.isfinite(w):
            raw[c.step_id] = w
            last = w
            rank += 1
    for sid in loc.ranking:
        if sid not in raw:
            last *= _DECAY
            raw[sid] = last
    inside = {s: raw.get(s, 0.0) for s in ids}
    mean = (sum(inside.values()) / len(ids)) if ids else 0.0
    floor = _FLOOR * mean if mean > 0 else 1.0
    weights = {s: max(w, floor) for s, w in inside.items()}
    total = sum(weights.values()) or 1.0
    return {s: w / total for s, w in weights.items()}


def standing(answers: Iterable[Answer]) -> dict[str, Answer]:
    """Each step's standing answer: the most trusted source's, the latest of equals (don't-knows skipped)."""
    out: dict[str, Answer] = {}
    for a in answers:
        if a.correct is None:
            continue
        held = out.get(a.step_id)
        if held is None or trust(a.by) >= trust(held.by):
            out[a.step_id] = a
    return out


def proof(analysis: Analysis) -> tuple[Answer, ...]:
    """The answers that prove the guided search's root, whoever gave them, else (): its "wrong", and either
    "its own fault" (the answer vouches for its inputs) or a "correct" about every step it consumed.  Every
    sentence that says how many answers prove the root counts these (nu24 read "proven by 6 answer(s)" beside
    "a person's 1 answer(s)" on one screen: the other four answers cleared other steps)."""
    g = analysis.guided
    if g is None or g.root is None or not g.certain or g.conflict:
        return ()
    said = standing(g.questions)
    mine = said.get(g.root)
    if mine is None or mine.correct is not False:
        return ()
    if mine.admissible is True:
        return (mine,)
    step = analysis.run.step_map().get(g.root)
    consumed = dict.fromkeys(d.step_id for d in (step.deps if step is not None else ()))
    inputs = [said.get(sid) for sid in consumed]
    if not all(a is not None and a.correct is True for a in inputs):
        return ()
    return (mine, *(a for a in inputs if a is not None))


def proof_count(analysis: Analysis) -> int:
    """How many answers prove the root (`proof`); all the answers used when the proof came another way (the
    inputs an answer implied, an audit)."""
    g = analysis.guided
    return len(proof(analysis)) or (len(g.questions) if g is not None else 0)


def person_proof(analysis: Analysis) -> tuple[Answer, ...]:
    """The answers that prove the guided search's root when each is a person's, else ().

    `proof`, when a person gave each of its answers.  A proof an automatic oracle took part in (a passing
    run of the same input, an expectation, a judge under ``--guided``) is no verdict: a reference differing
    only in a timestamp "proves" the step that fetched it (round 50 review), so the ranker's verdict stands.
    """
    found = proof(analysis)
    return found if found and all(_by_person(a) for a in found) else ()


def _by_person(a: Answer) -> bool:
    return a.by.split(":", 1)[0] == "person"


NOT_A_ROOT = "not a structural root"
"""How a ranked step's reason opens when the ranking found an input or a step further up at least as suspect
(`trajdebug.analysis._localize`): answers that prove the step the root overrule it, and the reason goes."""

NO_EVIDENCE = "no evidence of its own"
"""How a ranked step's reason opens when no diagnoser said anything of it (`trajdebug.analysis._localize`): the
answers that prove it the root, or single it out, are its evidence, and the reason goes (nu25 F10 read "proved"
and "no evidence of its own" on one candidate)."""

PROVED = "proved"
"""`answer_standing`'s word for the root a person's answers prove."""

SINGLED_OUT = "singled out"
"""`answer_standing`'s word for the root answers an automatic oracle took part in (a passing run of the same
input, an expectation, a judge) prove: a lead, not a proof, named with whose answers they are, in place of the
ranking's confidence (nu25 F10: "proved by 2 answer(s)" beside "confidence 0%" and "not a proof")."""

SET_ASIDE = "set aside"
"""`answer_standing`'s word for a step answers an automatic oracle took part in put aside as not the root:
answered correct by one, or, the answers not all a person's, not asked or answered wrong (it passed a wrong
value on: a person's answers say "wrong, not the root") with the root elsewhere.  No proof, yet no longer the
ranking's "suspect" (nu26 F8: "suspect, confidence 4%" above "cleared by the answers"; rev53b L3)."""


def root_standing(analysis: Analysis) -> dict[str, Any]:
    """The guided search's root as the text words it, for the JSON beside ``certain`` (which says only that the
    answers leave one root, whoever gave them): ``standing`` ``proved`` (a person's answers prove it),
    ``singled out`` (answers an automatic oracle took part in: a lead) or None, and ``proof`` whether it is a
    person's proof (nu26 F8: "no proof" in the text, ``"certain": true`` alone in the JSON)."""
    proved = bool(person_proof(analysis))
    word = PROVED if proved else (SINGLED_OUT if singled_out(analysis) else None)
    return {"standing": word, "proof": proved, **({"by": whose(analysis)} if word else {})}


def singled_out(analysis: Analysis) -> bool:
    """Whether the guided search's answers single out a root that an automatic oracle took part in proving
    (`SINGLED_OUT`): certain, no conflict, and not `person_proof`."""
    g = analysis.guided
    return bool(g is not None and g.root and g.certain and not g.conflict and not person_proof(analysis))


def whose(analysis: Analysis) -> str:
    """Who gave the answers that prove (or single out) the root: each answerer once, those of `proof` when
    the root's own answers make it, else every answerer."""
    g = analysis.guided
    found = dict.fromkeys(a.by for a in proof(analysis))
    return ", ".join(found or (g.answerers() if g is not None else ()))


def _grouping(g: Guided, said: Mapping[str, Answer]) -> Callable[[str], int]:
    """Where the answers put a step (`settled`): 0 the root they prove, 1 a suspect they leave (every step when
    they leave none), 2 a step they cleared (not the root, whatever it answered), 3 a step answered correct."""
    proven = g.root if g.certain else None
    left = {s for s, _ in g.candidates} | ({g.root} if g.root and not g.conflict else set())

    def group(sid: str) -> int:
        if sid == proven:
            return 0
        a = said.get(sid)
        if a is not None and a.correct:
            return 3
        return 1 if not left or sid in left else 2

    return group


def answer_standing(analysis: Analysis) -> dict[str, str]:
    """Per candidate of the analyzed run the answers placed (`settled`): ``proved`` (the root
    `person_proof` proves), ``singled out`` (the root answers an automatic oracle took part in prove: who
    gave them is said beside it, and it is no verdict), ``ruled out`` (a person answered it correct, or, unanswered, the answers, all a
    person's, cleared it) or ``wrong, not the root`` (a person answered it wrong and the answers, all a
    person's, leave the root elsewhere: it passed on a wrong value), or ``set aside`` (put aside as not the
    root by answers an automatic oracle took part in: answered correct by one, or, when not all the answers
    are a person's, left out of the root they leave, not asked or answered wrong: `SET_ASIDE`).  What the reports tag a candidate by in place of the ranking's "suspect" and confidence, which
    the answers outdated (nu24 read a proved root "confidence 2%" and a step "suspect" and "cleared by the
    answers" at once).  A suspect they leave is not named.  An automatic oracle (a passing run of the same
    input, an expectation, a judge) never proves nor rules out: its proof is no verdict (round 50; rev51u H3:
    a reference differing in a timestamp tagged its step "proved root" and the true root "ruled out"), so the
    root it singles out is tagged so, never "proved", and a step it puts aside ``set aside``, never "ruled
    out" nor "wrong, not the root" nor, under the note that it was cleared, "suspect" (nu26 F8)."""
    g = analysis.guided
    if g is None or g.failure is None or not g.questions:
        return {}
    said = standing(g.questions)
    group = _grouping(g, said)
    proved = bool(person_proof(analysis))
    persons = all(_by_person(a) for a in said.values())
    out: dict[str, str] = {}
    for c in analysis.localization.candidates:
        word = _tag(group(c.step_id), said.get(c.step_id), proved, persons) if c.run_id is None else None
        if word is not None:
            out[c.step_id] = word
    return out


def _tag(group: int, answer: Answer | None, proved: bool, persons: bool) -> str | None:
    """`answer_standing`'s word for a step in ``group`` (`_grouping`) with its standing ``answer``: ``proved``
    only when a person's answers prove the root, and a clearing only from a person's answer or, inferred,
    from answers that are all a person's (``persons``)."""
    if group == 0:
        # Whoever's answers prove it, they replace the ranking's confidence; an automatic oracle's is a lead.
        return PROVED if proved else SINGLED_OUT
    if group == 3:
        return "ruled out" if answer is not None and _by_person(answer) else SET_ASIDE
    if group == 2 and persons:
        return "wrong, not the root" if answer is not None and answer.correct is False else "ruled out"
    # Cleared by answers not all a person's: no proof, but the ranking's "suspect" no longer describes it.
    return SET_ASIDE if group == 2 else None


def settled(analysis: Analysis) -> Analysis:
    """The ranking as the answers leave it: the root they prove first, the suspects they leave next, then
    the steps they cleared, then the steps answered correct (each order kept within its group).

    The guided search settles what the ranker could only guess: a step a person answered correct is not
    the root, whatever its evidence, and a proven root is.  Without this the list a person reads after
    answering would still open on a step they had cleared.  Scores are left as ranked; each moved
    candidate says why in its first reason.
    """
    g = analysis.guided
    if g is None or g.failure is None or not g.questions:
        return analysis
    said = standing(g.questions)
    group = _grouping(g, said)
    count = proof_count(analysis)
    lead, by = singled_out(analysis), whose(analysis)

    def moved(c: Candidate) -> Candidate:
        if c.run_id is not None:
            return c
        a, grp = said.get(c.step_id), group(c.step_id)
        if grp == 0 and not lead and a is not None and a.correct is False and a.admissible:
            note = f"proved by {count} answer(s): its output is wrong for the inputs it was given (answered by {a.by}), and those were right"
        elif grp == 0 and lead:
            # Who answered: answers an automatic oracle (a passing run, a judge) took part in are a lead, no proof.
            note = (
                f"singled out by {count} answer(s) of {by} (not a person's alone: no proof): its output is wrong "
                "and every input it consumed is correct"
            )
        elif grp == 0:
            note = f"proved by {count} answer(s) (by {by}): its output is wrong and every input it consumed is correct"
        elif grp == 3 and a is not None:
            note = f"answered correct by {a.by}" + (f" ({a.reason})" if a.reason else "")
        elif grp == 2 and a is not None:
            note = f"answered wrong by {a.by}: a wrong value it was given, from the root the answers leave"
        elif grp == 2:
            # Not asked: the answers place the root elsewhere, which says nothing of its own output (nu26 F8).
            note = "not asked; the answers leave the root elsewhere (its own output may still be wrong)"
        elif a is not None:
            note = f"answered wrong by {a.by}"
        else:
            return c
        # A proven root's own answers overrule the ranking's guess that something else explains it.
        kept = tuple(r for r in c.reasons if grp != 0 or not r.startswith((NOT_A_ROOT, NO_EVIDENCE)))
        return replace(c, reasons=(note, *kept), root=grp == 0 or (c.root and grp == 1))

    # The suspects left in the search's order (`Guided.candidates`: its probabilities, `ranked_candidates`), so
    # the list opens on the root the search names even when the answers prove none: in the ranker's order it
    # opened on a step the answers had made less likely than the guided root printed below it (nu62 bug 3).
    post = {sid: i for i, (sid, _) in enumerate(g.candidates)}

    def place(sid: str) -> tuple[int, int]:
        grp = group(sid)
        return grp, post.get(sid, len(post)) if grp == 1 else 0

    def order(cs: Iterable[Candidate]) -> list[Candidate]:
        items = list(cs)
        keyed = sorted(range(len(items)), key=lambda i: (place(items[i].step_id) if items[i].run_id is None else (1, len(post)), i))
        return [moved(items[i]) for i in keyed]

    loc = analysis.localization
    candidates = list(loc.candidates)
    head = g.root if not g.conflict else None
    if head and all(c.step_id != head or c.run_id is not None for c in candidates):
        # A root found (proven, or the likeliest left) below the cut of ``top`` still heads the list.
        extra = [c for c in loc.ranked_all if c.step_id == head and c.run_id is None]
        candidates = (extra + candidates)[: max(len(candidates), 1)] if extra else candidates
    ranked = {sid: i for i, sid in enumerate(loc.ranking)}
    ranking = tuple(sorted(loc.ranking, key=lambda sid: (*place(sid), ranked[sid])))
    # A person's answers that prove the root settle the verdict: the ranker's guess is kept beside it.
    proved = bool(person_proof(analysis))
    own = analysis.ranking_verdict
    return replace(
        analysis,
        localization=replace(loc, candidates=order(candidates), ranking=ranking, ranked_all=tuple(order(loc.ranked_all))),
        ranked=loc if analysis.ranked is None else analysis.ranked,
        verdict="proved" if proved else own,
        ranker_verdict=own if proved else None,
    )


def ranked_candidates(
    cand: Iterable[int],
    mass: Sequence[float],
    parents: Sequence[Sequence[int]],
    verdict: Callable[[int], bool | None],
    ids: Sequence[str],
) -> tuple[tuple[str, float], ...]:
    """The candidates (node indices) as ``(step id, probability)``, likeliest first.

    A candidate whose inputs are all proven correct is the root if it is wrong at all; otherwise its prior
    stands.  Renormalized over the set.  A step with no recorded input has nothing proven about it: before
    any answer, boosting it named the run's first step (a hand-off, a user message) likeliest above the
    ranker's choice."""
    weights: dict[int, float] = {}
    for i in cand:
        w = mass[i]
        if parents[i] and all(verdict(p) is True for p in parents[i]):
            w *= 4.0
        if verdict(i) is False:
            w *= 2.0
        weights[i] = w
    total = sum(weights.values()) or 1.0
    order = sorted(weights, key=lambda i: (-weights[i], -i))
    return tuple((ids[i], weights[i] / total) for i in order)


__all__ = [
    "NOT_A_ROOT",
    "NO_EVIDENCE",
    "PROVED",
    "SET_ASIDE",
    "SINGLED_OUT",
    "Guided",
    "Oracle",
    "failure_step",
    "answer_standing",
    "person_proof",
    "proof",
    "proof_count",
    "root_standing",
    "priors",
    "settled",
    "singled_out",
    "standing",
    "trust",
    "whose",
]
